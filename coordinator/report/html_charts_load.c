/* report.html's charts against load: throughput and latency at each load level of one mode
 * (concurrency or rate; a capacity search's probes a line of their own, 95 % intervals as
 * error bars) and the trade-off, latency against throughput across a sweep, with the
 * scenario's SLOs drawn as lines.  Marked stages are crosses, never normal points. */
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"
#include "coordinator/results/json_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SLO_LINES 8

struct slo_lines {
	double v[MAX_SLO_LINES];
	const char *label[MAX_SLO_LINES];
	char text[MAX_SLO_LINES][64];
	size_t n;
};

/* The scenario's run-wide latency SLOs on metric (e.g. "ttft"), as lines to draw. */
static void slo_lines(const json_t *doc, const char *metric, struct slo_lines *l)
{
	size_t i, len = strlen(metric);
	const json_t *slo;
	l->n = 0;
	json_array_foreach(cl_results_get(doc, "scenario.slo"), i, slo)
	{
		const char *key = cl_results_str(slo, "key", "");
		double limit = cl_results_num(slo, "limit");
		if (strncmp(key, metric, len) != 0 || key[len] != '_' || !isfinite(limit) ||
		    strcmp(cl_results_str(slo, "unit", ""), "ms") != 0 || l->n == MAX_SLO_LINES)
			continue;
		const char *stage = cl_results_str(slo, "stage", NULL);
		snprintf(l->text[l->n], sizeof(l->text[0]), "SLO %s %s %.10g ms%s%s", key,
			 "\xe2\x89\xa4", limit, stage ? " on " : "", stage ? stage : "");
		l->label[l->n] = l->text[l->n];
		l->v[l->n++] = limit;
	}
}

static void chart_slo(struct cli_rp_chart *c, const struct slo_lines *l)
{
	c->hline = l->v;
	c->hline_label = l->label;
	c->n_hlines = l->n;
}

/* Stage indexes of one mode, in ascending load, into idx; returns how many. */
static size_t by_load(const json_t *stages, bool rate_mode, size_t *idx)
{
	const char *xkey = rate_mode ? "rate" : "concurrency";
	size_t m = 0;
	for (size_t i = 0; i < json_array_size(stages); i++) {
		const json_t *s = json_array_get(stages, i);
		bool is_rate = strcmp(cl_results_str(s, "mode", ""), "rate") == 0;
		if (is_rate == rate_mode && isfinite(cl_results_num(s, xkey)))
			idx[m++] = i;
	}
	/* Insertion sort: few stages. */
	for (size_t a = 1; a < m; a++) {
		size_t k = idx[a], b = a;
		double kx = cl_results_num(json_array_get(stages, k), xkey);
		while (b > 0 && cl_results_num(json_array_get(stages, idx[b - 1]), xkey) > kx) {
			idx[b] = idx[b - 1];
			b--;
		}
		idx[b] = k;
	}
	return m;
}

enum { V_X, V_OTPS, V_RPS, V_T50, V_T99, V_I50, V_I99, V__N };

/* What the marks and the error bars of the charts against load mean, said above them. */
static void load_charts_notes(bool any_mark, bool any_ci, bool probes, FILE *out)
{
	if (probes)
		fputs("<p class=\"meta\">A capacity search's probes are a series of their own "
		      "(orange and purple), never joined to the other stages' line: they ran at "
		      "other times, for as long as each needed.</p>\n",
		      out);
	if (any_mark)
		fputs("<p class=\"meta\">A red cross marks a failed, degraded, interrupted or "
		      "client-bound stage: its numbers are shown but not joined to the line.</p>\n",
		      out);
	if (any_ci)
		fputs("<p class=\"meta\">Bars are 95 % confidence intervals (stages[].ci95). "
		      "Within one run they are batch means over the stage's intervals: they see "
		      "the noise inside the run, not noise that changes more slowly than it (a "
		      "busy server host, a burst that lands in one run and not another). With "
		      "<code>repeat: N</code> they are the spread across the repeats, the "
		      "interval to judge a change by.</p>\n",
		      out);
}

/* One mode's stages against load, as columns: ordinary stages first, then a capacity
 * search's probes, each part in ascending load (so each is a line of its own). */
struct load_cols {
	size_t m, n_probes;   /* points; of them, the probes (the last n_probes) */
	double *col[V__N];    /* values per point */
	double *err[V__N];    /* 95 % half-widths (stages[].ci95; NaN: none) */
	const char **mark;    /* why a point is not a normal one, or NULL */
	const char **name;    /* stage names */
	char probe_label[96]; /* ", probes of 'cap'" */
	bool any_mark, any_ci;
	double *buf;
	size_t *idx;
};

static void load_cols_free(struct load_cols *lc)
{
	free(lc->buf);
	free(lc->idx);
	free(lc->mark);
	free(lc->name);
}

static bool is_probe(const json_t *s)
{
	return json_is_object(json_object_get(s, "probe"));
}

/* Fills lc from stages of one mode; false when there is none (or out of memory). */
static bool load_cols_read(const json_t *stages, bool rate_mode, struct load_cols *lc)
{
	size_t n = json_array_size(stages);
	memset(lc, 0, sizeof(*lc));
	lc->idx = calloc(2 * (n ? n : 1), sizeof(*lc->idx));
	lc->buf = calloc(2 * V__N * (n ? n : 1), sizeof(*lc->buf));
	lc->mark = calloc(n ? n : 1, sizeof(*lc->mark));
	lc->name = calloc(n ? n : 1, sizeof(*lc->name));
	size_t *sorted = lc->idx, *idx = lc->idx + (n ? n : 1);
	size_t m =
	    lc->idx && lc->buf && lc->mark && lc->name ? by_load(stages, rate_mode, sorted) : 0;
	/* A stable partition: the ordinary stages, then the probes, each in load order. */
	for (int probes = 0; probes < 2; probes++)
		for (size_t j = 0; j < m; j++)
			if (is_probe(json_array_get(stages, sorted[j])) == (probes == 1))
				idx[lc->m++] = sorted[j];
	static const char *const ci_keys[V__N] = {
		NULL,          "output_tokens_per_s", "requests_per_s", "ttft_p50_ms",
		"ttft_p99_ms", "itl_p50_ms",          "itl_p99_ms"
	};
	static const char *const keys[V__N] = { NULL,
						"throughput.output_tokens_per_s",
						"throughput.requests_per_s",
						"latency_ms.ttft.p50",
						"latency_ms.ttft.p99",
						"latency_ms.itl.p50",
						"latency_ms.itl.p99" };
	for (int k = 0; k < V__N && lc->buf; k++) {
		lc->col[k] = lc->buf + (size_t)k * n;
		lc->err[k] = lc->buf + (size_t)(V__N + k) * n;
	}
	for (size_t j = 0; j < lc->m; j++) {
		const json_t *s = json_array_get(stages, idx[j]);
		lc->col[V_X][j] = cl_results_num(s, rate_mode ? "rate" : "concurrency");
		const json_t *ci = json_object_get(s, "ci95");
		for (int k = 1; k < V__N; k++) {
			lc->col[k][j] = cl_results_num(s, keys[k]);
			lc->err[k][j] = cl_results_num(json_object_get(ci, ci_keys[k]), "half");
			lc->any_ci |= isfinite(lc->err[k][j]) != 0;
		}
		lc->mark[j] = cli_rp_stage_mark(s);
		lc->name[j] = cl_results_str(s, "name", "-");
		lc->any_mark |= lc->mark[j] != NULL;
		if (is_probe(s) && !lc->n_probes++)
			snprintf(lc->probe_label, sizeof(lc->probe_label), ", probes of '%.60s'",
				 cl_results_str(s, "probe.search", "?"));
	}
	return lc->m > 0;
}

/* The series of one quantity k: the ordinary stages' (name, colour) and the probes' (name +
 * the probes' label, their colour), each its own line; *n gets how many (0, 1 or 2). */
static void load_series(const struct load_cols *lc, int xk, int k, const char *name,
			const char *color, const char *probe_color, bool dashed, bool names,
			char label[][128], struct cli_rp_series *out, size_t *n)
{
	size_t parts[2][2] = { { 0, lc->m - lc->n_probes },
			       { lc->m - lc->n_probes, lc->n_probes } };
	for (int g = 0; g < 2; g++) {
		size_t off = parts[g][0], cnt = parts[g][1];
		if (!cnt)
			continue;
		snprintf(label[*n], 128, "%s%s", name, g ? lc->probe_label : "");
		out[*n] = cli_rp_series_of(label[*n], g ? probe_color : color, lc->col[xk] + off,
					   lc->col[k] + off, cnt, dashed, lc->mark + off,
					   names ? lc->name + off : NULL);
		out[*n].err = xk == V_X ? lc->err[k] + off : NULL;
		(*n)++;
	}
}

/* The trade-off: what each step of load bought in throughput and cost in latency, each
 * line's stages joined in load order. */
static void tradeoff_charts(const struct load_cols *lc, const struct slo_lines *ttft,
			    const struct slo_lines *itl, FILE *out)
{
	fputs("<h3>Trade-off: latency against throughput</h3>\n<p class=\"meta\">Each "
	      "point is a stage (hover for its name); the line joins them in order of "
	      "load. Where the line turns up, more load buys latency, not throughput. "
	      "Dashed red lines are the scenario's SLOs.</p><div class=\"charts\">\n",
	      out);
	struct cli_rp_series t1[4], t2[4];
	char l1[4][128], l2[4][128];
	size_t n1 = 0, n2 = 0;
	load_series(lc, V_OTPS, V_T50, "TTFT p50", CLI_RP_BLUE, CLI_RP_ORANGE, false, true, l1, t1,
		    &n1);
	load_series(lc, V_OTPS, V_T99, "TTFT p99", CLI_RP_RED, CLI_RP_PURPLE, true, true, l1, t1,
		    &n1);
	load_series(lc, V_OTPS, V_I50, "ITL p50", CLI_RP_BLUE, CLI_RP_ORANGE, false, true, l2, t2,
		    &n2);
	load_series(lc, V_OTPS, V_I99, "ITL p99", CLI_RP_RED, CLI_RP_PURPLE, true, true, l2, t2,
		    &n2);
	struct cli_rp_chart tc[] = {
		cli_rp_chart_of("TTFT against throughput", "output tokens/s", "TTFT (ms)", "", t1,
				n1, 540, 320, false),
		cli_rp_chart_of("ITL against throughput", "output tokens/s", "ITL (ms)", "", t2, n2,
				540, 320, false),
	};
	chart_slo(&tc[0], ttft);
	chart_slo(&tc[1], itl);
	for (size_t c = 0; c < 2; c++)
		cli_rp_svg_chart(out, &tc[c]);
	fputs("</div>\n", out);
}

void cli_rp_html_load_charts(const json_t *doc, bool rate_mode, FILE *out)
{
	const json_t *stages = json_object_get(doc, "stages");
	struct load_cols lc;
	if (!load_cols_read(stages, rate_mode, &lc))
		goto out;
	const char *xl = rate_mode ? "offered rate (requests/s)" : "concurrency (streams)";
	const char *pl = rate_mode ? "" : "c=";
	struct slo_lines ttft, itl;
	slo_lines(doc, "ttft", &ttft);
	slo_lines(doc, "itl", &itl);
	fprintf(out, "<section><h2>Throughput and latency vs %s</h2>\n",
		rate_mode ? "offered rate" : "concurrency");
	load_charts_notes(lc.any_mark, lc.any_ci, lc.n_probes > 0 && lc.n_probes < lc.m, out);
	fputs("<div class=\"charts\">\n", out);
	struct cli_rp_series s1[2], s2[2], s3[4], s4[4];
	char l1[2][128], l2[2][128], l3[4][128], l4[4][128];
	size_t n1 = 0, n2 = 0, n3 = 0, n4 = 0;
	load_series(&lc, V_X, V_OTPS, "output tokens/s", CLI_RP_BLUE, CLI_RP_ORANGE, false, false,
		    l1, s1, &n1);
	load_series(&lc, V_X, V_RPS, "completed requests/s", CLI_RP_GREEN, CLI_RP_ORANGE, false,
		    false, l2, s2, &n2);
	load_series(&lc, V_X, V_T50, "TTFT p50", CLI_RP_BLUE, CLI_RP_ORANGE, false, false, l3, s3,
		    &n3);
	load_series(&lc, V_X, V_T99, "TTFT p99", CLI_RP_RED, CLI_RP_PURPLE, true, false, l3, s3,
		    &n3);
	load_series(&lc, V_X, V_I50, "ITL p50", CLI_RP_BLUE, CLI_RP_ORANGE, false, false, l4, s4,
		    &n4);
	load_series(&lc, V_X, V_I99, "ITL p99", CLI_RP_RED, CLI_RP_PURPLE, true, false, l4, s4,
		    &n4);
	struct cli_rp_chart charts[] = {
		cli_rp_chart_of("Output throughput", xl, "output tokens/s", pl, s1, n1, 540, 300,
				false),
		cli_rp_chart_of("Request throughput", xl, "completed requests/s", pl, s2, n2, 540,
				300, false),
		cli_rp_chart_of("Time to first token", xl, "TTFT (ms)", pl, s3, n3, 540, 300,
				false),
		cli_rp_chart_of("Inter-token latency", xl, "ITL (ms)", pl, s4, n4, 540, 300, false),
	};
	chart_slo(&charts[2], &ttft);
	chart_slo(&charts[3], &itl);
	/* An embeddings run has requests and nothing token-shaped: only the request rate. */
	bool emb = cli_rp_embeddings(stages);
	for (size_t c = 0; c < sizeof(charts) / sizeof(charts[0]); c++)
		if (!emb || c == 1)
			cli_rp_svg_chart(out, &charts[c]);
	fputs("</div>\n", out);
	if (lc.m >= 2 && !emb)
		tradeoff_charts(&lc, &ttft, &itl, out);
	fputs("</section>\n", out);
out:
	load_cols_free(&lc);
}
