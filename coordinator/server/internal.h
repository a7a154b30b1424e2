/* Shared between the files of coordinator/server/: the scraper's state. */
#ifndef CHATLOAD_SERVER_INTERNAL_H
#define CHATLOAD_SERVER_INTERNAL_H

#include "scrape.h"

#include <pthread.h>

#define CLI_SRV_MAX_POINTS 200000u /* timeline points kept (55 h at 1 s); later ones dropped */

struct cl_srv_scrape {
	char url[1024];
	int64_t interval_us;
	bool quiet;
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
	bool warned;
	struct cl_srv_point *points;
	size_t n_points;
};

/* Adds snap to the cumulative counters (a drop = a restart: counting goes on from the new
 * value).  Returns true when it saw a restart. */
bool cli_srv_accumulate(struct cl_srv_mark *cum, const struct cl_srv_snap *prev,
			const struct cl_srv_snap *snap);

#endif
