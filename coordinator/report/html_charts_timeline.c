/* report.html's timeline: every stage's intervals on one time axis (throughput, TTFT,
 * errors, streams, the client's health and each agent's share), and under them the server's
 * own signals (stages[].server.timeline) with its restarts marked. */
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"
#include "coordinator/results/json_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_AGENTS CLI_RP_PALETTE_N /* agents drawn in the per-agent charts, a colour each */

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
		bool mk = cli_rp_stage_mark(s) != NULL;
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
	struct cli_rp_series se[] = { cli_rp_series_of(yl, color, x, y, k, false, NULL, NULL),
				      cli_rp_series_of("marked stage", CLI_RP_RED, x, ym, k, true,
						       NULL, NULL) };
	struct cli_rp_chart c = cli_rp_chart_of(title, "time since the first stage started (s)", yl,
						"t=", se, any_mark ? 2 : 1, 540, 250, integer);
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
		se[c] = cli_rp_series_of(classes[c],
					 by_class ? cli_rp_palette[(c + 2) % CLI_RP_PALETTE_N]
						  : CLI_RP_ORANGE,
					 x, yc, k, false, NULL, NULL);
	}
	struct cli_rp_chart c = cli_rp_chart_of(
	    by_class ? "Errors by class" : "Errors", "time since the first stage started (s)",
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
 * agent (the first MAX_AGENTS seen); when rows list only the worst agents of many
 * (`agents_total`), one series: the worst agent's figure in each interval.  Nothing for
 * files without per-agent rows. */
static void per_agent_chart(const json_t *stages, const double *x, size_t n, const char *key,
			    const char *title, const char *yl, const double *vline,
			    const char *const *vlabel, size_t nv, FILE *out)
{
	double ids[MAX_AGENTS];
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
				if (at == na && na < MAX_AGENTS && isfinite(id))
					ids[na++] = id;
			}
		}
	}
	if (na == 0)
		return;
	if (total > 0)
		na = 1; /* the worst agent's series */
	double *y = calloc(na * (n ? n : 1), sizeof(*y));
	char names[MAX_AGENTS][32];
	struct cli_rp_series se[MAX_AGENTS];
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
		se[c] = cli_rp_series_of(names[c], cli_rp_palette[c], x, yc, m, false, NULL, NULL);
	}
	struct cli_rp_chart c = cli_rp_chart_of(title, "time since the first stage started (s)", yl,
						"t=", se, na, 540, 250, false);
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
			se[ns++] = cli_rp_series_of(sc->name[c], sc->color[c], x, y[c], k, false,
						    NULL, NULL);
		struct cli_rp_chart c =
		    cli_rp_chart_of(sc->title, "time since the first stage started (s)", sc->yl,
				    "t=", se, ns, 540, 250, sc->integer);
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
		  { CLI_RP_BLUE, CLI_RP_ORANGE },
		  "Server: requests running and waiting",
		  "requests (the server's gauges)",
		  1,
		  true,
		  false },
		{ { "kv_cache_usage", NULL },
		  { "KV cache used", NULL },
		  { CLI_RP_PURPLE, NULL },
		  "Server: KV-cache usage",
		  "KV cache used (%)",
		  100,
		  false,
		  true },
		{ { "prefix_cache_hit_rate", NULL },
		  { "prefix-cache hits", NULL },
		  { CLI_RP_GREEN, NULL },
		  "Server: prefix-cache hit ratio",
		  "hits / queries (%)",
		  100,
		  false,
		  true },
		{ { "preemptions", NULL },
		  { "preemptions", NULL },
		  { CLI_RP_RED, NULL },
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
		{ "output_tokens_per_s", "Output throughput", "output tokens/s", CLI_RP_BLUE,
		  false },
		{ "requests_per_s", "Request throughput", "completed requests/s", CLI_RP_GREEN,
		  false },
		{ "ttft_p99_ms", "TTFT p99", "TTFT p99 (ms)", CLI_RP_PURPLE, false },
		{ "itl_p99_ms", "ITL p99", "ITL p99 (ms)", CLI_RP_PURPLE, false },
		{ "active", "Active streams", "streams in flight", CLI_RP_BLUE, true },
		{ "cpu_pct", "Agent CPU (client health)", "busiest agent CPU %", CLI_RP_GREY,
		  false },
		{ "dispatch_lag_p99_ms", "Dispatch lag p99 (client health)",
		  "dispatch lag p99 (ms)", CLI_RP_GREY, false },
		{ "loop_lag_p99_ms", "Loop lag p99 (client health)", "event-loop lag p99 (ms)",
		  CLI_RP_GREY, false },
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
