/* report.html's charts: throughput and latency against load, the trade-off (latency against
 * throughput across a sweep, SLO lines drawn), distributions from the stored histograms, and
 * one timeline across every stage.  Failed, degraded, interrupted and client-bound stages are
 * marked, never drawn as normal points. */
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"
#include "coordinator/results/json_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLUE   "#2563eb"
#define RED    "#dc2626"
#define GREEN  "#16a34a"
#define PURPLE "#7c3aed"
#define ORANGE "#ea580c"
#define GREY   "#6b7280"

#define MAX_SLO_LINES 8
#define MAX_DIST      8 /* stages drawn in one distribution chart */

static const char *const palette[MAX_DIST] = { "#2563eb", "#16a34a", "#ea580c", "#7c3aed",
					       "#0891b2", "#ca8a04", "#db2777", "#4b5563" };

/* Full initialisers (the structs grow optional fields). */
static struct cli_rp_series ser(const char *name, const char *color, const double *x,
				const double *y, size_t n, bool dashed, const char *const *mark,
				const char *const *point_name)
{
	return (struct cli_rp_series){ .name = name,
				       .color = color,
				       .x = x,
				       .y = y,
				       .n = n,
				       .dashed = dashed,
				       .mark = mark,
				       .point_name = point_name };
}

static struct cli_rp_chart chart(const char *title, const char *xl, const char *yl, const char *pl,
				 const struct cli_rp_series *se, size_t n, int w, int h,
				 bool integer_y)
{
	return (struct cli_rp_chart){ .title = title,
				      .x_label = xl,
				      .y_label = yl,
				      .point_label = pl,
				      .series = se,
				      .n_series = n,
				      .width = w,
				      .height = h,
				      .integer_y = integer_y };
}

/* Why a stage is not a normal point ("failed", "client-bound"), or NULL. */
static const char *mark_of(const json_t *s)
{
	if (!cli_rp_stage_marked(s))
		return NULL;
	const char *status = cl_results_str(s, "status", "ok");
	return strcmp(status, "ok") != 0 ? status : "client-bound";
}

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
		lc->mark[j] = mark_of(s);
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
		out[*n] =
		    ser(label[*n], g ? probe_color : color, lc->col[xk] + off, lc->col[k] + off,
			cnt, dashed, lc->mark + off, names ? lc->name + off : NULL);
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
	load_series(lc, V_OTPS, V_T50, "TTFT p50", BLUE, ORANGE, false, true, l1, t1, &n1);
	load_series(lc, V_OTPS, V_T99, "TTFT p99", RED, PURPLE, true, true, l1, t1, &n1);
	load_series(lc, V_OTPS, V_I50, "ITL p50", BLUE, ORANGE, false, true, l2, t2, &n2);
	load_series(lc, V_OTPS, V_I99, "ITL p99", RED, PURPLE, true, true, l2, t2, &n2);
	struct cli_rp_chart tc[] = {
		chart("TTFT against throughput", "output tokens/s", "TTFT (ms)", "", t1, n1, 540,
		      320, false),
		chart("ITL against throughput", "output tokens/s", "ITL (ms)", "", t2, n2, 540, 320,
		      false),
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
	load_series(&lc, V_X, V_OTPS, "output tokens/s", BLUE, ORANGE, false, false, l1, s1, &n1);
	load_series(&lc, V_X, V_RPS, "completed requests/s", GREEN, ORANGE, false, false, l2, s2,
		    &n2);
	load_series(&lc, V_X, V_T50, "TTFT p50", BLUE, ORANGE, false, false, l3, s3, &n3);
	load_series(&lc, V_X, V_T99, "TTFT p99", RED, PURPLE, true, false, l3, s3, &n3);
	load_series(&lc, V_X, V_I50, "ITL p50", BLUE, ORANGE, false, false, l4, s4, &n4);
	load_series(&lc, V_X, V_I99, "ITL p99", RED, PURPLE, true, false, l4, s4, &n4);
	struct cli_rp_chart charts[] = {
		chart("Output throughput", xl, "output tokens/s", pl, s1, n1, 540, 300, false),
		chart("Request throughput", xl, "completed requests/s", pl, s2, n2, 540, 300,
		      false),
		chart("Time to first token", xl, "TTFT (ms)", pl, s3, n3, 540, 300, false),
		chart("Inter-token latency", xl, "ITL (ms)", pl, s4, n4, 540, 300, false),
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

/* One chart of cumulative distributions, one line per stage, from the stored histograms
 * `group.key` (values divided by `div`); requested_key adds each stage's requested
 * distribution dashed.  Nothing when no stage has the histogram. */
static void cdf_chart(const json_t *stages, const char *group, const char *key, double div,
		      const char *title, const char *xl, const char *requested_key, FILE *out)
{
	struct cli_rp_series se[2 * MAX_DIST];
	char names[2 * MAX_DIST][RP_CELL_MAX];
	double *buf[2 * MAX_DIST] = { 0 };
	size_t ns = 0, i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		for (int req = 0; req < (requested_key ? 2 : 1) && ns < 2 * MAX_DIST; req++) {
			const json_t *h =
			    cl_results_get(cl_results_get(json_object_get(s, "histograms"), group),
					   req ? requested_key : key);
			const json_t *b = json_object_get(h, "buckets");
			double total = cl_results_num(h, "total");
			size_t nb = json_array_size(b);
			if (nb == 0 || !(total > 0) || i >= MAX_DIST)
				continue;
			double *xy = calloc(2 * (nb + 1), sizeof(*xy));
			if (!xy)
				continue;
			buf[ns] = xy;
			double *x = xy, *y = xy + nb + 1, seen = 0;
			size_t k = 0;
			/* Start at the smallest value so the curve rises from 0%. */
			x[k] = cl_results_num(h, "min") / div;
			y[k++] = 0;
			for (size_t j = 0; j < nb; j++) {
				const json_t *bk = json_array_get(b, j);
				seen += json_number_value(json_array_get(bk, 1));
				x[k] = fmin(json_number_value(json_array_get(bk, 0)),
					    cl_results_num(h, "max")) /
				       div;
				y[k++] = 100 * seen / total;
				/* The tail past p99.9 would squash the rest against the axis. */
				if (seen >= 0.999 * total)
					break;
			}
			const char *mk = mark_of(s);
			snprintf(names[ns], sizeof(names[0]), "%s%s%s%s%s", req ? "requested " : "",
				 cl_results_str(s, "name", "-"), mk ? " (" : "", mk ? mk : "",
				 mk ? ")" : "");
			se[ns] = ser(names[ns], palette[i % MAX_DIST], x, y, k, req || mk != NULL,
				     NULL, NULL);
			ns++;
		}
	}
	if (ns > 0) {
		struct cli_rp_chart c =
		    chart(title, xl, "requests at or below (%)", "", se, ns, 540, 300, false);
		c.y_percent = true;
		cli_rp_svg_chart(out, &c);
	}
	for (size_t k = 0; k < ns; k++)
		free(buf[k]);
}

void cli_rp_html_distributions(const json_t *doc, FILE *out)
{
	const json_t *stages = json_object_get(doc, "stages");
	if (json_array_size(stages) == 0)
		return;
	fputs("<section><h2>Distributions</h2>\n<p class=\"meta\">Cumulative: a point (x, y) "
	      "says y% of the stage's requests (of its chunks for ITL) took x or less; drawn "
	      "from the stored histograms up to p99.9. A steep line is a consistent server; "
	      "a long flat tail is the slow requests p99 summarises. Dashed: a marked stage "
	      "(or, for tokens, what was requested).</p><div class=\"charts\">\n",
	      out);
	static const struct {
		const char *key, *title, *xl;
	} lat[] = {
		{ "ttft", "Time to first token", "TTFT (ms)" },
		{ "ttfc", "Time to first content token", "TTFC (ms)" },
		{ "itl", "Inter-token latency", "ITL (ms)" },
		{ "tpot", "Time per output token", "TPOT (ms)" },
		{ "e2e", "End-to-end latency", "E2E (ms)" },
	};
	bool thinking = cli_rp_thinking(stages);
	bool emb = cli_rp_embeddings(stages); /* latency (e2e) and prompts only */
	for (size_t k = 0; k < sizeof(lat) / sizeof(lat[0]); k++)
		if ((k != 1 || thinking) && (!emb || k == 4))
			cdf_chart(stages, "lat", lat[k].key, 1000, lat[k].title, lat[k].xl, NULL,
				  out);
	if (!emb)
		cdf_chart(stages, "cnt", "output_tokens", 1, "Output tokens per request: received",
			  "tokens", "requested_tokens", out);
	cdf_chart(stages, "cnt", "prompt_tokens", 1, "Prompt tokens per request", "tokens", NULL,
		  out);
	fputs("</div></section>\n", out);
}

/* One timeline chart: `key` of every interval, stages laid end to end; marked stages are a
 * second, red series. */
static void timeline_chart(const json_t *stages, const double *x, size_t n, const char *key,
			   const char *title, const char *yl, const char *color, bool integer,
			   const double *vline, const char *const *vlabel, size_t nv, FILE *out)
{
	double *y = calloc(2 * (n ? n : 1), sizeof(*y));
	if (!y)
		return;
	double *ym = y + n;
	size_t k = 0, i;
	const json_t *s;
	bool any_mark = false;
	json_array_foreach(stages, i, s)
	{
		bool mk = mark_of(s) != NULL;
		any_mark |= mk;
		size_t j;
		const json_t *p;
		json_array_foreach(json_object_get(s, "intervals"), j, p)
		{
			double v = cl_results_num(p, key);
			y[k] = mk ? NAN : v;
			ym[k++] = mk ? v : NAN;
		}
		y[k] = ym[k] = NAN; /* the line breaks between stages */
		k++;
	}
	struct cli_rp_series se[] = { ser(yl, color, x, y, k, false, NULL, NULL),
				      ser("marked stage", RED, x, ym, k, true, NULL, NULL) };
	struct cli_rp_chart c = chart(title, "time since the first stage started (s)", yl, "t=", se,
				      any_mark ? 2 : 1, 540, 250, integer);
	c.vline = vline;
	c.vline_label = vlabel;
	c.n_vlines = nv;
	cli_rp_svg_chart(out, &c);
	free(y);
}

/* Errors per interval by class, one series per class seen (older files have only the
 * total: one series of it). */
static void errors_chart(const json_t *stages, const double *x, size_t n, const double *vline,
			 const char *const *vlabel, size_t nv, FILE *out)
{
	const char *classes[RP_TBL_COLS + 1];
	size_t nc = 0;
	for (size_t k = 0; k < cli_rj_n_err_keys && nc < RP_TBL_COLS; k++) {
		size_t i, j;
		const json_t *s, *p;
		bool seen = false;
		json_array_foreach(stages, i, s)
		{
			json_array_foreach(json_object_get(s, "intervals"), j, p)
			{
				seen |= cl_results_num(cl_results_get(p, "errors_by_class"),
						       cli_rj_err_keys[k]) > 0;
			}
		}
		if (seen)
			classes[nc++] = cli_rj_err_keys[k];
	}
	bool by_class = nc > 0;
	if (!by_class)
		classes[nc++] = "errors";
	double *y = calloc(nc * (n ? n : 1), sizeof(*y));
	struct cli_rp_series se[RP_TBL_COLS + 1];
	if (!y)
		return;
	for (size_t c = 0; c < nc; c++) {
		double *yc = y + c * n;
		size_t k = 0, i, j;
		const json_t *s, *p;
		json_array_foreach(stages, i, s)
		{
			json_array_foreach(json_object_get(s, "intervals"), j, p)
			{
				double v =
				    by_class ? cl_results_num(cl_results_get(p, "errors_by_class"),
							      classes[c])
					     : cl_results_num(p, "errors");
				/* A class absent from an interval that has the object: none. */
				if (by_class && !isfinite(v) &&
				    json_is_object(json_object_get(p, "errors_by_class")))
					v = 0;
				yc[k++] = v;
			}
			yc[k++] = NAN;
		}
		se[c] = ser(classes[c], by_class ? palette[(c + 2) % MAX_DIST] : ORANGE, x, yc, k,
			    false, NULL, NULL);
	}
	struct cli_rp_chart c =
	    chart(by_class ? "Errors by class" : "Errors", "time since the first stage started (s)",
		  "errors per interval", "t=", se, nc, 540, 250, true);
	c.vline = vline;
	c.vline_label = vlabel;
	c.n_vlines = nv;
	cli_rp_svg_chart(out, &c);
	free(y);
}

/* A row's agents: the largest `agents_total` of any interval (0: every row lists every
 * agent), so the per-agent charts know whether a row lists only the worst few. */
static double agents_listed_of(const json_t *stages)
{
	double most = 0;
	size_t i, j;
	const json_t *s, *p;
	json_array_foreach(stages, i, s)
	{
		json_array_foreach(json_object_get(s, "intervals"), j, p)
		{
			double t = cl_results_num(p, "agents_total");
			if (isfinite(t) && t > most)
				most = t;
		}
	}
	return most;
}

/* `key` of each agent's health in every interval (intervals[].agents[]), one series per
 * agent (the first MAX_DIST seen); when rows list only the worst agents of many
 * (`agents_total`), one series: the worst agent's figure in each interval.  Nothing for
 * files without per-agent rows. */
static void per_agent_chart(const json_t *stages, const double *x, size_t n, const char *key,
			    const char *title, const char *yl, const double *vline,
			    const char *const *vlabel, size_t nv, FILE *out)
{
	double ids[MAX_DIST];
	size_t na = 0, i, j, k;
	const json_t *s, *p, *a;
	double total = agents_listed_of(stages);
	json_array_foreach(stages, i, s)
	{
		json_array_foreach(json_object_get(s, "intervals"), j, p)
		{
			json_array_foreach(json_object_get(p, "agents"), k, a)
			{
				double id = cl_results_num(a, "agent");
				size_t at = 0;
				while (at < na && ids[at] != id)
					at++;
				if (at == na && na < MAX_DIST && isfinite(id))
					ids[na++] = id;
			}
		}
	}
	if (na == 0)
		return;
	if (total > 0)
		na = 1; /* the worst agent's series */
	double *y = calloc(na * (n ? n : 1), sizeof(*y));
	char names[MAX_DIST][32];
	struct cli_rp_series se[MAX_DIST];
	if (!y)
		return;
	for (size_t c = 0; c < na; c++) {
		double *yc = y + c * n;
		size_t m = 0;
		json_array_foreach(stages, i, s)
		{
			json_array_foreach(json_object_get(s, "intervals"), j, p)
			{
				double v = NAN;
				json_array_foreach(json_object_get(p, "agents"), k, a)
				{
					double av = cl_results_num(a, key);
					if (total > 0 ? isfinite(av) && !(av <= v)
						      : cl_results_num(a, "agent") == ids[c])
						v = av;
				}
				yc[m++] = v;
			}
			yc[m++] = NAN;
		}
		if (total > 0)
			snprintf(names[c], sizeof(names[c]), "worst of %.0f agents", total);
		else
			snprintf(names[c], sizeof(names[c]), "agent %.0f", ids[c]);
		se[c] = ser(names[c], palette[c], x, yc, m, false, NULL, NULL);
	}
	struct cli_rp_chart c = chart(title, "time since the first stage started (s)", yl, "t=", se,
				      na, 540, 250, false);
	c.vline = vline;
	c.vline_label = vlabel;
	c.n_vlines = nv;
	cli_rp_svg_chart(out, &c);
	free(y);
}

/* One of the server's signals from stages[].server.timeline on the timeline's axis: each
 * stage's scrapes at its offset, those outside [0, its last interval's end] left out (the
 * marks' scrapes before START_AT and in the drain), the line broken between stages.  Two
 * keys make two series (running and waiting).  scale: 100 for shares shown in %. */
struct srv_chart {
	const char *key[2], *name[2], *color[2];
	const char *title, *yl;
	double scale;
	bool integer, percent;
};

static void server_chart(const json_t *stages, const double *off, const double *end,
			 const struct srv_chart *sc, const double *vline, const char *const *vlabel,
			 size_t nv, FILE *out)
{
	size_t n = 0, i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		n += json_array_size(json_object_get(
			 json_object_get(json_object_get(s, "server"), "timeline"), "t_s")) +
		     1;
	}
	double *x = calloc(3 * (n ? n : 1), sizeof(*x));
	if (!x)
		return;
	double *y[2] = { x + n, x + 2 * n };
	size_t k = 0;
	bool any = false;
	json_array_foreach(stages, i, s)
	{
		const json_t *tl = json_object_get(json_object_get(s, "server"), "timeline");
		const json_t *t = json_object_get(tl, "t_s");
		for (size_t j = 0; j < json_array_size(t); j++) {
			double ts = json_number_value(json_array_get(t, j));
			if (ts < 0 || ts > end[i])
				continue;
			x[k] = off[i] + ts;
			for (int c = 0; c < 2 && sc->key[c]; c++) {
				const json_t *v =
				    json_array_get(json_object_get(tl, sc->key[c]), j);
				y[c][k] =
				    json_is_number(v) ? json_number_value(v) * sc->scale : NAN;
				any |= json_is_number(v);
			}
			k++;
		}
		x[k] = y[0][k] = y[1][k] = NAN;
		k++;
	}
	if (any) {
		struct cli_rp_series se[2];
		size_t ns = 0;
		for (int c = 0; c < 2 && sc->key[c]; c++)
			se[ns++] = ser(sc->name[c], sc->color[c], x, y[c], k, false, NULL, NULL);
		struct cli_rp_chart c = chart(sc->title, "time since the first stage started (s)",
					      sc->yl, "t=", se, ns, 540, 250, sc->integer);
		c.vline = vline;
		c.vline_label = vlabel;
		c.n_vlines = nv;
		c.y_percent = sc->percent;
		cli_rp_svg_chart(out, &c);
	}
	free(x);
}

/* The server's charts: stage starts and restarts ("server restart") as vertical lines. */
static void server_charts(const json_t *stages, const double *off, const double *end,
			  const double *vl, const char *const *vlabel, size_t ns, FILE *out)
{
	size_t nr = 0, i, j;
	const json_t *s, *v;
	json_array_foreach(stages, i, s)
	{
		nr += json_array_size(json_object_get(
		    json_object_get(json_object_get(s, "server"), "timeline"), "restarts_at_s"));
	}
	double *lines = calloc(ns + nr + 1, sizeof(*lines));
	const char **labels = calloc(ns + nr + 1, sizeof(*labels));
	if (!lines || !labels)
		goto out;
	memcpy(lines, vl, ns * sizeof(*lines));
	memcpy(labels, vlabel, ns * sizeof(*labels));
	size_t n = ns;
	json_array_foreach(stages, i, s)
	{
		json_array_foreach(
		    json_object_get(json_object_get(json_object_get(s, "server"), "timeline"),
				    "restarts_at_s"),
		    j, v)
		{
			double t = json_number_value(v);
			lines[n] = off[i] + (t < 0 ? 0 : t > end[i] ? end[i] : t);
			labels[n++] = "server restart";
		}
	}
	static const struct srv_chart ch[] = {
		{ { "running", "waiting" },
		  { "running", "waiting" },
		  { BLUE, ORANGE },
		  "Server: requests running and waiting",
		  "requests (the server's gauges)",
		  1,
		  true,
		  false },
		{ { "kv_cache_usage", NULL },
		  { "KV cache used", NULL },
		  { PURPLE, NULL },
		  "Server: KV-cache usage",
		  "KV cache used (%)",
		  100,
		  false,
		  true },
		{ { "prefix_cache_hit_rate", NULL },
		  { "prefix-cache hits", NULL },
		  { GREEN, NULL },
		  "Server: prefix-cache hit ratio",
		  "hits / queries (%)",
		  100,
		  false,
		  true },
		{ { "preemptions", NULL },
		  { "preemptions", NULL },
		  { RED, NULL },
		  "Server: preemptions",
		  "preemptions per scrape",
		  1,
		  true,
		  false },
	};
	for (size_t c = 0; c < sizeof(ch) / sizeof(ch[0]); c++)
		server_chart(stages, off, end, &ch[c], lines, labels, n, out);
out:
	free(lines);
	free(labels);
}

void cli_rp_html_timeline(const json_t *doc, FILE *out)
{
	const json_t *stages = json_object_get(doc, "stages");
	size_t ns = json_array_size(stages), n = 0, i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		n += json_array_size(json_object_get(s, "intervals")) + 1;
	}
	if (n == ns)
		return;
	double *x = calloc(n, sizeof(*x)), *vl = calloc(ns ? ns : 1, sizeof(*vl));
	double *send = calloc(ns ? ns : 1, sizeof(*send));
	const char **vlabel = calloc(ns ? ns : 1, sizeof(*vlabel));
	if (!x || !vl || !vlabel || !send)
		goto out;
	/* Stages end to end: each starts where the previous one's last interval ended (the
	 * pauses between stages, drain and start, are left out). */
	double offset = 0;
	size_t k = 0;
	bool strided = false;
	json_array_foreach(stages, i, s)
	{
		const json_t *iv = json_object_get(s, "intervals");
		vl[i] = offset;
		vlabel[i] = cl_results_str(s, "name", "-");
		strided |= cl_results_num(s, "intervals_stride") > 1;
		size_t j;
		const json_t *p;
		double end = 0;
		json_array_foreach(iv, j, p)
		{
			double t = cl_results_num(p, "t_s");
			x[k++] = offset + (isfinite(t) ? t : 0);
			end = isfinite(t) ? t : end;
		}
		x[k++] = NAN;
		send[i] = end;
		offset += end;
	}
	fputs("<section><h2>Timeline</h2>\n<p class=\"meta\">Every stage's intervals on one "
	      "time axis from t=0, stages end to end (the pauses between them are left out); "
	      "dashed grey lines are stage starts",
	      out);
	if (strided)
		fputs("; long stages show one interval in every stride (intervals.jsonl has them "
		      "all)",
		      out);
	fputs(". The server's charts (from its own /metrics, when it was scraped) sit under the "
	      "client's throughput and TTFT on the same axis, its restarts marked 'server "
	      "restart'",
	      out);
	fputs(". Red: a failed, degraded, interrupted or client-bound stage. Errors are per "
	      "interval and class; agent CPU is the busiest agent's (100 = one core); dispatch "
	      "and loop lag over 50 ms mean the client could not keep up.</p>"
	      "<div class=\"charts\">\n",
	      out);
	static const struct {
		const char *key, *title, *yl, *color;
		bool integer;
	} ch[] = {
		{ "output_tokens_per_s", "Output throughput", "output tokens/s", BLUE, false },
		{ "requests_per_s", "Request throughput", "completed requests/s", GREEN, false },
		{ "ttft_p99_ms", "TTFT p99", "TTFT p99 (ms)", PURPLE, false },
		{ "itl_p99_ms", "ITL p99", "ITL p99 (ms)", PURPLE, false },
		{ "active", "Active streams", "streams in flight", BLUE, true },
		{ "cpu_pct", "Agent CPU (client health)", "busiest agent CPU %", GREY, false },
		{ "dispatch_lag_p99_ms", "Dispatch lag p99 (client health)",
		  "dispatch lag p99 (ms)", GREY, false },
		{ "loop_lag_p99_ms", "Loop lag p99 (client health)", "event-loop lag p99 (ms)",
		  GREY, false },
	};
	bool emb = cli_rp_embeddings(stages); /* no output, TTFT or ITL to draw */
	for (size_t c = 0; c < sizeof(ch) / sizeof(ch[0]); c++) {
		if (c == 4) /* under the client's throughput and TTFT: what the server saw */
			server_charts(stages, vl, send, vl, vlabel, ns, out);
		if (emb && (c == 0 || c == 2 || c == 3))
			continue;
		if (c == 5) /* after the active streams */
			errors_chart(stages, x, n, vl, vlabel, ns, out);
		timeline_chart(stages, x, n, ch[c].key, ch[c].title, ch[c].yl, ch[c].color,
			       ch[c].integer, vl, vlabel, ns, out);
	}
	per_agent_chart(stages, x, n, "cpu_pct", "CPU per agent (client health)",
			"agent CPU % (100 = one core)", vl, vlabel, ns, out);
	per_agent_chart(stages, x, n, "loop_lag_p99_ms", "Loop lag p99 per agent (client health)",
			"event-loop lag p99 (ms)", vl, vlabel, ns, out);
	per_agent_chart(stages, x, n, "dispatch_lag_p99_ms",
			"Dispatch lag p99 per agent (client health)", "dispatch lag p99 (ms)", vl,
			vlabel, ns, out);
	fputs("</div></section>\n", out);
out:
	free(x);
	free(vl);
	free(send);
	free(vlabel);
}
