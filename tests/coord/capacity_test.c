/* The capacity search's decisions against servers whose limit is known: the probe sequence
 * (doubling, then bisecting), the bracket it ends with, limits at and past both ends, a
 * relative tolerance over rate, an untrusted probe; the knee; the plan's arithmetic. */
#include "coordinator/results/capacity.h"

#include "coordinator/results/results.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

/* Runs a search against a server that meets the SLOs up to `limit`; returns the state. */
static enum cl_capacity_state search(const struct cl_scn_search *q, double limit,
				     struct cl_capacity *c)
{
	cl_capacity_init(c, q);
	double level;
	while (cl_capacity_next(c, &level)) {
		struct cl_capacity_probe p = { .level = level,
					       .stage = c->n,
					       .pass = level <= limit,
					       .trusted = true,
					       .requests_per_s = fmin(level, limit) };
		cl_capacity_record(c, &p, NULL);
	}
	return c->state;
}

static void test_doubling_then_bisecting(void **state)
{
	(void)state;
	struct cl_scn_search q = {
		.over = CL_MODE_CONCURRENCY, .from = 1, .max = 64, .tolerance = 1
	};
	struct cl_capacity c;
	assert_int_equal(search(&q, 8, &c), CL_CAP_FOUND);
	static const double want[] = { 1, 2, 4, 8, 16, 12, 10, 9 };
	assert_int_equal(c.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < c.n; i++)
		assert_true(c.probes[i].level == want[i]);
	assert_true(c.lo == 8 && c.hi == 9);
}

static void test_every_limit_is_found_exactly(void **state)
{
	(void)state;
	struct cl_scn_search q = {
		.over = CL_MODE_CONCURRENCY, .from = 1, .max = 64, .tolerance = 1
	};
	for (int limit = 1; limit < 64; limit++) {
		struct cl_capacity c;
		assert_int_equal(search(&q, limit, &c), CL_CAP_FOUND);
		if (c.lo != limit || c.hi != limit + 1)
			fail_msg("limit %d: bracket [%g, %g]", limit, c.lo, c.hi);
		/* log2(64) + 1 up, at most log2(32) down */
		assert_true(c.n <= 7 + 5);
	}
	struct cl_capacity c;
	assert_int_equal(search(&q, 64, &c), CL_CAP_AT_MAX);
	assert_true(c.lo == 64 && c.hi == 0);
	assert_int_equal(search(&q, 1000, &c), CL_CAP_AT_MAX);
	assert_int_equal(search(&q, 0.5, &c), CL_CAP_BELOW_FROM);
	assert_int_equal(c.n, 1);
	assert_true(c.lo == 0 && c.hi == 1);
}

static void test_a_wide_tolerance_stops_sooner(void **state)
{
	(void)state;
	struct cl_scn_search q = {
		.over = CL_MODE_CONCURRENCY, .from = 1, .max = 256, .tolerance = 8
	};
	struct cl_capacity c;
	assert_int_equal(search(&q, 100, &c), CL_CAP_FOUND);
	assert_true(c.lo <= 100 && c.hi > 100);
	assert_true(c.hi - c.lo <= 8);
	assert_true(c.n < 12);
}

static void test_a_failing_first_probe_bisects_down(void **state)
{
	(void)state;
	struct cl_scn_search q = {
		.over = CL_MODE_CONCURRENCY, .from = 8, .max = 64, .tolerance = 1
	};
	struct cl_capacity c;
	assert_int_equal(search(&q, 3, &c), CL_CAP_FOUND);
	static const double want[] = { 8, 4, 2, 3 };
	assert_int_equal(c.n, 4);
	for (size_t i = 0; i < c.n; i++)
		assert_true(c.probes[i].level == want[i]);
	assert_true(c.lo == 3 && c.hi == 4);
}

static void test_rate_with_a_relative_tolerance(void **state)
{
	(void)state;
	struct cl_scn_search q = { .over = CL_MODE_RATE,
				   .from = 1,
				   .max = 1000,
				   .tolerance = 0.05,
				   .tolerance_relative = true };
	struct cl_capacity c;
	assert_int_equal(search(&q, 37.3, &c), CL_CAP_FOUND);
	assert_true(c.lo <= 37.3 && c.hi > 37.3);
	assert_true(c.hi - c.lo <= 0.05 * c.hi + 1e-9);
	/* Rates are rounded to 3 significant digits when that stays inside the bracket. */
	for (size_t i = 0; i < c.n; i++) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%g", c.probes[i].level);
		assert_true(strlen(buf) <= 5);
	}
}

static void test_an_untrusted_probe_stops_the_search(void **state)
{
	(void)state;
	struct cl_scn_search q = {
		.over = CL_MODE_CONCURRENCY, .from = 1, .max = 64, .tolerance = 1
	};
	struct cl_capacity c;
	cl_capacity_init(&c, &q);
	double level;
	assert_true(cl_capacity_next(&c, &level) && level == 1);
	cl_capacity_record(
	    &c, &(struct cl_capacity_probe){ .level = 1, .pass = true, .trusted = true }, NULL);
	assert_true(cl_capacity_next(&c, &level) && level == 2);
	cl_capacity_record(
	    &c, &(struct cl_capacity_probe){ .level = 2, .pass = true, .trusted = false },
	    "probe 'x' was client-bound (cpu)");
	assert_false(cl_capacity_next(&c, &level));
	assert_int_equal(c.state, CL_CAP_STOPPED);
	assert_string_equal(c.stop_reason, "probe 'x' was client-bound (cpu)");
	assert_true(c.lo == 1); /* the untrusted pass does not count */
}

static void test_knee(void **state)
{
	(void)state;
	/* linear to 8, flat after: the knee is 8, whatever the order of the points */
	double x[] = { 16, 1, 4, 12, 2, 8, 10, 9 };
	double y[] = { 800, 100, 400, 801, 200, 800, 799, 802 };
	long k = cl_capacity_knee(x, y, 8);
	assert_true(k >= 0);
	assert_true(x[k] == 8);
	/* a gentle bend: Kneedle picks the point furthest above the chord */
	double x2[] = { 1, 2, 4, 8, 16, 32 };
	double y2[] = { 10, 19, 35, 60, 80, 88 };
	k = cl_capacity_knee(x2, y2, 6);
	assert_true(k >= 0 && x2[k] == 8);
	/* flat, too few, or straight: none */
	double flat[] = { 100, 101, 99, 100 };
	assert_int_equal(cl_capacity_knee(x, flat, 4), -1);
	assert_int_equal(cl_capacity_knee(x, y, 2), -1);
	double line[] = { 1, 2, 3, 4 };
	assert_int_equal(cl_capacity_knee(line, line, 4), -1);
}

static void test_plan(void **state)
{
	(void)state;
	struct cl_capacity_plan p;
	/* 80 req/s per server at 8 streams; agents at 0.75% CPU per stream, 2 cores each */
	assert_true(cl_capacity_plan(500, 80, 8, 0.75, 200, &p));
	assert_int_equal(p.servers, 7);
	assert_true(fabs(p.servers_exact - 6.25) < 1e-9);
	assert_true(fabs(p.streams - 50) < 1e-9);
	assert_true(fabs(p.agent_cpu_pct - 37.5) < 1e-9);
	assert_int_equal(p.agents, 1);
	/* exact multiples do not round up */
	assert_true(cl_capacity_plan(500, 50, 8, 10, 100, &p));
	assert_int_equal(p.servers, 10);
	/* 80 streams at 10% each = 800% of CPU; an agent may use 85% of its 100%: 10 agents */
	assert_int_equal(p.agents, 10);
	/* unknown CPU figures: servers only */
	assert_true(cl_capacity_plan(500, 50, 8, NAN, 200, &p));
	assert_int_equal(p.agents, 0);
	assert_false(cl_capacity_plan(500, 0, 8, 1, 100, &p));
	assert_false(cl_capacity_plan(0, 10, 8, 1, 100, &p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doubling_then_bisecting),
		cmocka_unit_test(test_every_limit_is_found_exactly),
		cmocka_unit_test(test_a_wide_tolerance_stops_sooner),
		cmocka_unit_test(test_a_failing_first_probe_bisects_down),
		cmocka_unit_test(test_rate_with_a_relative_tolerance),
		cmocka_unit_test(test_an_untrusted_probe_stops_the_search),
		cmocka_unit_test(test_knee),
		cmocka_unit_test(test_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
