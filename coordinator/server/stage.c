/* A stage's server figures in the common vocabulary: totals with restarts added up, and the
 * per-stage summary of docs/results.md's stages[].server. */
#include "internal.h"

#include <math.h>
#include <string.h>

/* Adds one counter's step; returns true when it went down (a restart). */
static bool step(double *cum, double prev, double now)
{
	if (isnan(now) || isnan(prev))
		return false;
	if (now < prev) {
		*cum += now; /* the server restarted: count from its new value */
		return true;
	}
	*cum += now - prev;
	return false;
}

static bool same_layout(const struct cl_srv_hist *a, const struct cl_srv_hist *b)
{
	return a->n == b->n && memcmp(a->le, b->le, a->n * sizeof(double)) == 0;
}

static bool hist_step(struct cl_srv_hist *cum, const struct cl_srv_hist *prev,
		      const struct cl_srv_hist *now)
{
	if (now->n == 0)
		return false;
	if (cum->n == 0 || !same_layout(cum, now)) {
		/* First sight, or the buckets changed (a new server): start again from here. */
		*cum = *now;
		memset(cum->count, 0, sizeof(cum->count));
		cum->sum = 0;
		return false;
	}
	if (!prev || !same_layout(prev, now))
		return false;
	bool restart = now->count[now->n - 1] < prev->count[prev->n - 1];
	for (uint32_t i = 0; i < now->n; i++)
		cum->count[i] += restart ? now->count[i] : now->count[i] - prev->count[i];
	cum->sum += restart ? now->sum : now->sum - prev->sum;
	return restart;
}

bool cli_srv_accumulate(struct cl_srv_mark *cum, const struct cl_srv_snap *prev,
			const struct cl_srv_snap *snap)
{
	if (snap->engine != CL_SRV_UNKNOWN)
		cum->engine = snap->engine;
	if (!prev) {
		hist_step(&cum->ttft, NULL, &snap->ttft);
		hist_step(&cum->queue, NULL, &snap->queue);
		hist_step(&cum->e2e, NULL, &snap->e2e);
		return false;
	}
	bool r = false;
	r |= step(&cum->prefix_queries, prev->prefix_queries, snap->prefix_queries);
	r |= step(&cum->prefix_hits, prev->prefix_hits, snap->prefix_hits);
	r |= step(&cum->preemptions, prev->preemptions, snap->preemptions);
	r |= step(&cum->spec_accepted, prev->spec_accepted, snap->spec_accepted);
	r |= step(&cum->spec_draft, prev->spec_draft, snap->spec_draft);
	r |= hist_step(&cum->ttft, &prev->ttft, &snap->ttft);
	r |= hist_step(&cum->queue, &prev->queue, &snap->queue);
	r |= hist_step(&cum->e2e, &prev->e2e, &snap->e2e);
	if (r)
		cum->restarts++;
	return r;
}

static json_t *num(double v, double scale)
{
	return isfinite(v) ? json_real(round(v * scale * 1e4) / 1e4) : json_null();
}

struct gauge {
	double sum, max;
	size_t n;
};

static void gauge_add(struct gauge *g, float v)
{
	if (isnan(v))
		return;
	g->sum += v;
	g->max = g->n == 0 || v > g->max ? v : g->max;
	g->n++;
}

static json_t *gauge_json(const struct gauge *g)
{
	return json_pack("{s:o,s:o}", "mean", g->n ? num(g->sum / g->n, 1) : json_null(), "max",
			 g->n ? num(g->max, 1) : json_null());
}

/* p50/p99 of b − a in ms; nulls when either mark lacks it or the buckets changed. */
static json_t *hist_json(const struct cl_srv_hist *a, const struct cl_srv_hist *b)
{
	struct cl_srv_hist d = *b;
	if (a->n && !same_layout(a, b))
		d.n = 0;
	for (uint32_t i = 0; a->n && i < d.n; i++)
		d.count[i] -= a->count[i];
	if (a->n && d.n)
		d.sum -= a->sum;
	double count = d.n ? d.count[d.n - 1] : 0;
	if (count > 0 && d.sum <= 0) /* durations: a zero sum means every one was 0, whatever
				      * the first bucket's width says */
		return json_pack("{s:f,s:f,s:f,s:f}", "count", count, "mean", 0.0, "p50", 0.0,
				 "p99", 0.0);
	/* The mean is exact (from _sum and _count); the quantiles only as fine as the buckets. */
	return json_pack("{s:o,s:o,s:o,s:o}", "count", d.n ? json_real(count) : json_null(), "mean",
			 count > 0 ? num(d.sum / count, 1000) : json_null(), "p50",
			 num(cl_srv_hist_quantile(&d, 0.5), 1000), "p99",
			 num(cl_srv_hist_quantile(&d, 0.99), 1000));
}

static json_t *ratio(double num_, double den)
{
	return den > 0 && isfinite(num_) ? num(num_ / den, 1) : json_null();
}

json_t *cl_srv_scrape_stage_json(struct cl_srv_scrape *sc, const struct cl_srv_mark *a,
				 const struct cl_srv_mark *b, int64_t from_us, int64_t to_us)
{
	struct gauge run = { 0 }, wait = { 0 }, kv = { 0 }, prate = { 0 };
	uint32_t restarts_seen = 0;
	pthread_mutex_lock(&sc->mu);
	struct cl_srv_snap last = sc->prev; /* which counters the server offers */
	for (size_t i = a->point; i < b->point && i < sc->n_points; i++) {
		const struct cl_srv_point *p = &sc->points[i];
		restarts_seen += p->restart;
		if (p->t_us < from_us || (to_us && p->t_us > to_us))
			continue;
		gauge_add(&run, p->running);
		gauge_add(&wait, p->waiting);
		gauge_add(&kv, p->kv_usage);
		gauge_add(&prate, p->prefix_hit_rate);
	}
	pthread_mutex_unlock(&sc->mu);
	double secs = (b->t_us - a->t_us) / 1e6;
	double dq = b->prefix_queries - a->prefix_queries, dh = b->prefix_hits - a->prefix_hits;
	json_t *hit = !isnan(last.prefix_queries) ? ratio(dh, dq)
		      : prate.n                   ? num(prate.sum / prate.n, 1)
						  : json_null();
	double dp = b->preemptions - a->preemptions;
	bool has_p = !isnan(last.preemptions);
	uint32_t ok = b->scrapes_ok - a->scrapes_ok;
	return json_pack(
	    "{s:o,s:s,s:i,s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "source",
	    ok ? json_string(cl_srv_engine_name(b->engine)) : json_null(), "url", sc->url,
	    "scrapes", (int)ok, "scrapes_failed", (int)(b->scrapes_failed - a->scrapes_failed),
	    "restarts", (int)restarts_seen, "requests_running", gauge_json(&run),
	    "requests_waiting", gauge_json(&wait), "kv_cache_usage", gauge_json(&kv),
	    "prefix_cache_hit_rate", hit, "preemptions", has_p ? num(dp, 1) : json_null(),
	    "preemptions_per_s", has_p && secs > 0 ? num(dp / secs, 1) : json_null(), "ttft_ms",
	    hist_json(&a->ttft, &b->ttft), "queue_time_ms", hist_json(&a->queue, &b->queue),
	    "e2e_ms", hist_json(&a->e2e, &b->e2e), "spec_acceptance",
	    !isnan(last.spec_draft)
		? ratio(b->spec_accepted - a->spec_accepted, b->spec_draft - a->spec_draft)
		: json_null());
}
