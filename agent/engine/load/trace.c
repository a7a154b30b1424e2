/* Trace replay (docs/engine.md, "Trace replay"): a rate stage's arrivals are a trace's, each
 * request sent once, at the stage's start plus its offset, with its own body. */
#include "agent/engine/load/load_int.h"

/*
 * The body of this worker's k-th request of the trace, or NULL past its end: worker j of W
 * replays the agent's requests j, j + W, ..., the agent's being bodies first_body +
 * trace_stride * (its requests).
 */
static const struct cl_request_body *trace_body(const struct cl_worker *w, uint64_t k)
{
	const struct cl_workload_plan *wl = &w->e->workload;
	uint64_t local = (uint64_t)w->index + (uint64_t)w->e->nworkers * k;
	if (!wl->trace_stride || local >= wl->n_bodies)
		return NULL;
	uint64_t i = wl->first_body + local * wl->trace_stride;
	return i < wl->n_bodies ? &wl->bodies[i] : NULL;
}

/* The next request's start: the stage's start plus its offset, the same START_AT on every
 * agent. */
static int64_t trace_peek(const struct cl_worker *w)
{
	const struct cl_request_body *b = trace_body(w, w->st.trace_k);
	return b ? w->st.start_us + b->at_us : INT64_MAX;
}

static void trace_advance(struct cl_worker *w)
{
	w->st.trace_k++;
}

static const struct cl_request_body *trace_next_body(const struct cl_worker *w)
{
	return trace_body(w, w->st.trace_k);
}

static const struct cli_arrival_src trace = {
	.peek = trace_peek,
	.advance = trace_advance,
	.body = trace_next_body,
};

static bool trace_begin(struct cl_worker *w, double phase_frac, double r0)
{
	(void)phase_frac;
	(void)r0;
	cli_open_begin(w);
	w->st.trace_k = 0;
	return trace_body(w, 0) != NULL; /* a worker with no request of the trace is idle */
}

static void trace_pump(struct cl_worker *w, int64_t now)
{
	cli_open_pump(w, now, &trace);
}

static int64_t trace_next_due(const struct cl_worker *w)
{
	return cli_open_next_due(w, &trace);
}

static void trace_close(struct cl_worker *w, int64_t now)
{
	cli_open_close(w, now, &trace);
}

const struct cli_load_model cli_load_trace = {
	.name = "trace replay",
	.open = true,
	.begin = trace_begin,
	.pump = trace_pump,
	.next_due = trace_next_due,
	.close = trace_close,
};
