/* One request on a stream slot: handle setup, the libcurl callbacks that time and decode the
 * stream (nothing allocated per chunk), classification at the end, and its request-log line. */
#include "internal.h"

#include "stream/chunk.h"

#include "chatload/clock.h"
#include "chatload/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Callback stop values for cl_sse_feed (any nonzero stops feeding; curl then aborts). */
enum { STOP_BAD_EVENT = 1 };

static int on_prereq(void *clientp, char *primary_ip, char *local_ip, int primary_port,
		     int local_port)
{
	struct cl_slot *s = clientp;
	s->sent_us = cl_mono_us();
	return CURL_PREREQFUNC_OK;
}

int cl_slot_prepare(struct cl_slot *s)
{
	struct cl_engine *e = s->w->e;
	if (s->easy)
		return 0;
	if (cl_sse_init(&s->sse, CL_ENGINE_MAX_EVENT_BYTES) != 0)
		goto fail;
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
	struct curl_slist *list = cl_http_target_link(&e->http, CL_HTTP_CHAT, s->hdrs, n, s->reqid);

	CURL *h = curl_easy_init();
	if (!h)
		goto fail;
	s->easy = h;
	/* Where and how (URL, protocols, TLS, timeouts, version, headers): the target's, as the
	 * readiness probe sends them; every option was tried when the engine was created. */
	struct cl_err err = { 0 };
	if (cl_http_target_apply(&e->http, h, CL_HTTP_CHAT, e->workload.request_timeout_us, list,
				 &err) != 0) {
		CL_WARN("worker %u: %s", s->w->index, err.msg);
		goto fail;
	}
	int bad = 0;
	bad |= curl_easy_setopt(h, CURLOPT_PRIVATE, s);
	bad |= curl_easy_setopt(h, CURLOPT_POST, 1L);
	bad |= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cl_on_body);
	bad |= curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	bad |= curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cl_on_header);
	bad |= curl_easy_setopt(h, CURLOPT_HEADERDATA, s);
	bad |= curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
	bad |= curl_easy_setopt(h, CURLOPT_PREREQDATA, s);
	bad |= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, s->errbuf);
	bad |= curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	/* h1: never wait for a connection to become free (no serialisation); h2: multiplex. */
	bad |= curl_easy_setopt(h, CURLOPT_PIPEWAIT, e->http.http2 ? 1L : 0L);
	if (bad)
		goto fail;
	return 0;
fail:
	cl_slot_destroy(s);
	return CL_ENOMEM;
}

void cl_slot_destroy(struct cl_slot *s)
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
	free(s->hdrs);
	s->hdrs = NULL;
}

/* Keeps the first bytes of an error body or a bad event for the error sample. */
static void keep_sample(struct cl_slot *s, const char *p, size_t n)
{
	size_t room = sizeof(s->sample) - 1 - s->sample_len;
	if (n > room)
		n = room;
	memcpy(s->sample + s->sample_len, p, n);
	s->sample_len += n;
	s->sample[s->sample_len] = '\0';
}

bool cl_request_start(struct cl_worker *w, int64_t intended_us)
{
	struct cl_engine *e = w->e;
	if (w->nfree == 0)
		return false;
	uint32_t idx = w->free_stack[w->nfree - 1];
	struct cl_slot *s = &w->slots[idx];
	if (!s->w) {
		s->w = w;
		s->index = idx;
		s->shard = &w->shards[idx / w->shard_slots];
	}
	if (!s->easy && cl_slot_prepare(s) != 0) {
		CL_WARN("worker %u: cannot prepare a stream slot: out of memory", w->index);
		return false;
	}
	w->nfree--;

	s->seq = ++w->seq;
	s->intended_us = intended_us;
	s->sent_us = s->headers_us = s->first_us = s->first_content_us = s->last_us = 0;
	s->http_status = 0;
	s->done_seen = false;
	s->err_ctr = 0;
	s->n_tok_chunks = s->n_prov_chunks = 0;
	s->tok_exact = s->last_ct = 0;
	s->tok_counted = s->tok_counted_win = s->rtok_counted = s->rtok_counted_win = 0;
	s->usage_ct = s->usage_rt = s->usage_pt = -1;
	s->bytes = 0;
	s->sample_len = 0;
	s->sample[0] = '\0';
	s->errbuf[0] = '\0';
	cl_sse_reset(&s->sse);
	snprintf(s->reqid, sizeof(s->reqid), "X-Request-Id: %s-%u-%" PRIu64, e->prefix, w->index,
		 s->seq);

	const struct cl_request_body *b = &e->workload.bodies[w->body_rr++ % e->workload.n_bodies];
	if (curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, b->json) != CURLE_OK ||
	    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len) !=
		CURLE_OK) {
		w->nfree++; /* the slot is still on top of the free stack */
		CL_WARN("worker %u: cannot set a request body", w->index);
		return false;
	}

	s->in_window = cl_in_window(w, intended_us);
	s->busy = true;
	s->handed_us = cl_mono_us();
	CURLMcode mc = curl_multi_add_handle(s->shard->multi, s->easy);
	if (mc != CURLM_OK) {
		/* Only misuse or memory exhaustion gets here: give the slot back and let the
		 * load model try again later rather than spin. */
		s->busy = false;
		w->free_stack[w->nfree++] = s->index;
		CL_WARN("worker %u: cannot start a request: %s", w->index, curl_multi_strerror(mc));
		return false;
	}
	atomic_fetch_add_explicit(&w->inflight, 1, memory_order_relaxed);
	if (s->in_window) {
		w->active->ctr[CL_CTR_STARTED]++;
		cl_hist_record(&w->active->lat[CL_LAT_QUEUE], s->handed_us - intended_us);
		if (w->st.by_requests && w->st.to_start > 0)
			w->st.to_start--;
	} else {
		atomic_fetch_add_explicit(&w->ramp_started, 1, memory_order_relaxed);
	}
	return true;
}

/* ---- callbacks: these run for every byte received ---- */

size_t cl_on_header(char *p, size_t size, size_t n, void *ud)
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
			}
		}
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
	else if (s->in_window)
		cl_hist_record(&m->lat[CL_LAT_ITL], now - s->last_us);
	if (c->has_content && !s->first_content_us)
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
	bool reasoning = c->has_reasoning && !c->has_content;
	bool win = cl_in_window(w, now);
	s->tok_counted += d;
	if (reasoning)
		s->rtok_counted += d;
	if (win) {
		s->tok_counted_win += d;
		m->ctr[CL_CTR_OUTPUT_TOKENS] += (uint64_t)d;
		m->ctr[CL_CTR_CHUNKS]++;
		if (reasoning) {
			s->rtok_counted_win += d;
			m->ctr[CL_CTR_REASONING_TOKENS] += (uint64_t)d;
		}
	}
}

static int on_event(void *ctx, const char *data, size_t len)
{
	struct cl_slot *s = ctx;
	if (s->done_seen)
		return 0; /* anything after [DONE] is not part of the answer */
	struct cl_chunk c;
	if (cl_chunk_decode(data, len, &c) != 0) {
		s->err_ctr = CL_CTR_ERR_STREAM_MALFORMED;
		keep_sample(s, data, len);
		return STOP_BAD_EVENT;
	}
	if (c.done) {
		s->done_seen = true;
		return 0;
	}
	if (c.is_error) {
		/* The stream is over as far as the answer goes; stop rather than wait on a
		 * server that may keep the connection open. */
		s->err_ctr = CL_CTR_ERR_STREAM_ERROR;
		if (c.error_msg)
			keep_sample(s, c.error_msg, c.error_msg_len);
		else
			keep_sample(s, data, len);
		return STOP_BAD_EVENT;
	}
	if (c.has_usage) {
		if (c.completion_tokens >= 0)
			s->usage_ct = c.completion_tokens;
		if (c.reasoning_tokens >= 0)
			s->usage_rt = c.reasoning_tokens;
		if (c.prompt_tokens >= 0)
			s->usage_pt = c.prompt_tokens;
	}
	if (c.has_content || c.has_reasoning)
		on_token_chunk(s, &c, s->w->recv_us);
	return 0;
}

size_t cl_on_body(char *p, size_t size, size_t n, void *ud)
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
		keep_sample(s, p, len);
		return len;
	}
	int rc = cl_sse_feed(&s->sse, p, len, on_event, s);
	if (rc == 0)
		return len;
	if (rc == CL_ETOOBIG) {
		s->err_ctr = CL_CTR_ERR_STREAM_MALFORMED;
		keep_sample(s, "event larger than 64 KiB", 24);
	} else if (rc != STOP_BAD_EVENT) {
		s->err_ctr = CL_CTR_ERR_OTHER;
		keep_sample(s, "out of memory decoding the stream", 33);
	}
	return 0; /* aborts the transfer (CURLE_WRITE_ERROR); the class is already set */
}

/* ---- the end of a request ---- */

static bool is_tls_error(CURLcode r)
{
	switch (r) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_CLIENTCERT:
	case CURLE_USE_SSL_FAILED:
		return true;
	default:
		return false;
	}
}

static int status_class(int status)
{
	if (status == 429)
		return CL_CTR_ERR_HTTP_429;
	if (status >= 400 && status <= 499)
		return CL_CTR_ERR_HTTP_4XX;
	if (status >= 500 && status <= 599)
		return CL_CTR_ERR_HTTP_5XX;
	return CL_CTR_ERR_OTHER;
}

/* The request's outcome: CL_CTR_COMPLETED or an error class (DESIGN §4). */
static int classify(const struct cl_slot *s, CURLcode res)
{
	if (s->err_ctr)
		return s->err_ctr;
	bool ok_status = s->http_status >= 200 && s->http_status <= 299;
	if (s->http_status && !ok_status)
		return status_class(s->http_status);
	if (ok_status) {
		if (res == CURLE_OPERATION_TIMEDOUT)
			return CL_CTR_ERR_TIMEOUT;
		if (res == CURLE_OK && s->done_seen)
			return CL_CTR_COMPLETED;
		/* Clean end without [DONE], a dropped connection, a broken h2 stream. */
		return CL_CTR_ERR_STREAM_INCOMPLETE;
	}
	/* No response. */
	switch (res) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return CL_CTR_ERR_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		/* Never got as far as sending: the connect timed out. */
		return s->sent_us ? CL_CTR_ERR_TIMEOUT : CL_CTR_ERR_CONNECT;
	default:
		return is_tls_error(res) ? CL_CTR_ERR_TLS : CL_CTR_ERR_OTHER;
	}
}

/* Adds a token correction to a window counter, never subtracting (deltas stay >= 0). */
static void add_correction(uint64_t *ctr, int64_t total, int64_t counted, int64_t counted_win,
			   bool end_in_window)
{
	int64_t corr = total - counted;
	if (corr <= 0)
		return;
	/* The correction belongs to the chunks it spreads over: the share received inside the
	 * window is the window's. */
	int64_t win = counted > 0 ? (int64_t)((__int128)corr * counted_win / counted)
				  : (end_in_window ? corr : 0);
	*ctr += (uint64_t)win;
}

static void log_json_string(struct cl_worker *w, const char *p, size_t n)
{
	char *o = w->log_buf + w->log_len;
	size_t room = CL_ENGINE_LOG_BUF - w->log_len;
	size_t k = 0;
	if (room < 2)
		return;
	o[k++] = '"';
	for (size_t i = 0; i < n && k + 8 < room; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '"' || c == '\\') {
			o[k++] = '\\';
			o[k++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			k += (size_t)snprintf(o + k, room - k, "\\u%04x", c);
		} else {
			o[k++] = (char)c;
		}
	}
	o[k++] = '"';
	w->log_len += k;
}

static void log_ts(struct cl_worker *w, const char *name, int64_t v)
{
	size_t room = CL_ENGINE_LOG_BUF - w->log_len;
	int k = v ? snprintf(w->log_buf + w->log_len, room, ",\"%s\":%" PRId64, name, v)
		  : snprintf(w->log_buf + w->log_len, room, ",\"%s\":null", name);
	if (k > 0 && (size_t)k < room)
		w->log_len += (size_t)k;
}

void cl_reqlog_flush(struct cl_worker *w)
{
	struct cl_engine *e = w->e;
	size_t off = 0;
	while (off < w->log_len && e->log_fd >= 0) {
		ssize_t k = write(e->log_fd, w->log_buf + off, w->log_len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (!atomic_exchange(&e->log_failed, true))
				CL_WARN("cannot write the request log: %s", strerror(errno));
			break;
		}
		off += (size_t)k;
	}
	w->log_len = 0;
}

static void log_request(struct cl_worker *w, const struct cl_slot *s, const char *status,
			int64_t end_us, int64_t tokens, int64_t rtokens, bool from_usage,
			const char *msg, size_t msg_len)
{
	struct cl_engine *e = w->e;
	if (e->log_fd < 0 || !w->log_buf)
		return;
	/* A line is at most ~2.2 KiB (a 256-byte message escapes to at most 1.5 KiB); flush
	 * before it could overflow so lines are always whole. */
	if (CL_ENGINE_LOG_BUF - w->log_len < 4096)
		cl_reqlog_flush(w);
	size_t room = CL_ENGINE_LOG_BUF - w->log_len;
	int k = snprintf(
	    w->log_buf + w->log_len, room,
	    "{\"id\":\"%s-%u-%" PRIu64 "\",\"worker\":%u,\"seq\":%" PRIu64 ",\"window\":%s",
	    e->prefix, w->index, s->seq, w->index, s->seq, s->in_window ? "true" : "false");
	if (k > 0 && (size_t)k < room)
		w->log_len += (size_t)k;
	log_ts(w, "intended_us", s->intended_us);
	log_ts(w, "handed_us", s->handed_us);
	log_ts(w, "sent_us", s->sent_us);
	log_ts(w, "headers_us", s->headers_us);
	log_ts(w, "first_us", s->first_us);
	log_ts(w, "first_content_us", s->first_content_us);
	log_ts(w, "last_us", s->last_us);
	log_ts(w, "end_us", end_us);
	long connects = 0;
	curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &connects);
	room = CL_ENGINE_LOG_BUF - w->log_len;
	k = snprintf(w->log_buf + w->log_len, room, ",\"new_connection\":%s",
		     connects > 0 ? "true" : "false");
	if (k > 0 && (size_t)k < room)
		w->log_len += (size_t)k;
	room = CL_ENGINE_LOG_BUF - w->log_len;
	k = snprintf(w->log_buf + w->log_len, room,
		     ",\"http_status\":%d,\"tokens\":%" PRId64 ",\"reasoning_tokens\":%" PRId64
		     ",\"prompt_tokens\":%" PRId64
		     ",\"usage\":\"%s\",\"chunks\":%u,\"bytes\":%" PRIu64 ",\"status\":\"%s\"",
		     s->http_status, tokens, rtokens, s->usage_pt, from_usage ? "server" : "chunks",
		     s->n_tok_chunks, s->bytes, status);
	if (k > 0 && (size_t)k < room)
		w->log_len += (size_t)k;
	if (msg && msg_len) {
		if (w->log_len + 10 < CL_ENGINE_LOG_BUF) {
			memcpy(w->log_buf + w->log_len, ",\"error\":", 9);
			w->log_len += 9;
		}
		log_json_string(w, msg, msg_len < 256 ? msg_len : 256);
	}
	if (w->log_len + 2 < CL_ENGINE_LOG_BUF) {
		w->log_buf[w->log_len++] = '}';
		w->log_buf[w->log_len++] = '\n';
	}
}

void cl_request_finish(struct cl_worker *w, struct cl_slot *s, CURLcode res, bool cut)
{
	struct cl_engine *e = w->e;
	struct cl_metrics *m = w->active;
	int64_t now = cl_stamp(w);
	curl_multi_remove_handle(s->shard->multi, s->easy);

	int cls = cut ? CL_CTR_CUT : classify(s, res);
	bool from_usage = s->usage_ct >= 0;
	int64_t tokens = from_usage ? s->usage_ct : s->tok_exact + s->n_prov_chunks;
	int64_t rtokens = s->usage_rt >= 0 ? s->usage_rt : s->rtok_counted;
	bool end_win = cl_in_window(w, now);

	/* Tokens received: the usage correction is spread like the chunks it corrects. */
	if (from_usage)
		add_correction(&m->ctr[CL_CTR_OUTPUT_TOKENS], tokens, s->tok_counted,
			       s->tok_counted_win, end_win);
	if (s->usage_rt >= 0)
		add_correction(&m->ctr[CL_CTR_REASONING_TOKENS], rtokens, s->rtok_counted,
			       s->rtok_counted_win, end_win);

	const char *msg = NULL;
	size_t msg_len = 0;
	if (cls != CL_CTR_COMPLETED && cls != CL_CTR_CUT) {
		if (s->sample_len) {
			msg = s->sample;
			msg_len = s->sample_len;
		} else if (s->errbuf[0]) {
			msg = s->errbuf;
			msg_len = strlen(s->errbuf);
		} else if (cls == CL_CTR_ERR_STREAM_INCOMPLETE) {
			msg = res == CURLE_OK ? "stream ended without [DONE]"
					      : curl_easy_strerror(res);
			msg_len = strlen(msg);
		} else {
			msg = curl_easy_strerror(res);
			msg_len = strlen(msg);
		}
	}

	/* Throughput counts completions inside the window whatever their start, as it counts
	 * tokens received inside it; latencies count requests started inside it. */
	if (cls == CL_CTR_COMPLETED && end_win)
		m->ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
	if (s->in_window) {
		m->ctr[cls]++;
		if (cls == CL_CTR_COMPLETED) {
			int64_t t0 = s->handed_us;
			bool good = true;
			if (s->headers_us)
				cl_hist_record(&m->lat[CL_LAT_TTFB], s->headers_us - t0);
			if (s->first_us) {
				int64_t ttft = s->first_us - t0;
				cl_hist_record(&m->lat[CL_LAT_TTFT], ttft);
				good &= !e->good_ttft_us || ttft <= e->good_ttft_us;
			}
			if (s->first_content_us)
				cl_hist_record(&m->lat[CL_LAT_TTFC], s->first_content_us - t0);
			if (s->last_us) {
				int64_t e2e = s->last_us - t0;
				cl_hist_record(&m->lat[CL_LAT_E2E], e2e);
				cl_hist_record(&m->lat[CL_LAT_E2E_SCHED],
					       s->last_us - s->intended_us);
				good &= !e->good_e2e_us || e2e <= e->good_e2e_us;
			}
			if (tokens >= 2 && s->first_us) {
				int64_t tpot = (s->last_us - s->first_us) / (tokens - 1);
				cl_hist_record(&m->lat[CL_LAT_TPOT], tpot);
				good &= !e->good_tpot_us || tpot <= e->good_tpot_us;
			}
			if (tokens > 0)
				cl_hist_record(&m->cnt[CL_CNT_OUTPUT_TOKENS], tokens);
			if (rtokens > 0)
				cl_hist_record(&m->cnt[CL_CNT_REASONING_TOKENS], rtokens);
			if (s->usage_pt > 0)
				cl_hist_record(&m->cnt[CL_CNT_PROMPT_TOKENS], s->usage_pt);
			if (s->usage_pt > 0)
				m->ctr[CL_CTR_PROMPT_TOKENS] += (uint64_t)s->usage_pt;
			/* Chunks whose count usage did not tell carry the request's mean of the
			 * rest: 1000 * T / N milli-tokens each (exact ones were recorded live). */
			int64_t rest = tokens - s->tok_exact;
			if (s->n_prov_chunks > 0 && rest > 0)
				cl_hist_record_n(&m->cnt[CL_CNT_TOKENS_PER_CHUNK],
						 rest * 1000 / s->n_prov_chunks, s->n_prov_chunks);
			m->ctr[from_usage ? CL_CTR_USAGE_FROM_SERVER : CL_CTR_USAGE_FROM_CHUNKS]++;
			if (good)
				m->ctr[CL_CTR_GOOD]++;
		} else if (cls != CL_CTR_CUT) {
			cl_metrics_add_err_sample(m, cls, s->http_status, msg, msg_len);
		}
	} else {
		atomic_fetch_add_explicit(&w->ramp_finished, 1, memory_order_relaxed);
	}

	log_request(w, s, cls == CL_CTR_COMPLETED ? "completed" : cl_ctr_name(cls), now, tokens,
		    rtokens, from_usage, msg, msg_len);

	s->busy = false;
	w->free_stack[w->nfree++] = s->index;
	w->last_end_us = now;
	w->tick = true;
	atomic_fetch_sub_explicit(&w->inflight, 1, memory_order_relaxed);
}
