/* compare on real results documents: injected regressions are caught in the right
 * direction, improvements pass, limits and the error-rate floor hold, missing stages count,
 * and bad input is refused naming the file and the field. */
#include "coordinator/report/compare.h"
#include "coord_metrics.h"
#include "coordinator/results/results.h"

#include "chatload/exitcode.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static char *dir;
static json_t *base; /* a real run of two stages */

static int setup(void **state)
{
	char tmpl[] = "/tmp/chatload-compare-test-XXXXXX";
	dir = strdup(mkdtemp(tmpl));
	struct cl_scenario s;
	const uint32_t conc[] = { 4, 16 };
	tm_scenario(&s, "cmp", conc, 2);
	s.output.formats = CL_FMT_JSON;
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	if (cl_results_create(&s, NULL, 0, NULL, dir, &r, &err) != 0)
		return -1;
	struct cl_metrics m = { 0 };
	if (cl_metrics_init(&m) != 0)
		return -1;
	uint64_t seed = 4;
	for (size_t st = 0; st < 2; st++) {
		cl_metrics_reset(&m);
		struct tm_traffic t = { .requests = 500,
					.errors_5xx = 1,
					.ttft_ms = 150,
					.itl_ms = 12,
					.output_tokens = 40,
					.prompt_tokens = 8,
					.tokens_per_chunk = 1,
					.queue_ms = 0.1 };
		tm_record(&m, &seed, &t);
		cl_results_finish_stage(r, st, &s.stages[st], &m, 50.0, CL_STAGE_OK, NULL);
	}
	int code;
	cl_results_finish(r, true, CL_EXIT_OK, &code);
	base = json_deep_copy(cl_results_doc(r));
	cl_metrics_destroy(&m);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	return base ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	json_decref(base);
	free(dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const struct cl_compare_opts opts = { 0.05, 0.001 };

/* Multiplies a stage field of a copy of the base. */
static void scale(json_t *doc, size_t stage, const char *path, double f)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	char *dot = strrchr(buf, '.');
	*dot = '\0';
	json_t *st = json_array_get(json_object_get(doc, "stages"), stage);
	json_t *obj = (json_t *)cl_results_get(st, buf);
	double v = json_number_value(json_object_get(obj, dot + 1));
	json_object_set_new(obj, dot + 1, json_real(v * f));
}

static const json_t *metric(const json_t *cmp, size_t stage, const char *name)
{
	const json_t *st = json_array_get(json_object_get(cmp, "stages"), stage);
	size_t i;
	const json_t *m;
	json_array_foreach(json_object_get(st, "metrics"), i, m)
	{
		if (strcmp(cl_results_str(m, "metric", ""), name) == 0)
			return m;
	}
	fail_msg("metric '%s' not in stage %zu", name, stage);
	return NULL;
}

static const char *verdict(const json_t *cmp, size_t stage, const char *name)
{
	return cl_results_str(metric(cmp, stage, name), "verdict", "?");
}

static void test_same(void **state)
{
	size_t reg = 9;
	json_t *cmp = cl_compare_build(base, base, "a.json", "b.json", &opts, &reg);
	assert_non_null(cmp);
	assert_int_equal(reg, 0);
	assert_int_equal(json_array_size(json_object_get(cmp, "stages")), 2);
	assert_string_equal(verdict(cmp, 0, "ttft_p99_ms"), "same");
	assert_string_equal(verdict(cmp, 1, "output_tokens_per_s"), "same");
	json_decref(cmp);
	FILE *null = fopen("/dev/null", "w");
	assert_int_equal(cl_compare(base, base, "a", "b", &opts, CL_COMPARE_TABLE, null),
			 CL_EXIT_OK);
	fclose(null);
}

static void test_regression(void **state)
{
	json_t *cur = json_deep_copy(base);
	scale(cur, 1, "latency_ms.ttft.p99", 1.20);            /* latency up 20%: worse */
	scale(cur, 0, "throughput.output_tokens_per_s", 0.90); /* throughput down 10%: worse */
	scale(cur, 0, "latency_ms.itl.p50", 1.03);             /* up 3%: worse, within 5% */
	size_t reg = 0;
	json_t *cmp = cl_compare_build(base, cur, "base.json", "new.json", &opts, &reg);
	assert_int_equal(reg, 2);
	assert_string_equal(verdict(cmp, 1, "ttft_p99_ms"), "regressed");
	assert_string_equal(verdict(cmp, 0, "output_tokens_per_s"), "regressed");
	assert_string_equal(verdict(cmp, 0, "itl_p50_ms"), "worse");
	assert_float_equal(cl_results_num(metric(cmp, 1, "ttft_p99_ms"), "change"), 0.20, 1e-5);
	assert_string_equal(cl_results_str(metric(cmp, 1, "ttft_p99_ms"), "better", ""), "lower");
	json_decref(cmp);
	/* The whole command path: 99, and the table names the regression. */
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_int_equal(
	    cl_compare(base, cur, "base.json", "new.json", &opts, CL_COMPARE_TABLE, out),
	    CL_EXIT_SLO_BREACH);
	fclose(out);
	assert_non_null(strstr(text, "REGRESSED"));
	assert_non_null(strstr(text, "+20.0%"));
	assert_non_null(strstr(text, "result: 2 regressions beyond 5%"));
	free(text);
	/* A looser limit lets the same change through. */
	struct cl_compare_opts loose = { 0.25, 0.001 };
	cmp = cl_compare_build(base, cur, "b", "n", &loose, &reg);
	assert_int_equal(reg, 0);
	json_decref(cmp);
	json_decref(cur);
}

/* Gives a copy's stage a ci95 (of 10 batches) whose figure `name` has this half-width, from
 * this method over n values (method NULL: a bare half, as a hand-made file might have). */
static void set_ci(json_t *doc, size_t stage, const char *name, double half, const char *method,
		   int n)
{
	json_t *st = json_array_get(json_object_get(doc, "stages"), stage);
	json_t *ci = json_object_get(st, "ci95");
	if (!json_is_object(ci)) {
		ci = json_pack("{s:s,s:f,s:i}", "method", "batch_means", "level", 0.95, "n", 10);
		json_object_set_new(st, "ci95", ci);
	}
	json_object_set_new(ci, name,
			    method ? json_pack("{s:f,s:s,s:i}", "half", half, "method", method, "n", n)
				   : json_pack("{s:f}", "half", half));
}

static void set_half(json_t *doc, size_t stage, const char *name, double half)
{
	set_ci(doc, stage, name, half, NULL, 0);
}

/* A change beyond the limit is a regression only when it is beyond the noise too: the 99 %
 * interval of the difference, each run's 95 % half widened by t(0.995, df) / t(0.975, df)
 * (2.576 / 1.96 without degrees of freedom to go by) and the two added in quadrature.  Without
 * an interval in either run, the limit alone decides. */
static void test_noise(void **state)
{
	(void)state;
	json_t *b = json_deep_copy(base), *cur = json_deep_copy(base);
	double p99 = cl_results_num(json_array_get(json_object_get(base, "stages"), 1),
				    "latency_ms.ttft.p99");
	scale(cur, 1, "latency_ms.ttft.p99", 1.20); /* +20 % */
	/* Only the new run has an interval: judged as before. */
	set_half(cur, 1, "ttft_p99_ms", 0.15 * p99);
	size_t reg = 0;
	json_t *cmp = cl_compare_build(b, cur, "b", "n", &opts, &reg);
	assert_string_equal(verdict(cmp, 1, "ttft_p99_ms"), "regressed");
	assert_true(json_is_null(json_object_get(metric(cmp, 1, "ttft_p99_ms"), "noise")));
	json_decref(cmp);
	/* Both at 15 % (bare halves, normal widening): the noise of the change is
	 * sqrt(2) x 15 % x 2.576 / 1.96 = 27.9 % > 20 %: within noise. */
	set_half(b, 1, "ttft_p99_ms", 0.15 * p99);
	cmp = cl_compare_build(b, cur, "b", "n", &opts, &reg);
	assert_int_equal(reg, 0);
	assert_string_equal(verdict(cmp, 1, "ttft_p99_ms"), "within noise");
	double noise = cl_results_num(metric(cmp, 1, "ttft_p99_ms"), "noise");
	double want = sqrt(2) * 0.15 * p99 * 2.576 / 1.96;
	if (!(fabs(noise - want) < 1e-3 * p99))
		fail_msg("noise %g, want %g", noise, want);
	json_decref(cmp);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_int_equal(cl_compare(b, cur, "b.json", "n.json", &opts, CL_COMPARE_TABLE, out),
			 CL_EXIT_OK);
	fclose(out);
	if (!strstr(text, "within noise") ||
	    !strstr(text, "\xc2\xb1"
			  "27.9%") ||
	    !strstr(text, "the 99% interval of the change") ||
	    !strstr(text, "1 change beyond the limit is within the noise"))
		fail_msg("table:\n%s", text);
	free(text);
	/* Both at 10 % of the figure.  At 95 % the noise would be sqrt(2) x 10 % = 14.1 %, and
	 * +20 % a regression.  Widened to 99 % it depends on how much each half rests on: an
	 * order-statistic interval, normal: 18.6 % < 20 %, still a regression; batch means over
	 * 10 batches, t(0.995, 9) / t(0.975, 9) = 3.250 / 2.262: 20.3 %, within noise; the same
	 * 10 % from 5 repeats, 4.604 / 2.776: 23.5 %. */
	const struct {
		const char *method;
		int n;
		double noise;
		const char *verdict;
	} cases[] = {
		{ "order_statistics", 900, 0.186, "regressed" },
		{ "batch_means", 10, 0.203, "within noise" },
		{ "repeats", 5, 0.235, "within noise" },
		/* n counts values; its degrees of freedom are the stage's 10 batches' */
		{ "cdf_batch_means", 900, 0.203, "within noise" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		set_ci(b, 1, "ttft_p99_ms", 0.10 * p99, cases[i].method, cases[i].n);
		set_ci(cur, 1, "ttft_p99_ms", 0.10 * p99, cases[i].method, cases[i].n);
		cmp = cl_compare_build(b, cur, "b", "n", &opts, &reg);
		noise = cl_results_num(metric(cmp, 1, "ttft_p99_ms"), "noise") / p99;
		if (fabs(noise - cases[i].noise) > 0.001 ||
		    strcmp(verdict(cmp, 1, "ttft_p99_ms"), cases[i].verdict) != 0)
			fail_msg("%s n=%d: noise %.4f (want %.3f), %s (want %s)", cases[i].method,
				 cases[i].n, noise, cases[i].noise, verdict(cmp, 1, "ttft_p99_ms"),
				 cases[i].verdict);
		assert_int_equal(reg, strcmp(cases[i].verdict, "regressed") == 0);
		json_decref(cmp);
	}
	/* A percentile across 5 repeats (cdf_repeats): n counts values, its degrees of freedom
	 * are the 5 repeats' (the ci95 object's n), 4.604 / 2.776 as for the rates. */
	for (int k = 0; k < 2; k++) {
		json_t *doc = k ? cur : b;
		json_t *ci = json_object_get(json_array_get(json_object_get(doc, "stages"), 1),
					     "ci95");
		json_object_set_new(ci, "method", json_string("repeats"));
		json_object_set_new(ci, "n", json_integer(5));
		set_ci(doc, 1, "ttft_p99_ms", 0.10 * p99, "cdf_repeats", 900);
	}
	cmp = cl_compare_build(b, cur, "b", "n", &opts, &reg);
	noise = cl_results_num(metric(cmp, 1, "ttft_p99_ms"), "noise") / p99;
	if (fabs(noise - 0.235) > 0.001 || strcmp(verdict(cmp, 1, "ttft_p99_ms"), "within noise"))
		fail_msg("cdf_repeats: noise %.4f (want 0.235), %s", noise,
			 verdict(cmp, 1, "ttft_p99_ms"));
	json_decref(cmp);
	/* The limit stays the practical floor: +3 % with no noise at all is only worse. */
	json_t *small = json_deep_copy(base);
	scale(small, 1, "latency_ms.ttft.p99", 1.03);
	set_half(small, 1, "ttft_p99_ms", 0);
	set_half(b, 1, "ttft_p99_ms", 0);
	cmp = cl_compare_build(b, small, "b", "n", &opts, &reg);
	assert_int_equal(reg, 0);
	assert_string_equal(verdict(cmp, 1, "ttft_p99_ms"), "worse");
	json_decref(cmp);
	json_decref(small);
	json_decref(b);
	json_decref(cur);
}

/* A stage the client froze in (an agent stalled) has tails that describe the client: in
 * either run, its p99s are shown but not judged ("client-bound", not counted), as chatload
 * history does; its medians and throughput are judged; a stage client-bound only by a lag
 * percentile is judged whole.  The warning says which. */
static void test_client_bound_tails(void **state)
{
	(void)state;
	for (int which = 0; which < 3; which++) {
		json_t *b = json_deep_copy(base), *cur = json_deep_copy(base);
		scale(cur, 1, "latency_ms.ttft.p99", 1.50);
		scale(cur, 1, "latency_ms.itl.p50", 1.50);
		json_t *st = json_array_get(json_object_get(which == 1 ? b : cur, "stages"), 1);
		json_t *client = json_object_get(st, "client");
		json_object_set_new(client, "client_bound", json_true());
		json_object_set_new(client, "reasons",
				    json_pack("[s]", which == 2 ? "loop_lag" : "stall"));
		size_t reg = 0;
		json_t *cmp = cl_compare_build(b, cur, "b", "n", &opts, &reg);
		const char *want = which == 2 ? "regressed" : "client-bound";
		if (strcmp(verdict(cmp, 1, "ttft_p99_ms"), want) != 0)
			fail_msg("case %d: ttft p99 %s, want %s", which,
				 verdict(cmp, 1, "ttft_p99_ms"), want);
		assert_string_equal(verdict(cmp, 1, "itl_p50_ms"), "regressed");
		assert_int_equal(reg, which == 2 ? 2 : 1);
		const char *w = json_string_value(json_array_get(json_object_get(cmp, "warnings"), 0));
		const char *say = which == 2 ? "(loop_lag): judged" : "(stall): its tails describe";
		if (!w || !strstr(w, say))
			fail_msg("case %d: warning '%s'", which, w ? w : "(none)");
		json_decref(cmp);
		json_decref(b);
		json_decref(cur);
	}
}

static void test_improvement(void **state)
{
	json_t *cur = json_deep_copy(base);
	for (size_t st = 0; st < 2; st++) {
		scale(cur, st, "throughput.output_tokens_per_s", 1.3);
		scale(cur, st, "throughput.requests_per_s", 1.3);
		scale(cur, st, "latency_ms.ttft.p50", 0.7);
		scale(cur, st, "latency_ms.itl.p99", 0.5);
		scale(cur, st, "requests.error_rate", 0);
	}
	size_t reg = 9;
	json_t *cmp = cl_compare_build(base, cur, "b", "n", &opts, &reg);
	assert_int_equal(reg, 0);
	assert_string_equal(verdict(cmp, 0, "output_tokens_per_s"), "better");
	assert_string_equal(verdict(cmp, 1, "ttft_p50_ms"), "better");
	assert_string_equal(verdict(cmp, 1, "error_rate"), "better");
	json_decref(cmp);
	FILE *null = fopen("/dev/null", "w");
	assert_int_equal(cl_compare(base, cur, "b", "n", &opts, CL_COMPARE_MD, null), CL_EXIT_OK);
	fclose(null);
	json_decref(cur);
}

static void set_error_rate(json_t *doc, size_t stage, double v)
{
	json_t *st = json_array_get(json_object_get(doc, "stages"), stage);
	json_object_set_new(json_object_get(st, "requests"), "error_rate", json_real(v));
}

static void test_error_rate_floor(void **state)
{
	json_t *b = json_deep_copy(base), *n = json_deep_copy(base);
	size_t reg;
	set_error_rate(b, 0, 0);
	set_error_rate(n, 0, 0.0005); /* one error in 2000: under the 0.1 pp floor */
	json_t *cmp = cl_compare_build(b, n, "b", "n", &opts, &reg);
	assert_string_equal(verdict(cmp, 0, "error_rate"), "worse");
	assert_int_equal(reg, 0);
	json_decref(cmp);
	set_error_rate(n, 0, 0.02); /* 2%: regressed */
	cmp = cl_compare_build(b, n, "b", "n", &opts, &reg);
	assert_string_equal(verdict(cmp, 0, "error_rate"), "regressed");
	assert_int_equal(reg, 1);
	json_decref(cmp);
	/* A high base rate: +0.2 pp is past the floor but only +1% relative. */
	set_error_rate(b, 0, 0.200);
	set_error_rate(n, 0, 0.202);
	cmp = cl_compare_build(b, n, "b", "n", &opts, &reg);
	assert_string_equal(verdict(cmp, 0, "error_rate"), "worse");
	json_decref(cmp);
	json_decref(b);
	json_decref(n);
}

static void test_missing_and_null(void **state)
{
	json_t *cur = json_deep_copy(base);
	json_t *stages = json_object_get(cur, "stages");
	/* Rename stage 1: base's c16 is missing, the new one is new. */
	json_object_set_new(json_array_get(stages, 1), "name", json_string("c16-renamed"));
	/* No TTFT in the new run's stage 0, where the base had one. */
	json_t *ttft = (json_t *)cl_results_get(json_array_get(stages, 0), "latency_ms.ttft");
	json_object_set_new(ttft, "p50", json_null());
	size_t reg;
	json_t *cmp = cl_compare_build(base, cur, "b", "n", &opts, &reg);
	assert_int_equal(reg, 2);
	const json_t *cs = json_object_get(cmp, "stages");
	assert_int_equal(json_array_size(cs), 3);
	assert_string_equal(cl_results_str(json_array_get(cs, 1), "status", ""), "missing");
	assert_string_equal(cl_results_str(json_array_get(cs, 2), "status", ""), "new");
	assert_string_equal(verdict(cmp, 0, "ttft_p50_ms"), "regressed");
	json_decref(cmp);
	/* The other way round, a value the base lacks is not comparable. */
	cmp = cl_compare_build(cur, base, "b", "n", &opts, &reg);
	assert_string_equal(verdict(cmp, 0, "ttft_p50_ms"), "n/a");
	json_decref(cmp);
	json_decref(cur);
}

static char *write_doc(const char *name, const char *text)
{
	char *path = malloc(4200);
	snprintf(path, 4200, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void expect_load_error(const char *path, int code, const char *want)
{
	json_t *doc = NULL;
	struct cl_err err = { 0 };
	char msg[1024];
	assert_int_equal(cl_results_load(path, &doc, &err), code);
	assert_null(doc);
	cl_err_format(&err, msg, sizeof(msg));
	if (!strstr(msg, want))
		fail_msg("'%s' does not mention '%s'", msg, want);
}

static void test_bad_input(void **state)
{
	char *missing = write_doc("x", "");
	strcat(missing, "-does-not-exist.json");
	expect_load_error(missing, CL_EIO, "-does-not-exist.json");
	char *junk = write_doc("junk.json", "{\"schema\": \"chatload.results/1\",\n \"x\": [1,}");
	expect_load_error(junk, CL_EPARSE, "junk.json:2:");

	json_t *d = json_deep_copy(base);
	json_object_set_new(d, "schema", json_string("chatload.results/2"));
	char *text = json_dumps(d, 0);
	char *v2 = write_doc("v2.json", text);
	free(text);
	expect_load_error(v2, CL_EVERSION, "unsupported version 'chatload.results/2'");
	json_decref(d);

	d = json_deep_copy(base);
	json_object_set_new(
	    json_object_get(json_array_get(json_object_get(d, "stages"), 1), "throughput"),
	    "requests_per_s", json_string("fast"));
	text = json_dumps(d, 0);
	char *bad = write_doc("bad.json", text);
	free(text);
	char want[4400];
	snprintf(want, sizeof(want),
		 "'%s': stages[1].throughput.requests_per_s: expected a number or null", bad);
	expect_load_error(bad, CL_EPARSE, want);
	json_decref(d);

	d = json_deep_copy(base);
	json_object_del(
	    json_object_get(json_array_get(json_object_get(d, "stages"), 0), "latency_ms"), "itl");
	text = json_dumps(d, 0);
	char *noitl = write_doc("noitl.json", text);
	free(text);
	expect_load_error(noitl, CL_EPARSE, "stages[0].latency_ms.itl: missing");
	json_decref(d);

	/* A directory holding results.json loads like the file. */
	json_t *doc = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_load(dir, &doc, &err), 0);
	assert_true(json_equal(doc, base));
	json_decref(doc);
	free(missing);
	free(junk);
	free(v2);
	free(bad);
	free(noitl);
}

static void test_formats(void **state)
{
	enum cl_compare_format f;
	assert_int_equal(cl_compare_parse_format("json", &f), 0);
	assert_int_equal(f, CL_COMPARE_JSON);
	assert_int_equal(cl_compare_parse_format("html", &f), CL_EINVAL);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_int_equal(cl_compare(base, base, "a", "b", &opts, CL_COMPARE_JSON, out), CL_EXIT_OK);
	fclose(out);
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	assert_non_null(j);
	assert_string_equal(cl_results_str(j, "schema", ""), "chatload.compare/1");
	assert_int_equal((int64_t)cl_results_num(j, "regressions"), 0);
	json_decref(j);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same),
		cmocka_unit_test(test_regression),
		cmocka_unit_test(test_noise), cmocka_unit_test(test_client_bound_tails),
		cmocka_unit_test(test_improvement),
		cmocka_unit_test(test_error_rate_floor),
		cmocka_unit_test(test_missing_and_null),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_formats),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
