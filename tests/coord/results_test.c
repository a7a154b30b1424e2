/* The results lifecycle on real metrics: what the document says, what lands on disk and
 * when (checkpoints, atomic rewrites, intervals.jsonl), and how misuse is refused. */
#include "coord_metrics.h"
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"
#include "coordinator/workload/workload.h"

#include "chatload/exitcode.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/chatload-results-test-XXXXXX";
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

static json_t *load_file(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!j)
		fail_msg("cannot parse '%s': %s (line %d)", path, je.text, je.line);
	return j;
}

static size_t count_lines(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = 0;
	int c;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static bool exists(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

/* No temporary file may survive a write. */
static void assert_no_temp_files(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strstr(e->d_name, ".tmp."))
			fail_msg("temporary file '%s' left in '%s'", e->d_name, dir);
	}
	closedir(d);
}

static const struct tm_traffic normal = {
	.requests = 40,
	.errors_5xx = 1,
	.ttft_ms = 120,
	.itl_ms = 12,
	.output_tokens = 32,
	.prompt_tokens = 100,
	.tokens_per_chunk = 1,
	.queue_ms = 0.2,
	.cpu_pct = 40,
	.cpu_capacity_pct = 200,
	.inflight = 4,
};

/* Runs n_intervals intervals of traffic into stage `stage`, merging into cum. */
static void run_stage_intervals(struct cl_results *r, size_t stage, struct cl_metrics *cum,
				const struct tm_traffic *t, int n_intervals, uint64_t *seed)
{
	struct cl_metrics iv = { 0 };
	assert_int_equal(cl_metrics_init(&iv), 0);
	for (int k = 0; k < n_intervals; k++) {
		cl_metrics_reset(&iv);
		tm_record(&iv, seed, t);
		assert_int_equal(cl_results_add_interval(r, stage, k + 1.0, &iv, 1.0), 0);
		assert_int_equal(cl_metrics_merge(cum, &iv), 0);
	}
	cl_metrics_destroy(&iv);
}

static void test_lifecycle(void **state)
{
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 2, 8 };
	tm_scenario(&s, "life", conc, 2);
	char *argv[] = { "chatload", "run", "life.yaml" };
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	int rc = cl_results_create(&s, NULL, 3, argv, dir, &r, &err);
	if (rc != 0)
		fail_msg("create: %s", err.msg);
	assert_string_equal(cl_results_dir(r), dir);

	/* The initial checkpoint exists before any stage ran. */
	json_t *disk = load_file(dir, "results.json");
	assert_string_equal(json_string_value(json_object_get(disk, "schema")), CL_RESULTS_SCHEMA);
	assert_true(json_is_false(json_object_get(disk, "complete")));
	assert_true(json_is_null(json_object_get(disk, "exit_code")));
	json_decref(disk);

	struct cl_readiness_result rr = { .status = 1,
					  .phase = 2,
					  .attempts = 3,
					  .phase_passed_us = { 1000, 250000, 4500000 },
					  .probe_ttft_us = 80000,
					  .elapsed_us = 4500000,
					  .failing_since_us = -1 };
	snprintf(rr.model, sizeof(rr.model), "test-model");
	cl_results_set_readiness(r, &rr);
	struct cl_results_agent agents[] = { { 1, "host-a", 4, -120, 300, false, "10.0.0.1", NULL },
					     { 2, "host-b", 4, 85, 410, false, "10.0.0.2", NULL } };
	assert_int_equal(cl_results_set_agents(r, agents, 2), 0);

	uint64_t seed = 7;
	struct cl_metrics cum[2];
	memset(cum, 0, sizeof(cum));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(cl_metrics_init(&cum[i]), 0);
		run_stage_intervals(r, (size_t)i, &cum[i], &normal, 3, &seed);
		assert_int_equal(cl_results_finish_stage(r, (size_t)i, &s.stages[i], &cum[i], 3.0,
							 CL_STAGE_OK, NULL),
				 0);
		/* Each stage end rewrites results.json: it now holds i + 1 stages. */
		disk = load_file(dir, "results.json");
		assert_int_equal(json_array_size(json_object_get(disk, "stages")), (size_t)i + 1);
		json_decref(disk);
		assert_no_temp_files(dir);
	}
	int code = -1;
	assert_int_equal(cl_results_finish(r, true, CL_EXIT_OK, &code), 0);
	assert_int_equal(code, CL_EXIT_OK);

	const json_t *doc = cl_results_doc(r);
	const json_t *st = json_array_get(json_object_get(doc, "stages"), 0);
	assert_string_equal(cl_results_str(st, "name", ""), "c2");
	assert_string_equal(cl_results_str(st, "status", ""), "ok");
	assert_string_equal(cl_results_str(st, "mode", ""), "concurrency");
	assert_int_equal((int64_t)cl_results_num(st, "concurrency"), 2);
	assert_int_equal((int64_t)cl_results_num(st, "requests.started"), 123);
	assert_int_equal((int64_t)cl_results_num(st, "requests.completed"), 120);
	assert_int_equal((int64_t)cl_results_num(st, "requests.errors.http_5xx"), 3);
	assert_int_equal((int64_t)cl_results_num(st, "requests.errors_total"), 3);
	assert_float_equal(cl_results_num(st, "requests.error_rate"), 3.0 / 123.0, 1e-6);
	assert_int_equal((int64_t)cl_results_num(st, "tokens.output"), 120 * 32);
	assert_string_equal(cl_results_str(st, "tokens.source", ""), "usage");
	assert_float_equal(cl_results_num(st, "throughput.requests_per_s"), 40.0, 1e-9);
	assert_float_equal(cl_results_num(st, "throughput.output_tokens_per_s"), 1280.0, 1e-9);
	assert_float_equal(cl_results_num(st, "throughput.total_tokens_per_s"), 40.0 * 132, 1e-9);
	assert_float_equal(cl_results_num(st, "tokens_per_chunk.mean"), 1.0, 1e-12);
	assert_int_equal(json_array_size(cl_results_get(st, "requests.error_samples")), 3);
	assert_string_equal(
	    cl_results_str(json_array_get(cl_results_get(st, "requests.error_samples"), 0), "class",
			   ""),
	    "http_5xx");

	/* Every reported percentile is the merged histogram's, in ms. */
	static const struct {
		const char *key;
		int lat;
	} lat[] = { { "ttft", CL_LAT_TTFT },
		    { "itl", CL_LAT_ITL },
		    { "tpot", CL_LAT_TPOT },
		    { "e2e", CL_LAT_E2E },
		    { "queue", CL_LAT_QUEUE } };
	static const struct {
		const char *key;
		double p;
	} ps[] = { { "p50", 50 }, { "p90", 90 }, { "p95", 95 }, { "p99", 99 }, { "p999", 99.9 } };
	for (size_t i = 0; i < sizeof(lat) / sizeof(lat[0]); i++) {
		const json_t *l = json_object_get(json_object_get(st, "latency_ms"), lat[i].key);
		for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
			assert_float_equal(
			    cl_results_num(l, ps[k].key),
			    cl_hist_percentile(&cum[0].lat[lat[i].lat], ps[k].p) / 1000.0, 1e-9);
		assert_int_equal((int64_t)cl_results_num(l, "count"),
				 cl_hist_count(&cum[0].lat[lat[i].lat]));
		assert_float_equal(cl_results_num(l, "max"),
				   cl_hist_max(&cum[0].lat[lat[i].lat]) / 1000.0, 1e-9);
	}
	/* Intervals: kept in the stage, and one checkpoint line each. */
	assert_int_equal(json_array_size(json_object_get(st, "intervals")), 3);
	assert_float_equal(
	    cl_results_num(json_array_get(json_object_get(st, "intervals"), 2), "requests_per_s"),
	    40.0, 1e-9);
	assert_int_equal(count_lines(dir, "intervals.jsonl"), 6);
	assert_string_equal(
	    cl_results_str(json_array_get(json_object_get(doc, "agents"), 1), "host", ""),
	    "host-b");
	assert_string_equal(
	    cl_results_str(json_array_get(json_object_get(doc, "agents"), 1), "address", ""),
	    "10.0.0.2");
	assert_true(json_is_true(cl_results_get(doc, "readiness.passed")));
	assert_float_equal(cl_results_num(doc, "readiness.phases.models_s"), 0.25, 1e-12);

	/* The file is the document: same content after the round trip through text. */
	disk = load_file(dir, "results.json");
	assert_true(json_equal(disk, (json_t *)doc));
	assert_true(json_is_true(json_object_get(disk, "complete")));
	assert_int_equal(json_integer_value(json_object_get(disk, "exit_code")), 0);
	json_decref(disk);
	/* results/ writes results.json only: the report files are report/'s, which the run asks
	 * for from the finished document. */
	assert_false(exists(dir, "results.csv"));
	assert_false(exists(dir, "report.md"));
	assert_false(exists(dir, "report.html"));
	struct cl_err rerr = { 0 };
	assert_int_equal(cl_report_write_files(doc, dir,
					       CL_REPORT_FILE(CL_REPORT_CSV) |
						   CL_REPORT_FILE(CL_REPORT_MD) |
						   CL_REPORT_FILE(CL_REPORT_HTML),
					       &rerr),
			 0);
	assert_true(exists(dir, "results.csv"));
	assert_true(exists(dir, "report.md"));
	assert_true(exists(dir, "report.html"));
	assert_no_temp_files(dir);

	/* Stored histograms rebuild the exact merged histogram. */
	const json_t *stored = cl_results_get(st, "histograms.lat.ttft");
	struct cl_hist h;
	assert_int_equal(cl_results_hist_from_json(stored, &h, &err), 0);
	assert_true(cl_hist_equal(&h, &cum[0].lat[CL_LAT_TTFT]));
	cl_hist_destroy(&h);

	/* finish is once only, and nothing can be added after it. */
	assert_int_equal(cl_results_finish(r, true, 0, &code), CL_ESTATE);
	for (int i = 0; i < 2; i++)
		cl_metrics_destroy(&cum[i]);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

static void test_misuse_refused(void **state)
{
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "misuse", conc, 1);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_metrics m = { 0 };
	assert_int_equal(cl_metrics_init(&m), 0);
	assert_int_equal(cl_results_add_interval(r, 1, 1.0, &m, 1.0), CL_EINVAL);
	assert_int_equal(cl_results_add_interval(r, 0, NAN, &m, 1.0), CL_EINVAL);
	assert_int_equal(cl_results_finish_stage(r, 1, &s.stages[0], &m, 1.0, CL_STAGE_OK, NULL),
			 CL_EINVAL);
	assert_int_equal(
	    cl_results_finish_stage(r, 0, &s.stages[0], &m, 1.0, CL_STAGE_N_STATUS, NULL),
	    CL_EINVAL);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &m, -1.0, CL_STAGE_OK, NULL),
			 CL_EINVAL);
	assert_int_equal(
	    cl_results_finish_stage(r, 0, &s.stages[0], &m, 0.0, CL_STAGE_FAILED, "agent 2 lost"),
	    0);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &m, 1.0, CL_STAGE_OK, NULL),
			 CL_ESTATE);
	assert_int_equal(cl_results_add_interval(r, 0, 2.0, &m, 1.0), CL_EINVAL);
	/* A stage with nothing in it: rates and percentiles are null, not 0 or NaN. */
	const json_t *st = json_array_get(json_object_get(cl_results_doc(r), "stages"), 0);
	assert_true(json_is_null(cl_results_get(st, "throughput.requests_per_s")));
	assert_true(json_is_null(cl_results_get(st, "latency_ms.ttft.p99")));
	assert_string_equal(cl_results_str(st, "reason", ""), "agent 2 lost");
	int code = -1;
	assert_int_equal(cl_results_finish(r, true, CL_EXIT_OK, &code), 0);
	assert_int_equal(code, CL_EXIT_FAILED); /* a failed stage fails the run */
	cl_metrics_destroy(&m);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

static void test_interrupted_run(void **state)
{
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1, 4, 16 };
	tm_scenario(&s, "interrupt", conc, 3);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	uint64_t seed = 3;
	struct cl_metrics cum = { 0 };
	assert_int_equal(cl_metrics_init(&cum), 0);
	run_stage_intervals(r, 0, &cum, &normal, 2, &seed);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &cum, 2.0, CL_STAGE_OK, NULL),
			 0);
	cl_metrics_reset(&cum);
	run_stage_intervals(r, 1, &cum, &normal, 2, &seed);

	/* A run killed here: results.json holds stage 0, intervals.jsonl stage 1 as well. */
	json_t *disk = load_file(dir, "results.json");
	assert_int_equal(json_array_size(json_object_get(disk, "stages")), 1);
	assert_true(json_is_false(json_object_get(disk, "complete")));
	json_decref(disk);
	assert_int_equal(count_lines(dir, "intervals.jsonl"), 4);

	/* An orderly interruption (SIGINT): the stage ends interrupted, the run incomplete. */
	assert_int_equal(cl_results_finish_stage(r, 1, &s.stages[1], &cum, 1.5,
						 CL_STAGE_INTERRUPTED, "interrupted by signal"),
			 0);
	/* The next stage reported one interval before the run ended without finishing it. */
	cl_metrics_reset(&cum);
	run_stage_intervals(r, 2, &cum, &normal, 1, &seed);
	int code = -1;
	assert_int_equal(cl_results_finish(r, false, CL_EXIT_OK, &code), 0);
	assert_int_equal(code, CL_EXIT_FAILED);
	disk = load_file(dir, "results.json");
	assert_true(json_is_false(json_object_get(disk, "complete")));
	assert_int_equal(json_integer_value(json_object_get(disk, "exit_code")), CL_EXIT_FAILED);
	assert_int_equal(json_array_size(json_object_get(disk, "stages")), 2);
	assert_string_equal(
	    cl_results_str(json_array_get(json_object_get(disk, "stages"), 1), "status", ""),
	    "interrupted");
	bool warned = false, unfinished = false;
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(disk, "warnings"), i, w)
	{
		warned = warned || strstr(json_string_value(w), "did not complete") != NULL;
		unfinished = unfinished || strcmp(json_string_value(w),
						  "stage 'c16' never finished: its 1 "
						  "intervals are only in intervals.jsonl") == 0;
	}
	assert_true(warned);
	assert_true(unfinished);
	assert_int_equal(count_lines(dir, "intervals.jsonl"), 5);
	assert_int_equal(cl_results_check(disk, &err), 0);
	json_decref(disk);
	cl_metrics_destroy(&cum);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

static const json_t *finish_one(struct cl_results **rp, const char *dir, struct cl_scenario *s,
				const struct tm_traffic *t, int intervals)
{
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(s, NULL, 0, NULL, dir, rp, &err), 0);
	struct cl_metrics cum = { 0 };
	assert_int_equal(cl_metrics_init(&cum), 0);
	uint64_t seed = 11;
	run_stage_intervals(*rp, 0, &cum, t, intervals, &seed);
	assert_int_equal(
	    cl_results_finish_stage(*rp, 0, &s->stages[0], &cum, intervals, CL_STAGE_OK, NULL), 0);
	cl_metrics_destroy(&cum);
	return json_array_get(json_object_get(cl_results_doc(*rp), "stages"), 0);
}

static void test_token_source(void **state)
{
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "tokens", conc, 1);
	struct cl_results *r = NULL;
	struct tm_traffic t = normal;
	t.usage_from_chunks = true;
	t.tokens_per_chunk = 4; /* speculative decoding: four tokens per chunk */
	const json_t *st = finish_one(&r, dir, &s, &t, 1);
	assert_string_equal(cl_results_str(st, "tokens.source", ""), "chunks");
	assert_float_equal(cl_results_num(st, "tokens_per_chunk.mean"), 4.0, 1e-12);
	assert_float_equal(cl_results_num(st, "tokens_per_chunk.p99"), 4.0, 1e-12);
	cl_results_destroy(r);

	/* Mixed: one interval from usage, one from chunks. */
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_metrics cum = { 0 };
	assert_int_equal(cl_metrics_init(&cum), 0);
	uint64_t seed = 5;
	run_stage_intervals(r, 0, &cum, &normal, 1, &seed);
	run_stage_intervals(r, 0, &cum, &t, 1, &seed);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &cum, 2, CL_STAGE_OK, NULL),
			 0);
	st = json_array_get(json_object_get(cl_results_doc(r), "stages"), 0);
	assert_string_equal(cl_results_str(st, "tokens.source", ""), "mixed");
	cl_metrics_destroy(&cum);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

static bool has_reason(const json_t *st, const char *why)
{
	size_t i;
	const json_t *v;
	json_array_foreach(cl_results_get(st, "client.reasons"), i, v)
	{
		if (strcmp(json_string_value(v), why) == 0)
			return true;
	}
	return false;
}

static void test_client_bound(void **state)
{
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 64 };
	tm_scenario(&s, "client", conc, 1);
	struct cl_results *r = NULL;

	const json_t *st = finish_one(&r, dir, &s, &normal, 2);
	assert_true(json_is_false(cl_results_get(st, "client.client_bound")));
	assert_int_equal(json_array_size(cl_results_get(st, "client.reasons")), 0);
	cl_results_destroy(r);

	struct tm_traffic t = normal;
	t.cpu_pct = 180; /* 90% of a two-core capacity */
	st = finish_one(&r, dir, &s, &t, 2);
	assert_true(json_is_true(cl_results_get(st, "client.client_bound")));
	assert_true(has_reason(st, "cpu"));
	assert_float_equal(cl_results_num(st, "client.cpu_max_pct"), 180, 1e-9);
	assert_int_equal((int64_t)cl_results_num(st, "client.cpu_bound_intervals"), 2);
	bool warned = false;
	size_t i;
	const json_t *w;
	json_array_foreach(json_object_get(cl_results_doc(r), "warnings"), i, w)
	{
		warned = warned || strstr(json_string_value(w), "client-bound") != NULL;
	}
	assert_true(warned);
	cl_results_destroy(r);

	t = normal;
	t.queue_ms = 80; /* dispatch lag far past the 50 ms bound */
	st = finish_one(&r, dir, &s, &t, 1);
	assert_true(json_is_true(cl_results_get(st, "client.client_bound")));
	assert_true(has_reason(st, "dispatch_lag"));
	assert_false(has_reason(st, "cpu"));
	cl_results_destroy(r);

	/* Rate mode with a concurrency cap: queue time is the server's backlog. */
	s.stages[0].mode = CL_MODE_RATE;
	s.stages[0].rate_per_s = 50;
	s.stages[0].concurrency = 64;
	st = finish_one(&r, dir, &s, &t, 1);
	assert_true(json_is_false(cl_results_get(st, "client.client_bound")));
	assert_string_equal(cl_results_str(st, "mode", ""), "rate");
	assert_float_equal(cl_results_num(st, "rate"), 50, 0);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

/* The warning of r that contains needle, or NULL. */
static const char *warning_with(struct cl_results *r, const char *needle)
{
	size_t i;
	const json_t *w;
	json_array_foreach(json_object_get(cl_results_doc(r), "warnings"), i, w)
	{
		if (strstr(json_string_value(w), needle))
			return json_string_value(w);
	}
	return NULL;
}

/* One stage of cum's traffic (cpu_pct makes it client-bound) with counters added on top. */
static void finish_with(struct cl_results *r, struct cl_scenario *s, size_t i, double cpu_pct,
			const uint64_t *ctr)
{
	struct cl_metrics cum = { 0 };
	assert_int_equal(cl_metrics_init(&cum), 0);
	uint64_t seed = 3 + i;
	struct tm_traffic t = normal;
	t.cpu_pct = cpu_pct;
	run_stage_intervals(r, i, &cum, &t, 2, &seed);
	for (int k = 0; k < CL_CTR__COUNT; k++)
		cum.ctr[k] += ctr[k];
	assert_int_equal(cl_results_finish_stage(r, i, &s->stages[i], &cum, 2, CL_STAGE_OK, NULL),
			 0);
	cl_metrics_destroy(&cum);
}

/* The warnings name the cause that applies (issue 40): a thinking model's cut reasoning only
 * where reasoning was seen; ignore_eos unhonoured only for answers that said stop; estimates
 * from a client-bound stage said; a repeated prompt's cost as TTFT for generations and
 * latency for embeddings, and order: per_stage advised away only when it was set. */
static void test_warning_causes(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 2, 4 };
	tm_scenario(&s, "causes", conc, 2);
	s.estimate.samples = calloc(1, sizeof(*s.estimate.samples));
	s.estimate.samples[0] = 1000;
	s.estimate.n_samples = 1;
	s.estimate.from_stage = strdup("c4");
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_workload_stats ws = { .bodies = 4, .ignore_eos = 4, .requested_max = 64 };
	cl_results_set_workload(r, &s.workload, &ws);
	/* c2: streams that carried nothing (errors, not answers), short ones whose stream gave
	 * no finish_reason, and prompts sent again. */
	uint64_t c2[CL_CTR__COUNT] = { 0 };
	c2[CL_CTR_ERR_EMPTY_ANSWER] = 3;
	c2[CL_CTR_SHORT_OUTPUT] = 5;
	c2[CL_CTR_REQUESTED_TOKENS] = 320;
	c2[CL_CTR_REQUESTED_RECEIVED] = 100;
	c2[CL_CTR_REPEATED] = 4;
	finish_with(r, &s, 0, 40, c2);
	/* c4: client-bound (90% of two cores); answers cut inside their reasoning, and short
	 * ones that ended at the server's end of sequence. */
	uint64_t c4[CL_CTR__COUNT] = { 0 };
	c4[CL_CTR_NO_CONTENT] = 2;
	c4[CL_CTR_REASONING_TOKENS] = 50;
	c4[CL_CTR_SHORT_OUTPUT] = 2;
	c4[CL_CTR_SHORT_FINISH_STOP] = 2;
	c4[CL_CTR_REQUESTED_TOKENS] = 128;
	c4[CL_CTR_REQUESTED_RECEIVED] = 20;
	finish_with(r, &s, 1, 180, c4);
	int code = 0;
	assert_int_equal(cl_results_finish(r, true, CL_EXIT_OK, &code), 0);

	assert_null(warning_with(r, "stage 'c2': 3 of ")); /* no answer was reasoning only */
	const char *w = warning_with(r, "stage 'c2': 3 requests were answered with a stream "
					"that carried no token");
	assert_non_null(w);
	assert_null(strstr(w, "reasoning"));
	w = warning_with(r, "stage 'c4': 2 of ");
	assert_non_null(w);
	assert_non_null(strstr(w, "max_tokens may end a thinking model's answer inside its "
				  "reasoning"));
	w = warning_with(r, "stage 'c2': 5 requests stopped before the max_tokens");
	assert_non_null(w);
	assert_non_null(strstr(w, "finish_reason: none given 5"));
	assert_non_null(strstr(w, "the stream ended without a finish_reason"));
	assert_null(strstr(w, "ignore_eos:")); /* "ignore_eos" the request, not the blame */
	assert_null(strstr(w, "honour"));
	w = warning_with(r, "stage 'c4': 2 requests stopped before the max_tokens");
	assert_non_null(w);
	assert_non_null(strstr(w, "it does not honour ignore_eos"));
	w = warning_with(r, "the estimates come from stage 'c4', which was client-bound");
	assert_non_null(w);
	w = warning_with(r, "re-sent a prompt");
	assert_non_null(w);
	assert_non_null(strstr(w, "their TTFT reads better"));
	assert_null(strstr(w, "per_stage"));
	cl_results_destroy(r);

	/* Estimates from a stage that was not client-bound: no word; embeddings sent again
	 * under order: per_stage: latency, and the advice to drop per_stage. */
	free(s.estimate.from_stage);
	s.estimate.from_stage = strdup("c2");
	s.workload.api = CL_API_EMBEDDINGS;
	s.workload.order_per_stage = true;
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	cl_results_set_workload(r, &s.workload, &ws);
	uint64_t none[CL_CTR__COUNT] = { 0 };
	finish_with(r, &s, 0, 40, c2);
	finish_with(r, &s, 1, 180, none);
	assert_int_equal(cl_results_finish(r, true, CL_EXIT_OK, &code), 0);
	assert_null(warning_with(r, "the estimates come from"));
	w = warning_with(r, "re-sent an input");
	assert_non_null(w);
	assert_non_null(strstr(w, "their latency reads better than a new input's"));
	assert_null(strstr(w, "TTFT"));
	assert_non_null(strstr(w, "or drop workload.order: per_stage"));
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

/* Stalls: listed up to CL_RESULTS_MAX_STALLS with the rest counted, each witness its own
 * reason, the run failing unless the scenario says client_bound: warn. */
static void test_stalls(void **state)
{
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 8 };
	tm_scenario(&s, "stalls", conc, 1);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_results_stall many[CL_RESULTS_MAX_STALLS + 5];
	for (size_t i = 0; i < sizeof(many) / sizeof(many[0]); i++)
		many[i] = (struct cl_results_stall){ 3, "h3", 0.5 * (double)i, 0.25, false, false };
	assert_int_equal(cl_results_add_stalls(r, 0, many, CL_RESULTS_MAX_STALLS + 5, 2, 0), 0);
	assert_int_equal(cl_results_add_stalls(r, 1, many, 1, 0, 0), CL_EINVAL); /* no stage 1 */
	struct cl_metrics cum = { 0 };
	assert_int_equal(cl_metrics_init(&cum), 0);
	uint64_t seed = 5;
	run_stage_intervals(r, 0, &cum, &normal, 1, &seed);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &cum, 1, CL_STAGE_OK, NULL),
			 0);
	assert_int_equal(cl_results_add_stalls(r, 0, many, 1, 0, 0), CL_EINVAL); /* finished */
	const json_t *st = json_array_get(json_object_get(cl_results_doc(r), "stages"), 0);
	assert_true(json_is_true(cl_results_get(st, "client.client_bound")));
	assert_true(has_reason(st, "stall"));
	assert_false(has_reason(st, "agent_missing"));
	assert_int_equal(json_array_size(cl_results_get(st, "client.stalls")),
			 CL_RESULTS_MAX_STALLS);
	assert_float_equal(cl_results_num(st, "client.stalls_unlisted"), 5 + 2, 0);
	assert_float_equal(
	    cl_results_num(json_array_get(cl_results_get(st, "client.stalls"), 3), "at_s"), 1.5,
	    1e-12);
	int code = 0;
	assert_int_equal(cl_results_finish(r, true, CL_EXIT_OK, &code), 0);
	assert_int_equal(code, CL_EXIT_FAILED);
	cl_results_destroy(r);

	/* Only silences the coordinator could not list: agent_missing alone; warn passes. */
	s.client_bound = CL_CLIENT_BOUND_WARN;
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	assert_int_equal(cl_results_add_stalls(r, 0, NULL, 0, 0, 1), 0);
	cl_metrics_reset(&cum);
	run_stage_intervals(r, 0, &cum, &normal, 1, &seed);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &cum, 1, CL_STAGE_OK, NULL),
			 0);
	st = json_array_get(json_object_get(cl_results_doc(r), "stages"), 0);
	assert_true(has_reason(st, "agent_missing"));
	assert_false(has_reason(st, "stall"));
	assert_int_equal(cl_results_finish(r, true, CL_EXIT_OK, &code), 0);
	assert_int_equal(code, CL_EXIT_OK);
	cl_results_destroy(r);
	cl_metrics_destroy(&cum);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

static void test_interval_decimation(void **state)
{
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "soak", conc, 1);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_metrics iv = { 0 };
	assert_int_equal(cl_metrics_init(&iv), 0);
	const int n = 2 * CL_RESULTS_MAX_INTERVALS + 7;
	for (int k = 0; k < n; k++)
		assert_int_equal(cl_results_add_interval(r, 0, k + 1.0, &iv, 1.0), 0);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &iv, n, CL_STAGE_OK, NULL), 0);
	const json_t *st = json_array_get(json_object_get(cl_results_doc(r), "stages"), 0);
	const json_t *kept = json_object_get(st, "intervals");
	size_t nk = json_array_size(kept);
	assert_true(nk <= CL_RESULTS_MAX_INTERVALS);
	assert_true(nk >= CL_RESULTS_MAX_INTERVALS / 2);
	int64_t stride = (int64_t)cl_results_num(st, "intervals_stride");
	assert_int_equal(stride, 4);
	assert_int_equal((int64_t)cl_results_num(st, "intervals_total"), n);
	/* Evenly spaced samples of the whole series, starting at the first interval. */
	for (size_t k = 0; k < nk; k++)
		assert_float_equal(cl_results_num(json_array_get(kept, k), "t_s"),
				   1.0 + (double)k * (double)stride, 1e-9);
	assert_int_equal(count_lines(dir, "intervals.jsonl"), (size_t)n);
	cl_metrics_destroy(&iv);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

/* A sweep of long stages: the finished stages keep CL_RESULTS_MAX_FINISHED_INTERVALS rows in
 * all, the longest halved first, each still evenly spaced from its first interval with the
 * stride its object says; a short stage keeps every row. */
static void test_finished_intervals_budget(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1, 2, 3, 4 };
	tm_scenario(&s, "sweep", conc, 4);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_metrics iv = { 0 };
	assert_int_equal(cl_metrics_init(&iv), 0);
	const int len[] = { CL_RESULTS_MAX_INTERVALS, 10, CL_RESULTS_MAX_INTERVALS,
			    CL_RESULTS_MAX_INTERVALS };
	for (size_t st = 0; st < 4; st++) {
		for (int k = 0; k < len[st]; k++)
			assert_int_equal(cl_results_add_interval(r, st, k + 1.0, &iv, 1.0), 0);
		assert_int_equal(
		    cl_results_finish_stage(r, st, &s.stages[st], &iv, len[st], CL_STAGE_OK, NULL),
		    0);
	}
	const json_t *stages = json_object_get(cl_results_doc(r), "stages");
	size_t total = 0;
	for (size_t st = 0; st < 4; st++) {
		const json_t *o = json_array_get(stages, st);
		const json_t *kept = json_object_get(o, "intervals");
		int64_t stride = (int64_t)cl_results_num(o, "intervals_stride");
		total += json_array_size(kept);
		assert_int_equal((int64_t)cl_results_num(o, "intervals_total"), len[st]);
		assert_int_equal(json_array_size(kept), (len[st] + stride - 1) / stride);
		for (size_t k = 0; k < json_array_size(kept); k++)
			assert_float_equal(cl_results_num(json_array_get(kept, k), "t_s"),
					   1.0 + (double)k * (double)stride, 1e-9);
		if (st == 1)
			assert_int_equal(stride, 1);
	}
	assert_true(total <= CL_RESULTS_MAX_FINISHED_INTERVALS);
	assert_true(total > CL_RESULTS_MAX_FINISHED_INTERVALS / 2);
	/* What was written is what the document holds. */
	json_t *doc = load_file(dir, "results.json");
	const json_t *o = json_array_get(json_object_get(doc, "stages"), 0);
	assert_int_equal(json_array_size(json_object_get(o, "intervals")),
			 json_array_size(json_object_get(json_array_get(stages, 0), "intervals")));
	json_decref(doc);
	cl_metrics_destroy(&iv);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

/* Many agents: intervals.jsonl lists every agent's health, results.json's kept row only
 * CL_RESULTS_AGENTS_KEPT of them with `agents_total`: the busiest CPU, the highest dispatch
 * lag and the highest loop lags (so each figure's worst agent is there); few agents: every
 * one, and no `agents_total`. */
static void test_interval_agents_kept(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "fleet", conc, 1);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_metrics iv = { 0 };
	assert_int_equal(cl_metrics_init(&iv), 0);
	enum { N = 40 };
	struct cl_results_agent_health h[N];
	for (uint32_t i = 0; i < N; i++) /* loop lag rises with the id: 35..40 the worst six */
		h[i] = (struct cl_results_agent_health){ .agent = i + 1,
							 .cpu_pct = 10,
							 .loop_lag_p99_ms = 1 + i,
							 .dispatch_lag_p99_ms = 2 };
	h[4].cpu_pct = 95;             /* agent 5: the busiest */
	h[9].dispatch_lag_p99_ms = 70; /* agent 10: the most late dispatches */
	h[20].loop_lag_p99_ms = NAN;   /* no sample: never the worst */
	assert_int_equal(cl_results_add_interval_agents(r, 0, 1.0, &iv, 1.0, h, N), 0);
	assert_int_equal(cl_results_add_interval_agents(r, 0, 2.0, &iv, 1.0, h, 3), 0);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &iv, 2, CL_STAGE_OK, NULL), 0);

	const json_t *st = json_array_get(json_object_get(cl_results_doc(r), "stages"), 0);
	const json_t *row = json_array_get(json_object_get(st, "intervals"), 0);
	const json_t *ag = json_object_get(row, "agents");
	assert_int_equal(json_array_size(ag), CL_RESULTS_AGENTS_KEPT);
	assert_int_equal((int)cl_results_num(row, "agents_total"), N);
	const int want[CL_RESULTS_AGENTS_KEPT] = { 5, 10, 35, 36, 37, 38, 39, 40 };
	for (size_t k = 0; k < CL_RESULTS_AGENTS_KEPT; k++)
		assert_int_equal((int)cl_results_num(json_array_get(ag, k), "agent"), want[k]);
	row = json_array_get(json_object_get(st, "intervals"), 1);
	assert_int_equal(json_array_size(json_object_get(row, "agents")), 3);
	assert_null(json_object_get(row, "agents_total"));

	char path[4096];
	snprintf(path, sizeof(path), "%s/intervals.jsonl", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	json_error_t je;
	json_t *line = json_loadf(f, JSON_DISABLE_EOF_CHECK, &je);
	assert_non_null(line);
	assert_int_equal(json_array_size(json_object_get(line, "agents")), N);
	assert_null(json_object_get(line, "agents_total"));
	json_decref(line);
	fclose(f);
	cl_metrics_destroy(&iv);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

static void test_untrusted_text(void **state)
{
	char *dir = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "utf8", conc, 1);
	free(s.stages[0].name);
	s.stages[0].name = strdup("st\xff"
				  "age");
	free(s.target.url);
	s.target.url = strdup("https://user:secret@example.com:8443/v1");
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_metrics m = { 0 };
	assert_int_equal(cl_metrics_init(&m), 0);
	m.ctr[CL_CTR_STARTED] = 1;
	m.ctr[CL_CTR_ERR_STREAM_MALFORMED] = 1;
	/* A body cut mid-character plus raw junk, as a server may send. */
	static const char body[] = "bad \xc3 chunk \xfe\xff \xe2\x82\xac";
	cl_metrics_add_err_sample(&m, CL_CTR_ERR_STREAM_MALFORMED, 200, body, sizeof(body) - 1);
	assert_int_equal(cl_results_finish_stage(r, 0, &s.stages[0], &m, 1, CL_STAGE_OK, NULL), 0);
	const json_t *doc = cl_results_doc(r);
	const json_t *st = json_array_get(json_object_get(doc, "stages"), 0);
	assert_string_equal(cl_results_str(st, "name", ""), "st\xef\xbf\xbd"
							    "age");
	const json_t *sample = json_array_get(cl_results_get(st, "requests.error_samples"), 0);
	assert_string_equal(cl_results_str(sample, "class", ""), "stream_malformed");
	assert_string_equal(cl_results_str(sample, "body", ""),
			    "bad \xef\xbf\xbd chunk \xef\xbf\xbd\xef\xbf\xbd \xe2\x82\xac");
	/* Credentials in the URL never reach the document. */
	assert_string_equal(cl_results_str(doc, "scenario.target.url", ""),
			    "https://example.com:8443/v1");
	json_t *disk = load_file(dir, "results.json");
	assert_true(json_equal(disk, (json_t *)doc));
	json_decref(disk);
	cl_metrics_destroy(&m);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

static void test_default_directory(void **state)
{
	char *parent = make_tmpdir();
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "nightly run/1", conc, 1);
	s.output.dir = parent;
	struct cl_results *a = NULL, *b = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, NULL, &a, &err), 0);
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, NULL, &b, &err), 0);
	const char *da = cl_results_dir(a), *db = cl_results_dir(b);
	assert_string_not_equal(da, db);
	assert_int_equal(strncmp(da, parent, strlen(parent)), 0);
	/* The name is made file-name safe: no slash, no space. */
	assert_non_null(strstr(da, "/nightly_run_1-"));
	assert_true(exists(da, "results.json"));
	assert_true(exists(db, "intervals.jsonl"));
	char link[4096], target[4096];
	snprintf(link, sizeof(link), "%s/latest", parent);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, strrchr(db, '/') + 1);
	cl_results_destroy(a);
	cl_results_destroy(b);
	s.output.dir = NULL;
	tm_scenario_free(&s);
	rm_rf(parent);
	free(parent);
}

static void test_create_failure(void **state)
{
	char *dir = make_tmpdir();
	char file[4200], under[4300];
	snprintf(file, sizeof(file), "%s/plain-file", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(under, sizeof(under), "%s/sub", file);
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "fail", conc, 1);
	struct cl_results *r = (struct cl_results *)&s; /* must be reset to NULL */
	struct cl_err err = { 0 };
	int rc = cl_results_create(&s, NULL, 0, NULL, under, &r, &err);
	assert_int_equal(rc, CL_EIO);
	assert_null(r);
	if (!strstr(err.msg, "plain-file"))
		fail_msg("message '%s' does not name the path", err.msg);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

static void test_sha256(void **state)
{
	char hex[65];
	cl_results_sha256_hex("", 0, hex);
	assert_string_equal(hex,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	cl_results_sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	cl_results_sha256_hex(two, strlen(two), hex);
	assert_string_equal(hex,
			    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	char *million = malloc(1000000);
	memset(million, 'a', 1000000);
	cl_results_sha256_hex(million, 1000000, hex);
	assert_string_equal(hex,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);

	/* The scenario file is hashed into the document. */
	char *dir = make_tmpdir();
	char path[4200];
	snprintf(path, sizeof(path), "%s/scn.yaml", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("abc", f);
	fclose(f);
	struct cl_scenario s;
	const uint32_t conc[] = { 1 };
	tm_scenario(&s, "sha", conc, 1);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, path, 0, NULL, dir, &r, &err), 0);
	assert_string_equal(cl_results_str(cl_results_doc(r), "scenario.sha256", ""),
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_string_equal(cl_results_str(cl_results_doc(r), "scenario.file", ""), path);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	rm_rf(dir);
	free(dir);
}

/* The names results.json has always carried, and the way back from them. */
static void test_stage_status_names(void **state)
{
	static const char *const want[] = { "ok", "failed", "degraded", "interrupted", "aborted" };
	assert_int_equal(sizeof(want) / sizeof(want[0]), CL_STAGE_N_STATUS);
	for (int i = 0; i < CL_STAGE_N_STATUS; i++) {
		assert_string_equal(cl_stage_status_name((enum cl_stage_status)i), want[i]);
		enum cl_stage_status back = CL_STAGE_N_STATUS;
		assert_int_equal(cl_stage_status_parse(want[i], &back), 0);
		assert_int_equal(back, i);
	}
	assert_null(cl_stage_status_name(CL_STAGE_N_STATUS));
	enum cl_stage_status untouched = CL_STAGE_DEGRADED;
	assert_int_equal(cl_stage_status_parse("great", &untouched), CL_EINVAL);
	assert_int_equal(cl_stage_status_parse("OK", &untouched), CL_EINVAL);
	assert_int_equal(cl_stage_status_parse(NULL, &untouched), CL_EINVAL);
	assert_int_equal(untouched, CL_STAGE_DEGRADED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_misuse_refused),
		cmocka_unit_test(test_interrupted_run),
		cmocka_unit_test(test_token_source),
		cmocka_unit_test(test_client_bound),
		cmocka_unit_test(test_warning_causes),
		cmocka_unit_test(test_stalls),
		cmocka_unit_test(test_interval_decimation),
		cmocka_unit_test(test_interval_agents_kept),
		cmocka_unit_test(test_finished_intervals_budget),
		cmocka_unit_test(test_untrusted_text),
		cmocka_unit_test(test_default_directory),
		cmocka_unit_test(test_create_failure),
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_stage_status_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
