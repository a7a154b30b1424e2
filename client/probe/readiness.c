/* The readiness gate's loop: phases in order, capped exponential backoff with full jitter,
 * the deadline and cancellation (the verdict's words are common's, chatload/readiness.h). */
#include "client/probe/readiness.h"

#include "client/probe/probe_http.h"

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

/* The gate's working state, so that each step of an attempt is a function of its own. */
struct gate {
	const struct cl_probe_cfg *cfg;
	const struct cl_target_plan *t;
	int64_t req_timeout_us, b_init_us, b_max_us;
	uint32_t need, failures, in_row;
	uint64_t rng;
	int64_t t0, deadline;
	struct cl_probe_http http;
	char *body;            /* the probe body the gate rendered (body_json otherwise) */
	const char *body_json; /* what a generation attempt sends */
	struct cl_err err;
};

static void gate_init(struct gate *g, const struct cl_probe_cfg *cfg)
{
	memset(g, 0, sizeof(*g));
	g->cfg = cfg;
	g->t = cfg->target;
	int64_t timeout = cfg->timeout_us > 0 ? cfg->timeout_us : CL_PROBE_DEFAULT_TIMEOUT_US;
	g->req_timeout_us = cfg->request_timeout_us > 0 ? cfg->request_timeout_us
							: CL_PROBE_DEFAULT_REQUEST_TIMEOUT_US;
	g->need = cfg->consecutive ? cfg->consecutive : CL_PROBE_DEFAULT_CONSECUTIVE;
	g->b_init_us = cfg->backoff_initial_us > 0 ? cfg->backoff_initial_us
						   : CL_PROBE_DEFAULT_BACKOFF_INITIAL_US;
	g->b_max_us =
	    cfg->backoff_max_us > 0 ? cfg->backoff_max_us : CL_PROBE_DEFAULT_BACKOFF_MAX_US;
	if (g->b_init_us > g->b_max_us)
		g->b_init_us =
		    g->b_max_us; /* "--backoff-max 300ms" alone: waits of at most 300ms */
	g->rng = cfg->seed ? cfg->seed : (uint64_t)cl_mono_ns() ^ ((uint64_t)getpid() << 32);
	g->body_json = cfg->body_json;
	g->t0 = cl_mono_us();
	g->deadline = g->t0 + timeout;
}

/* The wait after a failure.  Connect and /v1/models are cheap to ask and say nothing about
 * load, so they are polled on a short cap of their own (CL_PROBE_EARLY_BACKOFF_MAX_US): the
 * gate sees them pass within that cap (plus one attempt) of becoming possible.  Generation
 * attempts cost the server a request and keep readiness.backoff. */
static int64_t gate_backoff_us(struct gate *g, int32_t phase)
{
	int64_t init = g->b_init_us, max = g->b_max_us;
	if (phase != CL_READY_GENERATION) {
		if (max > CL_PROBE_EARLY_BACKOFF_MAX_US)
			max = CL_PROBE_EARLY_BACKOFF_MAX_US;
		if (init > max)
			init = max;
	}
	return backoff_us(g->failures, init, max, &g->rng);
}

/* One attempt of the current phase, its time limit cut to the deadline (*clamped says so). */
static void gate_attempt(struct gate *g, struct cl_readiness_result *out, int64_t now,
			 struct cl_probe_attempt *a, bool *clamped)
{
	int64_t limit = out->phase == CL_READY_CONNECT
			    ? (g->t->connect_timeout_us > 0 ? g->t->connect_timeout_us
							    : CL_PROBE_DEFAULT_CONNECT_TIMEOUT_US)
			    : g->req_timeout_us;
	*clamped = g->deadline - now < limit;
	if (*clamped)
		limit = g->deadline - now;
	switch (out->phase) {
	case CL_READY_CONNECT:
		cli_probe_http_connect(&g->http, limit, a);
		break;
	case CL_READY_MODELS:
		cli_probe_http_models(&g->http, g->t->model, limit, a);
		break;
	default:
		out->attempts++;
		cli_probe_http_generate(&g->http, g->body_json, limit, a);
		break;
	}
}

/* A passed attempt: the phase passes (the models phase also renders the probe body for the
 * model found), or a generation counts towards the successes in a row. */
static void gate_passed(struct gate *g, struct cl_readiness_result *out,
			const struct cl_probe_attempt *a)
{
	const struct cl_probe_cfg *cfg = g->cfg;
	g->failures = 0;
	out->failing_since_us = -1;
	if (out->phase == CL_READY_CONNECT) {
		out->phase_passed_us[CL_READY_CONNECT] = out->elapsed_us;
		out->phase = CL_READY_MODELS;
	} else if (out->phase == CL_READY_MODELS) {
		out->phase_passed_us[CL_READY_MODELS] = out->elapsed_us;
		snprintf(out->model, sizeof(out->model), "%s", a->model);
		out->phase = CL_READY_GENERATION;
		if (g->body_json)
			return;
		int rc = cl_body_json_probe_api(cfg->target->api, out->model,
						cfg->prompt ? cfg->prompt : CL_PROBE_DEFAULT_PROMPT,
						cfg->max_tokens ? cfg->max_tokens
								: CL_PROBE_DEFAULT_MAX_TOKENS,
						cfg->extra_body_json, &g->body, &g->err);
		if (rc) {
			snprintf(out->last_error, sizeof(out->last_error), "%s", g->err.msg);
			out->status = CL_READY_FATAL;
		}
		g->body_json = g->body;
	} else {
		g->in_row++;
		out->probe_ttft_us = a->ttft_us;
		out->probe_total_us = a->total_us;
		if (g->in_row >= g->need) {
			out->phase_passed_us[CL_READY_GENERATION] = out->elapsed_us;
			out->status = CL_READY_PASSED;
		}
	}
}

/* A failed attempt that may succeed later: the error kept, the wait before the next one
 * (*last_wait when none fits before the deadline and the gate only waits it out). */
static int64_t gate_retry(struct gate *g, struct cl_readiness_result *out,
			  const struct cl_probe_attempt *a, int64_t now, int64_t attempt_start,
			  bool clamped, bool *last_wait)
{
	/* An attempt the deadline cut short says nothing about the target: the error that
	 * brought the gate to its deadline is the one to report. */
	if (!(clamped && g->deadline - now < 50000 && out->last_error[0]))
		snprintf(out->last_error, sizeof(out->last_error), "%s", a->error);
	if (out->failing_since_us < 0)
		out->failing_since_us = attempt_start;
	g->in_row = 0;
	g->failures++;
	int64_t delay = gate_backoff_us(g, out->phase);
	if (delay >= g->deadline - now) {
		/* No attempt fits before the deadline: wait it out, then give up (so "not
		 * ready after 15m" means 15 minutes). */
		delay = g->deadline - now;
		*last_wait = true;
	}
	return delay;
}

/* One turn of the gate: an attempt, its outcome, the progress call, the wait. */
static void gate_step(struct gate *g, cl_probe_progress_cb cb, void *ctx, const atomic_int *cancel,
		      struct cl_readiness_result *out)
{
	struct cl_probe_attempt a;
	int64_t now = cl_mono_us();
	int64_t attempt_start = now - g->t0;
	bool clamped, last_wait = false;
	gate_attempt(g, out, now, &a, &clamped);
	now = cl_mono_us();
	out->elapsed_us = now - g->t0;
	int64_t delay = 0;
	switch (a.outcome) {
	case CL_PROBE_OK:
		gate_passed(g, out, &a);
		break;
	case CL_PROBE_RETRY:
		delay = gate_retry(g, out, &a, now, attempt_start, clamped, &last_wait);
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
	if (out->status == CL_READY_PENDING && now >= g->deadline)
		out->status = CL_READY_TIMED_OUT;
	if (cb)
		cb(ctx, out, out->status == CL_READY_PENDING && !last_wait ? delay : -1);
	if (out->status == CL_READY_PENDING && delay > 0)
		wait_us(delay, cancel);
}

int cl_probe_run(const struct cl_probe_cfg *cfg, cl_probe_progress_cb cb, void *ctx,
		 const atomic_int *cancel, struct cl_readiness_result *out)
{
	struct gate g;
	gate_init(&g, cfg);
	const struct cl_target_plan *t = g.t;

	result_init(out, t);
	if (!t || !t->base_url || !*t->base_url) {
		snprintf(out->last_error, sizeof(out->last_error), "no target URL");
		out->status = CL_READY_FATAL;
		goto out;
	}
	if (cli_probe_http_init(&g.http, t, cfg->allow, cancel, &g.err) != 0) {
		snprintf(out->last_error, sizeof(out->last_error), "%s", g.err.msg);
		out->status = CL_READY_FATAL;
		goto out;
	}
	while (out->status == CL_READY_PENDING) {
		if (cancelled(cancel)) {
			out->status = CL_READY_CANCELLED;
			break;
		}
		if (cl_mono_us() >= g.deadline) {
			out->status = CL_READY_TIMED_OUT;
			break;
		}
		gate_step(&g, cb, ctx, cancel, out);
	}
out:
	out->elapsed_us = cl_mono_us() - g.t0;
	if (out->status == CL_READY_FATAL && out->failing_since_us < 0)
		out->failing_since_us = out->elapsed_us;
	cli_probe_http_destroy(&g.http);
	free(g.body);
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
