/* chatload-sim's seeded random numbers: splitmix64, one independent sequence per request. */
#ifndef CHATLOAD_SIM_RNG_H
#define CHATLOAD_SIM_RNG_H

#include <math.h>
#include <stdint.h>

#include "chatload/rng.h"

/* Next 64 random bits from *state. */
static inline uint64_t cl_sim_rng_next(uint64_t *state)
{
	return cl_splitmix64(state);
}

/* The state of request number seq under seed: depends on nothing else, so a request's
 * length, jitter and fault are the same whatever else the server is doing. */
static inline uint64_t cl_sim_rng_for(uint64_t seed, uint64_t seq)
{
	uint64_t s = seed ^ (seq * 0xd1b54a32d192ed03ULL);
	cl_sim_rng_next(&s);
	return s;
}

/* Uniform in [0, 1). */
static inline double cl_sim_rng_unit(uint64_t *state)
{
	return (double)(cl_sim_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Standard normal (Box-Muller). */
static inline double cl_sim_rng_normal(uint64_t *state)
{
	double u1 = cl_sim_rng_unit(state);
	double u2 = cl_sim_rng_unit(state);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* v scaled by a factor uniform in [1 - jitter, 1 + jitter]; v itself when jitter is 0. */
static inline int64_t cl_sim_rng_jitter(uint64_t *state, int64_t v, double jitter)
{
	if (jitter <= 0 || v <= 0)
		return v;
	double f = 1.0 + jitter * (2.0 * cl_sim_rng_unit(state) - 1.0);
	return (int64_t)llround((double)v * f);
}

#endif
