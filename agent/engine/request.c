/* One request on a stream slot while libcurl carries it: handle setup, the callbacks that time
 * and decode the stream (nothing allocated per chunk), re-sends on a fresh connection, the end
 * at [DONE], taking the transfer back; what it came to is finish.c's. */
#include "internal.h"
#include "route.h"

#include "client/stream/chunk.h"
#include "client/stream/error.h"
#include "client/stream/event.h"
#include "client/stream/transcription.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "chatload/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Callback stop values for cl_sse_feed (any nonzero stops feeding; curl then aborts). */
enum { STOP_BAD_EVENT = 1, STOP_AT_DONE = 2, STOP_CANCEL = 3 };

static void after_done_add(struct cl_slot *s);
static void after_done_remove(struct cl_slot *s);

/*
 * Called by libcurl each time it is about to send the request on a connection.  More than
 * once for one request means libcurl re-sent it: the reused connection it went out on had
 * been closed by the server (llama.cpp closes after every answer while advertising
 * keep-alive), so libcurl sent it again on another one.
 */
static int on_prereq(void *clientp, char *primary_ip, char *local_ip, int primary_port,
		     int local_port)
{
	struct cl_slot *s = clientp;
	s->sent_us = cl_mono_us();
	s->attempts++;
	return CURL_PREREQFUNC_OK;
}

/*
 * Sets every option of the slot's easy handle but the body (fresh, or after a reset): where
 * and how (URL, protocols, redirects, TLS, timeouts, HTTP version and connection use, the
 * header list) the target's, as the readiness probe sends them (client/http), then the
 * slot's own callbacks.  Every target option was tried when the engine was created.
 */
static int apply_options(struct cl_slot *s)
{
	struct cl_engine *e = s->w->e;
	CURL *h = s->easy;
	struct cl_err err = { 0 };
	if (cl_http_target_apply(&e->http, h, CL_HTTP_CHAT, e->workload.request_timeout_us, s->hdrs,
				 &err) != 0) {
		CL_WARN("worker %u: %s", s->w->index, err.msg);
		return err.code ? err.code : CL_EINVAL;
	}
	int bad = 0;
	if (e->n_src)
		bad |= curl_easy_setopt(h, CURLOPT_INTERFACE, e->src_iface[s->src]);
	bad |= curl_easy_setopt(h, CURLOPT_PRIVATE, s);
	bad |= curl_easy_setopt(h, CURLOPT_POST, 1L);
	bad |= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cli_on_body);
	bad |= curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	bad |= curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cli_on_header);
	bad |= curl_easy_setopt(h, CURLOPT_HEADERDATA, s);
	bad |= curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
	bad |= curl_easy_setopt(h, CURLOPT_PREREQDATA, s);
	bad |= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, s->errbuf);
	bad |= curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	return bad ? CL_ENOMEM : 0;
}

/*
 * Gives the easy handle a clean state, keeping its connections (they live in the shard's
 * multi handle, not in the easy handle).  Needed after a request libcurl re-sent: libcurl
 * 7.88 counts re-sends on a dead reused connection in the easy handle
 * (data->state.retrycount, lib/transfer.c Curl_retry_request) and resets that count only in
 * curl_easy_reset() or when it gives up, never between transfers (fixed in 8.17.0, curl
 * #18926).  A handle reused as is would fail its sixth re-send overall with "Connection
 * died, tried 5 times before giving up": 27 of 200 against a server that closes after
 * every answer.  Handles that never saw a re-send are not reset (no cost for normal servers).
 */
static int reset_handle(struct cl_slot *s)
{
	curl_easy_reset(s->easy);
	int rc = apply_options(s);
	s->reset_easy = rc != 0;
	return rc;
}

int cli_slot_prepare(struct cl_slot *s)
{
	struct cl_engine *e = s->w->e;
	if (s->easy)
		return 0;
	if (cl_sse_init(&s->sse, CL_ENGINE_MAX_EVENT_BYTES) != 0)
		goto fail;
	cl_buf_init(&s->whole, CL_ENGINE_MAX_WHOLE);
	cl_buf_init(&s->conv_hist, CL_ENGINE_MAX_HISTORY);
	cl_buf_init(&s->conv_answer, CL_ENGINE_MAX_ANSWER);
	cl_buf_init(&s->conv_req, 2 * CL_ENGINE_MAX_HISTORY);
	cli_tools_slot_init(s);
	/*
	 * The header list is the slot's own array of nodes: X-Request-Id first, then the
	 * target's chat lines (shared, not copied).  curl only reads the list while it builds
	 * a request, so the X-Request-Id node can be rewritten in place for each request: no
	 * allocation per request.
	 */
	size_t n = 1 + cl_http_target_n_lines(&e->http, CL_HTTP_CHAT);
	s->hdrs = calloc(n, sizeof(*s->hdrs));
	if (!s->hdrs)
		goto fail;
	snprintf(s->reqid, sizeof(s->reqid), "X-Request-Id: %s", e->prefix);
	if (!cl_http_target_link(&e->http, CL_HTTP_CHAT, s->hdrs, n, s->reqid))
		goto fail;
	if (e->n_convs) {
		/* A conversation's turns carry its id (rewritten in place per request, like
		 * X-Request-Id), so a server's log, or a gateway's affinity, can tell them. */
		s->conv_node.data = s->convid;
		s->conv_node.next = s->hdrs[0].next;
		s->hdrs[0].next = &s->conv_node;
	}
	/* A request of a class with headers links that class's lines after the last node
	 * (cli_request_launch); the nodes are the engine's, shared and never written. */
	s->hdr_tail = &s->hdrs[0];
	while (s->hdr_tail->next)
		s->hdr_tail = s->hdr_tail->next;

	CURL *h = curl_easy_init();
	if (!h)
		goto fail;
	s->easy = h;
	if (e->n_src)
		s->src = (uint32_t)(atomic_fetch_add(&e->next_src, 1) % e->n_src);
	if (apply_options(s) != 0)
		goto fail;
	return 0;
fail:
	cli_slot_destroy(s);
	return CL_ENOMEM;
}

void cli_slot_destroy(struct cl_slot *s)
{
	if (!s)
		return;
	if (s->easy) {
		if (s->busy && s->shard && s->shard->multi)
			curl_multi_remove_handle(s->shard->multi, s->easy);
		curl_easy_cleanup(s->easy);
		s->easy = NULL;
	}
	s->busy = false;
	cl_sse_destroy(&s->sse);
	cl_buf_free(&s->whole);
	cl_buf_free(&s->conv_hist);
	cl_buf_free(&s->conv_answer);
	cl_buf_free(&s->conv_req);
	cli_tools_slot_free(s);
	free(s->hdrs);
	s->hdrs = NULL;
}

/*
 * The conversation the request belongs to (a turn after the first keeps its conversation's
 * id; a lone request is a conversation of one), and with several endpoints the one it goes to
 * (target.route): session_hash keys on the conversation's id, so all its turns go to one
 * endpoint, whichever worker or agent sends them.
 */
static void route(struct cl_worker *w, struct cl_slot *s, const struct cl_request_body *b)
{
	struct cl_engine *e = w->e;
	/* A round of the agentic loop resends its turn's body: still the same conversation. */
	if (b->turn == 0 || (b->turn == 1 && s->conv_req_no <= 1))
		s->conv_seq = s->seq;
	s->ep = 0;
	if (!e->n_convs && !e->n_eps)
		return; /* no header to send, no endpoint to pick: no formatting per request */
	int len = snprintf(s->convid, sizeof(s->convid), "X-Chatload-Conversation: %s-%u-%" PRIu64,
			   e->prefix, w->index, s->conv_seq);
	if (!e->n_eps)
		return;
	static const size_t skip = sizeof("X-Chatload-Conversation: ") - 1;
	uint64_t key = len > (int)skip ? cl_route_key(s->convid + skip, (size_t)len - skip) : 0;
	uint64_t turn = atomic_fetch_add_explicit(&e->ep_turn, 1, memory_order_relaxed);
	int64_t out[CL_ENDPOINTS_MAX];
	if (e->target.route == CL_ROUTE_LEAST_OUTSTANDING)
		for (uint32_t i = 0; i < e->n_eps; i++)
			out[i] = atomic_load_explicit(&e->ep_outstanding[i], memory_order_relaxed);
	s->ep = cl_route_pick(e->target.route, e->n_eps, turn, out, key);
	/* each endpoint's connections are its own in the shard's cache (keyed by host and port),
	 * so switching the URL keeps every endpoint's connections reused */
	curl_easy_setopt(s->easy, CURLOPT_URL, e->ep_http[s->ep].url[CL_HTTP_CHAT]);
}

void cli_slot_keep_sample(struct cl_slot *s, const char *p, size_t n)
{
	size_t room = sizeof(s->sample) - 1 - s->sample_len;
	if (n > room)
		n = room;
	memcpy(s->sample + s->sample_len, p, n);
	s->sample_len += n;
	s->sample[s->sample_len] = '\0';
}

bool cli_request_start(struct cl_worker *w, int64_t intended_us)
{
	if (w->nfree == 0)
		return false;
	CL_ASSERT(w->nfree <= w->nslots);
	uint32_t idx = w->free_stack[w->nfree - 1];
	CL_ASSERT(idx < w->nslots);
	struct cl_slot *s = &w->slots[idx];
	if (!s->w) {
		s->w = w;
		s->index = idx;
		s->shard = &w->shards[idx / w->shard_slots];
	}
	w->nfree--;
	if (!cli_request_launch(w, s, intended_us)) {
		cli_conv_end(w, s); /* a conversation it began is not carried */
		w->free_stack[w->nfree++] = s->index;
		return false;
	}
	return true;
}

bool cli_request_launch(struct cl_worker *w, struct cl_slot *s, int64_t intended_us)
{
	struct cl_engine *e = w->e;
	if (!s->easy && cli_slot_prepare(s) != 0) {
		CL_WARN("worker %u: cannot prepare a stream slot: out of memory", w->index);
		return false;
	}
	if (s->reset_easy && reset_handle(s) != 0) {
		CL_WARN("worker %u: cannot reset a stream slot: out of memory", w->index);
		return false;
	}

	s->seq = ++w->seq;
	s->intended_us = intended_us;
	s->sent_us = s->headers_us = s->first_us = s->first_content_us = s->last_us = 0;
	s->http_status = 0;
	s->framed = s->done_seen = s->closed_at_done = false;
	s->done_us = 0;
	s->attempts = 0;
	s->fresh_resent = false;
	s->finish = CLI_FINISH_NONE;
	s->h1_refused = false;
	s->err_ctr = 0;
	s->err_code = 0;
	s->n_tok_chunks = s->n_prov_chunks = 0;
	s->tok_exact = s->last_ct = 0;
	s->tok_counted = s->tok_counted_win = s->rtok_counted = s->rtok_counted_win = 0;
	s->usage_ct = s->usage_rt = s->usage_pt = s->usage_cached = -1;
	s->usage_seen = false;
	s->timings_cache_n = s->timings_prompt_n = -1;
	s->bytes = 0;
	s->sample_len = 0;
	s->sample[0] = '\0';
	s->errbuf[0] = '\0';
	s->embed_inputs = 0;
	s->documents = 0;
	cl_buf_reset(&s->whole);
	cl_sse_reset(&s->sse);
	snprintf(s->reqid, sizeof(s->reqid), "X-Request-Id: %s-%u-%" PRIu64, e->prefix, w->index,
		 s->seq);

	const struct cl_request_body *b = cli_conv_pick(w, s);
	if (!b) {
		CL_WARN("worker %u: a conversation's history does not fit", w->index);
		return false;
	}
	s->body = b;
	s->requested = b->max_tokens;
	s->cls = b->cls;
	if (e->n_cls)
		s->hdr_tail->next = e->cls_hdrs[s->cls];
	route(w, s, b);
	if (curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->post) != CURLE_OK ||
	    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->post_len) !=
		CURLE_OK) {
		CL_WARN("worker %u: cannot set a request body", w->index);
		return false; /* the caller takes the slot back */
	}

	/* A slot is launched from the free stack or the park heap, never while libcurl has it. */
	CL_ASSERT(!s->busy && !s->parked && !s->in_after_done);
	s->in_window = cl_in_window(w, intended_us);
	s->busy = true;
	s->handed_us = cl_mono_us();
	CURLMcode mc = curl_multi_add_handle(s->shard->multi, s->easy);
	if (mc != CURLM_OK) {
		/* Only misuse or memory exhaustion gets here: the caller takes the slot back and
		 * the load model tries again later rather than spin. */
		s->busy = false;
		CL_WARN("worker %u: cannot start a request: %s", w->index, curl_multi_strerror(mc));
		return false;
	}
	atomic_fetch_add_explicit(&w->inflight, 1, memory_order_relaxed);
	cli_cancel_arm(w, s);
	if (e->n_eps)
		atomic_fetch_add_explicit(&e->ep_outstanding[s->ep], 1, memory_order_relaxed);
	if (s->in_window) {
		w->active->ctr[CL_CTR_STARTED]++;
		w->st.win_open++;
		struct cl_ep_metrics *ep = cl_slot_ep(w, s);
		if (ep)
			ep->ctr[CL_CTR_STARTED]++;
		struct cl_metrics *cm = cl_slot_cls(w, s);
		if (cm) {
			cm->ctr[CL_CTR_STARTED]++;
			cl_hist_record(&cm->lat[CL_LAT_QUEUE], s->handed_us - intended_us);
		}
		cl_hist_record(&w->active->lat[CL_LAT_QUEUE], s->handed_us - intended_us);
		if (w->st.by_requests && w->st.to_start > 0)
			w->st.to_start--;
	} else {
		atomic_fetch_add_explicit(&w->ramp_started, 1, memory_order_relaxed);
	}
	return true;
}

/* ---- callbacks: these run for every byte received ---- */

/* Whether a Transfer-Encoding value (not NUL-terminated) names chunked. */
static bool has_chunked(const char *v, size_t n)
{
	for (size_t i = 0; i + 7 <= n; i++)
		if (strncasecmp(v + i, "chunked", 7) == 0)
			return true;
	return false;
}

size_t cli_on_header(char *p, size_t size, size_t n, void *ud)
{
	struct cl_slot *s = ud;
	size_t len = size * n;
	/* A status line: "HTTP/1.1 200 OK\r\n" or "HTTP/2 200 \r\n".  Interim 1xx answers are
	 * skipped: the final response's status line is the ttfb moment. */
	if (len >= 12 && memcmp(p, "HTTP/", 5) == 0) {
		const char *sp = memchr(p, ' ', len);
		if (sp && (size_t)(sp - p) + 4 <= len) {
			int code = 0;
			for (int i = 1; i <= 3; i++) {
				char c = sp[i];
				if (c < '0' || c > '9') {
					code = 0;
					break;
				}
				code = code * 10 + (c - '0');
			}
			if (code >= 200) {
				s->http_status = code;
				s->headers_us = cl_stamp(s->w);
				/* HTTP/2 required (ALPN may still pick http/1.1): an HTTP/1.x
				 * answer is refused here, before its body is taken for the
				 * server's. */
				if (p[5] == '1' && s->w->e->http.ver.h2_required) {
					s->h1_refused = true;
					return 0; /* aborts the transfer */
				}
			}
		}
		/* HTTP/2 and 3 frame every body; an HTTP/1 body is framed only by the
		 * headers below (else it ends with the connection). */
		s->framed = memcmp(p + 5, "1.", 2) != 0;
	} else if (!s->framed && len >= 15) {
		char c = (char)(p[0] | 0x20);
		if (c == 'c' && strncasecmp(p, "content-length:", 15) == 0)
			s->framed = true;
		else if (c == 't' && len > 18 && strncasecmp(p, "transfer-encoding:", 18) == 0 &&
			 has_chunked(p + 18, len - 18))
			s->framed = true;
	}
	return len;
}

/* Per-chunk bookkeeping for one decoded token-bearing chunk at now. */
static void on_token_chunk(struct cl_slot *s, const struct cl_chunk *c, int64_t now)
{
	struct cl_worker *w = s->w;
	struct cl_metrics *m = w->active;
	if (!s->first_us)
		s->first_us = now;
	else if (s->in_window) {
		cl_hist_record(&m->lat[CL_LAT_ITL], now - s->last_us);
		struct cl_ep_metrics *ep = cl_slot_ep(w, s);
		if (ep)
			cl_hist_record(&ep->lat[CL_EP_LAT_ITL], now - s->last_us);
		struct cl_metrics *cm = cl_slot_cls(w, s);
		if (cm)
			cl_hist_record(&cm->lat[CL_LAT_ITL], now - s->last_us);
	}
	/* A tool call is the answer of its turn: its first delta is the first content. */
	if ((c->has_content || c->has_tool_call) && !s->first_content_us)
		s->first_content_us = now;
	s->last_us = now;
	s->n_tok_chunks++;

	/*
	 * Tokens this chunk carries: exact when cumulative usage rides on it (vLLM's
	 * continuous_usage_stats), else provisionally one; request end corrects the
	 * provisional ones from the final usage.
	 */
	int64_t d;
	if (c->has_usage && c->completion_tokens >= 0) {
		d = c->completion_tokens - s->last_ct;
		if (d < 0)
			d = 0;
		s->last_ct = c->completion_tokens;
		s->tok_exact += d;
		if (s->in_window)
			cl_hist_record(&m->cnt[CL_CNT_TOKENS_PER_CHUNK], d * 1000);
	} else {
		d = 1;
		s->n_prov_chunks++;
	}
	bool reasoning = c->has_reasoning && !c->has_content && !c->has_tool_call;
	bool win = cl_in_window(w, now);
	s->tok_counted += d;
	if (reasoning)
		s->rtok_counted += d;
	if (win) {
		s->tok_counted_win += d;
		m->ctr[CL_CTR_OUTPUT_TOKENS] += (uint64_t)d;
		m->ctr[CL_CTR_CHUNKS]++;
		struct cl_ep_metrics *ep = cl_slot_ep(w, s);
		if (ep)
			ep->ctr[CL_CTR_OUTPUT_TOKENS] += (uint64_t)d;
		struct cl_metrics *cm = cl_slot_cls(w, s);
		if (cm) {
			cm->ctr[CL_CTR_OUTPUT_TOKENS] += (uint64_t)d;
			cm->ctr[CL_CTR_CHUNKS]++;
		}
		if (reasoning) {
			s->rtok_counted_win += d;
			m->ctr[CL_CTR_REASONING_TOKENS] += (uint64_t)d;
		}
	}
}

/* The end of the answer ([DONE], or response.completed): STOP_AT_DONE or 0. */
static int on_done(struct cl_slot *s)
{
	s->done_seen = true;
	s->done_us = s->w->recv_us;
	if (!s->framed) {
		/* Only the connection's close could end this body, and a server may never
		 * send it: [DONE] ends the answer, so end the transfer now (the connection
		 * could not carry another request anyway). */
		s->closed_at_done = true;
		return STOP_AT_DONE;
	}
	/* A framed body normally ends in these bytes or the next read; if it does not,
	 * cli_request_expire_done ends it after a grace. */
	after_done_add(s);
	return 0;
}

static int on_event(void *ctx, const char *data, size_t len, unsigned flags)
{
	struct cl_slot *s = ctx;
	if (s->done_seen)
		return 0; /* anything after [DONE] is not part of the answer */
	struct cl_chunk c;
	int rc = cl_event_decode(s->w->e->http.api, data, len, flags, &c);
	if (rc != 0) {
		s->err_ctr = CL_CTR_ERR_STREAM_MALFORMED;
		/* Valid JSON of the wrong shape: say what was wrong, then the event. */
		if (rc == CL_EPROTO && c.malformed) {
			cli_slot_keep_sample(s, c.malformed, strlen(c.malformed));
			cli_slot_keep_sample(s, ": ", 2);
		}
		cli_slot_keep_sample(s, data, len);
		return STOP_BAD_EVENT;
	}
	if (c.is_error) {
		/* The server said the request failed, in whichever dialect: the stream is over
		 * as far as the answer goes; stop rather than wait on a server that may keep the
		 * connection open.  The sample is its message; its code is said before it
		 * (error_text.c), so a long message never cuts it off. */
		s->err_ctr = CL_CTR_ERR_STREAM_ERROR;
		if (c.error_msg)
			cli_slot_keep_sample(s, c.error_msg, c.error_msg_len);
		else
			cli_slot_keep_sample(s, data, len);
		s->err_code = c.error_code;
		return STOP_BAD_EVENT;
	}
	/* Usage before the end: a Responses stream's last event (response.completed) is
	 * both. */
	if (c.has_usage) {
		s->usage_seen = true;
		if (c.completion_tokens >= 0)
			s->usage_ct = c.completion_tokens;
		if (c.reasoning_tokens >= 0)
			s->usage_rt = c.reasoning_tokens;
		if (c.prompt_tokens >= 0)
			s->usage_pt = c.prompt_tokens;
		if (c.cached_tokens >= 0)
			s->usage_cached = c.cached_tokens;
	}
	if (c.timings_cache_n >= 0)
		s->timings_cache_n = c.timings_cache_n;
	if (c.timings_prompt_n >= 0)
		s->timings_prompt_n = c.timings_prompt_n;
	if (c.finish_reason[0])
		s->finish = strcmp(c.finish_reason, "stop") == 0     ? CLI_FINISH_STOP
			    : strcmp(c.finish_reason, "length") == 0 ? CLI_FINISH_LENGTH
								     : CLI_FINISH_OTHER;
	if (c.done)
		return on_done(s);
	if (c.has_content || c.has_reasoning || c.has_tool_call)
		on_token_chunk(s, &c, s->w->recv_us);
	if (c.n_tool_calls)
		cli_tools_on_chunk(s, &c);
	if (c.content)
		cli_conv_on_content(s, c.content, c.content_len);
	/* Abandoned after its tokens (workload.cancel): nothing after this event is read,
	 * so the request received exactly those tokens (a server's cumulative usage may put
	 * it past them in one chunk). */
	if (s->cancel_tokens && s->tok_counted >= s->cancel_tokens) {
		s->cancelled = true;
		return STOP_CANCEL;
	}
	return 0;
}

void cli_request_stream_end(struct cl_slot *s)
{
	if (s->done_seen)
		return; /* [DONE] ended the answer; what came after is not judged */
	/* Its return is on_event's (the class is then set) or a sticky parser error, which
	 * cli_on_body met first and classed. */
	(void)cl_sse_finish(&s->sse, on_event, s);
}

size_t cli_on_body(char *p, size_t size, size_t n, void *ud)
{
	struct cl_slot *s = ud;
	struct cl_worker *w = s->w;
	size_t len = size * n;
	int64_t now = cl_stamp(w);
	w->recv_us = now; /* every event in these bytes arrived by now */
	s->bytes += len;
	if (cl_in_window(w, now))
		w->active->ctr[CL_CTR_BYTES] += len;
	if (s->http_status < 200 || s->http_status > 299) {
		cli_slot_keep_sample(s, p, len);
		return len;
	}
	if (cli_slot_whole(s)) {
		/* One JSON document: kept whole, decoded when the transfer ends. */
		s->last_us = now;
		if (cl_buf_append(&s->whole, p, len) == 0)
			return len;
		s->err_ctr = CL_CTR_ERR_STREAM_MALFORMED;
		cli_slot_keep_sample(s, "answer larger than 64 MiB", 25);
		return 0;
	}
	int rc = cl_sse_feed(&s->sse, p, len, on_event, s);
	if (rc == 0)
		return len;
	if (rc == STOP_AT_DONE)
		return 0; /* aborts the transfer; the request is complete */
	if (rc == STOP_CANCEL)
		return 0; /* aborts the transfer and closes its connection: the client left */
	if (rc == CL_ETOOBIG) {
		s->err_ctr = CL_CTR_ERR_STREAM_MALFORMED;
		cli_slot_keep_sample(s, "event larger than 64 KiB", 24);
	} else if (rc != STOP_BAD_EVENT) {
		s->err_ctr = CL_CTR_ERR_OTHER;
		cli_slot_keep_sample(s, "out of memory decoding the stream", 33);
	}
	return 0; /* aborts the transfer (CURLE_WRITE_ERROR); the class is already set */
}

/* ---- past [DONE] ---- */

/*
 * The slots whose [DONE] arrived on a framed body that has not ended yet, oldest first.
 * A normal server ends the body in the same read or the next one, so a slot usually leaves
 * the list in the loop turn it joined; one still there after CL_ENGINE_DONE_GRACE_US is a
 * server holding the stream open, and the engine ends the request itself.  Arrival order
 * is deadline order (one grace for all), so the list needs no sorting.
 */
static void after_done_add(struct cl_slot *s)
{
	struct cl_worker *w = s->w;
	CL_ASSERT(s->busy && !s->in_after_done);
	s->ad_prev = w->ad_tail;
	s->ad_next = CL_NO_SLOT;
	if (w->ad_tail != CL_NO_SLOT)
		w->slots[w->ad_tail].ad_next = s->index;
	else
		w->ad_head = s->index;
	w->ad_tail = s->index;
	s->in_after_done = true;
}

static void after_done_remove(struct cl_slot *s)
{
	struct cl_worker *w = s->w;
	/* Only the list's ends have no neighbour. */
	CL_ASSERT(s->in_after_done);
	CL_ASSERT(s->ad_prev != CL_NO_SLOT || w->ad_head == s->index);
	CL_ASSERT(s->ad_next != CL_NO_SLOT || w->ad_tail == s->index);
	if (s->ad_prev != CL_NO_SLOT)
		w->slots[s->ad_prev].ad_next = s->ad_next;
	else
		w->ad_head = s->ad_next;
	if (s->ad_next != CL_NO_SLOT)
		w->slots[s->ad_next].ad_prev = s->ad_prev;
	else
		w->ad_tail = s->ad_prev;
	s->in_after_done = false;
}

int64_t cli_request_expire_done(struct cl_worker *w, int64_t now_us)
{
	while (w->ad_head != CL_NO_SLOT) {
		struct cl_slot *s = &w->slots[w->ad_head];
		CL_ASSERT(s->in_after_done && s->busy);
		int64_t due = s->done_us + CL_ENGINE_DONE_GRACE_US;
		if (due > now_us)
			return due;
		/* Removing the handle mid-transfer makes libcurl close the connection. */
		s->closed_at_done = true;
		cli_request_finish(w, s, CURLE_OK, false);
	}
	return INT64_MAX;
}

bool cli_request_resend(struct cl_worker *w, struct cl_slot *s, CURLcode res)
{
	if (s->fresh_resent || s->http_status || s->bytes)
		return false;
	if (res != CURLE_SEND_ERROR && res != CURLE_RECV_ERROR && res != CURLE_GOT_NOTHING)
		return false;
	/* Some attempt must have gone out on a reused connection (fewer new connections
	 * than attempts): only then is the failure the server's earlier close, and re-sending
	 * as safe as libcurl's own re-send of a request that got no answer. */
	long connects = 0;
	curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &connects);
	if ((long)s->attempts <= connects)
		return false;
	curl_multi_remove_handle(s->shard->multi, s->easy);
	s->fresh_resent = true;
	if (reset_handle(s) != 0) {
		s->reset_easy = true;
		return false;
	}
	s->reset_easy = true; /* drop FRESH_CONNECT after this request */
	s->errbuf[0] = '\0';
	int bad = curl_easy_setopt(s->easy, CURLOPT_FRESH_CONNECT, 1L);
	if (w->e->n_eps) /* the reset put back the first endpoint's URL */
		bad |=
		    curl_easy_setopt(s->easy, CURLOPT_URL, w->e->ep_http[s->ep].url[CL_HTTP_CHAT]);
	bad |= curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->post);
	bad |= curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->post_len);
	if (bad || curl_multi_add_handle(s->shard->multi, s->easy) != CURLM_OK) {
		/* The caller's finish removes the handle again: harmless when not added. */
		return false;
	}
	CL_DEBUG("worker %u: request %" PRIu64 " re-sent on a fresh connection after %u "
		 "attempts on closed ones",
		 w->index, s->seq, s->attempts);
	return true;
}

void cli_request_detach(struct cl_worker *w, struct cl_slot *s)
{
	curl_multi_remove_handle(s->shard->multi, s->easy);
	if (s->in_after_done)
		after_done_remove(s);
	if (cl_slot_reconnects(s)) {
		s->reset_easy = true; /* libcurl's re-send count must not carry over */
		atomic_fetch_add_explicit(&w->reconnects, cl_slot_reconnects(s),
					  memory_order_relaxed);
	}
	if (s->fresh_resent)
		s->reset_easy = true; /* drops CURLOPT_FRESH_CONNECT */
	if (s->closed_at_done)
		atomic_fetch_add_explicit(&w->closed_at_done, 1, memory_order_relaxed);
}
