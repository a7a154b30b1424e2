/* Which endpoint a request goes to (target.urls): round robin in turn, least outstanding
 * with rotating ties, session hash stable per key and spread over the endpoints. */
#include "agent/engine/route.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void round_robin_in_turn(void **state)
{
	(void)state;
	uint32_t count[3] = { 0 };
	for (uint64_t t = 0; t < 300; t++) {
		uint32_t i = cl_route_pick(CL_ROUTE_ROUND_ROBIN, 3, t, NULL, 0);
		assert_int_equal(i, t % 3);
		count[i]++;
	}
	assert_int_equal(count[0], 100);
	assert_int_equal(count[2], 100);
	/* one endpoint: always the first, whatever the route */
	assert_int_equal(cl_route_pick(CL_ROUTE_SESSION_HASH, 1, 7, NULL, 12345), 0);
}

static void least_outstanding_and_ties(void **state)
{
	(void)state;
	int64_t out[4] = { 3, 1, 2, 1 };
	/* the fewest in flight wins; of the two with 1, the first at or after turn % n */
	assert_int_equal(cl_route_pick(CL_ROUTE_LEAST_OUTSTANDING, 4, 0, out, 0), 1);
	assert_int_equal(cl_route_pick(CL_ROUTE_LEAST_OUTSTANDING, 4, 2, out, 0), 3);
	assert_int_equal(cl_route_pick(CL_ROUTE_LEAST_OUTSTANDING, 4, 3, out, 0), 3);
	int64_t even[3] = { 5, 5, 5 };
	for (uint64_t t = 0; t < 9; t++)
		assert_int_equal(cl_route_pick(CL_ROUTE_LEAST_OUTSTANDING, 3, t, even, 0), t % 3);
	/* a slow endpoint that holds its requests gets fewer new ones */
	int64_t busy[2] = { 0, 0 };
	uint32_t got[2] = { 0 };
	for (uint64_t t = 0; t < 100; t++) {
		uint32_t i = cl_route_pick(CL_ROUTE_LEAST_OUTSTANDING, 2, t, busy, 0);
		got[i]++;
		busy[i]++;
		if (i == 0)
			busy[0]--; /* endpoint 0 answers at once */
	}
	assert_true(got[0] >= 98);
}

static void session_hash_stable_and_spread(void **state)
{
	(void)state;
	uint32_t count[4] = { 0 };
	char id[64];
	for (int k = 0; k < 4000; k++) {
		int n = snprintf(id, sizeof(id), "a%d-%d-%d", 1 + k % 3, k % 2, k);
		uint64_t key = cl_route_key(id, (size_t)n);
		uint32_t i = cl_route_pick(CL_ROUTE_SESSION_HASH, 4, (uint64_t)k, NULL, key);
		/* the turn does not matter: every turn of a conversation goes to one endpoint */
		for (uint64_t t = 0; t < 5; t++)
			assert_int_equal(cl_route_pick(CL_ROUTE_SESSION_HASH, 4, t * 7919, NULL, key),
					 i);
		count[i]++;
	}
	for (int i = 0; i < 4; i++)
		assert_in_range(count[i], 900, 1100); /* 1000 each, ~4.5 sd */
	/* FNV-1a 64 of a known string */
	assert_true(cl_route_key("a", 1) == 0xaf63dc4c8601ec8cULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_robin_in_turn),
		cmocka_unit_test(least_outstanding_and_ties),
		cmocka_unit_test(session_hash_stable_and_spread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
