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

static void warn_exporter(struct cl_srv_scrape *sc, struct cli_srv_exporter *e, const char *what)
{
	pthread_mutex_lock(&sc->mu);
	bool first = !e->warned;
	e->warned = true;
	if (first)
		snprintf(e->first_error, sizeof(e->first_error), "%s", what);
	pthread_mutex_unlock(&sc->mu);
	if (first)
		CL_WARN("server metrics: cannot read the exporter '%s': %s; the run goes on, its "
			"figures recorded as unavailable or partial (target.server_metrics.extra)",
			e->url, what);
}

/* Fetches the n handles together (each bounded by its own timeout); cc[i] each's result. */
static void fetch_all(CURLM *m, CURL *const *hs, size_t n, CURLcode *cc)
{
	for (size_t i = 0; i < n; i++) {
		cc[i] = CURLE_FAILED_INIT;
		if (hs[i] && curl_multi_add_handle(m, hs[i]) != CURLM_OK)
			cc[i] = CURLE_OUT_OF_MEMORY;
	}
	int running = 1;
	while (running) {
		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		if (running && curl_multi_poll(m, NULL, 0, 100, NULL) != CURLM_OK)
			break;
	}
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(m, &left)))
		for (size_t i = 0; i < n; i++)
			if (msg->msg == CURLMSG_DONE && hs[i] == msg->easy_handle)
				cc[i] = msg->data.result;
	for (size_t i = 0; i < n; i++)
		if (hs[i])
			curl_multi_remove_handle(m, hs[i]);
}

/* Decodes what a handle fetched into pg; why: what went wrong ("" when nothing).  True when
 * the page was read (a decoding problem leaves it partial, still read). */
static bool judge(CURL *h, CURLcode cc, const struct cl_buf *body, struct cl_prom_page *pg,
		  char *why, size_t n)
{
	long status = 0;
	if (h)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	why[0] = '\0';
	if (cc != CURLE_OK)
		snprintf(why, n, "cannot read the page: %s", curl_easy_strerror(cc));
	else if (status != 200)
		snprintf(why, n, "HTTP %ld", status);
	else if (cl_prom_parse(body->data ? body->data : "", body->len, pg, NULL) != 0)
		snprintf(why, n, "the page could not be decoded");
	else if (pg->bad_lines)
		snprintf(why, n, "%zu malformed lines (first: %s)", pg->bad_lines, pg->first_bad);
	return cc == CURLE_OK && status == 200;
}

#define N_PAGES (1 + CLI_SRV_MAX_EXPORTERS)

/* One scrape: fetch the engine's page and the exporters', decode, map; into the timeline
 * and the totals. */
static void scrape_once(struct cl_srv_scrape *sc, CURLM *m, CURL *h, struct cl_buf *body)
{
	struct cl_srv_snap snap = { .t_us = cl_mono_us() };
	size_t n = 1 + sc->n_ex;
	CURL *hs[N_PAGES];
	CURLcode cc[N_PAGES];
	struct cl_prom_page pg[N_PAGES];
	const struct cl_prom_page *pages[N_PAGES];
	bool read[N_PAGES];
	char why[N_PAGES][160];
	memset(pg, 0, sizeof(pg));
	cl_buf_reset(body);
	hs[0] = h;
	for (size_t i = 1; i < n; i++) {
		cl_buf_reset(&sc->ex[i - 1].body);
		hs[i] = sc->ex[i - 1].h;
	}
	fetch_all(m, hs, n, cc);
	for (size_t i = 0; i < n; i++) {
		read[i] = judge(hs[i], cc[i], i ? &sc->ex[i - 1].body : body, &pg[i], why[i],
				sizeof(why[i]));
		pages[i] = read[i] ? &pg[i] : NULL;
	}
	/* Always read, an empty page too: what is missing is then NAN, never 0 (a zeroed
	 * start time would read as a new process). */
	cl_srv_vocab_read(&pg[0], &snap);
	cl_srv_vocab_gpu(pages, n, &snap);
	if (why[0][0])
		warn_once(sc, why[0]);
	for (size_t i = 1; i < n; i++)
		if (why[i][0])
			warn_exporter(sc, &sc->ex[i - 1], why[i]);
	bool ok = read[0], any = ok;
	for (size_t i = 1; i < n; i++)
		any = any || read[i];
	/* Outside the lock: the page's counters by name, for a restart the vocabulary cannot
	 * see (llama.cpp offers none of its counters). */
	bool down = ok && cli_srv_counters_update(&sc->counters, &pg[0]);
	pthread_mutex_lock(&sc->mu);
	sc->last_ok = ok;
	for (size_t i = 1; i < n; i++) {
		sc->ex[i - 1].last_ok = read[i];
		if (read[i])
			sc->ex[i - 1].ok++;
		else
			sc->ex[i - 1].failed++;
	}
	enum cl_srv_restart restart = CL_SRV_NO_RESTART;
	struct cl_srv_point pt = {
		.t_us = snap.t_us,
		.running = NAN,
		.waiting = NAN,
		.kv_usage = NAN,
		.prefix_hit_rate = NAN,
		.preemptions = NAN,
		.gpu_util = (float)snap.gpu_util,
		.gpu_mem_used = (float)snap.gpu_mem_used,
		.gpu_mem_fraction = (float)snap.gpu_mem_fraction,
		.gpu_energy_j = snap.gpu_energy_j,
		.gpu_power_w = (float)snap.gpu_power_w,
		.gpu_count = (uint16_t)(snap.gpu_count < UINT16_MAX ? snap.gpu_count : UINT16_MAX),
	};
	if (!ok) {
		sc->cum.scrapes_failed++;
	} else {
		sc->cum.scrapes_ok++;
		struct cl_srv_mark before = sc->cum;
		restart = sc->have_prev ? cli_srv_accumulate(&sc->cum, &sc->prev, &snap, down)
					: cli_srv_accumulate(&sc->cum, NULL, &snap, false);
		/* This scrape's share of the counters: the hit ratio and the preemptions of the
		 * last interval, for the timeline (NAN before a second scrape). */
		double dq = sc->cum.prefix_queries - before.prefix_queries;
		double dh = sc->cum.prefix_hits - before.prefix_hits;
		pt.prefix_hit_rate = !isnan(snap.prefix_queries)
					 ? (sc->have_prev && dq > 0 ? (float)(dh / dq) : NAN)
					 : (float)snap.prefix_hit_rate;
		pt.preemptions = !isnan(snap.preemptions) && sc->have_prev
				     ? (float)(sc->cum.preemptions - before.preemptions)
				     : NAN;
		pt.running = (float)snap.running;
		pt.waiting = (float)snap.waiting;
		pt.kv_usage = (float)snap.kv_usage;
		pt.restart = (uint8_t)restart;
		sc->prev = snap;
		sc->have_prev = true;
	}
	/* A point when any page was read: an exporter's GPU figures count without the
	 * engine's page too. */
	if (any && sc->n_points < CLI_SRV_MAX_POINTS) {
		sc->points[sc->n_points] = pt;
		cli_srv_extra_record(sc, pages, n, sc->n_points, snap.t_us,
				     restart != CL_SRV_NO_RESTART);
		sc->n_points++;
	}
	for (size_t i = 0; i < n; i++)
		cl_prom_page_free(&pg[i]);
	sc->cum.t_us = snap.t_us;
	sc->attempts++;
	sc->busy = false;
	pthread_cond_broadcast(&sc->done);
	pthread_mutex_unlock(&sc->mu);
}

/* Everything about how a page is asked for comes from client/http/ (the target's TLS and,
 * on its address, its HTTP version); the scraper adds only where the answer goes. */
static int setup(struct cl_srv_scrape *sc, CURL *h, const char *url, struct curl_slist *headers,
		 struct cl_buf *body, long timeout_ms, struct cl_err *err)
{
	int rc =
	    cl_http_target_apply_page(&sc->http, h, url, (int64_t)timeout_ms * 1000, headers, err);
	if (rc != 0)
		return rc;
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CL_PROM_MAX_PAGE);
	return 0;
}

static void *scrape_main(void *arg)
{
	struct cl_srv_scrape *sc = arg;
	struct cl_buf body;
	cl_buf_init(&body, CL_PROM_MAX_PAGE);
	CURL *h = curl_easy_init();
	CURLM *m = curl_multi_init();
	if (!h || !m) {
		warn_once(sc, "cannot create a libcurl handle");
		curl_easy_cleanup(h);
		curl_multi_cleanup(m);
		return NULL;
	}
	long timeout_ms = (long)(sc->interval_us / 2000);
	if (timeout_ms > 2000)
		timeout_ms = 2000;
	struct cl_err err = { 0 };
	if (setup(sc, h, sc->url, sc->headers, &body, timeout_ms, &err) != 0) {
		char msg[300];
		warn_once(sc, cl_err_format(&err, msg, sizeof(msg)));
		curl_easy_reset(h); /* fetches nothing: each scrape then fails, counted */
	}
	/* The scenario's headers are the engine page's: not sent to other hosts. */
	for (size_t i = 0; i < sc->n_ex; i++) {
		if (!(sc->ex[i].h = curl_easy_init()))
			continue;
		if (setup(sc, sc->ex[i].h, sc->ex[i].url, sc->ex_headers, &sc->ex[i].body,
			  timeout_ms, &err) != 0) {
			char msg[300];
			warn_exporter(sc, &sc->ex[i], cl_err_format(&err, msg, sizeof(msg)));
			curl_easy_cleanup(sc->ex[i].h);
			sc->ex[i].h = NULL;
		}
	}
	pthread_mutex_lock(&sc->mu);
	while (!sc->stop) {
		sc->now = false;
		sc->busy = true;
		pthread_mutex_unlock(&sc->mu);
		int64_t next = cl_mono_us() + sc->interval_us;
		scrape_once(sc, m, h, &body);
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
	for (size_t i = 0; i < sc->n_ex; i++) {
		curl_easy_cleanup(sc->ex[i].h);
		sc->ex[i].h = NULL;
	}
	curl_multi_cleanup(m);
	curl_easy_cleanup(h);
	cl_buf_free(&body);
	return NULL;
}

/* The target's settings for every page: its key and headers stay with its API (the key is
 * not even read here: it may live only on the agents' hosts). */
static int prepare_http(struct cl_srv_scrape *sc, const struct cl_srv_scrape_opts *o,
			struct cl_err *err)
{
	struct cl_target_plan plan = { .base_url = (char *)o->url, .tls_verify = true };
	if (o->target) {
		plan = *o->target;
		plan.api_key_env = NULL;
		plan.headers = NULL;
		plan.n_headers = 0;
		plan.endpoints = NULL;
		plan.n_endpoints = 0;
	}
	int rc = cl_http_target_init(&sc->http, &plan, NULL, err);
	if (rc == 0)
		rc = cl_http_page_headers(o->headers, o->n_headers, &sc->headers, err);
	if (rc == 0)
		rc = cl_http_page_headers(NULL, 0, &sc->ex_headers, err);
	return rc;
}

int cl_srv_scrape_start(const struct cl_srv_scrape_opts *o, struct cl_srv_scrape **out,
			struct cl_err *err)
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
	if ((rc = prepare_http(sc, o, err)) != 0)
		goto fail;
	rc = CL_ENOMEM;
	if (o->n_series) {
		sc->series = calloc(o->n_series, sizeof(*sc->series));
		sc->series_found = calloc(o->n_series, sizeof(*sc->series_found));
		if (!sc->series || !sc->series_found)
			goto fail;
		for (; sc->n_series < o->n_series; sc->n_series++)
			if (!(sc->series[sc->n_series] = strdup(o->series[sc->n_series])))
				goto fail;
	}
	for (size_t i = 0; i < o->n_extra && sc->n_ex < CLI_SRV_MAX_EXPORTERS; i++) {
		struct cli_srv_exporter *e = &sc->ex[sc->n_ex];
		if (strlen(o->extra[i]) >= sizeof(e->url))
			goto fail;
		snprintf(e->url, sizeof(e->url), "%s", o->extra[i]);
		cl_buf_init(&e->body, CL_PROM_MAX_PAGE);
		sc->n_ex++;
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
	for (size_t i = 0; i < sc->n_series; i++) {
		json_array_append_new(req, json_string(sc->series[i]));
		if (!sc->series_found[i])
			json_array_append_new(missing, json_string(sc->series[i]));
	}
	for (size_t k = 0; k < sc->n_xs; k++) {
		char key[1200];
		snprintf(key, sizeof(key), "%s%s%s%s", sc->xs[k].name, *sc->xs[k].labels ? "{" : "",
			 sc->xs[k].labels, *sc->xs[k].labels ? "}" : "");
		json_array_append_new(kept, json_pack("{s:s,s:s}", "series", key, "source",
						      cli_srv_source_url(sc, sc->xs[k].src)));
	}
	json_t *dropped_ex = json_array(), *exporters = json_array();
	for (size_t i = 0; i < sc->n_xdrop_ex; i++)
		json_array_append_new(dropped_ex, json_string(sc->xdrop_ex[i]));
	for (size_t i = 0; i < sc->n_ex; i++) {
		const struct cli_srv_exporter *e = &sc->ex[i];
		json_array_append_new(
		    exporters,
		    json_pack("{s:s,s:b,s:i,s:i,s:o}", "url", e->url, "available", e->ok > 0,
			      "scrapes", (int)e->ok, "scrapes_failed", (int)e->failed, "error",
			      e->first_error[0] ? json_string(e->first_error) : json_null()));
	}
	bool any = sc->cum.scrapes_ok > 0;
	json_t *o = json_pack(
	    "{s:s,s:s,s:f,s:b,s:o,s:i,s:i,s:o,s:i,s:o,s:o,s:{s:o,s:o,s:o,s:i,s:o,s:i}}", "mode",
	    mode, "url", sc->url, "interval_s", sc->interval_us / 1e6, "available", any, "error",
	    sc->first_error[0] ? json_string(sc->first_error) : json_null(), "scrapes",
	    (int)sc->cum.scrapes_ok, "scrapes_failed", (int)sc->cum.scrapes_failed, "source",
	    any ? json_string(cl_srv_engine_name(sc->cum.engine)) : json_null(), "restarts_total",
	    (int)sc->cum.restarts, "restarts", restarts, "extra", exporters, "series", "requested",
	    req, "kept", kept, "not_found", missing, "dropped", (int)sc->x_dropped, "dropped_names",
	    dropped_ex, "limit", (int)CLI_SRV_MAX_XSERIES);
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
	for (size_t i = 0; i < sc->n_ex; i++)
		cl_buf_free(&sc->ex[i].body);
	cli_srv_counters_free(&sc->counters);
	curl_slist_free_all(sc->headers);
	curl_slist_free_all(sc->ex_headers);
	cl_http_target_free(&sc->http);
	free(sc->points);
	free(sc);
}
