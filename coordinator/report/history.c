/* chatload history: builds the trend of a nightly job's nights (each a results document)
 * per stage and headline figure, runs the step detector on each, and renders the result as
 * a terminal table.  The HTML page is history_html.c. */
#include "coordinator/report/history.h"
#include "coordinator/report/history_int.h"
#include "coordinator/report/compare.h"
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"
#include "coordinator/results/json_int.h"

#include "chatload/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A stage that failed or was cut short: its figures are not the night's (and a stage the
 * night before ran that the latest night could not is missing, as compare counts it). */
static bool stage_failed(const json_t *s)
{
	return strcmp(cl_results_str(s, "status", "ok"), "ok") != 0;
}

static const json_t *find_stage(const json_t *doc, const char *name)
{
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		const char *n = cl_results_str(s, "name", NULL);
		if (n && strcmp(n, name) == 0 && !json_is_object(json_object_get(s, "probe")))
			return s;
	}
	return NULL;
}

/* The stage names of the used nights: the latest night's order first, then stages only
 * older nights ran (a capacity search's probes left out: they differ night to night). */
static json_t *stage_names(const struct cl_history_input *nights, size_t n)
{
	json_t *names = json_array();
	for (size_t k = n; names && k-- > 0;) {
		size_t i;
		const json_t *s;
		json_array_foreach(json_object_get(nights[k].doc, "stages"), i, s)
		{
			const char *name = cl_results_str(s, "name", NULL);
			if (!name || json_is_object(json_object_get(s, "probe")))
				continue;
			bool seen = false;
			size_t j;
			const json_t *v;
			json_array_foreach(names, j, v)
			{
				seen |= strcmp(json_string_value(v), name) == 0;
			}
			if (!seen && cli_rj_append(names, cli_rj_str(name))) {
				json_decref(names);
				return NULL;
			}
		}
	}
	return names;
}

static const char *direction_word(int d)
{
	return d > 0 ? "worse" : d < 0 ? "better" : NULL;
}

/* One figure of one stage over the used nights: the series, the detector's judgement, the
 * events (steps, outliers) appended to events.  Returns NULL when out of memory. */
static json_t *figure_json(const struct cl_history_input *used, size_t n, const char *stage,
			   const struct cl_compare_metric *m, const struct cl_history_opts *o,
			   json_t *events, size_t *regressions)
{
	double *value = calloc(n ? n : 1, sizeof(double));
	double *half = calloc(n ? n : 1, sizeof(double));
	struct cl_history_night *out = calloc(n ? n : 1, sizeof(*out));
	double *judged = calloc(n ? n : 1, sizeof(double));
	const char **not_judged = calloc(n ? n : 1, sizeof(char *));
	json_t *points = json_array(), *fig = NULL;
	if (!value || !half || !out || !judged || !not_judged || !points)
		goto out;
	for (size_t k = 0; k < n; k++) {
		const json_t *s = find_stage(used[k].doc, stage);
		const json_t *ci95 = json_object_get(s, "ci95");
		json_t *ci = json_object_get(ci95, m->name);
		value[k] = s && !stage_failed(s) ? cl_results_num(s, m->path) : NAN;
		half[k] = cl_results_num(ci, "half");
		/* Shown, not judged: a tail of a night whose client was bound by an event, and a
		 * figure the night measured from too few values to put an interval on (ci95
		 * there, this figure's null: a p99 of 24 requests is their maximum).  A stage with
		 * no ci95 at all (an older file, a stage of under 5 intervals) is judged by the
		 * nights' spread and the limit, as compare judges it by the limit. */
		if (isfinite(value[k]) && cl_compare_client_bound_tails(s) &&
		    strstr(m->name, "_p99_"))
			not_judged[k] = "client-bound";
		else if (isfinite(value[k]) && json_is_object(ci95) && !json_is_object(ci))
			not_judged[k] = "no interval";
	}
	for (size_t k = 0; k < n; k++)
		judged[k] = not_judged[k] ? NAN : value[k];
	struct cl_history_rule rule = { m->higher_better, o->max_regression,
					m->rate ? o->max_error_increase : 0, o->window };
	cl_history_detect(judged, half, n, &rule, out);
	for (size_t k = 0; k < n; k++) {
		const struct cl_history_night *h = &out[k];
		const char *dir = h->label == CL_HISTORY_STEP || h->label == CL_HISTORY_OUTLIER
				      ? direction_word(h->direction)
				      : NULL;
		json_t *p = json_pack(
		    "{s:s,s:o,s:o,s:s,s:o,s:o,s:o,s:o,s:o,s:I,s:o}", "night", used[k].name, "value",
		    cli_rj_real(value[k]), "half", cli_rj_real(half[k]), "label",
		    cl_history_label_name(h->label), "direction",
		    dir ? json_string(dir) : json_null(), "expected",
		    cli_rj_real(cli_rj_sig(h->expected, 6)), "low",
		    cli_rj_real(cli_rj_sig(h->low, 6)), "high", cli_rj_real(cli_rj_sig(h->high, 6)),
		    "noise", cli_rj_real(cli_rj_sig(h->noise, 6)), "baseline",
		    (json_int_t)h->baseline, "not_judged",
		    not_judged[k] ? json_string(not_judged[k]) : json_null());
		if (cli_rj_append(points, p))
			goto out;
		if (!dir)
			continue;
		bool latest = k + 1 == n;
		if (latest && h->label == CL_HISTORY_STEP && h->direction > 0)
			(*regressions)++;
		if (cli_rj_append(events,
				  json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:o,s:o}", "stage", stage,
					    "metric", m->name, "label", m->label, "night",
					    used[k].name, "kind", cl_history_label_name(h->label),
					    "direction", dir, "latest", latest, "expected",
					    cli_rj_real(cli_rj_sig(h->expected, 6)), "value",
					    cli_rj_real(value[k]))))
			goto out;
	}
	fig = json_pack("{s:s,s:s,s:s,s:s,s:O}", "metric", m->name, "label", m->label, "better",
			m->higher_better ? "higher" : "lower", "latest",
			cl_history_label_name(n ? out[n - 1].label : CL_HISTORY_NA), "nights",
			points);
out:
	json_decref(points);
	free(value);
	free(half);
	free(out);
	free(judged);
	free(not_judged);
	return fig;
}

json_t *cl_history_build(const struct cl_history_input *nights, size_t n, const char *dir,
			 const struct cl_history_opts *opts, size_t *regressions)
{
	size_t reg = 0, n_used = 0;
	json_t *listed = json_array(), *stages = json_array(), *events = json_array(),
	       *warnings = json_array(), *names = NULL, *out = NULL;
	struct cl_history_input *used = calloc(n ? n : 1, sizeof(*used));
	if (!listed || !stages || !events || !warnings || !used)
		goto done;
	for (size_t k = 0; k < n; k++) {
		json_t *night;
		if (nights[k].doc) {
			used[n_used++] = nights[k];
			night =
			    json_pack("{s:s,s:o,s:b}", "name", nights[k].name, "started_at",
				      cli_rj_str(cl_results_str(nights[k].doc, "started_at", NULL)),
				      "used", true);
		} else {
			night =
			    json_pack("{s:s,s:b,s:s}", "name", nights[k].name, "used", false,
				      "skipped", nights[k].skipped ? nights[k].skipped : "unread");
		}
		if (cli_rj_append(listed, night))
			goto done;
	}
	if (!(names = stage_names(used, n_used)))
		goto done;
	size_t i;
	const json_t *name;
	json_array_foreach(names, i, name)
	{
		const char *stage = json_string_value(name);
		json_t *figs = json_array();
		if (!figs ||
		    cli_rj_append(stages, json_pack("{s:s,s:o}", "stage", stage, "figures", figs)))
			goto done;
		struct cl_compare_metric m;
		for (size_t k = 0; cl_compare_metric(k, &m); k++)
			if (cli_rj_append(figs,
					  figure_json(used, n_used, stage, &m, opts, events, &reg)))
				goto done;
		/* A stage the night before ran and the latest could not: compare calls a
		 * stage missing from the new run a regression, and so does the history. */
		const json_t *prev = n_used >= 2 ? find_stage(used[n_used - 2].doc, stage) : NULL;
		const json_t *last = n_used >= 1 ? find_stage(used[n_used - 1].doc, stage) : NULL;
		if (prev && !stage_failed(prev) && (!last || stage_failed(last))) {
			reg++;
			if (cli_rj_append(events, json_pack("{s:s,s:s,s:s,s:b}", "stage", stage,
							    "night", used[n_used - 1].name, "kind",
							    "missing", "latest", true)))
				goto done;
		}
		for (size_t k = 0; k < n_used; k++) {
			const json_t *st = find_stage(used[k].doc, stage);
			if (!st || stage_failed(st) ||
			    !json_is_true(cl_results_get(st, "client.client_bound")))
				continue;
			bool judged = !cl_compare_client_bound_tails(st);
			char reasons[160], buf[400];
			cl_results_client_reasons(st, reasons, sizeof(reasons));
			snprintf(buf, sizeof(buf),
				 judged
				     ? "stage '%s' of %s was client-bound (%s): judged, but its "
				       "tails may describe the client"
				     : "stage '%s' of %s was client-bound (%s): its tails describe "
				       "the client, so that night's p99s are not judged",
				 stage, used[k].name, reasons[0] ? reasons : "?");
			if (cli_rj_append(warnings, cli_rj_str(buf)))
				goto done;
		}
	}
	out = json_pack("{s:s,s:o,s:I,s:f,s:f,s:I,s:O,s:O,s:O,s:O}", "schema", "chatload.history/1",
			"dir", cli_rj_str(dir), "window", (json_int_t)opts->window,
			"max_regression", opts->max_regression, "max_error_increase",
			opts->max_error_increase, "regressions", (json_int_t)reg, "nights", listed,
			"stages", stages, "events", events, "warnings", warnings);
	if (out && regressions)
		*regressions = reg;
done:
	json_decref(names);
	json_decref(listed);
	json_decref(stages);
	json_decref(events);
	json_decref(warnings);
	free(used);
	return out;
}

/* -- the terminal table ------------------------------------------------------------------ */

static bool is_share(const char *metric)
{
	return strcmp(metric, "error_rate") == 0;
}

void cli_history_fmt(char *buf, size_t n, const char *metric, double v)
{
	if (!isfinite(v))
		snprintf(buf, n, "-");
	else if (is_share(metric))
		snprintf(buf, n, "%.2f%%", v * 100);
	else
		cli_rp_fmt_ms(buf, n, v);
}

/* The latest night's point of a figure: the newest that was judged. */
static const json_t *latest_point(const json_t *fig)
{
	const json_t *pts = json_object_get(fig, "nights");
	for (size_t k = json_array_size(pts); k-- > 0;) {
		const json_t *p = json_array_get(pts, k);
		if (strcmp(cl_results_str(p, "label", "n/a"), "n/a") != 0)
			return p;
	}
	return NULL;
}

#define H_COLS 8
static const char *const h_head[H_COLS] = { "stage", "metric", "latest", "expected",
					    "band",  "change", "noise",  "latest night" };
static const bool h_numeric[H_COLS] = { false, false, true, true, true, true, true, false };

static void fig_cells(const char *stage, const json_t *fig, char cells[H_COLS][96])
{
	const char *metric = cl_results_str(fig, "metric", "");
	const json_t *p = latest_point(fig);
	double v = cl_results_num(p, "value"), e = cl_results_num(p, "expected");
	double lo = cl_results_num(p, "low"), hi = cl_results_num(p, "high");
	double z = cl_results_num(p, "noise");
	char a[40], b[40];
	snprintf(cells[0], 96, "%s", stage);
	snprintf(cells[1], 96, "%s", cl_results_str(fig, "label", metric));
	cli_history_fmt(cells[2], 96, metric, v);
	cli_history_fmt(cells[3], 96, metric, e);
	cli_history_fmt(a, sizeof(a), metric, lo < 0 ? 0 : lo);
	cli_history_fmt(b, sizeof(b), metric, hi);
	if (isfinite(lo) && isfinite(hi))
		snprintf(cells[4], 96, "%s..%s", a, b);
	else
		snprintf(cells[4], 96, "-");
	if (is_share(metric) && isfinite(v) && isfinite(e))
		snprintf(cells[5], 96, "%+.2fpp", (v - e) * 100);
	else if (isfinite(v) && isfinite(e) && e != 0)
		snprintf(cells[5], 96, "%+.1f%%", 100 * (v - e) / fabs(e));
	else
		snprintf(cells[5], 96, "-");
	if (is_share(metric) && isfinite(z))
		snprintf(cells[6], 96, "\xc2\xb1%.2fpp", z * 100);
	else if (isfinite(z) && isfinite(e) && e != 0)
		snprintf(cells[6], 96, "\xc2\xb1%.1f%%", 100 * z / fabs(e));
	else
		snprintf(cells[6], 96, "-");
	const char *label = cl_results_str(p, "label", "n/a");
	const char *dir = cl_results_str(p, "direction", NULL);
	const char *latest_name = cl_results_str(p, "night", "");
	const json_t *pts = json_object_get(fig, "nights");
	const char *last =
	    cl_results_str(json_array_get(pts, json_array_size(pts) - 1), "night", "");
	if (!p)
		snprintf(cells[7], 96, "n/a");
	else if (strcmp(label, "step") == 0)
		snprintf(cells[7], 96, "%s (%s)%s",
			 strcmp(dir ? dir : "", "worse") == 0 ? "STEP" : "step", dir ? dir : "?",
			 strcmp(latest_name, last) == 0 ? "" : " [older night]");
	else
		snprintf(cells[7], 96, "%s", label);
}

typedef void (*h_row_fn)(FILE *out, char cells[H_COLS][96], void *ctx);

static void each_fig(const json_t *hist, FILE *out, h_row_fn fn, void *ctx)
{
	size_t i, k;
	const json_t *s, *f;
	json_array_foreach(json_object_get(hist, "stages"), i, s)
	{
		json_array_foreach(json_object_get(s, "figures"), k, f)
		{
			char cells[H_COLS][96] = { { 0 } };
			fig_cells(cl_results_str(s, "stage", "-"), f, cells);
			fn(out, cells, ctx);
		}
	}
}

struct widths {
	size_t w[H_COLS];
	bool print;
};

/* Display width of UTF-8 text: the ± takes two bytes and one column. */
static size_t columns(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void table_row(FILE *out, char cells[H_COLS][96], void *ctx)
{
	struct widths *w = ctx;
	for (int c = 0; c < H_COLS; c++) {
		size_t len = columns(cells[c]);
		if (!w->print) {
			if (len > w->w[c])
				w->w[c] = len;
			continue;
		}
		int pad = c + 1 < H_COLS ? (int)(w->w[c] - len) : 0;
		if (h_numeric[c])
			fprintf(out, "%*s%s", pad, "", cells[c]);
		else
			fprintf(out, "%s%*s", cells[c], pad, "");
		fputs(c + 1 < H_COLS ? "  " : "\n", out);
	}
}

void cli_history_events(const json_t *hist, FILE *out, const char *item_prefix)
{
	size_t i;
	const json_t *e, *n;
	json_array_foreach(json_object_get(hist, "events"), i, e)
	{
		const char *kind = cl_results_str(e, "kind", "");
		const char *metric = cl_results_str(e, "metric", "");
		char a[40], b[40];
		cli_history_fmt(a, sizeof(a), metric, cl_results_num(e, "expected"));
		cli_history_fmt(b, sizeof(b), metric, cl_results_num(e, "value"));
		if (strcmp(kind, "missing") == 0) {
			fprintf(out, "%s%s: the stage is missing from the latest night %s\n",
				item_prefix, cl_results_str(e, "stage", ""),
				cl_results_str(e, "night", ""));
			continue;
		}
		bool latest = json_is_true(json_object_get(e, "latest"));
		fprintf(out, "%s%s %s: %s for the %s at %s (%s -> %s)%s\n", item_prefix,
			cl_results_str(e, "stage", ""), cl_results_str(e, "label", metric), kind,
			cl_results_str(e, "direction", "?"), cl_results_str(e, "night", ""), a, b,
			strcmp(kind, "step") != 0 ? " and back the next night"
			: latest                  ? ", the latest night: a step starts"
						  : ", the nights after stayed: a step");
	}
	json_array_foreach(json_object_get(hist, "nights"), i, n)
	{
		if (json_is_true(json_object_get(n, "used")))
			continue;
		fprintf(out, "%sskipped %s: %s\n", item_prefix, cl_results_str(n, "name", "?"),
			cl_results_str(n, "skipped", "?"));
	}
	json_array_foreach(json_object_get(hist, "warnings"), i, e)
	{
		fprintf(out, "%swarning: %s\n", item_prefix, json_string_value(e));
	}
}

void cli_history_verdict(const json_t *hist, FILE *out)
{
	double reg = cl_results_num(hist, "regressions");
	double lim = cl_results_num(hist, "max_regression") * 100;
	if (reg > 0)
		fprintf(out,
			"result: the latest night starts %.0f step%s for the worse beyond %g%% and "
			"the noise\n",
			reg, reg == 1 ? "" : "s", lim);
	else
		fprintf(out, "result: no step for the worse at the latest night (limit %g%%)\n",
			lim);
}

void cli_history_span(const json_t *hist, size_t *n_used, const char **first, const char **last)
{
	size_t i;
	const json_t *n;
	*n_used = 0;
	*first = *last = "-";
	json_array_foreach(json_object_get(hist, "nights"), i, n)
	{
		if (!json_is_true(json_object_get(n, "used")))
			continue;
		if ((*n_used)++ == 0)
			*first = cl_results_str(n, "name", "-");
		*last = cl_results_str(n, "name", "-");
	}
}

int cl_history_table(const json_t *hist, FILE *out)
{
	size_t used;
	const char *first, *last;
	cli_history_span(hist, &used, &first, &last);
	fprintf(out, "history: %s (%zu night%s, %s .. %s; baseline: up to %.0f earlier nights)\n\n",
		cl_results_str(hist, "dir", "?"), used, used == 1 ? "" : "s", first, last,
		cl_results_num(hist, "window"));
	struct widths w = { { 0 }, false };
	char head[H_COLS][96];
	for (int c = 0; c < H_COLS; c++)
		snprintf(head[c], 96, "%s", h_head[c]);
	table_row(out, head, &w);
	each_fig(hist, out, table_row, &w);
	w.print = true;
	table_row(out, head, &w);
	each_fig(hist, out, table_row, &w);
	fputs("\nexpected: the median of the earlier nights on the current level; band: where a "
	      "night\nstays normal: the noise (those nights' robust spread, widened for how few "
	      "they are,\nand both nights' ci95) or the limit, whichever is wider; change and "
	      "noise in % of\nthe expected value; learning: fewer than 3 earlier nights, not "
	      "judged.\n",
	      out);
	size_t listed = json_array_size(json_object_get(hist, "nights"));
	if (json_array_size(json_object_get(hist, "events")) ||
	    json_array_size(json_object_get(hist, "warnings")) || listed > used)
		fputc('\n', out);
	cli_history_events(hist, out, "");
	cli_history_verdict(hist, out);
	return ferror(out) ? CL_EIO : 0;
}
