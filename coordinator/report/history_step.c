/* The step detector of chatload history: one figure's nights judged against a robust
 * baseline of the nights before them (median and MAD, with each night's own ci95), a night
 * that leaves the band confirmed as a step by the night after it, or called an outlier when
 * that night comes back.  Pure functions; docs/results.md ("chatload history") says why. */
#include "coordinator/report/history.h"
#include "coordinator/results/ci.h"

#include "chatload/assert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How far a new night may stray from the median of n earlier nights before the spread of
 * those nights no longer explains it: the two-sided 99 % prediction interval of one new
 * value, t(0.995, n - 1) x sd x sqrt(1 + 1/n), with the robust sd of the n nights for sd.
 * Student's t because the sd is estimated from a handful of nights: 3 earlier nights allow
 * 11.5 sd, 5 allow 5.0, 10 allow 3.4 (at 1.96 a history of 3 nights cried wolf on every
 * host hiccup in the tails).  99 %, not 95 %: each stage has eleven figures. */
static double spread_factor(size_t n)
{
	if (n < 2)
		return 0; /* one night has no spread of its own: the ci95s and the limit decide */
	double t = cl_ci_t995(n - 1);
	return t * sqrt(1 + 1.0 / (double)n);
}

/* 1.4826 x MAD estimates the standard deviation of normally distributed values. */
#define MAD_TO_SD 1.4826

const char *cl_history_label_name(enum cl_history_label l)
{
	static const char *const names[CL_HISTORY_N_LABELS] = { "n/a", "learning", "normal",
								"outlier", "step" };
	return (unsigned)l < CL_HISTORY_N_LABELS ? names[l] : "n/a";
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1); sorts v. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The level the history expects for a night: its earlier nights' median, their spread and
 * the median of their ci95 half-widths (how sure one night of that level is). */
struct baseline {
	size_t n;
	double median, spread, half;
};

/* Every earlier night with a value counts, outliers too: the median and the MAD shrug one
 * off, and leaving them out would keep a noisy history from ever learning its spread (each
 * of its early nights would look like an outlier of a one-night baseline). */
/* The baseline of night i: up to rule->window nights with a value before it, from the current
 * level's first night (from) on, newest first. */
static struct baseline baseline_of(const double *value, const double *half, size_t from, size_t i,
				   const struct cl_history_rule *rule)
{
	double v[CL_HISTORY_MAX_WINDOW], h[CL_HISTORY_MAX_WINDOW];
	size_t window = rule->window < CL_HISTORY_MIN_BASELINE ? CL_HISTORY_MIN_BASELINE
			: rule->window > CL_HISTORY_MAX_WINDOW ? CL_HISTORY_MAX_WINDOW
							       : rule->window;
	size_t nv = 0, nh = 0;
	for (size_t j = i; j-- > from && nv < window;) {
		if (!isfinite(value[j]))
			continue;
		v[nv++] = value[j];
		if (isfinite(half[j]) && half[j] >= 0)
			h[nh++] = half[j];
	}
	struct baseline b = { nv, NAN, NAN, NAN };
	if (nv == 0)
		return b;
	b.median = median(v, nv);
	for (size_t k = 0; k < nv; k++)
		v[k] = fabs(v[k] - b.median);
	b.spread = MAD_TO_SD * median(v, nv);
	b.half = nh ? median(h, nh) : NAN;
	return b;
}

/* Night i against a baseline: fills the band and returns +1 when the value left it for the
 * worse, -1 for the better, 0 when it stayed inside. */
static int judge(double v, double h, const struct baseline *b, const struct cl_history_rule *rule,
		 struct cl_history_night *o)
{
	o->baseline = b->n;
	o->expected = b->median;
	o->spread = b->spread;
	double hn = isfinite(h) && h >= 0 ? h : 0, hb = isfinite(b->half) ? b->half : 0;
	double zs = spread_factor(b->n) * b->spread;
	o->noise = sqrt(zs * zs + hn * hn + hb * hb);
	/* The band's half-width: the noise, the practical limit and (a share) the absolute
	 * floor; a value must clear all three to leave it. */
	double limit = rule->max_regression * fabs(b->median);
	double width = o->noise;
	if (limit > width)
		width = limit;
	if (rule->min_abs_change > width)
		width = rule->min_abs_change;
	o->low = b->median - width;
	o->high = b->median + width;
	double delta = v - b->median;
	/* A level of 0 has no relative limit: any move beyond the noise (and the floor) counts,
	 * as compare counts one from a base of 0. */
	if (fabs(delta) <= width || delta == 0)
		return 0;
	bool worse = rule->higher_better ? delta < 0 : delta > 0;
	return worse ? +1 : -1;
}

enum cl_history_label cl_history_detect(const double *value, const double *half, size_t n,
					const struct cl_history_rule *rule,
					struct cl_history_night *out)
{
	CL_ASSERT(n == 0 || (value && half && out && rule));
	const size_t none = (size_t)-1;
	size_t from = 0;       /* the current level's first night */
	size_t pending = none; /* a night that left the band, waiting for the next one */
	struct baseline pending_base = { 0, NAN, NAN, NAN };
	size_t latest = none;
	for (size_t i = 0; i < n; i++) {
		struct cl_history_night *o = &out[i];
		*o = (struct cl_history_night){ CL_HISTORY_NA, 0, 0, NAN, NAN, NAN, NAN, NAN };
		if (!isfinite(value[i]))
			continue;
		latest = i;
		if (pending != none) {
			/* The night after one that left the band decides what that one was: still
			 * beyond the old level the same way, a step (the level changed there);
			 * back, an outlier (the history's level holds). */
			struct cl_history_night probe;
			int d = judge(value[i], half[i], &pending_base, rule, &probe);
			if (d != 0 && d == out[pending].direction) {
				out[pending].label = CL_HISTORY_STEP;
				from = pending;
			} else {
				out[pending].label = CL_HISTORY_OUTLIER;
			}
			pending = none;
		}
		struct baseline b = baseline_of(value, half, from, i, rule);
		if (b.n < CL_HISTORY_MIN_BASELINE) {
			/* One or two nights tell nothing of the noise (a p99's ci95 within one
			 * short run is too narrow, and two nights' spread is a coin toss): the
			 * first nights, and the first after a step, only build the baseline.
			 * The band is still filled, for the chart. */
			if (b.n)
				judge(value[i], half[i], &b, rule, o);
			o->label = CL_HISTORY_LEARNING;
			continue;
		}
		int d = judge(value[i], half[i], &b, rule, o);
		o->direction = d;
		if (d == 0) {
			o->label = CL_HISTORY_NORMAL;
		} else {
			/* A step until the next night says otherwise: on the latest night, the
			 * step it starts. */
			o->label = CL_HISTORY_STEP;
			pending = i;
			pending_base = b;
		}
	}
	return latest == none ? CL_HISTORY_NA : out[latest].label;
}
