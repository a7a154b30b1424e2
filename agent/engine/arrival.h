/* Load-model arithmetic for one worker: a seeded RNG, arrival processes (constant, Poisson,
 * gamma) with a linear rate ramp, and the closed-loop concurrency ramp.  Pure: no clocks. */
#ifndef CHATLOAD_ARRIVAL_H
#define CHATLOAD_ARRIVAL_H

#include "chatload/plan.h"
#include "chatload/rng.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * An arrival process in "operational time": arrivals are spaced by gaps of mean 1 (constant
 * 1, exponential, or Gamma(k)/k) in Λ(t) = ∫ rate(t) dt, then mapped back to real time.
 * This gives a homogeneous process of the target rate and, during a linear ramp from r0 to
 * r1, the matching non-homogeneous one (time rescaling), with one formula.
 */
struct cl_arrivals {
	struct cl_rng rng;
	enum cl_arrival kind;
	double shape;     /* gamma k */
	double r0, r1;    /* arrivals per second at the start and the end of the ramp */
	double ramp_s;    /* ramp length, seconds (0: none) */
	int64_t start_us; /* t = 0 */
	double lambda;    /* operational time of the next arrival */
	double lambda_ramp_end;
};

/*
 * Prepares a process starting at start_us with rate rising linearly from r0 to r1 over
 * ramp_us, then r1.  phase (0..1) delays the first constant arrival by that fraction of a gap
 * (so W workers with equal constant rates interleave instead of firing together); Poisson
 * and gamma processes start with a random gap instead.
 */
void cl_arrivals_init(struct cl_arrivals *a, enum cl_arrival kind, double shape, double r0,
		      double r1, int64_t start_us, int64_t ramp_us, uint64_t seed, double phase);
/* The next arrival's time (µs, >= start_us, non-decreasing), without consuming it;
 * INT64_MAX when the rate is zero from then on. */
int64_t cl_arrivals_peek(const struct cl_arrivals *a);
/* Consumes the next arrival (draws the following gap). */
void cl_arrivals_advance(struct cl_arrivals *a);
/* Λ at t_us (expected arrivals since start) and its inverse, exposed for tests. */
double cl_arrivals_lambda_at(const struct cl_arrivals *a, int64_t t_us);
int64_t cl_arrivals_time_of(const struct cl_arrivals *a, double lambda);

/*
 * Closed-loop ramp: concurrency rises linearly from `from` to `to` over ramp_us after
 * start_us.  target = from + floor((to - from) * elapsed / ramp_us) during the ramp, `to`
 * after it (and `to` when from >= to or ramp_us <= 0).  level_due is the first moment the
 * target reaches `level` (start_us for levels <= from).
 */
uint32_t cl_ramp_target(int64_t start_us, int64_t ramp_us, uint32_t from, uint32_t to,
			int64_t now_us);
int64_t cl_ramp_level_due(int64_t start_us, int64_t ramp_us, uint32_t from, uint32_t to,
			  uint32_t level);

#endif
