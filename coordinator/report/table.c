/* The terminal summary printed at the end of `run` and by `chatload report`: one aligned row
 * per stage, then verdict, estimates, warnings and where the results are. */
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"

#include "chatload/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Display width of UTF-8 text (code points; stage names are rarely wider than that). */
static size_t width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* Pads s to w columns; a left-aligned last column gets no trailing blanks. */
static void pad(FILE *out, const char *s, size_t w, bool right, bool last)
{
	size_t len = width(s);
	if (right)
		for (size_t i = len; i < w; i++)
			fputc(' ', out);
	fputs(s, out);
	if (!right && !last)
		for (size_t i = len; i < w; i++)
			fputc(' ', out);
}

static void print_table(const json_t *stages, FILE *out)
{
	size_t n = json_array_size(stages);
	struct cli_rp_row *rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows) {
		fputs("(out of memory)\n", out);
		return;
	}
	int cols[RP__COLS];
	size_t nc = cli_rp_columns(stages, cols);
	size_t w[RP__COLS];
	for (int c = 0; c < RP__COLS; c++)
		w[c] = width(cli_rp_col_names[c]);
	for (size_t i = 0; i < n; i++) {
		cli_rp_stage_row(json_array_get(stages, i), &rows[i]);
		for (int c = 0; c < RP__COLS; c++)
			if (width(rows[i].cell[c]) > w[c])
				w[c] = width(rows[i].cell[c]);
	}
	for (size_t k = 0; k < nc; k++) {
		int c = cols[k];
		pad(out, cli_rp_col_names[c], w[c], cli_rp_col_numeric[c], k + 1 == nc);
		fputs(k + 1 < nc ? "  " : "\n", out);
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < nc; k++) {
			int c = cols[k];
			pad(out, rows[i].cell[c], w[c], cli_rp_col_numeric[c], k + 1 == nc);
			fputs(k + 1 < nc ? "  " : "\n", out);
		}
	}
	free(rows);
}

/* One detail table (report/sections.c), aligned, under its title; nothing when empty. */
static void print_detail(const json_t *doc, enum cli_rp_table_kind kind, FILE *out)
{
	struct cli_rp_table t;
	if (cli_rp_table_build(doc, kind, &t) != 0 || t.n_rows == 0) {
		cli_rp_table_free(&t);
		return;
	}
	size_t w[RP_TBL_COLS];
	for (size_t c = 0; c < t.n_cols; c++) {
		w[c] = width(t.col[c]);
		for (size_t i = 0; i < t.n_rows; i++)
			if (width(t.cell[i][c]) > w[c])
				w[c] = width(t.cell[i][c]);
	}
	fprintf(out, "%s:\n", t.title);
	for (size_t c = 0; c < t.n_cols; c++) {
		fputs("  ", out);
		pad(out, t.col[c], w[c], t.numeric[c], c + 1 == t.n_cols);
	}
	fputc('\n', out);
	for (size_t i = 0; i < t.n_rows; i++) {
		for (size_t c = 0; c < t.n_cols; c++) {
			fputs("  ", out);
			pad(out, t.cell[i][c][0] ? t.cell[i][c] : "-", w[c], t.numeric[c],
			    c + 1 == t.n_cols);
		}
		fputc('\n', out);
	}
	fputc('\n', out);
	cli_rp_table_free(&t);
}

static void print_verdict(const json_t *doc, FILE *out)
{
	const json_t *breaches = cl_results_get(doc, "verdict.breaches");
	double evaluated = cl_results_num(doc, "verdict.evaluated");
	const char *word = cli_rp_verdict_word(doc);
	if (strcmp(word, "PASS") == 0)
		fprintf(out, "verdict: PASS (%.0f SLO checks met)\n", evaluated);
	else if (strcmp(word, "FAIL") == 0)
		fprintf(out, "verdict: FAIL (%zu of %.0f SLO checks breached)\n",
			json_array_size(breaches), evaluated);
	else
		fprintf(out, "verdict: no SLOs set\n");
	size_t i;
	const json_t *b;
	json_array_foreach(breaches, i, b)
	{
		char m[64], l[64], name[160];
		const char *unit = cl_results_str(b, "unit", "");
		const char *note = cl_results_str(b, "note", NULL);
		fprintf(out, "  breach: %s on stage '%s': %s, limit %s%s%s\n",
			cli_rp_check_name(b, name, sizeof(name)), cl_results_str(b, "stage", "?"),
			cli_rp_fmt_slo_value(m, sizeof(m), cl_results_num(b, "measured"), unit),
			cli_rp_fmt_slo_value(l, sizeof(l), cl_results_num(b, "limit"), unit),
			note ? " - " : "", note ? note : "");
	}
}

/* A capacity search's answer in one line, then the plan and the advice when there are. */
static void print_capacity(const json_t *doc, FILE *out)
{
	const json_t *cap = json_object_get(doc, "capacity");
	if (!json_is_object(cap))
		return;
	fprintf(out, "%s\n", cl_results_str(cap, "summary", "capacity: -"));
	const char *plan = cl_results_str(cap, "plan.summary", NULL);
	if (plan)
		fprintf(out, "%s\n", plan);
	const char *advice = cl_results_str(cap, "advice", NULL);
	if (advice)
		fprintf(out, "advice: %s\n", advice);
}

static void print_estimates(const json_t *doc, FILE *out)
{
	const json_t *est = json_object_get(doc, "estimates");
	if (json_array_size(est) == 0)
		return;
	const json_t *first = json_array_get(est, 0);
	char rps[32], tpr[32];
	if (!isfinite(cl_results_num(first, "requests_per_s"))) {
		fprintf(out, "estimates: none (stage '%s': %s)\n",
			cl_results_str(first, "from_stage", "?"),
			cl_results_str(first, "note", "no rate measured"));
		return;
	}
	fprintf(
	    out, "estimates (stage '%s' at %s req/s, %s output tokens per request):\n",
	    cl_results_str(first, "from_stage", "?"),
	    cli_rp_fmt_rate(rps, sizeof(rps), cl_results_num(first, "requests_per_s")),
	    cli_rp_fmt(tpr, sizeof(tpr), cl_results_num(first, "output_tokens_per_request"), 1));
	size_t i;
	const json_t *e;
	json_array_foreach(est, i, e)
	{
		char samples[32], hours[32], tokens[32], cost[48] = "";
		const char *note = cl_results_str(e, "note", NULL);
		double money = cl_results_num(e, "cost");
		if (isfinite(money))
			snprintf(cost, sizeof(cost), ", costs %.6g%s%s", money,
				 cl_results_str(doc, "scenario.cost.currency", NULL) ? " " : "",
				 cl_results_str(doc, "scenario.cost.currency", ""));
		fprintf(out, "  %s samples: %s h, %s output tokens%s%s%s\n",
			cli_rp_fmt_count(samples, sizeof(samples), cl_results_num(e, "samples")),
			cli_rp_fmt(hours, sizeof(hours), cl_results_num(e, "hours"), 2),
			cli_rp_fmt_big(tokens, sizeof(tokens), cl_results_num(e, "output_tokens")),
			cost, note ? " - " : "", note ? note : "");
	}
}

static void table_item(void *arg, const char *line)
{
	fprintf(arg, "images: %s\n", line);
}

int cl_report_table(const json_t *doc, FILE *out)
{
	char exit_text[64];
	fprintf(out, "chatload results: %s (%s, exit %s)\n",
		cl_results_str(doc, "scenario.name", "-"),
		json_is_true(json_object_get(doc, "complete")) ? "complete" : "incomplete",
		cli_rp_exit_text(exit_text, sizeof(exit_text), doc));
	double dur = cl_results_num(doc, "duration_s");
	char dur_text[32];
	fprintf(out, "started %s, took %s s, %zu agents\n\n",
		cl_results_str(doc, "started_at", "-"),
		cli_rp_fmt(dur_text, sizeof(dur_text), dur, 1),
		json_array_size(json_object_get(doc, "agents")));
	const json_t *stages = json_object_get(doc, "stages");
	if (json_array_size(stages))
		print_table(stages, out);
	else
		fputs("no stage finished\n", out);
	fputc('\n', out);
	/* The details a terminal has room for; report.md and report.html have them all. */
	print_detail(doc, RP_TBL_THINKING, out);
	print_detail(doc, RP_TBL_LATENCY, out);
	print_detail(doc, RP_TBL_ERRORS, out);
	print_detail(doc, RP_TBL_ENDPOINTS, out);
	print_detail(doc, RP_TBL_CLASSES, out);
	print_detail(doc, RP_TBL_HOSTS, out);
	print_detail(doc, RP_TBL_ENERGY, out);
	bool marked = false;
	size_t k;
	const json_t *st;
	json_array_foreach(stages, k, st)
	{
		marked |= json_is_true(cl_results_get(st, "client.client_bound"));
	}
	if (marked)
		print_detail(doc, RP_TBL_CLIENT, out);
	/* workload.images: what the images cost in prompt tokens. */
	cli_rp_images_lines(stages, table_item, out);
	print_verdict(doc, out);
	print_capacity(doc, out);
	print_estimates(doc, out);
	const json_t *warnings = json_object_get(doc, "warnings");
	size_t i;
	const json_t *w;
	json_array_foreach(warnings, i, w)
	{
		if (json_is_string(w))
			fprintf(out, "warning: %s\n", json_string_value(w));
	}
	const char *dir = cl_results_str(doc, "output_dir", NULL);
	if (dir)
		fprintf(out, "results: %s/results.json, report: %s/report.html\n", dir, dir);
	return ferror(out) ? CL_EIO : 0;
}
