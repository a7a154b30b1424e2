/* Seeded pseudo-random numbers: the one copy of splitmix64 and xoshiro256** in chatload. */
#ifndef CHATLOAD_RNG_H
#define CHATLOAD_RNG_H

#include <stdbool.h>
#include <stdint.h>

/*
 * splitmix64 (Steele, Lea, Flood 2014): one word of state, every output well mixed.  Used
 * where a small stateless-looking stream is wanted (a request's lengths, a backoff draw, the
 * simulator's per-request sequence) and to seed xoshiro.  Advances *state.
 */
/* splitmix64's finaliser alone: every bit of z moves every bit of the result (a hash's last
 * step: endpoint routes, the generate job's id set). */
static inline uint64_t cl_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t cl_splitmix64(uint64_t *state)
{
	return cl_mix64(*state += 0x9e3779b97f4a7c15ull);
}

/* The i-th of a family of well-separated seeds derived from one seed (pure). */
static inline uint64_t cl_seed_derive(uint64_t seed, uint64_t i)
{
	uint64_t s = seed + i * 0x9e3779b97f4a7c15ull;
	return cl_splitmix64(&s);
}

/* Uniform in (0, 1] from a splitmix64 state: never 0, so log() of it is finite. */
static inline double cl_splitmix_unit(uint64_t *state)
{
	return (double)((cl_splitmix64(state) >> 11) + 1) * 0x1.0p-53;
}

/* Uniform in [0, 1) from a splitmix64 state: may be 0, never 1, so u < p holds for every draw
 * when p is 1 and for none when p is 0 (a probability), and a + (b - a) * u stays below b.
 * The same 53 bits as cl_splitmix_unit, 2^-53 lower. */
static inline double cl_splitmix_frac(uint64_t *state)
{
	return (double)(cl_splitmix64(state) >> 11) * 0x1.0p-53;
}

/* Standard normal from a splitmix64 state (Box-Muller; the pair's second value is dropped). */
double cl_splitmix_normal(uint64_t *state);

/* xoshiro256** seeded through splitmix64: fast, 2^256 period; the load models' generator. */
struct cl_rng {
	uint64_t s[4];
	bool have_spare; /* the polar method makes normals in pairs */
	double spare;
};

void cl_rng_seed(struct cl_rng *r, uint64_t seed);
uint64_t cl_rng_next(struct cl_rng *r);
/* Uniform in (0, 1]: never 0, so log() of it is finite. */
double cl_rng_uniform(struct cl_rng *r);
/* Standard normal (polar method). */
double cl_rng_normal(struct cl_rng *r);
/* Gamma(shape k > 0, scale 1): mean k, variance k (Marsaglia-Tsang; k < 1 by boosting). */
double cl_rng_gamma(struct cl_rng *r, double k);

#endif
