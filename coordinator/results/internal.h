/* What the files of results/ share to build the document (cli_rs_): the results object, the
 * stage objects, faults, drift, confidence intervals, warnings.  Not an interface for other
 * folders (results/results.h is; report/ reads documents through results.h and the JSON
 * helpers of results/json_int.h, which this header includes). */
#ifndef CHATLOAD_RESULTS_INTERNAL_H
#define CHATLOAD_RESULTS_INTERNAL_H

#include "coordinator/results/results.h"
#include "coordinator/results/json_int.h"

#include "chatload/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* -- building the document (results/stage.c) -- */
struct cl_metrics;
struct cl_scn_stage;
struct cl_readiness_result;

/* What results/results.c accumulates from a stage's intervals for its client-health verdict. */
struct cli_rs_client {
	double cpu_max_pct;
	double cpu_capacity_pct;
	uint32_t cpu_bound_intervals;
	json_t *stalls;              /* the listed stalls (cl_results_add_stalls), NULL none */
	uint64_t stalls_unlisted;    /* stalls seen but not listed */
	uint32_t stalls_agent;       /* stalls seen by agents, listed or not */
	uint32_t stalls_coordinator; /* silences seen by the coordinator */
	/* the agents' CPU and streams in flight, averaged over the measured window */
	bool load_known;
	double agents_cpu_pct_mean; /* summed over the agents, 100 = one core */
	double streams_mean;
	uint32_t stalls_own; /* the coordinator's own stalls */
	json_t *unaccounted; /* lost agents' blind windows, NULL none */
};

/* The stage object of the document, without intervals (results/stage_finish.c adds them).  NULL
 * when out of memory. */
json_t *cli_rs_stage_json(size_t index, const struct cl_scn_stage *st, const struct cl_metrics *m,
			  double window_s, enum cl_stage_status status, const char *reason,
			  const struct cli_rs_client *client, enum cl_api api);
/* results/stage.c: the stage's "endpoints" array from m's endpoint records (urls: the
 * scenario's target.urls, a JSON array, read by index).  NULL when out of memory. */
json_t *cli_rs_endpoints_json(const struct cl_metrics *m, const json_t *urls, double window_s);
/* results/timing.c: the stage's "timing" object (where the time to the first byte went:
 * connection stages, connections opened, TTFT split).  NULL when out of memory. */
json_t *cli_rs_timing_json(const struct cl_metrics *m);
/* results/energy.c: the scenario's `cost` as the document's scenario.cost (json null
 * without one). */
struct cl_scn_cost;
json_t *cli_rs_cost_scenario_json(const struct cl_scn_cost *c);
/* A finished stage's `energy` object from its server.gpu_energy and throughput: power,
 * joules, joules per output token and output tokens per joule.  NULL when the stage has no
 * GPU energy (or out of memory). */
json_t *cli_rs_energy_json(const json_t *stage);
/* A finished stage's `cost` object: money per million output and input tokens at per_hour.
 * NULL when per_hour is NAN (or out of memory). */
json_t *cli_rs_cost_json(double per_hour, const char *currency, const json_t *stage);
/* One interval's summary (rates over interval_s).  NULL when out of memory. */
json_t *cli_rs_interval_json(double t_s, double interval_s, const struct cl_metrics *m);

/* results/stage.c: a stage's `images` object from the document's workload (its `images` and
 * `prompt_tokens_estimated_mean`) and the stage's `tokens.prompt_per_request`: per_request,
 * prompt_tokens_mean (measured, null without usage), text_prompt_tokens_estimated_mean,
 * prompt_tokens_per_image = (measured - estimate) / per_request.  NULL (and nothing to add)
 * when the workload sends no images, or out of memory. */
json_t *cli_rs_images_json(const json_t *workload, const json_t *stage);
/* The warmup and readiness objects. */
json_t *cli_rs_warmup_json(const struct cl_metrics *m);
json_t *cli_rs_readiness_json(const struct cl_readiness_result *rr);

/* -- the results object, shared by results/results.c, results/summary.c, results/soak.c and
 * results/probe.c -- */
struct cli_rs_drift;
struct cli_rs_ci_reps;
/* The file beside results.json that gets a line per interval as it comes (intervals.c). */
#define CLI_RS_INTERVALS_JSONL "intervals.jsonl"
/* Keeps the run's first error for cl_results_last_error (results.c). */
void cli_rs_remember_error(struct cl_results *r, const struct cl_err *e);

struct stage_state {
	char *name;     /* planned name */
	json_t *server; /* what the server's /metrics said (cl_results_set_server), NULL none */
	bool finished;
	json_t *intervals; /* kept summaries (every stride-th) */
	uint64_t stride;
	uint64_t seen;
	struct cli_rs_client client;
	json_t *checks; /* this stage's SLO checks, once finished */
	/* a capacity search's probe: judged by the search's SLOs, not the run's */
	bool probe;
	char *probe_search;
	double probe_level;
	struct cl_scn_slo *probe_slos;
	size_t n_probe_slos;
	/* slo.abort_on_breach window: breached intervals in a row, and the latest's SLO */
	uint32_t breach_streak;
	char breach_why[200];
	/* drift (results/soak.c): made at the first interval, freed when the stage finishes */
	struct cli_rs_drift *drift;
	double ramp_s, duration_s; /* the scenario stage's: which intervals are measured */
	/* stages[].ci95's batches (results/ci.c): made at the first interval, freed at the end
	 * (of each repeat) */
	struct cli_rs_ci *ci;
	/* `repeat`: the runs planned, done, their objects, and the pooled metrics so far */
	uint32_t repeat_n, repeats_done;
	json_t *repeats;
	struct cl_metrics *pooled;
	struct cli_rs_ci_reps *reps; /* each repeat's histograms (results/ci.c) */
	double pooled_window_s;
	enum cl_stage_status pooled_status;
	char *pooled_reason;
};

/* A request class as the results judge it (workload.classes, copied from the scenario). */
struct cli_rs_class {
	char *name;
	char *model; /* NULL: the run's */
	bool priority_set;
	int64_t priority;
	uint32_t weight;
	uint32_t max_tokens; /* its max_tokens or output_tokens, 0: the bodies' own */
	struct cl_scn_slo *slos;
	size_t n_slos;
};

struct cl_results {
	json_t *doc;
	struct cli_rs_class *classes; /* workload.classes; NULL, 0 without */
	size_t n_classes;
	char *dir;
	FILE *intervals_fp;
	struct stage_state *stages;
	size_t n_stages;
	struct cl_scn_slo *slos;
	size_t n_slos;
	uint64_t *samples;
	size_t n_samples;
	char *from_stage;
	double cost_per_hour;      /* the target's, by the scenario's `cost:` (NAN: none) */
	char *cost_currency;       /* its label (NULL: none) */
	bool client_bound_warn;    /* scenario `client_bound: warn`: a client-bound stage passes */
	enum cl_api api;           /* workload.api: an embeddings stage gets `embeddings` */
	uint32_t abort_intervals;  /* slo.abort_on_breach: { intervals } (0: off) */
	struct cl_scn_drift drift; /* slo.max_drift */
	double report_interval_s;
	int64_t started_wall_us;
	bool finished;
	size_t breaches;
	char last_error[sizeof(((struct cl_err *)0)->msg)];
};

/* results/stage.c: a class's figures, those of a stage: {requests, tokens, throughput,
 * latency_ms, histograms}; NULL when out of memory. */
json_t *cli_rs_class_figures(const struct cl_metrics *m, double window_s);
/* results/classes.c: the scenario's classes copied into r (0 or CL_ENOMEM), and freed. */
int cli_rs_classes_copy(struct cl_results *r, const struct cl_scenario *s);
void cli_rs_classes_free(struct cl_results *r);
/* stages[].classes of a finished stage from m's class records, each with its own SLO checks,
 * which are appended to checks too (a class's breach is the run's), and, from the stage's
 * server object (NULL: none), the server's figures of the class's model_name.  NULL when out of
 * memory; an empty array when m has no class records. */
json_t *cli_rs_classes_json(const struct cl_results *r, const char *stage,
			    const struct cl_metrics *m, double window_s, json_t *checks,
			    const json_t *server);

/* Rebuilds verdict, estimates and warnings from the finished stages, and counts breaches.
 * 0 or CL_ENOMEM. */
int cli_rs_summarise(struct cl_results *r);

/* results/soak.c: drift of one stage.  new: NULL when out of memory (or interval_s <= 0);
 * duration_s 0 for a request-bound stage.  add: one interval (ramp and drain intervals are
 * left out).  json: the stage's `drift` object (null when there is no interval, a note when
 * the stage is too short for two windows), appending max_drift checks to checks when cfg
 * sets limits; NULL when out of memory. */
struct cli_rs_drift *cli_rs_drift_new(const struct cl_scn_drift *cfg, double ramp_s,
				      double duration_s, double interval_s);
void cli_rs_drift_add(struct cli_rs_drift *d, double t_s, double interval_s,
		      const struct cl_metrics *m);
json_t *cli_rs_drift_json(struct cli_rs_drift *d, const struct cl_scn_drift *cfg, const char *stage,
			  json_t *checks);
void cli_rs_drift_free(struct cli_rs_drift *d);
/* results/ci.c: the 95 % intervals of a stage's headline figures (docs/results.md, "ci95").
 * new: NULL when out of memory; duration_s 0 for a request-bound stage.  add: one interval
 * (ramp and drain left out).  json: the stage's ci95 object, the point estimates read from
 * the finished stage object, cumulative its pooled metrics (the percentiles' quantiles); null when
 * there are fewer than 5 whole batches.  NULL when out of memory.  repeats_json: ci95 across n
 * repeats' stage objects (t interval over their figures; for the percentiles, with reps holding
 * the same n repeats and pooled their merged metrics, the interval of the distribution function
 * at the pooled percentile across them), around the pooled stage's estimates; null for n < 2. */
struct cli_rs_ci *cli_rs_ci_new(double ramp_s, double duration_s);
void cli_rs_ci_add(struct cli_rs_ci *c, double t_s, double interval_s, const struct cl_metrics *m);
json_t *cli_rs_ci_json(const struct cli_rs_ci *c, const json_t *stage,
		       const struct cl_metrics *cumulative);
json_t *cli_rs_ci_repeats_json(const json_t *stage, const json_t *const *repeats, size_t n,
			       const struct cli_rs_ci_reps *reps, const struct cl_metrics *pooled);
/* The repeats' histograms the percentiles' interval across repeats needs (cdf_repeats): new
 * (NULL when out of memory), add one finished repeat's metrics (0 or CL_ENOMEM), free. */
struct cli_rs_ci_reps *cli_rs_ci_reps_new(void);
int cli_rs_ci_reps_add(struct cli_rs_ci_reps *r, double window_s, const struct cl_metrics *m);
void cli_rs_ci_reps_free(struct cli_rs_ci_reps *r);
void cli_rs_ci_free(struct cli_rs_ci *c);
/* Half the width of the 95 % t interval of the mean of the finite values of v[0..n); NaN
 * with fewer than two. */
double cli_rs_ci_half(const double *v, size_t n);

/* results/soak.c: judges one interval of a stage (ending t_s into it) against the SLOs that
 * apply to it, for the abort window (ss->breach_streak, ss->breach_why); ramp and drain
 * intervals are skipped. */
void cli_rs_interval_breach(const struct cl_results *r, struct stage_state *ss, double t_s,
			    const struct cl_metrics *m, double interval_s);

/* results/run_info.c: the document's `scenario` object: what was asked (name, file and its
 * digest read from path, target without credentials, SLOs, estimate, cost).  NULL when out
 * of memory. */
json_t *cli_rs_scenario_json(const struct cl_scenario *s, const char *path);

/* results/results.c: rebuilds the summary and rewrites results.json atomically.  0, or the error
 * (remembered for cl_results_last_error). */
CL_MUST_CHECK int cli_rs_write(struct cl_results *r);

/* Holds the finished stages' kept intervals to CL_RESULTS_MAX_FINISHED_INTERVALS rows in
 * all: while they hold more, the one that holds the most is halved (its stride doubles;
 * intervals.c).  0, or CL_ENOMEM. */
int cli_rs_fit_finished_intervals(struct cl_results *r);

/* results/probe.c: frees what a stage state owns (not the array slot). */
void cli_rs_stage_state_free(struct stage_state *ss);
/* results/probe.c: a probe's SLO checks on its cumulative metrics, in the stage's `probe`
 * object: {search, level, pass, checks}.  NULL when out of memory. */
json_t *cli_rs_probe_json(const struct stage_state *ss, const struct cl_metrics *m,
			  double window_s);
/* results/stage_finish.c: evaluates slos[0..n) that apply to the stage called name.  NULL: no
 * memory. */
json_t *cli_rs_checks(const struct cl_scn_slo *slos, size_t n, const char *name,
		      const struct cl_metrics *m, double window_s);

/* -- faults (results/faults.c) -- */
/* Each agent's episodes (stalls, silences, loss) gathered from the stages' records into
 * the document's agents[].episodes.  0 or CL_ENOMEM. */
int cli_rs_agent_episodes(json_t *doc);
/* Appends the warnings the stages' faults call for (a lost agent's unaccounted load, the
 * coordinator's own stalls) to w.  0 or CL_ENOMEM. */
int cli_rs_fault_warnings(json_t *w, const json_t *stage);

/* results/util.c: appends the formatted warning (at most 1023 bytes) to arr.  0 or
 * CL_ENOMEM. */
int cli_rs_warn(json_t *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* results/util.c: inserts stage object o (taken, even on failure; NULL is CL_ENOMEM) into the
 * document's stages array before the first stage with a higher "index", keeping scenario
 * order whatever order stages finish in.  0 or CL_ENOMEM. */
int cli_rs_insert_stage(json_t *stages, size_t index, json_t *o);

/* results/summary.c: whether stage s's client-bound flag fails the run (every reason but
 * loop_lag and dispatch_lag, which only warn). */
bool cli_rs_client_bound_gates(const json_t *s);

#endif
