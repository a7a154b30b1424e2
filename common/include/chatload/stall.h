/* Client stall episodes: stretches of time in which an agent could not run (SIGSTOP, a VM
 * pause, swap, a starved host), kept as a small bounded list that merges overlapping sightings
 * of the same stall.  docs/engine.md ("Client stalls") says how they are detected. */
#ifndef CHATLOAD_STALL_H
#define CHATLOAD_STALL_H

#include <stdint.h>

/*
 * A pacing expiry (or the control thread's wake-up) handled this much later than it was due
 * is a stall.  The engine's timers are due at least every 10 ms while a stage runs; on this
 * project's 2-core machines their lateness reached 72 ms with the test suite running beside
 * them and 108 ms with both its passes at once (four tests on two cores), so 250 ms never
 * fires on a machine that is merely busy, and still catches every freeze that distorts a
 * latency users care about (docs/engine.md, "Client stalls", has the figures).
 */
#define CL_STALL_MIN_US 250000

/* Episodes one list holds: a REPORT carries at most this many (docs/protocol.md). */
#define CL_STALLS_MAX 8

struct cl_stall {
	int64_t start_us;  /* when the stall began (a CLOCK_MONOTONIC reading; whose clock is the
			    * list owner's business) */
	int64_t length_us; /* > 0 */
};

/* Episodes in ascending start order, none overlapping.  A zeroed list is empty. */
struct cl_stall_list {
	uint32_t n;
	uint32_t dropped; /* episodes left out because the list was full (the shortest go) */
	struct cl_stall ep[CL_STALLS_MAX];
};

/*
 * Adds the episode [start_us, start_us + length_us).  One that overlaps or touches kept
 * episodes is merged with them (the same freeze seen by several threads, or by the same
 * thread twice); otherwise it is inserted in order.  When the list is full the shortest
 * episode (the new one included) is left out and counted in dropped.  length_us <= 0 is
 * ignored.  Never allocates.
 */
void cl_stall_list_add(struct cl_stall_list *l, int64_t start_us, int64_t length_us);

/* Adds every episode of src to dst (as cl_stall_list_add) and src's dropped count. */
void cl_stall_list_merge(struct cl_stall_list *dst, const struct cl_stall_list *src);

/* The longest episode's length, 0 when empty. */
int64_t cl_stall_list_longest_us(const struct cl_stall_list *l);

#endif
