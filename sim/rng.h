/* chatload-sim's seeded random numbers: one independent splitmix64 sequence per request, drawn
 * with chatload/rng.h's primitives. */
#ifndef CHATLOAD_SIM_RNG_H
#define CHATLOAD_SIM_RNG_H

#include <math.h>
#include <stdint.h>

#include "chatload/rng.h"

/* The state of request number seq under seed: depends on nothing else, so a request's
 * length, jitter and fault are the same whatever else the server is doing. */
static inline uint64_t cl_sim_rng_for(uint64_t seed, uint64_t seq)
{
	uint64_t s = seed ^ (seq * 0xd1b54a32d192ed03ULL);
	cl_splitmix64(&s);
	return s;
}

/* v scaled by a factor uniform in [1 - jitter, 1 + jitter); v itself when jitter is 0. */
static inline int64_t cl_sim_rng_jitter(uint64_t *state, int64_t v, double jitter)
{
	if (jitter <= 0 || v <= 0)
		return v;
	double f = 1.0 + jitter * (2.0 * cl_splitmix_frac(state) - 1.0);
	return (int64_t)llround((double)v * f);
}

#endif
