/* Shared between the files of coordinator/server/: the scraper's state. */
#ifndef CHATLOAD_SERVER_INTERNAL_H
#define CHATLOAD_SERVER_INTERNAL_H

#include "scrape.h"

#include <curl/curl.h>
#include <pthread.h>

#define CLI_SRV_MAX_POINTS 200000u /* timeline points kept (55 h at 1 s); later ones dropped */

#define CLI_SRV_MAX_XSERIES  64u   /* extra series kept (name and labels); later ones dropped */
#define CLI_SRV_TIMELINE_MAX 1800u /* timeline points per stage in results.json */

/* A series kept raw because server_metrics.extra named it. */
struct cli_srv_xseries {
	char *name, *labels;
	bool counter; /* summarised as increase and rate (counters, _count and _sum) */
	double prev;  /* counters: the last raw value */
	double cum;   /* counters: the total since first seen, restarts added up */
	bool have_prev;
};

/* The previous scrape's counters by a hash of name and labels (reset.c). */
struct cli_srv_counters {
	uint64_t *key; /* 0: an empty slot */
	double *val;
	size_t cap; /* a power of 2, or 0 */
};

/* Replaces c with pg's counters; true when most of those that c held above 0 went down (a
 * restart).  Out of memory: false, c unchanged. */
bool cli_srv_counters_update(struct cli_srv_counters *c, const struct cl_prom_page *pg);
void cli_srv_counters_free(struct cli_srv_counters *c);

struct cl_srv_scrape {
	char url[1024];
	int64_t interval_us;
	bool quiet;
	struct curl_slist *headers;
	char **extra; /* the patterns asked for */
	size_t n_extra;
	bool *extra_found;          /* under mu: a pattern matched some series */
	struct cli_srv_xseries *xs; /* under mu */
	size_t n_xs;
	bool xs_dropped;       /* more series matched than CLI_SRV_MAX_XSERIES */
	double *xv;            /* under mu: xv[point * CLI_SRV_MAX_XSERIES + k], NAN: absent */
	size_t xv_rows;        /* rows allocated */
	char first_error[200]; /* under mu: the first failure's text */
	int64_t t_start_us;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	bool now;            /* a mark asked for a scrape at once */
	bool busy;           /* a scrape is under way */
	uint64_t attempts;   /* scrapes done, failed or not */
	pthread_cond_t done; /* broadcast after each scrape */
	/* under mu */
	struct cl_srv_mark cum;  /* counters since the first scrape, restarts added up */
	struct cl_srv_snap prev; /* the previous successful scrape, raw */
	bool have_prev;
	struct cli_srv_counters counters; /* only the scraping thread touches it */
	bool last_ok;                     /* the latest scrape read the page */
	bool warned;
	struct cl_srv_point *points;
	size_t n_points;
};

/* Adds snap to the cumulative counters (a drop = a restart: counting goes on from the new
 * value).  counters_down: some counter of the page outside the vocabulary went down (reset.c),
 * so the server restarted and every counter counts from 0.  Returns why it took the scrape
 * for a restart (enum cl_srv_restart). */
enum cl_srv_restart cli_srv_accumulate(struct cl_srv_mark *cum, const struct cl_srv_snap *prev,
				       const struct cl_srv_snap *snap, bool counters_down);

/* True when snap is another process than prev: process_start_time_seconds moved. */
bool cli_srv_new_process(const struct cl_srv_snap *prev, const struct cl_srv_snap *snap);

/* Keeps the page's samples that server_metrics.extra names as row `point` of sc->xv.  Called
 * with sc->mu held, after the point was counted.  new_process: counters count from 0 (the
 * server restarted without any going down).  Never fails: out of memory drops the row. */
void cli_srv_extra_record(struct cl_srv_scrape *sc, const struct cl_prom_page *pg, size_t point,
			  bool new_process);

/* The stage's extra series (results.md, stages[].server.extra), sc->mu held.  NULL: OOM. */
json_t *cli_srv_extra_stage_json(struct cl_srv_scrape *sc, size_t from_point, size_t to_point,
				 int64_t from_us, int64_t to_us);

/* Frees the extra series' state (sc->mu not needed: the thread has stopped). */
void cli_srv_extra_free(struct cl_srv_scrape *sc);

#endif
