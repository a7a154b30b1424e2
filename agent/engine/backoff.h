/* The closed loop's pause after requests that got no answer: a capped exponential delay per
 * stream slot, and the min-heap of slots waiting it out.  Pure: no clocks, no curl. */
#ifndef CHATLOAD_BACKOFF_H
#define CHATLOAD_BACKOFF_H

#include <stdint.h>

#include "chatload/err.h"

#define CL_BACKOFF_BASE_US 50000   /* after the first no-answer failure in a row */
#define CL_BACKOFF_CAP_US  1000000 /* never longer: one report interval (docs/engine.md) */

/*
 * The delay before a slot's next attempt after `streak` (>= 1) consecutive requests that got
 * no answer: min(CAP, BASE * 2^(streak-1)) scaled by a factor in [0.5, 1) taken from u in
 * [0, 1), so users that failed together do not all retry together.  streak 0 gives 0.
 */
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
