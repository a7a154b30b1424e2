/* The step detector of chatload history on constructed series: no step, one outlier, a step
 * at the latest night, a step some nights ago that persisted, the practical limit, the
 * noise (the nights' spread and their ci95), missing nights, the error rate's floor and the
 * baseline window. */
#include "coordinator/report/history.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#define MAXN 32

/* Lower is better (a latency), 5 % limit, a window of 7 nights. */
static const struct cl_history_rule latency = { false, 0.05, 0, 7 };
static const struct cl_history_rule throughput = { true, 0.05, 0, 7 };

static struct cl_history_night out[MAXN];

/* Runs the detector on v (halves all h) and returns the latest label. */
static enum cl_history_label run(const double *v, size_t n, double h,
				 const struct cl_history_rule *rule)
{
	double half[MAXN];
	assert_true(n <= MAXN);
	for (size_t i = 0; i < n; i++)
		half[i] = h;
	return cl_history_detect(v, half, n, rule, out);
}

static void expect_labels(const enum cl_history_label *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (out[i].label != want[i])
			fail_msg("night %zu: label %s, expected %s", i,
				 cl_history_label_name(out[i].label), cl_history_label_name(want[i]));
	}
}

#define L CL_HISTORY_LEARNING
#define N CL_HISTORY_NORMAL
#define O CL_HISTORY_OUTLIER
#define S CL_HISTORY_STEP
#define X CL_HISTORY_NA

static void test_no_step(void **state)
{
	(void)state;
	/* Nights within ±2 % of 100: every night normal. */
	const double v[] = { 100, 102, 99, 101, 100, 98, 101, 100.5 };
	const enum cl_history_label want[] = { L, L, L, N, N, N, N, N };
	assert_int_equal(run(v, 8, 1.0, &latency), N);
	expect_labels(want, 8);
	assert_true(fabs(out[7].expected - 100) < 1.01);
	assert_true(out[7].low < 100 && out[7].high > 100);
}

static void test_one_outlier(void **state)
{
	(void)state;
	/* One night 30 % slower, then back: an outlier, and the latest night is normal. */
	const double v[] = { 100, 101, 99, 100, 130, 100, 101 };
	const enum cl_history_label want[] = { L, L, L, N, O, N, N };
	assert_int_equal(run(v, 7, 1.0, &latency), N);
	expect_labels(want, 7);
	assert_int_equal(out[4].direction, +1);
	/* The outlier is not part of the baseline of the nights after it. */
	assert_true(out[6].high < 110);
}

static void test_step_at_latest(void **state)
{
	(void)state;
	const double v[] = { 100, 101, 99, 100, 101, 120 };
	const enum cl_history_label want[] = { L, L, L, N, N, S };
	assert_int_equal(run(v, 6, 1.0, &latency), S);
	expect_labels(want, 6);
	assert_int_equal(out[5].direction, +1);
	assert_true(out[5].expected >= 99 && out[5].expected <= 101);

	/* Throughput, higher better: a drop is worse, a rise is better. */
	const double t[] = { 640, 645, 638, 642, 600 };
	assert_int_equal(run(t, 5, 3.0, &throughput), S);
	assert_int_equal(out[4].direction, +1);
	const double u[] = { 640, 645, 638, 642, 700 };
	assert_int_equal(run(u, 5, 3.0, &throughput), S);
	assert_int_equal(out[4].direction, -1);
}

static void test_step_that_persisted(void **state)
{
	(void)state;
	/* The level rose two nights before the latest and stayed: the step is at that night,
	 * and the nights after it build the new level's baseline. */
	const double v[] = { 100, 101, 99, 100, 120, 121, 119 };
	const enum cl_history_label want[] = { L, L, L, N, S, L, L };
	assert_int_equal(run(v, 7, 1.0, &latency), L);
	expect_labels(want, 7);
	assert_int_equal(out[4].direction, +1);
	assert_true(out[6].expected >= 119 && out[6].expected <= 121);
	/* One night after the step is enough to confirm it. */
	const double w[] = { 100, 101, 99, 100, 120, 121 };
	const enum cl_history_label want_w[] = { L, L, L, N, S, L };
	assert_int_equal(run(w, 6, 1.0, &latency), L);
	expect_labels(want_w, 6);
	/* Three nights on the new level, and the next is judged against it: normal at 120,
	 * where the old level would have called it 20 % worse. */
	const double x[] = { 100, 101, 99, 100, 120, 121, 119, 120 };
	assert_int_equal(run(x, 8, 1.0, &latency), N);
	assert_int_equal(out[7].baseline, 3);
	assert_true(out[7].expected >= 119 && out[7].expected <= 121);
}

static void test_limit_and_noise(void **state)
{
	(void)state;
	/* No spread and no ci95: the limit alone decides, 5 % of 100. */
	const double a[] = { 100, 100, 100, 104 };
	assert_int_equal(run(a, 4, NAN, &latency), N);
	assert_true(fabs(out[3].low - 95) < 1e-9 && fabs(out[3].high - 105) < 1e-9);
	const double b[] = { 100, 100, 100, 106 };
	assert_int_equal(run(b, 4, NAN, &latency), S);
	/* 10 % worse but each night's ci95 is ±20: within the noise. */
	const double c[] = { 100, 100, 100, 110 };
	assert_int_equal(run(c, 4, 20.0, &latency), N);
	assert_true(out[3].noise > 10);
	/* 10 % worse, nights that wander by ±20 % (robust spread): within the noise. */
	const double d[] = { 100, 120, 85, 110, 95, 125, 90, 112 };
	assert_int_equal(run(d, 8, 1.0, &latency), N);
	/* A tiny change with tiny noise is not a step either: the practical limit. */
	const double e[] = { 100, 100.1, 99.9, 100, 103 };
	assert_int_equal(run(e, 5, 0.05, &latency), N);
}

static void test_missing_nights(void **state)
{
	(void)state;
	const double v[] = { 100, NAN, 101, 99, NAN, 120 };
	const enum cl_history_label want[] = { L, X, L, L, X, S };
	assert_int_equal(run(v, 6, 1.0, &latency), S);
	expect_labels(want, 6);
	assert_int_equal(out[5].baseline, 3);
	/* A latest night without the figure: the newest night that has it speaks. */
	const double w[] = { 100, 101, 99, 100, NAN };
	assert_int_equal(run(w, 5, 1.0, &latency), N);
	const double none[] = { NAN, NAN };
	assert_int_equal(run(none, 2, 1.0, &latency), X);
	assert_int_equal(cl_history_detect(NULL, NULL, 0, &latency, NULL), X);
}

static void test_error_rate_floor(void **state)
{
	(void)state;
	/* A share: a rise from 0 must also clear 0.1 percentage point. */
	const struct cl_history_rule rate = { false, 0.05, 0.001, 7 };
	const double a[] = { 0, 0, 0, 0.0005 };
	assert_int_equal(run(a, 4, NAN, &rate), N);
	const double b[] = { 0, 0, 0, 0.01 };
	assert_int_equal(run(b, 4, NAN, &rate), S);
}

static void test_window(void **state)
{
	(void)state;
	/* The level halved (better) and stayed: the step is at night 3, and with a window of 3
	 * the latest night's baseline is the new level only. */
	const struct cl_history_rule w3 = { false, 0.05, 0, 3 };
	const double v[] = { 200, 200, 200, 100, 100, 100, 100 };
	const enum cl_history_label want[] = { L, L, L, S, L, L, N };
	assert_int_equal(run(v, 7, 1.0, &w3), N);
	expect_labels(want, 7);
	assert_int_equal(out[3].direction, -1);
	assert_int_equal(out[6].baseline, 3);
	assert_true(fabs(out[6].expected - 100) < 1e-9);
	/* A window of 1 is taken as the least a baseline needs, 3 nights. */
	const struct cl_history_rule w1 = { false, 0.05, 0, 1 };
	const double f[] = { 100, 100, 100, 100, 100 };
	assert_int_equal(run(f, 5, 1.0, &w1), N);
	assert_int_equal(out[4].baseline, 3);
	/* Two nights, however different, are not judged: learning. */
	const double g[] = { 100, 300 };
	assert_int_equal(run(g, 2, NAN, &latency), L);
}

static void test_outlier_then_step(void **state)
{
	(void)state;
	/* An outlier for the better, then a real step for the worse at the latest night. */
	const double v[] = { 100, 101, 99, 100, 70, 100, 101, 125 };
	const enum cl_history_label want[] = { L, L, L, N, O, N, N, S };
	assert_int_equal(run(v, 8, 1.0, &latency), S);
	expect_labels(want, 8);
	assert_int_equal(out[4].direction, -1);
	assert_int_equal(out[7].direction, +1);
	assert_string_equal(cl_history_label_name(CL_HISTORY_OUTLIER), "outlier");
	assert_string_equal(cl_history_label_name((enum cl_history_label)99), "n/a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_step),
		cmocka_unit_test(test_one_outlier),
		cmocka_unit_test(test_step_at_latest),
		cmocka_unit_test(test_step_that_persisted),
		cmocka_unit_test(test_limit_and_noise),
		cmocka_unit_test(test_missing_nights),
		cmocka_unit_test(test_error_rate_floor),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_outlier_then_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
