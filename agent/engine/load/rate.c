/* The open loop at a rate (docs/engine.md, "Load models"): arrivals of a constant, Poisson or
 * gamma process (arrival.c), its rate ramped linearly, each worker's phase-shifted. */
#include "agent/engine/load/load_int.h"

#include "agent/engine/arrival.h"

static int64_t process_peek(const struct cl_worker *w)
{
	return cl_arrivals_peek(&w->st.arr);
}

static void process_advance(struct cl_worker *w)
{
	cl_arrivals_advance(&w->st.arr);
}

static const struct cli_arrival_src process = {
	.peek = process_peek, .advance = process_advance, .body = NULL, /* the next body in order */
};

static bool rate_begin(struct cl_worker *w, double phase_frac, double r0)
{
	struct cl_stage_run *st = &w->st;
	const struct cl_stage_plan *p = &st->plan;
	cli_open_begin(w);
	cl_arrivals_init(&st->arr, p->arrival, p->gamma_shape, r0, p->rate_per_s, st->start_us,
			 p->ramp_us, p->seed, phase_frac);
	return p->rate_per_s > 0;
}

static void rate_pump(struct cl_worker *w, int64_t now)
{
	cli_open_pump(w, now, &process);
}

static int64_t rate_next_due(const struct cl_worker *w)
{
	return cli_open_next_due(w, &process);
}

static void rate_close(struct cl_worker *w, int64_t now)
{
	cli_open_close(w, now, &process);
}

const struct cli_load_model cli_load_rate = {
	.name = "open loop at a rate",
	.open = true,
	.begin = rate_begin,
	.pump = rate_pump,
	.next_due = rate_next_due,
	.close = rate_close,
};
