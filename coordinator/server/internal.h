/* Shared between the files of coordinator/server/: the scraper's state. */
#ifndef CHATLOAD_SERVER_INTERNAL_H
#define CHATLOAD_SERVER_INTERNAL_H

#include "scrape.h"

#include "client/http/handle.h"

#include "chatload/buf.h"

#include <curl/curl.h>
#include <pthread.h>

#define CLI_SRV_MAX_POINTS 200000u /* timeline points kept (55 h at 1 s); later ones dropped */

#define CLI_SRV_MAX_XSERIES   256u  /* raw series kept (source, name, labels); later ones dropped */
#define CLI_SRV_XRESERVED     32u   /* of them, the columns only series: names may take */
#define CLI_SRV_XROWS         1024u /* timeline rows of the raw series; then merged in pairs */
#define CLI_SRV_XDROP_EX      8u    /* names of dropped series shown in results.json */
#define CLI_SRV_TIMELINE_MAX  1800u /* timeline points per stage in results.json */
#define CLI_SRV_MAX_EXPORTERS 8u    /* target.server_metrics.extra */

/* One row of a raw series' timeline: one scrape, or 2^shift of them merged. */
struct cli_srv_xcell {
	double last; /* gauges: the last value; counters: the running total */
	double sum;  /* gauges: the values' sum */
	double max;
	uint32_t n; /* scrapes that held it */
};

/* A series outside the vocabulary, kept raw. */
struct cli_srv_xseries {
	char *name, *labels;
	uint8_t src;  /* 0: the engine's page; i: the exporter extra[i - 1] */
	bool asked;   /* server_metrics.series names it */
	bool counter; /* summarised as increase and rate (counters, _count and _sum) */
	double prev;  /* counters: the last raw value */
	double cum;   /* counters: the total since first seen, restarts added up */
	bool have_prev;
	size_t seen_point;         /* the last point that held it */
	struct cli_srv_xcell *col; /* its timeline: CLI_SRV_XROWS rows */
};

/* An extra exporter (target.server_metrics.extra), scraped beside the engine's page. */
struct cli_srv_exporter {
	char url[1024];
	CURL *h;
	struct cl_buf body;
	uint32_t ok, failed; /* under mu */
	bool last_ok;        /* under mu */
	bool warned;
	char first_error[200]; /* under mu */
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
	struct cl_http_target http;    /* how every page is asked for (client/http/handle.c) */
	struct curl_slist *headers;    /* the engine's page: User-Agent, server_metrics.headers */
	struct curl_slist *ex_headers; /* the exporters': User-Agent only */
	char **series;                 /* the names kept first */
	size_t n_series;
	bool *series_found;         /* under mu: a pattern matched some series */
	struct cli_srv_xseries *xs; /* under mu */
	size_t n_xs;
	size_t x_dropped;                 /* the most series one scrape found no room for */
	char *xdrop_ex[CLI_SRV_XDROP_EX]; /* the first names dropped */
	size_t n_xdrop_ex;
	int64_t *xt0, *xt1; /* under mu: a row's first and last scrape (CLI_SRV_XROWS each) */
	unsigned x_shift;   /* a row holds 2^x_shift points */
	struct cli_srv_exporter ex[CLI_SRV_MAX_EXPORTERS];
	size_t n_ex;
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

/* Keeps the pages' series outside the vocabulary (pages[0] the engine's, pages[i] the
 * exporter extra[i - 1]; NULL: not read) as point `point`, taken at t_us.  sc->mu held.
 * new_process: the engine's counters count from 0 (it restarted without any going down).
 * Never fails: out of memory drops the point. */
void cli_srv_extra_record(struct cl_srv_scrape *sc, const struct cl_prom_page *const *pages,
			  size_t n_pages, size_t point, int64_t t_us, bool new_process);

/* The URL a raw series was read from. */
const char *cli_srv_source_url(const struct cl_srv_scrape *sc, uint8_t src);

/* The stage's raw series (results.md, stages[].server.series), sc->mu held.  NULL: OOM. */
json_t *cli_srv_extra_stage_json(struct cl_srv_scrape *sc, size_t from_point, size_t to_point,
				 int64_t from_us, int64_t to_us);

/* Frees the raw series' state (sc->mu not needed: the thread has stopped). */
void cli_srv_extra_free(struct cl_srv_scrape *sc);

#endif
