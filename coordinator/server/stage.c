/* A stage's server figures in the common vocabulary: totals with restarts added up, and the
 * per-stage summary of docs/results.md's stages[].server. */
#include "internal.h"

#include <math.h>
#include <string.h>

/* Adds one counter's step; returns true when it went down (a restart).  new_process: the
 * server is another process (its start time changed), whose counters began at 0. */
static bool step(double *cum, double prev, double now, bool new_process)
{
	if (isnan(now) || isnan(prev))
		return false;
	if (now < prev || new_process) {
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
		      const struct cl_srv_hist *now, bool new_process)
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
	bool restart = now->count[now->n - 1] < prev->count[prev->n - 1] || new_process;
	for (uint32_t i = 0; i < now->n; i++)
		cum->count[i] += restart ? now->count[i] : now->count[i] - prev->count[i];
	cum->sum += restart ? now->sum : now->sum - prev->sum;
	return restart;
}

static const struct cl_srv_model_hists *find_model(const struct cl_srv_model_hists *m, uint32_t n,
						   const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0)
			return &m[i];
	return NULL;
}

/* One histogram of a model_name: as hist_step, except that a series the previous scrape did
 * not have is new on the page, so it counted from 0 (Prometheus' series are born at 0):
 * what it holds already is counted. */
static bool model_hist_step(struct cl_srv_hist *cum, const struct cl_srv_hist *prev,
			    const struct cl_srv_hist *now, bool have_prev, bool new_process)
{
	if (have_prev && !prev && now->n && cum->n == 0) {
		*cum = *now;
		return false;
	}
	return hist_step(cum, prev, now, new_process);
}

/* Each model_name's histograms added to cum's (new names take a slot while there is one). */
static bool models_step(struct cl_srv_mark *cum, const struct cl_srv_snap *prev,
			const struct cl_srv_snap *snap, bool new_process)
{
	bool r = false;
	for (uint32_t i = 0; i < snap->n_models; i++) {
		const struct cl_srv_model_hists *now = &snap->models[i];
		struct cl_srv_model_hists *c =
		    (struct cl_srv_model_hists *)find_model(cum->models, cum->n_models, now->name);
		if (!c && cum->n_models < CL_SRV_MAX_MODELS) {
			c = &cum->models[cum->n_models++];
			memset(c, 0, sizeof(*c));
			snprintf(c->name, sizeof(c->name), "%s", now->name);
		}
		if (!c)
			continue;
		const struct cl_srv_model_hists *p =
		    prev ? find_model(prev->models, prev->n_models, now->name) : NULL;
		r |= model_hist_step(&c->ttft, p ? &p->ttft : NULL, &now->ttft, prev != NULL,
				     new_process);
		r |= model_hist_step(&c->queue, p ? &p->queue : NULL, &now->queue, prev != NULL,
				     new_process);
		r |= model_hist_step(&c->e2e, p ? &p->e2e : NULL, &now->e2e, prev != NULL,
				     new_process);
	}
	return r;
}

bool cli_srv_new_process(const struct cl_srv_snap *prev, const struct cl_srv_snap *snap)
{
	return !isnan(prev->start_time_s) && !isnan(snap->start_time_s) &&
	       fabs(snap->start_time_s - prev->start_time_s) >= 0.5;
}

enum cl_srv_restart cli_srv_accumulate(struct cl_srv_mark *cum, const struct cl_srv_snap *prev,
				       const struct cl_srv_snap *snap, bool counters_down)
{
	if (snap->engine != CL_SRV_UNKNOWN)
		cum->engine = snap->engine;
	if (!prev) {
		hist_step(&cum->ttft, NULL, &snap->ttft, false);
		hist_step(&cum->queue, NULL, &snap->queue, false);
		hist_step(&cum->e2e, NULL, &snap->e2e, false);
		models_step(cum, NULL, snap, false);
		return CL_SRV_NO_RESTART;
	}
	/* A new process whose counters have already passed the old ones' values shows no
	 * drop; its start time tells, and its counters count from 0.  Prometheus' clients
	 * print it to the second or finer, and it does not move while the process lives. */
	bool start = cli_srv_new_process(prev, snap);
	bool np = start || counters_down;
	bool r = false;
	r |= step(&cum->prefix_queries, prev->prefix_queries, snap->prefix_queries, np);
	r |= step(&cum->prefix_hits, prev->prefix_hits, snap->prefix_hits, np);
	r |= step(&cum->preemptions, prev->preemptions, snap->preemptions, np);
	r |= step(&cum->spec_accepted, prev->spec_accepted, snap->spec_accepted, np);
	r |= step(&cum->spec_draft, prev->spec_draft, snap->spec_draft, np);
	r |= step(&cum->aborted, prev->aborted, snap->aborted, np);
	r |= hist_step(&cum->ttft, &prev->ttft, &snap->ttft, np);
	r |= hist_step(&cum->queue, &prev->queue, &snap->queue, np);
	r |= hist_step(&cum->e2e, &prev->e2e, &snap->e2e, np);
	models_step(cum, prev, snap, np); /* the page's restart is told by the totals */
	if (r || np)
		cum->restarts++;
	if (start)
		return CL_SRV_RESTART_START_TIME;
	return r || counters_down ? CL_SRV_RESTART_COUNTER : CL_SRV_NO_RESTART;
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

/* stages[].server.models: each model_name's TTFT, queue time and E2E over the stage (b − a;
 * a name new since a counts from 0). */
static json_t *models_json(const struct cl_srv_mark *a, const struct cl_srv_mark *b)
{
	static const struct cl_srv_model_hists none;
	json_t *arr = json_array();
	for (uint32_t i = 0; arr && i < b->n_models; i++) {
		const struct cl_srv_model_hists *m = &b->models[i];
		const struct cl_srv_model_hists *f = find_model(a->models, a->n_models, m->name);
		if (!f)
			f = &none;
		json_t *o = json_pack("{s:s,s:o,s:o,s:o}", "model_name", m->name, "ttft_ms",
				      hist_json(&f->ttft, &m->ttft), "queue_time_ms",
				      hist_json(&f->queue, &m->queue), "e2e_ms",
				      hist_json(&f->e2e, &m->e2e));
		if (!o || json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	return arr;
}

static json_t *ratio(double num_, double den)
{
	return den > 0 && isfinite(num_) ? num(num_ / den, 1) : json_null();
}

static json_t *fnum(float v)
{
	return isfinite(v) ? json_real(round((double)v * 1e4) / 1e4) : json_null();
}

/* The scrapes between the marks, at most CLI_SRV_TIMELINE_MAX of them (a longer stage keeps
 * every k-th scrape, with the largest gauge and the summed preemptions of the k, so a spike
 * is not lost), as columns; restarts as their own list.  sc->mu held. */
static json_t *timeline_json(struct cl_srv_scrape *sc, size_t from, size_t to, int64_t start_us)
{
	size_t n = to > from ? to - from : 0;
	size_t stride =
	    n > CLI_SRV_TIMELINE_MAX ? (n + CLI_SRV_TIMELINE_MAX - 1) / CLI_SRV_TIMELINE_MAX : 1;
	json_t *t = json_array(), *run = json_array(), *wait = json_array(), *kv = json_array(),
	       *hit = json_array(), *pre = json_array(), *rs = json_array();
	json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:i}", "t_s", t, "running", run,
			      "waiting", wait, "kv_cache_usage", kv, "prefix_cache_hit_rate", hit,
			      "preemptions", pre, "restarts_at_s", rs, "stride", (int)stride);
	if (!o)
		return NULL;
	for (size_t i = from; i < to; i += stride) {
		struct cl_srv_point g = sc->points[i];
		for (size_t j = i + 1; j < i + stride && j < to; j++) {
			const struct cl_srv_point *p = &sc->points[j];
			g.running =
			    isnan(g.running) || p->running > g.running ? p->running : g.running;
			g.waiting =
			    isnan(g.waiting) || p->waiting > g.waiting ? p->waiting : g.waiting;
			g.kv_usage = isnan(g.kv_usage) || p->kv_usage > g.kv_usage ? p->kv_usage
										   : g.kv_usage;
			if (!isnan(p->preemptions))
				g.preemptions = isnan(g.preemptions)
						    ? p->preemptions
						    : g.preemptions + p->preemptions;
		}
		double ts = round((double)(g.t_us - start_us) / 1e3) / 1e3;
		json_array_append_new(t, json_real(ts));
		json_array_append_new(run, fnum(g.running));
		json_array_append_new(wait, fnum(g.waiting));
		json_array_append_new(kv, fnum(g.kv_usage));
		json_array_append_new(hit, fnum(g.prefix_hit_rate));
		json_array_append_new(pre, fnum(g.preemptions));
	}
	for (size_t i = from; i < to; i++)
		if (sc->points[i].restart)
			json_array_append_new(
			    rs,
			    json_real(round((double)(sc->points[i].t_us - start_us) / 1e3) / 1e3));
	return o;
}

/* What the GPUs drew over the window: the energy counter's rise between the first and the
 * last scrape inside it, over the time between them (exact for a counter however often it
 * was scraped), else the mean of the power gauge's readings in it.  The counter is refused
 * when it went down or the GPUs it sums changed between the two (an exporter restarted, a
 * GPU's series lost): then the gauge answers, or nothing.  NULL-free: json null when neither
 * is offered.  sc->mu held. */
static json_t *energy_json(const struct cl_srv_scrape *sc, size_t from, size_t to, int64_t from_us,
			   int64_t to_us)
{
	const struct cl_srv_point *first = NULL, *last = NULL;
	bool counter_ok = true;
	struct gauge pw = { 0 };
	for (size_t i = from; i < to; i++) {
		const struct cl_srv_point *p = &sc->points[i];
		if (p->t_us < from_us || (to_us && p->t_us > to_us))
			continue;
		gauge_add(&pw, p->gpu_power_w);
		if (!isfinite(p->gpu_energy_j))
			continue;
		if (last &&
		    (p->gpu_energy_j < last->gpu_energy_j || p->gpu_count != last->gpu_count))
			counter_ok = false;
		if (!first)
			first = p;
		last = p;
	}
	if (counter_ok && first && last != first && last->t_us > first->t_us) {
		double secs = (last->t_us - first->t_us) / 1e6;
		double joules = last->gpu_energy_j - first->gpu_energy_j;
		return json_pack("{s:s,s:o,s:o,s:o,s:i}", "source", "energy_counter", "power_w",
				 num(joules / secs, 1), "joules", num(joules, 1), "over_s",
				 num(secs, 1), "gpus", (int)last->gpu_count);
	}
	if (pw.n)
		return json_pack("{s:s,s:o,s:n,s:n,s:i}", "source", "power_usage", "power_w",
				 num(pw.sum / pw.n, 1), "joules", "over_s", "gpus",
				 (int)sc->points[to - 1].gpu_count);
	return json_null();
}

json_t *cl_srv_scrape_stage_json(struct cl_srv_scrape *sc, const struct cl_srv_mark *a,
				 const struct cl_srv_mark *b, int64_t start_us, int64_t from_us,
				 int64_t to_us)
{
	struct gauge run = { 0 }, wait = { 0 }, kv = { 0 }, prate = { 0 }, gu = { 0 }, gm = { 0 },
		     gf = { 0 };
	uint32_t restarts_seen = 0;
	pthread_mutex_lock(&sc->mu);
	struct cl_srv_snap last = sc->prev; /* which counters the server offers */
	size_t to_point = b->point < sc->n_points ? b->point : sc->n_points;
	for (size_t i = a->point; i < to_point; i++) {
		const struct cl_srv_point *p = &sc->points[i];
		restarts_seen += p->restart != CL_SRV_NO_RESTART;
		if (p->t_us < from_us || (to_us && p->t_us > to_us))
			continue;
		gauge_add(&run, p->running);
		gauge_add(&wait, p->waiting);
		gauge_add(&kv, p->kv_usage);
		gauge_add(&prate, p->prefix_hit_rate);
		gauge_add(&gu, p->gpu_util);
		gauge_add(&gm, p->gpu_mem_used);
		gauge_add(&gf, p->gpu_mem_fraction);
	}
	json_t *timeline = timeline_json(sc, a->point, to_point, start_us);
	json_t *extra = cli_srv_extra_stage_json(sc, a->point, to_point, from_us, to_us);
	json_t *energy = energy_json(sc, a->point, to_point, from_us, to_us);
	pthread_mutex_unlock(&sc->mu);
	double secs = (b->t_us - a->t_us) / 1e6;
	double dq = b->prefix_queries - a->prefix_queries, dh = b->prefix_hits - a->prefix_hits;
	/* The gauge of SGLang's kind where the server offers no counters (the points then hold
	 * it, not a ratio of counters). */
	json_t *hit = !isnan(last.prefix_queries) ? ratio(dh, dq)
		      : prate.n                   ? num(prate.sum / prate.n, 1)
						  : json_null();
	double dp = b->preemptions - a->preemptions;
	bool has_p = !isnan(last.preemptions);
	uint32_t ok = b->scrapes_ok - a->scrapes_ok;
	json_t *o = json_pack(
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
	/* Requests the server says it aborted (its client went away), to sit beside the
	 * requests chatload abandoned (requests.cancelled); null where the server says nothing. */
	bool has_ab = !isnan(last.aborted);
	if (o && json_object_set_new(o, "aborted_requests",
				     has_ab ? num(b->aborted - a->aborted, 1) : json_null())) {
		json_decref(o);
		o = NULL;
	}
	if (!o || !timeline || !extra || !energy) {
		json_decref(o);
		json_decref(timeline);
		json_decref(extra);
		json_decref(energy);
		return NULL;
	}
	/* The window the gauges are over, on the timeline's clock; set_new takes the value
	 * even when it fails. */
	int64_t end_us = to_us ? to_us : b->t_us;
	json_t *win = json_pack("[f,f]", round((double)(from_us - start_us) / 1e3) / 1e3,
				round((double)(end_us - start_us) / 1e3) / 1e3);
	if (json_object_set_new(o, "gauge_window_s", win) ||
	    json_object_set_new(o, "timeline", timeline) ||
	    json_object_set_new(o, "series", extra) ||
	    json_object_set_new(o, "gpu_utilization", gauge_json(&gu)) ||
	    json_object_set_new(o, "gpu_memory_used_bytes", gauge_json(&gm)) ||
	    json_object_set_new(o, "gpu_memory_usage", gauge_json(&gf)) ||
	    json_object_set_new(o, "gpu_energy", energy) ||
	    (b->n_models && json_object_set_new(o, "models", models_json(a, b)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}
