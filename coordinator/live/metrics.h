/* The run's live metrics in Prometheus text format (chatload run --metrics-listen): per-stage
 * counters of requests, errors by class and tokens, latency summaries, agents joined and
 * lost, stage and run state.  The run thread writes snapshots; HTTP threads render them.
 * Names and meanings: docs/metrics.md. */
#ifndef CHATLOAD_LIVE_METRICS_H
#define CHATLOAD_LIVE_METRICS_H

#include "chatload/buf.h"
#include "chatload/metrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cl_live_metrics;

/* The run's phases, as chatload_run_phase shows them. */
enum cl_live_phase {
	CL_LIVE_STARTING,  /* scenario read; simulator, agents joining */
	CL_LIVE_READINESS, /* the readiness gate */
	CL_LIVE_WARMUP,    /* preparing and warming up */
	CL_LIVE_STAGES,    /* stages running */
	CL_LIVE_FINISHED,  /* results written */
	CL_LIVE__PHASES
};

/* A new, empty state for the run called scenario (copied).  NULL when out of memory. */
struct cl_live_metrics *cl_live_metrics_new(const char *scenario);
/* Frees; accepts NULL.  No renderer may run any more (close the HTTP listener first). */
void cl_live_metrics_free(struct cl_live_metrics *lm);

/* The run moved to phase; exit_code is recorded with CL_LIVE_FINISHED (else ignored). */
void cl_live_metrics_phase(struct cl_live_metrics *lm, enum cl_live_phase phase, int exit_code);

/* The fleet now: agents by liveness, how many ever joined and were lost, streams in flight. */
struct cl_live_fleet {
	uint32_t ok, missing, lost;
	uint32_t joined_total;
	int64_t streams;
	double cpu_pct_sum;    /* the agents' CPU summed, 100 = one core */
	int64_t rss_bytes_sum; /* their resident memory summed */
};
void cl_live_metrics_fleet(struct cl_live_metrics *lm, const struct cl_live_fleet *f);

/* Stage `index` (run order) called name started (mode "concurrency" or "rate", level its
 * streams or requests per second); it becomes the running stage.  0 or CL_ENOMEM. */
int cl_live_metrics_stage_start(struct cl_live_metrics *lm, size_t index, const char *name,
				const char *mode, double level);
/* The running stage's cumulative metrics so far (copied: counters and a few quantiles). */
void cl_live_metrics_stage_update(struct cl_live_metrics *lm, const struct cl_metrics *cum);
/* The running stage ended with status ("ok", "failed", ...) and its final metrics. */
void cl_live_metrics_stage_end(struct cl_live_metrics *lm, const struct cl_metrics *cum,
			       const char *status);
/* The server's own /metrics as last scraped (target.server_metrics), re-exported under
 * chatload_server_*.  A figure the server does not offer is NAN and is left out. */
struct cl_live_server {
	bool up;            /* the last scrape read the page */
	const char *source; /* the engine recognised ("vllm", ...; "unknown"); copied */
	const char *url;    /* the page; copied */
	double running, waiting, kv_usage, prefix_hit_rate; /* gauges, ratios 0..1 */
	double preemptions;                                 /* counter, restarts added up */
	uint32_t restarts, scrapes_ok, scrapes_failed;
};
void cl_live_metrics_server(struct cl_live_metrics *lm, const struct cl_live_server *s);

/* SLO breaches counted so far (the verdict's). */
void cl_live_metrics_breaches(struct cl_live_metrics *lm, size_t breaches);

/* The request classes' names (workload.classes, at most 16), the `request_class` label of the
 * per-class families; the stages' records carry one record per class in this order.  0 or
 * CL_ENOMEM.  NULL lm: nothing. */
int cl_live_metrics_classes(struct cl_live_metrics *lm, const char *const *names, size_t n);

/* Renders the exposition (text format 0.0.4) into body.  Thread-safe.  0, CL_ENOMEM,
 * CL_ETOOBIG. */
int cl_live_metrics_render(struct cl_live_metrics *lm, struct cl_buf *body);

/* The content type of the exposition. */
#define CL_LIVE_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
