/* Private to the metrics module (metrics.c, metrics_wire.c): what both halves share. */
#ifndef CHATLOAD_METRICS_INT_H
#define CHATLOAD_METRICS_INT_H

#include "chatload/metrics.h"

/* dst = max of each gauge, inflight summed: how cl_metrics_merge and a decoded delta combine
 * health.  Never fails; inflight overflow is the caller's check. */
void cli_metrics_health_merge(struct cl_health *dst, const struct cl_health *src);

#endif
