/* The load models against the real simulator: closed loop holds exactly C in flight; Poisson,
 * gamma and constant arrivals have the right distribution; requests-bounded stages start
 * exactly N across W workers; the ramp is excluded from the window; a concurrency cap
 * queues arrivals (never drops them silently); drain then cut; stop. */
#include "harness.h"

#include "chatload/clock.h"
#include "chatload/stall.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

struct span {
	int64_t a, b;
	int key;
};

static int cmp_ev(const void *x, const void *y)
{
	const int64_t *a = x, *b = y;
	if (a[0] != b[0])
		return (a[0] > b[0]) - (a[0] < b[0]);
	return (a[1] > b[1]) - (a[1] < b[1]); /* ends (-1) before starts (+1) at a tie */
}

/* Max overlap of [a, b) spans, and the time-weighted mean overlap over [from, to). */
static int max_overlap(const struct span *s, size_t n, int64_t from, int64_t to, double *mean)
{
	int64_t(*ev)[2] = malloc(2 * n * sizeof(*ev));
	for (size_t i = 0; i < n; i++) {
		ev[2 * i][0] = s[i].a;
		ev[2 * i][1] = 1;
		ev[2 * i + 1][0] = s[i].b;
		ev[2 * i + 1][1] = -1;
	}
	qsort(ev, 2 * n, sizeof(*ev), cmp_ev);
	int cur = 0, best = 0;
	double area = 0;
	int64_t prev = from;
	for (size_t i = 0; i < 2 * n; i++) {
		int64_t t = ev[i][0];
		if (t > from && prev < to) {
			int64_t lo = prev > from ? prev : from, hi = t < to ? t : to;
			if (hi > lo)
				area += (double)cur * (double)(hi - lo);
		}
		prev = t > prev ? t : prev;
		cur += (int)ev[i][1];
		if (cur > best)
			best = cur;
	}
	if (prev < to)
		area += (double)cur * (double)(to - prev);
	if (mean)
		*mean = area / (double)(to - from);
	free(ev);
	return best;
}

/* Inter-arrival gaps (seconds) of the window's requests, by intended start. */
static double *window_gaps(const struct h_jsonl *log, size_t *n_out)
{
	int64_t *t = malloc(log->n * sizeof(*t));
	size_t n = 0;
	for (size_t i = 0; i < log->n; i++)
		if (json_is_true(json_object_get(log->rows[i], "window")))
			t[n++] = h_int(log->rows[i], "intended_us", 0);
	qsort(t, n, sizeof(*t), h_cmp_i64);
	double *g = malloc((n ? n : 1) * sizeof(*g));
	for (size_t i = 1; i < n; i++)
		g[i - 1] = (double)(t[i] - t[i - 1]) / 1e6;
	*n_out = n ? n - 1 : 0;
	free(t);
	return g;
}

static double ks_exponential(double *x, size_t n, double rate)
{
	qsort(x, n, sizeof(*x), h_cmp_double);
	double d = 0;
	for (size_t i = 0; i < n; i++) {
		double f = 1.0 - exp(-rate * x[i]);
		double lo = f - (double)i / (double)n, hi = (double)(i + 1) / (double)n - f;
		d = fmax(d, fmax(lo, hi));
	}
	return d;
}

static void test_closed_loop_exact_concurrency(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "20ms", "--itl", "2ms", "--output-tokens", "40", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 2, .max_tokens = 64 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(8, 0, 1500000);
	struct cl_err err = { 0 };
	int64_t start = cl_mono_us() + 20000;
	assert_int_equal(cl_engine_start(he.e, &p, start, &err), 0);
	/* A second start while one runs is refused. */
	assert_int_equal(cl_engine_start(he.e, &p, start, &err), CL_ESTATE);
	/* Sample the gauge through the window (skipping the first and last 100 ms). */
	int n_samples = 0, at_c = 0, over = 0;
	while (cl_mono_us() < start + 1400000) {
		int64_t now = cl_mono_us();
		if (now > start + 100000) {
			int64_t f = cl_engine_inflight(he.e);
			n_samples++;
			at_c += f == 8;
			over += f > 8;
			assert_int_equal(cl_engine_state(he.e), CL_ENGINE_RUNNING);
		}
		cl_sleep_ns(5 * 1000000LL);
	}
	assert_int_equal(cl_engine_wait(he.e, 10000000), 0);
	struct cl_metrics m;
	assert_int_equal(cl_metrics_init(&m), 0);
	assert_int_equal(cl_engine_collect(he.e, &m), 0);
	h_sim_stop(&sim);
	printf("  inflight gauge: %d of %d samples at 8, %d above\n", at_c, n_samples, over);
	assert_int_equal(over, 0);
	check_cmp(at_c, >=, n_samples * 95 / 100);
	assert_int_equal(m.ctr[CL_CTR_CUT] + m.ctr[CL_CTR_COMPLETED], m.ctr[CL_CTR_STARTED]);
	/* 98 ms per request (20 ms + 39 * 2 ms), 8 streams, a 1.5 s window: 8 * ceil(1.5 /
	 * 0.098) = 128 started inside it, the last ones finishing in the drain. */
	assert_in_range(m.ctr[CL_CTR_COMPLETED], 112, 136);

	/* The simulator's view: never more than 8 at once, and 8 nearly all the time. */
	struct h_jsonl truth, log;
	assert_int_equal(h_jsonl_load(&truth, sim.truth_path), 0);
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	struct span *sp = calloc(truth.n, sizeof(*sp));
	for (size_t i = 0; i < truth.n; i++) {
		sp[i].a = h_int(truth.rows[i], "arrival_us", 0);
		sp[i].b = h_int(truth.rows[i], "actual_last_us", 0);
	}
	double mean;
	int best = max_overlap(sp, truth.n, start + 100000, start + 1400000, &mean);
	printf("  simulator saw at most %d at once, %.3f on average\n", best, mean);
	assert_int_equal(best, 8);
	check_cmpf(mean, >, 7.8);
	/* Per worker (4 each) from our own log, [handed, end). */
	for (int wk = 0; wk < 2; wk++) {
		size_t n = 0;
		for (size_t i = 0; i < log.n; i++) {
			if (h_int(log.rows[i], "worker", -1) != wk)
				continue;
			sp[n].a = h_int(log.rows[i], "handed_us", 0);
			sp[n].b = h_int(log.rows[i], "end_us", 0);
			n++;
		}
		assert_int_equal(max_overlap(sp, n, start, start + 1500000, NULL), 4);
	}
	/* The next request starts when the last ended: queue time is the dispatch lag. */
	int64_t q50 = cl_hist_percentile(&m.lat[CL_LAT_QUEUE], 50);
	printf("  closed-loop dispatch lag p50 %lld p99 %lld us\n", (long long)q50,
	       (long long)cl_hist_percentile(&m.lat[CL_LAT_QUEUE], 99));
	assert_in_range(q50, 0, 500 * H_SLOW);
	free(sp);
	h_jsonl_free(&truth);
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

static void test_poisson_arrivals(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "2ms", "--itl", "1ms", "--output-tokens", "3", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 2 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	const double rate = 500;
	struct cl_stage_plan p = h_open(rate, CL_ARRIVAL_POISSON, 0, 2000000);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 10000, 15000000, &m), 0);
	h_sim_stop(&sim);
	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	size_t n;
	double *g = window_gaps(&log, &n);
	double d = ks_exponential(g, n, rate), crit = 1.95 / sqrt((double)n);
	uint64_t started = m.ctr[CL_CTR_STARTED];
	printf("  poisson %g/s for 2 s: %llu arrivals (want %g +- %g), KS D %.4f (critical "
	       "%.4f at alpha 0.001)\n",
	       rate, (unsigned long long)started, rate * 2, 4 * sqrt(rate * 2), d, crit);
	check_cmpf(d, <, crit);
	check_cmpf(fabs((double)started - rate * 2), <, 4 * sqrt(rate * 2));
	/* Dispatch lag is measured for every request. */
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_QUEUE]), started);
	printf("  open-loop dispatch lag p50 %lld p99 %lld max %lld us\n",
	       (long long)cl_hist_percentile(&m.lat[CL_LAT_QUEUE], 50),
	       (long long)cl_hist_percentile(&m.lat[CL_LAT_QUEUE], 99),
	       (long long)cl_hist_max(&m.lat[CL_LAT_QUEUE]));
	assert_in_range(cl_hist_percentile(&m.lat[CL_LAT_QUEUE], 50), 0, 500 * H_SLOW);
	/* One scheduler hiccup on a shared 2-core machine delays every arrival due in it (CI
	 * once saw a 104 ms max at 500/s); a lag that long is the stall detector's business
	 * (agent stall_test), so the bound on the worst request is the stall threshold. */
	assert_in_range(cl_hist_max(&m.lat[CL_LAT_QUEUE]), 0, CL_STALL_MIN_US);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], started);
	free(g);
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

static void test_gamma_arrivals(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "2ms", "--itl", "1ms", "--output-tokens", "3", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 2 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	const double rate = 800, k = 0.5; /* CV = 1/sqrt(k) = 1.414: burstier than Poisson */
	struct cl_stage_plan p = h_open(rate, CL_ARRIVAL_GAMMA, 0, 2000000);
	p.gamma_shape = k;
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 10000, 15000000, &m), 0);
	h_sim_stop(&sim);
	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	/*
	 * Each worker runs its own gamma process at rate/2, so the merged stream is a
	 * superposition; its gaps are not gamma.  Check each worker's own gaps instead.
	 */
	for (int wk = 0; wk < 2; wk++) {
		int64_t *t = malloc(log.n * sizeof(*t));
		size_t n = 0;
		for (size_t i = 0; i < log.n; i++)
			if (h_int(log.rows[i], "worker", -1) == wk &&
			    json_is_true(json_object_get(log.rows[i], "window")))
				t[n++] = h_int(log.rows[i], "intended_us", 0);
		qsort(t, n, sizeof(*t), h_cmp_i64);
		double sum = 0, sq = 0;
		for (size_t i = 1; i < n; i++) {
			double gap = (double)(t[i] - t[i - 1]) / 1e6;
			sum += gap;
			sq += gap * gap;
		}
		double mean = sum / (double)(n - 1);
		double cv = sqrt(sq / (double)(n - 1) - mean * mean) / mean;
		double want = 2 / rate;
		printf("  worker %d: %zu arrivals, mean gap %.3f ms (want %.3f), CV %.3f (want "
		       "%.3f)\n",
		       wk, n, mean * 1e3, want * 1e3, cv, 1 / sqrt(k));
		/* Standard errors at n ~ 800: mean 5%, CV ~8%; 4 of them. */
		check_cmpf(fabs(mean / want - 1), <, 4 * (1 / sqrt(k)) / sqrt((double)n));
		check_cmpf(fabs(cv * sqrt(k) - 1), <, 0.25);
		free(t);
	}
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

static void test_constant_arrivals_interleave(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "2ms", "--itl", "1ms", "--output-tokens", "2", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 2 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_open(200, CL_ARRIVAL_CONSTANT, 0, 1000000);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 10000, 10000000, &m), 0);
	h_sim_stop(&sim);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 200);
	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	size_t n;
	double *g = window_gaps(&log, &n);
	assert_int_equal(n, 199);
	/* Two workers at 100/s each, offset by half a gap: one arrival every 5 ms overall. */
	for (size_t i = 0; i < n; i++)
		assert_in_range(llround(g[i] * 1e6), 4999, 5001);
	free(g);
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

static void test_requests_exact_across_workers(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "2ms", "--itl", "1ms", "--output-tokens", "4", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 3 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(5, 37, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 10000000, &m), 0);
	h_sim_stop(&sim);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 37);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 37);
	struct h_jsonl log, truth;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	assert_int_equal(h_jsonl_load(&truth, sim.truth_path), 0);
	assert_int_equal(log.n, 37);
	assert_int_equal(truth.n, 37);
	/* Each worker started exactly its share of the split. */
	uint32_t w[3] = { 1, 1, 1 };
	struct cl_stage_plan parts[3];
	assert_int_equal(cl_stage_plan_split(&p, w, 3, parts), 0);
	for (int wk = 0; wk < 3; wk++) {
		uint64_t n = 0;
		for (size_t i = 0; i < log.n; i++)
			n += h_int(log.rows[i], "worker", -1) == wk;
		printf("  worker %d: %llu requests (share %llu, concurrency %u)\n", wk,
		       (unsigned long long)n, (unsigned long long)parts[wk].requests,
		       parts[wk].concurrency);
		assert_int_equal(n, parts[wk].requests);
		cl_stage_plan_free(&parts[wk]);
	}
	h_jsonl_free(&log);
	h_jsonl_free(&truth);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* Fewer requests than streams: exactly N start, and the worker does not spin waiting for the
 * streams it will never open (its CPU over the stage stays tiny). */
static void test_requests_below_concurrency(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "300ms", "--itl", "1ms", "--output-tokens", "2", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(8, 3, 0);
	struct cl_metrics m;
	int64_t cpu0 = cl_cpu_us(), t0 = cl_mono_us();
	assert_int_equal(h_run(&he, &p, 0, 10000000, &m), 0);
	int64_t cpu = cl_cpu_us() - cpu0, took = cl_mono_us() - t0;
	h_sim_stop(&sim);
	printf("  3 requests at concurrency 8: %lld ms, %lld ms of CPU\n", (long long)took / 1000,
	       (long long)cpu / 1000);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 3);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 3);
	check_cmp(took, >=, 300000);
	check_cmp(cpu, <, 100000);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* Requests outliving window + drain are cut, not errors; tokens count only inside the
 * window. */
static void test_drain_then_cut(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "10ms", "--itl", "100ms", "--output-tokens", "50", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 2, .max_tokens = 64 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(4, 0, 300000);
	p.drain_timeout_us = 200000;
	struct cl_metrics m;
	int64_t t0 = cl_mono_us(), cpu0 = cl_cpu_us();
	assert_int_equal(h_run(&he, &p, 0, 5000000, &m), 0);
	int64_t took = cl_mono_us() - t0, cpu = cl_cpu_us() - cpu0;
	printf("  stage with 300 ms window + 200 ms drain ended after %lld ms, %lld ms of CPU\n",
	       (long long)took / 1000, (long long)cpu / 1000);
	/* Four slow streams: the loop sleeps between chunks (no spinning on a timer). */
	check_cmp(cpu, <, 100000);
	assert_in_range(took, 480000, 1500000);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 4);
	assert_int_equal(m.ctr[CL_CTR_CUT], 4);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 0);
	for (int i = CL_CTR_FIRST_ERROR; i <= CL_CTR_LAST_ERROR; i++)
		assert_int_equal(m.ctr[i], 0);
	assert_int_equal(cl_engine_inflight(he.e), 0);
	/* Cut requests keep their first token's times and the ITLs seen (issue 33); E2E and
	 * TPOT need an end. TTFT is 10 ms on the simulator's clock. */
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_TTFT]), 4);
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_TTFC]), 4);
	check_cmp(cl_hist_percentile(&m.lat[CL_LAT_TTFT], 50), <, 100000);
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_E2E]), 0);
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_TPOT]), 0);
	/* No request completed, so none counts in the request rate. */
	assert_int_equal(m.ctr[CL_CTR_WINDOW_SHARE_MILLI], 0);
	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	uint64_t all_chunks = 0;
	for (size_t i = 0; i < log.n; i++) {
		assert_string_equal(h_str(log.rows[i], "status"), "cut");
		all_chunks += (uint64_t)h_int(log.rows[i], "chunks", 0);
	}
	/* 3 chunks each inside the window (10, 110, 210 ms), 2 more during the drain. */
	printf("  chunks counted in the window %llu of %llu received\n",
	       (unsigned long long)m.ctr[CL_CTR_CHUNKS], (unsigned long long)all_chunks);
	assert_int_equal(m.ctr[CL_CTR_CHUNKS], 12);
	assert_int_equal(all_chunks, 20);
	h_jsonl_free(&log);
	h_sim_stop(&sim);
	struct h_jsonl truth;
	assert_int_equal(h_jsonl_load(&truth, sim.truth_path), 0);
	for (size_t i = 0; i < truth.n; i++)
		assert_string_equal(h_str(truth.rows[i], "status"), "client_gone");
	h_jsonl_free(&truth);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

static void test_stop(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "10ms", "--itl", "50ms", "--output-tokens", "100", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 2, .max_tokens = 128, .max_streams = 8 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_err err = { 0 };
	/* More streams than slots is refused up front. */
	struct cl_stage_plan big = h_closed(9, 0, 1000000);
	assert_int_equal(cl_engine_start(he.e, &big, cl_mono_us(), &err), CL_EINVAL);
	printf("  refused: %s\n", err.msg);
	assert_int_equal(cl_engine_state(he.e), CL_ENGINE_IDLE);

	/* stop(cut_now) ends a 10 s stage at once. */
	struct cl_stage_plan p = h_closed(4, 0, 10000000);
	assert_int_equal(cl_engine_start(he.e, &p, cl_mono_us(), &err), 0);
	cl_sleep_ns(200 * 1000000LL);
	int64_t t0 = cl_mono_us();
	assert_int_equal(cl_engine_stop(he.e, true), 0);
	assert_int_equal(cl_engine_wait(he.e, 2000000), 0);
	printf("  stop(cut_now) took %lld us\n", (long long)(cl_mono_us() - t0));
	check_cmp(cl_mono_us() - t0, <, 500000);
	struct cl_metrics m;
	assert_int_equal(cl_metrics_init(&m), 0);
	assert_int_equal(cl_engine_collect(he.e, &m), 0);
	assert_int_equal(m.ctr[CL_CTR_CUT], 4);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 4);

	/* A stop before the start time ends a waiting stage with nothing sent. */
	cl_metrics_reset(&m);
	assert_int_equal(cl_engine_start(he.e, &p, cl_mono_us() + 5000000, &err), 0);
	assert_int_equal(cl_engine_state(he.e), CL_ENGINE_WAITING);
	assert_int_equal(cl_engine_stop(he.e, false), 0);
	assert_int_equal(cl_engine_wait(he.e, 1000000), 0);
	assert_int_equal(cl_engine_collect(he.e, &m), 0);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 0);

	/* stop() with drain: short requests finish rather than being cut. */
	h_sim_stop(&sim);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
	const char *fast[] = { "--ttft", "5ms", "--itl", "5ms", "--output-tokens", "20", NULL };
	assert_int_equal(h_sim_start(&sim, fast), 0);
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);

	/* A stage that starts later really waits, asleep, then runs. */
	cl_metrics_reset(&m);
	struct cl_stage_plan one = h_closed(1, 1, 0);
	int64_t cpu0 = cl_cpu_us(), t1 = cl_mono_us();
	assert_int_equal(cl_engine_start(he.e, &one, t1 + 300000, &err), 0);
	assert_int_equal(cl_engine_wait(he.e, 5000000), 0);
	int64_t waited = cl_mono_us() - t1, cpu = cl_cpu_us() - cpu0;
	assert_int_equal(cl_engine_collect(he.e, &m), 0);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 1);
	check_cmp(waited, >=, 300000);
	check_cmp(cpu, <, 50000);

	cl_metrics_reset(&m);
	assert_int_equal(cl_engine_start(he.e, &p, cl_mono_us(), &err), 0);
	cl_sleep_ns(150 * 1000000LL);
	assert_int_equal(cl_engine_stop(he.e, false), 0);
	assert_int_equal(cl_engine_wait(he.e, 2000000), 0);
	assert_int_equal(cl_engine_collect(he.e, &m), 0);
	assert_int_equal(m.ctr[CL_CTR_CUT], 0);
	check_cmp(m.ctr[CL_CTR_COMPLETED], >=, 4);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], m.ctr[CL_CTR_STARTED]);
	h_sim_stop(&sim);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* Closed-loop ramp 0 -> 4 over 400 ms: one user every 100 ms, all of it outside the
 * measured window. */
static void test_ramp_excluded(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "10ms", "--itl", "2ms", "--output-tokens", "20", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .max_tokens = 32 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(4, 0, 600000);
	p.ramp_us = 400000;
	p.ramp_from = 0;
	struct cl_err err = { 0 };
	int64_t start = cl_mono_us() + 20000;
	assert_int_equal(cl_engine_start(he.e, &p, start, &err), 0);
	cl_sleep_ns(150 * 1000000LL);
	assert_int_equal(cl_engine_state(he.e), CL_ENGINE_RAMPING);
	assert_int_equal(cl_engine_wait(he.e, 10000000), 0);
	struct cl_metrics m;
	assert_int_equal(cl_metrics_init(&m), 0);
	assert_int_equal(cl_engine_collect(he.e, &m), 0);
	h_sim_stop(&sim);
	struct cl_engine_stats st;
	cl_engine_stats(he.e, &st);

	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	int64_t win_start = start + p.ramp_us;
	uint64_t in_win = 0, ramp = 0;
	int64_t first_intended[4] = { 0 };
	size_t n_first = 0;
	for (size_t i = 0; i < log.n; i++) {
		json_t *r = log.rows[i];
		int64_t it = h_int(r, "intended_us", 0);
		bool win = json_is_true(json_object_get(r, "window"));
		check_cmp(win, ==, (it >= win_start));
		in_win += win;
		ramp += !win;
		/* A user's first request is intended at its ramp step: no request ended then. */
		if (n_first < 4 && (it - start) % 100000 == 0 && it - start <= 400000)
			first_intended[n_first++] = it - start;
	}
	assert_int_equal(n_first, 4);
	for (int k = 0; k < 4; k++)
		assert_int_equal(first_intended[k], (k + 1) * 100000);
	printf("  ramp: %llu requests in the ramp, %llu in the window\n", (unsigned long long)ramp,
	       (unsigned long long)in_win);
	assert_int_equal(st.ramp_started, ramp);
	assert_int_equal(st.ramp_finished, ramp);
	assert_int_equal(m.ctr[CL_CTR_STARTED], in_win);
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_QUEUE]), in_win);
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_TTFT]), m.ctr[CL_CTR_COMPLETED]);
	check_cmp(ramp, >=, 3);
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* Rate 100/s with a cap of 2 streams that can serve only ~20/s: arrivals wait with their
 * intended start kept, so queue time shows the backlog; none is silently lost. */
static void test_rate_cap_backlog(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft", "50ms", "--itl", "5ms", "--output-tokens", "10", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .max_tokens = 32 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_open(100, CL_ARRIVAL_CONSTANT, 0, 1000000);
	p.concurrency = 2;
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 10000, 10000000, &m), 0);
	h_sim_stop(&sim);
	struct cl_engine_stats st;
	cl_engine_stats(he.e, &st);
	uint64_t started = m.ctr[CL_CTR_STARTED];
	printf("  cap 2 at 100/s: %llu started, %llu still queued at the window's end, queue p50 "
	       "%lld ms max %lld ms\n",
	       (unsigned long long)started, (unsigned long long)st.unsent_backlog,
	       (long long)cl_hist_percentile(&m.lat[CL_LAT_QUEUE], 50) / 1000,
	       (long long)cl_hist_max(&m.lat[CL_LAT_QUEUE]) / 1000);
	/* 100 arrivals in the window: each was started or is counted as backlog. */
	assert_int_equal(started + st.unsent_backlog, 100);
	assert_in_range(started, 15, 25);
	check_cmp(cl_hist_max(&m.lat[CL_LAT_QUEUE]), >, 500000);
	/* e2e_sched (from the intended start) carries the backlog, e2e (from sending) not. */
	check_cmp(cl_hist_percentile(&m.lat[CL_LAT_E2E_SCHED], 90), >, 400000);
	check_cmp(cl_hist_percentile(&m.lat[CL_LAT_E2E], 90), <, 150000);
	struct h_jsonl truth;
	assert_int_equal(h_jsonl_load(&truth, sim.truth_path), 0);
	struct span *sp = calloc(truth.n, sizeof(*sp));
	for (size_t i = 0; i < truth.n; i++) {
		sp[i].a = h_int(truth.rows[i], "arrival_us", 0);
		sp[i].b = h_int(truth.rows[i], "actual_last_us", 0);
	}
	assert_int_equal(max_overlap(sp, truth.n, 0, INT64_MAX / 2, NULL), 2);
	free(sp);
	h_jsonl_free(&truth);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_closed_loop_exact_concurrency),
		cmocka_unit_test(test_poisson_arrivals),
		cmocka_unit_test(test_gamma_arrivals),
		cmocka_unit_test(test_constant_arrivals_interleave),
		cmocka_unit_test(test_requests_exact_across_workers),
		cmocka_unit_test(test_requests_below_concurrency),
		cmocka_unit_test(test_drain_then_cut),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_ramp_excluded),
		cmocka_unit_test(test_rate_cap_backlog),
	};
	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
