/* The renderers on a real results document: CSV header and rows, well-formed Markdown
 * tables, self-contained HTML with charts, the terminal table, and documents from hostile
 * files (wrong types, missing fields) rendered without trusting them. */
#include "coord_metrics.h"
#include "coordinator/run/progress.h"
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"

#include "chatload/exitcode.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A finished run of three stages, one with a name that needs quoting everywhere. */
static json_t *build_doc(void)
{
	char tmpl[] = "/tmp/chatload-report-test-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	struct cl_scenario s;
	const uint32_t conc[] = { 1, 8, 32 };
	tm_scenario(&s, "report <test> & \"co\"", conc, 3);
	free(s.stages[2].name);
	s.stages[2].name = strdup("big, \"quoted\" | piped");
	tm_add_slo(&s, "ttft_p99", CL_SLO_LATENCY, CL_LAT_TTFT, 99, 10e3, NULL); /* breached */
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_results_create(&s, NULL, 0, NULL, dir, &r, &err), 0);
	struct cl_metrics iv = { 0 }, cum = { 0 };
	assert_int_equal(cl_metrics_init(&iv), 0);
	assert_int_equal(cl_metrics_init(&cum), 0);
	uint64_t seed = 1;
	for (size_t st = 0; st < 3; st++) {
		cl_metrics_reset(&cum);
		for (int k = 0; k < 4; k++) {
			struct tm_traffic t = { .requests = 10 * (uint32_t)(st + 1),
						.errors_5xx = st == 2 ? 1 : 0,
						.ttft_ms = 100.0 * (double)(st + 1),
						.itl_ms = 10,
						.output_tokens = 20,
						.prompt_tokens = 5,
						.tokens_per_chunk = 1,
						.queue_ms = 0.1,
						.inflight = (int64_t)conc[st] };
			cl_metrics_reset(&iv);
			tm_record(&iv, &seed, &t);
			assert_int_equal(cl_results_add_interval(r, st, k + 1.0, &iv, 1.0), 0);
			assert_int_equal(cl_metrics_merge(&cum, &iv), 0);
		}
		assert_int_equal(
		    cl_results_finish_stage(r, st, &s.stages[st], &cum, 4.0, CL_STAGE_OK, NULL), 0);
	}
	int code;
	assert_int_equal(cl_results_finish(r, true, CL_EXIT_OK, &code), 0);
	assert_int_equal(code, CL_EXIT_SLO_BREACH);
	json_t *doc = json_deep_copy(cl_results_doc(r));
	cl_metrics_destroy(&iv);
	cl_metrics_destroy(&cum);
	cl_results_destroy(r);
	tm_scenario_free(&s);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return doc;
}

/* Renders into a malloc'd string. */
static char *render(const json_t *doc, enum cl_report_format f)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(cl_report_render(doc, f, out), 0);
	fclose(out);
	return text;
}

/* Splits one CSV record (RFC 4180 quoting) into fields; returns the count. */
static size_t csv_fields(const char *line, char fields[][128], size_t max)
{
	size_t n = 0, o = 0;
	bool quoted = false;
	for (const char *p = line;; p++) {
		if (quoted) {
			if (*p == '"' && p[1] == '"') {
				fields[n][o++] = '"';
				p++;
			} else if (*p == '"') {
				quoted = false;
			} else {
				fields[n][o++] = *p;
			}
			continue;
		}
		if (*p == '"') {
			quoted = true;
		} else if (*p == ',' || *p == '\0') {
			fields[n][o] = '\0';
			n++;
			o = 0;
			if (*p == '\0' || n == max)
				return n;
		} else {
			fields[n][o++] = *p;
		}
	}
}

static void test_csv(void **state)
{
	json_t *doc = build_doc();
	char *text = render(doc, CL_REPORT_CSV);
	size_t ncol = cl_report_csv_n_columns();
	assert_true(ncol > 40);
	assert_null(cl_report_csv_column(ncol));
	char *save = NULL;
	char(*fields)[128] = calloc(ncol + 8, 128);
	int row = 0;
	for (char *line = strtok_r(text, "\r\n", &save); line;
	     line = strtok_r(NULL, "\r\n", &save)) {
		size_t n = csv_fields(line, fields, ncol + 8);
		assert_int_equal(n, ncol);
		if (row == 0) {
			for (size_t c = 0; c < ncol; c++)
				assert_string_equal(fields[c], cl_report_csv_column(c));
		} else {
			const json_t *st = json_array_get(json_object_get(doc, "stages"), row - 1);
			assert_string_equal(fields[1], cl_results_str(st, "name", ""));
			assert_string_equal(fields[2], "ok");
			/* Numbers as in the document (the column found by its name: a new
			 * error class moves it). */
			size_t rps_col = 0;
			while (strcmp(cl_report_csv_column(rps_col), "requests_per_s") != 0)
				rps_col++;
			assert_float_equal(strtod(fields[rps_col], NULL),
					   cl_results_num(st, "throughput.requests_per_s"), 1e-9);
			size_t slo_col = 0;
			while (strcmp(cl_report_csv_column(slo_col), "slo_pass") != 0)
				slo_col++;
			assert_string_equal(fields[slo_col], "false"); /* breached */
		}
		row++;
	}
	assert_int_equal(row, 4);
	free(fields);
	free(text);
	json_decref(doc);
}

/* Counts the cells of a Markdown table row: unescaped pipes minus one. */
static int md_cells(const char *line)
{
	int pipes = 0;
	for (const char *p = line; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		pipes += *p == '|';
	}
	return pipes - 1;
}

static void test_markdown(void **state)
{
	json_t *doc = build_doc();
	char *text = render(doc, CL_REPORT_MD);
	assert_non_null(strstr(text, "# chatload results: report \\<test\\> & \"co\""));
	assert_non_null(strstr(text, "## Stages"));
	assert_non_null(strstr(text, "## Verdict"));
	/* Every table: a header, a rule with the same number of cells, rows likewise. */
	int tables = 0, width = -1;
	bool in_table = false;
	char *save = NULL;
	const char *prev = "";
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] != '|') {
			in_table = false;
			prev = line;
			continue;
		}
		int cells = md_cells(line);
		if (!in_table) {
			in_table = true;
			width = cells;
			tables++;
		} else {
			assert_int_equal(cells, width);
		}
		if (strncmp(line, "|---", 4) == 0)
			assert_int_equal(prev[0], '|'); /* the rule follows its header */
		prev = line;
	}
	assert_true(tables >= 4);
	free(text);
	text = render(doc, CL_REPORT_MD);
	assert_non_null(strstr(text, "big, \"quoted\" \\| piped"));
	assert_non_null(strstr(text, "BREACH"));
	free(text);
	json_decref(doc);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_html(void **state)
{
	json_t *doc = build_doc();
	char *text = render(doc, CL_REPORT_HTML);
	assert_int_equal(strncmp(text, "<!DOCTYPE html>", 15), 0);
	/* 4 charts against load, 2 trade-off charts, 6 distributions (TTFT, ITL, TPOT, E2E,
	 * output and prompt tokens; no TTFC without reasoning), 9 on the one timeline. */
	assert_int_equal(count(text, "<svg "), 4 + 2 + 6 + 9);
	assert_int_equal(count(text, "</svg>"), 4 + 2 + 6 + 9);
	/* Errors over time by class: the 5xx of the last stage, per interval. */
	assert_non_null(strstr(text, "<title>Errors by class</title>"));
	assert_non_null(strstr(text, "<title>http_5xx at t="));
	assert_non_null(strstr(text, "<title>Loop lag p99 (client health)</title>"));
	/* The breached TTFT SLO is drawn where it applies: load, trade-off. */
	assert_int_equal(count(text, "SLO ttft_p99 \xe2\x89\xa4 10 ms"), 2);
	/* An SLO far above the data is named, not drawn where it would flatten the data. */
	json_t *slo = json_array_get(cl_results_get(doc, "scenario.slo"), 0);
	json_object_set_new((json_t *)slo, "limit", json_real(1e6));
	char *far = render(doc, CL_REPORT_HTML);
	assert_int_equal(count(far, "SLO ttft_p99 \xe2\x89\xa4 1000000 ms (above the chart)"), 2);
	free(far);
	/* Every stage ok: nothing marked. */
	assert_int_equal(count(text, "class=\"marked\""), 0);
	/* p90, p95 and mean are in the latency table. */
	assert_non_null(strstr(text, "<th class=\"n\">p95</th>"));
	assert_non_null(strstr(text, "<th class=\"n\">mean</th>"));
	/* Tooltips name a concurrency as a whole number. */
	assert_non_null(strstr(text, " at c=8: "));
	assert_null(strstr(text, "c=8.00"));
	/* Self-contained: no scripts, nothing fetched (no src, href, CSS url() or @import). */
	assert_int_equal(count(text, "<script"), 0);
	assert_int_equal(count(text, "<link"), 0);
	assert_int_equal(count(text, "src="), 0);
	assert_int_equal(count(text, "href="), 0);
	assert_int_equal(count(text, "url("), 0);
	assert_int_equal(count(text, "@import"), 0);
	/* Text from the document is escaped. */
	assert_non_null(strstr(text, "report &lt;test&gt; &amp; &quot;co&quot;"));
	assert_null(strstr(text, "<test>"));
	assert_non_null(strstr(text, "BREACH"));
	free(text);
	json_decref(doc);
}

static void test_table(void **state)
{
	json_t *doc = build_doc();
	char *text = render(doc, CL_REPORT_TABLE);
	assert_non_null(strstr(text, "TTFT p99 ms"));
	assert_non_null(strstr(text, "big, \"quoted\" | piped"));
	assert_non_null(strstr(text, "verdict: FAIL (3 of 3 SLO checks breached)"));
	assert_non_null(strstr(text, "breach: ttft_p99 on stage 'c1'"));
	assert_non_null(strstr(text, "results: /tmp/chatload-report-test-"));
	/* Aligned: every stage row as long as the header (numbers right-aligned). */
	char *save = NULL;
	size_t header_len = 0;
	int rows = 0;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "stage ", 6) == 0)
			header_len = strlen(line);
		else if (header_len && rows < 3 && (line[0] == 'c' || line[0] == 'b')) {
			assert_int_equal(strlen(line), header_len);
			rows++;
		}
	}
	assert_int_equal(rows, 3);
	free(text);
	json_decref(doc);
}

/* Documents a file could hold: nothing is trusted, everything renders. */
static void test_hostile_documents(void **state)
{
	const char *docs[] = {
		"{}",
		"[]",
		"{\"stages\": 5, \"warnings\": {}, \"verdict\": []}",
		"{\"stages\": [5, \"x\", null, {\"name\": 7, \"latency_ms\": \"fast\", "
		"\"intervals\": [1, {\"t_s\": \"a\"}, {\"t_s\": 1e308, \"output_tokens_per_s\": "
		"-1e308}], \"mode\": \"rate\", \"rate\": \"x\"}], \"warnings\": [1, null, "
		"\"<b>\"], \"verdict\": {\"pass\": 3, \"checks\": [{\"limit\": \"x\"}], "
		"\"breaches\": "
		"[7, {\"note\": 3}]}, \"estimates\": [{\"samples\": -1}], \"agents\": [{\"id\": "
		"\"q\"}], \"readiness\": {\"phases\": 3}, \"warmup\": {}}",
		/* what the detail tables and charts read, mistyped */
		"{\"scenario\": {\"slo\": [1, {\"key\": \"ttft_p99\", \"limit\": \"x\"}, "
		"{\"key\": \"ttft_p99\", \"limit\": 1e308, \"unit\": \"ms\", \"stage\": 3}]}, "
		"\"agents\": [{\"episodes\": [1, {\"seen_by\": 7}]}, {\"episodes\": {}}], "
		"\"stages\": [{\"name\": \"a\", \"mode\": \"concurrency\", \"concurrency\": 2, "
		"\"status\": 5, \"tokens\": {\"reasoning\": 1e308, \"output\": -1}, "
		"\"client\": {\"reasons\": [1, \"cpu\"], \"stalls\": 3}, "
		"\"requests\": {\"errors\": {\"connect\": \"x\", \"http_5xx\": 2}}, "
		"\"histograms\": {\"lat\": {\"ttft\": {\"total\": 5, \"buckets\": [1, [2], "
		"[\"a\", 3], [1e308, -4]]}, \"itl\": {\"total\": 1, \"buckets\": {}}}, "
		"\"cnt\": 4}, \"intervals\": [{\"t_s\": 1, \"errors_by_class\": "
		"{\"http_5xx\": \"x\"}, \"agents\": [1, {\"agent\": \"x\"}, {\"agent\": 3, "
		"\"cpu_pct\": 5}]}, {\"t_s\": -1e308, \"errors_by_class\": 3}]}, "
		"{\"name\": \"b\", \"mode\": \"concurrency\", \"concurrency\": 1, "
		"\"latency_ms\": {\"ttft\": {\"count\": 1, \"p99\": 1e308}}}, "
		"{\"name\": \"c\", \"mode\": \"concurrency\", \"concurrency\": 1.7e308, "
		"\"throughput\": {\"output_tokens_per_s\": -1.7e308}, \"latency_ms\": {\"ttft\": "
		"{\"p50\": 1.7e308}}}]}",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		json_error_t je;
		json_t *doc = json_loads(docs[i], JSON_DECODE_ANY, &je);
		assert_non_null(doc);
		for (int f = CL_REPORT_TABLE; f <= CL_REPORT_HTML; f++) {
			char *text = render(doc, (enum cl_report_format)f);
			assert_non_null(text);
			if (f == CL_REPORT_HTML)
				assert_null(strstr(text, "<b>"));
			free(text);
		}
		json_decref(doc);
	}
}

/* A failed stage is marked in every table and drawn as a cross, never joined to a line; a
 * stage that saw reasoning brings TTFC, the content rate and the thinking table. */
static void test_marked_and_thinking(void **state)
{
	json_t *doc = build_doc();
	json_t *stages = json_object_get(doc, "stages");
	json_t *c8 = json_array_get(stages, 1);
	json_object_set_new(c8, "status", json_string("failed"));
	json_t *tokens = json_object_get(c8, "tokens");
	double out = json_number_value(json_object_get(tokens, "output"));
	json_object_set_new(tokens, "reasoning", json_real(out / 4));
	char *text = render(doc, CL_REPORT_HTML);
	/* load charts: 1 + 1 + 2 + 2 series, trade-off 2 + 2: one cross each */
	assert_int_equal(count(text, "<g class=\"marked\">"), 10);
	assert_non_null(strstr(text, "(failed: not a normal measurement)"));
	assert_non_null(strstr(text, "<tr class=\"marked\"><td>c8</td>"));
	assert_non_null(strstr(text, "<td>c8 (failed)</td>"));
	assert_non_null(strstr(text, "<h2>Thinking model</h2>"));
	assert_non_null(strstr(text, "TTFC p50 ms"));
	free(text);
	text = render(doc, CL_REPORT_TABLE);
	assert_non_null(strstr(text, "content tok/s"));
	assert_non_null(strstr(text, "TTFC p99 ms"));
	assert_non_null(strstr(text, "Thinking model:"));
	assert_non_null(strstr(text, "c8 (failed)"));
	/* 25% of the output was reasoning in c8, none elsewhere. */
	assert_non_null(strstr(text, "25%"));
	free(text);
	text = render(doc, CL_REPORT_MD);
	assert_non_null(strstr(text, "## Thinking model"));
	assert_non_null(strstr(text, "## Latency distribution"));
	assert_non_null(strstr(text, "| c8 (failed) |"));
	free(text);
	json_decref(doc);
}

/* The report files a run leaves: exactly the formats asked for, each the renderer's text byte
 * for byte, no temporary file left; a directory that cannot take them is an error naming the
 * file, and every file asked for is still attempted. */
static void test_write_files(void **state)
{
	(void)state;
	json_t *doc = build_doc();
	char tmpl[] = "/tmp/chatload-report-files-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	struct cl_err err = { 0 };
	assert_int_equal(
	    cl_report_write_files(
		doc, dir, CL_REPORT_FILE(CL_REPORT_MD) | CL_REPORT_FILE(CL_REPORT_TABLE), &err),
	    0);
	char path[512], *want = render(doc, CL_REPORT_MD);
	snprintf(path, sizeof(path), "%s/report.md", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *got = calloc(1, strlen(want) + 2);
	assert_non_null(got);
	size_t n = fread(got, 1, strlen(want) + 1, f);
	fclose(f);
	assert_int_equal(n, strlen(want));
	assert_string_equal(got, want);
	free(got);
	free(want);
	assert_int_equal(unlink(path), 0);
	/* Nothing else: no CSV, no HTML, no file for the table, no temporary file. */
	assert_int_equal(rmdir(dir), 0);

	/* The directory is gone now: every file fails, the first is named. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(
	    cl_report_write_files(
		doc, dir, CL_REPORT_FILE(CL_REPORT_CSV) | CL_REPORT_FILE(CL_REPORT_HTML), &err),
	    CL_EIO);
	assert_non_null(strstr(err.msg, "results.csv"));
	json_decref(doc);
}

static void test_parse_format(void **state)
{
	enum cl_report_format f;
	assert_int_equal(cl_report_parse_format("csv", &f), 0);
	assert_int_equal(f, CL_REPORT_CSV);
	assert_int_equal(cl_report_parse_format("Markdown", &f), 0);
	assert_int_equal(f, CL_REPORT_MD);
	assert_int_equal(cl_report_parse_format("pdf", &f), CL_EINVAL);
	assert_int_equal(cl_report_parse_format(NULL, &f), CL_EINVAL);
	json_t *empty = json_object();
	assert_int_equal(cl_report_render(empty, (enum cl_report_format)9, stdout), CL_EINVAL);
	json_decref(empty);
}

/* Shares as people read them: never "1e+02%", never 99.96% shown as all of them. */
static void test_percent_format(void **state)
{
	static const struct {
		double pct;
		const char *want;
	} cases[] = { { 100, "100%" }, { 45.3, "45%" },    { 9.96, "10%" },   { 2, "2%" },
		      { 1.96, "2%" },  { 0.123, "0.12%" }, { 99.7, "99.7%" }, { 99.96, "99.9%" },
		      { 0, "0%" },     { NAN, "-" } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[32];
		assert_string_equal(cli_rp_fmt_pct(buf, sizeof(buf), cases[i].pct), cases[i].want);
	}
	/* The table: every request failed, every completed one without content. */
	json_error_t je;
	json_t *doc = json_loads(
	    "{\"stages\": [{\"name\": \"all\", \"status\": \"ok\", \"requests\": {"
	    "\"completed\": 0, \"errors_total\": 20, \"error_rate\": 1.0, \"no_content\": 0}},"
	    "{\"name\": \"think\", \"status\": \"ok\", \"requests\": {\"completed\": 8, "
	    "\"errors_total\": 0, \"error_rate\": 0.0, \"no_content\": 8}}]}",
	    0, &je);
	assert_non_null(doc);
	char *text = render(doc, CL_REPORT_TABLE);
	assert_non_null(strstr(text, " 20 (100%)"));
	assert_null(strstr(text, "e+"));
	assert_non_null(strstr(text, "no content"));
	assert_non_null(strstr(text, "8 (100%)"));
	free(text);
	/* Without requests lacking content the column is not shown. */
	json_object_set_new(
	    json_object_get(json_array_get(json_object_get(doc, "stages"), 1), "requests"),
	    "no_content", json_integer(0));
	text = render(doc, CL_REPORT_TABLE);
	assert_null(strstr(text, "no content"));
	free(text);
	json_decref(doc);
}

/* The live progress line: a percentile with no data is "-", not a measured 0 ms. */
static void test_progress_no_data(void **state)
{
	setenv("CHATLOAD_PROGRESS", "plain", 1);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct cl_progress p;
	cl_progress_init(&p, f);
	struct cl_progress_snapshot snap = {
		.stage = "c4", .n_stages = 1, .total_s = 10, .ttft_p50_ms = NAN, .agents_ok = 2
	};
	cl_progress_update(&p, &snap, true);
	snap.ttft_p50_ms = 123.4;
	cl_progress_update(&p, &snap, true);
	fclose(f);
	char *second = strchr(buf, '\n');
	assert_non_null(second);
	*second++ = '\0';
	/* The rates are the last interval's, and the line says so. */
	assert_non_null(strstr(buf, "| last interval: 0.0 req/s, 0 tok/s, ttft p50 - |"));
	assert_null(strstr(buf, "0ms"));
	assert_non_null(strstr(second, ", ttft p50 123ms |"));
	free(buf);
	unsetenv("CHATLOAD_PROGRESS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_markdown),
		cmocka_unit_test(test_html),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_hostile_documents),
		cmocka_unit_test(test_marked_and_thinking),
		cmocka_unit_test(test_write_files),
		cmocka_unit_test(test_parse_format),
		cmocka_unit_test(test_percent_format),
		cmocka_unit_test(test_progress_no_data),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
