/* Verdicts on merged metrics: SLO evaluation, goodput, client-bound detection, estimates
 * and the run's exit code.  Pure functions; results/stage_finish.c and results/results.c put
 * their answers in the document.
 */
#ifndef CHATLOAD_VERDICT_H
#define CHATLOAD_VERDICT_H

#include "chatload/metrics.h"
#include "coordinator/scenario/scenario.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Errors of every class (cut requests are not errors). */
uint64_t cl_verdict_errors(const struct cl_metrics *m);

/* errors / (completed + errors); 0 when nothing ended. */
double cl_verdict_error_rate(const struct cl_metrics *m);

/* The stage's request rate: completed requests, each counted by the share of it (its tokens)
 * inside the window (CL_CTR_WINDOW_SHARE_MILLI), per second of the window, so the rate does
 * not swing with where the window cut a wave of long requests (docs/results.md).  NAN when
 * window_s <= 0. */
double cl_verdict_request_rate(const struct cl_metrics *m, double window_s);

/* Completed requests meeting every per-request SLO, per second of the window (the engine
 * counts them in CL_CTR_GOOD).  0 when window_s <= 0. */
double cl_verdict_goodput(const struct cl_metrics *m, double window_s);

/* Whether slo applies to the stage called stage_name (slo->stage NULL: every stage). */
bool cl_verdict_applies(const struct cl_scn_slo *slo, const char *stage_name);

/*
 * Measures slo on one stage's merged metrics, in the SLO's own unit: microseconds for
 * latency (the percentile of the merged histogram, or its mean when percentile < 0), a
 * fraction for the error rate, per second (over window_s) for the two minimums.
 * *has_data is false when there is nothing to measure (an empty latency histogram, a
 * window of 0 s); the SLO then counts as breached (no data proves nothing).
 */
double cl_verdict_measure(const struct cl_scn_slo *slo, const struct cl_metrics *m, double window_s,
			  bool *has_data);

/* Whether measured meets slo: latency and error rate <= limit, minimums >= limit.  Equal
 * to the limit passes. */
/* Samples an SLO's figure rests on: for a latency SLO the values its histogram holds (0 for
 * another kind, which rests on counts, not on a tail). */
uint64_t cl_verdict_slo_samples(const struct cl_scn_slo *slo, const struct cl_metrics *m);

/* Samples a latency SLO's percentile needs to be more than the largest value seen:
 * ceil(1 / (1 − p)), so p99 needs 100 and p90 10; 1 for a mean or another kind. */
uint64_t cl_verdict_samples_needed(const struct cl_scn_slo *slo);

bool cl_verdict_passes(const struct cl_scn_slo *slo, double measured, bool has_data);

/* The unit of an SLO's limit and measurement as written in results: "ms" for latency
 * (values are converted), "ratio" for the error rate, "1/s" for the minimums. */
const char *cl_verdict_unit(const struct cl_scn_slo *slo);
/* Converts a limit or measurement from the SLO's internal unit to its results unit. */
double cl_verdict_to_unit(const struct cl_scn_slo *slo, double v);

/* What client-bound detection looks at, for one stage. */
struct cl_client_obs {
	double cpu_max_pct;           /* busiest agent in the busiest interval, 100 = one core */
	double cpu_capacity_pct;      /* that agent's capacity (cores * 100); 0 unknown */
	uint32_t cpu_bound_intervals; /* intervals whose cpu exceeded the fraction */
	int64_t dispatch_lag_p99_us;  /* queue histogram p99, -1 none */
	int64_t loop_lag_p99_us;      /* loop-lag histogram p99, -1 none */
	bool dispatch_lag_is_backlog; /* rate mode with a concurrency cap: queue time is the
				       * server's backlog, not the client's lag */
	uint32_t stalls;              /* stalls an agent saw in its own loops (chatload/stall.h) */
	uint32_t agents_missing;      /* silences that made the coordinator mark an agent missing */
	uint32_t coordinator_stalls;  /* stalls of the coordinator itself */
};

enum cl_client_reason {
	CL_CLIENT_CPU = 1,
	CL_CLIENT_DISPATCH_LAG = 2,
	CL_CLIENT_LOOP_LAG = 4,
	CL_CLIENT_STALL = 8,
	CL_CLIENT_AGENT_MISSING = 16,
	CL_CLIENT_COORDINATOR_STALL = 32,
};

/* Whether an interval's health shows a saturated client: cpu over
 * CL_RESULTS_CLIENT_CPU_FRACTION of capacity (capacity known). */
bool cl_verdict_cpu_bound(double cpu_pct, double cpu_capacity_pct);

/* The reasons (bitmask of enum cl_client_reason) a stage is client-bound; 0: it is not.
 * cpu: any cpu-bound interval; lags: p99 above CL_RESULTS_CLIENT_LAG_US; stall: any stall
 * an agent saw; agent_missing: any agent that went missing and came back;
 * coordinator_stall: any stall of the coordinator itself. */
unsigned cl_verdict_client_bound(const struct cl_client_obs *o);

/* A stage as estimates see it. */
struct cl_stage_ref {
	const char *name;
	bool concurrency_mode;
	uint32_t concurrency;
};

/*
 * The stage an estimate uses: from_stage matching a name first, else a number matching the
 * first concurrency-mode stage with that concurrency; from_stage NULL: the last stage.
 * Returns the index, or -1 when nothing matches (or n is 0).
 */
long cl_verdict_find_stage(const char *from_stage, const struct cl_stage_ref *stages, size_t n);

/* Hours to complete `samples` requests at requests_per_s, and the output tokens that means
 * at tokens_per_request.  NAN hours when the rate is not positive. */
void cl_verdict_estimate(uint64_t samples, double requests_per_s, double tokens_per_request,
			 double *hours, double *output_tokens);

/* The run's exit code (enum cl_exit): hint when not 0; else 1 when incomplete, a stage
 * failed, or a client-bound stage fails the run (client_bound_fails: the scenario's
 * `client_bound: fail`, its numbers measure the client); else 99 on any breach; else 0. */
int cl_verdict_exit_code(int hint, bool complete, bool stage_failed, bool client_bound_fails,
			 size_t breaches);

#endif
