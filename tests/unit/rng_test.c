/* Tests of the splitmix64 draws in chatload/rng.h that the simulator, the workload synthesizer
 * and the engine's backoff share: the two unit intervals at their very ends, their relation,
 * and the normal draw's moments. */
#include "chatload/rng.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* States whose next splitmix64 output is 0 and 2^64 - 1 (found by inverting its mix). */
#define STATE_OUT_ZERO 0x61c8864680b583ebull
#define STATE_OUT_ONES 0x31628af67b2131abull

static void test_extremes(void **state)
{
	(void)state;
	uint64_t s = STATE_OUT_ZERO;
	uint64_t t = s;
	assert_true(cl_splitmix64(&t) == 0);
	s = STATE_OUT_ZERO;
	double f = cl_splitmix_frac(&s);
	s = STATE_OUT_ZERO;
	double u = cl_splitmix_unit(&s);
	if (f != 0.0 || u != 0x1.0p-53) {
		print_error("output 0: frac %a (wanted 0), unit %a (wanted 0x1p-53)\n", f, u);
		fail();
	}
	t = STATE_OUT_ONES;
	assert_true(cl_splitmix64(&t) == UINT64_MAX);
	s = STATE_OUT_ONES;
	f = cl_splitmix_frac(&s);
	s = STATE_OUT_ONES;
	u = cl_splitmix_unit(&s);
	if (f != 1.0 - 0x1.0p-53 || u != 1.0) {
		print_error("output 2^64-1: frac %a (wanted 1 - 2^-53), unit %a (wanted 1)\n", f,
			    u);
		fail();
	}
}

/* frac is [0, 1), unit (0, 1], from the same bits: unit - frac is exactly 2^-53, and both
 * advance the state alike. */
static void test_frac_and_unit_agree(void **state)
{
	(void)state;
	uint64_t a = 42, b = 42;
	double lo = 1, hi = 0;
	for (int i = 0; i < 1000000; i++) {
		double f = cl_splitmix_frac(&a), u = cl_splitmix_unit(&b);
		if (!(f >= 0 && f < 1) || !(u > 0 && u <= 1) || u - f != 0x1.0p-53) {
			print_error("draw %d: frac %a, unit %a\n", i, f, u);
			fail();
		}
		lo = f < lo ? f : lo;
		hi = f > hi ? f : hi;
	}
	assert_true(a == b);
	/* A million draws reach within 1e-4 of both ends (failing that by chance: < 1e-40). */
	if (lo > 1e-4 || hi < 1 - 1e-4) {
		print_error("frac spans [%g, %g] over 1e6 draws\n", lo, hi);
		fail();
	}
}

/* Mean 0, variance 1, and the 1.96 quantile's share, within what 10^6 draws allow (bounds at
 * about six standard errors, so a correct draw fails them with odds below 1e-8). */
static void test_normal_moments(void **state)
{
	(void)state;
	uint64_t s = 7;
	const int n = 1000000;
	double sum = 0, sum2 = 0;
	int beyond = 0;
	for (int i = 0; i < n; i++) {
		double z = cl_splitmix_normal(&s);
		assert_true(isfinite(z));
		sum += z;
		sum2 += z * z;
		beyond += fabs(z) > 1.959964;
	}
	double mean = sum / n, var = sum2 / n - mean * mean, tail = (double)beyond / n;
	if (fabs(mean) > 0.006 || fabs(var - 1) > 0.009 || fabs(tail - 0.05) > 0.0013) {
		print_error("mean %g (want 0 +- 0.006), variance %g (1 +- 0.009), P(|z| > 1.96) "
			    "%g (0.05 +- 0.0013)\n",
			    mean, var, tail);
		fail();
	}
}

/* Seeded draws are a pure function of the state. */
static void test_deterministic(void **state)
{
	(void)state;
	uint64_t a = 123, b = 123;
	for (int i = 0; i < 1000; i++) {
		double x = cl_splitmix_normal(&a), y = cl_splitmix_normal(&b);
		assert_memory_equal(&x, &y, sizeof(x));
	}
	assert_true(cl_seed_derive(5, 1) != cl_seed_derive(5, 2));
	assert_true(cl_seed_derive(5, 1) == cl_seed_derive(5, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extremes),
		cmocka_unit_test(test_frac_and_unit_agree),
		cmocka_unit_test(test_normal_moments),
		cmocka_unit_test(test_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
