/* The closed loop (docs/engine.md, "Load models"): a concurrency of C users, each starting its
 * next request as soon as its last ended, C reached by a linear ramp. */
#include "agent/engine/load/load_int.h"

#include "agent/engine/arrival.h"

/* Where the ramp starts: ramp_from, at most the concurrency. */
static uint32_t ramp_from(const struct cl_stage_run *st)
{
	uint32_t c = st->plan.concurrency;
	return st->plan.ramp_from < c ? st->plan.ramp_from : c;
}

static bool closed_begin(struct cl_worker *w, double phase_frac, double r0)
{
	(void)phase_frac;
	(void)r0;
	return w->st.plan.concurrency != 0;
}

static void closed_pump(struct cl_worker *w, int64_t now)
{
	struct cl_stage_run *st = &w->st;
	uint32_t c = st->plan.concurrency;
	uint32_t from = ramp_from(st);
	/* A user whose request ended starts the next at once: intended = when the end was
	 * seen, so the dispatch delay shows as queue time. */
	int64_t ended = w->last_end_us ? w->last_end_us : now;
	cli_park_wake_due(w, now);
	/* A user waiting out its backoff holds its place: it is not replaced.  A replacement
	 * begins a new conversation only while the budget has room for it (conv.c). */
	while (cl_inflight(w) + w->parked.n < st->users && cl_stage_may_start(st, ended) &&
	       cli_conv_may_begin(w, ended)) {
		if (!cli_request_start(w, ended)) {
			st->retry_us = now + CL_LOAD_START_RETRY_US;
			return;
		}
	}
	uint32_t target = cl_ramp_target(st->start_us, st->plan.ramp_us, from, c, now);
	while (st->users < target) {
		int64_t due =
		    cl_ramp_level_due(st->start_us, st->plan.ramp_us, from, c, st->users + 1);
		if (!cl_stage_may_start(st, due) || !cli_conv_may_begin(w, due))
			return;
		if (!cli_request_start(w, due)) {
			st->retry_us = now + CL_LOAD_START_RETRY_US;
			return;
		}
		st->users++;
	}
}

static int64_t closed_next_due(const struct cl_worker *w)
{
	const struct cl_stage_run *st = &w->st;
	uint32_t c = st->plan.concurrency;
	int64_t due = cl_park_peek(&w->parked); /* a backoff ends */
	/* The next ramp level. */
	int64_t lv = st->users < c ? cl_ramp_level_due(st->start_us, st->plan.ramp_us,
						       ramp_from(st), c, st->users + 1)
				   : INT64_MAX;
	if (lv != INT64_MAX && cl_stage_may_start(st, lv) && cli_conv_may_begin(w, lv) &&
	    w->nfree > 0)
		due = cl_earlier(due, cl_later(lv, st->retry_us));
	/* Replacements the loop deferred (it starts a bounded number of rounds per turn). */
	if (cl_inflight(w) + w->parked.n < st->users && cl_stage_may_start(st, w->last_end_us) &&
	    cli_conv_may_begin(w, w->last_end_us) && w->nfree > 0)
		due = cl_earlier(due, cl_later(w->last_end_us, st->retry_us));
	return due;
}

/* The users just stop: nothing is owed. */
static void closed_close(struct cl_worker *w, int64_t now)
{
	(void)w;
	(void)now;
}

const struct cli_load_model cli_load_closed = {
	.name = "closed loop",
	.open = false,
	.begin = closed_begin,
	.pump = closed_pump,
	.next_due = closed_next_due,
	.close = closed_close,
};
