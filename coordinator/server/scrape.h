/* Scraping the target's /metrics on a thread of its own during the whole run: the run thread
 * only takes marks (a copy under a mutex), so a slow, huge or broken page never slows it. */
#ifndef CHATLOAD_SERVER_SCRAPE_H
#define CHATLOAD_SERVER_SCRAPE_H

#include "vocab.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct cl_srv_scrape;

/* A point of the timeline: the gauges of one scrape (NAN: not offered). */
struct cl_srv_point {
	int64_t t_us;
	float running, waiting, kv_usage, prefix_hit_rate;
	bool restart; /* a counter or histogram went down: the server restarted */
};

/* Where the counters stood at a moment: totals since the first scrape, restarts added up
 * (after a restart counting goes on from the new value), and the histograms likewise. */
struct cl_srv_mark {
	int64_t t_us;
	size_t point; /* timeline points before the mark */
	enum cl_srv_engine engine;
	uint32_t scrapes_ok, scrapes_failed, restarts;
	double prefix_queries, prefix_hits, preemptions, spec_accepted, spec_draft;
	struct cl_srv_hist ttft, queue, e2e;
};

/*
 * Starts scraping url every interval_us on a new thread (a libcurl easy handle of its own,
 * timeout min(interval/2, 2 s), pages capped at CL_PROM_MAX_PAGE).  quiet: the URL was
 * guessed from the target's (`auto`), so a server without /metrics is noted, not warned
 * about.  Returns 0 or CL_ENOMEM / CL_ESYS; *out NULL on failure.  Needs curl_global_init.
 */
int cl_srv_scrape_start(const char *url, int64_t interval_us, bool quiet,
			struct cl_srv_scrape **out);

/* Copies where the counters stand.  wait_us 0: the latest scrape's, never blocking; else a
 * scrape started now, waited for at most wait_us (the scrape's own timeout bounds it): for
 * stage boundaries, outside any measured window. */
void cl_srv_scrape_mark(struct cl_srv_scrape *sc, struct cl_srv_mark *m, int64_t wait_us);

/* The stage between two marks in the common vocabulary (docs/results.md, stages[].server):
 * gauges over the timeline points taken in [from_us, to_us] (the measured window; to_us 0:
 * up to b), counters and histograms as b − a.  NULL when out of memory. */
json_t *cl_srv_scrape_stage_json(struct cl_srv_scrape *sc, const struct cl_srv_mark *a,
				 const struct cl_srv_mark *b, int64_t from_us, int64_t to_us);

/* Stops the thread (waits at most one scrape timeout) and frees everything.  NULL is fine. */
void cl_srv_scrape_stop(struct cl_srv_scrape *sc);

/* The /metrics URL of a target base URL (scheme://host:port of it, path /metrics), into
 * out (size n).  0, or CL_EINVAL when base does not parse as a URL. */
int cl_srv_metrics_url(const char *base, char *out, size_t n);

#endif
