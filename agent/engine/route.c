/* Which endpoint a request goes to (target.urls, docs/engine.md "Several endpoints"). */
#include "route.h"

#include "chatload/rng.h"

#include <stddef.h>

uint32_t cl_route_pick(enum cl_route route, uint32_t n, uint64_t turn, const int64_t *outstanding,
		       uint64_t key)
{
	if (n <= 1)
		return 0;
	uint32_t start = (uint32_t)(turn % n);
	switch (route) {
	case CL_ROUTE_LEAST_OUTSTANDING: {
		uint32_t best = start;
		for (uint32_t k = 1; k < n; k++) {
			uint32_t i = (start + k) % n;
			if (outstanding[i] < outstanding[best])
				best = i;
		}
		return best;
	}
	case CL_ROUTE_SESSION_HASH:
		/* mixed first, so even keys that differ in their last digit only spread over
		 * the endpoints */
		return (uint32_t)(cl_mix64(key) % n);
	case CL_ROUTE_ROUND_ROBIN:
	default:
		return start;
	}
}

uint64_t cl_route_key(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}
