/* Tests of the log-linear histogram: accuracy against exact order statistics, merge,
 * overflow, and the sparse msgpack encoding, including rejection of hostile encodings. */
#include "chatload/hist.h"
#include "chatload/hist_wire.h"
#include "chatload/rng.h"

#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

static const struct cl_hist_cfg lat_cfg = { 1, 3600000000LL, 3 };
#define LAT_HIGHEST 3600000000LL

/* Percentiles as integer parts per 10000, so the exact rank ceil(p/100*n) is integer math. */
static const int64_t pct_e4[] = { 10,   100,  1000, 2500, 5000, 7500,
				  9000, 9500, 9900, 9990, 9999, 10000 };
#define N_PCT (sizeof(pct_e4) / sizeof(pct_e4[0]))

/* Fails the test printing both operands when |actual - expected| > tol * |expected|. */
#define assert_rel(actual, expected, tol, what)                                                    \
	do {                                                                                       \
		double a_ = (double)(actual), e_ = (double)(expected);                             \
		if (!(fabs(a_ - e_) <= (tol)*fabs(e_))) {                                          \
			print_error("%s: actual %.17g, expected %.17g (relative error %.3g > "     \
				    "%.3g)\n",                                                     \
				    (what), a_, e_, fabs(a_ - e_) / fabs(e_), (double)(tol));      \
			fail();                                                                    \
		}                                                                                  \
	} while (0)

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	return cl_splitmix64(&rng_state); /* deterministic, so a failure reproduces */
}

static double rng_unit(void) /* (0, 1) */
{
	return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(void)
{
	return sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());
}

static int64_t clamp_lat(double v)
{
	if (v < 1)
		return 1;
	if (v > (double)LAT_HIGHEST)
		return LAT_HIGHEST;
	return (int64_t)v;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Records vals into a fresh latency histogram and checks every percentile, the mean, min,
 * max and count against the exact figures of the sorted data. */
static void check_accuracy(const char *name, int64_t *vals, size_t n)
{
	struct cl_hist h;
	assert_int_equal(cl_hist_init(&h, &lat_cfg), 0);
	unsigned __int128 sum = 0;
	for (size_t i = 0; i < n; i++) {
		cl_hist_record(&h, vals[i]);
		sum += (uint64_t)vals[i];
	}
	qsort(vals, n, sizeof(*vals), cmp_i64);

	assert_int_equal(cl_hist_count(&h), n);
	assert_int_equal(cl_hist_overflow(&h), 0);
	assert_int_equal(cl_hist_min(&h), vals[0]);
	assert_int_equal(cl_hist_max(&h), vals[n - 1]);
	char what[96];
	snprintf(what, sizeof(what), "%s mean", name);
	assert_rel(cl_hist_mean(&h), (double)sum / (double)n, 1e-9, what);

	for (size_t k = 0; k < N_PCT; k++) {
		uint64_t rank = ((uint64_t)pct_e4[k] * n + 9999) / 10000;
		if (rank < 1)
			rank = 1;
		int64_t exact = vals[rank - 1];
		double p = (double)pct_e4[k] / 100.0;
		int64_t got = cl_hist_percentile(&h, p);
		snprintf(what, sizeof(what), "%s p%g (rank %" PRIu64 " of %zu)", name, p, rank, n);
		assert_rel(got, exact, 1e-3, what);
		/* The reported value is the bucket's upper edge: never below the exact value. */
		if (got < exact) {
			print_error("%s: %" PRId64 " below exact %" PRId64 "\n", what, got, exact);
			fail();
		}
	}
	assert_int_equal(cl_hist_percentile(&h, 100.0), vals[n - 1]);
	cl_hist_destroy(&h);
}

#define N_VALS 50000

static void test_accuracy_distributions(void **state)
{
	int64_t *v = malloc(N_VALS * sizeof(*v));
	assert_non_null(v);
	rng_state = 42;

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = 1 + (int64_t)(rng_next() % (uint64_t)LAT_HIGHEST);
	check_accuracy("uniform 1..3.6e9", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = 1 + (int64_t)(rng_next() % 10000);
	check_accuracy("uniform 1..10000", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = clamp_lat(-20000.0 * log(rng_unit()));
	check_accuracy("exponential mean 20ms", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = clamp_lat(exp(log(20000.0) + 1.0 * rng_normal()));
	check_accuracy("lognormal 20ms sigma 1", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = clamp_lat(exp(log(50.0) + 3.0 * rng_normal()));
	check_accuracy("lognormal 50us sigma 3 (wide)", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = i % 2 ? clamp_lat(5000 + 500 * rng_normal())
			     : clamp_lat(2000000 + 100000 * rng_normal());
	check_accuracy("bimodal 5ms/2s", v, N_VALS);
	free(v);
}

static void test_accuracy_adversarial(void **state)
{
	int64_t *v = malloc(N_VALS * sizeof(*v));
	assert_non_null(v);
	rng_state = 7;

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = 123457;
	check_accuracy("all equal", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = (int64_t)1 << (i % 32); /* 1 .. 2^31, all <= 3.6e9 */
	check_accuracy("powers of two", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = ((int64_t)1 << (i % 32)) - 1 + (i % 32 == 0);
	check_accuracy("powers of two minus one", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = i % 3 == 0 ? 1 : (i % 3 == 1 ? LAT_HIGHEST : 2);
	check_accuracy("boundaries 1, 2 and 3.6e9", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = i < N_VALS - 3 ? 1 : LAT_HIGHEST;
	check_accuracy("mostly lowest, highest in the tail", v, N_VALS);

	/* Just above, at and just below sub-bucket boundaries of every bucket. */
	size_t n = 0;
	while (n < N_VALS) {
		int b = (int)(rng_next() % 22);
		int64_t sub = 1024 + (int64_t)(rng_next() % 1024);
		int64_t base = sub << b;
		int64_t cand[3] = { base, base + 1, base + ((int64_t)1 << b) - 1 };
		for (int j = 0; j < 3 && n < N_VALS; j++)
			if (cand[j] >= 1 && cand[j] <= LAT_HIGHEST)
				v[n++] = cand[j];
	}
	check_accuracy("sub-bucket boundaries", v, N_VALS);

	for (size_t i = 0; i < N_VALS; i++)
		v[i] = 1 + (int64_t)(i % 3000); /* dense over the bucket-0/bucket-1 seam */
	check_accuracy("1..3000 dense", v, N_VALS);
	free(v);
}

static void test_init_validation(void **state)
{
	struct cl_hist h;
	const struct cl_hist_cfg bad[] = {
		{ 0, 1000, 3 }, { -1, 1000, 3 }, { 10, 19, 3 },
		{ 1, 1000, 0 }, { 1, 1000, 6 },  { 1, INT64_MAX, 3 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cl_hist_init(&h, &bad[i]), CL_EINVAL);
		cl_hist_destroy(&h); /* destroyable after a failed init */
	}
	struct cl_hist_cfg ok = { 10, 20, 1 };
	assert_int_equal(cl_hist_init(&h, &ok), 0);
	cl_hist_destroy(&h);
	cl_hist_destroy(&h);
	/* Re-initialising from the histogram's own cfg (which init overwrites) works. */
	assert_int_equal(cl_hist_init(&h, &ok), 0);
	cl_hist_destroy(&h);
	assert_int_equal(cl_hist_init(&h, &h.cfg), 0);
	assert_int_equal(h.cfg.lowest, 10);
	assert_int_equal(h.cfg.highest, 20);
	cl_hist_destroy(&h);

	assert_int_equal(cl_hist_init(&h, &lat_cfg), 0);
	/* 1 us .. 1 h at 3 digits: 22 buckets, (22 + 1) * 1024 counts of 8 bytes = 188416 B. */
	assert_int_equal(h.counts_len, 23552);
	assert_int_equal(h.sub_bucket_count, 2048);
	assert_int_equal(h.bucket_count, 22);
	assert_int_equal(cl_hist_count(&h), 0);
	assert_int_equal(cl_hist_percentile(&h, 50), 0);
	assert_int_equal(cl_hist_min(&h), 0);
	assert_int_equal(cl_hist_max(&h), 0);
	assert_true(cl_hist_mean(&h) == 0.0);
	cl_hist_destroy(&h);

	struct cl_hist z;
	memset(&z, 0, sizeof(z));
	cl_hist_destroy(&z);
	cl_hist_destroy(NULL);
}

static void test_low_negative_and_overflow(void **state)
{
	struct cl_hist h;
	assert_int_equal(cl_hist_init(&h, &lat_cfg), 0);
	cl_hist_record(&h, -5);
	cl_hist_record(&h, 0);
	assert_int_equal(cl_hist_count(&h), 2);
	assert_int_equal(cl_hist_min(&h), 0);
	assert_int_equal(cl_hist_max(&h), 0);
	/* Counted in the lowest bucket, reported clamped to the exact max. */
	assert_int_equal(cl_hist_percentile(&h, 50), 0);

	for (int i = 0; i < 96; i++)
		cl_hist_record(&h, 1000);
	cl_hist_record(&h, LAT_HIGHEST + 1);
	cl_hist_record(&h, INT64_MAX);
	assert_int_equal(cl_hist_count(&h), 100);
	assert_int_equal(cl_hist_overflow(&h), 2);
	assert_int_equal(cl_hist_max(&h), INT64_MAX);
	assert_int_equal(cl_hist_percentile(&h, 50), 1000);
	assert_int_equal(cl_hist_percentile(&h, 98), 1000);
	/* Ranks 99 and 100 are overflowed values: they rank above every bucket. */
	assert_int_equal(cl_hist_percentile(&h, 98.5), INT64_MAX);
	assert_int_equal(cl_hist_percentile(&h, 100), INT64_MAX);

	/* Overflowed values are not in any bucket. */
	int32_t st = 0, idx;
	int64_t val;
	uint64_t cnt, in_buckets = 0;
	int32_t prev = -1;
	while (cl_hist_next_bucket(&h, &st, &idx, &val, &cnt)) {
		assert_true(idx > prev);
		prev = idx;
		in_buckets += cnt;
	}
	assert_int_equal(in_buckets, 98);
	double expect_mean = (96.0 * 1000 + (double)(LAT_HIGHEST + 1) + (double)INT64_MAX) / 100;
	assert_rel(cl_hist_mean(&h), expect_mean, 1e-12, "mean with overflow");

	/* Below lowest: recorded as lowest, min keeps the real value. */
	struct cl_hist g;
	struct cl_hist_cfg c100 = { 100, 1000000, 3 };
	assert_int_equal(cl_hist_init(&g, &c100), 0);
	cl_hist_record(&g, 50);
	cl_hist_record(&g, 100);
	assert_int_equal(cl_hist_min(&g), 50);
	st = 0;
	assert_true(cl_hist_next_bucket(&g, &st, &idx, &val, &cnt));
	assert_int_equal(cnt, 2);
	assert_false(cl_hist_next_bucket(&g, &st, &idx, &val, &cnt));
	cl_hist_destroy(&g);
	cl_hist_destroy(&h);
}

static void test_record_n_and_reset(void **state)
{
	struct cl_hist a, b, fresh;
	assert_int_equal(cl_hist_init(&a, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&b, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&fresh, &lat_cfg), 0);
	for (int i = 0; i < 1000; i++)
		cl_hist_record(&a, 777777);
	cl_hist_record_n(&b, 777777, 1000);
	cl_hist_record_n(&b, 5, 0); /* n = 0 records nothing, not even min */
	assert_true(cl_hist_equal(&a, &b));
	assert_false(cl_hist_equal(&a, &fresh));
	cl_hist_reset(&a);
	assert_true(cl_hist_equal(&a, &fresh));

	/* Reset clears only the occupied range: values at both ends and between, then reset,
	 * leave every counter zero (cl_hist_equal compares all of them). */
	static const int64_t spread[] = { 1, 2, 999, 123456, 3000000000LL, 3600000000LL };
	for (size_t i = 0; i < sizeof(spread) / sizeof(spread[0]); i++)
		cl_hist_record(&a, spread[i]);
	cl_hist_reset(&a);
	assert_true(cl_hist_equal(&a, &fresh));
	int32_t st = 0, idx;
	int64_t v;
	uint64_t c;
	assert_false(cl_hist_next_bucket(&a, &st, &idx, &v, &c));

	/* Merging widens the destination's range on either side: the same as recording all
	 * into one histogram, bucket for bucket and in every percentile. */
	struct cl_hist mid, lo, hi, all;
	assert_int_equal(cl_hist_init(&mid, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&lo, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&hi, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&all, &lat_cfg), 0);
	for (int64_t x = 5000; x < 6000; x += 7) {
		cl_hist_record(&mid, x);
		cl_hist_record(&all, x);
	}
	for (int64_t x = 1; x < 40; x++) {
		cl_hist_record(&lo, x);
		cl_hist_record(&all, x);
	}
	for (int64_t x = 1000000000LL; x < 3000000000LL; x += 100000000LL) {
		cl_hist_record(&hi, x);
		cl_hist_record(&all, x);
	}
	assert_int_equal(cl_hist_merge(&mid, &lo), 0);
	assert_int_equal(cl_hist_merge(&mid, &hi), 0);
	assert_int_equal(cl_hist_merge(&mid, &fresh), 0); /* an empty source changes nothing */
	assert_true(cl_hist_equal(&mid, &all));
	for (double p = 0; p <= 100; p += 0.5)
		assert_int_equal(cl_hist_percentile(&mid, p), cl_hist_percentile(&all, p));
	int32_t s1 = 0, s2 = 0, i1, i2;
	int64_t v1, v2;
	uint64_t c1, c2;
	size_t buckets = 0;
	while (cl_hist_next_bucket(&mid, &s1, &i1, &v1, &c1)) {
		assert_true(cl_hist_next_bucket(&all, &s2, &i2, &v2, &c2));
		assert_int_equal(i1, i2);
		assert_int_equal(c1, c2);
		buckets++;
	}
	assert_false(cl_hist_next_bucket(&all, &s2, &i2, &v2, &c2));
	assert_true(buckets > 100);
	cl_hist_destroy(&mid);
	cl_hist_destroy(&lo);
	cl_hist_destroy(&hi);
	cl_hist_destroy(&all);
	cl_hist_destroy(&a);
	cl_hist_destroy(&b);
	cl_hist_destroy(&fresh);
}

/* Pages of the counts array that are resident (mincore), the partial pages at its ends
 * left out. */
static size_t resident_pages(const struct cl_hist *h)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)h->counts, hi = lo + (size_t)h->counts_len * sizeof(*h->counts);
	uintptr_t first = (lo + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	uintptr_t last = hi & ~((uintptr_t)page - 1);
	size_t n = (last - first) / (size_t)page, in = 0;
	unsigned char *vec = calloc(n ? n : 1, 1);
	assert_non_null(vec);
	assert_int_equal(mincore((void *)first, last - first, vec), 0);
	for (size_t i = 0; i < n; i++)
		in += vec[i] & 1;
	free(vec);
	return in;
}

/* Trim empties like reset and gives the pages back: values spread over every bucket make
 * the counts resident, trim leaves none of its whole pages resident and every counter
 * zero, and the histogram then records exactly as a fresh one. */
static void test_trim(void **state)
{
	(void)state;
	struct cl_hist a, fresh;
	assert_int_equal(cl_hist_init(&a, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&fresh, &lat_cfg), 0);
	for (int64_t x = 1; x < 3600000000LL; x = x * 5 / 4 + 1)
		cl_hist_record(&a, x);
	assert_true(resident_pages(&a) > 10);
	cl_hist_trim(&a);
	assert_int_equal(resident_pages(&a), 0);
	assert_true(cl_hist_equal(&a, &fresh));
	static const int64_t again[] = { 3, 999, 123456, 3000000000LL };
	for (size_t i = 0; i < sizeof(again) / sizeof(again[0]); i++) {
		cl_hist_record(&a, again[i]);
		cl_hist_record(&fresh, again[i]);
	}
	assert_true(cl_hist_equal(&a, &fresh));
	assert_int_equal(cl_hist_percentile(&a, 50), cl_hist_percentile(&fresh, 50));
	cl_hist_trim(&fresh);
	cl_hist_trim(&fresh); /* twice, and on an empty one: harmless */
	cl_hist_destroy(&a);
	cl_hist_destroy(&fresh);
}

/* Values at or below a point: exact between buckets, in proportion inside the bucket holding
 * the point (at 2 digits the bucket of 12000 us is 64 us wide), exact at the min and max, and
 * overflowed values above every point below the max. */
static void test_count_at_or_below(void **state)
{
	(void)state;
	const struct cl_hist_cfg c2 = { 1, 3600000000LL, 2 };
	struct cl_hist h;
	assert_int_equal(cl_hist_init(&h, &c2), 0);
	assert_true(cl_hist_count_at_or_below(&h, 5) == 0);
	/* 100 values at each of 100 and 200 us (exact buckets at 2 digits up to 256), and
	 * 64 spread over the 64 us bucket [11968, 12031] one each. */
	cl_hist_record_n(&h, 100, 100);
	cl_hist_record_n(&h, 200, 100);
	for (int64_t v = 11968; v <= 12031; v++)
		cl_hist_record(&h, v);
	assert_true(cl_hist_count_at_or_below(&h, 99) == 0);
	assert_true(cl_hist_count_at_or_below(&h, 100) == 100);
	assert_true(cl_hist_count_at_or_below(&h, 150) == 100);
	assert_true(cl_hist_count_at_or_below(&h, 200) == 200);
	assert_true(cl_hist_count_at_or_below(&h, 199.5) == 150); /* 200 stands for (199, 200] */
	/* Into the spread bucket: 33 of its 64 (the continuum (11967, 12031]). */
	double got = cl_hist_count_at_or_below(&h, 12000);
	if (fabs(got - 233) > 1e-9)
		fail_msg("at 12000: %.6g, want 233", got);
	assert_true(cl_hist_count_at_or_below(&h, 12031) == 264); /* the max: all */
	/* One overflowed value: above every point below the max, counted at the max. */
	cl_hist_record(&h, 3600000000LL + 5);
	assert_true(cl_hist_count_at_or_below(&h, 12100) == 264);
	assert_true(cl_hist_count_at_or_below(&h, 3600000000.0 + 5) == 265);
	cl_hist_destroy(&h);
}

static void test_merge(void **state)
{
	struct cl_hist a, b, all, other;
	assert_int_equal(cl_hist_init(&a, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&b, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&all, &lat_cfg), 0);
	rng_state = 99;
	for (int i = 0; i < 40000; i++) {
		int64_t v = i % 500 == 0 ? LAT_HIGHEST + 1 + (int64_t)i
					 : clamp_lat(exp(log(20000.0) + 1.5 * rng_normal()));
		cl_hist_record(i % 3 ? &a : &b, v);
		cl_hist_record(&all, v);
	}
	assert_int_equal(cl_hist_merge(&a, &b), 0);
	assert_true(cl_hist_equal(&a, &all));
	for (size_t k = 0; k < N_PCT; k++) {
		double p = (double)pct_e4[k] / 100.0;
		assert_int_equal(cl_hist_percentile(&a, p), cl_hist_percentile(&all, p));
	}
	assert_int_equal(cl_hist_overflow(&a), 80);

	struct cl_hist_cfg c = { 1, 10000000, 3 };
	assert_int_equal(cl_hist_init(&other, &c), 0);
	cl_hist_record(&other, 5);
	assert_int_equal(cl_hist_merge(&a, &other), CL_EINVAL);
	assert_true(cl_hist_equal(&a, &all));
	cl_hist_destroy(&a);
	cl_hist_destroy(&b);
	cl_hist_destroy(&all);
	cl_hist_destroy(&other);
}

/* --- encoding --- */

/* Decodes buf as exactly one msgpack object and adds it into h. */
static int decode_into(struct cl_hist *h, const char *buf, size_t len, struct cl_err *err)
{
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	int rc;
	msgpack_unpack_return r = msgpack_unpack_next(&u, buf, len, &off);
	if (r != MSGPACK_UNPACK_SUCCESS || off != len)
		rc = cl_err_set(err, CL_EPARSE, "not one msgpack object");
	else
		rc = cl_hist_unpack_add(h, &u.data, err);
	msgpack_unpacked_destroy(&u);
	return rc;
}

static void fill_sample(struct cl_hist *h, uint64_t seed, int n)
{
	rng_state = seed;
	for (int i = 0; i < n; i++)
		cl_hist_record(h, clamp_lat(exp(log(20000.0) + 1.0 * rng_normal())));
}

static void test_roundtrip(void **state)
{
	struct cl_hist h, d, empty;
	assert_int_equal(cl_hist_init(&h, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&d, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&empty, &lat_cfg), 0);
	fill_sample(&h, 1, 10000);
	cl_hist_record(&h, LAT_HIGHEST * 2);
	cl_hist_record(&h, 0);

	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	assert_int_equal(cl_hist_pack(&h, &pk), 0);
	struct cl_err err = { 0 };
	assert_int_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_true(cl_hist_equal(&h, &d));
	assert_int_equal(cl_hist_min(&d), 0);
	assert_int_equal(cl_hist_max(&d), LAT_HIGHEST * 2);

	/* Decoding into a non-empty histogram adds: twice the data. */
	assert_int_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	struct cl_hist twice;
	assert_int_equal(cl_hist_init(&twice, &lat_cfg), 0);
	assert_int_equal(cl_hist_merge(&twice, &h), 0);
	assert_int_equal(cl_hist_merge(&twice, &h), 0);
	assert_true(cl_hist_equal(&twice, &d));

	/* An empty histogram round-trips as empty. */
	msgpack_sbuffer_clear(&sb);
	assert_int_equal(cl_hist_pack(&empty, &pk), 0);
	struct cl_hist e2;
	assert_int_equal(cl_hist_init(&e2, &lat_cfg), 0);
	assert_int_equal(decode_into(&e2, sb.data, sb.size, &err), 0);
	assert_true(cl_hist_equal(&e2, &empty));

	msgpack_sbuffer_destroy(&sb);
	cl_hist_destroy(&h);
	cl_hist_destroy(&d);
	cl_hist_destroy(&empty);
	cl_hist_destroy(&twice);
	cl_hist_destroy(&e2);
}

/* A target with data in it, and a copy to prove a rejected decode left it alone. */
struct target {
	struct cl_hist h, before;
};

static void target_init(struct target *t)
{
	assert_int_equal(cl_hist_init(&t->h, &lat_cfg), 0);
	assert_int_equal(cl_hist_init(&t->before, &lat_cfg), 0);
	fill_sample(&t->h, 5, 2000);
	assert_int_equal(cl_hist_merge(&t->before, &t->h), 0);
}

static void target_destroy(struct target *t)
{
	cl_hist_destroy(&t->h);
	cl_hist_destroy(&t->before);
}

/* Asserts that buf is rejected with CL_EPARSE and t->h did not change. */
static void expect_rejected(struct target *t, const char *buf, size_t len, const char *what,
			    const char *msg_part)
{
	struct cl_err err = { 0 };
	int rc = decode_into(&t->h, buf, len, &err);
	if (rc != CL_EPARSE) {
		print_error("%s: rc %d, expected CL_EPARSE (%d)\n", what, rc, CL_EPARSE);
		fail();
	}
	if (err.msg[0] == '\0') {
		print_error("%s: no error message\n", what);
		fail();
	}
	if (msg_part && !strstr(err.msg, msg_part)) {
		print_error("%s: message '%s' lacks '%s'\n", what, err.msg, msg_part);
		fail();
	}
	if (!cl_hist_equal(&t->h, &t->before)) {
		print_error("%s: histogram changed by a rejected decode\n", what);
		fail();
	}
}

static void test_truncated_prefixes(void **state)
{
	struct target t;
	target_init(&t);
	struct cl_hist src;
	assert_int_equal(cl_hist_init(&src, &lat_cfg), 0);
	fill_sample(&src, 11, 500);
	cl_hist_record(&src, LAT_HIGHEST + 10);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	assert_int_equal(cl_hist_pack(&src, &pk), 0);
	char what[64];
	for (size_t len = 0; len < sb.size; len++) {
		snprintf(what, sizeof(what), "prefix of %zu/%zu bytes", len, sb.size);
		expect_rejected(&t, sb.data, len, what, NULL);
	}
	msgpack_sbuffer_destroy(&sb);
	cl_hist_destroy(&src);
	target_destroy(&t);
}

/* Field-by-field builder for hand-made (possibly hostile) encodings. */
enum field { F_CFG, F_N, F_O, F_MIN, F_MAX, F_SUM, F_B, F__COUNT };
static const char *const field_names[F__COUNT] = { "cfg", "n", "o", "min", "max", "sum", "b" };

struct enc {
	int64_t cfg[3];
	uint64_t n, o;
	int64_t min, max;
	double sum;
	const uint64_t *b;
	size_t blen;
	int omit; /* field left out, or -1 */
	int dup;  /* field written twice, or -1 */
	int bad;  /* field whose value is replaced by `bad_kind`, or -1 */
	int bad_kind;
	const char *extra_key; /* an extra unknown key, or NULL */
};

static void pack_bad(msgpack_packer *pk, int kind)
{
	switch (kind) {
	case 0:
		msgpack_pack_str(pk, 3);
		msgpack_pack_str_body(pk, "abc", 3);
		break;
	case 1:
		msgpack_pack_nil(pk);
		break;
	case 2:
		msgpack_pack_true(pk);
		break;
	case 3:
		msgpack_pack_map(pk, 0);
		break;
	case 4:
		msgpack_pack_array(pk, 1);
		msgpack_pack_int(pk, 1);
		break;
	case 5:
		msgpack_pack_double(pk, 1.5);
		break;
	case 6:
		msgpack_pack_int(pk, -1);
		break;
	}
}
#define N_BAD_KINDS 7

static void pack_key(msgpack_packer *pk, const char *k)
{
	msgpack_pack_str(pk, strlen(k));
	msgpack_pack_str_body(pk, k, strlen(k));
}

static void pack_field(msgpack_packer *pk, const struct enc *e, int f)
{
	pack_key(pk, field_names[f]);
	if (f == e->bad) {
		pack_bad(pk, e->bad_kind);
		return;
	}
	switch (f) {
	case F_CFG:
		msgpack_pack_array(pk, 3);
		for (int i = 0; i < 3; i++)
			msgpack_pack_int64(pk, e->cfg[i]);
		break;
	case F_N:
		msgpack_pack_uint64(pk, e->n);
		break;
	case F_O:
		msgpack_pack_uint64(pk, e->o);
		break;
	case F_MIN:
		msgpack_pack_int64(pk, e->min);
		break;
	case F_MAX:
		msgpack_pack_int64(pk, e->max);
		break;
	case F_SUM:
		msgpack_pack_double(pk, e->sum);
		break;
	case F_B:
		msgpack_pack_array(pk, e->blen);
		for (size_t i = 0; i < e->blen; i++)
			msgpack_pack_uint64(pk, e->b[i]);
		break;
	}
}

static void enc_pack(msgpack_sbuffer *sb, const struct enc *e)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	size_t n = F__COUNT - (e->omit >= 0) + (e->dup >= 0) + (e->extra_key != NULL);
	msgpack_pack_map(&pk, n);
	for (int f = 0; f < F__COUNT; f++) {
		if (f == e->omit)
			continue;
		pack_field(&pk, e, f);
		if (f == e->dup)
			pack_field(&pk, e, f);
	}
	if (e->extra_key) {
		pack_key(&pk, e->extra_key);
		msgpack_pack_int(&pk, 0);
	}
}

/* A valid encoding: values 1000 (x2) and 2000 (x1), at indices 1000 and 2000 (bucket 0 has
 * unit resolution up to 2047), none overflowed. */
static const uint64_t good_b[] = { 1000, 2, 1000, 1 };

static struct enc good_enc(void)
{
	struct enc e = { .cfg = { 1, LAT_HIGHEST, 3 },
			 .n = 3,
			 .o = 0,
			 .min = 1000,
			 .max = 2000,
			 .sum = 4000,
			 .b = good_b,
			 .blen = 4,
			 .omit = -1,
			 .dup = -1,
			 .bad = -1 };
	return e;
}

static void test_hand_encodings(void **state)
{
	struct target t;
	target_init(&t);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_err err = { 0 };

	/* The builder's baseline is valid, so each rejection below is due to its one change. */
	struct enc e = good_enc();
	enc_pack(&sb, &e);
	struct cl_hist plain;
	assert_int_equal(cl_hist_init(&plain, &lat_cfg), 0);
	assert_int_equal(decode_into(&plain, sb.data, sb.size, &err), 0);
	assert_int_equal(cl_hist_count(&plain), 3);
	assert_int_equal(cl_hist_percentile(&plain, 50), 1000);
	assert_int_equal(cl_hist_percentile(&plain, 100), 2000);
	assert_int_equal(cl_hist_percentile(&plain, 90), 2000);

	char what[96];
	for (int f = 0; f < F__COUNT; f++) {
		e = good_enc();
		e.omit = f;
		enc_pack(&sb, &e);
		snprintf(what, sizeof(what), "missing '%s'", field_names[f]);
		expect_rejected(&t, sb.data, sb.size, what, NULL);

		e = good_enc();
		e.dup = f;
		enc_pack(&sb, &e);
		snprintf(what, sizeof(what), "duplicate '%s'", field_names[f]);
		expect_rejected(&t, sb.data, sb.size, what, "duplicate");

		for (int k = 0; k < N_BAD_KINDS; k++) {
			if (f == F_SUM && k == 5) /* a float sum is the right type */
				continue;
			if (f == F_MIN && k == 6)
				continue; /* -1 is an integer: covered by the min < 0 case */
			e = good_enc();
			e.bad = f;
			e.bad_kind = k;
			enc_pack(&sb, &e);
			snprintf(what, sizeof(what), "'%s' of bad kind %d", field_names[f], k);
			expect_rejected(&t, sb.data, sb.size, what, NULL);
		}
	}

	e = good_enc();
	e.extra_key = "zz";
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "unknown key", "unknown histogram field 'zz'");

	/* Not a map at all. */
	msgpack_packer pk;
	msgpack_sbuffer_clear(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 0);
	expect_rejected(&t, sb.data, sb.size, "array instead of map", "not a map");

	/* Wrong configurations. */
	const int64_t cfgs[][3] = { { 1, LAT_HIGHEST, 2 },
				    { 2, LAT_HIGHEST, 3 },
				    { 1, 10000000, 3 },
				    { 1, LAT_HIGHEST + 1, 3 } };
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		e = good_enc();
		memcpy(e.cfg, cfgs[i], sizeof(e.cfg));
		enc_pack(&sb, &e);
		snprintf(what, sizeof(what), "cfg %zu", i);
		expect_rejected(&t, sb.data, sb.size, what, "differs");
	}

	/* Index out of range: first index, a huge delta, and a cumulative sum past the end. */
	const uint64_t oor1[] = { 23552, 3 };
	const uint64_t oor2[] = { 1, 2, UINT64_MAX, 1 };
	const uint64_t oor3[] = { 20000, 2, 3552, 1 };
	const uint64_t last[] = { 20000, 2, 3551, 1 };
	e = good_enc();
	e.b = oor1;
	e.blen = 2;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "first index out of range",
			"histogram bucket index 23552 out of range (max 23551)");
	e.b = oor2;
	e.blen = 4;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "huge delta", "out of range (max 23551)");
	e.b = oor3;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "cumulative index", "index 23552 out of range");
	/* ... while the last index itself is accepted. */
	e.b = last;
	e.max = LAT_HIGHEST;
	enc_pack(&sb, &e);
	struct cl_hist edge;
	assert_int_equal(cl_hist_init(&edge, &lat_cfg), 0);
	assert_int_equal(decode_into(&edge, sb.data, sb.size, &err), 0);
	cl_hist_destroy(&edge);

	/* Indices not strictly ascending (delta 0 repeats an index). */
	const uint64_t rep[] = { 1000, 2, 0, 1 };
	e = good_enc();
	e.b = rep;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "repeated index", "ascend");

	/* Count totals that disagree with n; and bucket counts that wrap around 2^64 to n. */
	e = good_enc();
	e.n = 4;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "n too high", "sum to 3");
	e.n = 2;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "n too low", "sum to 3");
	const uint64_t wrap[] = { 1000, UINT64_MAX, 1000, 2 };
	e = good_enc();
	e.n = 1;
	e.sum = 1000; /* consistent with n = 1, so only the wrap is wrong */
	e.b = wrap;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "wrapping counts", "overflow");
	e = good_enc();
	e.o = 1;
	e.n = 3;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "overflow not counted in n", NULL);

	/* Odd array length, and an array longer than two entries per bucket. */
	const uint64_t odd[] = { 1000, 2, 1000 };
	e = good_enc();
	e.b = odd;
	e.blen = 3;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "odd bucket array", "odd");
	size_t biglen = 2 * 23552 + 2;
	uint64_t *big = calloc(biglen, sizeof(*big));
	assert_non_null(big);
	for (size_t i = 0; i < biglen; i++)
		big[i] = 1;
	e = good_enc();
	e.b = big;
	e.blen = biglen;
	e.n = biglen / 2;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "bucket array too long", "exceeds");
	free(big);

	/* min > max, negative min, max inconsistent with overflow, a sum that is not finite. */
	e = good_enc();
	e.min = 5000;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "min > max", "inconsistent");
	e = good_enc();
	e.min = -1;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "negative min", "inconsistent");
	e = good_enc();
	e.max = LAT_HIGHEST + 1;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "max above highest, no overflow", NULL);
	e = good_enc();
	e.sum = NAN;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "NaN sum", "finite");
	e = good_enc();
	e.sum = -1;
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "negative sum", NULL);
	e = good_enc();
	e.sum = 2999; /* below n * min = 3000 */
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "sum below n * min", "outside");
	e.sum = 6001; /* above n * max = 6000 */
	enc_pack(&sb, &e);
	expect_rejected(&t, sb.data, sb.size, "sum above n * max", "outside");

	/* Into a histogram of another configuration. */
	struct cl_hist cnt;
	struct cl_hist_cfg cc = { 1, 10000000, 3 };
	assert_int_equal(cl_hist_init(&cnt, &cc), 0);
	e = good_enc();
	enc_pack(&sb, &e);
	assert_int_equal(decode_into(&cnt, sb.data, sb.size, &err), CL_EPARSE);
	assert_int_equal(cl_hist_count(&cnt), 0);

	/* The checker agrees with the decoder and never touches h. */
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	assert_int_equal(msgpack_unpack_next(&u, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
	assert_int_equal(cl_hist_unpack_check(&t.h, &u.data, &err), 0);
	assert_true(cl_hist_equal(&t.h, &t.before));
	assert_int_equal(cl_hist_unpack_check(&cnt, &u.data, &err), CL_EPARSE);
	msgpack_unpacked_destroy(&u);

	cl_hist_destroy(&cnt);
	cl_hist_destroy(&plain);
	msgpack_sbuffer_destroy(&sb);
	target_destroy(&t);
}

/* Every structural truncation of a real encoding's bucket array is caught (by the count
 * total or the odd length), never half-applied. */
static void test_truncated_buckets(void **state)
{
	struct target t;
	target_init(&t);
	struct cl_hist src;
	assert_int_equal(cl_hist_init(&src, &lat_cfg), 0);
	fill_sample(&src, 13, 300);
	/* Re-encode src's buckets as the builder's array. */
	uint64_t *b = calloc(2 * (size_t)src.counts_len, sizeof(*b));
	assert_non_null(b);
	size_t blen = 0;
	int32_t st = 0, idx, prev = 0;
	int64_t val;
	uint64_t cnt;
	while (cl_hist_next_bucket(&src, &st, &idx, &val, &cnt)) {
		b[blen++] = (uint64_t)(idx - prev);
		b[blen++] = cnt;
		prev = idx;
	}
	struct enc e = good_enc();
	e.n = cl_hist_count(&src);
	e.min = cl_hist_min(&src);
	e.max = cl_hist_max(&src);
	e.sum = src.sum;
	e.b = b;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	char what[64];
	for (size_t len = 0; len < blen; len++) {
		e.blen = len;
		enc_pack(&sb, &e);
		snprintf(what, sizeof(what), "bucket array cut to %zu/%zu", len, blen);
		expect_rejected(&t, sb.data, sb.size, what, NULL);
	}
	e.blen = blen;
	enc_pack(&sb, &e);
	struct cl_hist d;
	struct cl_err err = { 0 };
	assert_int_equal(cl_hist_init(&d, &lat_cfg), 0);
	assert_int_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_true(cl_hist_equal(&d, &src));
	cl_hist_destroy(&d);
	free(b);
	msgpack_sbuffer_destroy(&sb);
	cl_hist_destroy(&src);
	target_destroy(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_validation),
		cmocka_unit_test(test_accuracy_distributions),
		cmocka_unit_test(test_accuracy_adversarial),
		cmocka_unit_test(test_low_negative_and_overflow),
		cmocka_unit_test(test_record_n_and_reset),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_count_at_or_below),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_hand_encodings),
		cmocka_unit_test(test_truncated_buckets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
