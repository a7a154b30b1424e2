/* chatload-sim's answers in Anthropic's Messages API (POST /v1/messages): the streamed events
 * and the whole message (see render.h), in the shapes Anthropic documents and llama.cpp's
 * server sends. */
#include "render.h"

#include "chatload/assert.h"
#include "chatload/err.h"

#include <stdio.h>
#include <string.h>

/* `event: <type>\ndata: {"type":"<type>"` (the object left open). */
static void event_head(struct cl_sim_w *w, const char *type)
{
	CL_SIM_W_LIT(w, "event: ");
	cl_sim_w_str(w, type);
	CL_SIM_W_LIT(w, "\ndata: {\"type\":\"");
	cl_sim_w_str(w, type);
	CL_SIM_W_LIT(w, "\"");
}

/* The cached prompt tokens the usage reports (none where llama.cpp's timings say it). */
static uint32_t cached(const struct cl_sim_stream *st)
{
	return st->cached_tokens < st->prompt_tokens ? st->cached_tokens : st->prompt_tokens;
}

/* What Anthropic calls why the answer ended. */
static const char *stop_reason(const struct cl_sim_stream *st)
{
	return st->finish_length ? "max_tokens" : "end_turn";
}

void cl_sim_render_msg_start(struct cl_sim_w *w, const struct cl_sim_stream *st, bool with_usage)
{
	event_head(w, "message_start");
	CL_SIM_W_LIT(w, ",\"message\":{\"id\":\"");
	cl_sim_w_str(w, st->id);
	CL_SIM_W_LIT(w,
		     "\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"");
	cl_sim_w_str(w, st->model);
	CL_SIM_W_LIT(w, "\",\"stop_reason\":null,\"stop_sequence\":null");
	if (with_usage) {
		/* Anthropic's input_tokens leaves out what the cache served. */
		CL_SIM_W_LIT(w, ",\"usage\":{\"input_tokens\":");
		cl_sim_w_u64(w, st->prompt_tokens - cached(st));
		CL_SIM_W_LIT(w, ",\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":");
		cl_sim_w_u64(w, cached(st));
		CL_SIM_W_LIT(w, ",\"output_tokens\":0}");
	}
	CL_SIM_W_LIT(w, "}}\n\n");
}

static void block_start(struct cl_sim_w *w, uint32_t index, bool thinking)
{
	event_head(w, "content_block_start");
	CL_SIM_W_LIT(w, ",\"index\":");
	cl_sim_w_u64(w, index);
	if (thinking)
		CL_SIM_W_LIT(w,
			     ",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n");
	else
		CL_SIM_W_LIT(w, ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
}

static void block_stop(struct cl_sim_w *w, uint32_t index)
{
	event_head(w, "content_block_stop");
	CL_SIM_W_LIT(w, ",\"index\":");
	cl_sim_w_u64(w, index);
	CL_SIM_W_LIT(w, "}\n\n");
}

/* A thinking block ends with its signature (Anthropic's, checked when it is sent back). */
static void thinking_stop(struct cl_sim_w *w, const struct cl_sim_stream *st)
{
	event_head(w, "content_block_delta");
	CL_SIM_W_LIT(w,
		     ",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sim-");
	cl_sim_w_u64(w, st->seq);
	CL_SIM_W_LIT(w, "\"}}\n\n");
	block_stop(w, 0);
}

static void delta(struct cl_sim_w *w, const struct cl_sim_stream *st, uint32_t index, bool thinking,
		  uint32_t first, uint32_t n)
{
	event_head(w, "content_block_delta");
	CL_SIM_W_LIT(w, ",\"index\":");
	cl_sim_w_u64(w, index);
	if (thinking)
		CL_SIM_W_LIT(w, ",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"");
	else
		CL_SIM_W_LIT(w, ",\"delta\":{\"type\":\"text_delta\",\"text\":\"");
	cl_sim_render_tokens(w, st->seq, first, n, thinking);
	CL_SIM_W_LIT(w, "\"}}\n\n");
}

void cl_sim_render_msg_delta(struct cl_sim_w *w, const struct cl_sim_stream *st,
			     const struct cl_sim_chunk *ch)
{
	uint32_t a = ch->first_token, b = ch->first_token + ch->n_tokens;
	uint32_t r = st->planned_reasoning;
	uint32_t text_index = r ? 1 : 0;
	CL_ASSERT(b <= st->planned_tokens); /* the chunk's tokens lie within the output */
	uint32_t r_end = b < r ? b : r;
	if (a < r_end) {
		if (a == 0)
			block_start(w, 0, true);
		delta(w, st, 0, true, a, r_end - a);
		a = r_end;
	}
	if (a < b) {
		if (a == r) {
			if (r)
				thinking_stop(w, st);
			block_start(w, text_index, false);
		}
		delta(w, st, text_index, false, a - r, b - a);
	}
}

void cl_sim_render_msg_end(struct cl_sim_w *w, const struct cl_sim_stream *st, bool with_usage,
			   bool with_stop)
{
	uint32_t out = st->sent_tokens, r = st->planned_reasoning;
	if (out > r)
		block_stop(w, r ? 1 : 0);
	else if (r && out > 0)
		thinking_stop(w, st); /* all of the answer was thinking */
	event_head(w, "message_delta");
	CL_SIM_W_LIT(w, ",\"delta\":{\"stop_reason\":\"");
	cl_sim_w_str(w, stop_reason(st));
	CL_SIM_W_LIT(w, "\",\"stop_sequence\":null}");
	if (with_usage) {
		CL_SIM_W_LIT(w, ",\"usage\":{\"output_tokens\":");
		cl_sim_w_u64(w, out);
		CL_SIM_W_LIT(w, "}");
	}
	CL_SIM_W_LIT(w, "}\n\n");
	if (with_stop) {
		event_head(w, "message_stop");
		CL_SIM_W_LIT(w, "}\n\n");
	}
}

int cl_sim_render_msg_whole(struct cl_buf *out, const struct cl_sim_stream *st, bool with_usage)
{
	uint32_t n = st->planned_tokens, r = st->planned_reasoning;
	int rc = cl_buf_printf(out,
			       "{\"id\":\"%s\",\"type\":\"message\",\"role\":\"assistant\","
			       "\"model\":\"%s\",\"content\":[",
			       st->id, st->model);
	if (!rc && r) {
		rc = cl_buf_puts(out, "{\"type\":\"thinking\",\"thinking\":\"");
		rc = rc ? rc : cl_sim_render_append_tokens(out, st->seq, 0, r, true);
		rc = rc ? rc
			: cl_buf_printf(out, "\",\"signature\":\"sim-%llu\"}%s",
					(unsigned long long)st->seq, n > r ? "," : "");
	}
	if (!rc && n > r) {
		rc = cl_buf_puts(out, "{\"type\":\"text\",\"text\":\"");
		rc = rc ? rc : cl_sim_render_append_tokens(out, st->seq, 0, n - r, false);
		rc = rc ? rc : cl_buf_puts(out, "\"}");
	}
	rc = rc ? rc
		: cl_buf_printf(out, "],\"stop_reason\":\"%s\",\"stop_sequence\":null",
				stop_reason(st));
	if (!rc && with_usage)
		rc = cl_buf_printf(
		    out,
		    ",\"usage\":{\"input_tokens\":%u,\"cache_creation_input_tokens\":0,"
		    "\"cache_read_input_tokens\":%u,\"output_tokens\":%u}",
		    st->prompt_tokens - cached(st), cached(st), n);
	return rc ? rc : cl_buf_puts(out, "}");
}
