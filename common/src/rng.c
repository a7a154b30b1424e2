/* Seeded pseudo-random numbers (see rng.h). */
#include "chatload/rng.h"

#include <math.h>

double cl_splitmix_normal(uint64_t *state)
{
	double u1 = cl_splitmix_unit(state), u2 = cl_splitmix_unit(state);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void cl_rng_seed(struct cl_rng *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = cl_splitmix64(&x);
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
