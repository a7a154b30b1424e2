/* The open loop's mechanics, shared by the rate and trace-replay models: arrivals start at
 * their own times whatever the answers, behind an in-flight cap, their queue implicit. */
#include "agent/engine/load/load_int.h"

void cli_open_begin(struct cl_worker *w)
{
	struct cl_stage_run *st = &w->st;
	st->cap = w->nslots;
	if (st->plan.concurrency > 0 && st->plan.concurrency < w->nslots)
		st->cap = st->plan.concurrency;
}

void cli_open_pump(struct cl_worker *w, int64_t now, const struct cli_arrival_src *src)
{
	struct cl_stage_run *st = &w->st;
	cli_park_wake_due(w, now); /* conversations whose think time is over */
	while (!st->arrivals_over) {
		int64_t t = src->peek(w);
		if (t > now)
			return;
		if (!cl_stage_may_start(st, t)) {
			st->arrivals_over = true;
			return;
		}
		/* Over the cap the arrival waits, its intended start kept: the queue is implicit
		 * (arrivals are generated lazily), so it costs no memory however long. */
		if (cl_inflight(w) >= st->cap)
			return;
		/* So does an arrival that would begin a conversation the budget has no room
		 * for beside the turns the conversations in progress owe (conv.c). */
		if (!src->body && !cli_conv_may_begin(w, t))
			return;
		w->pick = src->body ? src->body(w) : NULL;
		bool started = cli_request_start(w, t);
		w->pick = NULL;
		if (!started) {
			st->retry_us = now + CL_LOAD_START_RETRY_US;
			return;
		}
		src->advance(w);
	}
}

int64_t cli_open_next_due(const struct cl_worker *w, const struct cli_arrival_src *src)
{
	const struct cl_stage_run *st = &w->st;
	int64_t due = cl_park_peek(&w->parked); /* a think time ends */
	if (!st->arrivals_over && cl_inflight(w) < st->cap &&
	    (src->body || cli_conv_may_begin(w, src->peek(w))))
		due = cl_earlier(due, cl_later(src->peek(w), st->retry_us));
	return due;
}

void cli_open_close(struct cl_worker *w, int64_t now, const struct cli_arrival_src *src)
{
	struct cl_stage_run *st = &w->st;
	if (st->arrivals_over)
		return;
	/* Arrivals due in the window still waiting behind the cap: say how many. */
	uint64_t n = 0;
	int64_t t;
	while ((t = src->peek(w)) < st->win_end_us && t <= now && n < (1u << 24)) {
		n++;
		src->advance(w);
	}
	if (n)
		atomic_fetch_add(&w->unsent_backlog, n);
	st->arrivals_over = true;
}
