/* stages[].ci95 on real histograms: batch means give the t interval the formula says, the
 * ramp and drain stay out, memory stays bounded however long the stage (batches merge), a
 * percentile's interval covers its true value about 95 % of the time when values come in
 * correlated clumps (where the order-statistic interval covers half as often) and stays as
 * narrow as that one when they do not, a percentile of few values still gets one (or null
 * when its ranks leave the data), a stage of too few intervals has none, and repeats pool
 * their figures with ci95 across them (a percentile's from the repeats' distribution
 * functions). */
#include "coord_metrics.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/results.h"

#include "chatload/exitcode.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/chatload-ci-test-XXXXXX";
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

static void rm_rf(char *path)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
	free(path);
}

/* One interval: n requests, each with this TTFT and tokens output tokens; errors failed. */
static void interval(struct cl_metrics *m, uint32_t n, int64_t ttft_us, uint32_t tokens,
		     uint32_t errors)
{
	cl_metrics_reset(m);
	for (uint32_t i = 0; i < n; i++) {
		cl_hist_record(&m->lat[CL_LAT_TTFT], ttft_us);
		cl_hist_record(&m->lat[CL_LAT_ITL], 10000);
		m->ctr[CL_CTR_STARTED]++;
		m->ctr[CL_CTR_COMPLETED]++;
		m->ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
		m->ctr[CL_CTR_OUTPUT_TOKENS] += tokens;
	}
	m->ctr[CL_CTR_STARTED] += errors;
	m->ctr[CL_CTR_ERR_HTTP_5XX] += errors;
}

static double num(const json_t *o, const char *path)
{
	return cl_results_num(o, path);
}

static void fail_near(double got, double want, double tol, const char *what)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("%s: got %.6g, want %.6g +- %.3g", what, got, want, tol);
}

struct fixture {
	char *dir;
	struct cl_scenario s;
	struct cl_results *r;
	struct cl_metrics iv, cum;
};

static void fx_open(struct fixture *f, int64_t ramp_us, int64_t duration_us, uint32_t repeat)
{
	f->dir = make_tmpdir();
	const uint32_t conc[] = { 4 };
	tm_scenario(&f->s, "ci", conc, 1);
	f->s.output.formats = CL_FMT_JSON;
	f->s.stages[0].ramp_us = ramp_us;
	f->s.stages[0].duration_us = duration_us;
	f->s.stages[0].repeat = repeat;
	char *argv[] = { "chatload" };
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&f->s, NULL, 1, argv, f->dir, &f->r, &err), 0);
	assert_int_equal(cl_metrics_init(&f->iv), 0);
	assert_int_equal(cl_metrics_init(&f->cum), 0);
}

static void fx_close(struct fixture *f)
{
	cl_metrics_destroy(&f->iv);
	cl_metrics_destroy(&f->cum);
	cl_results_destroy(f->r);
	tm_scenario_free(&f->s);
	rm_rf(f->dir);
}

/* Ten measured 1 s intervals whose output alternates 100 and 200 tokens/s: batch means of ten
 * batches of one interval, so the half-width is t(0.975, 9) * sd / sqrt(10) with sd =
 * 50 * sqrt(10/9).  The slow ramp and drain intervals around them must not count. */
static void test_batch_means_formula(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f, 2000000, 10000000, 1);
	for (int k = 1; k <= 13; k++) {
		bool measured = k > 2 && k <= 12;
		uint32_t tokens = measured ? (k % 2 ? 10 : 20) : 1;
		/* ramp and drain: 1000 tokens/s and a huge TTFT, which would widen everything */
		interval(&f.iv, 10, measured ? 100000 : 5000000, measured ? tokens : 100, 0);
		assert_int_equal(cl_results_add_interval(f.r, 0, k, &f.iv, 1.0), 0);
		if (measured)
			assert_int_equal(cl_metrics_merge(&f.cum, &f.iv), 0);
	}
	assert_int_equal(
	    cl_results_finish_stage(f.r, 0, &f.s.stages[0], &f.cum, 10, CL_STAGE_OK, NULL), 0);
	const json_t *ci = json_object_get(cl_results_stage(f.r, 0), "ci95");
	assert_true(json_is_object(ci));
	assert_string_equal(cl_results_str(ci, "method", ""), "batch_means");
	assert_true(num(ci, "n") == 10);
	assert_true(num(ci, "intervals_per_batch") == 1);
	double want = 2.262 * 50 * sqrt(10.0 / 9) / sqrt(10.0);
	fail_near(num(ci, "output_tokens_per_s.half"), want, 0.01, "output tok/s half");
	fail_near(num(ci, "output_tokens_per_s.low"), 150 - want, 0.01, "output tok/s low");
	fail_near(num(ci, "output_tokens_per_s.high"), 150 + want, 0.01, "output tok/s high");
	/* Every request in the window had the same TTFT: no spread at all. */
	assert_true(num(ci, "requests_per_s.half") == 0);
	if (num(ci, "ttft_p50_ms.half") != 0)
		fail_msg("ttft p50: %s", json_dumps(json_object_get(ci, "ttft_p50_ms"), 0));
	fail_near(num(ci, "ttft_p50_ms.low"), 100, 0.1, "ttft p50 low");
	/* 10 requests a batch: p99 needs 500 per group, 100 in all is too few for the
	 * order-statistic interval's upper rank: null, not a made-up number. */
	assert_true(json_is_null(json_object_get(ci, "ttft_p99_ms")));
	assert_true(num(ci, "error_rate.half") == 0);
	fx_close(&f);
}

/* A long stage: 5000 intervals.  The batches merge as they fill, so the stage holds 10..20
 * of them, each a whole number of intervals; a p99 with enough requests gets batch means. */
static void test_bounded_batches(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f, 0, 5000LL * 1000000, 1);
	for (int k = 1; k <= 5000; k++) {
		interval(&f.iv, 20, (100 + k % 7) * 1000, 10, k % 50 == 0);
		assert_int_equal(cl_results_add_interval(f.r, 0, k, &f.iv, 1.0), 0);
		assert_int_equal(cl_metrics_merge(&f.cum, &f.iv), 0);
	}
	assert_int_equal(
	    cl_results_finish_stage(f.r, 0, &f.s.stages[0], &f.cum, 5000, CL_STAGE_OK, NULL), 0);
	const json_t *ci = json_object_get(cl_results_stage(f.r, 0), "ci95");
	double n = num(ci, "n"), per = num(ci, "intervals_per_batch");
	if (!(n >= 10 && n <= 20 && per >= 256 && n * per <= 5000 && n * per > 5000 - per))
		fail_msg("batches: %g of %g intervals for 5000 intervals", n, per);
	assert_string_equal(cl_results_str(json_object_get(ci, "ttft_p99_ms"), "method", ""),
			    "cdf_batch_means");
	/* One error every 50 intervals is spread evenly: a narrow interval around 0.1 %. */
	double er = num(cl_results_stage(f.r, 0), "requests.error_rate");
	assert_true(num(ci, "error_rate.low") <= er && num(ci, "error_rate.high") >= er);
	assert_true(num(ci, "error_rate.half") < er);
	fx_close(&f);
}

/* A p99 interval: ci.c's and, for reference, the order-statistic one of the same pooled
 * histogram (ranks N p -+ 1.96 sqrt(N p (1 - p)): the values taken as independent). */
struct p99_ci {
	double lo, hi;     /* ci.c's, ms; NaN when null */
	double os_lo, os_hi; /* order statistics, ms */
};

/* One stage of 10 intervals of 1 s against a simulator whose every batch step makes one gap,
 * uniform on 1..2000 us, shared by the `streams` streams in the step (recorded that many
 * times): `steps` steps an interval.  The true p99 is 1980 us, and the pooled histogram holds
 * values below 2048 us exactly. */
static struct p99_ci clumped_stage(uint64_t *seed, uint32_t steps, uint32_t streams)
{
	struct cli_rs_ci *c = cli_rs_ci_new(0, 10);
	assert_non_null(c);
	struct cl_metrics iv, cum;
	assert_int_equal(cl_metrics_init(&iv), 0);
	assert_int_equal(cl_metrics_init(&cum), 0);
	for (int k = 1; k <= 10; k++) {
		cl_metrics_reset(&iv);
		for (uint32_t i = 0; i < steps; i++)
			cl_hist_record_n(&iv.lat[CL_LAT_ITL], 1 + (int64_t)(2000 * tm_unit(seed)),
					 streams);
		cli_rs_ci_add(c, k, 1.0, &iv);
		assert_int_equal(cl_metrics_merge(&cum, &iv), 0);
	}
	const struct cl_hist *pooled = &cum.lat[CL_LAT_ITL];
	double est = (double)cl_hist_percentile(pooled, 99) / 1000.0;
	json_t *stage = json_pack("{s:{s:{s:f}}}", "latency_ms", "itl", "p99", est);
	json_t *ci = cli_rs_ci_json(c, stage, &cum);
	assert_non_null(ci);
	const json_t *fig = json_object_get(ci, "itl_p99_ms");
	struct p99_ci r = { NAN, NAN, NAN, NAN };
	if (json_is_object(fig)) {
		assert_string_equal(cl_results_str(fig, "method", ""), "cdf_batch_means");
		r.lo = num(fig, "low");
		r.hi = num(fig, "high");
		if (!(r.lo <= est && est <= r.hi))
			fail_msg("p99 %g outside its interval [%g, %g]", est, r.lo, r.hi);
	}
	double n = (double)cl_hist_count(pooled), sd = sqrt(n * 0.99 * 0.01);
	r.os_lo = (double)cl_hist_percentile(pooled, 100 * (floor(n * 0.99 - 1.96 * sd) - 0.5) / n) /
		  1000.0;
	r.os_hi = (double)cl_hist_percentile(pooled, 100 * (ceil(n * 0.99 + 1.96 * sd) - 0.5) / n) /
		  1000.0;
	json_decref(ci);
	json_decref(stage);
	cl_metrics_destroy(&iv);
	cl_metrics_destroy(&cum);
	cli_rs_ci_free(c);
	return r;
}

/* Over `trials` stages: how often each interval holds the true p99, and their mean widths. */
struct coverage {
	int hits, os_hits, none;
	double width, os_width;
};

static struct coverage p99_coverage(uint64_t seed, int trials, uint32_t steps, uint32_t streams)
{
	const double truth = 1.980;
	struct coverage cv = { 0 };
	int both = 0;
	for (int t = 0; t < trials; t++) {
		struct p99_ci r = clumped_stage(&seed, steps, streams);
		cv.os_hits += r.os_lo <= truth && truth <= r.os_hi;
		if (!(isfinite(r.lo) && isfinite(r.hi))) {
			cv.none++; /* null: counted as a miss, it says nothing of the p99 */
			continue;
		}
		cv.hits += r.lo <= truth && truth <= r.hi;
		cv.width += r.hi - r.lo;
		cv.os_width += r.os_hi - r.os_lo;
		both++;
	}
	if (both) {
		cv.width /= both;
		cv.os_width /= both;
	}
	return cv;
}

/* Eight streams share each gap (a simulator batch step of eight): 16000 values a stage, but
 * only 2000 independent ones.  The order-statistic interval, binomial over 16000, is about
 * sqrt(8) too narrow and holds the true p99 far less than 95 % of the time; the batch-CDF
 * interval sees the clumps in its batches' spread and holds it about 95 % of the time, about
 * sqrt(8) times wider.  Deterministic (a seeded generator); the bounds leave room for another seed: at 95 %
 * coverage 200 trials give 190 +- 3, at 63 % 126 +- 7 (seen: 192 and 126, widths 2.7 : 1). */
static void test_p99_correlated_values(void **state)
{
	(void)state;
	const int trials = 200;
	struct coverage cv = p99_coverage(28, trials, 200, 8);
	if (cv.hits < 176 || cv.hits > 199 || cv.os_hits > 150)
		fail_msg("clumped p99: cdf_batch_means covered %d/%d (%d null, width %.4f ms), "
			 "order statistics %d/%d (width %.4f ms)",
			 cv.hits, trials, cv.none, cv.width, cv.os_hits, trials, cv.os_width);
	if (!(cv.width > 2 * cv.os_width))
		fail_msg("clumped p99: width %.4f ms, order statistics %.4f ms", cv.width,
			 cv.os_width);
}

/* The same 16000 values a stage, each its own: the values are independent, the order-statistic
 * interval is right, and the batch-CDF interval must be about as narrow (never narrower: it
 * takes the binomial width as its floor) and cover about as often (seen: 198 and 197 of 200,
 * widths 1.13 : 1, the t factor of ten batches). */
static void test_p99_independent_values(void **state)
{
	(void)state;
	const int trials = 200;
	struct coverage cv = p99_coverage(29, trials, 1600, 1);
	if (cv.hits < 176 || cv.os_hits < 170 || cv.width < cv.os_width ||
	    cv.width > 1.4 * cv.os_width)
		fail_msg("independent p99: cdf_batch_means covered %d/%d (%d null, width %.4f ms), "
			 "order statistics %d/%d (width %.4f ms)",
			 cv.hits, trials, cv.none, cv.width, cv.os_hits, trials, cv.os_width);
}

/* Three requests an interval, 30 in all: no batch has a median of its own worth the name, yet
 * the median gets an interval (the batches' shares at or below it need no minimum), around
 * the stage's figure and wider than nothing; the p99 of 30 values has no upper rank: null. */
static void test_percentile_of_few_values(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f, 0, 10000000, 1);
	uint64_t seed = 7;
	for (int k = 1; k <= 10; k++) {
		cl_metrics_reset(&f.iv);
		for (int i = 0; i < 3; i++) {
			cl_hist_record(&f.iv.lat[CL_LAT_TTFT], 50000 + (int64_t)(100000 * tm_unit(&seed)));
			f.iv.ctr[CL_CTR_STARTED]++;
			f.iv.ctr[CL_CTR_COMPLETED]++;
			f.iv.ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
			f.iv.ctr[CL_CTR_OUTPUT_TOKENS] += 10;
		}
		assert_int_equal(cl_results_add_interval(f.r, 0, k, &f.iv, 1.0), 0);
		assert_int_equal(cl_metrics_merge(&f.cum, &f.iv), 0);
	}
	assert_int_equal(
	    cl_results_finish_stage(f.r, 0, &f.s.stages[0], &f.cum, 10, CL_STAGE_OK, NULL), 0);
	const json_t *st = cl_results_stage(f.r, 0);
	const json_t *p50 = json_object_get(json_object_get(st, "ci95"), "ttft_p50_ms");
	assert_true(json_is_object(p50));
	assert_string_equal(cl_results_str(p50, "method", ""), "cdf_batch_means");
	assert_true(num(p50, "n") == 30);
	double est = num(st, "latency_ms.ttft.p50");
	if (!(num(p50, "low") < est && est < num(p50, "high") && num(p50, "half") > 5))
		fail_msg("ttft p50 %g: %s", est, json_dumps(p50, 0));
	assert_true(json_is_null(json_object_get(json_object_get(st, "ci95"), "ttft_p99_ms")));
	fx_close(&f);
}

/* The ITL p99 interval of 10 batches k = 0..9 that each hold `per` values 1000 + k, 1010 + k,
 * ... us: all distinct, and the batches agree to within one value, so the width is the
 * binomial one over 10 * per values. */
static json_t *p99_of_equal_batches(uint32_t per)
{
	struct cli_rs_ci *c = cli_rs_ci_new(0, 10);
	struct cl_metrics iv, cum;
	assert_non_null(c);
	assert_int_equal(cl_metrics_init(&iv), 0);
	assert_int_equal(cl_metrics_init(&cum), 0);
	for (int k = 1; k <= 10; k++) {
		cl_metrics_reset(&iv);
		for (uint32_t i = 0; i < per; i++)
			cl_hist_record(&iv.lat[CL_LAT_ITL], 1000 + 10 * (int64_t)i + k - 1);
		cli_rs_ci_add(c, k, 1.0, &iv);
		assert_int_equal(cl_metrics_merge(&cum, &iv), 0);
	}
	double est = (double)cl_hist_percentile(&cum.lat[CL_LAT_ITL], 99) / 1000.0;
	json_t *stage = json_pack("{s:{s:{s:f}}}", "latency_ms", "itl", "p99", est);
	json_t *ci = cli_rs_ci_json(c, stage, &cum);
	json_t *fig = json_incref(json_object_get(ci, "itl_p99_ms"));
	json_decref(ci);
	json_decref(stage);
	cl_metrics_destroy(&iv);
	cl_metrics_destroy(&cum);
	cli_rs_ci_free(c);
	return fig;
}

/* Where the upper rank passes the data the max stands in, if it still bounds the p99 at
 * 97.5 %: 380 independent values all fall below the p99 with probability 0.99^380 = 2.2 %,
 * so the max bounds it; 360 values do with 2.7 %: null. */
static void test_p99_max_as_upper_end(void **state)
{
	(void)state;
	json_t *fig = p99_of_equal_batches(38);
	assert_true(json_is_object(fig));
	/* ranks 372 .. 380 of 1000 + 10 i + k: 1371 .. the max 1379 us, around the p99 1376 */
	if (num(fig, "high") != 1.379 || num(fig, "low") != 1.371)
		fail_msg("380 values: %s", json_dumps(fig, 0));
	json_decref(fig);
	fig = p99_of_equal_batches(36);
	assert_true(json_is_null(fig));
	json_decref(fig);
}

/* Fewer than 5 intervals: no interval worth printing. */
static void test_too_short(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f, 0, 4000000, 1);
	for (int k = 1; k <= 4; k++) {
		interval(&f.iv, 10, 100000, 10, 0);
		assert_int_equal(cl_results_add_interval(f.r, 0, k, &f.iv, 1.0), 0);
		assert_int_equal(cl_metrics_merge(&f.cum, &f.iv), 0);
	}
	assert_int_equal(
	    cl_results_finish_stage(f.r, 0, &f.s.stages[0], &f.cum, 4, CL_STAGE_OK, NULL), 0);
	assert_true(json_is_null(json_object_get(cl_results_stage(f.r, 0), "ci95")));
	fx_close(&f);
}

/* Three repeats of 6 intervals at 100, 130 and 160 tokens/s: the stage pools them (145 over
 * 18 s... here 130 tokens/s), lists each with its own batch-means ci95, and its ci95 is the t
 * interval across the three: t(0.975, 2) * 30 / sqrt(3). */
static void test_repeats(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f, 0, 6000000, 3);
	for (int rep = 0; rep < 3; rep++) {
		struct cl_metrics one;
		assert_int_equal(cl_metrics_init(&one), 0);
		for (int k = 1; k <= 6; k++) {
			interval(&f.iv, 10, (100 + 10 * rep) * 1000, 10 + 3 * rep, 0);
			assert_int_equal(cl_results_add_interval(f.r, 0, k, &f.iv, 1.0), 0);
			assert_int_equal(cl_metrics_merge(&one, &f.iv), 0);
		}
		assert_int_equal(
		    cl_results_finish_repeat(f.r, 0, &f.s.stages[0], &one, 6, CL_STAGE_OK, NULL),
		    0);
		/* Not finished until the last repeat. */
		if (rep < 2)
			assert_null(cl_results_stage(f.r, 0));
		cl_metrics_destroy(&one);
	}
	const json_t *st = cl_results_stage(f.r, 0);
	assert_non_null(st);
	assert_true(num(st, "repeat") == 3);
	fail_near(num(st, "duration_s"), 18, 1e-9, "pooled window");
	fail_near(num(st, "throughput.output_tokens_per_s"), 130, 1e-6, "pooled tok/s");
	assert_true(num(st, "requests.completed") == 180);
	const json_t *reps = json_object_get(st, "repeats");
	assert_int_equal(json_array_size(reps), 3);
	for (size_t i = 0; i < 3; i++) {
		const json_t *one = json_array_get(reps, i);
		assert_true(num(one, "repeat") == (double)i + 1);
		fail_near(num(one, "throughput.output_tokens_per_s"), 100 + 30 * (double)i, 1e-6,
			  "repeat tok/s");
		assert_string_equal(cl_results_str(one, "ci95.method", ""), "batch_means");
		assert_null(json_object_get(one, "histograms"));
	}
	const json_t *ci = json_object_get(st, "ci95");
	assert_string_equal(cl_results_str(ci, "method", ""), "repeats");
	assert_true(num(ci, "n") == 3);
	fail_near(num(ci, "output_tokens_per_s.half"), 4.303 * 30 / sqrt(3.0), 0.01,
		  "across repeats");
	fail_near(num(ci, "ttft_p50_ms.half"), 4.303 * 10 / sqrt(3.0), 0.05, "ttft across");
	/* Every interval row says its repeat. */
	const json_t *ivs = json_object_get(st, "intervals");
	assert_int_equal(json_array_size(ivs), 18);
	assert_true(num(json_array_get(ivs, 0), "repeat") == 1);
	assert_true(num(json_array_get(ivs, 17), "repeat") == 3);
	fx_close(&f);
}

/* Five repeats of 6 intervals; repeat r records TTFT values 1..100 ms moved by shift * r ms
 * (100 values a repeat).  Returns the stage's ttft_p50_ms interval (a new reference). */
static json_t *p50_across_repeats(int64_t shift_ms)
{
	struct fixture f;
	fx_open(&f, 0, 6000000, 5);
	for (int rep = 0; rep < 5; rep++) {
		struct cl_metrics one;
		assert_int_equal(cl_metrics_init(&one), 0);
		for (int k = 1; k <= 6; k++) {
			interval(&f.iv, 0, 0, 0, 0);
			for (int64_t v = k; v <= 100; v += 6) {
				cl_hist_record(&f.iv.lat[CL_LAT_TTFT], (v + shift_ms * rep) * 1000);
				f.iv.ctr[CL_CTR_STARTED]++;
				f.iv.ctr[CL_CTR_COMPLETED]++;
				f.iv.ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
			}
			assert_int_equal(cl_results_add_interval(f.r, 0, k, &f.iv, 1.0), 0);
			assert_int_equal(cl_metrics_merge(&one, &f.iv), 0);
		}
		assert_int_equal(
		    cl_results_finish_repeat(f.r, 0, &f.s.stages[0], &one, 6, CL_STAGE_OK, NULL),
		    0);
		cl_metrics_destroy(&one);
	}
	const json_t *st = cl_results_stage(f.r, 0);
	assert_non_null(st);
	json_t *fig = json_incref(json_object_get(json_object_get(st, "ci95"), "ttft_p50_ms"));
	double est = num(st, "latency_ms.ttft.p50");
	if (!json_is_object(fig) || !(num(fig, "low") <= est && est <= num(fig, "high")))
		fail_msg("ttft p50 %g: %s", est, fig ? json_dumps(fig, 0) : "(none)");
	assert_string_equal(cl_results_str(fig, "method", ""), "cdf_repeats");
	assert_true(num(fig, "n") == 500);
	fx_close(&f);
	return fig;
}

/* Across repeats a percentile's interval comes from each repeat's share of values at or below
 * the pooled percentile (cdf_repeats).  Repeats 5 ms apart: the shares at the pooled median
 * (~60 ms) are 0.60, 0.55, ... 0.40, t(0.975, 4) * se = 0.098 of the 500 values, about 49
 * ranks each side, ~10 ms where 500 values spread over 120 ms (the t interval of the
 * repeats' own medians, 50.5 + 5 r ms, says 9.8).  Identical repeats: the binomial floor,
 * 1.96 * sqrt(0.25 / 500) = 0.044, ~22 ranks, ~4.4 ms. */
static void test_percentile_across_repeats(void **state)
{
	(void)state;
	json_t *apart = p50_across_repeats(5);
	json_t *same = p50_across_repeats(0);
	if (!(num(apart, "half") > 7 && num(apart, "half") < 13))
		fail_msg("repeats 5 ms apart: %s", json_dumps(apart, 0));
	if (!(num(same, "half") > 3 && num(same, "half") < 6))
		fail_msg("identical repeats: %s", json_dumps(same, 0));
	json_decref(apart);
	json_decref(same);
}

/* The run stopped after 2 of 4 repeats: the stage finishes from those two, and says so. */
static void test_repeats_cut_short(void **state)
{
	(void)state;
	struct fixture f;
	fx_open(&f, 0, 6000000, 4);
	for (int rep = 0; rep < 2; rep++) {
		cl_metrics_reset(&f.cum);
		for (int k = 1; k <= 6; k++) {
			interval(&f.iv, 10, 100000, 10, 0);
			assert_int_equal(cl_results_add_interval(f.r, 0, k, &f.iv, 1.0), 0);
			assert_int_equal(cl_metrics_merge(&f.cum, &f.iv), 0);
		}
		assert_int_equal(cl_results_finish_repeat(f.r, 0, &f.s.stages[0], &f.cum, 6,
							  rep ? CL_STAGE_INTERRUPTED : CL_STAGE_OK,
							  rep ? "interrupted by a signal" : NULL),
				 0);
	}
	assert_null(cl_results_stage(f.r, 0));
	assert_int_equal(cl_results_end_repeats(f.r, 0, &f.s.stages[0]), 0);
	const json_t *st = cl_results_stage(f.r, 0);
	assert_non_null(st);
	assert_string_equal(cl_results_str(st, "status", ""), "interrupted");
	const char *why = cl_results_str(st, "reason", "");
	if (!strstr(why, "2 of 4 repeats ran") || !strstr(why, "repeat 2: interrupted"))
		fail_msg("reason: '%s'", why);
	assert_int_equal(json_array_size(json_object_get(st, "repeats")), 2);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_means_formula), cmocka_unit_test(test_bounded_batches),
		cmocka_unit_test(test_p99_correlated_values),
		cmocka_unit_test(test_p99_independent_values),
		cmocka_unit_test(test_percentile_of_few_values),
		cmocka_unit_test(test_p99_max_as_upper_end),
		cmocka_unit_test(test_too_short),           cmocka_unit_test(test_repeats),
		cmocka_unit_test(test_repeats_cut_short),
		cmocka_unit_test(test_percentile_across_repeats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
