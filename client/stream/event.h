/* One event of a target's answer to its facts, whatever the API and however the server said
 * it failed: the one function every consumer of a stream calls. */
#ifndef CHATLOAD_STREAM_EVENT_H
#define CHATLOAD_STREAM_EVENT_H

#include <stddef.h>

#include "chatload/err.h"
#include "chatload/plan.h"
#include "client/stream/chunk.h"

/* cl_chunk.malformed of a body that was one JSON document but no error. */
#define CL_EVENT_NOT_A_STREAM "the server sent one JSON document, not an event stream"

/*
 * Decodes one event's data (len bytes, as cl_sse_feed or cl_sse_finish gave it, with its
 * CL_SSE_* flags) of an answer to the API api into *out:
 *
 *   - flagged CL_SSE_ERROR_FIELD or CL_SSE_ERROR_EVENT: an error whatever its text (0,
 *     out->is_error);
 *   - flagged CL_SSE_DOCUMENT: an error when the document has an error's shape
 *     (cl_stream_error_read); else CL_EPROTO with out->malformed CL_EVENT_NOT_A_STREAM (a
 *     JSON answer to a request that asked for a stream), or CL_EPARSE when it is not JSON;
 *   - else the API's decoder (cl_chunk_decode_text for completions, cl_responses_decode for
 *     responses, cl_chunk_decode for chat and anything else); an event that decoder finds
 *     not to be one of its own (CL_EPROTO), or that says nothing at all (no choice, token,
 *     finish, usage or end), is still an error when it has an error's shape: vLLM's
 *     unwrapped ErrorResponse, TGI's {"error": "..."} in a Responses stream, an `error`
 *     event without its event name.
 *
 * For every error, error_code, error_msg and error_type are what cl_stream_error_read reads
 * (the API decoder's own when it found them): the message points into data, still escaped;
 * for a text that is not JSON it is the text itself.  NULL when the server gave none.
 * Returns 0, CL_EPARSE or CL_EPROTO as the decoders do.  Never allocates.
 */
CL_MUST_CHECK int cl_event_decode(enum cl_api api, const char *data, size_t len, unsigned sse_flags,
				  struct cl_chunk *out);

#endif
