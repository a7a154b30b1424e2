/* The readiness gate's loop: phases in order, capped exponential backoff with full jitter,
 * the deadline and cancellation (the verdict's words are common's, chatload/readiness.h). */
#include "probe/readiness.h"

#include "probe/probe_http.h"

#include "chatload/clock.h"
#include "chatload/rng.h"
#include "chatload/body_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLEEP_STEP_US    50000 /* cancel is looked at this often while waiting */
#define BACKOFF_FLOOR_US 50000 /* full jitter, but never a busy loop */

/* ---- backoff ----------------------------------------------------------------------------- */

/*
 * Full jitter (uniform in [0, ceiling], the ceiling doubling per failure in a row up to max):
 * many agents probing one server spread out instead of knocking in step.  A small floor keeps
 * an unlucky draw from becoming a busy loop.
 */
static int64_t backoff_us(uint32_t failures, int64_t initial, int64_t max, uint64_t *rng)
{
	int64_t ceiling = initial;
	for (uint32_t i = 1; i < failures && ceiling < max; i++)
		ceiling *= 2;
	if (ceiling > max)
		ceiling = max;
	int64_t floor = ceiling < BACKOFF_FLOOR_US ? ceiling : BACKOFF_FLOOR_US;
	double u = (cl_splitmix64(rng) >> 11) * 0x1.0p-53;
	return floor + (int64_t)(u * (double)(ceiling - floor));
}

static bool cancelled(const atomic_int *cancel)
{
	return cancel && *cancel;
}

/* Sleeps up to us, waking early on cancel. */
static void wait_us(int64_t us, const atomic_int *cancel)
{
	int64_t end = cl_mono_us() + us;
	for (;;) {
		int64_t left = end - cl_mono_us();
		if (left <= 0 || cancelled(cancel))
			return;
		cl_sleep_ns((left < SLEEP_STEP_US ? left : SLEEP_STEP_US) * 1000);
	}
}

/* ---- the gate ---------------------------------------------------------------------------- */

static void result_init(struct cl_readiness_result *r, const struct cl_target_plan *t)
{
	memset(r, 0, sizeof(*r));
	r->status = CL_READY_PENDING;
	r->phase = CL_READY_CONNECT;
	for (int i = 0; i < CL_READY__PHASES; i++)
		r->phase_passed_us[i] = -1;
	r->probe_ttft_us = r->probe_total_us = -1;
	r->failing_since_us = -1;
	if (t && t->model)
		snprintf(r->model, sizeof(r->model), "%s", t->model);
}

int cl_probe_run(const struct cl_probe_cfg *cfg, cl_probe_progress_cb cb, void *ctx,
		 const atomic_int *cancel, struct cl_readiness_result *out)
{
	const struct cl_target_plan *t = cfg->target;
	int64_t timeout = cfg->timeout_us > 0 ? cfg->timeout_us : CL_PROBE_DEFAULT_TIMEOUT_US;
	int64_t req_timeout = cfg->request_timeout_us > 0 ? cfg->request_timeout_us
							  : CL_PROBE_DEFAULT_REQUEST_TIMEOUT_US;
	uint32_t need = cfg->consecutive ? cfg->consecutive : CL_PROBE_DEFAULT_CONSECUTIVE;
	int64_t b_init = cfg->backoff_initial_us > 0 ? cfg->backoff_initial_us
						     : CL_PROBE_DEFAULT_BACKOFF_INITIAL_US;
	int64_t b_max =
	    cfg->backoff_max_us > 0 ? cfg->backoff_max_us : CL_PROBE_DEFAULT_BACKOFF_MAX_US;
	if (b_init > b_max)
		b_init = b_max; /* "--backoff-max 300ms" alone means waits of at most 300ms */
	uint64_t rng = cfg->seed ? cfg->seed : (uint64_t)cl_mono_ns() ^ ((uint64_t)getpid() << 32);
	struct cl_probe_http http = { 0 };
	struct cl_probe_attempt a;
	struct cl_err err = { 0 };
	char *body = NULL;
	const char *body_json = cfg->body_json;
	uint32_t failures = 0, in_row = 0;
	int64_t t0 = cl_mono_us(), deadline = t0 + timeout;

	result_init(out, t);
	if (!t || !t->base_url || !*t->base_url) {
		snprintf(out->last_error, sizeof(out->last_error), "no target URL");
		out->status = CL_READY_FATAL;
		goto out;
	}
	if (cli_probe_http_init(&http, t, cfg->allow, cancel, &err) != 0) {
		snprintf(out->last_error, sizeof(out->last_error), "%s", err.msg);
		out->status = CL_READY_FATAL;
		goto out;
	}

	while (out->status == CL_READY_PENDING) {
		int64_t now = cl_mono_us();
		if (cancelled(cancel)) {
			out->status = CL_READY_CANCELLED;
			break;
		}
		if (now >= deadline) {
			out->status = CL_READY_TIMED_OUT;
			break;
		}
		int64_t left = deadline - now;
		int64_t attempt_start = now - t0;
		int64_t limit =
		    out->phase == CL_READY_CONNECT
			? (t->connect_timeout_us > 0 ? t->connect_timeout_us
						     : CL_PROBE_DEFAULT_CONNECT_TIMEOUT_US)
			: req_timeout;
		bool clamped = left < limit;
		if (clamped)
			limit = left;
		switch (out->phase) {
		case CL_READY_CONNECT:
			cli_probe_http_connect(&http, limit, &a);
			break;
		case CL_READY_MODELS:
			cli_probe_http_models(&http, t->model, limit, &a);
			break;
		default:
			out->attempts++;
			cli_probe_http_generate(&http, body_json, limit, &a);
			break;
		}
		now = cl_mono_us();
		out->elapsed_us = now - t0;
		int64_t delay = 0;
		bool last_wait = false;
		switch (a.outcome) {
		case CL_PROBE_OK:
			failures = 0;
			out->failing_since_us = -1;
			if (out->phase == CL_READY_CONNECT) {
				out->phase_passed_us[CL_READY_CONNECT] = out->elapsed_us;
				out->phase = CL_READY_MODELS;
			} else if (out->phase == CL_READY_MODELS) {
				out->phase_passed_us[CL_READY_MODELS] = out->elapsed_us;
				snprintf(out->model, sizeof(out->model), "%s", a.model);
				out->phase = CL_READY_GENERATION;
				if (!body_json) {
					int rc = cl_body_json_probe(
					    out->model,
					    cfg->prompt ? cfg->prompt : CL_PROBE_DEFAULT_PROMPT,
					    cfg->max_tokens ? cfg->max_tokens
							    : CL_PROBE_DEFAULT_MAX_TOKENS,
					    cfg->extra_body_json, &body, &err);
					if (rc) {
						snprintf(out->last_error, sizeof(out->last_error),
							 "%s", err.msg);
						out->status = CL_READY_FATAL;
					}
					body_json = body;
				}
			} else {
				in_row++;
				out->probe_ttft_us = a.ttft_us;
				out->probe_total_us = a.total_us;
				if (in_row >= need) {
					out->phase_passed_us[CL_READY_GENERATION] = out->elapsed_us;
					out->status = CL_READY_PASSED;
				}
			}
			break;
		case CL_PROBE_RETRY:
			/* An attempt the deadline cut short says nothing about the target: the
			 * error that brought the gate to its deadline is the one to report. */
			if (!(clamped && deadline - now < 50000 && out->last_error[0]))
				snprintf(out->last_error, sizeof(out->last_error), "%s", a.error);
			if (out->failing_since_us < 0)
				out->failing_since_us = attempt_start;
			in_row = 0;
			failures++;
			delay = backoff_us(failures, b_init, b_max, &rng);
			if (delay >= deadline - now) {
				/* No attempt fits before the deadline: wait it out, then give up
				 * (so "not ready after 15m" means 15 minutes). */
				delay = deadline - now;
				last_wait = true;
			}
			break;
		case CL_PROBE_FATAL:
			snprintf(out->last_error, sizeof(out->last_error), "%s", a.error);
			if (out->failing_since_us < 0)
				out->failing_since_us = attempt_start;
			out->status = CL_READY_FATAL;
			break;
		case CL_PROBE_CANCELLED:
			out->status = CL_READY_CANCELLED;
			break;
		}
		if (out->status == CL_READY_PENDING && now >= deadline)
			out->status = CL_READY_TIMED_OUT;
		if (cb)
			cb(ctx, out, out->status == CL_READY_PENDING && !last_wait ? delay : -1);
		if (out->status == CL_READY_PENDING && delay > 0)
			wait_us(delay, cancel);
	}
out:
	out->elapsed_us = cl_mono_us() - t0;
	if (out->status == CL_READY_FATAL && out->failing_since_us < 0)
		out->failing_since_us = out->elapsed_us;
	cli_probe_http_destroy(&http);
	free(body);
	switch (out->status) {
	case CL_READY_PASSED:
		return 0;
	case CL_READY_TIMED_OUT:
		return CL_ETIMEDOUT;
	case CL_READY_CANCELLED:
		return CL_ECLOSED;
	default:
		return CL_EREFUSED;
	}
}
