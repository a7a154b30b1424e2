/* Tests of the stall-episode list: order, merging of overlapping sightings (one freeze seen by
 * several threads), the cap that keeps the longest, and merging lists. */
#include "chatload/stall.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void assert_ep(const struct cl_stall_list *l, uint32_t i, int64_t start, int64_t len)
{
	assert_true(i < l->n);
	if (l->ep[i].start_us != start || l->ep[i].length_us != len) {
		print_error("episode %u is [%lld +%lld], wanted [%lld +%lld]\n", i,
			    (long long)l->ep[i].start_us, (long long)l->ep[i].length_us,
			    (long long)start, (long long)len);
		fail();
	}
}

static void test_order_and_merge(void **state)
{
	struct cl_stall_list l = { 0 };
	cl_stall_list_add(&l, 5000, 100);
	cl_stall_list_add(&l, 1000, 100);
	cl_stall_list_add(&l, 3000, 100);
	assert_int_equal(l.n, 3);
	assert_ep(&l, 0, 1000, 100);
	assert_ep(&l, 1, 3000, 100);
	assert_ep(&l, 2, 5000, 100);
	/* One freeze seen by a worker (due 1050) and the control thread (due 990). */
	cl_stall_list_add(&l, 990, 150);
	assert_int_equal(l.n, 3);
	assert_ep(&l, 0, 990, 150);
	/* An episode bridging two kept ones swallows both. */
	cl_stall_list_add(&l, 3050, 2000);
	assert_int_equal(l.n, 2);
	assert_ep(&l, 1, 3000, 2100);
	/* Touching counts as the same stall; lengths <= 0 are ignored. */
	cl_stall_list_add(&l, 5100, 10);
	assert_ep(&l, 1, 3000, 2110);
	cl_stall_list_add(&l, 100, 0);
	cl_stall_list_add(&l, 100, -4);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.dropped, 0);
	assert_int_equal(cl_stall_list_longest_us(&l), 2110);
}

static void test_cap_keeps_longest(void **state)
{
	struct cl_stall_list l = { 0 };
	for (int i = 0; i < CL_STALLS_MAX; i++)
		cl_stall_list_add(&l, i * 1000000LL, 1000 + i);
	assert_int_equal(l.n, CL_STALLS_MAX);
	/* Shorter than all: left out, counted. */
	cl_stall_list_add(&l, 99000000, 10);
	assert_int_equal(l.n, CL_STALLS_MAX);
	assert_int_equal(l.dropped, 1);
	/* Longer: the shortest kept one (the first) goes, the list stays in order. */
	cl_stall_list_add(&l, 50000000, 5000);
	assert_int_equal(l.n, CL_STALLS_MAX);
	assert_int_equal(l.dropped, 2);
	assert_ep(&l, 0, 1000000, 1001);
	assert_ep(&l, CL_STALLS_MAX - 1, 50000000, 5000);
	for (uint32_t i = 1; i < l.n; i++)
		assert_true(l.ep[i - 1].start_us < l.ep[i].start_us);
	/* An episode at the far end of the clock does not overflow. */
	struct cl_stall_list e = { 0 };
	cl_stall_list_add(&e, INT64_MAX - 5, 100);
	assert_ep(&e, 0, INT64_MAX - 5, 5);
}

static void test_merge_lists(void **state)
{
	struct cl_stall_list a = { 0 }, b = { 0 };
	cl_stall_list_add(&a, 100, 50);
	cl_stall_list_add(&b, 120, 100);
	cl_stall_list_add(&b, 1000, 10);
	b.dropped = 4;
	cl_stall_list_merge(&a, &b);
	assert_int_equal(a.n, 2);
	assert_ep(&a, 0, 100, 120);
	assert_ep(&a, 1, 1000, 10);
	assert_int_equal(a.dropped, 4);
	b.dropped = UINT32_MAX;
	cl_stall_list_merge(&a, &b);
	assert_int_equal(a.dropped, UINT32_MAX);
	struct cl_stall_list empty = { 0 };
	assert_int_equal(cl_stall_list_longest_us(&empty), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_merge),
		cmocka_unit_test(test_cap_keeps_longest),
		cmocka_unit_test(test_merge_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
