/* The series chatload has no name for, kept raw so nothing a page offers is lost: every
 * series of the engine's page and of the extra exporters that the vocabulary does not read
 * (those target.server_metrics.series names first), at most CLI_SRV_MAX_XSERIES of them.
 * Each gets a column of a timeline of CLI_SRV_XROWS rows, allocated whole when the series is
 * first seen (so memory is the series', not the run's length: it never grows in steps as a
 * soak goes on); when a run outgrows it, rows are merged in pairs (a stage's edges are then
 * exact to 2^shift scrapes).  A stage's summary is a gauge's mean/max/last or a counter's increase
 * and rate (a histogram's or summary's _count and _sum are counters; buckets and quantiles
 * are left out). */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A name, or a beginning followed by '*'. */
static bool pattern_match(const char *pat, const char *name)
{
	size_t n = strlen(pat);
	if (n && pat[n - 1] == '*')
		return strncmp(name, pat, n - 1) == 0;
	return strcmp(name, pat) == 0;
}

/* Whether series: names s; marks the patterns that matched. */
static bool asked_for(struct cl_srv_scrape *sc, const struct cl_prom_sample *s)
{
	bool any = false;
	for (size_t i = 0; i < sc->n_series; i++) {
		if (pattern_match(sc->series[i], s->name) ||
		    (s->family[0] && pattern_match(sc->series[i], s->family))) {
			sc->series_found[i] = true;
			any = true;
		}
	}
	return any;
}

/* Which samples are kept: not the vocabulary's, not a bucket or a summary's quantile. */
static bool keepable(const struct cl_prom_sample *s)
{
	bool hist = s->type == CL_PROM_HISTOGRAM || s->type == CL_PROM_SUMMARY;
	if (hist && strcmp(s->name, s->family) == 0)
		return false; /* a summary's quantile lines */
	if (!isnan(s->le))
		return false; /* a bucket */
	return !isnan(s->value) && !cl_srv_vocab_known(s->name);
}

static bool is_counter(const struct cl_prom_sample *s)
{
	if (s->type == CL_PROM_COUNTER)
		return true;
	if (s->type == CL_PROM_HISTOGRAM || s->type == CL_PROM_SUMMARY)
		return true; /* only _count and _sum get here */
	size_t n = strlen(s->name);
	return s->type == CL_PROM_UNTYPED && n > 6 && strcmp(s->name + n - 6, "_total") == 0;
}

static void note_dropped(struct cl_srv_scrape *sc, const struct cl_prom_sample *s)
{
	for (size_t i = 0; i < sc->n_xdrop_ex; i++)
		if (strcmp(sc->xdrop_ex[i], s->name) == 0)
			return;
	if (sc->n_xdrop_ex < CLI_SRV_XDROP_EX && (sc->xdrop_ex[sc->n_xdrop_ex] = strdup(s->name)))
		sc->n_xdrop_ex++;
}

static struct cli_srv_xcell *cell(struct cl_srv_scrape *sc, size_t row, size_t k)
{
	return &sc->xs[k].col[row];
}

static void clear_cells(struct cli_srv_xcell *col, size_t from, size_t to)
{
	for (size_t r = from; r < to; r++)
		col[r] = (struct cli_srv_xcell){ .last = NAN, .max = NAN };
}

static void clear_rows(struct cl_srv_scrape *sc, size_t from, size_t to)
{
	for (size_t r = from; r < to; r++)
		sc->xt0[r] = sc->xt1[r] = 0;
	for (size_t k = 0; k < sc->n_xs; k++)
		clear_cells(sc->xs[k].col, from, to);
}

/* The series' column, added when new and there is room (series: names may take the last
 * CLI_SRV_XRESERVED columns, others not).  -1: dropped or out of memory. */
static long find_or_add(struct cl_srv_scrape *sc, const struct cl_prom_sample *s, uint8_t src,
			bool asked, size_t *dropped)
{
	for (size_t k = 0; k < sc->n_xs; k++)
		if (sc->xs[k].src == src && strcmp(sc->xs[k].name, s->name) == 0 &&
		    strcmp(sc->xs[k].labels, s->labels) == 0)
			return (long)k;
	size_t room = asked ? CLI_SRV_MAX_XSERIES : CLI_SRV_MAX_XSERIES - CLI_SRV_XRESERVED;
	if (sc->n_xs >= room) {
		(*dropped)++;
		note_dropped(sc, s);
		return -1;
	}
	if (!sc->xs && !(sc->xs = calloc(CLI_SRV_MAX_XSERIES, sizeof(*sc->xs))))
		return -1;
	struct cli_srv_xseries *x = &sc->xs[sc->n_xs];
	x->name = strdup(s->name);
	x->labels = strdup(s->labels);
	x->col = malloc(CLI_SRV_XROWS * sizeof(*x->col));
	if (!x->name || !x->labels || !x->col) {
		free(x->name);
		free(x->labels);
		free(x->col);
		*x = (struct cli_srv_xseries){ 0 };
		return -1;
	}
	clear_cells(x->col, 0, CLI_SRV_XROWS);
	x->counter = is_counter(s);
	x->src = src;
	x->asked = asked;
	x->seen_point = (size_t)-1;
	return (long)sc->n_xs++;
}

/* Merges rows in pairs: the timeline covers twice the scrapes in the same memory. */
static void compact(struct cl_srv_scrape *sc)
{
	for (size_t r = 0; r < CLI_SRV_XROWS / 2; r++) {
		size_t a = 2 * r, b = 2 * r + 1;
		sc->xt0[r] = sc->xt0[a] ? sc->xt0[a] : sc->xt0[b];
		sc->xt1[r] = sc->xt1[b] ? sc->xt1[b] : sc->xt1[a];
		for (size_t k = 0; k < sc->n_xs; k++) {
			struct cli_srv_xcell ca = *cell(sc, a, k), cb = *cell(sc, b, k);
			struct cli_srv_xcell *o = cell(sc, r, k);
			o->n = ca.n + cb.n;
			o->sum = ca.sum + cb.sum;
			o->max = isnan(ca.max) || cb.max > ca.max ? cb.max : ca.max;
			o->last = isnan(cb.last) ? ca.last : cb.last;
		}
	}
	clear_rows(sc, CLI_SRV_XROWS / 2, CLI_SRV_XROWS);
	sc->x_shift++;
}

/* The row of `point`; SIZE_MAX when out of memory. */
static size_t row_of(struct cl_srv_scrape *sc, size_t point)
{
	if (!sc->xt0 && (!(sc->xt0 = calloc(CLI_SRV_XROWS, sizeof(int64_t))) ||
			 !(sc->xt1 = calloc(CLI_SRV_XROWS, sizeof(int64_t)))))
		return SIZE_MAX;
	while ((point >> sc->x_shift) >= CLI_SRV_XROWS)
		compact(sc);
	return point >> sc->x_shift;
}

static void record_page(struct cl_srv_scrape *sc, const struct cl_prom_page *pg, uint8_t src,
			size_t point, size_t r, bool new_process, bool pass_asked, size_t *dropped)
{
	for (size_t i = 0; i < pg->n; i++) {
		const struct cl_prom_sample *s = &pg->s[i];
		if (!keepable(s))
			continue;
		bool asked = sc->n_series && asked_for(sc, s);
		if (asked != pass_asked)
			continue;
		long k = find_or_add(sc, s, src, asked, dropped);
		if (k < 0)
			continue;
		struct cli_srv_xseries *x = &sc->xs[k];
		if (x->seen_point == point)
			continue; /* a repeated line: the first counts */
		x->seen_point = point;
		struct cli_srv_xcell *c = cell(sc, r, (size_t)k);
		if (!x->counter) {
			c->last = s->value;
			c->sum += s->value;
			c->max = isnan(c->max) || s->value > c->max ? s->value : c->max;
			c->n++;
			continue;
		}
		if (x->have_prev) /* after a restart, counting goes on from the new value */
			x->cum += s->value < x->prev || (new_process && src == 0)
				      ? s->value
				      : s->value - x->prev;
		x->prev = s->value;
		x->have_prev = true;
		c->last = x->cum;
		c->n++;
	}
}

void cli_srv_extra_record(struct cl_srv_scrape *sc, const struct cl_prom_page *const *pages,
			  size_t n_pages, size_t point, int64_t t_us, bool new_process)
{
	size_t r = row_of(sc, point);
	if (r == SIZE_MAX)
		return;
	if (!sc->xt0[r])
		sc->xt0[r] = t_us;
	sc->xt1[r] = t_us;
	size_t dropped = 0;
	/* series: names first, so they find room before the rest of the page */
	for (int pass = 1; pass >= 0; pass--)
		for (size_t p = 0; p < n_pages; p++)
			if (pages[p])
				record_page(sc, pages[p], (uint8_t)p, point, r, new_process,
					    pass == 1, &dropped);
	if (dropped > sc->x_dropped)
		sc->x_dropped = dropped;
}

static json_t *rnd(double v)
{
	return isfinite(v) ? json_real(round(v * 1e4) / 1e4) : json_null();
}

const char *cli_srv_source_url(const struct cl_srv_scrape *sc, uint8_t src)
{
	return src == 0 || src > sc->n_ex ? sc->url : sc->ex[src - 1].url;
}

json_t *cli_srv_extra_stage_json(struct cl_srv_scrape *sc, size_t from_point, size_t to_point,
				 int64_t from_us, int64_t to_us)
{
	json_t *arr = json_array();
	if (!arr)
		return NULL;
	if (to_point <= from_point || !sc->xt0)
		return arr;
	size_t r0 = from_point >> sc->x_shift, r1 = (to_point - 1) >> sc->x_shift;
	if (r1 >= CLI_SRV_XROWS)
		r1 = CLI_SRV_XROWS - 1;
	for (size_t k = 0; k < sc->n_xs; k++) {
		const struct cli_srv_xseries *x = &sc->xs[k];
		double sum = 0, max = NAN, last = NAN, base = NAN, end = NAN;
		int64_t t_base = 0, t_end = 0;
		size_t n = 0;
		/* A counter's base is its last value before the stage, else its first in it. */
		for (size_t r = r0; r-- > 0 && x->counter;) {
			if (!isnan(cell(sc, r, k)->last)) {
				base = cell(sc, r, k)->last;
				t_base = sc->xt1[r];
				break;
			}
		}
		for (size_t r = r0; r <= r1; r++) {
			const struct cli_srv_xcell *c = cell(sc, r, k);
			if (!c->n)
				continue;
			if (x->counter) {
				if (isnan(base)) {
					base = c->last;
					t_base = sc->xt1[r];
				}
				end = c->last;
				t_end = sc->xt1[r];
				continue;
			}
			last = c->last;
			if (sc->xt0[r] < from_us || (to_us && sc->xt1[r] > to_us))
				continue;
			sum += c->sum;
			max = n == 0 || c->max > max ? c->max : max;
			n += c->n;
		}
		json_t *o;
		const char *src = cli_srv_source_url(sc, x->src);
		if (x->counter) {
			double secs = (t_end - t_base) / 1e6;
			o = json_pack("{s:s,s:s,s:s,s:b,s:s,s:o,s:o}", "name", x->name, "labels",
				      x->labels, "source", src, "named", x->asked, "kind",
				      "counter", "increase", rnd(end - base), "per_s",
				      secs > 0 ? rnd((end - base) / secs) : json_null());
		} else {
			o = json_pack("{s:s,s:s,s:s,s:b,s:s,s:o,s:o,s:o}", "name", x->name,
				      "labels", x->labels, "source", src, "named", x->asked, "kind",
				      "gauge", "mean", n ? rnd(sum / n) : json_null(), "max",
				      rnd(max), "last", rnd(last));
		}
		if (json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

void cli_srv_extra_free(struct cl_srv_scrape *sc)
{
	for (size_t k = 0; k < sc->n_xs; k++) {
		free(sc->xs[k].name);
		free(sc->xs[k].labels);
		free(sc->xs[k].col);
	}
	free(sc->xs);
	for (size_t i = 0; i < sc->n_series; i++)
		free(sc->series[i]);
	for (size_t i = 0; i < sc->n_xdrop_ex; i++)
		free(sc->xdrop_ex[i]);
	free(sc->series);
	free(sc->series_found);
	free(sc->xt0);
	free(sc->xt1);
	sc->xs = NULL;
	sc->series = NULL;
	sc->series_found = NULL;
	sc->xt0 = sc->xt1 = NULL;
	sc->n_xs = sc->n_series = sc->n_xdrop_ex = 0;
}
