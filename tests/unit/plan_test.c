/* Tests of plan.c: exact largest-remainder apportionment and the split of a stage. */
#include "chatload/plan.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* cmocka 1.1.5 has no floating-point assertion; this one prints both operands. */
#define assert_double_equal(a, b, eps)                                                             \
	do {                                                                                       \
		double a_ = (a), b_ = (b);                                                         \
		if (!(fabs(a_ - b_) <= (eps)))                                                     \
			fail_msg("%s = %.17g, expected %s = %.17g (within %g)", #a, a_, #b, b_,    \
				 (double)(eps));                                                   \
	} while (0)

/* A small deterministic generator so failures reproduce. */
static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void check_apportion(uint64_t total, const uint32_t *w, size_t n)
{
	uint64_t out[64];
	assert_true(n <= 64);
	assert_int_equal(cl_apportion(total, w, n, out), 0);
	uint64_t wsum = 0;
	for (size_t i = 0; i < n; i++)
		wsum += w[i];
	unsigned __int128 sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += out[i];
		/* exact quota q = total*w/wsum; each share is floor(q) or floor(q)+1 */
		uint64_t ww = wsum ? w[i] : 1, ws = wsum ? wsum : n;
		unsigned __int128 q = (unsigned __int128)total * ww;
		uint64_t fl = (uint64_t)(q / ws);
		bool exact = q % ws == 0;
		if (exact)
			assert_int_equal(out[i], fl);
		else
			assert_in_range(out[i], fl, fl + 1);
		if (wsum && w[i] == 0)
			assert_int_equal(out[i], 0);
	}
	if (sum != total)
		fail_msg("sum %llu != total %llu", (unsigned long long)sum,
			 (unsigned long long)total);
}

static void apportion_random(void **state)
{
	uint32_t w[64];
	for (int c = 0; c < 5000; c++) {
		size_t n = 1 + rnd() % 64;
		int shape = c % 4;
		for (size_t i = 0; i < n; i++) {
			switch (shape) {
			case 0:
				w[i] = 1 + rnd() % 16;
				break; /* worker counts */
			case 1:
				w[i] = (uint32_t)rnd();
				break; /* huge weights */
			case 2:
				w[i] = rnd() % 3 == 0 ? 0 : rnd() % 8;
				break; /* some zeros */
			default:
				w[i] = 0;
				break; /* all zero: equal */
			}
		}
		uint64_t total;
		switch (c % 3) {
		case 0:
			total = rnd() % 1000;
			break;
		case 1:
			total = rnd() % 100000000;
			break;
		default:
			total = rnd();
			break; /* 64-bit totals: the quota needs 128 bits */
		}
		check_apportion(total, w, n);
	}
}

static void apportion_known(void **state)
{
	uint64_t out[4];
	/* 10 over weights 1,1,1: quotas 3.33 each; the leftover unit goes to index 0 */
	uint32_t eq[3] = { 1, 1, 1 };
	assert_int_equal(cl_apportion(10, eq, 3, out), 0);
	assert_int_equal(out[0], 4);
	assert_int_equal(out[1], 3);
	assert_int_equal(out[2], 3);
	/* 11 over 1,1,1: two leftover units, indices 0 and 1 */
	assert_int_equal(cl_apportion(11, eq, 3, out), 0);
	assert_int_equal(out[0], 4);
	assert_int_equal(out[1], 4);
	assert_int_equal(out[2], 3);
	/* largest remainder wins over lower index: 7 over 1,2 -> 2.33, 4.67 -> 2, 5 */
	uint32_t w12[2] = { 1, 2 };
	assert_int_equal(cl_apportion(7, w12, 2, out), 0);
	assert_int_equal(out[0], 2);
	assert_int_equal(out[1], 5);
	/* 32 streams over agents with 4, 4, 8 workers: exact 8, 8, 16 */
	uint32_t w448[3] = { 4, 4, 8 };
	assert_int_equal(cl_apportion(32, w448, 3, out), 0);
	assert_int_equal(out[0], 8);
	assert_int_equal(out[1], 8);
	assert_int_equal(out[2], 16);
	/* fewer units than parties: 2 over 4 equal parties -> 1,1,0,0 */
	uint32_t w4[4] = { 3, 3, 3, 3 };
	assert_int_equal(cl_apportion(2, w4, 4, out), 0);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 1);
	assert_int_equal(out[2], 0);
	assert_int_equal(out[3], 0);
	/* zero weights get nothing, even when they are the lower index */
	uint32_t wz[3] = { 0, 5, 0 };
	assert_int_equal(cl_apportion(9, wz, 3, out), 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 9);
	assert_int_equal(out[2], 0);
	/* all zero: treated as equal */
	uint32_t w0[3] = { 0, 0, 0 };
	assert_int_equal(cl_apportion(5, w0, 3, out), 0);
	assert_int_equal(out[0], 2);
	assert_int_equal(out[1], 2);
	assert_int_equal(out[2], 1);
	/* the largest total with the largest weights does not overflow */
	uint32_t wmax[2] = { UINT32_MAX, UINT32_MAX - 1 };
	assert_int_equal(cl_apportion(UINT64_MAX, wmax, 2, out), 0);
	assert_int_equal(out[0] + out[1], UINT64_MAX);
	/* quotas 0x800000003fffffff.87, 0x7fffffffbfffffff.12: the unit left goes to index 0 */
	assert_int_equal(out[0], 0x8000000040000000ull);
	assert_int_equal(out[1], 0x7fffffffbfffffffull);
	/* n == 0 is an error */
	assert_int_equal(cl_apportion(5, eq, 0, out), CL_EINVAL);
}

static void apportion_real(void **state)
{
	double out[64];
	uint32_t w[64];
	for (int c = 0; c < 2000; c++) {
		size_t n = 1 + rnd() % 64;
		uint64_t wsum = 0;
		for (size_t i = 0; i < n; i++)
			wsum += (w[i] = (c % 5 == 0) ? 0 : rnd() % 9);
		double total = (double)(rnd() % 100000) / 7.0;
		assert_int_equal(cl_apportion_real(total, w, n, out), 0);
		double sum = 0;
		for (size_t i = 0; i < n; i++) {
			assert_true(out[i] >= 0);
			double exact = wsum ? total * w[i] / (double)wsum : total / (double)n;
			assert_double_equal(out[i], exact, 1e-6 * (total + 1));
			sum += out[i];
		}
		assert_double_equal(sum, total, 1e-9 * (total + 1));
	}
	uint32_t w3[3] = { 1, 1, 2 };
	assert_int_equal(cl_apportion_real(20.0, w3, 3, out), 0);
	assert_double_equal(out[0], 5.0, 1e-12);
	assert_double_equal(out[1], 5.0, 1e-12);
	assert_double_equal(out[2], 10.0, 1e-12);
	assert_int_equal(cl_apportion_real(1.0, w3, 0, out), CL_EINVAL);
}

static void split_concurrency(void **state)
{
	struct cl_stage_plan st = {
		.index = 3,
		.name = "c10",
		.mode = CL_MODE_CONCURRENCY,
		.concurrency = 10,
		.requests = 7,
		.duration_us = 0,
		.ramp_us = 5000000,
		.ramp_from = 3,
		.drain_timeout_us = 30000000,
		.seed = 42,
	};
	uint32_t w[3] = { 1, 1, 2 };
	struct cl_stage_plan out[3];
	assert_int_equal(cl_stage_plan_split(&st, w, 3, out), 0);
	uint64_t c = 0, r = 0, rf = 0;
	for (int i = 0; i < 3; i++) {
		assert_non_null(out[i].name);
		assert_string_equal(out[i].name, "c10");
		assert_ptr_not_equal(out[i].name, st.name);
		assert_int_equal(out[i].index, 3);
		assert_int_equal(out[i].mode, CL_MODE_CONCURRENCY);
		assert_int_equal(out[i].ramp_us, 5000000);
		assert_int_equal(out[i].drain_timeout_us, 30000000);
		assert_true(out[i].ramp_from <= out[i].concurrency);
		c += out[i].concurrency;
		r += out[i].requests;
		rf += out[i].ramp_from;
		for (int j = 0; j < i; j++)
			assert_true(out[i].seed != out[j].seed);
		assert_true(out[i].seed != st.seed);
	}
	/* 10 over 1,1,2: quotas 2.5, 2.5, 5 -> 3, 2, 5 (tie to the lower index) */
	assert_int_equal(out[0].concurrency, 3);
	assert_int_equal(out[1].concurrency, 2);
	assert_int_equal(out[2].concurrency, 5);
	assert_int_equal(c, 10);
	assert_int_equal(r, 7);
	assert_int_equal(rf, 3);
	for (int i = 0; i < 3; i++)
		cl_stage_plan_free(&out[i]);

	/* fewer streams than parties: a party without streams gets no requests */
	struct cl_stage_plan small = { .name = "c2", .concurrency = 2, .requests = 9, .seed = 1 };
	uint32_t w4[4] = { 1, 1, 1, 1 };
	struct cl_stage_plan o4[4];
	assert_int_equal(cl_stage_plan_split(&small, w4, 4, o4), 0);
	r = 0;
	for (int i = 0; i < 4; i++) {
		if (o4[i].concurrency == 0)
			assert_int_equal(o4[i].requests, 0);
		r += o4[i].requests;
		cl_stage_plan_free(&o4[i]);
	}
	assert_int_equal(r, 9);
}

static void split_rate(void **state)
{
	struct cl_stage_plan st = {
		.name = "r20",
		.mode = CL_MODE_RATE,
		.rate_per_s = 20.0,
		.arrival = CL_ARRIVAL_GAMMA,
		.gamma_shape = 0.5,
		.concurrency = 0,
		.duration_us = 60000000,
		.seed = 7,
	};
	uint32_t w[4] = { 2, 2, 4, 0 };
	struct cl_stage_plan out[4];
	assert_int_equal(cl_stage_plan_split(&st, w, 4, out), 0);
	assert_double_equal(out[0].rate_per_s, 5.0, 1e-9);
	assert_double_equal(out[1].rate_per_s, 5.0, 1e-9);
	assert_double_equal(out[2].rate_per_s, 10.0, 1e-9);
	assert_double_equal(out[3].rate_per_s, 0.0, 1e-9);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(out[i].concurrency, 0);
		assert_int_equal(out[i].arrival, CL_ARRIVAL_GAMMA);
		assert_double_equal(out[i].gamma_shape, 0.5, 0);
		assert_int_equal(out[i].duration_us, 60000000);
		cl_stage_plan_free(&out[i]);
	}

	/* a cap of 3 over 4 equal parties: the party with no cap share sends nothing */
	struct cl_stage_plan capped = {
		.name = "r9", .mode = CL_MODE_RATE, .rate_per_s = 9.0, .concurrency = 3, .seed = 7
	};
	uint32_t w4[4] = { 1, 1, 1, 1 };
	assert_int_equal(cl_stage_plan_split(&capped, w4, 4, out), 0);
	double rate = 0;
	uint32_t cap = 0;
	for (int i = 0; i < 4; i++) {
		if (out[i].concurrency == 0)
			assert_double_equal(out[i].rate_per_s, 0.0, 0);
		else
			assert_double_equal(out[i].rate_per_s, 3.0, 1e-9);
		rate += out[i].rate_per_s;
		cap += out[i].concurrency;
		cl_stage_plan_free(&out[i]);
	}
	assert_double_equal(rate, 9.0, 1e-9);
	assert_int_equal(cap, 3);
}

static void split_errors_and_free(void **state)
{
	struct cl_stage_plan st = { .concurrency = 1 };
	struct cl_stage_plan out[1];
	uint32_t w[1] = { 1 };
	assert_int_equal(cl_stage_plan_split(&st, w, 0, out), CL_EINVAL);
	assert_int_equal(cl_stage_plan_split(NULL, w, 1, out), CL_EINVAL);
	/* a stage without a name splits into shares without names */
	assert_int_equal(cl_stage_plan_split(&st, w, 1, out), 0);
	assert_null(out[0].name);
	assert_int_equal(out[0].concurrency, 1);
	cl_stage_plan_free(&out[0]);

	/* frees are safe on zeroed structures and NULL */
	struct cl_target_plan t = { 0 };
	struct cl_workload_plan wp = { 0 };
	struct cl_stage_plan sp = { 0 };
	cl_target_plan_free(&t);
	cl_workload_plan_free(&wp);
	cl_stage_plan_free(&sp);
	cl_target_plan_free(NULL);
	cl_workload_plan_free(NULL);
	cl_stage_plan_free(NULL);
	t.base_url = strdup("http://x/v1");
	t.headers = calloc(2, sizeof(char *));
	t.headers[0] = strdup("A: b");
	t.n_headers = 2;
	cl_target_plan_free(&t);
	assert_null(t.base_url);
	assert_null(t.headers);

	assert_string_equal(cl_load_mode_name(CL_MODE_RATE), "rate");
	assert_string_equal(cl_load_mode_name(CL_MODE_CONCURRENCY), "concurrency");
	assert_string_equal(cl_arrival_name(CL_ARRIVAL_POISSON), "poisson");
	assert_string_equal(cl_arrival_name(CL_ARRIVAL_GAMMA), "gamma");
	assert_string_equal(cl_arrival_name(CL_ARRIVAL_CONSTANT), "constant");
}

/* workload.cancel's pick: exact over any run of consecutive requests (floor or ceil of n x
 * share), the same for a seed, another phase for another seed, and delays inside the range. */
static void cancel_pick(void **state)
{
	(void)state;
	struct cl_workload_plan w = { .cancel_ppm = 250000,
				      .cancel_after_tokens = 5,
				      .cancel_seed = 7 };
	int64_t after = -1;
	bool pick[4000];
	for (uint64_t k = 0; k < 4000; k++) {
		pick[k] = cl_cancel_pick(&w, k, &after);
		assert_int_equal(after, 0); /* by tokens: no delay */
	}
	/* every window of n consecutive requests holds floor or ceil of n / 4 */
	for (size_t n = 1; n <= 64; n++) {
		for (size_t from = 0; from + n <= 4000; from += 37) {
			size_t c = 0;
			for (size_t k = from; k < from + n; k++)
				c += pick[k];
			assert_true(c == n / 4 || c == (n + 3) / 4);
		}
	}
	/* the seed moves the phase (one of 1 / share patterns): the count stays, and among a
	 * few seeds some pick other requests */
	size_t c1 = 0, differ = 0;
	for (uint64_t k = 0; k < 4000; k++)
		c1 += pick[k];
	assert_int_equal(c1, 1000);
	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct cl_workload_plan w2 = w;
		w2.cancel_seed = seed;
		size_t c2 = 0, same = 0;
		for (uint64_t k = 0; k < 4000; k++) {
			bool p2 = cl_cancel_pick(&w2, k, &after);
			same += p2 == pick[k];
			c2 += p2;
		}
		assert_int_equal(c2, 1000);
		differ += same < 4000;
	}
	assert_true(differ > 0);
	/* a range: every delay inside it, and not all the same */
	struct cl_workload_plan r = { .cancel_ppm = 1000000,
				      .cancel_after_us = 500000,
				      .cancel_after_max_us = 5000000,
				      .cancel_seed = 3 };
	int64_t lo = INT64_MAX, hi = 0;
	for (uint64_t k = 0; k < 1000; k++) {
		assert_true(cl_cancel_pick(&r, k, &after));
		assert_true(after >= 500000 && after <= 5000000);
		lo = after < lo ? after : lo;
		hi = after > hi ? after : hi;
	}
	assert_true(lo < 1000000 && hi > 4500000);
	/* a fixed delay, and none without a share */
	r.cancel_after_max_us = 0;
	assert_true(cl_cancel_pick(&r, 9, &after));
	assert_int_equal(after, 500000);
	r.cancel_ppm = 0;
	assert_false(cl_cancel_pick(&r, 9, &after));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cancel_pick),           cmocka_unit_test(apportion_random),
		cmocka_unit_test(apportion_known),       cmocka_unit_test(apportion_real),
		cmocka_unit_test(split_concurrency),     cmocka_unit_test(split_rate),
		cmocka_unit_test(split_errors_and_free),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
