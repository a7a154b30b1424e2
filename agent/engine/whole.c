/* An answer that is one JSON document (embeddings, rerank, score, a transcription not
 * streamed), judged whole when its
 * transfer ended well: what it counts, or why it is no answer. */
#include "internal.h"

#include "client/stream/embedding.h"
#include "client/stream/error.h"
#include "client/stream/rerank.h"
#include "client/stream/transcription.h"

#include <stdio.h>
#include <string.h>

/* What every decoder of a whole answer says, for the verdict they share. */
struct verdict {
	int rc; /* the decoder's: 0, CL_EPARSE, CL_EPROTO */
	bool is_error;
	int error_code;
	const char *error_msg;
	size_t error_msg_len;
	const char *malformed;
};

/* Sets the slot's class and sample when the answer is none: a failure the server said, in
 * its decoder's shape or in any dialect the one reader knows (stream_error, with the
 * server's words and code), or a document that is not an answer (stream_malformed).
 * Returns whether it was none. */
static bool failed(struct cl_slot *s, const struct verdict *v)
{
	const char *body = s->whole.data ? s->whole.data : "";
	struct cl_stream_error se = { 0 };
	if (v->rc == CL_EPROTO || (v->rc == 0 && v->is_error))
		cl_stream_error_read(body, s->whole.len, &se);
	if ((v->rc == CL_EPROTO && se.is_error) || (v->rc == 0 && v->is_error)) {
		s->err_ctr = CL_CTR_ERR_STREAM_ERROR;
		s->err_code = v->rc == 0 && v->error_code ? v->error_code : se.code;
		if (v->rc == 0 && v->error_msg)
			cli_slot_keep_sample(s, v->error_msg, v->error_msg_len);
		else if (se.message)
			cli_slot_keep_sample(s, se.message, se.message_len);
		else
			cli_slot_keep_sample(s, body, s->whole.len);
		return true;
	}
	if (v->rc != 0) {
		s->err_ctr = CL_CTR_ERR_STREAM_MALFORMED;
		if (v->rc == CL_EPROTO && v->malformed) {
			cli_slot_keep_sample(s, v->malformed, strlen(v->malformed));
			cli_slot_keep_sample(s, ": ", 2);
		}
		cli_slot_keep_sample(s, body, s->whole.len);
		return true;
	}
	return false;
}

/* The answer holds a count other than what the body sent: stream_malformed, saying so. */
static void miscounted(struct cl_slot *s, const char *what, uint32_t got, uint32_t sent)
{
	char why[96];
	int n = snprintf(why, sizeof(why), what, got, sent);
	s->err_ctr = CL_CTR_ERR_STREAM_MALFORMED;
	cli_slot_keep_sample(s, why, n > 0 ? (size_t)n : 0);
	cli_slot_keep_sample(s, s->whole.data ? s->whole.data : "", s->whole.len);
}

static void embeddings_end(struct cl_slot *s)
{
	struct cl_embedding a;
	int rc = cl_embedding_decode(s->whole.data ? s->whole.data : "", s->whole.len, &a);
	struct verdict v = {
		rc, a.is_error, a.error_code, a.error_msg, a.error_msg_len, a.malformed
	};
	if (failed(s, &v))
		return;
	/* One vector per input sent: fewer or more is not the answer asked for. */
	if (s->body && s->body->inputs && a.n_data != s->body->inputs) {
		miscounted(s, "%u vectors for %u inputs: ", a.n_data, s->body->inputs);
		return;
	}
	s->done_seen = true;
	s->embed_inputs = a.n_data;
	s->usage_ct = 0; /* nothing generated: an output of 0, as the server's usage says */
	if (a.prompt_tokens >= 0)
		s->usage_pt = a.prompt_tokens;
}

static void scored_end(struct cl_slot *s)
{
	struct cl_rerank a;
	int rc = cl_rerank_decode(s->whole.data ? s->whole.data : "", s->whole.len, &a);
	struct verdict v = {
		rc, a.is_error, a.error_code, a.error_msg, a.error_msg_len, a.malformed
	};
	if (failed(s, &v))
		return;
	/* At most one score per document sent: fewer is a top_n the body asked for (or a
	 * server's own cut), more is not the answer to this request. */
	uint32_t sent = s->body ? s->body->inputs : 0;
	if (sent && a.n_results > sent) {
		miscounted(s, "%u scores for %u documents: ", a.n_results, sent);
		return;
	}
	s->done_seen = true;
	s->documents = sent ? sent : a.n_results;
	s->usage_ct = 0; /* nothing generated */
	/* The tokens the server read, as it says them: vLLM's rerank gives total_tokens
	 * only, llama.cpp and vLLM's score both (equal, no output). */
	s->usage_pt = a.prompt_tokens >= 0 ? a.prompt_tokens : a.total_tokens;
}

/* A transcription's whole answer: {"text": ..., "usage"?}, or an error in any dialect. */
static void transcription_end(struct cl_slot *s)
{
	struct cl_transcription t;
	int rc =
	    cl_transcription_decode(s->whole.data ? s->whole.data : "", s->whole.len, true, &t);
	struct verdict v = {
		rc, t.is_error, t.error_code, t.error_msg, t.error_msg_len, t.malformed
	};
	if (failed(s, &v))
		return;
	s->done_seen = true;
	if (t.output_tokens >= 0)
		s->usage_ct = t.output_tokens;
	if (t.input_tokens >= 0)
		s->usage_pt = t.input_tokens;
	s->usage_seen = t.has_usage;
}

void cli_request_whole_end(struct cl_slot *s)
{
	enum cl_api api = s->w->e->http.api;
	if (cl_api_scores(api))
		scored_end(s);
	else if (api == CL_API_TRANSCRIPTION)
		transcription_end(s);
	else
		embeddings_end(s);
}
