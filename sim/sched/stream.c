/* Chunk timing, rendering and in-stream faults of chatload-sim (see stream.h). */
#include "stream.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "chatload/log.h"
#include "sim/faults/dialect.h"
#include "sim/api/render.h"
#include "sim/rng.h"
#include "sched.h"
#include "sim/serve/conn.h"

#include <stdio.h>
#include <string.h>

/* Room before the SSE payload for the HTTP chunk size line, and after it for the chunk's
 * CRLF and the terminating "0\r\n\r\n". */
#define FRAME_HEAD 16
#define FRAME_TAIL 16

static void log_stream(struct cl_sim *s, const struct cl_sim_stream *st, int http_status,
		       const char *outcome, int64_t now_us)
{
	struct cl_sim_truth_rec r = {
		.api = cl_api_name(st->api),
		.inputs = st->inputs,
		.documents = cl_api_scores(st->api) ? st->inputs : 0,
		.audio_ms = st->audio_ms,
		.id = st->seq ? st->id : NULL,
		.seq = st->seq,
		.request_id = st->has_request_id ? st->request_id : NULL,
		.conversation = st->has_conversation ? st->conversation : NULL,
		.cls = st->has_class ? st->cls : NULL,
		.model = st->model,
		.has_priority = st->has_priority,
		.priority = st->priority,
		.stream = st->stream,
		.http_status = http_status,
		.outcome = outcome,
		.fault = cl_sim_fault_name(st->fault),
		.failed = st->failed || http_status >= 400,
		.arrival_us = st->arrival_us,
		.queued_us = st->start_us                       ? st->start_us - st->arrival_us
			     : st->phase == CL_SIM_PHASE_QUEUED ? now_us - st->arrival_us
								: 0,
		.sched_first_us = st->sched_first_us,
		.act_first_us = st->act_first_us,
		.sched_last_us = st->sched_last_us,
		.act_last_us = st->act_last_us,
		.max_late_us = st->max_late_us,
		.prompt_tokens = st->prompt_tokens,
		.planned_tokens = st->planned_tokens,
		.output_tokens = st->sent_tokens,
		.reasoning_tokens = st->sent_tokens < st->planned_reasoning ? st->sent_tokens
									    : st->planned_reasoning,
		.chunks = st->chunks,
		.max_tokens = st->requested_tokens,
		.ignore_eos = st->ignore_eos,
		.images = st->images,
		.history_turns = st->history_turns,
		.history_fnv = st->history_fnv,
		.prompt_fnv = st->prompt_fnv,
		.cached_tokens = st->cached_tokens,
		.peer = st->conn ? st->conn->peer : NULL,
		.process = s->cfg->process_index,
		/* a call counts once a piece of it was sent (a fault may cut it before) */
		.tool_call = st->tool_call && st->sent_tokens > st->planned_reasoning,
		.tool_call_tokens = st->tool_call && st->sent_tokens > st->planned_reasoning
					? st->sent_tokens - st->planned_reasoning
					: 0,
		.tool_results = st->tool_results,
		.answer_fnv =
		    cl_sim_render_content_fnv(st->seq, st->sent_tokens > st->planned_reasoning
							   ? st->sent_tokens - st->planned_reasoning
							   : 0),
	};
	cl_sim_truth_record(&s->truth, &r);
}

void cl_sim_stream_log_rejected(struct cl_sim *s, const struct cl_sim_stream *st, int status)
{
	s->stats.rejected++;
	log_stream(s, st, status, NULL, 0);
}

/* A token interval of n tokens at the current batch size, jittered. */
static int64_t chunk_interval(struct cl_sim *s, struct cl_sim_stream *st, uint32_t n)
{
	return cl_sim_rng_jitter(&st->rng, (int64_t)n * cl_sim_sched_itl_us(s), s->cfg->jitter);
}

static uint32_t tokens_in_next(const struct cl_sim *s, const struct cl_sim_stream *st)
{
	CL_ASSERT(st->sent_tokens <= st->planned_tokens);
	uint32_t left = st->planned_tokens - st->sent_tokens;
	return left < s->cfg->tokens_per_chunk ? left : s->cfg->tokens_per_chunk;
}

/* Adds the stall to the chunk that carries token stall_tok. */
static void maybe_stall(struct cl_sim *s, struct cl_sim_stream *st, uint32_t first, uint32_t n)
{
	if (st->fault == CL_SIM_FAULT_STALL && !st->stalled && first <= st->stall_tok &&
	    st->stall_tok < first + n) {
		st->deadline_us += s->cfg->stall_for_us;
		st->stalled = true;
	}
}

void cl_sim_stream_start(struct cl_sim *s, struct cl_sim_stream *st, int64_t start_us)
{
	const struct cl_sim_config *cfg = s->cfg;
	/* A transcription's first text waits for its audio: --audio-per-second per second. */
	int64_t audio_us = cfg->audio_per_second_us * (int64_t)st->audio_ms / 1000;
	int64_t ttft = cl_sim_rng_jitter(&st->rng,
					 cfg->ttft_us + audio_us +
					     cfg->prefill_per_token_us *
						 (int64_t)(st->prompt_tokens - st->cached_tokens),
					 cfg->jitter);
	int64_t first_token_us = start_us + ttft;

	st->phase = CL_SIM_PHASE_RUNNING;
	st->start_us = start_us;
	cl_sim_metrics_started(s, st);
	if (!cl_api_streams(st->api) && st->api != CL_API_TRANSCRIPTION) {
		/* No decode: the whole answer is due when its input is read, at a cost per
		 * token (docs/simulator.md, "APIs"); a rerank's or score's tokens are its
		 * documents' pairs with the query. */
		int64_t per_token_us = st->api == CL_API_EMBEDDINGS ? cfg->embedding_per_token_us
								    : cfg->rerank_per_token_us;
		st->deadline_us =
		    start_us + cl_sim_rng_jitter(&st->rng,
						 per_token_us * (int64_t)st->prompt_tokens,
						 cfg->jitter);
		st->sched_first_us = st->deadline_us;
		maybe_stall(s, st, 0, 1);
	} else if (st->stream) {
		/* An answer of no token (a stop string matched at the first) ends when its first
		 * token would have come: one chunk that carries only the finish. */
		st->next_n = tokens_in_next(s, st);
		st->deadline_us =
		    first_token_us + (st->next_n ? chunk_interval(s, st, st->next_n - 1) : 0);
		maybe_stall(s, st, 0, st->next_n);
	} else {
		/* One answer when the last token is due; the batch size is read once. */
		st->sched_first_us = first_token_us;
		st->deadline_us =
		    first_token_us +
		    (st->planned_tokens ? chunk_interval(s, st, st->planned_tokens - 1) : 0);
		maybe_stall(s, st, 0, st->planned_tokens);
	}
	cl_sim_sched_push(s, st);
}

bool cl_sim_stream_begin(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us)
{
	struct cl_sim_conn *c = st->conn;
	s->stats.requests++;
	if (st->stream) {
		char head[512];
		/* --hold-after-done: a body delimited by the close, and no Connection: close
		 * either (the server that does this never closes). */
		bool hold = s->cfg->hold_after_done;
		int n = snprintf(
		    head, sizeof(head),
		    "HTTP/1.1 200 OK\r\nServer: chatload-sim\r\nContent-Type: "
		    "text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
		    "%s%s%s%s%s%s\r\n",
		    hold ? "" : "Transfer-Encoding: chunked\r\n",
		    st->has_request_id ? "X-Request-Id: " : "",
		    st->has_request_id ? st->request_id : "", st->has_request_id ? "\r\n" : "",
		    !hold && (!c->keep_alive || s->draining) ? "Connection: close\r\n" : "",
		    cl_sim_conn_keepalive_header(c));
		if (n < 0 || (size_t)n >= sizeof(head) || cl_sim_conn_write(c, head, (size_t)n)) {
			s->stats.client_gone++;
			log_stream(s, st, 200, "client_gone", now_us);
			cl_sim_conn_close(c, NULL);
			return false;
		}
	}
	cl_sim_batch_admit(s, st, now_us);
	return true;
}

bool cl_sim_stream_fail_at_once(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us)
{
	struct cl_sim_conn *c = st->conn;
	char body[8192], hdr[200] = ""; /* as fire_whole's */
	struct cl_sim_w w;
	cl_sim_w_init(&w, body, sizeof(body));
	cl_sim_dialect_body(&w, s->cfg);
	if (st->has_request_id)
		snprintf(hdr, sizeof(hdr), "X-Request-Id: %s\r\n", st->request_id);
	int status = cl_sim_dialect_status(s->cfg);
	s->stats.requests++;
	s->stats.completed++;
	st->failed = true;
	log_stream(s, st, status, NULL, now_us);
	return cl_sim_conn_respond(c, status, hdr, body, cl_sim_w_len(&w, body));
}

void cl_sim_stream_hang(struct cl_sim *s, struct cl_sim_stream *st)
{
	s->stats.requests++;
	st->failed = true;
	st->phase = CL_SIM_PHASE_HANGING; /* the connection stays busy: nothing more is read */
	CL_DEBUG("request %llu: hang fault, holding it without an answer",
		 (unsigned long long)st->seq);
}

/* The response is over (logged): give the slot back as of the scheduled end. */
static void end_stream(struct cl_sim *s, struct cl_sim_stream *st, int http_status, int64_t now_us)
{
	s->stats.completed++;
	log_stream(s, st, http_status, NULL, now_us);
	st->phase = CL_SIM_PHASE_IDLE;
	cl_sim_metrics_ended(s, st);
	cl_sim_batch_release(s, st->deadline_us);
}

static void record_late(struct cl_sim *s, struct cl_sim_stream *st, int64_t actual_us)
{
	int64_t late = actual_us - st->deadline_us;
	cl_sim_stats_late(&s->stats, st->deadline_us, actual_us);
	if (late > st->max_late_us)
		st->max_late_us = late;
}

/* The non-streamed answer, sent whole when its last token is due. */
static void fire_whole(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us)
{
	struct cl_sim_conn *c = st->conn;
	struct cl_buf body = { .max = 64u << 20 };
	char hdr[200] = "";
	int status = 200;
	int rc;

	if (st->has_request_id)
		snprintf(hdr, sizeof(hdr), "X-Request-Id: %s\r\n", st->request_id);
	if (st->fault == CL_SIM_FAULT_DROP) {
		st->failed = true;
		end_stream(s, st, 0, now_us);
		cl_sim_conn_close(c, NULL);
		return;
	}
	if (st->fault == CL_SIM_FAULT_ERROR_CHUNK || st->fault == CL_SIM_FAULT_EMPTY) {
		/* The failure as the dialect's server puts it in a body; an empty answer is a
		 * completion without choices or usage, as a failed one was seen to be. */
		char tmp[8192]; /* a 1024-byte message, each byte escaped to six at worst */
		struct cl_sim_w w;
		cl_sim_w_init(&w, tmp, sizeof(tmp));
		if (st->fault == CL_SIM_FAULT_EMPTY) {
			st->failed = true;
			CL_SIM_W_LIT(&w, "{\"id\":\"");
			cl_sim_w_str(&w, st->id);
			CL_SIM_W_LIT(&w, "\",\"object\":\"chat.completion\",\"model\":\"");
			cl_sim_w_str(&w, st->model);
			CL_SIM_W_LIT(&w, "\",\"choices\":[],\"usage\":null}");
		} else {
			status = cl_sim_dialect_status(s->cfg);
			st->failed = true;
			cl_sim_dialect_body(&w, s->cfg);
		}
		rc = w.overflow ? CL_ETOOBIG : cl_buf_append(&body, tmp, cl_sim_w_len(&w, tmp));
	} else {
		bool usage = st->fault != CL_SIM_FAULT_NO_USAGE;
		rc = st->api == CL_API_EMBEDDINGS
			 ? cl_sim_render_embeddings(&body, s->cfg, st, usage)
		     : st->api == CL_API_TRANSCRIPTION
			 ? cl_sim_render_transcription(&body, st, usage)
		     : st->api == CL_API_MESSAGES ? cl_sim_render_msg_whole(&body, st, usage)
		     : cl_api_scores(st->api)     ? cl_sim_render_scores(&body, st, usage)
					      : cl_sim_render_completion(&body, s->cfg, st, usage);
		if (st->fault == CL_SIM_FAULT_MALFORMED)
			body.len /= 2; /* cut the JSON in half */
		if (!rc)
			st->sent_tokens = st->planned_tokens;
	}
	if (rc) {
		CL_WARN("cannot render a response of %u tokens: %s", st->planned_tokens,
			cl_strerror(rc));
		cl_buf_free(&body);
		end_stream(s, st, 0, now_us);
		cl_sim_conn_close(c, NULL);
		return;
	}
	int64_t actual = cl_mono_us();
	record_late(s, st, actual);
	st->act_first_us = actual;
	cl_sim_metrics_first(s, st, actual);
	st->sched_last_us = st->deadline_us;
	st->act_last_us = actual;
	end_stream(s, st, status, now_us);
	uint64_t gen = c->gen;
	if (cl_sim_conn_respond(c, status, hdr, body.data, body.len) && c->gen == gen)
		cl_sim_conn_resume(c);
	cl_buf_free(&body);
}

/* Whether fault f strikes in the chunk of tokens [first, first + n); the one chunk of an
 * answer of no token (n 0) holds the fault point too. */
static bool fault_hits(const struct cl_sim_stream *st, enum cl_sim_fault f, uint32_t first,
		       uint32_t n)
{
	return st->fault == f && first <= st->fault_tok && (st->fault_tok < first + n || n == 0);
}

/* What one chunk's events did: carried tokens (the next chunk follows), or ended the stream. */
struct fire_events {
	bool end, tokens;
};

/* Renders the SSE events of the chunk that carries tokens [a, a + n) into w: the opening
 * event before the first, the faults due in it, the tokens, and after the last the usage
 * and the end of the stream. */
static struct fire_events compose_events(struct cl_sim *s, struct cl_sim_stream *st,
					 struct cl_sim_w *w, uint32_t a, uint32_t n)
{
	const struct cl_sim_config *cfg = s->cfg;
	uint32_t b = a + n;
	bool last = b >= st->planned_tokens;
	bool resp = st->api == CL_API_RESPONSES, msgs = st->api == CL_API_MESSAGES;
	/* OpenAI's transcription events: typed like Responses', no [DONE] either. */
	bool oai = st->api == CL_API_TRANSCRIPTION && cfg->transcription_openai;
	/* Responses, Messages and OpenAI's transcription streams end with their own event,
	 * never [DONE]. */
	bool own_end = resp || msgs || oai;
	struct fire_events ev = { .end = false, .tokens = n > 0 };

	if (st->fault == CL_SIM_FAULT_EMPTY) {
		/* A stream that carries nothing: [DONE] alone (a Responses or Messages stream:
		 * nothing). */
		st->failed = true;
		if (!own_end)
			cl_sim_render_done(w);
		return (struct fire_events){ .end = true, .tokens = false };
	}
	/* A failure before any token comes alone, as servers send it when the request fails
	 * before its first output (no opening role chunk). */
	bool fails_now = fault_hits(st, CL_SIM_FAULT_ERROR_CHUNK, a, n);
	if (fails_now && st->chunks == 0) {
		/* nothing before it */
	} else if (st->chunks == 0 && resp) {
		cl_sim_render_resp_created(w, st);
	} else if (st->chunks == 0 && msgs) {
		cl_sim_render_msg_start(w, st,
					st->include_usage && st->fault != CL_SIM_FAULT_NO_USAGE);
	} else if (st->chunks == 0 && st->api == CL_API_CHAT) {
		/* The legacy completions API has no role: its first chunk carries text. */
		struct cl_sim_chunk role = { .role = true };
		cl_sim_render_chunk(w, cfg, st, &role);
	}
	if (fault_hits(st, CL_SIM_FAULT_MALFORMED, a, n))
		cl_sim_render_malformed(w, st);
	if (fault_hits(st, CL_SIM_FAULT_WRONG_TYPE, a, n))
		cl_sim_render_wrong_type(w, st, cfg->wrong_shape);
	if (fails_now) {
		st->failed = true;
		/* The dialect's failure (--error-dialect), then its [DONE] if it sends one; a
		 * Responses stream's error event ends it.  A Messages stream fails in the
		 * dialect asked (anthropic: its `event: error`). */
		if (resp)
			cl_sim_render_resp_error(w, st, cfg->error_message);
		else
			cl_sim_dialect_event(w, cfg);
		return (struct fire_events){ .end = true, .tokens = false };
	}
	struct cl_sim_chunk ch = {
		.first_token = a,
		.n_tokens = n,
		.finish = last ? cl_sim_render_finish(st) : NULL,
	};
	if (resp)
		cl_sim_render_resp_delta(w, st, &ch);
	else if (msgs)
		cl_sim_render_msg_delta(w, st, &ch);
	else if (oai && n)
		cl_sim_render_transcript_delta(w, st, a, n);
	else if (!oai)
		cl_sim_render_chunk(w, cfg, st, &ch);
	if (last && oai) {
		st->sent_tokens = b;
		/* the done event is the end: no-done leaves it out, no-usage its usage */
		if (st->fault != CL_SIM_FAULT_NO_DONE)
			cl_sim_render_transcript_done(w, st, st->fault != CL_SIM_FAULT_NO_USAGE);
		ev.end = true;
	} else if (last) {
		st->sent_tokens = b; /* the usage chunk counts this one */
		bool usage = st->include_usage && st->fault != CL_SIM_FAULT_NO_USAGE;
		/* A Responses stream ends with response.completed (no [DONE]): the no-done
		 * fault leaves it out. */
		if (resp && st->fault != CL_SIM_FAULT_NO_DONE)
			cl_sim_render_resp_end(w, st, usage);
		else if (msgs)
			cl_sim_render_msg_end(w, st, usage, st->fault != CL_SIM_FAULT_NO_DONE);
		else if (!resp && usage)
			cl_sim_render_usage(w, st);
		if (!own_end && st->fault != CL_SIM_FAULT_NO_DONE)
			cl_sim_render_done(w);
		ev.end = true;
	}
	return ev;
}

/* HTTP/1.1 chunked framing around the len bytes of SSE events at payload, in the room
 * FRAME_HEAD and FRAME_TAIL leave around them; end adds the terminating chunk.  None for a
 * body delimited by the close (--hold-after-done).  Sets *start and returns the end. */
static char *frame_http_chunk(const struct cl_sim_config *cfg, char *payload, size_t len, bool end,
			      char **start)
{
	char *tail = payload + len;
	*start = payload;
	if (cfg->hold_after_done)
		return tail;
	char hex[FRAME_HEAD];
	int hn = snprintf(hex, sizeof(hex), "%zx\r\n", len);
	CL_ASSERT(hn > 0 && hn < FRAME_HEAD); /* the room left before the payload */
	*start = payload - hn;
	memcpy(*start, hex, (size_t)hn);
	memcpy(tail, "\r\n", 2);
	tail += 2;
	if (end) {
		memcpy(tail, "0\r\n\r\n", 5);
		tail += 5;
	}
	return tail;
}

void cl_sim_stream_fire(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us)
{
	const struct cl_sim_config *cfg = s->cfg;
	struct cl_sim_conn *c = st->conn;
	/* The timer fires a running stream once it left the heap, never early. */
	CL_ASSERT(st->phase == CL_SIM_PHASE_RUNNING && st->heap_idx == SIZE_MAX);
	CL_ASSERT(now_us >= st->deadline_us);
	if (!st->stream) {
		fire_whole(s, st, now_us);
		return;
	}
	uint32_t a = st->sent_tokens, n = st->next_n, b = a + n;
	CL_ASSERT(b <= st->planned_tokens); /* the chunk's tokens lie within the output */
	bool last = b >= st->planned_tokens;
	char *payload = s->scratch + FRAME_HEAD;
	struct cl_sim_w w;

	if (fault_hits(st, CL_SIM_FAULT_DROP, a, n)) {
		st->failed = true;
		end_stream(s, st, 200, now_us);
		cl_sim_conn_close(c, NULL);
		return;
	}
	cl_sim_w_init(&w, payload, CL_SIM_SCRATCH - FRAME_HEAD - FRAME_TAIL);
	struct fire_events ev = compose_events(s, st, &w, a, n);
	if (w.overflow) {
		/* cannot happen: a chunk is bounded by CL_SIM_MAX_TPC words */
		CL_ERROR("chunk of %u tokens does not fit the render buffer", n);
		end_stream(s, st, 200, now_us);
		cl_sim_conn_close(c, NULL);
		return;
	}
	char *start;
	char *tail = frame_http_chunk(cfg, payload, cl_sim_w_len(&w, payload), ev.end, &start);

	int64_t actual = cl_mono_us();
	if (cl_sim_conn_write(c, start, (size_t)(tail - start))) {
		if (last)
			st->sent_tokens = a;
		cl_sim_conn_close(c, "client_gone");
		return;
	}
	record_late(s, st, actual);
	if (ev.tokens) {
		if (st->chunks == 0) {
			st->sched_first_us = st->deadline_us;
			st->act_first_us = actual;
			cl_sim_metrics_first(s, st, actual);
		}
		st->chunks++;
		st->sent_tokens = b;
		st->sched_last_us = st->deadline_us;
		st->act_last_us = actual;
		s->stats.chunks++;
	}
	if (ev.end) {
		end_stream(s, st, 200, now_us);
		if (cfg->hold_after_done)
			cl_sim_conn_hold(c);
		else
			cl_sim_conn_done(c);
		return;
	}
	st->next_n = tokens_in_next(s, st);
	st->deadline_us += chunk_interval(s, st, st->next_n);
	maybe_stall(s, st, b, st->next_n);
	cl_sim_sched_push(s, st);
}

void cl_sim_stream_abort(struct cl_sim *s, struct cl_sim_stream *st, const char *outcome)
{
	int64_t now = cl_mono_us();
	enum cl_sim_phase phase = st->phase;
	if (outcome) {
		if (strcmp(outcome, "cut") == 0)
			s->stats.cut++;
		else
			s->stats.client_gone++;
		/* a held request got nothing, not even its status line */
		log_stream(s, st, st->stream && phase != CL_SIM_PHASE_HANGING ? 200 : 0, outcome,
			   now);
	}
	st->phase = CL_SIM_PHASE_IDLE;
	if (phase == CL_SIM_PHASE_RUNNING) {
		cl_sim_sched_remove(s, st);
		cl_sim_metrics_ended(s, st);
		cl_sim_batch_release(s, now);
	} else if (phase == CL_SIM_PHASE_QUEUED) {
		cl_sim_batch_unqueue(s, st);
	}
}
