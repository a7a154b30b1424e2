/* chatload-sim's answers for the Responses API's semantic events, /v1/embeddings, /v1/rerank and
 * /v1/score (see render.h); the chat and legacy completions chunks are render.c's. */
#include "render.h"

#include "chatload/assert.h"
#include "chatload/err.h"

#include <stdio.h>
#include <string.h>

/* `event: <type>\ndata: {"type":"<type>","sequence_number":N` (the object left open). */
static void event_head(struct cl_sim_w *w, struct cl_sim_stream *st, const char *type)
{
	CL_SIM_W_LIT(w, "event: ");
	cl_sim_w_str(w, type);
	CL_SIM_W_LIT(w, "\ndata: {\"type\":\"");
	cl_sim_w_str(w, type);
	CL_SIM_W_LIT(w, "\",\"sequence_number\":");
	cl_sim_w_u64(w, st->events++);
}

/* The "response" object's opening members, up to "status". */
static void response_head(struct cl_sim_w *w, const struct cl_sim_stream *st, const char *status)
{
	CL_SIM_W_LIT(w, ",\"response\":{\"id\":\"");
	cl_sim_w_str(w, st->id);
	CL_SIM_W_LIT(w, "\",\"object\":\"response\",\"created_at\":");
	cl_sim_w_i64(w, st->created_s);
	CL_SIM_W_LIT(w, ",\"model\":\"");
	cl_sim_w_str(w, st->model);
	CL_SIM_W_LIT(w, "\",\"status\":\"");
	cl_sim_w_str(w, status);
	CL_SIM_W_LIT(w, "\",\"output\":[]");
}

void cl_sim_render_resp_created(struct cl_sim_w *w, struct cl_sim_stream *st)
{
	event_head(w, st, "response.created");
	response_head(w, st, "in_progress");
	CL_SIM_W_LIT(w, ",\"usage\":null}}\n\n");
}

static void delta_event(struct cl_sim_w *w, struct cl_sim_stream *st, bool reasoning,
			uint32_t first, uint32_t n)
{
	event_head(w, st,
		   reasoning ? "response.reasoning_text.delta" : "response.output_text.delta");
	/* The reasoning item comes first in the output, the message after it. */
	CL_SIM_W_LIT(w, ",\"item_id\":\"");
	cl_sim_w_str(w, reasoning ? "rs-sim-" : "msg-sim-");
	cl_sim_w_u64(w, st->seq);
	CL_SIM_W_LIT(w, "\",\"output_index\":");
	cl_sim_w_u64(w, !reasoning && st->planned_reasoning ? 1 : 0);
	CL_SIM_W_LIT(w, ",\"content_index\":0,\"delta\":\"");
	cl_sim_render_tokens(w, st->seq, first, n, reasoning);
	CL_SIM_W_LIT(w, "\"");
	if (!reasoning)
		CL_SIM_W_LIT(w, ",\"logprobs\":[]");
	CL_SIM_W_LIT(w, "}\n\n");
}

void cl_sim_render_resp_delta(struct cl_sim_w *w, struct cl_sim_stream *st,
			      const struct cl_sim_chunk *ch)
{
	uint32_t a = ch->first_token, b = ch->first_token + ch->n_tokens;
	CL_ASSERT(b <= st->planned_tokens); /* the chunk's tokens lie within the output */
	uint32_t r_end = b < st->planned_reasoning ? b : st->planned_reasoning;
	if (a < r_end) {
		delta_event(w, st, true, a, r_end - a);
		a = r_end;
	}
	if (a < b)
		delta_event(w, st, false, a - st->planned_reasoning, b - a);
}

void cl_sim_render_resp_end(struct cl_sim_w *w, struct cl_sim_stream *st, bool with_usage)
{
	bool cut = st->finish_length;
	event_head(w, st, cut ? "response.incomplete" : "response.completed");
	response_head(w, st, cut ? "incomplete" : "completed");
	if (cut)
		CL_SIM_W_LIT(w, ",\"incomplete_details\":{\"reason\":\"max_output_tokens\"}");
	if (!with_usage) {
		CL_SIM_W_LIT(w, ",\"usage\":null}}\n\n");
		return;
	}
	uint32_t out = st->sent_tokens;
	uint32_t reasoning = out < st->planned_reasoning ? out : st->planned_reasoning;
	CL_SIM_W_LIT(w, ",\"usage\":{\"input_tokens\":");
	cl_sim_w_u64(w, st->prompt_tokens);
	CL_SIM_W_LIT(w, ",\"input_tokens_details\":{\"cached_tokens\":");
	cl_sim_w_u64(w, st->cached_tokens);
	CL_SIM_W_LIT(w, "},\"output_tokens\":");
	cl_sim_w_u64(w, out);
	CL_SIM_W_LIT(w, ",\"output_tokens_details\":{\"reasoning_tokens\":");
	cl_sim_w_u64(w, reasoning);
	CL_SIM_W_LIT(w, "},\"total_tokens\":");
	cl_sim_w_u64(w, (uint64_t)st->prompt_tokens + out);
	CL_SIM_W_LIT(w, "}}}\n\n");
}

void cl_sim_render_resp_error(struct cl_sim_w *w, struct cl_sim_stream *st, const char *message)
{
	event_head(w, st, "error");
	CL_SIM_W_LIT(w, ",\"code\":\"internal_error\",\"message\":");
	cl_sim_w_json(w, message, strlen(message));
	CL_SIM_W_LIT(w, ",\"param\":null}\n\n");
}

/* A number of vector i of request seq in [-1, 1): deterministic, cheap, never NaN. */
static double component(uint64_t seq, uint32_t i, uint32_t k)
{
	uint64_t x = seq * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)i << 32 | k);
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 29;
	return (double)(x >> 11) / (double)(1ULL << 52) - 1.0;
}

int cl_sim_render_embeddings(struct cl_buf *out, const struct cl_sim_config *cfg,
			     const struct cl_sim_stream *st, bool with_usage)
{
	int rc = cl_buf_puts(out, "{\"object\":\"list\",\"data\":[");
	for (uint32_t i = 0; !rc && i < st->inputs; i++) {
		rc = cl_buf_printf(out, "%s{\"object\":\"embedding\",\"index\":%u,\"embedding\":[",
				   i ? "," : "", i);
		for (uint32_t k = 0; !rc && k < cfg->embedding_dim; k++)
			rc = cl_buf_printf(out, k ? ",%.6f" : "%.6f", component(st->seq, i, k));
		if (!rc)
			rc = cl_buf_puts(out, "]}");
	}
	if (!rc)
		rc = cl_buf_puts(out, "],\"model\":\"");
	if (!rc)
		rc = cl_buf_puts(out, st->model); /* a configured name: JSON-safe (config.c) */
	if (!rc && with_usage)
		rc = cl_buf_printf(out, "\",\"usage\":{\"prompt_tokens\":%u,\"total_tokens\":%u}}",
				   st->prompt_tokens, st->prompt_tokens);
	else if (!rc)
		rc = cl_buf_puts(out, "\"}");
	return rc;
}

int cl_sim_render_scores(struct cl_buf *out, const struct cl_sim_stream *st, bool with_usage)
{
	bool rerank = st->api == CL_API_RERANK;
	int rc = cl_buf_printf(out, "{\"id\":\"%s\",\"object\":\"list\",\"created\":%lld,", st->id,
			       (long long)st->created_s);
	if (!rc)
		rc = cl_buf_puts(out, "\"model\":\"");
	if (!rc)
		rc = cl_buf_puts(out, st->model); /* a configured name: JSON-safe (config.c) */
	if (!rc)
		rc = cl_buf_puts(out, rerank ? "\",\"results\":[" : "\",\"data\":[");
	for (uint32_t i = 0; !rc && i < st->inputs; i++) {
		double score = (component(st->seq, i, 0) + 1.0) / 2.0;
		rc = rerank ? cl_buf_printf(out, "%s{\"index\":%u,\"relevance_score\":%.6f}",
					    i ? "," : "", i, score)
			    : cl_buf_printf(out,
					    "%s{\"index\":%u,\"object\":\"score\",\"score\":%.6f}",
					    i ? "," : "", i, score);
	}
	if (!rc && with_usage)
		rc = cl_buf_printf(out,
				   "],\"usage\":{\"prompt_tokens\":%u,\"total_tokens\":%u,"
				   "\"completion_tokens\":0}}",
				   st->prompt_tokens, st->prompt_tokens);
	else if (!rc)
		rc = cl_buf_puts(out, "]}");
	return rc;
}
