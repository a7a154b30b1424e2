/* chatload history's HTML page: the verdict, the events, and per stage one SVG chart per
 * headline figure (nights on the x axis, each night's ci95 as an error bar, the band the
 * history expected shaded, steps marked).  One file: inline CSS and SVG, no scripts. */
#include "coordinator/report/history.h"
#include "coordinator/report/history_int.h"
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
    "h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px}\n"
    "section{background:#fff;border-radius:8px;padding:4px 20px 16px;margin:16px 0;"
    "box-shadow:0 1px 2px rgba(0,0,0,.06)}\n"
    ".badge{display:inline-block;padding:3px 10px;border-radius:12px;font-weight:700;"
    "font-size:13px;margin-left:8px;vertical-align:middle}\n"
    ".pass{background:#dcfce7;color:#166534}.fail{background:#fee2e2;color:#991b1b}\n"
    ".meta{color:#4b5563;font-size:13px;margin:4px 0}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}.charts svg{border:1px solid #e5e7eb;"
    "border-radius:6px}\n"
    "pre{font-size:12px;overflow-x:auto}\n";

/* Writes text produced by fn, escaped, so the page never trusts a stage or night name. */
static void escaped(FILE *out, void (*fn)(const json_t *, FILE *, const char *), const json_t *hist,
		    const char *prefix)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem)
		return;
	fn(hist, mem, prefix);
	if (fclose(mem) == 0 && buf)
		cli_rp_put_xml(out, buf);
	free(buf);
}

static void verdict_text(const json_t *hist, FILE *out, const char *unused)
{
	(void)unused;
	cli_history_verdict(hist, out);
}

/* One figure's chart: the nights as a line with error bars, the expected level dashed,
 * the band shaded, a vertical line at each step. */
static void figure_chart(const json_t *fig, const char *stage, FILE *out)
{
	const json_t *pts = json_object_get(fig, "nights");
	size_t n = json_array_size(pts);
	double *x = calloc(n ? n : 1, sizeof(double)), *y = calloc(n ? n : 1, sizeof(double));
	double *err = calloc(n ? n : 1, sizeof(double)), *mid = calloc(n ? n : 1, sizeof(double));
	double *lo = calloc(n ? n : 1, sizeof(double)), *hi = calloc(n ? n : 1, sizeof(double));
	double *vline = calloc(n ? n : 1, sizeof(double));
	const char **names = calloc(n ? n : 1, sizeof(char *));
	const char **vlabel = calloc(n ? n : 1, sizeof(char *));
	const char **mark = calloc(n ? n : 1, sizeof(char *));
	char(*tip)[160] = calloc(n ? n : 1, sizeof(*tip));
	if (!x || !y || !err || !mid || !lo || !hi || !vline || !names || !vlabel || !mark || !tip)
		goto out;
	size_t nv = 0;
	for (size_t k = 0; k < n; k++) {
		const json_t *p = json_array_get(pts, k);
		const char *label = cl_results_str(p, "label", "n/a");
		const char *dir = cl_results_str(p, "direction", NULL);
		x[k] = (double)(k + 1);
		y[k] = cl_results_num(p, "value");
		err[k] = cl_results_num(p, "half");
		mid[k] = cl_results_num(p, "expected");
		lo[k] = cl_results_num(p, "low");
		hi[k] = cl_results_num(p, "high");
		if (dir)
			snprintf(tip[k], sizeof(tip[k]), "%s (%s, %s)",
				 cl_results_str(p, "night", "?"), label, dir);
		else
			snprintf(tip[k], sizeof(tip[k]), "%s (%s)", cl_results_str(p, "night", "?"),
				 label);
		names[k] = tip[k];
		/* A night shown but not judged (client-bound, no interval): a red cross, out of
		 * the line, its reason in the tooltip. */
		mark[k] = cl_results_str(p, "not_judged", NULL);
		if (strcmp(label, "step") == 0 || strcmp(label, "outlier") == 0) {
			vline[nv] = x[k];
			vlabel[nv++] = strcmp(label, "step") == 0 ? "step" : "outlier";
		}
	}
	/* The error rate is a share: drawn in %. */
	bool share = strcmp(cl_results_str(fig, "metric", ""), "error_rate") == 0;
	for (size_t k = 0; share && k < n; k++) {
		y[k] *= 100;
		err[k] *= 100;
		mid[k] *= 100;
		lo[k] *= 100;
		hi[k] *= 100;
	}
	struct cli_rp_series se[2] = {
		{ .name = "night (\xc2\xb1"
			  "ci95)",
		  .color = CLI_RP_BLUE,
		  .x = x,
		  .y = y,
		  .n = n,
		  .point_name = names,
		  .mark = mark,
		  .err = err },
		{ .name = "expected (band: normal range)",
		  .color = CLI_RP_GREY,
		  .x = x,
		  .y = mid,
		  .n = n,
		  .dashed = true,
		  .band_lo = lo,
		  .band_hi = hi },
	};
	char title[200], ylabel[64];
	snprintf(title, sizeof(title), "%s: %s", stage, cl_results_str(fig, "label", "?"));
	snprintf(ylabel, sizeof(ylabel), "%s",
		 share ? "error rate (%)" : cl_results_str(fig, "label", ""));
	struct cli_rp_chart c = { .title = title,
				  .x_label = "night (1 = oldest shown)",
				  .y_label = ylabel,
				  .point_label = "night ",
				  .series = se,
				  .n_series = 2,
				  .width = 380,
				  .height = 260,
				  .vline = vline,
				  .vline_label = vlabel,
				  .n_vlines = nv };
	fprintf(out, "<div class=\"chart\" data-stage=\"");
	cli_rp_put_xml(out, stage);
	fprintf(out, "\" data-metric=\"");
	cli_rp_put_xml(out, cl_results_str(fig, "metric", ""));
	fputs("\">\n", out);
	cli_rp_svg_chart(out, &c);
	fputs("</div>\n", out);
out:
	free(x);
	free(y);
	free(err);
	free(mid);
	free(lo);
	free(hi);
	free(vline);
	free(names);
	free(vlabel);
	free(mark);
	free(tip);
}

int cl_history_html(const json_t *hist, FILE *out)
{
	size_t used;
	const char *first, *last;
	cli_history_span(hist, &used, &first, &last);
	bool fail = cl_results_num(hist, "regressions") > 0;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>chatload history</title>\n<style>\n",
	      out);
	fputs(css, out);
	fputs("</style>\n</head>\n<body>\n<main>\n<h1>chatload history", out);
	fprintf(out, "<span class=\"badge %s\">%s</span></h1>\n", fail ? "fail" : "pass",
		fail ? "STEP" : "NO STEP");
	fputs("<p class=\"meta\">", out);
	cli_rp_put_xml(out, cl_results_str(hist, "dir", "?"));
	fprintf(out, ": %zu night%s, ", used, used == 1 ? "" : "s");
	cli_rp_put_xml(out, first);
	fputs(" .. ", out);
	cli_rp_put_xml(out, last);
	fprintf(out, "; baseline: up to %.0f earlier nights; limit %g%% (error rate: %g pp)</p>\n",
		cl_results_num(hist, "window"), cl_results_num(hist, "max_regression") * 100,
		cl_results_num(hist, "max_error_increase") * 100);
	fputs("<section><h2>Verdict</h2>\n<pre>", out);
	escaped(out, verdict_text, hist, NULL);
	escaped(out, cli_history_events, hist, "");
	fputs("</pre>\n<p class=\"meta\">Each chart: the nights oldest to newest, each with its "
	      "95 % interval (ci95); the dashed line is the level the earlier nights expected "
	      "and the shaded band where a night stays normal.  A night outside the band that "
	      "the next night confirms is a step; one the next night leaves behind, an "
	      "outlier.</p>\n</section>\n",
	      out);
	size_t i, k;
	const json_t *s, *f;
	json_array_foreach(json_object_get(hist, "stages"), i, s)
	{
		const char *stage = cl_results_str(s, "stage", "?");
		fputs("<section class=\"stage\"><h2>Stage ", out);
		cli_rp_put_xml(out, stage);
		fputs("</h2>\n<div class=\"charts\">\n", out);
		json_array_foreach(json_object_get(s, "figures"), k, f)
		{
			figure_chart(f, stage, out);
		}
		fputs("</div>\n</section>\n", out);
	}
	fputs("</main>\n</body>\n</html>\n", out);
	return ferror(out) ? CL_EIO : 0;
}
