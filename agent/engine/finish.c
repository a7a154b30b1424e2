/* The end of a request: its class, the metrics it records (latencies and tokens of a measured
 * one, its error sample, the usage corrections), its request-log line, and then its slot: back
 * to the free stack, parked for a backoff, or kept for a conversation's next turn. */
#include "internal.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "client/stream/chunk.h"

#include <math.h>

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

/* The request's outcome: CL_CTR_COMPLETED or an error class (docs/engine.md, "Errors"). */
static int classify(const struct cl_slot *s, CURLcode res)
{
	if (s->err_ctr)
		return s->err_ctr;
	if (s->h1_refused)
		return CL_CTR_ERR_OTHER;
	bool ok_status = s->http_status >= 200 && s->http_status <= 299;
	if (s->http_status && !ok_status)
		return status_class(s->http_status);
	if (ok_status) {
		/* An answer that ended (at [DONE] or by a clean end of its body) having carried
		 * nothing at all, no token of any kind, no finish_reason and no usage, is no
		 * answer (docs/engine.md, "Errors").  Embeddings answer in one document. */
		bool ended = s->done_seen || res == CURLE_OK;
		if (ended && !cli_slot_whole(s) && !s->first_us && s->finish == CLI_FINISH_NONE &&
		    !s->usage_seen)
			return CL_CTR_ERR_EMPTY_ANSWER;
		/* [DONE] ends the answer: what happens to the body after it (ended by us, a
		 * reset, a timeout waiting for a close) does not change the answer. */
		if (s->done_seen)
			return CL_CTR_COMPLETED;
		if (res == CURLE_OPERATION_TIMEDOUT)
			return CL_CTR_ERR_TIMEOUT;
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
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		/* The connection died: before the request went out, a failed connection; after
		 * it, an answer that ended before it began. */
		return s->sent_us ? CL_CTR_ERR_STREAM_INCOMPLETE : CL_CTR_ERR_CONNECT;
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

/* One of libcurl's timers of the transfer in µs from its start, 0 when not reached (or not
 * known to this libcurl). */
static int64_t curl_time(CURL *easy, CURLINFO what)
{
	curl_off_t t = 0;
	if (curl_easy_getinfo(easy, what, &t) != CURLE_OK || t < 0)
		return 0;
	return (int64_t)t;
}

/* Where the transfer's time went before its first byte, from libcurl's cumulative timers
 * (each from libcurl's start of the transfer; docs/engine.md, "Where the time went"): every
 * stage as its own duration.  On a reused connection libcurl reports no lookup, connect or
 * handshake, so those are 0; a stage after the last one reached is -1. */
static void read_conn_times(CURL *easy, struct cl_conn_times *ct)
{
	int64_t dns = curl_time(easy, CURLINFO_NAMELOOKUP_TIME_T);
	int64_t conn = curl_time(easy, CURLINFO_CONNECT_TIME_T);
	int64_t app = curl_time(easy, CURLINFO_APPCONNECT_TIME_T);
	int64_t pre = curl_time(easy, CURLINFO_PRETRANSFER_TIME_T);
	int64_t first = curl_time(easy, CURLINFO_STARTTRANSFER_TIME_T);
	if (!pre) {
		/* Never got as far as sending (a failed lookup or connect): only the lookup, if
		 * it ended, is known. */
		*ct = (struct cl_conn_times){ .dns_us = dns ? dns : -1,
					      .connect_us = -1,
					      .tls_us = -1,
					      .send_us = -1,
					      .wait_us = -1 };
		return;
	}
	/* A stage libcurl skipped (a reused connection; plain HTTP has no handshake) reads 0:
	 * it ended where the one before it did. */
	if (conn < dns)
		conn = dns;
	if (app < conn)
		app = conn;
	*ct = (struct cl_conn_times){ .dns_us = dns,
				      .connect_us = conn - dns,
				      .tls_us = app - conn,
				      .send_us = pre >= app ? pre - app : 0,
				      .wait_us = first >= pre ? first - pre : -1 };
	if (!first)
		ct->wait_us = -1;
}

/* Records where a measured request's time to its first byte and token went: the stages of
 * its connection by libcurl's timers (a reused one records zeros, which is the point: how
 * often a request paid for one) and TTFT in three parts on the engine's own clock, which add
 * up to it exactly: the client's connection time (handed to libcurl -> libcurl about to send
 * it, PREREQFUNCTION: its wait to be started, lookup, connect, TLS), the server's wait to
 * its first byte (-> the status line), and first byte to first token. */
static void record_conn_times(struct cl_metrics *m, const struct cl_slot *s)
{
	const struct cl_conn_times *ct = &s->ct;
	if (ct->send_us < 0)
		return;
	cl_hist_record(&m->lat[CL_LAT_DNS], ct->dns_us);
	cl_hist_record(&m->lat[CL_LAT_CONNECT], ct->connect_us);
	cl_hist_record(&m->lat[CL_LAT_TLS], ct->tls_us);
	cl_hist_record(&m->lat[CL_LAT_SEND], ct->send_us);
	if (!s->first_us || !s->headers_us || !s->sent_us || s->sent_us < s->handed_us ||
	    s->headers_us < s->sent_us || s->first_us < s->headers_us)
		return;
	cl_hist_record(&m->lat[CL_LAT_TTFT_CONNECTION], s->sent_us - s->handed_us);
	cl_hist_record(&m->lat[CL_LAT_TTFT_SERVER_WAIT], s->headers_us - s->sent_us);
	cl_hist_record(&m->lat[CL_LAT_TTFT_AFTER_FIRST_BYTE], s->first_us - s->headers_us);
}

/* A completed request that received less than it asked for, and why, as the server said:
 * finish_reason stop (an end of sequence or a stop string), length (a cap), other. */
static void count_short(struct cl_metrics *m, const struct cl_slot *s)
{
	m->ctr[CL_CTR_SHORT_OUTPUT]++;
	if (s->finish != CLI_FINISH_NONE)
		m->ctr[CL_CTR_SHORT_FINISH_STOP + s->finish - CLI_FINISH_STOP]++;
}

/* What one finished request came to, worked out once for its metrics and its log line. */
struct outcome {
	int cls;         /* CL_CTR_COMPLETED, CL_CTR_CUT, CL_CTR_CANCELLED or an error class */
	bool from_usage; /* tokens told by the server's usage (else counted from chunks) */
	int64_t tokens, rtokens;
	int http_major; /* the protocol the transfer used */
	long connects;  /* connections it opened (0: it reused one) */
};

/* The error sample of a failed request (NULL for a completed, cut or cancelled one), written
 * into text
 * (CL_ERR_SAMPLE_BODY_MAX bytes) unless it is a fixed message; its length in *len. */
static const char *error_message(const struct cl_slot *s, int cls, CURLcode res, char *text,
				 size_t *len)
{
	static const char h1_refused_msg[] =
	    "answered over HTTP/1.1 (ALPN chose http/1.1) while target.http2 is required";
	*len = 0;
	if (cls == CL_CTR_COMPLETED || cls == CL_CTR_CUT || cls == CL_CTR_CANCELLED)
		return NULL;
	if (s->h1_refused) {
		*len = sizeof(h1_refused_msg) - 1;
		return h1_refused_msg;
	}
	*len = cli_error_text(s, cls, res, text, CL_ERR_SAMPLE_BODY_MAX);
	return text;
}

/* Records a completed measured request's latencies; returns whether it met every goodput
 * threshold (and reached the user with content). */
static bool record_latencies(const struct cl_engine *e, struct cl_metrics *m,
			     const struct cl_slot *s, int64_t tokens)
{
	int64_t t0 = s->handed_us;
	bool good = true;
	if (s->headers_us)
		cl_hist_record(&m->lat[CL_LAT_TTFB], s->headers_us - t0);
	if (s->first_us) {
		int64_t ttft = s->first_us - t0;
		cl_hist_record(&m->lat[CL_LAT_TTFT], ttft);
		good &= !e->good_ttft_us || ttft <= e->good_ttft_us;
	}
	if (s->first_content_us) {
		cl_hist_record(&m->lat[CL_LAT_TTFC], s->first_content_us - t0);
	} else if (!cli_slot_whole(s)) {
		/* No answer reached the user: not good.  "No content" is the answer that carried
		 * reasoning and no answer token (a thinking model cut inside its reasoning); one
		 * that carried nothing at all is an error (empty_answer), and one with only a
		 * finish_reason or usage (a stop at its first token) is neither. */
		if (s->rtok_counted > 0)
			m->ctr[CL_CTR_NO_CONTENT]++;
		good = false;
	}
	if (s->last_us) {
		int64_t e2e = s->last_us - t0;
		cl_hist_record(&m->lat[CL_LAT_E2E], e2e);
		cl_hist_record(&m->lat[CL_LAT_E2E_SCHED], s->last_us - s->intended_us);
		good &= !e->good_e2e_us || e2e <= e->good_e2e_us;
	}
	if (tokens >= 2 && s->first_us) {
		int64_t tpot = (s->last_us - s->first_us) / (tokens - 1);
		cl_hist_record(&m->lat[CL_LAT_TPOT], tpot);
		good &= !e->good_tpot_us || tpot <= e->good_tpot_us;
	}
	return good;
}

/* Records a completed measured request's token counts: output, reasoning and prompt tokens,
 * by turn for a conversation, requested against received, tokens per chunk. */
static void record_tokens(struct cl_metrics *m, const struct cl_slot *s, const struct outcome *o)
{
	if (o->tokens > 0)
		cl_hist_record(&m->cnt[CL_CNT_OUTPUT_TOKENS], o->tokens);
	if (o->rtokens > 0)
		cl_hist_record(&m->cnt[CL_CNT_REASONING_TOKENS], o->rtokens);
	if (s->usage_pt > 0)
		cl_hist_record(&m->cnt[CL_CNT_PROMPT_TOKENS], s->usage_pt);
	if (s->usage_pt > 0)
		m->ctr[CL_CTR_PROMPT_TOKENS] += (uint64_t)s->usage_pt;
	/* What the cache saw, in one field whoever said it: usage's cached_tokens, or llama.cpp's
	 * timings (cache_n, or the prompt less the prompt_n it evaluated). */
	int64_t cached = cl_chunk_cached_prompt(s->usage_cached, s->usage_pt, s->timings_cache_n,
						s->timings_prompt_n);
	if (cached > 0)
		m->ctr[CL_CTR_CACHED_PROMPT_TOKENS] += (uint64_t)cached;
	m->ctr[CL_CTR_EMBEDDING_INPUTS] += s->embed_inputs;
	m->ctr[CL_CTR_DOCUMENTS] += s->documents;
	/* Transcription: the audio sent, and how long the answer took for each second of it
	 * (the real-time factor: below 1 is faster than the audio plays). */
	if (s->body && s->body->audio_ms) {
		m->ctr[CL_CTR_AUDIO_MS] += s->body->audio_ms;
		if (s->last_us)
			cl_hist_record(&m->cnt[CL_CNT_RTF_MILLI],
				       (s->last_us - s->handed_us) / s->body->audio_ms);
	}
	m->ctr[CL_CTR_TOOL_CALLS] += s->tool_answer;
	cli_conv_record(m, s, s->usage_pt);
	/* Requested against received: a server that stops before max_tokens (an EOS honoured,
	 * a cap of its own) shows as a ratio below 1. */
	if (s->requested) {
		cl_hist_record(&m->cnt[CL_CNT_REQUESTED_TOKENS], s->requested);
		m->ctr[CL_CTR_REQUESTED_TOKENS] += s->requested;
		m->ctr[CL_CTR_REQUESTED_RECEIVED] += o->tokens > 0 ? (uint64_t)o->tokens : 0;
		if (o->tokens < (int64_t)s->requested)
			count_short(m, s);
	}
	/* Chunks whose count usage did not tell carry the request's mean of the rest: 1000 * T
	 * / N milli-tokens each (exact ones were recorded live). */
	int64_t rest = o->tokens - s->tok_exact;
	if (s->n_prov_chunks > 0 && rest > 0)
		cl_hist_record_n(&m->cnt[CL_CNT_TOKENS_PER_CHUNK], rest * 1000 / s->n_prov_chunks,
				 s->n_prov_chunks);
	m->ctr[o->from_usage ? CL_CTR_USAGE_FROM_SERVER : CL_CTR_USAGE_FROM_CHUNKS]++;
}

/* Records what a cut request measured before the end of its stage: the times to its first
 * byte, token and content token. A stage shorter than its answers cuts them all, and their
 * first tokens are still the server's answer to "how long until something shows" (E2E and
 * TPOT need an end, so they stay with completed requests; ITLs were recorded as they came).
 * A request the client abandoned (cancelled) keeps the same: what it received until then. */
static void record_cut(struct cl_metrics *m, const struct cl_slot *s)
{
	int64_t t0 = s->handed_us;
	if (s->headers_us)
		cl_hist_record(&m->lat[CL_LAT_TTFB], s->headers_us - t0);
	if (s->first_us)
		cl_hist_record(&m->lat[CL_LAT_TTFT], s->first_us - t0);
	if (s->first_content_us)
		cl_hist_record(&m->lat[CL_LAT_TTFC], s->first_content_us - t0);
}

/* Records a request of the measured window (started inside it) by its class: a completed
 * one's latencies and tokens, a failed one's error sample (msg, msg_len bytes). */
static void record_measured(const struct cl_engine *e, struct cl_metrics *m,
			    const struct cl_slot *s, const struct outcome *o, const char *msg,
			    size_t msg_len)
{
	/* Every measured request ends in exactly one of these: started == completed + errors
	 * + cut + cancelled (docs/architecture.md, "Ramps are not measured"). */
	CL_ASSERT(o->cls == CL_CTR_COMPLETED || o->cls == CL_CTR_CUT ||
		  o->cls == CL_CTR_CANCELLED ||
		  (o->cls >= CL_CTR_FIRST_ERROR && o->cls <= CL_CTR_LAST_ERROR));
	m->ctr[o->cls]++;
	if (s->repeated)
		m->ctr[CL_CTR_REPEATED]++;
	m->ctr[CL_CTR_RESENT] += cl_slot_reconnects(s) > 0 || s->fresh_resent;
	if (o->cls == CL_CTR_COMPLETED && o->http_major == 1)
		m->ctr[CL_CTR_COMPLETED_H1]++;
	else if (o->cls == CL_CTR_COMPLETED && o->http_major == 2)
		m->ctr[CL_CTR_COMPLETED_H2]++;
	if (o->cls == CL_CTR_COMPLETED || o->cls == CL_CTR_CUT)
		record_conn_times(m, s);
	if (o->cls == CL_CTR_COMPLETED) {
		bool good = record_latencies(e, m, s, o->tokens);
		record_tokens(m, s, o);
		if (good)
			m->ctr[CL_CTR_GOOD]++;
	} else if (o->cls == CL_CTR_CUT || o->cls == CL_CTR_CANCELLED) {
		record_cut(m, s);
	} else {
		cl_metrics_add_err_sample(m, o->cls, s->http_status, msg, msg_len);
	}
}

/* The share of a completed request that lies inside the measured window, in thousandths:
 * the share of its tokens received inside it, or for a request without tokens the share of
 * its lifetime [start_us, end_us). Summed over requests and divided by the window, it is a
 * request rate that does not depend on where the window cut a wave of long requests
 * (closed-loop streams that start together end together): a window of 1.5 answers counts one
 * wave and half of the next, not one or two. Tokens, not lifetime, because a request queued at
 * the server makes no progress while it waits: counting its wait would credit the requests
 * queued when the window closes, and a stage that began with an empty queue read 7 % over
 * the server's capacity (docs/results.md, "The request rate"). */
static uint64_t window_share_milli(const struct cl_worker *w, const struct cl_slot *s,
				   int64_t end_us)
{
	if (s->tok_counted > 0)
		return (uint64_t)llround(1000.0 * (double)s->tok_counted_win /
					 (double)s->tok_counted);
	int64_t start_us = s->handed_us;
	if (!w->st.active || end_us <= start_us)
		return 0;
	int64_t from = start_us > w->st.win_start_us ? start_us : w->st.win_start_us;
	int64_t to = end_us < w->st.win_end_us ? end_us : w->st.win_end_us;
	if (to <= from)
		return 0;
	return (uint64_t)llround(1000.0 * (double)(to - from) / (double)(end_us - start_us));
}

/* With several endpoints, the share of the request's figures its endpoint keeps: what the
 * whole record counts of it (its class, the window's completions, TTFT), in the same
 * window.  Tokens are counted as they arrive (request.c). */
static void record_endpoint(struct cl_worker *w, const struct cl_slot *s, struct cl_ep_metrics *ep,
			    const struct outcome *o, bool end_win, int64_t now)
{
	if (o->cls == CL_CTR_COMPLETED && end_win)
		ep->ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
	if (o->cls == CL_CTR_COMPLETED)
		ep->ctr[CL_CTR_WINDOW_SHARE_MILLI] += window_share_milli(w, s, now);
	if (!s->in_window)
		return;
	ep->ctr[o->cls]++;
	if (o->cls == CL_CTR_COMPLETED && s->first_us)
		cl_hist_record(&ep->lat[CL_EP_LAT_TTFT], s->first_us - s->handed_us);
}

void cli_request_finish(struct cl_worker *w, struct cl_slot *s, CURLcode res, bool cut)
{
	struct cl_metrics *m = w->active;
	int64_t now = cl_stamp(w);
	CL_ASSERT(s->busy);
	cli_request_detach(w, s);

	/* Embeddings: the answer is judged once, whole, when the transfer ended well; a stream
	 * is ended, which gives a body that was one JSON document (an error sent with 200). */
	bool ended_well = !cut && !s->cancelled && !s->err_ctr && res == CURLE_OK &&
			  s->http_status >= 200 && s->http_status <= 299;
	if (ended_well && cli_slot_whole(s))
		cli_request_whole_end(s);
	else if (ended_well)
		cli_request_stream_end(s);
	/* Abandoned by the client (workload.cancel) is its own class, whatever the transfer's
	 * end said: the client ended it.  A cut wins over a cancellation not yet due. */
	struct outcome o = { .cls = s->cancelled ? CL_CTR_CANCELLED
				    : cut        ? CL_CTR_CUT
						 : classify(s, res) };
	o.from_usage = s->usage_ct >= 0;
	o.tokens = o.from_usage ? s->usage_ct : s->tok_exact + s->n_prov_chunks;
	o.rtokens = s->usage_rt >= 0 ? s->usage_rt : s->rtok_counted;
	bool end_win = cl_in_window(w, now);

	/* Tokens received: the usage correction is spread like the chunks it corrects. */
	struct cl_ep_metrics *ep = cl_slot_ep(w, s);
	if (o.from_usage)
		add_correction(&m->ctr[CL_CTR_OUTPUT_TOKENS], o.tokens, s->tok_counted,
			       s->tok_counted_win, end_win);
	if (o.from_usage && ep)
		add_correction(&ep->ctr[CL_CTR_OUTPUT_TOKENS], o.tokens, s->tok_counted,
			       s->tok_counted_win, end_win);
	struct cl_metrics *cm = cl_slot_cls(w, s);
	if (o.from_usage && cm)
		add_correction(&cm->ctr[CL_CTR_OUTPUT_TOKENS], o.tokens, s->tok_counted,
			       s->tok_counted_win, end_win);
	if (s->usage_rt >= 0)
		add_correction(&m->ctr[CL_CTR_REASONING_TOKENS], o.rtokens, s->rtok_counted,
			       s->rtok_counted_win, end_win);

	o.http_major = cl_httpver_used(s->easy);
	curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &o.connects);
	s->connects = o.connects;
	read_conn_times(s->easy, &s->ct);
	char text[CL_ERR_SAMPLE_BODY_MAX];
	size_t msg_len;
	const char *msg = error_message(s, o.cls, res, text, &msg_len);

	/* Throughput counts completions inside the window whatever their start, as it counts
	 * tokens received inside it; latencies count requests started inside it. */
	if (o.cls == CL_CTR_COMPLETED && end_win)
		m->ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
	if (o.cls == CL_CTR_COMPLETED)
		m->ctr[CL_CTR_WINDOW_SHARE_MILLI] += window_share_milli(w, s, now);
	/* Connections count for every request of the stage, the ramp's too: the ramp is where
	 * most of them are opened, and the question is how the stage used connections. */
	if (o.connects > 0) {
		m->ctr[CL_CTR_CONNECTIONS_OPENED] += (uint64_t)o.connects;
		if (w->e->n_src)
			atomic_fetch_add_explicit(&w->e->src_conns[s->src], (uint64_t)o.connects,
						  memory_order_relaxed);
	}
	if (ep)
		record_endpoint(w, s, ep, &o, end_win, now);
	/* A request class's record gets what the whole record gets of its requests, so a class
	 * has every figure of a stage (docs/results.md, "stages[].classes"). */
	if (cm && o.cls == CL_CTR_COMPLETED && end_win)
		cm->ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
	if (cm && o.cls == CL_CTR_COMPLETED)
		cm->ctr[CL_CTR_WINDOW_SHARE_MILLI] += window_share_milli(w, s, now);
	if (s->in_window) {
		CL_ASSERT(w->st.win_open > 0);
		w->st.win_open--;
		record_measured(w->e, m, s, &o, msg, msg_len);
		if (cm)
			record_measured(w->e, cm, s, &o, msg, msg_len);
	} else
		atomic_fetch_add_explicit(&w->ramp_finished, 1, memory_order_relaxed);

	const char *status = o.cls == CL_CTR_COMPLETED ? "completed" : cl_ctr_name(o.cls);
	cli_reqlog_write(w, s, status, now, o.tokens, o.rtokens, o.from_usage, o.connects,
			 o.http_major, msg, msg_len);
	cli_records_push(w, s, status, now, o.tokens, o.rtokens, msg, msg_len);

	if (w->e->n_eps)
		atomic_fetch_sub_explicit(&w->e->ep_outstanding[s->ep], 1, memory_order_relaxed);
	s->busy = false;
	/* No answer at all (nothing to measure, nothing the server said): the closed loop
	 * backs off on this slot rather than spin (docs/engine.md, "No-answer backoff"). */
	if (!cli_conv_follow(w, s, o.cls == CL_CTR_COMPLETED, now))
		cli_worker_release(w, s,
				   !cut && o.cls != CL_CTR_CANCELLED &&
				       (s->http_status == 0 || s->h1_refused));
	w->last_end_us = now;
	w->tick = true;
	atomic_fetch_sub_explicit(&w->inflight, 1, memory_order_relaxed);
}
