/* Scraping the target's /metrics on a thread of its own during the whole run: the run thread
 * only takes marks (a copy under a mutex), so a slow, huge or broken page never slows it. */
#ifndef CHATLOAD_SERVER_SCRAPE_H
#define CHATLOAD_SERVER_SCRAPE_H

#include "vocab.h"

#include "chatload/err.h"
#include "chatload/plan.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct cl_srv_scrape;

/* Why a scrape is taken for a server restart. */
enum cl_srv_restart {
	CL_SRV_NO_RESTART = 0,
	CL_SRV_RESTART_COUNTER,    /* a counter or histogram went down */
	CL_SRV_RESTART_START_TIME, /* process_start_time_seconds changed */
};

/* A point of the timeline: the gauges of one scrape (NAN: not offered). */
struct cl_srv_point {
	int64_t t_us;
	float running, waiting, kv_usage;
	float
	    prefix_hit_rate; /* hits ÷ queries since the previous scrape (or the engine's gauge) */
	float preemptions;   /* the counter's increase since the previous scrape */
	float gpu_util, gpu_mem_used, gpu_mem_fraction; /* dcgm-exporter's, on any page */
	double gpu_energy_j; /* the GPUs' energy counter summed, J (NAN: not offered) */
	float gpu_power_w;   /* their power summed, W (NAN: not offered) */
	uint16_t gpu_count;  /* the GPUs those sums are over */
	uint8_t restart;     /* enum cl_srv_restart */
};

/* What the scraper is told: target.server_metrics (docs/scenario.md). */
struct cl_srv_scrape_opts {
	const char *url;
	/* The run's target: its HTTP version (on the target's own address), TLS verification and
	 * CA file, connect timeout, applied through client/http/ as for every other request; its
	 * key and headers are not sent.  NULL: url alone, HTTP/1.1, TLS verified. */
	const struct cl_target_plan *target;
	int64_t interval_us; /* 0: 1 s */
	bool quiet;          /* the URL was guessed (`auto`): a missing page is noted, not warned */
	const char *const *headers; /* "Name: value", sent with every scrape */
	size_t n_headers;
	const char *const *series; /* raw series kept first: names, or a beginning and '*' */
	size_t n_series;
	const char *const *extra; /* more exporters' pages, scraped beside url (at most 8) */
	size_t n_extra;
};

/* The latest scrape, for the live metrics. */
struct cl_srv_latest {
	bool up;   /* the last scrape read the page */
	bool have; /* some scrape ever did (the figures below are from it) */
	enum cl_srv_engine engine;
	double running, waiting, kv_usage, prefix_hit_rate; /* NAN: not offered */
	double preemptions; /* total since the first scrape, restarts added up; NAN: none */
	uint32_t restarts, scrapes_ok, scrapes_failed;
};

/* Where the counters stood at a moment: totals since the first scrape, restarts added up
 * (after a restart counting goes on from the new value), and the histograms likewise. */
struct cl_srv_mark {
	int64_t t_us;
	size_t point; /* timeline points before the mark */
	enum cl_srv_engine engine;
	uint32_t scrapes_ok, scrapes_failed, restarts;
	double prefix_queries, prefix_hits, preemptions, spec_accepted, spec_draft, aborted;
	struct cl_srv_hist ttft, queue, e2e;
	/* the same per model_name, restarts added up likewise */
	struct cl_srv_model_hists models[CL_SRV_MAX_MODELS];
	uint32_t n_models;
};

/*
 * Starts scraping o->url and the o->extra exporters every o->interval_us on a new thread
 * (libcurl easy handles of its own, configured by cl_http_target_apply_page from o->target and
 * fetched together, timeout min(interval/2, 2 s), pages capped at CL_PROM_MAX_PAGE; every
 * request says User-Agent chatload/<version> unless o->headers names one).  The first failure
 * of each page is logged once: a warning naming the URL and the error, or (quiet, the engine's
 * page only) a note.  o is copied.  Returns 0, CL_EINVAL (err says why: a bad header line, a
 * target plan client/http refuses, an option this libcurl lacks), CL_ENOMEM or CL_ESYS; *out
 * NULL on failure.  Needs curl_global_init.
 */
int cl_srv_scrape_start(const struct cl_srv_scrape_opts *o, struct cl_srv_scrape **out,
			struct cl_err *err);

/* The page scraped (constant while sc lives). */
const char *cl_srv_scrape_url(const struct cl_srv_scrape *sc);

/* The latest scrape's figures; never blocks for longer than a copy. */
void cl_srv_scrape_latest(struct cl_srv_scrape *sc, struct cl_srv_latest *out);

/* The run-wide summary (docs/results.md, `server_metrics`): availability, the first error,
 * scrape counts, every restart (t_s since t0_us) and which extra series were kept.  mode is
 * "auto" or "url".  NULL when out of memory. */
json_t *cl_srv_scrape_run_json(struct cl_srv_scrape *sc, const char *mode, int64_t t0_us);

/* Copies where the counters stand.  wait_us 0: the latest scrape's, never blocking; else a
 * scrape started now, waited for at most wait_us (the scrape's own timeout bounds it): for
 * stage boundaries, outside any measured window. */
void cl_srv_scrape_mark(struct cl_srv_scrape *sc, struct cl_srv_mark *m, int64_t wait_us);

/* The stage between two marks in the common vocabulary (docs/results.md, stages[].server):
 * gauges over the timeline points taken in [from_us, to_us] (the measured window, whatever
 * bounds the stage, so that no drain scrape enters a mean; to_us 0: up to b; the window is
 * written as gauge_window_s), counters and histograms as b − a, the extra series likewise, and the
 * timeline of the scrapes between the marks with t_s since start_us (the stage's START_AT, the
 * clock of its intervals).  NULL when out of memory. */
json_t *cl_srv_scrape_stage_json(struct cl_srv_scrape *sc, const struct cl_srv_mark *a,
				 const struct cl_srv_mark *b, int64_t start_us, int64_t from_us,
				 int64_t to_us);

/* Stops the thread (waits at most one scrape timeout) and frees everything.  NULL is fine. */
void cl_srv_scrape_stop(struct cl_srv_scrape *sc);

/* The /metrics URL of a target base URL (scheme://host:port of it, path /metrics), into
 * out (size n).  0, or CL_EINVAL when base does not parse as a URL. */
int cl_srv_metrics_url(const char *base, char *out, size_t n);

#endif
