/* The load-model arithmetic on its own: RNG, gamma sampler, arrival processes (constant,
 * Poisson, gamma) with and without a rate ramp, and the closed-loop concurrency ramp. */
#include "agent/engine/arrival.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "check.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov distance of sorted samples x against the exponential CDF. */
static double ks_exponential(double *x, size_t n, double rate)
{
	qsort(x, n, sizeof(*x), cmp_double);
	double d = 0;
	for (size_t i = 0; i < n; i++) {
		double f = 1.0 - exp(-rate * x[i]);
		double lo = f - (double)i / (double)n, hi = (double)(i + 1) / (double)n - f;
		if (lo > d)
			d = lo;
		if (hi > d)
			d = hi;
	}
	return d;
}

static void test_uniform_range_and_mean(void **state)
{
	struct cl_rng r;
	cl_rng_seed(&r, 7);
	double sum = 0;
	for (int i = 0; i < 1000000; i++) {
		double u = cl_rng_uniform(&r);
		check_cmpf(u, >, 0);
		check_cmpf(u, <=, 1);
		sum += u;
	}
	check_cmpf(fabs(sum / 1e6 - 0.5), <, 0.002);
}

static void test_seed_determinism(void **state)
{
	struct cl_rng a, b, c;
	cl_rng_seed(&a, 99);
	cl_rng_seed(&b, 99);
	cl_rng_seed(&c, 100);
	int same_c = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = cl_rng_next(&a), y = cl_rng_next(&b), z = cl_rng_next(&c);
		assert_int_equal(x, y);
		same_c += x == z;
	}
	assert_int_equal(same_c, 0);
}

static void test_gamma_moments(void **state)
{
	const double shapes[] = { 0.3, 1.0, 2.5, 9.0 };
	struct cl_rng r;
	cl_rng_seed(&r, 1234);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		double k = shapes[s], sum = 0, sq = 0;
		int n = 400000;
		for (int i = 0; i < n; i++) {
			double g = cl_rng_gamma(&r, k);
			check_cmp(g, >=, 0);
			sum += g;
			sq += g * g;
		}
		double mean = sum / n, var = sq / n - mean * mean;
		printf("  gamma k=%.1f: mean %.4f var %.4f\n", k, mean, var);
		check_cmpf(fabs(mean - k) / k, <, 0.01);
		check_cmpf(fabs(var - k) / k, <, 0.04);
	}
}

static void test_poisson_ks(void **state)
{
	struct cl_arrivals a;
	const double rate = 1000;
	cl_arrivals_init(&a, CL_ARRIVAL_POISSON, 1, rate, rate, 1000000, 0, 5, 0);
	size_t n = 20000;
	double *gaps = malloc(n * sizeof(*gaps));
	int64_t prev = 1000000;
	for (size_t i = 0; i < n; i++) {
		int64_t t = cl_arrivals_peek(&a);
		check_cmp(t, >=, prev);
		gaps[i] = (double)(t - prev) / 1e6;
		prev = t;
		cl_arrivals_advance(&a);
	}
	double d = ks_exponential(gaps, n, rate);
	double crit = 1.95 / sqrt((double)n); /* alpha = 0.001 */
	printf("  poisson: KS D = %.4f (critical %.4f)\n", d, crit);
	check_cmpf(d, <, crit);
	/* Count over 20000 arrivals: the last one lands near 20 s. */
	check_cmpf(fabs((double)(prev - 1000000) / 1e6 - 20.0), <, 20.0 * 4 / sqrt(20000.0));
	free(gaps);
}

static void test_constant_and_phase(void **state)
{
	struct cl_arrivals a, b;
	cl_arrivals_init(&a, CL_ARRIVAL_CONSTANT, 1, 200, 200, 0, 0, 1, 0);
	cl_arrivals_init(&b, CL_ARRIVAL_CONSTANT, 1, 200, 200, 0, 0, 1, 0.5);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(cl_arrivals_peek(&a), (int64_t)i * 5000);
		assert_int_equal(cl_arrivals_peek(&b), (int64_t)i * 5000 + 2500);
		cl_arrivals_advance(&a);
		cl_arrivals_advance(&b);
	}
}

static void test_gamma_arrivals_cv(void **state)
{
	struct cl_arrivals a;
	const double rate = 500, k = 0.25; /* CV = 1/sqrt(k) = 2 */
	cl_arrivals_init(&a, CL_ARRIVAL_GAMMA, k, rate, rate, 0, 0, 77, 0);
	size_t n = 100000;
	double sum = 0, sq = 0;
	int64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t t = cl_arrivals_peek(&a);
		double g = (double)(t - prev) / 1e6;
		prev = t;
		sum += g;
		sq += g * g;
		cl_arrivals_advance(&a);
	}
	double mean = sum / (double)n, cv = sqrt(sq / (double)n - mean * mean) / mean;
	printf("  gamma arrivals k=0.25: mean gap %.6f s (want %.6f), CV %.3f (want 2)\n", mean,
	       1 / rate, cv);
	check_cmpf(fabs(mean * rate - 1), <, 0.02);
	check_cmpf(fabs(cv - 2.0), <, 0.06);
}

static void test_rate_ramp(void **state)
{
	/* 0 -> 1000/s over 10 s: Λ(t) = 50 t^2 during the ramp, then 5000 + 1000 (t - 10). */
	struct cl_arrivals a;
	cl_arrivals_init(&a, CL_ARRIVAL_POISSON, 1, 0, 1000, 0, 10000000, 3, 0);
	check_cmpf(fabs(cl_arrivals_lambda_at(&a, 5000000) - 1250), <, 1e-6);
	check_cmpf(fabs(cl_arrivals_lambda_at(&a, 10000000) - 5000), <, 1e-6);
	check_cmpf(fabs(cl_arrivals_lambda_at(&a, 12000000) - 7000), <, 1e-6);
	for (int64_t t = 0; t <= 15000000; t += 123457)
		check_cmp(llabs(cl_arrivals_time_of(&a, cl_arrivals_lambda_at(&a, t)) - t), <=, 1);
	/* Arrivals counted over the ramp follow Λ: 1250 by 5 s, 5000 by 10 s (+-4 sigma). */
	size_t by5 = 0, by10 = 0;
	for (;;) {
		int64_t t = cl_arrivals_peek(&a);
		if (t >= 10000000)
			break;
		by5 += t < 5000000;
		by10++;
		cl_arrivals_advance(&a);
	}
	printf("  ramp 0->1000/s: %zu arrivals by 5 s (want 1250), %zu by 10 s (want 5000)\n", by5,
	       by10);
	check_cmpf(fabs((double)by5 - 1250), <, 4 * sqrt(1250.0));
	check_cmpf(fabs((double)by10 - 5000), <, 4 * sqrt(5000.0));

	/* A flat "ramp" (r0 == r1) must equal no ramp (no 0/0 in the inverse). */
	struct cl_arrivals f;
	cl_arrivals_init(&f, CL_ARRIVAL_CONSTANT, 1, 100, 100, 0, 1000000, 1, 0);
	for (int i = 0; i < 200; i++) {
		check_cmp(llabs(cl_arrivals_peek(&f) - (int64_t)i * 10000), <=, 1);
		cl_arrivals_advance(&f);
	}
	/* A zero rate never arrives. */
	struct cl_arrivals z;
	cl_arrivals_init(&z, CL_ARRIVAL_POISSON, 1, 0, 0, 0, 0, 1, 0);
	check_cmp(cl_arrivals_peek(&z), ==, INT64_MAX);
}

static void test_closed_ramp(void **state)
{
	const int64_t s = 1000000, ramp = 1000000;
	/* 2 -> 10 over 1 s: one more stream every 125 ms. */
	assert_int_equal(cl_ramp_target(s, ramp, 2, 10, s - 5), 2);
	assert_int_equal(cl_ramp_target(s, ramp, 2, 10, s), 2);
	assert_int_equal(cl_ramp_target(s, ramp, 2, 10, s + 124999), 2);
	assert_int_equal(cl_ramp_target(s, ramp, 2, 10, s + 125000), 3);
	assert_int_equal(cl_ramp_target(s, ramp, 2, 10, s + ramp), 10);
	assert_int_equal(cl_ramp_target(s, ramp, 2, 10, s + 5 * ramp), 10);
	for (uint32_t l = 1; l <= 10; l++) {
		int64_t due = cl_ramp_level_due(s, ramp, 2, 10, l);
		check_cmp(cl_ramp_target(s, ramp, 2, 10, due), >=, l);
		if (l > 2) {
			check_cmp(cl_ramp_target(s, ramp, 2, 10, due - 1), <, l);
			assert_int_equal(due, s + (int64_t)(l - 2) * 125000);
		} else {
			assert_int_equal(due, s);
		}
	}
	check_cmp(cl_ramp_level_due(s, ramp, 2, 10, 11), ==, INT64_MAX);
	/* No ramp: everything at once. */
	assert_int_equal(cl_ramp_target(s, 0, 0, 7, s), 7);
	assert_int_equal(cl_ramp_level_due(s, 0, 0, 7, 7), s);
	/* Uneven steps: 0 -> 3 over 1 s -> levels at ceil(k/3 s). */
	assert_int_equal(cl_ramp_level_due(0, 1000000, 0, 3, 1), 333334);
	assert_int_equal(cl_ramp_target(0, 1000000, 0, 3, 333333), 0);
	assert_int_equal(cl_ramp_target(0, 1000000, 0, 3, 333334), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uniform_range_and_mean),
		cmocka_unit_test(test_seed_determinism),
		cmocka_unit_test(test_gamma_moments),
		cmocka_unit_test(test_poisson_ks),
		cmocka_unit_test(test_constant_and_phase),
		cmocka_unit_test(test_gamma_arrivals_cv),
		cmocka_unit_test(test_rate_ramp),
		cmocka_unit_test(test_closed_ramp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
