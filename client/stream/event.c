/* One event to its facts: the SSE flags first, then the API's decoder, then the shapes of a
 * failure that decoder does not know (see event.h). */
#include "client/stream/event.h"

#include <string.h>

#include "chatload/err.h"
#include "client/stream/error.h"
#include "client/stream/messages.h"
#include "client/stream/responses.h"
#include "client/stream/sse.h"
#include "client/stream/transcription.h"

static void clear(struct cl_chunk *out)
{
	memset(out, 0, sizeof(*out));
	out->prompt_tokens = out->completion_tokens = out->reasoning_tokens = -1;
	out->cached_tokens = -1;
	out->timings_cache_n = out->timings_prompt_n = -1;
}

/* *out becomes the error e says: nothing else of the event counts. */
static void set_error(struct cl_chunk *out, const struct cl_stream_error *e)
{
	clear(out);
	out->is_error = true;
	out->error_code = e->code;
	out->error_msg = e->message;
	out->error_msg_len = e->message_len;
	out->error_type = e->type;
	out->error_type_len = e->type_len;
}

/* An error the API's decoder found: what it did not read is the reader's. */
static void complete_error(const char *data, size_t len, struct cl_chunk *out)
{
	struct cl_stream_error e;
	cl_stream_error_read(data, len, &e);
	if (!out->error_code)
		out->error_code = e.code;
	if (!out->error_msg) {
		out->error_msg = e.message;
		out->error_msg_len = e.message_len;
	}
	out->error_type = e.type;
	out->error_type_len = e.type_len;
}

/* The event carried nothing the answer is made of. */
static bool says_nothing(const struct cl_chunk *c)
{
	return !c->n_choices && !c->done && !c->is_error && !c->has_usage && !c->has_content &&
	       !c->has_reasoning && !c->has_tool_call && !c->finish_reason[0];
}

static int api_decode(enum cl_api api, const char *data, size_t len, struct cl_chunk *out)
{
	switch (api) {
	case CL_API_COMPLETIONS:
		return cl_chunk_decode_text(data, len, out);
	case CL_API_RESPONSES:
		return cl_responses_decode(data, len, out);
	case CL_API_MESSAGES:
		return cl_messages_decode(data, len, out);
	case CL_API_TRANSCRIPTION:
		return cl_transcription_event_decode(data, len, out);
	default:
		return cl_chunk_decode(data, len, out);
	}
}

int cl_event_decode(enum cl_api api, const char *data, size_t len, unsigned sse_flags,
		    struct cl_chunk *out)
{
	struct cl_stream_error e;

	if (sse_flags & (CL_SSE_ERROR_FIELD | CL_SSE_ERROR_EVENT | CL_SSE_DOCUMENT)) {
		cl_stream_error_read(data, len, &e);
		if (e.is_error || !(sse_flags & CL_SSE_DOCUMENT)) {
			set_error(out, &e);
			return 0;
		}
		clear(out);
		if (!e.is_json)
			return CL_EPARSE;
		out->malformed = CL_EVENT_NOT_A_STREAM;
		return CL_EPROTO;
	}
	int rc = api_decode(api, data, len, out);
	if (rc == 0 && out->is_error) {
		complete_error(data, len, out);
		return 0;
	}
	/* Only an event the decoder refused, or one that carried nothing (rare beside the
	 * tokens: keep-alives, a Responses stream's bookkeeping events), is read again. */
	bool maybe = rc == CL_EPROTO || (rc == 0 && says_nothing(out));
	if (!maybe)
		return rc;
	cl_stream_error_read(data, len, &e);
	if (!e.is_error)
		return rc;
	set_error(out, &e);
	return 0;
}
