/* The generate runner: one thread, one libcurl multi, up to `concurrency` streamed chat
 * completions of leased requests, retried with backoff on retryable failures, answers
 * assembled and queued for the control thread. */
#include "generate/runner.h"
#include "generate/assemble.h"

#include "http/handle.h"
#include "stream/event.h"
#include "stream/sse.h"

#include "chatload/clock.h"
#include "chatload/log.h"

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
	uint32_t attempts;     /* tries begun */
	int64_t not_before_us; /* a retry waits until then */
};

struct xfer {
	CURL *easy;
	struct job *job;
	struct curl_slist *nodes; /* header list nodes, cl_http_target_link */
	char lead[CL_WIRE_MAX_ID + 40];
	struct cl_sse_parser sse;
	struct cl_asm *as;
	long status;
	char errbody[ERR_BODY_MAX + 1];
	size_t errlen;
	int64_t start_us, first_us;
	bool stream_failed;
	int stream_code;
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
	int64_t next_start_us; /* with a rate: the next try may start then */
	_Atomic(double) rate_per_s; /* cfg.rate_per_s, changed by cl_gen_runner_set_rate */
};

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

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
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

/* Files an answer for j (under no lock; takes mu), freeing j. */
static void answer(struct cl_gen_runner *r, struct job *j, struct xfer *x, char *body,
		   const char *error, bool retryable)
{
	struct cl_gen_answer a = {
		.id = j->id,
		.attempts = j->attempts,
		.status = x->status > 0 && x->status < 1000 ? (uint32_t)x->status : 0,
		.body = body,
		.retryable = retryable,
	};
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
		a.total_us = cl_mono_us() - x->start_us;
		a.output_tokens = cl_asm_output_tokens(x->as);
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
		snprintf(x->why, sizeof(x->why), "the server sent an error in the stream: %.*s",
			 c.error_msg ? (int)(c.error_msg_len < 300 ? c.error_msg_len : 300) : 0,
			 c.error_msg ? c.error_msg : "");
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
	if (x->status != 200) {
		size_t room = ERR_BODY_MAX - x->errlen;
		size_t k = len < room ? len : room;
		memcpy(x->errbody + x->errlen, p, k);
		x->errlen += k;
		x->errbody[x->errlen] = '\0';
		return len;
	}
	if (cl_sse_feed(&x->sse, p, len, on_event, x) != 0) {
		if (!x->stream_failed) {
			x->stream_failed = true;
			snprintf(x->why, sizeof(x->why), "an event is larger than the cap");
		}
		return 0; /* cuts the transfer */
	}
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
	x->first_us = 0;
	x->stream_failed = false;
	x->stream_code = 0;
	x->why[0] = '\0';
	cl_sse_reset(&x->sse);
	cl_asm_reset(x->as);
	if (j->attempts == 1)
		snprintf(x->lead, sizeof(x->lead), "X-Request-Id: %s", j->id);
	else
		snprintf(x->lead, sizeof(x->lead), "X-Request-Id: %s/%u", j->id, j->attempts);
	struct curl_slist *h = cl_http_target_link(&r->target, CL_HTTP_CHAT, x->nodes,
						   r->n_lines + 1, x->lead);
	curl_easy_reset(x->easy);
	if (cl_http_target_apply(&r->target, x->easy, CL_HTTP_CHAT, r->cfg.request_timeout_us, h,
				 &err) != 0) {
		x->job = NULL;
		answer(r, j, x, NULL, err.msg, false);
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
		answer(r, j, x, NULL, "libcurl refused the transfer", false);
		return -1;
	}
	atomic_fetch_add(&r->inflight, 1);
	return 0;
}

static bool retryable_status(long s)
{
	return s == 408 || s == 429 || s >= 500;
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
	char why[700];
	bool retryable = true;
	if (x->status == 200 && !x->stream_failed && res == CURLE_OK &&
	    (cl_asm_done(x->as) || cl_asm_finished(x->as)) && !cl_sse_pending(&x->sse)) {
		char *body = cl_asm_result(x->as);
		if (body) {
			answer(r, j, x, body, NULL, false);
			return;
		}
		snprintf(why, sizeof(why), "out of memory assembling the answer");
	} else if (x->stream_failed) {
		snprintf(why, sizeof(why), "%s", x->why);
		retryable = x->stream_code == 0 || retryable_status(x->stream_code);
	} else if (x->status && x->status != 200) {
		snprintf(why, sizeof(why), "HTTP %ld: %.500s", x->status, x->errbody);
		retryable = retryable_status(x->status);
	} else if (res == CURLE_OPERATION_TIMEDOUT) {
		snprintf(why, sizeof(why), "timed out: %s", curl_easy_strerror(res));
	} else if (res != CURLE_OK) {
		snprintf(why, sizeof(why), "%s", curl_easy_strerror(res));
	} else {
		snprintf(why, sizeof(why), "the stream ended before the answer did (no [DONE] and "
					   "no finish_reason)");
	}
	if (!retryable || j->attempts >= r->cfg.max_attempts) {
		answer(r, j, x, NULL, why, retryable);
		return;
	}
	/* Exponential backoff with jitter: half the step, plus up to another half at random. */
	int64_t step = r->cfg.backoff_initial_us;
	for (uint32_t k = 1; k < j->attempts && step < r->cfg.backoff_max_us; k++)
		step *= 2;
	if (step > r->cfg.backoff_max_us)
		step = r->cfg.backoff_max_us;
	int64_t wait = step / 2 + (step > 1 ? (int64_t)(next_rand(&r->rng) % (uint64_t)(step / 2 + 1)) : 0);
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
	j->not_before_us = cl_mono_us() + wait;
	CL_DEBUG("request '%s' try %u failed (%s): again in %lld ms", j->id, j->attempts, why,
		 (long long)(wait / 1000));
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
