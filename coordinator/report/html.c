/* report.html: one self-contained XHTML-compatible page (inline CSS and SVG, no scripts, no
 * network) with the stage table, verdict, detail tables and charts; and the live page
 * (chatload run --web), the same with a small script that refreshes it. */
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"

#include "chatload/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    "white-space:nowrap}th{background:#f9fafb;font-weight:600;white-space:normal;"
    "vertical-align:bottom}td.n,th.n{text-align:right;"
    "font-variant-numeric:tabular-nums}\n"
    ".badge{display:inline-block;padding:3px 10px;border-radius:12px;font-weight:700;"
    "font-size:13px;margin-left:8px;vertical-align:middle}\n"
    ".pass{background:#dcfce7;color:#166534}.fail{background:#fee2e2;color:#991b1b}"
    ".none{background:#e5e7eb;color:#374151}\n"
    ".meta{color:#4b5563;font-size:13px;margin:4px 0}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}.charts svg{border:1px solid #e5e7eb;"
    "border-radius:6px}\n"
    ".warn li{color:#92400e}.scroll{overflow-x:auto}\n"
    "tr.marked td{background:#fef2f2;color:#991b1b}\n"
    "footer{color:#6b7280;font-size:12px;text-align:center;margin:20px}\n";

static void text(FILE *out, const char *s)
{
	cli_rp_put_xml(out, s ? s : "-");
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

static void header(const json_t *doc, bool live, FILE *out)
{
	const char *word = cli_rp_verdict_word(doc);
	const char *cls = strcmp(word, "PASS") == 0   ? "pass"
			  : strcmp(word, "FAIL") == 0 ? "fail"
						      : "none";
	bool complete = json_is_true(json_object_get(doc, "complete"));
	fputs("<h1>chatload results: ", out);
	text(out, cl_results_str(doc, "scenario.name", "-"));
	/* While the run goes on, the verdict covers the stages finished so far only. */
	fprintf(out, "<span class=\"badge %s\">%s%s</span>", cls, word,
		live && !complete && strcmp(cls, "none") != 0 ? " so far" : "");
	fprintf(out, "<span class=\"badge %s\">%s</span></h1>\n", complete ? "none" : "fail",
		complete ? "complete" : "incomplete");
	char exit_text[64], dur[32];
	fputs("<p class=\"meta\">started ", out);
	text(out, cl_results_str(doc, "started_at", "-"));
	fputs(" &#183; finished ", out);
	text(out, cl_results_str(doc, "finished_at", "-"));
	fprintf(out, " &#183; %s s &#183; exit code ",
		cli_rp_fmt(dur, sizeof(dur), cl_results_num(doc, "duration_s"), 1));
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

/* A running stage (the live page) has no totals yet: its row shows its latest interval,
 * and says so in its status, rather than dashes. */
static void running_row(const json_t *s, struct cli_rp_row *r)
{
	const json_t *iv = json_object_get(s, "intervals");
	size_t n = json_array_size(iv);
	if (strcmp(cl_results_str(s, "status", ""), "running") != 0 || n == 0)
		return;
	const json_t *last = json_array_get(iv, n - 1);
	static const struct {
		int col;
		const char *key;
	} ms[] = { { RP_TTFT50, "ttft_p50_ms" },
		   { RP_TTFT99, "ttft_p99_ms" },
		   { RP_ITL50, "itl_p50_ms" },
		   { RP_ITL99, "itl_p99_ms" } };
	for (size_t k = 0; k < sizeof(ms) / sizeof(ms[0]); k++)
		cli_rp_fmt_ms(r->cell[ms[k].col], RP_CELL_MAX, cl_results_num(last, ms[k].key));
	cli_rp_fmt_rate(r->cell[RP_RPS], RP_CELL_MAX, cl_results_num(last, "requests_per_s"));
	cli_rp_fmt_rate(r->cell[RP_OTPS], RP_CELL_MAX, cl_results_num(last, "output_tokens_per_s"));
	double errors = cl_results_num(last, "errors");
	if (isfinite(errors))
		snprintf(r->cell[RP_ERRORS], RP_CELL_MAX, "%.0f", errors);
	snprintf(r->cell[RP_STATUS], RP_CELL_MAX, "running (interval at %.0f s)",
		 cl_results_num(last, "t_s"));
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
		running_row(s, &r);
		fputs(cli_rp_stage_marked(s) ? "<tr class=\"marked\">" : "<tr>", out);
		for (size_t k = 0; k < nc; k++)
			td(out, r.cell[cols[k]], cli_rp_col_numeric[cols[k]]);
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div></section>\n", out);
}

/* One detail table (report/sections.c) as a section; rows of marked stages are tinted. */
static void detail(const json_t *doc, enum cli_rp_table_kind kind, FILE *out)
{
	struct cli_rp_table t;
	if (cli_rp_table_build(doc, kind, &t) != 0 || t.n_rows == 0) {
		cli_rp_table_free(&t);
		return;
	}
	fputs("<section><h2>", out);
	text(out, t.title);
	fputs("</h2>\n", out);
	if (t.note) {
		fputs("<p class=\"meta\">", out);
		text(out, t.note);
		fputs("</p>\n", out);
	}
	fputs("<div class=\"scroll\"><table><thead><tr>", out);
	for (size_t c = 0; c < t.n_cols; c++)
		th(out, t.col[c], t.numeric[c]);
	fputs("</tr></thead><tbody>\n", out);
	for (size_t i = 0; i < t.n_rows; i++) {
		fputs(t.marked[i] ? "<tr class=\"marked\">" : "<tr>", out);
		for (size_t c = 0; c < t.n_cols; c++)
			td(out, t.cell[i][c], t.numeric[c]);
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div></section>\n", out);
	cli_rp_table_free(&t);
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
			char lim[64], meas[64], name[160];
			const char *unit = cl_results_str(c, "unit", "");
			bool pass = json_is_true(json_object_get(c, "pass"));
			if (pass != (bool)want_pass)
				continue;
			fputs("<tr>", out);
			td(out, cli_rp_check_name(c, name, sizeof(name)), false);
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

struct note_out {
	FILE *out;
	bool *open;
};

static void html_note(void *arg, const char *line)
{
	struct note_out *no = arg;
	if (!*no->open)
		fputs("<ul class=\"server-notes\">\n", no->out);
	*no->open = true;
	fputs("<li>", no->out);
	text(no->out, line);
	fputs("</li>\n", no->out);
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
		if (!cli_rp_server_row(st, cell))
			continue;
		if (!any) {
			/* Headers wrap (the stylesheet's th) so its ten columns fit the card;
			 * the scroll is for a window narrower still. */
			fputs("<section><h2>Server</h2>\n<div class=\"scroll\"><table><thead><tr>",
			      out);
			for (size_t k = 0; k < RP_SERVER_COLS; k++)
				th(out, cli_rp_server_cols[k], cli_rp_server_numeric[k]);
			fputs("</tr></thead><tbody>\n", out);
			any = true;
		}
		fputs("<tr>", out);
		for (size_t k = 0; k < RP_SERVER_COLS; k++)
			td(out, cell[k], cli_rp_server_numeric[k]);
		fputs("</tr>\n", out);
	}
	if (any) {
		fputs("</tbody></table></div>\n", out);
		bool open = false;
		struct note_out no = { out, &open };
		cli_rp_server_notes(doc, html_note, &no);
		if (open)
			fputs("</ul>\n", out);
		if (json_object_get(doc, "server_metrics"))
			fputs(
			    "<p class=\"meta\">The server's signals over time are in the Timeline, "
			    "under the client's throughput and TTFT.</p>\n",
			    out);
		fputs("</section>\n", out);
	}
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
		td(out, cli_rp_fmt_count(a, sizeof(a), cl_results_num(e, "samples")), true);
		td(out, cl_results_str(e, "from_stage", "-"), false);
		td(out, cli_rp_fmt_rate(b, sizeof(b), cl_results_num(e, "requests_per_s")), true);
		td(out, cli_rp_fmt(c, sizeof(c), cl_results_num(e, "output_tokens_per_request"), 1),
		   true);
		td(out, cli_rp_fmt(d, sizeof(d), cl_results_num(e, "hours"), 2), true);
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
		       cli_rp_fmt(a, sizeof(a), cl_results_num(r, "phases.connect_s"), 3));
		kv_row(out, "models ok at (s)",
		       cli_rp_fmt(b, sizeof(b), cl_results_num(r, "phases.models_s"), 3));
		kv_row(out, "generation ok at (s)",
		       cli_rp_fmt(c, sizeof(c), cl_results_num(r, "phases.generation_s"), 3));
		kv_row(out, "attempts",
		       cli_rp_fmt_count(d, sizeof(d), cl_results_num(r, "attempts")));
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
		       cli_rp_fmt_count(a, sizeof(a), cl_results_num(w, "requests")));
		kv_row(out, "completed",
		       cli_rp_fmt_count(b, sizeof(b), cl_results_num(w, "completed")));
		kv_row(out, "errors", cli_rp_fmt_count(c, sizeof(c), cl_results_num(w, "errors")));
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
			td(out, cli_rp_fmt_count(id, sizeof(id), cl_results_num(a, "id")), true);
			td(out, cl_results_str(a, "host", "-"), false);
			td(out, cli_rp_fmt_count(wk, sizeof(wk), cl_results_num(a, "workers")),
			   true);
			td(out,
			   cli_rp_fmt_count(off, sizeof(off), cl_results_num(a, "clock_offset_us")),
			   true);
			td(out,
			   cli_rp_fmt_count(skew, sizeof(skew), cl_results_num(a, "start_skew_us")),
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

static void html_item(void *arg, const char *line)
{
	FILE *out = arg;
	fputs("<li>", out);
	text(out, line);
	fputs("</li>\n", out);
}

/* workload.images: each stage's prompt tokens with images against the text alone. */
static void images(const json_t *stages, FILE *out)
{
	if (!cli_rp_images_lines(stages, NULL, NULL))
		return;
	fputs("<section><h2>Images</h2><ul>\n", out);
	cli_rp_images_lines(stages, html_item, out);
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
			td(out, cli_rp_fmt_count(st, sizeof(st), cl_results_num(e, "http_status")),
			   true);
			fputs("<td><code>", out);
			text(out, cl_results_str(e, "body", ""));
			fputs("</code></td></tr>\n", out);
		}
	}
	if (header)
		fputs("</tbody></table></div></section>\n", out);
}

/* The live page's refresh: every 2 s it fetches the page again and swaps in the new <main>
 * (scroll position kept) and counts it in body's data-refreshes; when the run is over and
 * the server gone, the last state stays.  In CDATA so the page still parses as XML. */
static const char live_script[] =
    "<script>//<![CDATA[\n"
    "(function(){var busy=false,n=0;setInterval(function(){if(busy)return;busy=true;"
    "fetch(location.pathname,{cache:'no-store'}).then(function(r){if(!r.ok)throw r;"
    "return r.text();}).then(function(t){var d=new DOMParser().parseFromString(t,"
    "'text/html');var m=d.querySelector('main');if(m){document.querySelector('main')"
    ".replaceWith(m);document.body.setAttribute('data-refreshes',++n);}})"
    ".catch(function(){var s=document.getElementById('live');"
    "if(s)s.textContent='live: not answering (run over?)';}).then(function(){busy=false;"
    "});},2000);})();\n"
    "//]]></script>\n";

/* The live page's line of what the server says now (the latest scrape of its /metrics). */
static void server_now(const json_t *now, FILE *out)
{
	if (!json_is_object(now))
		return;
	char line[400], a[32], b[32], c[32], d[32];
	const char *src = cl_results_str(now, "source", NULL);
	if (!src) {
		fputs("<p class=\"meta\" id=\"server-now\">server now: its /metrics has not been "
		      "read yet</p>\n",
		      out);
		return;
	}
	double kv = cl_results_num(now, "kv_cache_usage"),
	       hit = cl_results_num(now, "prefix_cache_hit_rate");
	snprintf(line, sizeof(line),
		 "server now (%s%s): %s running, %s waiting, KV cache %s, prefix-cache hits %s, "
		 "%d restarts",
		 src, json_is_true(json_object_get(now, "up")) ? "" : ", last scrape failed",
		 cli_rp_fmt(a, sizeof(a), cl_results_num(now, "running"), 0),
		 cli_rp_fmt(b, sizeof(b), cl_results_num(now, "waiting"), 0),
		 isnan(kv) ? "-" : cli_rp_fmt_pct(c, sizeof(c), kv * 100),
		 isnan(hit) ? "-" : cli_rp_fmt_pct(d, sizeof(d), hit * 100),
		 (int)cl_results_num(now, "restarts"));
	fputs("<p class=\"meta\" id=\"server-now\">", out);
	text(out, line);
	fputs("</p>\n", out);
}

static int render(const json_t *doc, bool live, FILE *out)
{
	const json_t *stages = json_object_get(doc, "stages");
	fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
	      "<meta charset=\"utf-8\"/>\n"
	      "<meta name=\"viewport\" content=\"width=device-width, "
	      "initial-scale=1\"/>\n<title>chatload: ",
	      out);
	text(out, cl_results_str(doc, "scenario.name", "results"));
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", css);
	header(doc, live, out);
	if (live)
		fputs("<p class=\"meta\"><span id=\"live\" class=\"badge pass\">live</span> "
		      "refreshed every 2 s while the run goes on; a running stage shows its "
		      "intervals so far, its totals come when it ends.</p>\n",
		      out);
	if (live)
		server_now(json_object_get(doc, "server_now"), out);
	/* What decides a nightly job first, then the pictures, then the details. */
	stage_table(stages, out);
	images(stages, out);
	verdict(doc, out);
	capacity(doc, out);
	server(doc, out);
	warnings(doc, out);
	estimates(doc, out);
	for (int k = 0; k < RP__TBL; k++)
		detail(doc, (enum cli_rp_table_kind)k, out);
	cli_rp_html_load_charts(doc, false, out);
	cli_rp_html_load_charts(doc, true, out);
	cli_rp_html_distributions(doc, out);
	cli_rp_html_timeline(doc, out);
	error_samples(doc, out);
	run_details(doc, out);
	fputs("</main>\n<footer>generated by chatload ", out);
	text(out, cl_results_str(doc, "chatload_version", "-"));
	fputs(" from results.json (schema ", out);
	text(out, cl_results_str(doc, "schema", "-"));
	fputs(")</footer>\n", out);
	if (live)
		fputs(live_script, out);
	fputs("</body>\n</html>\n", out);
	return ferror(out) ? CL_EIO : 0;
}

int cl_report_html(const json_t *doc, FILE *out)
{
	return render(doc, false, out);
}

int cl_report_html_live(const json_t *doc, FILE *out)
{
	return render(doc, true, out);
}
