/* What a soak watches in results: the drift of a long stage (its first window against its
 * last: throughput, TTFT p99, ITL p99, error rate; from the interval series in constant
 * memory) with slo.max_drift's checks, and the per-interval SLO checks behind
 * slo.abort_on_breach's window. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/assert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The last window is kept as this many buckets of whole intervals (plus the one filling),
 * so its memory does not grow with the window: it is exact to a quarter of the window. */
#define BUCKETS 4
/* The latest interval's window is trimmed every this many intervals (~1 min at 100 ms). */
#define PENDING_TRIM_EVERY 601

/* What a window needs of its intervals: latency histograms merged exactly, counts summed. */
struct win {
	struct cl_hist ttft, itl;
	uint64_t completed_in_window, output_tokens, completed, errors;
	uint32_t intervals;
	double from_s, to_s; /* stage time the window covers */
	double seconds;
};

struct cli_rs_drift {
	uint32_t window_intervals; /* n: intervals in a window */
	uint32_t bucket_intervals; /* intervals per bucket of the last window */
	double ramp_s, end_s;      /* measured intervals lie within (ramp_s, end_s] */
	double interval_s;
	bool until_end; /* request-bound: no known end, drop the stage's last interval */
	struct win first;
	struct win ring[BUCKETS]; /* full buckets, oldest overwritten */
	uint32_t ring_n, ring_next;
	struct win cur;     /* bucket filling */
	struct win pending; /* the latest interval, held back one step (request-bound stages) */
	bool has_pending;
	uint32_t measured; /* intervals taken */
};

static int win_init(struct win *w)
{
	memset(w, 0, sizeof(*w));
	if (cl_hist_init(&w->ttft, cl_metrics_lat_cfg()) != 0 ||
	    cl_hist_init(&w->itl, cl_metrics_lat_cfg()) != 0)
		return CL_ENOMEM;
	return 0;
}

static void win_destroy(struct win *w)
{
	cl_hist_destroy(&w->ttft);
	cl_hist_destroy(&w->itl);
}

static void win_reset(struct win *w)
{
	cl_hist_reset(&w->ttft);
	cl_hist_reset(&w->itl);
	w->completed_in_window = w->output_tokens = w->completed = w->errors = 0;
	w->intervals = 0;
	w->from_s = w->to_s = w->seconds = 0;
}

/* Empties w; with trim also gives back the pages its histograms touched (cl_hist_trim), so
 * the rare latencies of an hour do not keep theirs resident: a bucket of the last window
 * at each turn of the ring, the latest interval every PENDING_TRIM_EVERY. */
static void win_clear(struct win *w, bool trim)
{
	if (trim) {
		cl_hist_trim(&w->ttft);
		cl_hist_trim(&w->itl);
	}
	win_reset(w);
}

/* dst += src for two latency histograms: every one here and in a record is made with the
 * metrics' latency configuration (cl_metrics_lat_cfg), so the merge cannot fail. */
static void merge_lat(struct cl_hist *dst, const struct cl_hist *src)
{
	int rc = cl_hist_merge(dst, src);
	CL_ASSERT(rc == 0);
}

/* dst += src (histograms exactly, counts summed, the span widened). */
static void win_add(struct win *dst, const struct win *src)
{
	if (!src->intervals)
		return;
	merge_lat(&dst->ttft, &src->ttft);
	merge_lat(&dst->itl, &src->itl);
	dst->completed_in_window += src->completed_in_window;
	dst->output_tokens += src->output_tokens;
	dst->completed += src->completed;
	dst->errors += src->errors;
	if (!dst->intervals || src->from_s < dst->from_s)
		dst->from_s = src->from_s;
	if (src->to_s > dst->to_s)
		dst->to_s = src->to_s;
	dst->intervals += src->intervals;
	dst->seconds += src->seconds;
}

static void win_add_metrics(struct win *w, double t_s, double interval_s,
			    const struct cl_metrics *m)
{
	merge_lat(&w->ttft, &m->lat[CL_LAT_TTFT]);
	merge_lat(&w->itl, &m->lat[CL_LAT_ITL]);
	w->completed_in_window += m->ctr[CL_CTR_COMPLETED_IN_WINDOW];
	w->output_tokens += m->ctr[CL_CTR_OUTPUT_TOKENS];
	w->completed += m->ctr[CL_CTR_COMPLETED];
	w->errors += cl_verdict_errors(m);
	if (!w->intervals)
		w->from_s = t_s - interval_s;
	w->to_s = t_s;
	w->intervals++;
	w->seconds += interval_s;
}

void cli_rs_drift_free(struct cli_rs_drift *d)
{
	if (!d)
		return;
	win_destroy(&d->first);
	for (size_t i = 0; i < BUCKETS; i++)
		win_destroy(&d->ring[i]);
	win_destroy(&d->cur);
	win_destroy(&d->pending);
	free(d);
}

struct cli_rs_drift *cli_rs_drift_new(const struct cl_scn_drift *cfg, double ramp_s,
				      double duration_s, double interval_s)
{
	if (interval_s <= 0)
		return NULL;
	struct cli_rs_drift *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	int rc = win_init(&d->first) | win_init(&d->cur) | win_init(&d->pending);
	for (size_t i = 0; i < BUCKETS; i++)
		rc |= win_init(&d->ring[i]);
	if (rc != 0) {
		cli_rs_drift_free(d);
		return NULL;
	}
	/* The window: as configured, else a quarter of a timed stage, else a minute. */
	double window_s = cfg && cfg->window_us ? cfg->window_us / 1e6
			  : duration_s > 0      ? duration_s / 4
						: 60;
	double n = floor(window_s / interval_s + 0.5);
	d->window_intervals = n < 1 ? 1 : n > 1e9 ? 1000000000u : (uint32_t)n;
	d->bucket_intervals = (d->window_intervals + BUCKETS - 1) / BUCKETS;
	d->ramp_s = ramp_s;
	d->interval_s = interval_s;
	d->end_s = duration_s > 0 ? ramp_s + duration_s : INFINITY;
	d->until_end = duration_s <= 0;
	return d;
}

/* Moves one interval's window into the last-window buckets. */
static void take_last(struct cli_rs_drift *d, const struct win *w)
{
	win_add(&d->cur, w);
	if (d->cur.intervals < d->bucket_intervals)
		return;
	struct win *slot = &d->ring[d->ring_next];
	win_clear(slot, true);
	win_add(slot, &d->cur);
	d->ring_next = (d->ring_next + 1) % BUCKETS;
	if (d->ring_n < BUCKETS)
		d->ring_n++;
	win_clear(&d->cur, true);
}

void cli_rs_drift_add(struct cli_rs_drift *d, double t_s, double interval_s,
		      const struct cl_metrics *m)
{
	const double eps = 1e-6;
	/* Only whole intervals inside the measured window: not the ramp, not the drain. */
	if (!d || t_s - interval_s < d->ramp_s - eps || t_s > d->end_s + eps)
		return;
	d->measured++;
	if (d->first.intervals < d->window_intervals)
		win_add_metrics(&d->first, t_s, interval_s, m);
	if (!d->until_end) {
		win_clear(&d->pending, d->measured % PENDING_TRIM_EVERY == 0);
		win_add_metrics(&d->pending, t_s, interval_s, m);
		take_last(d, &d->pending);
		return;
	}
	/* Request-bound: the interval the stage ends in is partial, so each interval joins the
	 * last window only once the next one has come. */
	if (d->has_pending)
		take_last(d, &d->pending);
	win_clear(&d->pending, d->measured % PENDING_TRIM_EVERY == 0);
	win_add_metrics(&d->pending, t_s, interval_s, m);
	d->has_pending = true;
}

static json_t *win_json(const struct win *w)
{
	double s = w->seconds;
	uint64_t ended = w->completed + w->errors;
	return json_pack(
	    "{s:f,s:f,s:i,s:o,s:o,s:o,s:o,s:o}", "from_s", cli_rj_round(w->from_s, 3), "to_s",
	    cli_rj_round(w->to_s, 3), "intervals", (int)w->intervals, "requests_per_s",
	    cli_rj_real(s > 0 ? cli_rj_sig(w->completed_in_window / s, 6) : NAN),
	    "output_tokens_per_s", cli_rj_real(s > 0 ? cli_rj_sig(w->output_tokens / s, 6) : NAN),
	    "ttft_p99_ms",
	    cl_hist_count(&w->ttft) ? json_real(cl_hist_percentile(&w->ttft, 99) / 1000.0)
				    : json_null(),
	    "itl_p99_ms",
	    cl_hist_count(&w->itl) ? json_real(cl_hist_percentile(&w->itl, 99) / 1000.0)
				   : json_null(),
	    "error_rate",
	    ended ? json_real(cli_rj_sig((double)w->errors / ended, 6)) : json_null());
}

/* Relative change new/old - 1, NAN without both values. */
static double rel(double old, double now)
{
	return isfinite(old) && isfinite(now) && old > 0 ? now / old - 1 : NAN;
}

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* One max_drift check: measured is the move in the bad direction. */
static int add_check(json_t *checks, const char *key, const char *stage, double limit,
		     double measured)
{
	bool has = isfinite(measured);
	json_t *c = json_pack("{s:s,s:o,s:f,s:o,s:s,s:b,s:o}", "slo", key, "stage",
			      cli_rj_str(stage), "limit", limit, "measured",
			      has ? json_real(cli_rj_sig(measured, 4)) : json_null(), "unit",
			      "ratio", "pass", has && measured <= limit, "note",
			      has ? json_null() : json_string("no data in a window"));
	return cli_rj_append(checks, c);
}

json_t *cli_rs_drift_json(struct cli_rs_drift *d, const struct cl_scn_drift *cfg, const char *stage,
			  json_t *checks)
{
	if (!d)
		return json_null();
	struct win last;
	if (win_init(&last) != 0) {
		win_destroy(&last);
		return NULL;
	}
	/* The last window: the bucket filling, then full buckets back in time, until it holds
	 * a window's worth of intervals. */
	win_add(&last, &d->cur);
	for (uint32_t k = 0; k < d->ring_n && last.intervals < d->window_intervals; k++) {
		uint32_t i = (d->ring_next + BUCKETS - 1 - k) % BUCKETS;
		win_add(&last, &d->ring[i]);
	}
	uint32_t usable = d->measured - (d->until_end && d->has_pending ? 1 : 0);
	json_t *out;
	if (usable < 2 * d->window_intervals || last.intervals < d->window_intervals) {
		out = json_pack("{s:f,s:n,s:n,s:n,s:s}", "window_s",
				cli_rj_round(d->window_intervals * d->interval_s, 3), "first",
				"last", "change", "note", "the stage is shorter than two windows");
		win_destroy(&last);
		return out;
	}
	json_t *first = win_json(&d->first), *lastj = win_json(&last);
	win_destroy(&last);
	double tps = rel(num(first, "output_tokens_per_s"), num(lastj, "output_tokens_per_s"));
	double rps = rel(num(first, "requests_per_s"), num(lastj, "requests_per_s"));
	double ttft = rel(num(first, "ttft_p99_ms"), num(lastj, "ttft_p99_ms"));
	double itl = rel(num(first, "itl_p99_ms"), num(lastj, "itl_p99_ms"));
	double e0 = num(first, "error_rate"), e1 = num(lastj, "error_rate");
	double err = isfinite(e0) && isfinite(e1) ? e1 - e0 : NAN;
	json_t *change = json_pack(
	    "{s:o,s:o,s:o,s:o,s:o}", "output_tokens_per_s", cli_rj_real(cli_rj_sig(tps, 4)),
	    "requests_per_s", cli_rj_real(cli_rj_sig(rps, 4)), "ttft_p99",
	    cli_rj_real(cli_rj_sig(ttft, 4)), "itl_p99", cli_rj_real(cli_rj_sig(itl, 4)),
	    "error_rate", cli_rj_real(cli_rj_sig(err, 4)));
	out = json_pack("{s:f,s:o,s:o,s:o,s:n}", "window_s", cli_rj_round(d->first.seconds, 3),
			"first", first, "last", lastj, "change", change, "note");
	if (!out)
		return NULL;
	int rc = 0;
	if (cfg && cfg->set && checks) {
		if (!isnan(cfg->output_tokens_per_s))
			rc |= add_check(checks, "max_drift.output_tokens_per_s", stage,
					cfg->output_tokens_per_s, isfinite(tps) ? -tps : NAN);
		if (!isnan(cfg->ttft_p99))
			rc |= add_check(checks, "max_drift.ttft_p99", stage, cfg->ttft_p99, ttft);
		if (!isnan(cfg->itl_p99))
			rc |= add_check(checks, "max_drift.itl_p99", stage, cfg->itl_p99, itl);
		if (!isnan(cfg->error_rate))
			rc |=
			    add_check(checks, "max_drift.error_rate", stage, cfg->error_rate, err);
	}
	if (rc) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* ---- slo.abort_on_breach: { intervals: N } ---- */

void cli_rs_interval_breach(const struct cl_results *r, struct stage_state *ss, double t_s,
			    const struct cl_metrics *m, double interval_s)
{
	/* Ramp and drain intervals measure a partial load (requests started in the ramp are
	 * not counted): they neither breach nor break a streak. */
	const double eps = 1e-6;
	if (t_s - interval_s < ss->ramp_s - eps ||
	    (ss->duration_s > 0 && t_s > ss->ramp_s + ss->duration_s + eps))
		return;
	bool judged = false;
	for (size_t i = 0; i < r->n_slos; i++) {
		const struct cl_scn_slo *slo = &r->slos[i];
		if (!cl_verdict_applies(slo, ss->name))
			continue;
		bool has_data;
		double v = cl_verdict_measure(slo, m, interval_s, &has_data);
		/* An interval without a latency sample (long requests, a short interval), or in
		 * which no request ended, says nothing either way; the stage's own verdict still
		 * judges every SLO. */
		if (slo->kind == CL_SLO_ERROR_RATE &&
		    m->ctr[CL_CTR_COMPLETED] + cl_verdict_errors(m) == 0)
			has_data = false;
		if (!has_data)
			continue;
		judged = true;
		if (cl_verdict_passes(slo, v, has_data))
			continue;
		ss->breach_streak++;
		snprintf(ss->breach_why, sizeof(ss->breach_why), "%s: %g %s, limit %g %s", slo->key,
			 cli_rj_sig(cl_verdict_to_unit(slo, v), 6), cl_verdict_unit(slo),
			 cl_verdict_to_unit(slo, slo->limit), cl_verdict_unit(slo));
		return;
	}
	if (judged) {
		ss->breach_streak = 0;
		ss->breach_why[0] = '\0';
	}
}

uint32_t cl_results_breach_streak(const struct cl_results *r, size_t stage, char *why, size_t n)
{
	if (stage >= r->n_stages || r->stages[stage].finished || r->stages[stage].probe)
		return 0;
	const struct stage_state *ss = &r->stages[stage];
	if (ss->breach_streak && why && n)
		snprintf(why, n, "%s", ss->breach_why);
	return ss->breach_streak;
}
