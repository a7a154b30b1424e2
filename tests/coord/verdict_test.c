/* Verdicts on real merged metrics: SLO boundaries, means, error rates, minimum rates, no
 * data, stage selection, estimates, goodput, client-bound rules and the exit code, and the
 * breach list and exit 99 a run's results end with. */
#include "coord_metrics.h"
#include "coordinator/results/results.h"
#include "coordinator/results/verdict.h"

#include "chatload/exitcode.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

static struct cl_scn_slo slo(enum cl_slo_kind kind, int lat, double pct, double limit,
			     const char *stage)
{
	struct cl_scn_slo s = { .key = "k",
				.kind = kind,
				.lat = lat,
				.percentile = pct,
				.limit = limit,
				.stage = (char *)stage };
	return s;
}

static void test_latency_boundary(void **state)
{
	struct cl_metrics m = { 0 };
	assert_int_equal(cl_metrics_init(&m), 0);
	/* 100 values 1..100 ms: p99 is the 99th value, 99 ms (exact: below 2048 us a bucket
	 * is one unit wide, above it the bucket top is what the histogram reports). */
	for (int i = 1; i <= 100; i++)
		cl_hist_record(&m.lat[CL_LAT_TTFT], i * 1000);
	int64_t p99 = cl_hist_percentile(&m.lat[CL_LAT_TTFT], 99);
	bool has;
	struct cl_scn_slo s = slo(CL_SLO_LATENCY, CL_LAT_TTFT, 99, (double)p99, NULL);
	double v = cl_verdict_measure(&s, &m, 1, &has);
	assert_true(has);
	assert_float_equal(v, (double)p99, 0);
	assert_true(p99 >= 99000 && p99 <= 99100);
	assert_true(cl_verdict_passes(&s, v, has)); /* equal to the limit passes */
	s.limit = (double)p99 - 1;
	assert_false(cl_verdict_passes(&s, v, has));

	/* Mean: percentile < 0. */
	s = slo(CL_SLO_LATENCY, CL_LAT_TTFT, -1, 50500, NULL);
	v = cl_verdict_measure(&s, &m, 1, &has);
	assert_float_equal(v, 50500, 1e-9);
	assert_true(cl_verdict_passes(&s, v, has));
	s.limit = 50499;
	assert_false(cl_verdict_passes(&s, v, has));
	assert_string_equal(cl_verdict_unit(&s), "ms");
	assert_float_equal(cl_verdict_to_unit(&s, 50500), 50.5, 1e-12);

	/* An empty histogram proves nothing: breached, no data. */
	s = slo(CL_SLO_LATENCY, CL_LAT_ITL, 99, 1e9, NULL);
	v = cl_verdict_measure(&s, &m, 1, &has);
	assert_false(has);
	assert_false(cl_verdict_passes(&s, v, has));
	cl_metrics_destroy(&m);
}

static void test_rates(void **state)
{
	struct cl_metrics m = { 0 };
	assert_int_equal(cl_metrics_init(&m), 0);
	m.ctr[CL_CTR_COMPLETED] = 99;
	m.ctr[CL_CTR_COMPLETED_IN_WINDOW] = 99;
	m.ctr[CL_CTR_WINDOW_SHARE_MILLI] = 99000;
	m.ctr[CL_CTR_ERR_TIMEOUT] = 1;
	m.ctr[CL_CTR_CUT] = 7; /* cut requests are not errors */
	m.ctr[CL_CTR_OUTPUT_TOKENS] = 5000;
	m.ctr[CL_CTR_GOOD] = 80;
	assert_int_equal(cl_verdict_errors(&m), 1);
	assert_float_equal(cl_verdict_error_rate(&m), 0.01, 1e-15);
	bool has;
	double v;
	struct cl_scn_slo s = slo(CL_SLO_ERROR_RATE, 0, 0, 0.01, NULL);
	v = cl_verdict_measure(&s, &m, 10, &has);
	assert_true(cl_verdict_passes(&s, v, has));
	s.limit = 0.005;
	v = cl_verdict_measure(&s, &m, 10, &has);
	assert_false(cl_verdict_passes(&s, v, has));

	s = slo(CL_SLO_MIN_OUTPUT_TPS, 0, 0, 500, NULL);
	assert_float_equal(cl_verdict_measure(&s, &m, 10, &has), 500, 1e-12);
	assert_true(cl_verdict_passes(&s, 500, true));
	s.limit = 501;
	v = cl_verdict_measure(&s, &m, 10, &has);
	assert_false(cl_verdict_passes(&s, v, has));

	s = slo(CL_SLO_MIN_REQUEST_RATE, 0, 0, 9.9, NULL);
	assert_float_equal(cl_verdict_measure(&s, &m, 10, &has), 9.9, 1e-12);
	assert_true(cl_verdict_passes(&s, 9.9, true));
	/* A zero-length window measures nothing. */
	cl_verdict_measure(&s, &m, 0, &has);
	assert_false(has);

	assert_float_equal(cl_verdict_goodput(&m, 10), 8.0, 1e-12);
	assert_float_equal(cl_verdict_goodput(&m, 0), 0.0, 0);
	cl_metrics_destroy(&m);
}

static void test_stage_selection(void **state)
{
	struct cl_scn_slo s = slo(CL_SLO_ERROR_RATE, 0, 0, 0.01, "c8");
	assert_true(cl_verdict_applies(&s, "c8"));
	assert_false(cl_verdict_applies(&s, "c16"));
	s.stage = NULL;
	assert_true(cl_verdict_applies(&s, "anything"));

	const struct cl_stage_ref st[] = { { "warm", true, 1 },
					   { "c8", true, 8 },
					   { "32", true, 16 }, /* a name that looks like a number */
					   { "r32", false, 32 },
					   { "big", true, 32 } };
	assert_int_equal(cl_verdict_find_stage("c8", st, 5), 1);
	assert_int_equal(cl_verdict_find_stage("8", st, 5), 1);
	assert_int_equal(cl_verdict_find_stage("32", st, 5), 2); /* names win */
	assert_int_equal(cl_verdict_find_stage("16", st, 5), 2);
	assert_int_equal(cl_verdict_find_stage("64", st, 5), -1);
	assert_int_equal(cl_verdict_find_stage("nope", st, 5), -1);
	assert_int_equal(cl_verdict_find_stage(NULL, st, 5), 4); /* the last stage */
	assert_int_equal(cl_verdict_find_stage(NULL, st, 0), -1);
	const struct cl_stage_ref rate_only[] = { { "r32", false, 32 } };
	assert_int_equal(cl_verdict_find_stage("32", rate_only, 1), -1); /* not a concurrency */
}

static void test_estimate_and_exit_code(void **state)
{
	double hours, tokens;
	cl_verdict_estimate(100000, 10.0, 512, &hours, &tokens);
	assert_float_equal(hours, 100000 / 10.0 / 3600, 1e-12);
	assert_float_equal(tokens, 51200000, 0);
	cl_verdict_estimate(100, 0, 512, &hours, &tokens);
	assert_true(isnan(hours));

	assert_int_equal(cl_verdict_exit_code(CL_EXIT_OK, true, false, false, 0), CL_EXIT_OK);
	assert_int_equal(cl_verdict_exit_code(CL_EXIT_OK, true, false, false, 2),
			 CL_EXIT_SLO_BREACH);
	assert_int_equal(cl_verdict_exit_code(CL_EXIT_OK, false, false, false, 2), CL_EXIT_FAILED);
	assert_int_equal(cl_verdict_exit_code(CL_EXIT_OK, true, true, false, 0), CL_EXIT_FAILED);
	assert_int_equal(cl_verdict_exit_code(CL_EXIT_NOT_READY, false, false, false, 0),
			 CL_EXIT_NOT_READY);
	/* A client-bound stage (client_bound: fail) fails the run, even over a breach. */
	assert_int_equal(cl_verdict_exit_code(CL_EXIT_OK, true, false, true, 0), CL_EXIT_FAILED);
	assert_int_equal(cl_verdict_exit_code(CL_EXIT_OK, true, false, true, 3), CL_EXIT_FAILED);
	assert_int_equal(cl_verdict_exit_code(CL_EXIT_NOT_READY, true, false, true, 0),
			 CL_EXIT_NOT_READY);
}

static void test_client_rules(void **state)
{
	assert_true(cl_verdict_cpu_bound(171, 200));
	assert_false(cl_verdict_cpu_bound(170, 200)); /* exactly 85% is not over it */
	assert_false(cl_verdict_cpu_bound(500, 0));   /* capacity unknown: no claim */
	struct cl_client_obs o = { .dispatch_lag_p99_us = CL_RESULTS_CLIENT_LAG_US,
				   .loop_lag_p99_us = -1 };
	assert_int_equal(cl_verdict_client_bound(&o), 0);
	o.dispatch_lag_p99_us++;
	assert_int_equal(cl_verdict_client_bound(&o), CL_CLIENT_DISPATCH_LAG);
	o.dispatch_lag_is_backlog = true;
	assert_int_equal(cl_verdict_client_bound(&o), 0);
	o.loop_lag_p99_us = 60000;
	o.cpu_bound_intervals = 1;
	assert_int_equal(cl_verdict_client_bound(&o), CL_CLIENT_LOOP_LAG | CL_CLIENT_CPU);
	/* Stalls and silences are reasons of their own, whatever the percentiles say. */
	struct cl_client_obs q = { .dispatch_lag_p99_us = -1, .loop_lag_p99_us = -1 };
	q.stalls = 1;
	assert_int_equal(cl_verdict_client_bound(&q), CL_CLIENT_STALL);
	q.agents_missing = 2;
	assert_int_equal(cl_verdict_client_bound(&q), CL_CLIENT_STALL | CL_CLIENT_AGENT_MISSING);
	q.stalls = 0;
	assert_int_equal(cl_verdict_client_bound(&q), CL_CLIENT_AGENT_MISSING);
}

static char *tmpdir(void)
{
	char tmpl[] = "/tmp/chatload-verdict-test-XXXXXX";
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

static void rm_rf(const char *path)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

/* A whole run through the results API: one SLO breached on one stage gives exit 99 and
 * exactly that breach, after every file was written. */
static void test_run_breach(void **state)
{
	char *dir = tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 4, 8 };
	tm_scenario(&s, "breach", conc, 2);
	tm_add_slo(&s, "ttft_p99", CL_SLO_LATENCY, CL_LAT_TTFT, 99, 5e6, NULL); /* 5 s: met */
	tm_add_slo(&s, "ttft_p50", CL_SLO_LATENCY, CL_LAT_TTFT, 50, 150e3, "c8");
	tm_add_slo(&s, "error_rate", CL_SLO_ERROR_RATE, 0, 0, 0.01, NULL);
	tm_add_slo(&s, "itl_p99", CL_SLO_LATENCY, CL_LAT_ITL, 99, 1e6, "never-ran");
	static uint64_t samples[] = { 36000 };
	s.estimate.samples = malloc(sizeof(samples));
	memcpy(s.estimate.samples, samples, sizeof(samples));
	s.estimate.n_samples = 1;
	s.estimate.from_stage = strdup("4");

	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	uint64_t seed = 99;
	struct cl_metrics m = { 0 };
	assert_int_equal(cl_metrics_init(&m), 0);
	/* c4: TTFT around 100 ms; c8: around 400 ms, which breaks the 150 ms p50 limit. */
	struct tm_traffic t = { .requests = 200,
				.ttft_ms = 100,
				.itl_ms = 10,
				.output_tokens = 50,
				.prompt_tokens = 10,
				.tokens_per_chunk = 1,
				.queue_ms = 0.1,
				.good_ttft_ms = 150 };
	tm_record(&m, &seed, &t);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &m, 20.0, CL_STAGE_OK, NULL),
			 0);
	assert_int_equal(cl_results_breach_count(r), 0);
	double good_c4 = (double)m.ctr[CL_CTR_GOOD] / 20.0;
	cl_metrics_reset(&m);
	t.ttft_ms = 400;
	tm_record(&m, &seed, &t);
	int64_t p50_c8 = cl_hist_percentile(&m.lat[CL_LAT_TTFT], 50);
	assert_int_equal(cl_results_finish_stage(r, 1, &s.stages[1], &m, 20.0, CL_STAGE_OK, NULL),
			 0);
	assert_int_equal(cl_results_breach_count(r), 1); /* abort_on_breach can act now */

	int code = -1;
	assert_int_equal(cl_results_finish(r, true, CL_EXIT_OK, &code), 0);
	assert_int_equal(code, CL_EXIT_SLO_BREACH);
	const json_t *doc = cl_results_doc(r);
	assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 99);
	assert_true(json_is_false(cl_results_get(doc, "verdict.pass")));
	const json_t *br = cl_results_get(doc, "verdict.breaches");
	assert_int_equal(json_array_size(br), 2);
	const json_t *b0 = json_array_get(br, 0), *b1 = json_array_get(br, 1);
	assert_string_equal(cl_results_str(b0, "slo", ""), "ttft_p50");
	assert_string_equal(cl_results_str(b0, "stage", ""), "c8");
	assert_float_equal(cl_results_num(b0, "limit"), 150, 1e-12);
	assert_float_equal(cl_results_num(b0, "measured"), p50_c8 / 1000.0, 1e-9);
	assert_string_equal(cl_results_str(b0, "unit", ""), "ms");
	/* An SLO for a stage that never ran cannot be proven met. */
	assert_string_equal(cl_results_str(b1, "slo", ""), "itl_p99");
	assert_string_equal(cl_results_str(b1, "note", ""), "stage did not run");
	assert_true(json_is_null(json_object_get(b1, "measured")));
	/* 2 stages x 2 SLOs for every stage + 1 named for c8 + 1 for the missing stage. */
	assert_int_equal((int64_t)cl_results_num(doc, "verdict.evaluated"), 6);

	/* Goodput and the estimate from the stage with concurrency 4. */
	const json_t *c4 = json_array_get(json_object_get(doc, "stages"), 0);
	assert_float_equal(cl_results_num(c4, "throughput.goodput_requests_per_s"), good_c4, 1e-5);
	assert_true(good_c4 > 0 && good_c4 < 10.0);
	const json_t *e = json_array_get(json_object_get(doc, "estimates"), 0);
	assert_string_equal(cl_results_str(e, "from_stage", ""), "c4");
	assert_float_equal(cl_results_num(e, "requests_per_s"), 10.0, 1e-9);
	assert_float_equal(cl_results_num(e, "hours"), 1.0, 1e-9); /* 36000 at 10/s */
	assert_float_equal(cl_results_num(e, "output_tokens"), 36000.0 * 50, 0);

	/* The file agrees (it was written after the verdict). */
	char path[4200];
	snprintf(path, sizeof(path), "%s/results.json", dir);
	json_error_t je;
	json_t *disk = json_load_file(path, 0, &je);
	assert_non_null(disk);
	assert_int_equal(json_integer_value(json_object_get(disk, "exit_code")), 99);
	assert_int_equal(json_array_size(cl_results_get(disk, "verdict.breaches")), 2);
	json_decref(disk);
	cl_metrics_destroy(&m);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

/* A failure the run loop reports wins over a breach: not ready stays 3. */
static void test_run_hint_wins(void **state)
{
	char *dir = tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "hint", conc, 1);
	tm_add_slo(&s, "error_rate", CL_SLO_ERROR_RATE, 0, 0, 0.0, NULL);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_readiness_result rr = { .status = 2,
					  .phase = 1,
					  .phase_passed_us = { 5000, -1, -1 },
					  .probe_ttft_us = -1,
					  .failing_since_us = 6000 };
	snprintf(rr.last_error, sizeof(rr.last_error), "HTTP 503 \"model loading\"");
	cl_results_set_readiness(r, &rr);
	int code = -1;
	assert_int_equal(cl_results_finish(r, false, CL_EXIT_NOT_READY, &code), 0);
	assert_int_equal(code, CL_EXIT_NOT_READY);
	const json_t *doc = cl_results_doc(r);
	assert_true(json_is_false(cl_results_get(doc, "readiness.passed")));
	assert_string_equal(cl_results_str(doc, "readiness.status", ""), "timed_out");
	assert_true(json_is_null(cl_results_get(doc, "readiness.phases.models_s")));
	assert_string_equal(cl_results_str(doc, "readiness.last_error", ""),
			    "HTTP 503 \"model loading\"");
	/* No stage ran, so no stage was checked, and the estimate has nothing to go on. */
	assert_int_equal((int64_t)cl_results_num(doc, "verdict.evaluated"), 0);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_latency_boundary),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_stage_selection),
		cmocka_unit_test(test_estimate_and_exit_code),
		cmocka_unit_test(test_client_rules),
		cmocka_unit_test(test_run_breach),
		cmocka_unit_test(test_run_hint_wins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
