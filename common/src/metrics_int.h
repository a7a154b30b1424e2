/* Private to the metrics module (metrics.c, metrics_wire.c) and the wire codec that decodes
 * records into REPORTs: what they share. */
#ifndef CHATLOAD_METRICS_INT_H
#define CHATLOAD_METRICS_INT_H

#include "chatload/metrics.h"

/* dst = max of each gauge, inflight summed: how cl_metrics_merge and a decoded delta combine
 * health.  Never fails; inflight overflow is the caller's check. */
void cli_metrics_health_merge(struct cl_health *dst, const struct cl_health *src);

/* A record for a decoded REPORT: a zeroed one kept from an earlier report, or a new one
 * (NULL when out of memory).  A record is a few MiB of counters: allocating and zeroing one
 * per report cost the coordinator more than decoding and merging it. */
struct cl_metrics *cli_metrics_take(void);
/* Returns a record cli_metrics_take gave (emptied in O(what it holds) and kept, or freed
 * when enough are kept).  NULL is ignored. */
void cli_metrics_give(struct cl_metrics *m);

#endif
