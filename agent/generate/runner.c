/* The generate runner: one thread, one libcurl multi, up to `concurrency` streamed chat
 * completions of leased requests, retried with backoff on retryable failures, answers
 * assembled and queued for the control thread. */
#include "agent/generate/runner.h"
#include "agent/generate/assemble.h"
#include "agent/engine/backoff.h"

#include "client/http/handle.h"
#include "client/stream/event.h"
#include "client/stream/sse.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "chatload/log.h"
#include "chatload/metrics.h"
#include "chatload/rng.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_BODY_MAX 600 /* bytes of an error response kept for the message */

struct job {
	struct job *next;
	char *id, *body;
	size_t body_len;
	uint32_t attempts;                    /* tries begun */
	int64_t not_before_us;                /* a retry waits until then */
	uint32_t retries[CL_GEN_ERR_CLASSES]; /* failed tries retried, by class */
};

struct xfer {
	CURL *easy;
	struct job *job;
	struct curl_slist *nodes; /* header list nodes, cl_http_target_link */
	char lead[CL_WIRE_MAX_ID + 40];
	struct cl_sse_parser sse;
	struct cl_asm *as;
	long status;
	/* The first bytes of the response body: an error response's message, or the start of
	 * a stream that brought no answer (a server's error outside data: lines shows here). */
	char errbody[ERR_BODY_MAX + 1];
	size_t errlen;
	int64_t start_us, first_us, first_content_us;
	bool stream_failed;
	int stream_code;
	/* The class of a failure the event callback saw, when it knows it (an enum cl_ctr
	 * error); 0: finish() works it out. */
	int err_class;
	char why[400];
};

struct cl_gen_runner {
	struct cl_gen_runner_cfg cfg;
	struct cl_http_target target;
	size_t n_lines;
	CURLM *multi;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	pthread_mutex_t mu;
	struct job *queue, *queue_tail; /* leased, waiting to start (retries too) */
	size_t queued;
	struct cl_gen_answer *answers; /* finished, not taken */
	size_t n_answers, cap_answers;
	atomic_size_t inflight;
	struct xfer *x; /* concurrency entries */
	uint64_t rng;
	int64_t next_start_us;      /* with a rate: the next try may start then */
	_Atomic(double) rate_per_s; /* cfg.rate_per_s, changed by cl_gen_runner_set_rate */
	uint32_t retry_logged; /* error classes whose first retry was logged at info, a bit each */
};
_Static_assert(CL_GEN_ERR_CLASSES <= 32, "retry_logged has a bit for every error class");

static void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->id);
	free(j->body);
	free(j);
}

void cl_gen_answer_free(struct cl_gen_answer *a)
{
	free(a->id);
	free(a->request_id);
	free(a->body);
	free(a->error);
	memset(a, 0, sizeof(*a));
}

/* Puts j at the end of the queue (under mu). */
static void enqueue(struct cl_gen_runner *r, struct job *j)
{
	j->next = NULL;
	if (r->queue_tail)
		r->queue_tail->next = j;
	else
		r->queue = j;
	r->queue_tail = j;
	r->queued++;
}

/* The first queued job due by now (under mu), unlinked; NULL when none. */
static struct job *dequeue_due(struct cl_gen_runner *r, int64_t now)
{
	struct job *prev = NULL;
	for (struct job *j = r->queue; j; prev = j, j = j->next) {
		if (j->not_before_us > now)
			continue;
		if (prev)
			prev->next = j->next;
		else
			r->queue = j->next;
		if (r->queue_tail == j)
			r->queue_tail = prev;
		r->queued--;
		return j;
	}
	return NULL;
}

/* Files an answer for j (under no lock; takes mu), freeing j: body when it succeeded, else
 * error and its class (an enum cl_ctr error). */
static void answer(struct cl_gen_runner *r, struct job *j, struct xfer *x, char *body,
		   const char *error, int err_class, bool retryable)
{
	struct cl_gen_answer a = {
		.id = j->id,
		.attempts = j->attempts,
		.status = x->status > 0 && x->status < 1000 ? (uint32_t)x->status : 0,
		.body = body,
		.retryable = retryable,
		.err_class = body ? 0 : err_class,
	};
	_Static_assert(sizeof(a.retries) == sizeof(j->retries), "retries by class");
	memcpy(a.retries, j->retries, sizeof(a.retries));
	j->id = NULL;
	const char *rid = x->as ? cl_asm_id(x->as) : NULL;
	if (rid && strlen(rid) < CL_WIRE_MAX_NAME) {
		a.request_id = strdup(rid);
		for (char *p = a.request_id; p && *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
	}
	if (error)
		a.error = strndup(error, CL_WIRE_MAX_ERROR - 1);
	if (body) {
		a.ttft_us = x->first_us ? x->first_us - x->start_us : 0;
		a.ttfc_us = x->first_content_us ? x->first_content_us - x->start_us : 0;
		a.total_us = cl_mono_us() - x->start_us;
		a.output_tokens = cl_asm_output_tokens(x->as);
		a.prompt_tokens = cl_asm_prompt_tokens(x->as);
	}
	pthread_mutex_lock(&r->mu);
	if (r->n_answers == r->cap_answers) {
		size_t cap = r->cap_answers ? r->cap_answers * 2 : 64;
		struct cl_gen_answer *p = realloc(r->answers, cap * sizeof(*p));
		if (p) {
			r->answers = p;
			r->cap_answers = cap;
		}
	}
	if (r->n_answers < r->cap_answers)
		r->answers[r->n_answers++] = a;
	else
		cl_gen_answer_free(&a); /* out of memory: the lease is re-issued if we are lost */
	pthread_mutex_unlock(&r->mu);
	job_free(j);
	if (r->cfg.notify)
		r->cfg.notify();
}

static int on_event(void *ctx, const char *data, size_t len, unsigned flags)
{
	struct xfer *x = ctx;
	int code = 0;
	/* A failure in any server's dialect (stream/event.h) is never part of an answer. */
	struct cl_chunk c;
	if (cl_event_decode(CL_API_CHAT, data, len, flags, &c) == 0 && c.is_error) {
		x->stream_failed = true;
		x->stream_code = c.error_code;
		x->err_class = CL_CTR_ERR_STREAM_ERROR;
		char code_text[32] = "";
		if (c.error_code)
			snprintf(code_text, sizeof(code_text), " (code %d)", c.error_code);
		snprintf(x->why, sizeof(x->why), "the server sent an error in the stream%s: %.*s",
			 code_text,
			 c.error_msg ? (int)(c.error_msg_len < 300 ? c.error_msg_len : 300) : 0,
			 c.error_msg ? c.error_msg : "");
		return 1;
	}
	if (flags & CL_SSE_DOCUMENT) {
		/* A whole JSON answer where a stream was asked: not assembled as one (its choices
		 * carry a message, not deltas, and would read as an empty answer). */
		x->stream_failed = true;
		x->err_class = CL_CTR_ERR_STREAM_MALFORMED;
		snprintf(x->why, sizeof(x->why), "%s", CL_EVENT_NOT_A_STREAM);
		return 1;
	}
	if (cl_asm_feed(x->as, data, len, &code, x->why, sizeof(x->why)) != 0) {
		x->stream_failed = true;
		x->stream_code = code;
		return 1;
	}
	if (!x->first_us && cl_asm_has_token(x->as))
		x->first_us = cl_mono_us();
	return 0;
}

static size_t on_write(char *p, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	size_t len = size * n;
	if (!x->status)
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->errlen < ERR_BODY_MAX) { /* a copy into the slot's buffer, the first bytes only */
		size_t room = ERR_BODY_MAX - x->errlen;
		size_t k = len < room ? len : room;
		memcpy(x->errbody + x->errlen, p, k);
		x->errlen += k;
		x->errbody[x->errlen] = '\0';
	}
	if (x->status != 200)
		return len;
	if (cl_sse_feed(&x->sse, p, len, on_event, x) != 0) {
		if (!x->stream_failed) {
			x->stream_failed = true;
			x->err_class = CL_CTR_ERR_STREAM_MALFORMED;
			snprintf(x->why, sizeof(x->why), "an event is larger than the cap");
		}
		return 0; /* cuts the transfer */
	}
	/* The events of this block are in: the first content token is timed here, as the
	 * first token is in on_event, to the same write. */
	if (!x->first_content_us && cl_asm_has_content(x->as))
		x->first_content_us = cl_mono_us();
	return len;
}

/* Starts job j on slot x: 0, or -1 (the job was answered as failed). */
static int begin(struct cl_gen_runner *r, struct xfer *x, struct job *j)
{
	struct cl_err err = { 0 };
	j->attempts++;
	x->job = j;
	x->status = 0;
	x->errlen = 0;
	x->errbody[0] = '\0';
	x->first_us = x->first_content_us = 0;
	x->stream_failed = false;
	x->stream_code = 0;
	x->err_class = 0;
	x->why[0] = '\0';
	cl_sse_reset(&x->sse);
	cl_asm_reset(x->as);
	if (j->attempts == 1)
		snprintf(x->lead, sizeof(x->lead), "X-Request-Id: %s", j->id);
	else
		snprintf(x->lead, sizeof(x->lead), "X-Request-Id: %s/%u", j->id, j->attempts);
	struct curl_slist *h =
	    cl_http_target_link(&r->target, CL_HTTP_CHAT, x->nodes, r->n_lines + 1, x->lead);
	curl_easy_reset(x->easy);
	if (cl_http_target_apply(&r->target, x->easy, CL_HTTP_CHAT, r->cfg.request_timeout_us, h,
				 &err) != 0) {
		x->job = NULL;
		answer(r, j, x, NULL, err.msg, CL_CTR_ERR_OTHER, false);
		return -1;
	}
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, j->body);
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->body_len);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	x->start_us = cl_mono_us();
	if (curl_multi_add_handle(r->multi, x->easy) != CURLM_OK) {
		x->job = NULL;
		answer(r, j, x, NULL, "libcurl refused the transfer", CL_CTR_ERR_OTHER, false);
		return -1;
	}
	atomic_fetch_add(&r->inflight, 1);
	return 0;
}

static bool retryable_status(long s)
{
	return s == 408 || s == 429 || s >= 500;
}

static int status_class(long s)
{
	if (s == 429)
		return CL_CTR_ERR_HTTP_429;
	if (s >= 400 && s <= 499)
		return CL_CTR_ERR_HTTP_4XX;
	if (s >= 500 && s <= 599)
		return CL_CTR_ERR_HTTP_5XX;
	return CL_CTR_ERR_OTHER;
}

/* A failure libcurl reported, in the engine's classes (agent/engine/finish.c decides the
 * same way; docs/engine.md, "Errors"): a request that never went out is a connect error. */
static int curl_class(CURL *easy, CURLcode res, long status)
{
	long sent = 0;
	curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &sent);
	switch (res) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return CL_CTR_ERR_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return sent || status ? CL_CTR_ERR_TIMEOUT : CL_CTR_ERR_CONNECT;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2_STREAM:
	case CURLE_HTTP2:
		return sent || status ? CL_CTR_ERR_STREAM_INCOMPLETE : CL_CTR_ERR_CONNECT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_CLIENTCERT:
	case CURLE_USE_SSL_FAILED:
		return CL_CTR_ERR_TLS;
	default:
		return CL_CTR_ERR_OTHER;
	}
}

/* The body's first bytes for a message, each run of control characters (the SSE framing's
 * newlines) one space. */
static void body_head(const struct xfer *x, char *out, size_t n)
{
	size_t k = 0;
	bool gap = false;
	for (size_t i = 0; i < x->errlen && k + 1 < n; i++) {
		unsigned char c = (unsigned char)x->errbody[i];
		if (c < 0x20 || c == 0x7f) {
			gap = k > 0;
			continue;
		}
		if (gap && k + 2 < n)
			out[k++] = ' ';
		gap = false;
		out[k++] = (char)c;
	}
	out[k] = '\0';
	if (!k)
		snprintf(out, n, "(nothing)");
}

/*
 * A finished try: 0 when it brought a whole answer (status 200, no error of any kind in the
 * stream, every choice given a finish_reason), else its error class with why[n] saying what
 * happened in the server's own words where it gave any, and *retryable.  A stream that
 * ended with `[DONE]` but no choice or no finish_reason is a failure, not an answer: it is
 * what a server that reports its error outside `data:` lines (llama.cpp's `error:` field
 * before its PR 16109) looks like, and writing it as an answer loses the request for good.
 */
static int classify(const struct xfer *x, CURLcode res, bool *retryable, char *why, size_t n)
{
	*retryable = true;
	if (x->stream_failed) {
		snprintf(why, n, "%s", x->why);
		*retryable = x->stream_code == 0 || retryable_status(x->stream_code);
		if (x->err_class)
			return x->err_class;
		return cl_asm_error_seen(x->as) ? CL_CTR_ERR_STREAM_ERROR
						: CL_CTR_ERR_STREAM_MALFORMED;
	}
	if (x->status && x->status != 200) {
		snprintf(why, n, "HTTP %ld: %.500s", x->status, x->errbody);
		*retryable = retryable_status(x->status);
		return status_class(x->status);
	}
	bool whole = cl_asm_finished(x->as) && !cl_sse_pending(&x->sse);
	/* [DONE] ends the answer: what the connection does after it changes nothing. */
	if (x->status == 200 && whole && (res == CURLE_OK || cl_asm_done(x->as)))
		return 0;
	if (res != CURLE_OK) {
		snprintf(why, n, "%s%s", res == CURLE_OPERATION_TIMEDOUT ? "timed out: " : "",
			 curl_easy_strerror(res));
		return curl_class(x->easy, res, x->status);
	}
	if (!cl_asm_has_choice(x->as) && !cl_asm_has_token(x->as)) {
		char head[320];
		body_head(x, head, sizeof(head));
		snprintf(why, n,
			 "the stream ended without an answer (%s no choice, no "
			 "finish_reason); the body began: %s",
			 cl_asm_done(x->as) ? "[DONE], but" : "no [DONE],", head);
		return CL_CTR_ERR_EMPTY_ANSWER;
	}
	snprintf(why, n, "the stream ended before the answer did (%s, no finish_reason)",
		 cl_asm_done(x->as) ? "[DONE]" : "no [DONE]");
	return CL_CTR_ERR_STREAM_INCOMPLETE;
}

/* The wait before j's next try: exponential backoff with jitter, at least a 429's or 503's
 * Retry-After. */
static int64_t backoff_us(struct cl_gen_runner *r, const struct job *j, const struct xfer *x)
{
	/* The agent's one backoff rule: half the step, plus up to another half at random. */
	int64_t wait = cl_backoff_scaled_us(r->cfg.backoff_initial_us, r->cfg.backoff_max_us,
					    j->attempts, cl_splitmix_frac(&r->rng));
	/* A 429 (or 503) that says Retry-After waits at least that long, up to backoff_max: the
	 * server knows when it has room, and a sooner try only spends an attempt.  libcurl
	 * reads both forms, seconds and an HTTP date (as seconds from now; a date in the past
	 * is negative before curl 8.12, so it is clamped). */
	curl_off_t after_s = 0;
	if ((x->status == 429 || x->status == 503) &&
	    curl_easy_getinfo(x->easy, CURLINFO_RETRY_AFTER, &after_s) == CURLE_OK && after_s > 0) {
		int64_t after_us = after_s > r->cfg.backoff_max_us / 1000000
				       ? r->cfg.backoff_max_us
				       : (int64_t)after_s * 1000000;
		if (wait < after_us)
			wait = after_us;
	}
	return wait;
}

/* A finished transfer: its answer, or the job queued again for a retry. */
static void finish(struct cl_gen_runner *r, struct xfer *x, CURLcode res)
{
	struct job *j = x->job;
	x->job = NULL;
	curl_multi_remove_handle(r->multi, x->easy);
	atomic_fetch_sub(&r->inflight, 1);
	if (!x->status)
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
	/* A body that was one JSON document, not a stream, is judged now that it has ended. */
	if (x->status == 200 && !x->stream_failed)
		cl_sse_finish(&x->sse, on_event, x);
	char why[700];
	bool retryable;
	int cls = classify(x, res, &retryable, why, sizeof(why));
	if (cls == 0) {
		char *body = cl_asm_result(x->as);
		if (body) {
			answer(r, j, x, body, NULL, 0, false);
			return;
		}
		snprintf(why, sizeof(why), "out of memory assembling the answer");
		cls = CL_CTR_ERR_OTHER;
	}
	CL_ASSERT(cls >= CL_CTR_FIRST_ERROR && cls <= CL_CTR_LAST_ERROR);
	if (!retryable || j->attempts >= r->cfg.max_attempts) {
		answer(r, j, x, NULL, why, cls, retryable);
		return;
	}
	int k = cls - CL_CTR_FIRST_ERROR;
	j->retries[k]++;
	int64_t wait = backoff_us(r, j, x);
	j->not_before_us = cl_mono_us() + wait;
	/* Every class's first retry is said at info level, with the server's words; the rest
	 * are counted (the coordinator shows them by class) and logged at debug. */
	if (!(r->retry_logged & (1u << k))) {
		r->retry_logged |= 1u << k;
		CL_INFO("generate: request '%s' try %u failed (%s: %s): again in %lld ms (later "
			"%s retries are counted, not logged)",
			j->id, j->attempts, cl_ctr_name(cls) + 4, why, (long long)(wait / 1000),
			cl_ctr_name(cls) + 4);
	} else {
		CL_DEBUG("request '%s' try %u failed (%s: %s): again in %lld ms", j->id,
			 j->attempts, cl_ctr_name(cls) + 4, why, (long long)(wait / 1000));
	}
	pthread_mutex_lock(&r->mu);
	enqueue(r, j);
	pthread_mutex_unlock(&r->mu);
}

static void *run(void *arg)
{
	struct cl_gen_runner *r = arg;
	while (!atomic_load(&r->stop)) {
		int64_t now = cl_mono_us();
		int64_t next_due = now + 200000;
		double rate = atomic_load(&r->rate_per_s);
		for (uint32_t i = 0; i < r->cfg.concurrency; i++) {
			if (r->x[i].job)
				continue;
			if (rate > 0 && now < r->next_start_us) {
				/* paced: not yet (a free stream waits for its start) */
				if (r->next_start_us < next_due)
					next_due = r->next_start_us;
				break;
			}
			pthread_mutex_lock(&r->mu);
			struct job *j = dequeue_due(r, now);
			for (struct job *q = r->queue; q; q = q->next)
				if (q->not_before_us < next_due)
					next_due = q->not_before_us;
			pthread_mutex_unlock(&r->mu);
			if (!j)
				break;
			if (rate > 0) {
				/* Evenly spaced starts; after an idle spell (no work, or every
				 * stream busy) the schedule restarts from now rather than
				 * bursting to catch up. */
				int64_t gap_us = (int64_t)(1e6 / rate);
				if (gap_us < 1)
					gap_us = 1;
				if (r->next_start_us < now - gap_us)
					r->next_start_us = now;
				r->next_start_us += gap_us;
			}
			begin(r, &r->x[i], j);
		}
		int running = 0;
		curl_multi_perform(r->multi, &running);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(r->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			struct xfer *x = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			CURLcode res = m->data.result;
			if (x)
				finish(r, x, res);
		}
		int64_t wait_ms = (next_due - cl_mono_us()) / 1000;
		if (wait_ms < 1)
			wait_ms = 1;
		if (wait_ms > 200)
			wait_ms = 200;
		curl_multi_poll(r->multi, NULL, 0, (int)wait_ms, NULL);
	}
	return NULL;
}

int cl_gen_runner_start(const struct cl_gen_runner_cfg *cfg, struct cl_gen_runner **out,
			struct cl_err *err)
{
	*out = NULL;
	struct cl_gen_runner *r = calloc(1, sizeof(*r));
	if (!r)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	r->cfg = *cfg;
	atomic_init(&r->rate_per_s, cfg->rate_per_s);
	r->rng = cfg->seed ? cfg->seed : (uint64_t)cl_mono_us();
	pthread_mutex_init(&r->mu, NULL);
	int rc = cl_http_target_init(&r->target, cfg->target, cfg->allow, err);
	if (rc != 0)
		goto fail;
	r->n_lines = cl_http_target_n_lines(&r->target, CL_HTTP_CHAT);
	r->cfg.target = NULL;
	if (!(r->multi = curl_multi_init()) || !(r->x = calloc(cfg->concurrency, sizeof(*r->x)))) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		goto fail;
	}
	curl_multi_setopt(r->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)cfg->concurrency);
	for (uint32_t i = 0; i < cfg->concurrency; i++) {
		struct xfer *x = &r->x[i];
		if (!(x->easy = curl_easy_init()) ||
		    !(x->nodes = calloc(r->n_lines + 1, sizeof(*x->nodes))) ||
		    !(x->as = cl_asm_new()) || cl_sse_init(&x->sse, 1u << 20) != 0) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory");
			goto fail;
		}
	}
	if (pthread_create(&r->thread, NULL, run, r) != 0) {
		rc = cl_err_set(err, CL_ESYS, "cannot start the generate thread");
		goto fail;
	}
	r->started = true;
	*out = r;
	return 0;
fail:
	cl_gen_runner_stop(r);
	return rc;
}

void cl_gen_runner_set_rate(struct cl_gen_runner *r, double rate_per_s)
{
	atomic_store(&r->rate_per_s, rate_per_s);
}

int cl_gen_runner_add(struct cl_gen_runner *r, struct cl_gen_item *items, size_t n)
{
	struct job **js = calloc(n ? n : 1, sizeof(*js));
	if (!js)
		return CL_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!(js[i] = calloc(1, sizeof(**js)))) {
			for (size_t k = 0; k < i; k++)
				free(js[k]);
			free(js);
			return CL_ENOMEM;
		}
	}
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < n; i++) {
		js[i]->id = items[i].id;
		js[i]->body = items[i].body;
		js[i]->body_len = items[i].body_len;
		items[i].id = items[i].body = NULL;
		enqueue(r, js[i]);
	}
	pthread_mutex_unlock(&r->mu);
	free(js);
	curl_multi_wakeup(r->multi);
	return 0;
}

size_t cl_gen_runner_take(struct cl_gen_runner *r, struct cl_gen_answer *out, size_t max,
			  size_t max_bytes)
{
	pthread_mutex_lock(&r->mu);
	size_t k = 0, bytes = 0;
	while (k < max && k < r->n_answers) {
		size_t b = r->answers[k].body ? strlen(r->answers[k].body) : 0;
		if (k && bytes + b > max_bytes)
			break;
		bytes += b;
		out[k] = r->answers[k];
		k++;
	}
	if (k && r->n_answers > k)
		memmove(r->answers, r->answers + k, (r->n_answers - k) * sizeof(*r->answers));
	r->n_answers -= k;
	pthread_mutex_unlock(&r->mu);
	return k;
}

size_t cl_gen_runner_held(struct cl_gen_runner *r)
{
	pthread_mutex_lock(&r->mu);
	size_t n = r->queued + r->n_answers;
	pthread_mutex_unlock(&r->mu);
	return n + atomic_load(&r->inflight);
}

size_t cl_gen_runner_inflight(struct cl_gen_runner *r)
{
	return atomic_load(&r->inflight);
}

void cl_gen_runner_stop(struct cl_gen_runner *r)
{
	if (!r)
		return;
	atomic_store(&r->stop, true);
	if (r->started) {
		curl_multi_wakeup(r->multi);
		pthread_join(r->thread, NULL);
	}
	for (uint32_t i = 0; r->x && i < r->cfg.concurrency; i++) {
		struct xfer *x = &r->x[i];
		if (x->job) {
			curl_multi_remove_handle(r->multi, x->easy);
			job_free(x->job);
		}
		if (x->easy)
			curl_easy_cleanup(x->easy);
		free(x->nodes);
		cl_asm_free(x->as);
		cl_sse_destroy(&x->sse);
	}
	free(r->x);
	if (r->multi)
		curl_multi_cleanup(r->multi);
	while (r->queue) {
		struct job *j = r->queue;
		r->queue = j->next;
		job_free(j);
	}
	for (size_t i = 0; i < r->n_answers; i++)
		cl_gen_answer_free(&r->answers[i]);
	free(r->answers);
	cl_http_target_free(&r->target);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
