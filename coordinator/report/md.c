/* report.md: the stage table plus verdict, estimates, readiness, warmup, agents, warnings
 * and error samples, as GitHub-flavoured Markdown tables. */
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"

#include "chatload/err.h"

#include <math.h>
#include <string.h>

static void row(FILE *out, const char *const *cells, size_t n)
{
	fputc('|', out);
	for (size_t i = 0; i < n; i++) {
		fputc(' ', out);
		cli_rp_put_md(out, cells[i] && cells[i][0] ? cells[i] : "-");
		fputs(" |", out);
	}
	fputc('\n', out);
}

static void rule(FILE *out, const bool *numeric, size_t n)
{
	fputc('|', out);
	for (size_t i = 0; i < n; i++)
		fputs(numeric && numeric[i] ? "---:|" : "---|", out);
	fputc('\n', out);
}

static void kv(FILE *out, const char *k, const char *v)
{
	const char *cells[2] = { k, v };
	row(out, cells, 2);
}

static void summary(const json_t *doc, FILE *out)
{
	char buf[128], dur[32];
	fprintf(out, "# chatload results: ");
	cli_rp_put_md(out, cl_results_str(doc, "scenario.name", "-"));
	fputs("\n\n", out);
	const char *h[2] = { "run", "value" };
	row(out, h, 2);
	rule(out, NULL, 2);
	kv(out, "scenario file", cl_results_str(doc, "scenario.file", "-"));
	kv(out, "scenario sha256", cl_results_str(doc, "scenario.sha256", "-"));
	kv(out, "chatload", cl_results_str(doc, "chatload_version", "-"));
	kv(out, "started", cl_results_str(doc, "started_at", "-"));
	kv(out, "finished", cl_results_str(doc, "finished_at", "-"));
	kv(out, "duration (s)", cli_rp_fmt(dur, sizeof(dur), cl_results_num(doc, "duration_s"), 1));
	kv(out, "complete", json_is_true(json_object_get(doc, "complete")) ? "yes" : "no");
	kv(out, "exit code", cli_rp_exit_text(buf, sizeof(buf), doc));
	kv(out, "verdict", cli_rp_verdict_word(doc));
	fputc('\n', out);
}

static void stages(const json_t *doc, FILE *out)
{
	fputs("## Stages\n\n", out);
	const json_t *arr = json_object_get(doc, "stages");
	if (json_array_size(arr) == 0) {
		fputs("No stage finished.\n\n", out);
		return;
	}
	int cols[RP__COLS];
	size_t nc = cli_rp_columns(arr, cols);
	const char *names[RP__COLS] = { 0 };
	bool numeric[RP__COLS] = { 0 };
	for (size_t k = 0; k < nc; k++) {
		names[k] = cli_rp_col_names[cols[k]];
		numeric[k] = cli_rp_col_numeric[cols[k]];
	}
	row(out, names, nc);
	rule(out, numeric, nc);
	size_t i;
	const json_t *s;
	json_array_foreach(arr, i, s)
	{
		struct cli_rp_row r;
		const char *cells[RP__COLS];
		cli_rp_stage_row(s, &r);
		for (size_t k = 0; k < nc; k++)
			cells[k] = r.cell[cols[k]];
		row(out, cells, nc);
	}
	fputc('\n', out);
}

/* One detail table (report/sections.c) as a section (a marked stage's status is in its
 * first cell: "c8 (failed)"). */
static void detail(const json_t *doc, enum cli_rp_table_kind kind, FILE *out)
{
	struct cli_rp_table t;
	if (cli_rp_table_build(doc, kind, &t) != 0 || t.n_rows == 0) {
		cli_rp_table_free(&t);
		return;
	}
	fprintf(out, "## %s\n\n", t.title);
	if (t.note) {
		cli_rp_put_md(out, t.note);
		fputs("\n\n", out);
	}
	row(out, t.col, t.n_cols);
	rule(out, t.numeric, t.n_cols);
	for (size_t i = 0; i < t.n_rows; i++) {
		const char *cells[RP_TBL_COLS];
		for (size_t c = 0; c < t.n_cols; c++)
			cells[c] = t.cell[i][c];
		row(out, cells, t.n_cols);
	}
	fputc('\n', out);
	cli_rp_table_free(&t);
}

static void verdict(const json_t *doc, FILE *out)
{
	fputs("## Verdict\n\n", out);
	const json_t *checks = cl_results_get(doc, "verdict.checks");
	if (json_array_size(checks) == 0) {
		fputs("No SLOs set.\n\n", out);
		return;
	}
	fprintf(out, "**%s**: %zu of %zu checks breached.\n\n", cli_rp_verdict_word(doc),
		json_array_size(cl_results_get(doc, "verdict.breaches")), json_array_size(checks));
	static const char *const h[] = { "SLO", "stage", "limit", "measured", "result", "note" };
	static const bool num[] = { false, false, true, true, false, false };
	row(out, h, 6);
	rule(out, num, 6);
	/* Breaches first: they are what a reader came for. */
	for (int want_pass = 0; want_pass < 2; want_pass++) {
		size_t i;
		const json_t *c;
		json_array_foreach(checks, i, c)
		{
			char lim[64], meas[64], name[160];
			const char *unit = cl_results_str(c, "unit", "");
			if (json_is_true(json_object_get(c, "pass")) != (bool)want_pass)
				continue;
			const char *cells[6] = {
				cli_rp_check_name(c, name, sizeof(name)),
				cl_results_str(c, "stage", "-"),
				cli_rp_fmt_slo_value(lim, sizeof(lim), cl_results_num(c, "limit"),
						     unit),
				cli_rp_fmt_slo_value(meas, sizeof(meas),
						     cl_results_num(c, "measured"), unit),
				json_is_true(json_object_get(c, "pass")) ? "pass" : "BREACH",
				cl_results_str(c, "note", ""),
			};
			row(out, cells, 6);
		}
	}
	fputc('\n', out);
}

static void capacity(const json_t *doc, FILE *out)
{
	const json_t *cap = json_object_get(doc, "capacity");
	if (!json_is_object(cap))
		return;
	fputs("## Capacity\n\n", out);
	fprintf(out, "%s\n\n", cl_results_str(cap, "summary", "-"));
	const char *plan = cl_results_str(cap, "plan.summary", NULL);
	if (plan)
		fprintf(out, "%s\n\n", plan);
	const char *advice = cl_results_str(cap, "advice", NULL);
	if (advice)
		fprintf(out, "Advice: %s\n\n", advice);
	row(out, cli_rp_probe_cols, RP_PROBE_COLS);
	rule(out, cli_rp_probe_numeric, RP_PROBE_COLS);
	size_t i;
	const json_t *p;
	json_array_foreach(json_object_get(cap, "probes"), i, p)
	{
		char cell[RP_PROBE_COLS][RP_CELL_MAX];
		const char *cells[RP_PROBE_COLS];
		cli_rp_probe_row(p, cell);
		for (size_t k = 0; k < RP_PROBE_COLS; k++)
			cells[k] = cell[k];
		row(out, cells, RP_PROBE_COLS);
	}
	fputc('\n', out);
}

struct note_out {
	FILE *out;
	size_t *n;
};

static void md_note(void *arg, const char *line)
{
	struct note_out *no = arg;
	fputs("- ", no->out);
	cli_rp_put_md(no->out, line);
	fputc('\n', no->out);
	(*no->n)++;
}

/* What the server's own /metrics said, per stage (docs/results.md, stages[].server). */
static void server(const json_t *doc, FILE *out)
{
	size_t i;
	const json_t *st;
	bool any = false;
	json_array_foreach(json_object_get(doc, "stages"), i, st)
	{
		char cell[RP_SERVER_COLS][RP_CELL_MAX];
		const char *cells[RP_SERVER_COLS];
		if (!cli_rp_server_row(st, cell))
			continue;
		if (!any) {
			fputs("## Server\n\n", out);
			row(out, cli_rp_server_cols, RP_SERVER_COLS);
			rule(out, cli_rp_server_numeric, RP_SERVER_COLS);
			any = true;
		}
		for (size_t k = 0; k < RP_SERVER_COLS; k++)
			cells[k] = cell[k];
		row(out, cells, RP_SERVER_COLS);
	}
	if (any) {
		fputc('\n', out);
		size_t n = 0;
		struct note_out no = { out, &n };
		cli_rp_server_notes(doc, md_note, &no);
		if (n)
			fputc('\n', out);
	}
}

static void estimates(const json_t *doc, FILE *out)
{
	const json_t *est = json_object_get(doc, "estimates");
	if (json_array_size(est) == 0)
		return;
	fputs("## Estimates\n\n", out);
	/* With the scenario's cost: one more column, what those hours cost. */
	size_t nc = isfinite(cl_results_num(json_array_get(est, 0), "cost")) ? 8 : 7;
	static const char *const h[] = { "samples", "from stage",
					 "req/s",   "output tokens/request",
					 "hours",   "output tokens",
					 "note",    "cost" };
	static const bool num[] = { true, false, true, true, true, true, false, true };
	row(out, h, nc);
	rule(out, num, nc);
	size_t i;
	const json_t *e;
	json_array_foreach(est, i, e)
	{
		char a[32], b[32], c[32], d[32], t[32], m[32];
		const char *cells[8] = {
			cli_rp_fmt_count(a, sizeof(a), cl_results_num(e, "samples")),
			cl_results_str(e, "from_stage", "-"),
			cli_rp_fmt_rate(b, sizeof(b), cl_results_num(e, "requests_per_s")),
			cli_rp_fmt(c, sizeof(c), cl_results_num(e, "output_tokens_per_request"), 1),
			cli_rp_fmt(d, sizeof(d), cl_results_num(e, "hours"), 2),
			cli_rp_fmt_big(t, sizeof(t), cl_results_num(e, "output_tokens")),
			cl_results_str(e, "note", ""),
			cli_rp_fmt(m, sizeof(m), cl_results_num(e, "cost"), 2),
		};
		row(out, cells, nc);
	}
	fputc('\n', out);
}

static void readiness(const json_t *doc, FILE *out)
{
	const json_t *r = json_object_get(doc, "readiness");
	fputs("## Readiness\n\n", out);
	if (!json_is_object(r)) {
		fputs("The readiness gate did not run.\n\n", out);
		return;
	}
	char a[32], b[32], c[32], d[32], e[32];
	const char *h[2] = { "gate", "value" };
	row(out, h, 2);
	rule(out, NULL, 2);
	kv(out, "status", cl_results_str(r, "status", "-"));
	kv(out, "connect ok at (s)",
	   cli_rp_fmt(a, sizeof(a), cl_results_num(r, "phases.connect_s"), 3));
	kv(out, "models ok at (s)",
	   cli_rp_fmt(b, sizeof(b), cl_results_num(r, "phases.models_s"), 3));
	kv(out, "generation ok at (s)",
	   cli_rp_fmt(c, sizeof(c), cl_results_num(r, "phases.generation_s"), 3));
	kv(out, "attempts", cli_rp_fmt_count(d, sizeof(d), cl_results_num(r, "attempts")));
	kv(out, "model", cl_results_str(r, "model", "-"));
	kv(out, "probe TTFT (ms)", cli_rp_fmt_ms(e, sizeof(e), cl_results_num(r, "probe_ttft_ms")));
	kv(out, "last error", cl_results_str(r, "last_error", "-"));
	fputc('\n', out);
}

static void warmup_agents(const json_t *doc, FILE *out)
{
	const json_t *w = json_object_get(doc, "warmup");
	if (json_is_object(w)) {
		char a[32], b[32], c[32];
		fputs("## Warmup\n\n", out);
		static const char *const h[] = { "requests", "completed", "errors" };
		static const bool num[] = { true, true, true };
		const char *cells[3] = {
			cli_rp_fmt_count(a, sizeof(a), cl_results_num(w, "requests")),
			cli_rp_fmt_count(b, sizeof(b), cl_results_num(w, "completed")),
			cli_rp_fmt_count(c, sizeof(c), cl_results_num(w, "errors"))
		};
		row(out, h, 3);
		rule(out, num, 3);
		row(out, cells, 3);
		fputs("\nWarmup requests are excluded from every stage.\n\n", out);
	}
	const json_t *agents = json_object_get(doc, "agents");
	if (json_array_size(agents) == 0)
		return;
	fputs("## Agents\n\n", out);
	static const char *const h[] = {
		"id", "host", "workers", "clock offset (us)", "start skew (us)", "lost"
	};
	static const bool num[] = { true, false, true, true, true, false };
	row(out, h, 6);
	rule(out, num, 6);
	size_t i;
	const json_t *a;
	json_array_foreach(agents, i, a)
	{
		char id[32], wk[32], off[32], skew[32];
		const char *cells[6] = {
			cli_rp_fmt_count(id, sizeof(id), cl_results_num(a, "id")),
			cl_results_str(a, "host", "-"),
			cli_rp_fmt_count(wk, sizeof(wk), cl_results_num(a, "workers")),
			cli_rp_fmt_count(off, sizeof(off), cl_results_num(a, "clock_offset_us")),
			cli_rp_fmt_count(skew, sizeof(skew), cl_results_num(a, "start_skew_us")),
			json_is_true(json_object_get(a, "lost")) ? "LOST" : "no",
		};
		row(out, cells, 6);
	}
	fputc('\n', out);
}

static void warnings_errors(const json_t *doc, FILE *out)
{
	const json_t *warnings = json_object_get(doc, "warnings");
	size_t i;
	const json_t *w;
	if (json_array_size(warnings)) {
		fputs("## Warnings\n\n", out);
		json_array_foreach(warnings, i, w)
		{
			fputs("- ", out);
			cli_rp_put_md(out, json_string_value(w));
			fputc('\n', out);
		}
		fputc('\n', out);
	}
	bool header = false;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		size_t k;
		const json_t *e;
		json_array_foreach(cl_results_get(s, "requests.error_samples"), k, e)
		{
			static const char *const h[] = { "stage", "class", "HTTP status", "body" };
			static const bool num[] = { false, false, true, false };
			if (!header) {
				fputs("## Error samples\n\n", out);
				row(out, h, 4);
				rule(out, num, 4);
				header = true;
			}
			char st[16];
			const char *cells[4] = {
				cl_results_str(s, "name", "-"), cl_results_str(e, "class", "-"),
				cli_rp_fmt_count(st, sizeof(st), cl_results_num(e, "http_status")),
				cl_results_str(e, "body", "")
			};
			row(out, cells, 4);
		}
	}
	if (header)
		fputc('\n', out);
}

static void md_item(void *arg, const char *line)
{
	FILE *out = arg;
	fputs("- ", out);
	cli_rp_put_md(out, line);
	fputc('\n', out);
}

/* workload.images: each stage's prompt tokens with images against the text alone. */
static void images(const json_t *doc, FILE *out)
{
	const json_t *stages = json_object_get(doc, "stages");
	if (!cli_rp_images_lines(stages, NULL, NULL))
		return;
	fputs("## Images\n\n", out);
	cli_rp_images_lines(stages, md_item, out);
	fputc('\n', out);
}

int cl_report_md(const json_t *doc, FILE *out)
{
	summary(doc, out);
	stages(doc, out);
	images(doc, out);
	verdict(doc, out);
	capacity(doc, out);
	server(doc, out);
	for (int k = 0; k < RP__TBL; k++)
		detail(doc, (enum cli_rp_table_kind)k, out);
	estimates(doc, out);
	readiness(doc, out);
	warmup_agents(doc, out);
	warnings_errors(doc, out);
	const char *dir = cl_results_str(doc, "output_dir", NULL);
	if (dir) {
		/* A code span cannot hold a backtick; the directory almost never has one. */
		static const char *const files[] = { "results.json", "report.html" };
		for (size_t f = 0; f < 2; f++) {
			fputs(f ? "Report: `" : "Results: `", out);
			for (const char *p = dir; *p; p++)
				fputc(*p == '`' || *p == '\n' ? '\'' : *p, out);
			fprintf(out, "/%s`%s\n", files[f], f ? "" : "  ");
		}
	}
	return ferror(out) ? CL_EIO : 0;
}
