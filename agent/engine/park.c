/* A worker's stream slots around the no-answer backoff (docs/engine.md): freeing a finished
 * slot, or parking it until its retry; waking and releasing parked ones. */
#include "internal.h"
#include "load/load_int.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "chatload/rng.h"

void cli_slot_free(struct cl_worker *w, struct cl_slot *s)
{
	/* A slot on the free stack is in neither libcurl nor the after-[DONE] list, and the
	 * stack holds each slot at most once. */
	CL_ASSERT(!s->busy && !s->in_after_done);
	CL_ASSERT(w->nfree < w->nslots);
	s->parked = false;
	s->no_answer_streak = 0;
	cli_conv_end(w, s); /* a conversation ends with its slot */
	s->conv_next = false;
	s->freed_us = cl_mono_us();
	w->free_stack[w->nfree++] = s->index;
}

void cli_worker_release(struct cl_worker *w, struct cl_slot *s, bool no_answer)
{
	const struct cl_stage_run *st = &w->st;
	CL_ASSERT(!s->busy && !s->parked);
	/* Open-loop arrivals keep their own pace whatever the answers: only the closed loop,
	 * which would start the next request at once, waits. */
	if (no_answer && st->active && !st->stopping && !st->model->open) {
		if (s->no_answer_streak < UINT32_MAX)
			s->no_answer_streak++;
		double u = cl_splitmix_frac(&w->backoff_rng);
		s->parked = true;
		cl_park_push(&w->parked, s->index,
			     cl_mono_us() + cl_backoff_delay_us(s->no_answer_streak, u));
		return;
	}
	cli_slot_free(w, s);
}

void cli_park_release_all(struct cl_worker *w)
{
	while (w->parked.n)
		cli_slot_free(w, &w->slots[cl_park_pop(&w->parked)]);
}

struct cl_slot *cli_park_take_due(struct cl_worker *w, int64_t now_us, int64_t *due_us)
{
	int64_t due = cl_park_peek(&w->parked);
	if (due > now_us)
		return NULL;
	struct cl_slot *s = &w->slots[cl_park_pop(&w->parked)];
	s->parked = false;
	*due_us = due;
	return s;
}

void cli_park_wake_due(struct cl_worker *w, int64_t now_us)
{
	int64_t due;
	struct cl_slot *s;
	while ((s = cli_park_take_due(w, now_us, &due))) {
		/* A slot backing off begins a new conversation: only if the budget has room. */
		bool goes_on = s->conv_next || s->tool_next;
		if (!cl_stage_may_start(&w->st, due) || (!goes_on && !cli_conv_may_begin(w, due)) ||
		    !cli_request_launch(w, s, due))
			cli_slot_free(w, s); /* the loop replaces the user if it may */
	}
}
