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
	pthread_mutex_unlock(&sc->mu);
	if (first && !sc->quiet)
		CL_WARN("server metrics: %s from '%s'; recorded as unavailable or partial", what,
			sc->url);
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
	if (!why[0] || pg.n)
		cl_srv_vocab_read(&pg, &snap);
	cl_prom_page_free(&pg);
	if (why[0])
		warn_once(sc, why);
	bool ok = cc == CURLE_OK && status == 200;
	pthread_mutex_lock(&sc->mu);
	if (!ok) {
		sc->cum.scrapes_failed++;
	} else {
		sc->cum.scrapes_ok++;
		bool restart = sc->have_prev && cli_srv_accumulate(&sc->cum, &sc->prev, &snap);
		if (!sc->have_prev)
			cli_srv_accumulate(&sc->cum, NULL, &snap);
		sc->prev = snap;
		sc->have_prev = true;
		if (sc->n_points < CLI_SRV_MAX_POINTS) {
			sc->points[sc->n_points++] = (struct cl_srv_point){
				.t_us = snap.t_us,
				.running = (float)snap.running,
				.waiting = (float)snap.waiting,
				.kv_usage = (float)snap.kv_usage,
				.prefix_hit_rate = (float)snap.prefix_hit_rate,
				.restart = restart,
			};
		}
	}
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

int cl_srv_scrape_start(const char *url, int64_t interval_us, bool quiet,
			struct cl_srv_scrape **out)
{
	*out = NULL;
	struct cl_srv_scrape *sc = calloc(1, sizeof(*sc));
	if (!sc || strlen(url) >= sizeof(sc->url) ||
	    !(sc->points = malloc(CLI_SRV_MAX_POINTS * sizeof(*sc->points)))) {
		if (sc)
			free(sc->points);
		free(sc);
		return CL_ENOMEM;
	}
	snprintf(sc->url, sizeof(sc->url), "%s", url);
	sc->interval_us = interval_us > 0 ? interval_us : 1000000;
	sc->quiet = quiet;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&sc->mu, NULL);
	pthread_cond_init(&sc->cv, &ca);
	pthread_cond_init(&sc->done, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&sc->thread, NULL, scrape_main, sc) != 0) {
		cl_srv_scrape_stop(sc);
		return CL_ESYS;
	}
	sc->started = true;
	*out = sc;
	return 0;
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
	free(sc->points);
	free(sc);
}
