/* Abandoned requests (workload.cancel; docs/engine.md, "Abandoned requests"): which requests
 * the client closes, and closing them, after their tokens or at their time, as a browser
 * whose user went away closes its connection (or resets its HTTP/2 stream). */
#include "internal.h"

#include "chatload/plan.h"

#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

void cl_engine_cancel_requests(struct cl_engine *e, bool on)
{
	atomic_store(&e->cancel_on, on && e->workload.cancel_ppm != 0);
}

/* Arms the worker's cancel timer for at_us unless it is armed for earlier already. */
static void arm(struct cl_worker *w, int64_t at_us)
{
	if (at_us >= w->cancel_armed_us)
		return;
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (at_us != INT64_MAX) {
		if (at_us < 1)
			at_us = 1; /* an all-zero value would disarm */
		its.it_value.tv_sec = at_us / 1000000;
		its.it_value.tv_nsec = (long)(at_us % 1000000) * 1000;
	}
	timerfd_settime(w->cancelfd, TFD_TIMER_ABSTIME, &its, NULL);
	w->cancel_armed_us = at_us;
}

void cli_cancel_arm(struct cl_worker *w, struct cl_slot *s)
{
	s->cancel_at_us = 0;
	s->cancel_tokens = 0;
	s->cancelled = false;
	struct cl_engine *e = w->e;
	/* Only measured requests of a stage: the share is of what the results count. */
	if (!s->in_window || !atomic_load_explicit(&e->cancel_on, memory_order_relaxed))
		return;
	uint64_t k = atomic_fetch_add_explicit(&e->cancel_k, 1, memory_order_relaxed);
	int64_t after_us;
	if (!cl_cancel_pick(&e->workload, k, &after_us))
		return;
	if (e->workload.cancel_after_tokens) {
		s->cancel_tokens = e->workload.cancel_after_tokens;
		return;
	}
	s->cancel_at_us = s->handed_us + after_us;
	arm(w, s->cancel_at_us);
}

void cli_cancel_expire(struct cl_worker *w, int64_t now_us)
{
	uint64_t x;
	ssize_t k = read(w->cancelfd, &x, sizeof(x));
	(void)k; /* EAGAIN: woken by another timer; the slots say what is due */
	w->cancel_armed_us = INT64_MAX;
	int64_t next = INT64_MAX;
	/* A scan of the slots, only when a cancellation is due: a timer heap would need removals
	 * for every request that ends first, and the slots are few per worker. */
	for (uint32_t i = 0; i < w->nslots; i++) {
		struct cl_slot *s = &w->slots[i];
		if (!s->busy || !s->cancel_at_us)
			continue;
		if (s->done_seen) {
			s->cancel_at_us = 0; /* the answer ended first: it completes */
			continue;
		}
		if (s->cancel_at_us > now_us) {
			if (s->cancel_at_us < next)
				next = s->cancel_at_us;
			continue;
		}
		s->cancelled = true;
		cli_request_finish(w, s, CURLE_OK, false);
	}
	arm(w, next);
}
