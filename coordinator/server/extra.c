/* Series chatload has no name for, kept raw because target.server_metrics.extra names them:
 * each matching series (name and labels) gets a column of the timeline, and a stage's summary
 * is its gauge's mean/max/last or its counter's increase and rate. */
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

/* Which samples are kept: a histogram's or summary's buckets and quantiles are left out (its
 * _count and _sum are kept, as counters); everything else as it is. */
static bool wanted(struct cl_srv_scrape *sc, const struct cl_prom_sample *s)
{
	bool hist = s->type == CL_PROM_HISTOGRAM || s->type == CL_PROM_SUMMARY;
	if (hist && strcmp(s->name, s->family) == 0)
		return false; /* a summary's quantile lines */
	if (!isnan(s->le))
		return false; /* a bucket */
	bool any = false;
	for (size_t i = 0; i < sc->n_extra; i++) {
		if (pattern_match(sc->extra[i], s->name) ||
		    (s->family[0] && pattern_match(sc->extra[i], s->family))) {
			sc->extra_found[i] = true;
			any = true;
		}
	}
	return any;
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

static long find_or_add(struct cl_srv_scrape *sc, const struct cl_prom_sample *s)
{
	for (size_t k = 0; k < sc->n_xs; k++)
		if (strcmp(sc->xs[k].name, s->name) == 0 &&
		    strcmp(sc->xs[k].labels, s->labels) == 0)
			return (long)k;
	if (sc->n_xs == CLI_SRV_MAX_XSERIES) {
		sc->xs_dropped = true;
		return -1;
	}
	if (!sc->xs && !(sc->xs = calloc(CLI_SRV_MAX_XSERIES, sizeof(*sc->xs))))
		return -1;
	struct cli_srv_xseries *x = &sc->xs[sc->n_xs];
	x->name = strdup(s->name);
	x->labels = strdup(s->labels);
	if (!x->name || !x->labels) {
		free(x->name);
		free(x->labels);
		x->name = x->labels = NULL;
		return -1;
	}
	x->counter = is_counter(s);
	return (long)sc->n_xs++;
}

/* Makes room for row `point`; its cells NAN.  false when out of memory. */
static bool row(struct cl_srv_scrape *sc, size_t point)
{
	if (point >= sc->xv_rows) {
		size_t rows = sc->xv_rows ? sc->xv_rows * 2 : 256;
		while (rows <= point)
			rows *= 2;
		if (rows > CLI_SRV_MAX_POINTS)
			rows = CLI_SRV_MAX_POINTS;
		double *v = realloc(sc->xv, rows * CLI_SRV_MAX_XSERIES * sizeof(*v));
		if (!v)
			return false;
		/* Rows of points whose own growth failed are read too: absent, not garbage. */
		for (size_t i = sc->xv_rows * CLI_SRV_MAX_XSERIES; i < rows * CLI_SRV_MAX_XSERIES;
		     i++)
			v[i] = NAN;
		sc->xv = v;
		sc->xv_rows = rows;
	}
	double *r = &sc->xv[point * CLI_SRV_MAX_XSERIES];
	for (size_t k = 0; k < CLI_SRV_MAX_XSERIES; k++)
		r[k] = NAN;
	return true;
}

void cli_srv_extra_record(struct cl_srv_scrape *sc, const struct cl_prom_page *pg, size_t point,
			  bool new_process)
{
	if (!row(sc, point))
		return;
	double *r = &sc->xv[point * CLI_SRV_MAX_XSERIES];
	for (size_t i = 0; i < pg->n; i++) {
		const struct cl_prom_sample *s = &pg->s[i];
		if (isnan(s->value) || !wanted(sc, s))
			continue;
		long k = find_or_add(sc, s);
		if (k < 0 || !isnan(r[k]))
			continue; /* dropped, or a repeated line: the first counts */
		struct cli_srv_xseries *x = &sc->xs[k];
		if (!x->counter) {
			r[k] = s->value;
			continue;
		}
		if (x->have_prev) /* after a restart, counting goes on from the new value */
			x->cum += s->value < x->prev || new_process ? s->value : s->value - x->prev;
		x->prev = s->value;
		x->have_prev = true;
		r[k] = x->cum;
	}
}

static json_t *rnd(double v)
{
	return isfinite(v) ? json_real(round(v * 1e4) / 1e4) : json_null();
}

json_t *cli_srv_extra_stage_json(struct cl_srv_scrape *sc, size_t from_point, size_t to_point,
				 int64_t from_us, int64_t to_us)
{
	json_t *arr = json_array();
	if (!arr)
		return NULL;
	if (to_point > sc->xv_rows)
		to_point = sc->xv_rows;
	for (size_t k = 0; k < sc->n_xs; k++) {
		const struct cli_srv_xseries *x = &sc->xs[k];
		double sum = 0, max = NAN, last = NAN, base = NAN, end = NAN;
		int64_t t_base = 0, t_end = 0;
		size_t n = 0;
		/* A counter's base is its last value before the stage, else its first in it. */
		for (size_t i = from_point < sc->xv_rows ? from_point : sc->xv_rows;
		     i-- > 0 && x->counter;) {
			double v = sc->xv[i * CLI_SRV_MAX_XSERIES + k];
			if (!isnan(v)) {
				base = v;
				t_base = sc->points[i].t_us;
				break;
			}
		}
		for (size_t i = from_point; i < to_point; i++) {
			double v = sc->xv[i * CLI_SRV_MAX_XSERIES + k];
			if (isnan(v))
				continue;
			int64_t t = sc->points[i].t_us;
			if (x->counter) {
				if (isnan(base)) {
					base = v;
					t_base = t;
				}
				end = v;
				t_end = t;
				continue;
			}
			last = v;
			if (t < from_us || (to_us && t > to_us))
				continue;
			sum += v;
			max = n == 0 || v > max ? v : max;
			n++;
		}
		json_t *o;
		if (x->counter) {
			double secs = (t_end - t_base) / 1e6;
			o = json_pack("{s:s,s:s,s:s,s:o,s:o}", "name", x->name, "labels", x->labels,
				      "kind", "counter", "increase", rnd(end - base), "per_s",
				      secs > 0 ? rnd((end - base) / secs) : json_null());
		} else {
			o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "name", x->name, "labels",
				      x->labels, "kind", "gauge", "mean",
				      n ? rnd(sum / n) : json_null(), "max", rnd(max), "last",
				      rnd(last));
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
	}
	free(sc->xs);
	for (size_t i = 0; i < sc->n_extra; i++)
		free(sc->extra[i]);
	free(sc->extra);
	free(sc->extra_found);
	free(sc->xv);
	sc->xs = NULL;
	sc->extra = NULL;
	sc->extra_found = NULL;
	sc->xv = NULL;
	sc->n_xs = sc->n_extra = 0;
}
