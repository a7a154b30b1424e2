/* One worker's part of a stage: its phases (waiting, ramping, running, draining), the measured
 * window, and when the loop must look again; what to start is the stage's load model's
 * (load/load_int.h). */
#include "internal.h"
#include "load/load_int.h"

#include "chatload/assert.h"
#include "chatload/clock.h"

#include <pthread.h>
#include <string.h>

static int phase(const struct cl_worker *w)
{
	return atomic_load_explicit(&w->phase, memory_order_relaxed);
}

static void set_phase(struct cl_worker *w, int ph)
{
	atomic_store_explicit(&w->phase, ph, memory_order_release);
}

static void stage_done(struct cl_worker *w)
{
	struct cl_engine *e = w->e;
	/* Done means nothing measured is left in flight: every request started in the window
	 * ended as completed, an error, cut or cancelled, so started == completed + errors + cut +
	 * cancelled. */
	CL_ASSERT(w->st.win_open == 0);
	w->st.active = false;
	cli_reqlog_flush(w);
	set_phase(w, CL_ENGINE_DONE);
	pthread_mutex_lock(&e->mu);
	e->done_workers++;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

/* The model a stage planned as p runs with engine e's workload: the closed loop for a
 * concurrency, else the open loop at a rate, its arrivals a trace's when the workload replays
 * one. */
static const struct cli_load_model *model_for(const struct cl_engine *e,
					      const struct cl_stage_plan *p)
{
	if (p->mode == CL_MODE_CONCURRENCY)
		return &cli_load_closed;
	return e->workload.trace_stride ? &cli_load_trace : &cli_load_rate;
}

/* The measured window closes at at_us: start nothing more; drain, then cut. */
static void close_window(struct cl_worker *w, int64_t at_us, int64_t now)
{
	struct cl_stage_run *st = &w->st;
	st->stopping = true;
	cli_park_release_all(w);
	if (at_us < st->win_end_us)
		st->win_end_us = at_us;
	st->model->close(w, now);
	st->drain_deadline_us = at_us + st->plan.drain_timeout_us;
	set_phase(w, CL_ENGINE_DRAINING);
}

/* The next moment the stage needs the loop's attention. */
static int64_t next_due(const struct cl_worker *w, int ph)
{
	const struct cl_stage_run *st = &w->st;
	int64_t due = st->probe_due_us;
	switch (ph) {
	case CL_ENGINE_WAITING:
		due = cl_earlier(due, st->start_us);
		break;
	case CL_ENGINE_RAMPING:
	case CL_ENGINE_RUNNING:
		if (ph == CL_ENGINE_RAMPING)
			due = cl_earlier(due, st->win_start_us);
		if (!st->by_requests)
			due = cl_earlier(due, st->win_end_us);
		due = cl_earlier(due, st->model->next_due(w));
		break;
	case CL_ENGINE_DRAINING:
		due = cl_earlier(due, st->drain_deadline_us);
		break;
	default:
		break;
	}
	if (w->ad_head != CL_NO_SLOT)
		due = cl_earlier(due, w->slots[w->ad_head].done_us + CL_ENGINE_DONE_GRACE_US);
	return due;
}

/* Whether the stage has ended as of now in phase ph (the worker is then done): the last
 * measured request of a stage bounded by requests has finished, the drain is over, or its
 * deadline passed and what was left was cut. */
static bool stage_over(struct cl_worker *w, int ph, int64_t now)
{
	struct cl_stage_run *st = &w->st;
	if (ph == CL_ENGINE_RUNNING && st->by_requests && st->to_start == 0 &&
	    cl_inflight(w) == 0) {
		/* The last measured request has finished: that is the end of the window. */
		if (now < st->win_end_us)
			st->win_end_us = now;
		return true;
	}
	if (ph == CL_ENGINE_DRAINING) {
		if (cl_inflight(w) == 0)
			return true;
		if (now >= st->drain_deadline_us) {
			cli_worker_cut_all(w);
			return true;
		}
	}
	return false;
}

void cli_stage_tick(struct cl_worker *w)
{
	struct cl_stage_run *st = &w->st;
	if (!st->active)
		return;
	int64_t now = cl_mono_us();
	int ph = phase(w);
	if (ph == CL_ENGINE_WAITING && now >= st->start_us)
		ph = st->plan.ramp_us > 0 ? CL_ENGINE_RAMPING : CL_ENGINE_RUNNING;
	if (ph == CL_ENGINE_RAMPING && now >= st->win_start_us)
		ph = CL_ENGINE_RUNNING;
	if (ph != phase(w))
		set_phase(w, ph);
	if (ph == CL_ENGINE_RUNNING && !st->by_requests && now >= st->win_end_us) {
		/* Open loop: arrivals due inside the window whose timer fired after its end still
		 * go, late by their dispatch lag (a trace's last record is due 1 ms before the
		 * end; a busy machine woke this loop after it and the record was never sent). */
		if (st->model->open)
			st->model->pump(w, now);
		close_window(w, st->win_end_us, now);
		ph = CL_ENGINE_DRAINING;
	}
	if (ph == CL_ENGINE_RAMPING || ph == CL_ENGINE_RUNNING)
		st->model->pump(w, now);
	if (st->by_requests && st->to_start == 0)
		cli_park_release_all(w); /* no request left to retry */
	if (stage_over(w, ph, now)) {
		stage_done(w);
		return;
	}
	cli_worker_pace(w, next_due(w, ph));
}

void cli_stage_begin(struct cl_worker *w, const struct cl_stage_plan *p, int64_t start_us,
		     double phase_frac, double r0)
{
	struct cl_stage_run *st = &w->st;
	memset(st, 0, sizeof(*st));
	st->plan = *p;
	st->plan.name = NULL;
	st->model = model_for(w->e, p);
	st->active = true;
	st->start_us = start_us;
	st->win_start_us = start_us + (p->ramp_us > 0 ? p->ramp_us : 0);
	st->by_requests = p->requests > 0;
	st->win_end_us = st->by_requests ? INT64_MAX : st->win_start_us + p->duration_us;
	st->to_start = p->requests;
	st->probe_due_us = cl_mono_us() + CL_ENGINE_PROBE_US;
	cli_park_release_all(w); /* none should be left; a new stage owes the old nothing */
	w->pace_armed_us = -1;   /* force an arm */
	w->last_end_us = 0;
	set_phase(w, CL_ENGINE_WAITING);

	bool idle = !st->model->begin(w, phase_frac, r0);
	if (st->by_requests && p->requests == 0)
		idle = true;
	if (idle) {
		stage_done(w);
		return;
	}
	cli_stage_tick(w);
}

void cli_stage_stop(struct cl_worker *w, bool cut_now)
{
	struct cl_stage_run *st = &w->st;
	if (!st->active)
		return;
	int64_t now = cl_mono_us();
	int ph = phase(w);
	if (ph == CL_ENGINE_WAITING) {
		stage_done(w);
		return;
	}
	if (ph == CL_ENGINE_RAMPING || ph == CL_ENGINE_RUNNING)
		close_window(w, now, now);
	if (cut_now)
		st->drain_deadline_us = now;
	cli_stage_tick(w);
}
