/* The closed loop's pause after requests that got no answer: a capped exponential delay per
 * stream slot (the rule the generate runner's retries use too), and the min-heap of slots
 * waiting it out.  Pure: no clocks, no curl. */
#ifndef CHATLOAD_BACKOFF_H
#define CHATLOAD_BACKOFF_H

#include <stdint.h>

#include "chatload/err.h"

#define CL_BACKOFF_BASE_US 50000   /* after the first no-answer failure in a row */
#define CL_BACKOFF_CAP_US  1000000 /* never longer: one report interval (docs/engine.md) */

/*
 * The one exponential backoff of the agent (the engine's no-answer pause here, the generate
 * runner's retries in agent/generate/runner.c): after `streak` (>= 1) failures in a row,
 * min(cap_us, base_us * 2^(streak-1)) scaled by a factor in [0.5, 1) taken from u in [0, 1),
 * so clients that failed together do not all retry together.  streak 0 gives 0; a u outside
 * [0, 1) counts as 0.  Inline and pure, so the runner's library needs only this header.
 */
static inline int64_t cl_backoff_scaled_us(int64_t base_us, int64_t cap_us, uint32_t streak,
					   double u)
{
	if (streak == 0)
		return 0;
	int64_t d = base_us;
	for (uint32_t i = 1; i < streak && d < cap_us; i++)
		d *= 2;
	if (d > cap_us)
		d = cap_us;
	if (!(u >= 0.0 && u < 1.0))
		u = 0.0;
	return (int64_t)((double)d * (0.5 + 0.5 * u));
}

/* The engine's no-answer pause: cl_backoff_scaled_us with BASE and CAP above. */
int64_t cl_backoff_delay_us(uint32_t streak, double u);

/* Slots parked until a time, earliest first.  Memory is fixed at init. */
struct cl_park_heap {
	uint32_t *slot;
	int64_t *at_us;
	uint32_t n, cap;
};

/* Room for cap slots.  0 or CL_ENOMEM (h then destroyable). */
CL_MUST_CHECK int cl_park_init(struct cl_park_heap *h, uint32_t cap);
/* Frees; safe on zeroed. */
void cl_park_destroy(struct cl_park_heap *h);
/* Adds slot, due at at_us.  The caller never parks more than cap slots (one entry each):
 * a push onto a full heap is a bug, and CL_ASSERT stops the program there. */
void cl_park_push(struct cl_park_heap *h, uint32_t slot, int64_t at_us);
/* The earliest due time, INT64_MAX when empty. */
int64_t cl_park_peek(const struct cl_park_heap *h);
/* Removes and returns the earliest slot; the heap must not be empty. */
uint32_t cl_park_pop(struct cl_park_heap *h);

#endif
