/* Arrival processes, the seeded RNG behind them, and the closed-loop ramp (see arrival.h). */
#include "arrival.h"

#include <math.h>

/* One gap in operational time: mean 1 for every kind. */
static double gap(struct cl_arrivals *a)
{
	switch (a->kind) {
	case CL_ARRIVAL_POISSON:
		return -log(cl_rng_uniform(&a->rng));
	case CL_ARRIVAL_GAMMA:
		return cl_rng_gamma(&a->rng, a->shape) / a->shape;
	case CL_ARRIVAL_CONSTANT:
		break;
	}
	return 1.0;
}

void cl_arrivals_init(struct cl_arrivals *a, enum cl_arrival kind, double shape, double r0,
		      double r1, int64_t start_us, int64_t ramp_us, uint64_t seed, double phase)
{
	cl_rng_seed(&a->rng, seed);
	a->kind = kind;
	a->shape = shape > 0 ? shape : 1.0;
	a->r0 = r0 > 0 ? r0 : 0;
	a->r1 = r1 > 0 ? r1 : 0;
	a->ramp_s = ramp_us > 0 ? (double)ramp_us / 1e6 : 0;
	a->start_us = start_us;
	a->lambda_ramp_end = a->ramp_s * (a->r0 + a->r1) / 2.0;
	if (phase < 0 || phase >= 1)
		phase = 0;
	a->lambda = kind == CL_ARRIVAL_CONSTANT ? phase : gap(a);
}

double cl_arrivals_lambda_at(const struct cl_arrivals *a, int64_t t_us)
{
	double u = (double)(t_us - a->start_us) / 1e6;
	if (u <= 0)
		return 0;
	if (u < a->ramp_s)
		return a->r0 * u + (a->r1 - a->r0) * u * u / (2.0 * a->ramp_s);
	return a->lambda_ramp_end + a->r1 * (u - a->ramp_s);
}

int64_t cl_arrivals_time_of(const struct cl_arrivals *a, double lambda)
{
	double u;
	if (lambda <= 0) {
		u = 0;
	} else if (lambda < a->lambda_ramp_end) {
		/*
		 * Solve r0 u + (r1 - r0) u^2 / (2T) = lambda.  Written as 2λ / (r0 + sqrt(disc))
		 * rather than the textbook root, so it stays exact when r1 ≈ r0 (no 0/0).
		 */
		double qa = (a->r1 - a->r0) / (2.0 * a->ramp_s);
		double disc = a->r0 * a->r0 + 4.0 * qa * lambda;
		double den = a->r0 + sqrt(disc > 0 ? disc : 0);
		u = den > 0 ? 2.0 * lambda / den : a->ramp_s;
	} else {
		if (a->r1 <= 0)
			return INT64_MAX;
		u = a->ramp_s + (lambda - a->lambda_ramp_end) / a->r1;
	}
	double t = (double)a->start_us + u * 1e6;
	if (!(t < 9.0e18))
		return INT64_MAX;
	return (int64_t)llround(t);
}

int64_t cl_arrivals_peek(const struct cl_arrivals *a)
{
	return cl_arrivals_time_of(a, a->lambda);
}

void cl_arrivals_advance(struct cl_arrivals *a)
{
	a->lambda += gap(a);
}

uint32_t cl_ramp_target(int64_t start_us, int64_t ramp_us, uint32_t from, uint32_t to,
			int64_t now_us)
{
	if (ramp_us <= 0 || from >= to || now_us >= start_us + ramp_us)
		return to;
	if (now_us <= start_us)
		return from;
	__int128 step = (__int128)(to - from) * (now_us - start_us) / ramp_us;
	return from + (uint32_t)step;
}

int64_t cl_ramp_level_due(int64_t start_us, int64_t ramp_us, uint32_t from, uint32_t to,
			  uint32_t level)
{
	if (level <= from || ramp_us <= 0 || from >= to)
		return level <= to || level <= from ? start_us : INT64_MAX;
	if (level > to)
		return INT64_MAX;
	__int128 num = (__int128)(level - from) * ramp_us;
	__int128 den = to - from;
	return start_us + (int64_t)((num + den - 1) / den);
}
