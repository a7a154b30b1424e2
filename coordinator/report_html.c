/* report.html: one self-contained XHTML-compatible page (inline CSS and SVG, no scripts, no
 * network) with the stage table, charts against load, per-stage timelines and the verdict. */
#include "report.h"
#include "results.h"
#include "results_internal.h"

#include "chatload/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLUE   "#2563eb"
#define RED    "#dc2626"
#define GREEN  "#16a34a"
#define PURPLE "#7c3aed"
#define ORANGE "#ea580c"

static const char css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#111827;"
    "margin:0;background:#f3f4f6}\n"
    "main{max-width:1200px;margin:0 auto;padding:24px}\n"
    "h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px}"
    "h3{font-size:15px;margin:18px 0 8px}\n"
    "section{background:#fff;border-radius:8px;padding:4px 20px 16px;margin:16px 0;"
    "box-shadow:0 1px 2px rgba(0,0,0,.06)}\n"
    "table{border-collapse:collapse;font-size:13px;margin:6px 0}"
    "th,td{padding:5px 10px;border-bottom:1px solid #e5e7eb;text-align:left;"
    "white-space:nowrap}th{background:#f9fafb;font-weight:600}td.n,th.n{text-align:right;"
    "font-variant-numeric:tabular-nums}\n"
    ".badge{display:inline-block;padding:3px 10px;border-radius:12px;font-weight:700;"
    "font-size:13px;margin-left:8px;vertical-align:middle}\n"
    ".pass{background:#dcfce7;color:#166534}.fail{background:#fee2e2;color:#991b1b}"
    ".none{background:#e5e7eb;color:#374151}\n"
    ".meta{color:#4b5563;font-size:13px;margin:4px 0}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}.charts svg{border:1px solid #e5e7eb;"
    "border-radius:6px}\n"
    ".warn li{color:#92400e}.scroll{overflow-x:auto}\n"
    "footer{color:#6b7280;font-size:12px;text-align:center;margin:20px}\n";

static void text(FILE *out, const char *s)
{
	cli_rj_put_xml(out, s ? s : "-");
}

static void th(FILE *out, const char *s, bool numeric)
{
	fputs(numeric ? "<th class=\"n\">" : "<th>", out);
	text(out, s);
	fputs("</th>", out);
}

static void td(FILE *out, const char *s, bool numeric)
{
	fputs(numeric ? "<td class=\"n\">" : "<td>", out);
	text(out, s && *s ? s : "-");
	fputs("</td>", out);
}

static void header(const json_t *doc, FILE *out)
{
	const char *word = cli_rp_verdict_word(doc);
	const char *cls = strcmp(word, "PASS") == 0   ? "pass"
			  : strcmp(word, "FAIL") == 0 ? "fail"
						      : "none";
	fputs("<h1>chatload results: ", out);
	text(out, cl_results_str(doc, "scenario.name", "-"));
	fprintf(out, "<span class=\"badge %s\">%s</span>", cls, word);
	bool complete = json_is_true(json_object_get(doc, "complete"));
	fprintf(out, "<span class=\"badge %s\">%s</span></h1>\n", complete ? "none" : "fail",
		complete ? "complete" : "incomplete");
	char exit_text[64], dur[32];
	fputs("<p class=\"meta\">started ", out);
	text(out, cl_results_str(doc, "started_at", "-"));
	fputs(" &#183; finished ", out);
	text(out, cl_results_str(doc, "finished_at", "-"));
	fprintf(out, " &#183; %s s &#183; exit code ",
		cli_rj_fmt(dur, sizeof(dur), cl_results_num(doc, "duration_s"), 1));
	text(out, cli_rp_exit_text(exit_text, sizeof(exit_text), doc));
	fputs("</p>\n<p class=\"meta\">scenario ", out);
	text(out, cl_results_str(doc, "scenario.file", "-"));
	fputs(" &#183; sha256 ", out);
	text(out, cl_results_str(doc, "scenario.sha256", "-"));
	fputs(" &#183; target ", out);
	const char *url = cl_results_str(doc, "scenario.target.url", NULL);
	text(out, url ? url
		  : json_is_true(cl_results_get(doc, "scenario.target.simulator"))
		      ? "built-in simulator"
		      : "-");
	fputs(" &#183; model ", out);
	/* The model named in the scenario, else the one the readiness gate found. */
	text(out, cl_results_str(doc, "scenario.target.model",
				 cl_results_str(doc, "readiness.model", "-")));
	fputs("</p>\n", out);
}

static void stage_table(const json_t *stages, FILE *out)
{
	fputs("<section><h2>Stages</h2>\n", out);
	if (json_array_size(stages) == 0) {
		fputs("<p>No stage finished.</p></section>\n", out);
		return;
	}
	int cols[RP__COLS];
	size_t nc = cli_rp_columns(stages, cols);
	fputs("<div class=\"scroll\"><table><thead><tr>", out);
	for (size_t k = 0; k < nc; k++)
		th(out, cli_rp_col_names[cols[k]], cli_rp_col_numeric[cols[k]]);
	fputs("</tr></thead><tbody>\n", out);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		struct cli_rp_row r;
		cli_rp_stage_row(s, &r);
		fputs("<tr>", out);
		for (size_t k = 0; k < nc; k++)
			td(out, r.cell[cols[k]], cli_rp_col_numeric[cols[k]]);
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div></section>\n", out);
}

/* Charts of one group of stages (same mode) against their load level. */
static void load_charts(const json_t *stages, bool rate_mode, FILE *out)
{
	size_t n = json_array_size(stages), m = 0;
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	double *v = calloc(7 * (n ? n : 1), sizeof(*v));
	if (!idx || !v)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(stages, i);
		bool is_rate = strcmp(cl_results_str(s, "mode", ""), "rate") == 0;
		double x = cl_results_num(s, is_rate ? "rate" : "concurrency");
		if (is_rate == rate_mode && isfinite(x))
			idx[m++] = i;
	}
	if (m == 0)
		goto out;
	/* Ascending load, so the lines read left to right (insertion sort: few stages). */
	double *x = v, *otps = v + n, *rps = v + 2 * n, *t50 = v + 3 * n, *t99 = v + 4 * n,
	       *i50 = v + 5 * n, *i99 = v + 6 * n;
	const char *xkey = rate_mode ? "rate" : "concurrency";
	for (size_t a = 1; a < m; a++) {
		size_t k = idx[a], b = a;
		double kx = cl_results_num(json_array_get(stages, k), xkey);
		while (b > 0 && cl_results_num(json_array_get(stages, idx[b - 1]), xkey) > kx) {
			idx[b] = idx[b - 1];
			b--;
		}
		idx[b] = k;
	}
	for (size_t j = 0; j < m; j++) {
		const json_t *s = json_array_get(stages, idx[j]);
		x[j] = cl_results_num(s, xkey);
		otps[j] = cl_results_num(s, "throughput.output_tokens_per_s");
		rps[j] = cl_results_num(s, "throughput.requests_per_s");
		t50[j] = cl_results_num(s, "latency_ms.ttft.p50");
		t99[j] = cl_results_num(s, "latency_ms.ttft.p99");
		i50[j] = cl_results_num(s, "latency_ms.itl.p50");
		i99[j] = cl_results_num(s, "latency_ms.itl.p99");
	}
	const char *xl = rate_mode ? "offered rate (requests/s)" : "concurrency (streams)";
	const char *pl = rate_mode ? "" : "c=";
	fprintf(out, "<section><h2>Throughput and latency vs %s</h2><div class=\"charts\">\n",
		rate_mode ? "offered rate" : "concurrency");
	struct cli_rp_series s1[] = { { "output tokens/s", BLUE, x, otps, m, false } };
	struct cli_rp_series s2[] = { { "completed requests/s", GREEN, x, rps, m, false } };
	struct cli_rp_series s3[] = { { "TTFT p50", BLUE, x, t50, m, false },
				      { "TTFT p99", RED, x, t99, m, true } };
	struct cli_rp_series s4[] = { { "ITL p50", BLUE, x, i50, m, false },
				      { "ITL p99", RED, x, i99, m, true } };
	struct cli_rp_chart charts[] = {
		{ "Output throughput", xl, "output tokens/s", pl, s1, 1, 540, 300, false },
		{ "Request throughput", xl, "completed requests/s", pl, s2, 1, 540, 300, false },
		{ "Time to first token", xl, "TTFT (ms)", pl, s3, 2, 540, 300, false },
		{ "Inter-token latency", xl, "ITL (ms)", pl, s4, 2, 540, 300, false },
	};
	for (size_t c = 0; c < sizeof(charts) / sizeof(charts[0]); c++)
		cli_rp_svg_chart(out, &charts[c]);
	fputs("</div></section>\n", out);
out:
	free(idx);
	free(v);
}

static void timelines(const json_t *stages, FILE *out)
{
	size_t i;
	const json_t *s;
	bool any = false;
	json_array_foreach(stages, i, s)
	{
		const json_t *iv = json_object_get(s, "intervals");
		size_t n = json_array_size(iv);
		if (n == 0)
			continue;
		double *v = calloc(6 * n, sizeof(*v));
		if (!v)
			continue;
		if (!any)
			fputs("<section><h2>Stage timelines</h2>\n", out);
		any = true;
		double *t = v, *otps = v + n, *t50 = v + 2 * n, *t99 = v + 3 * n, *act = v + 4 * n,
		       *err = v + 5 * n;
		for (size_t k = 0; k < n; k++) {
			const json_t *p = json_array_get(iv, k);
			t[k] = cl_results_num(p, "t_s");
			otps[k] = cl_results_num(p, "output_tokens_per_s");
			t50[k] = cl_results_num(p, "ttft_p50_ms");
			t99[k] = cl_results_num(p, "ttft_p99_ms");
			act[k] = cl_results_num(p, "active");
			err[k] = cl_results_num(p, "errors");
		}
		char load[64];
		fputs("<h3>Stage ", out);
		text(out, cl_results_str(s, "name", "-"));
		fputs(" (", out);
		text(out, cli_rj_stage_load(s, load, sizeof(load)));
		fputs(", ", out);
		text(out, cl_results_str(s, "status", "-"));
		double stride = cl_results_num(s, "intervals_stride");
		if (isfinite(stride) && stride > 1)
			fprintf(out, ", 1 interval in %.0f shown", stride);
		fputs(")</h3><div class=\"charts\">\n", out);
		const char *xl = "time since stage start (s)";
		struct cli_rp_series s1[] = { { "output tokens/s", BLUE, t, otps, n, false } };
		struct cli_rp_series s2[] = { { "TTFT p50", BLUE, t, t50, n, false },
					      { "TTFT p99", RED, t, t99, n, true } };
		struct cli_rp_series s3[] = { { "active streams", PURPLE, t, act, n, false } };
		struct cli_rp_series s4[] = { { "errors per interval", ORANGE, t, err, n, false } };
		struct cli_rp_chart charts[] = {
			{ "Throughput", xl, "output tokens/s", "t=", s1, 1, 540, 250, false },
			{ "Time to first token", xl, "TTFT (ms)", "t=", s2, 2, 540, 250, false },
			{ "Active streams", xl, "streams in flight", "t=", s3, 1, 540, 250, true },
			{ "Errors", xl, "errors per interval", "t=", s4, 1, 540, 250, true },
		};
		for (size_t c = 0; c < sizeof(charts) / sizeof(charts[0]); c++)
			cli_rp_svg_chart(out, &charts[c]);
		fputs("</div>\n", out);
		free(v);
	}
	if (any)
		fputs("</section>\n", out);
}

static void verdict(const json_t *doc, FILE *out)
{
	const json_t *checks = cl_results_get(doc, "verdict.checks");
	fputs("<section><h2>Verdict</h2>\n", out);
	if (json_array_size(checks) == 0) {
		fputs("<p>No SLOs set.</p></section>\n", out);
		return;
	}
	fprintf(out, "<p>%zu of %zu SLO checks breached.</p>\n",
		json_array_size(cl_results_get(doc, "verdict.breaches")), json_array_size(checks));
	fputs("<table><thead><tr>", out);
	th(out, "SLO", false);
	th(out, "stage", false);
	th(out, "limit", true);
	th(out, "measured", true);
	th(out, "result", false);
	th(out, "note", false);
	fputs("</tr></thead><tbody>\n", out);
	/* Breaches first: they are what a reader came for. */
	for (int want_pass = 0; want_pass < 2; want_pass++) {
		size_t i;
		const json_t *c;
		json_array_foreach(checks, i, c)
		{
			char lim[64], meas[64];
			const char *unit = cl_results_str(c, "unit", "");
			bool pass = json_is_true(json_object_get(c, "pass"));
			if (pass != (bool)want_pass)
				continue;
			fputs("<tr>", out);
			td(out, cl_results_str(c, "slo", "-"), false);
			td(out, cl_results_str(c, "stage", "-"), false);
			td(out,
			   cli_rp_fmt_slo_value(lim, sizeof(lim), cl_results_num(c, "limit"), unit),
			   true);
			td(out,
			   cli_rp_fmt_slo_value(meas, sizeof(meas), cl_results_num(c, "measured"),
						unit),
			   true);
			fprintf(out, "<td><span class=\"badge %s\">%s</span></td>",
				pass ? "pass" : "fail", pass ? "pass" : "BREACH");
			td(out, cl_results_str(c, "note", ""), false);
			fputs("</tr>\n", out);
		}
	}
	fputs("</tbody></table></section>\n", out);
}

static void capacity(const json_t *doc, FILE *out)
{
	const json_t *cap = json_object_get(doc, "capacity");
	if (!json_is_object(cap))
		return;
	fputs("<section><h2>Capacity</h2>\n<p>", out);
	text(out, cl_results_str(cap, "summary", "-"));
	fputs("</p>\n", out);
	static const char *const extra[] = { "plan.summary", "advice" };
	for (size_t k = 0; k < 2; k++) {
		const char *t = cl_results_str(cap, extra[k], NULL);
		if (!t)
			continue;
		fputs("<p>", out);
		text(out, t);
		fputs("</p>\n", out);
	}
	fputs("<table><thead><tr>", out);
	for (size_t k = 0; k < RP_PROBE_COLS; k++)
		th(out, cli_rp_probe_cols[k], cli_rp_probe_numeric[k]);
	fputs("</tr></thead><tbody>\n", out);
	size_t i;
	const json_t *p;
	json_array_foreach(json_object_get(cap, "probes"), i, p)
	{
		char cell[RP_PROBE_COLS][RP_CELL_MAX];
		cli_rp_probe_row(p, cell);
		fputs("<tr>", out);
		for (size_t k = 0; k < RP_PROBE_COLS; k++)
			td(out, cell[k], cli_rp_probe_numeric[k]);
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></section>\n", out);
}

static void estimates(const json_t *doc, FILE *out)
{
	const json_t *est = json_object_get(doc, "estimates");
	if (json_array_size(est) == 0)
		return;
	fputs("<section><h2>Estimates</h2><table><thead><tr>", out);
	th(out, "samples", true);
	th(out, "from stage", false);
	th(out, "req/s", true);
	th(out, "output tokens/request", true);
	th(out, "hours", true);
	th(out, "output tokens", true);
	th(out, "note", false);
	fputs("</tr></thead><tbody>\n", out);
	size_t i;
	const json_t *e;
	json_array_foreach(est, i, e)
	{
		char a[32], b[32], c[32], d[32], t[32];
		fputs("<tr>", out);
		td(out, cli_rj_fmt_count(a, sizeof(a), cl_results_num(e, "samples")), true);
		td(out, cl_results_str(e, "from_stage", "-"), false);
		td(out, cli_rp_fmt_rate(b, sizeof(b), cl_results_num(e, "requests_per_s")), true);
		td(out, cli_rj_fmt(c, sizeof(c), cl_results_num(e, "output_tokens_per_request"), 1),
		   true);
		td(out, cli_rj_fmt(d, sizeof(d), cl_results_num(e, "hours"), 2), true);
		td(out, cli_rp_fmt_big(t, sizeof(t), cl_results_num(e, "output_tokens")), true);
		td(out, cl_results_str(e, "note", ""), false);
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></section>\n", out);
}

static void kv_row(FILE *out, const char *k, const char *v)
{
	fputs("<tr>", out);
	th(out, k, false);
	td(out, v, false);
	fputs("</tr>\n", out);
}

static void run_details(const json_t *doc, FILE *out)
{
	fputs("<section><h2>Readiness, warmup and agents</h2>\n", out);
	const json_t *r = json_object_get(doc, "readiness");
	if (json_is_object(r)) {
		char a[32], b[32], c[32], d[32], e[32];
		fputs("<h3>Readiness gate</h3><table><tbody>\n", out);
		kv_row(out, "status", cl_results_str(r, "status", "-"));
		kv_row(out, "connect ok at (s)",
		       cli_rj_fmt(a, sizeof(a), cl_results_num(r, "phases.connect_s"), 3));
		kv_row(out, "models ok at (s)",
		       cli_rj_fmt(b, sizeof(b), cl_results_num(r, "phases.models_s"), 3));
		kv_row(out, "generation ok at (s)",
		       cli_rj_fmt(c, sizeof(c), cl_results_num(r, "phases.generation_s"), 3));
		kv_row(out, "attempts",
		       cli_rj_fmt_count(d, sizeof(d), cl_results_num(r, "attempts")));
		kv_row(out, "model", cl_results_str(r, "model", "-"));
		kv_row(out, "probe TTFT (ms)",
		       cli_rp_fmt_ms(e, sizeof(e), cl_results_num(r, "probe_ttft_ms")));
		kv_row(out, "last error", cl_results_str(r, "last_error", "-"));
		fputs("</tbody></table>\n", out);
	} else {
		fputs("<p>The readiness gate did not run.</p>\n", out);
	}
	const json_t *w = json_object_get(doc, "warmup");
	if (json_is_object(w)) {
		char a[32], b[32], c[32];
		fputs("<h3>Warmup (excluded from every stage)</h3><table><tbody>\n", out);
		kv_row(out, "requests",
		       cli_rj_fmt_count(a, sizeof(a), cl_results_num(w, "requests")));
		kv_row(out, "completed",
		       cli_rj_fmt_count(b, sizeof(b), cl_results_num(w, "completed")));
		kv_row(out, "errors", cli_rj_fmt_count(c, sizeof(c), cl_results_num(w, "errors")));
		fputs("</tbody></table>\n", out);
	}
	const json_t *agents = json_object_get(doc, "agents");
	if (json_array_size(agents)) {
		fputs("<h3>Agents</h3><table><thead><tr>", out);
		th(out, "id", true);
		th(out, "host", false);
		th(out, "workers", true);
		th(out, "clock offset (µs)", true);
		th(out, "start skew (µs)", true);
		th(out, "lost", false);
		fputs("</tr></thead><tbody>\n", out);
		size_t i;
		const json_t *a;
		json_array_foreach(agents, i, a)
		{
			char id[32], wk[32], off[32], skew[32];
			fputs("<tr>", out);
			td(out, cli_rj_fmt_count(id, sizeof(id), cl_results_num(a, "id")), true);
			td(out, cl_results_str(a, "host", "-"), false);
			td(out, cli_rj_fmt_count(wk, sizeof(wk), cl_results_num(a, "workers")),
			   true);
			td(out,
			   cli_rj_fmt_count(off, sizeof(off), cl_results_num(a, "clock_offset_us")),
			   true);
			td(out,
			   cli_rj_fmt_count(skew, sizeof(skew), cl_results_num(a, "start_skew_us")),
			   true);
			td(out, json_is_true(json_object_get(a, "lost")) ? "LOST" : "no", false);
			fputs("</tr>\n", out);
		}
		fputs("</tbody></table>\n", out);
	}
	fputs("</section>\n", out);
}

static void warnings(const json_t *doc, FILE *out)
{
	const json_t *arr = json_object_get(doc, "warnings");
	size_t i;
	const json_t *w;
	if (json_array_size(arr) == 0)
		return;
	fputs("<section><h2>Warnings</h2><ul class=\"warn\">\n", out);
	json_array_foreach(arr, i, w)
	{
		fputs("<li>", out);
		text(out, json_string_value(w));
		fputs("</li>\n", out);
	}
	fputs("</ul></section>\n", out);
}

static void error_samples(const json_t *doc, FILE *out)
{
	size_t i;
	bool header = false;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		size_t k;
		const json_t *e;
		json_array_foreach(cl_results_get(s, "requests.error_samples"), k, e)
		{
			if (!header) {
				fputs("<section><h2>Error samples</h2><div class=\"scroll\"><table>"
				      "<thead><tr>",
				      out);
				th(out, "stage", false);
				th(out, "class", false);
				th(out, "HTTP status", true);
				th(out, "body (truncated)", false);
				fputs("</tr></thead><tbody>\n", out);
				header = true;
			}
			char st[16];
			fputs("<tr>", out);
			td(out, cl_results_str(s, "name", "-"), false);
			td(out, cl_results_str(e, "class", "-"), false);
			td(out, cli_rj_fmt_count(st, sizeof(st), cl_results_num(e, "http_status")),
			   true);
			fputs("<td><code>", out);
			text(out, cl_results_str(e, "body", ""));
			fputs("</code></td></tr>\n", out);
		}
	}
	if (header)
		fputs("</tbody></table></div></section>\n", out);
}

int cl_report_html(const json_t *doc, FILE *out)
{
	const json_t *stages = json_object_get(doc, "stages");
	fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
	      "<meta charset=\"utf-8\"/>\n"
	      "<meta name=\"viewport\" content=\"width=device-width, "
	      "initial-scale=1\"/>\n<title>chatload: ",
	      out);
	text(out, cl_results_str(doc, "scenario.name", "results"));
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", css);
	header(doc, out);
	/* What decides a nightly job first, then the pictures, then the details. */
	stage_table(stages, out);
	verdict(doc, out);
	capacity(doc, out);
	warnings(doc, out);
	estimates(doc, out);
	load_charts(stages, false, out);
	load_charts(stages, true, out);
	timelines(stages, out);
	error_samples(doc, out);
	run_details(doc, out);
	fputs("</main>\n<footer>generated by chatload ", out);
	text(out, cl_results_str(doc, "chatload_version", "-"));
	fputs(" from results.json (schema ", out);
	text(out, cl_results_str(doc, "schema", "-"));
	fputs(")</footer>\n</body>\n</html>\n", out);
	return ferror(out) ? CL_EIO : 0;
}
