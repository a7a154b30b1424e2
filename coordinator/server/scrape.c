/* The scraping thread (scrape.h): GET /metrics every interval, decode, accumulate. */
#include "internal.h"

#include "chatload/buf.h"
#include "chatload/clock.h"
#include "chatload/err.h"
#include "chatload/log.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cl_srv_metrics_url(const char *base, char *out, size_t n)
{
	CURLU *u = curl_url();
	char *s = NULL;
	int rc = CL_EINVAL;
	/* Let the library that connects decide what the URL is (STYLE: one parse). */
	if (u && curl_url_set(u, CURLUPART_URL, base, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_PATH, "/metrics", 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_QUERY, NULL, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK && strlen(s) < n) {
		memcpy(out, s, strlen(s) + 1);
		rc = 0;
	}
	curl_free(s);
	curl_url_cleanup(u);
	return rc;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct cl_buf *b = arg;
	size_t n = size * nmemb;
	return cl_buf_append(b, p, n) == 0 ? n : 0; /* past the cap: the transfer fails */
}

static void warn_once(struct cl_srv_scrape *sc, const char *what)
{
	pthread_mutex_lock(&sc->mu);
	bool first = !sc->warned;
	sc->warned = true;
	if (first)
		snprintf(sc->first_error, sizeof(sc->first_error), "%s", what);
	pthread_mutex_unlock(&sc->mu);
	/* A URL the scenario gave is expected to work: say so loudly, once, and go on (the
	 * issue's rule: a /metrics that fails never fails the run). */
	if (first && !sc->quiet)
		CL_WARN("server metrics: cannot read '%s': %s; the run goes on, its server "
			"figures recorded as unavailable or partial (target.server_metrics)",
			sc->url, what);
	else if (first)
		CL_INFO("server metrics: %s from '%s' (target.server_metrics auto)", what, sc->url);
}

/* One scrape: fetch, decode, map; into the timeline and the totals. */
static void scrape_once(struct cl_srv_scrape *sc, CURL *h, struct cl_buf *body)
{
	struct cl_srv_snap snap = { .t_us = cl_mono_us() };
	cl_buf_reset(body);
	CURLcode cc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	struct cl_prom_page pg = { 0 };
	char why[160] = "";
	if (cc != CURLE_OK)
		snprintf(why, sizeof(why), "cannot read the page: %s", curl_easy_strerror(cc));
	else if (status != 200)
		snprintf(why, sizeof(why), "HTTP %ld", status);
	else if (cl_prom_parse(body->data ? body->data : "", body->len, &pg, NULL) != 0)
		snprintf(why, sizeof(why), "the page could not be decoded");
	else if (pg.bad_lines)
		snprintf(why, sizeof(why), "%zu malformed lines (first: %s)", pg.bad_lines,
			 pg.first_bad);
	/* Always read, an empty page too: what is missing is then NAN, never 0 (a zeroed
	 * start time would read as a new process). */
	cl_srv_vocab_read(&pg, &snap);
	if (why[0])
		warn_once(sc, why);
	bool ok = cc == CURLE_OK && status == 200;
	/* Outside the lock: the page's counters by name, for a restart the vocabulary cannot
	 * see (llama.cpp offers none of its counters). */
	bool down = ok && cli_srv_counters_update(&sc->counters, &pg);
	pthread_mutex_lock(&sc->mu);
	sc->last_ok = ok;
	if (!ok) {
		sc->cum.scrapes_failed++;
	} else {
		sc->cum.scrapes_ok++;
		struct cl_srv_mark before = sc->cum;
		enum cl_srv_restart restart =
		    sc->have_prev ? cli_srv_accumulate(&sc->cum, &sc->prev, &snap, down)
				  : cli_srv_accumulate(&sc->cum, NULL, &snap, false);
		/* This scrape's share of the counters: the hit ratio and the preemptions of the
		 * last interval, for the timeline (NAN before a second scrape). */
		double dq = sc->cum.prefix_queries - before.prefix_queries;
		double dh = sc->cum.prefix_hits - before.prefix_hits;
		float hit = !isnan(snap.prefix_queries)
				? (sc->have_prev && dq > 0 ? (float)(dh / dq) : NAN)
				: (float)snap.prefix_hit_rate;
		float pre = !isnan(snap.preemptions) && sc->have_prev
				? (float)(sc->cum.preemptions - before.preemptions)
				: NAN;
		sc->prev = snap;
		sc->have_prev = true;
		if (sc->n_points < CLI_SRV_MAX_POINTS) {
			sc->points[sc->n_points] = (struct cl_srv_point){
				.t_us = snap.t_us,
				.running = (float)snap.running,
				.waiting = (float)snap.waiting,
				.kv_usage = (float)snap.kv_usage,
				.prefix_hit_rate = hit,
				.preemptions = pre,
				.restart = (uint8_t)restart,
			};
			if (sc->n_extra)
				cli_srv_extra_record(sc, &pg, sc->n_points,
						     restart != CL_SRV_NO_RESTART);
			sc->n_points++;
		}
	}
	cl_prom_page_free(&pg);
	sc->cum.t_us = snap.t_us;
	sc->attempts++;
	sc->busy = false;
	pthread_cond_broadcast(&sc->done);
	pthread_mutex_unlock(&sc->mu);
}

static void *scrape_main(void *arg)
{
	struct cl_srv_scrape *sc = arg;
	struct cl_buf body;
	cl_buf_init(&body, CL_PROM_MAX_PAGE);
	CURL *h = curl_easy_init();
	if (!h) {
		warn_once(sc, "cannot create a libcurl handle");
		return NULL;
	}
	long timeout_ms = (long)(sc->interval_us / 2000);
	if (timeout_ms > 2000)
		timeout_ms = 2000;
	curl_easy_setopt(h, CURLOPT_URL, sc->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CL_PROM_MAX_PAGE);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (sc->headers)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, sc->headers);
	pthread_mutex_lock(&sc->mu);
	while (!sc->stop) {
		sc->now = false;
		sc->busy = true;
		pthread_mutex_unlock(&sc->mu);
		int64_t next = cl_mono_us() + sc->interval_us;
		scrape_once(sc, h, &body);
		pthread_mutex_lock(&sc->mu);
		/* Fixed interval from each scrape's start; the condition wakes us to stop. */
		while (!sc->stop && !sc->now && cl_mono_us() < next) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			int64_t left = next - cl_mono_us();
			if (left <= 0)
				break;
			ts.tv_sec += left / 1000000;
			ts.tv_nsec += (left % 1000000) * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&sc->cv, &sc->mu, &ts);
		}
	}
	pthread_mutex_unlock(&sc->mu);
	curl_easy_cleanup(h);
	cl_buf_free(&body);
	return NULL;
}

int cl_srv_scrape_start(const struct cl_srv_scrape_opts *o, struct cl_srv_scrape **out)
{
	*out = NULL;
	struct cl_srv_scrape *sc = calloc(1, sizeof(*sc));
	if (!sc)
		return CL_ENOMEM;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&sc->mu, NULL);
	pthread_cond_init(&sc->cv, &ca);
	pthread_cond_init(&sc->done, &ca);
	pthread_condattr_destroy(&ca);
	int rc = CL_ENOMEM;
	if (strlen(o->url) >= sizeof(sc->url) ||
	    !(sc->points = malloc(CLI_SRV_MAX_POINTS * sizeof(*sc->points))))
		goto fail;
	snprintf(sc->url, sizeof(sc->url), "%s", o->url);
	sc->interval_us = o->interval_us > 0 ? o->interval_us : 1000000;
	sc->quiet = o->quiet;
	sc->t_start_us = cl_mono_us();
	for (size_t i = 0; i < o->n_headers; i++) {
		struct curl_slist *l = curl_slist_append(sc->headers, o->headers[i]);
		if (!l)
			goto fail;
		sc->headers = l;
	}
	if (o->n_extra) {
		sc->extra = calloc(o->n_extra, sizeof(*sc->extra));
		sc->extra_found = calloc(o->n_extra, sizeof(*sc->extra_found));
		if (!sc->extra || !sc->extra_found)
			goto fail;
		for (; sc->n_extra < o->n_extra; sc->n_extra++)
			if (!(sc->extra[sc->n_extra] = strdup(o->extra[sc->n_extra])))
				goto fail;
	}
	rc = CL_ESYS;
	if (pthread_create(&sc->thread, NULL, scrape_main, sc) != 0)
		goto fail;
	sc->started = true;
	*out = sc;
	return 0;
fail:
	cl_srv_scrape_stop(sc);
	return rc;
}

const char *cl_srv_scrape_url(const struct cl_srv_scrape *sc)
{
	return sc->url;
}

void cl_srv_scrape_latest(struct cl_srv_scrape *sc, struct cl_srv_latest *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&sc->mu);
	out->up = sc->last_ok && sc->attempts > 0;
	out->have = sc->have_prev;
	out->engine = sc->cum.engine;
	out->scrapes_ok = sc->cum.scrapes_ok;
	out->scrapes_failed = sc->cum.scrapes_failed;
	out->restarts = sc->cum.restarts;
	const struct cl_srv_point *p = sc->n_points ? &sc->points[sc->n_points - 1] : NULL;
	out->running = p ? p->running : NAN;
	out->waiting = p ? p->waiting : NAN;
	out->kv_usage = p ? p->kv_usage : NAN;
	out->prefix_hit_rate = p ? p->prefix_hit_rate : NAN;
	out->preemptions =
	    sc->have_prev && !isnan(sc->prev.preemptions) ? sc->cum.preemptions : NAN;
	pthread_mutex_unlock(&sc->mu);
}

json_t *cl_srv_scrape_run_json(struct cl_srv_scrape *sc, const char *mode, int64_t t0_us)
{
	pthread_mutex_lock(&sc->mu);
	json_t *restarts = json_array(), *req = json_array(), *kept = json_array(),
	       *missing = json_array();
	for (size_t i = 0; i < sc->n_points; i++) {
		const struct cl_srv_point *p = &sc->points[i];
		if (p->restart)
			json_array_append_new(restarts,
					      json_pack("{s:f,s:s}", "t_s",
							round((p->t_us - t0_us) / 1e3) / 1e3, "why",
							p->restart == CL_SRV_RESTART_COUNTER
							    ? "counter_reset"
							    : "start_time"));
	}
	for (size_t i = 0; i < sc->n_extra; i++) {
		json_array_append_new(req, json_string(sc->extra[i]));
		if (!sc->extra_found[i])
			json_array_append_new(missing, json_string(sc->extra[i]));
	}
	for (size_t k = 0; k < sc->n_xs; k++) {
		char key[1200];
		snprintf(key, sizeof(key), "%s%s%s%s", sc->xs[k].name, *sc->xs[k].labels ? "{" : "",
			 sc->xs[k].labels, *sc->xs[k].labels ? "}" : "");
		json_array_append_new(kept, json_string(key));
	}
	bool any = sc->cum.scrapes_ok > 0;
	json_t *o = json_pack(
	    "{s:s,s:s,s:f,s:b,s:o,s:i,s:i,s:o,s:i,s:o,s:{s:o,s:o,s:o,s:b}}", "mode", mode, "url",
	    sc->url, "interval_s", sc->interval_us / 1e6, "available", any, "error",
	    sc->first_error[0] ? json_string(sc->first_error) : json_null(), "scrapes",
	    (int)sc->cum.scrapes_ok, "scrapes_failed", (int)sc->cum.scrapes_failed, "source",
	    any ? json_string(cl_srv_engine_name(sc->cum.engine)) : json_null(), "restarts_total",
	    (int)sc->cum.restarts, "restarts", restarts, "extra", "requested", req, "kept", kept,
	    "not_found", missing, "dropped", sc->xs_dropped);
	pthread_mutex_unlock(&sc->mu);
	return o;
}

void cl_srv_scrape_mark(struct cl_srv_scrape *sc, struct cl_srv_mark *m, int64_t wait_us)
{
	pthread_mutex_lock(&sc->mu);
	if (wait_us > 0) {
		/* A scrape that starts now, waited for at most wait_us: the mark then holds every
		 * request that ended before it, not those of up to one interval ago. */
		uint64_t want = sc->attempts + (sc->busy ? 2 : 1); /* not one begun before */
		sc->now = true;
		pthread_cond_signal(&sc->cv);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += wait_us / 1000000;
		ts.tv_nsec += (wait_us % 1000000) * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (!sc->stop && sc->attempts < want)
			if (pthread_cond_timedwait(&sc->done, &sc->mu, &ts) == ETIMEDOUT)
				break;
	}
	*m = sc->cum;
	m->point = sc->n_points;
	pthread_mutex_unlock(&sc->mu);
	m->t_us = cl_mono_us();
}

void cl_srv_scrape_stop(struct cl_srv_scrape *sc)
{
	if (!sc)
		return;
	if (sc->started) {
		pthread_mutex_lock(&sc->mu);
		sc->stop = true;
		pthread_cond_signal(&sc->cv);
		pthread_mutex_unlock(&sc->mu);
		pthread_join(sc->thread, NULL);
	}
	pthread_mutex_destroy(&sc->mu);
	pthread_cond_destroy(&sc->cv);
	pthread_cond_destroy(&sc->done);
	cli_srv_extra_free(sc);
	cli_srv_counters_free(&sc->counters);
	curl_slist_free_all(sc->headers);
	free(sc->points);
	free(sc);
}
