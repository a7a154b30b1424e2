/* Arrival processes, the seeded RNG behind them, and the closed-loop ramp (see arrival.h). */
#include "arrival.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void cl_rng_seed(struct cl_rng *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	r->have_spare = false;
	r->spare = 0;
}

uint64_t cl_rng_next(struct cl_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double cl_rng_uniform(struct cl_rng *r)
{
	/* 53 random bits, shifted by one so the result lies in (0, 1]. */
	return (double)((cl_rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

double cl_rng_normal(struct cl_rng *r)
{
	if (r->have_spare) {
		r->have_spare = false;
		return r->spare;
	}
	double u, v, s;
	do {
		u = 2.0 * cl_rng_uniform(r) - 1.0;
		v = 2.0 * cl_rng_uniform(r) - 1.0;
		s = u * u + v * v;
	} while (s >= 1.0 || s == 0.0);
	double f = sqrt(-2.0 * log(s) / s);
	r->spare = v * f;
	r->have_spare = true;
	return u * f;
}

double cl_rng_gamma(struct cl_rng *r, double k)
{
	if (!(k > 0))
		return 0;
	if (k < 1) {
		/* Gamma(k) = Gamma(k + 1) * U^(1/k) (Marsaglia-Tsang's boost for small shapes). */
		double g = cl_rng_gamma(r, k + 1.0);
		return g * pow(cl_rng_uniform(r), 1.0 / k);
	}
	double d = k - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x, v;
		do {
			x = cl_rng_normal(r);
			v = 1.0 + c * x;
		} while (v <= 0);
		v = v * v * v;
		double u = cl_rng_uniform(r);
		if (u < 1.0 - 0.0331 * (x * x) * (x * x))
			return d * v;
		if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
			return d * v;
	}
}

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
