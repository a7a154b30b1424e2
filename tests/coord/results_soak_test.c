/* Results for soaks and searches on real histograms: the drift windows (which intervals,
 * exact percentiles, the ramp and drain left out, too short a stage, max_drift checks), the
 * abort window's streak, and probes inserted as stages and kept out of the verdict. */
#include "coord_metrics.h"
#include "coordinator/results/results.h"

#include "chatload/exitcode.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/chatload-soak-test-XXXXXX";
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

/* One interval: n requests, each with this TTFT and ITL, 10 output tokens each. */
static void interval(struct cl_metrics *m, uint32_t n, int64_t ttft_us, int64_t itl_us)
{
	cl_metrics_reset(m);
	for (uint32_t i = 0; i < n; i++) {
		cl_hist_record(&m->lat[CL_LAT_TTFT], ttft_us);
		cl_hist_record(&m->lat[CL_LAT_ITL], itl_us);
		m->ctr[CL_CTR_STARTED]++;
		m->ctr[CL_CTR_COMPLETED]++;
		m->ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
		m->ctr[CL_CTR_WINDOW_SHARE_MILLI] += 1000; /* whole lifetime inside */
		m->ctr[CL_CTR_OUTPUT_TOKENS] += 10;
	}
}

static double num(const json_t *o, const char *path)
{
	return cl_results_num(o, path);
}

static void test_drift_windows(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 4, 4 };
	tm_scenario(&s, "drift", conc, 2);
	s.agents.report_interval_us = 1000000;
	s.stages[0].ramp_us = 2000000;      /* 2 ramp intervals, left out */
	s.stages[0].duration_us = 40000000; /* 40 measured intervals */
	s.stages[1].duration_us = 3000000;  /* too short for two windows */
	s.drift = (struct cl_scn_drift){ .window_us = 10000000,
					 .ttft_p99 = 0.2,
					 .itl_p99 = 0.5,
					 .output_tokens_per_s = NAN,
					 .error_rate = NAN,
					 .set = true };
	char *argv[] = { "chatload" };
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 1, argv, dir, &r, &err), 0);
	struct cl_metrics iv = { 0 }, cum = { 0 };
	assert_int_equal(cl_metrics_init(&iv), 0);
	assert_int_equal(cl_metrics_init(&cum), 0);
	/* Ramp intervals are slow (they must not count), measured interval k has TTFT 100+k ms
	 * and a steady ITL, the drain interval after the window is slow again. */
	for (int k = 1; k <= 43; k++) {
		bool measured = k > 2 && k <= 42;
		int64_t ttft = measured ? (100 + (k - 3)) * 1000 : 900000;
		interval(&iv, measured ? 10 : 1, ttft, 10000);
		assert_int_equal(cl_results_add_interval(r, 0, k, &iv, 1.0), 0);
		assert_int_equal(cl_metrics_merge(&cum, &iv), 0);
	}
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &cum, 40, CL_STAGE_OK, NULL),
			 0);
	const json_t *d = json_object_get(cl_results_stage(r, 0), "drift");
	assert_true(json_is_object(d));
	assert_true(num(d, "window_s") == 10);
	/* first: the 10 intervals after the ramp (TTFT 100..109 ms) */
	assert_true(num(d, "first.from_s") == 2 && num(d, "first.to_s") == 12);
	assert_true(num(d, "first.intervals") == 10);
	assert_true(fabs(num(d, "first.ttft_p99_ms") - 109) < 0.2);
	/* last: the 10 intervals before the drain (TTFT 130..139 ms), exactly, since 10
	 * intervals make buckets of 3 and the 40th interval ends the fourth */
	assert_true(num(d, "last.to_s") == 42);
	assert_true(num(d, "last.intervals") >= 10 && num(d, "last.intervals") <= 12);
	assert_true(fabs(num(d, "last.ttft_p99_ms") - 139) < 0.2);
	assert_true(fabs(num(d, "first.output_tokens_per_s") - 100) < 1e-9);
	assert_true(fabs(num(d, "change.ttft_p99") - (139.0 / 109 - 1)) < 0.01);
	assert_true(fabs(num(d, "change.itl_p99")) < 1e-9);
	assert_true(fabs(num(d, "change.output_tokens_per_s")) < 1e-9);
	/* the checks: TTFT rose 27.5% > 20% (breach), ITL did not move (pass) */
	const json_t *checks = cl_results_get(cl_results_doc(r), "verdict.checks");
	size_t i;
	const json_t *c;
	int seen = 0;
	json_array_foreach(checks, i, c)
	{
		const char *k = cl_results_str(c, "slo", "");
		if (strcmp(k, "max_drift.ttft_p99") == 0) {
			assert_false(json_is_true(json_object_get(c, "pass")));
			assert_true(num(c, "limit") == 0.2);
			seen |= 1;
		} else if (strcmp(k, "max_drift.itl_p99") == 0) {
			assert_true(json_is_true(json_object_get(c, "pass")));
			seen |= 2;
		}
	}
	assert_int_equal(seen, 3);
	assert_int_equal(cl_results_breach_count(r), 1);

	/* A stage shorter than two windows: a note, no checks */
	cl_metrics_reset(&cum);
	for (int k = 1; k <= 3; k++) {
		interval(&iv, 10, 100000, 10000);
		assert_int_equal(cl_results_add_interval(r, 1, k, &iv, 1.0), 0);
		assert_int_equal(cl_metrics_merge(&cum, &iv), 0);
	}
	assert_int_equal(cl_results_finish_stage(r, 1, &s.stages[1], &cum, 3, CL_STAGE_OK, NULL),
			 0);
	d = json_object_get(cl_results_stage(r, 1), "drift");
	assert_true(json_is_null(json_object_get(d, "change")));
	assert_string_equal(cl_results_str(d, "note", ""), "the stage is shorter than two windows");
	assert_int_equal(cl_results_breach_count(r), 1);
	int code;
	assert_int_equal(cl_results_finish(r, true, 0, &code), 0);
	assert_int_equal(code, CL_EXIT_SLO_BREACH);
	cl_metrics_destroy(&iv);
	cl_metrics_destroy(&cum);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
}

static void test_breach_streak(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 4 };
	tm_scenario(&s, "streak", conc, 1);
	s.stages[0].ramp_us = 1000000;
	s.stages[0].duration_us = 60000000;
	s.slo_abort_intervals = 3;
	tm_add_slo(&s, "ttft_p99", CL_SLO_LATENCY, CL_LAT_TTFT, 99, 50000, NULL);
	char *argv[] = { "chatload" };
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 1, argv, dir, &r, &err), 0);
	struct cl_metrics iv = { 0 };
	assert_int_equal(cl_metrics_init(&iv), 0);
	char why[200] = "";
	/* the ramp's slow interval does not count */
	interval(&iv, 5, 200000, 1000);
	assert_int_equal(cl_results_add_interval(r, 0, 1, &iv, 1.0), 0);
	assert_int_equal(cl_results_breach_streak(r, 0, why, sizeof(why)), 0);
	/* two breaches, then an interval without data (neither), then a pass resets */
	static const int64_t ttft_ms[] = { 80, 90, -1, 10, 70, 75, 60 };
	static const uint32_t want[] = { 1, 2, 2, 0, 1, 2, 3 };
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		if (ttft_ms[k] < 0) {
			cl_metrics_reset(&iv);
			iv.ctr[CL_CTR_STARTED] = 3; /* long requests: none ended */
		} else {
			interval(&iv, 5, ttft_ms[k] * 1000, 1000);
		}
		assert_int_equal(cl_results_add_interval(r, 0, 2.0 + (double)k, &iv, 1.0), 0);
		uint32_t got = cl_results_breach_streak(r, 0, why, sizeof(why));
		if (got != want[k])
			fail_msg("interval %zu: streak %u, want %u", k, got, want[k]);
	}
	assert_non_null(strstr(why, "ttft_p99: 60 ms, limit 50 ms"));
	assert_int_equal(cl_results_breach_streak(r, 7, why, sizeof(why)), 0); /* bad index */
	cl_metrics_destroy(&iv);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
}

static void test_probes_are_stages_outside_the_verdict(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1, 2 };
	tm_scenario(&s, "probes", conc, 2);
	tm_add_slo(&s, "ttft_p99", CL_SLO_LATENCY, CL_LAT_TTFT, 99, 50000, NULL);
	char *argv[] = { "chatload" };
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 1, argv, dir, &r, &err), 0);
	struct cl_scn_slo probe_slo = s.slos[0];
	probe_slo.limit = 150000; /* the search's own limit */
	struct cl_results_probe_def def = {
		.search = "cap", .level = 8, .slos = &probe_slo, .n_slos = 1
	};
	/* A probe goes in before stage 1; stage 1 becomes 2. */
	assert_int_equal(cl_results_insert_stage(r, 1, "cap-c8", &def), 0);
	struct cl_metrics m = { 0 };
	assert_int_equal(cl_metrics_init(&m), 0);
	interval(&m, 10, 100000, 1000); /* breaks the run's 50 ms, meets the search's 150 ms */
	struct cl_scn_stage st = s.stages[0];
	st.name = "cap-c8";
	st.concurrency = 8;
	assert_int_equal(cl_results_add_interval(r, 1, 1, &m, 1), 0);
	/* a stage that already reported cannot have one inserted before it */
	assert_int_equal(cl_results_insert_stage(r, 1, "x", NULL), CL_EINVAL);
	assert_int_equal(cl_results_finish_stage(r, 1, &st, &m, 1, CL_STAGE_OK, NULL), 0);
	const json_t *p = cl_results_stage(r, 1);
	assert_true(json_is_true(cl_results_get(p, "probe.pass")));
	assert_true(num(p, "probe.level") == 8);
	assert_string_equal(cl_results_str(p, "probe.search", ""), "cap");
	assert_int_equal(json_array_size(cl_results_get(p, "probe.checks")), 1);
	assert_int_equal(cl_results_breach_count(r), 0);
	/* the search's entry (stage 2 now) is removed; the ordinary stage 1 of the scenario
	 * moved to 2 and is judged by the run's SLOs */
	assert_int_equal(cl_results_insert_stage(r, 2, "cap", NULL), 0);
	assert_int_equal(cl_results_remove_stage(r, 2), 0);
	assert_int_equal(cl_results_finish_stage(r, 2, &s.stages[1], &m, 1, CL_STAGE_OK, NULL), 0);
	assert_int_equal(cl_results_breach_count(r), 1);
	assert_int_equal(cl_results_remove_stage(r, 2), CL_EINVAL); /* finished */
	cl_metrics_destroy(&m);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drift_windows),
		cmocka_unit_test(test_breach_streak),
		cmocka_unit_test(test_probes_are_stages_outside_the_verdict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
