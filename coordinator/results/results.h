/* The run's results: ONE JSON document (results.json, schema "chatload.results/1") built
 * from merged metrics, checkpointed to disk as the run goes, rendered by every report. */
#ifndef CHATLOAD_RESULTS_H
#define CHATLOAD_RESULTS_H

#include "chatload/wire.h"
#include "chatload/err.h"
#include "chatload/hist.h"
#include "chatload/metrics.h"
#include "chatload/readiness.h"
#include "coordinator/scenario/scenario.h"
#include "coordinator/workload/workload.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * How the run loop uses this module (one coordinator thread; nothing here is thread-safe):
 *
 *   cl_results_create(scenario, path, argc, argv, out_dir, &r, &err);  // makes the dir
 *   cl_results_set_readiness(r, &gate);        // after the gate (also when it failed)
 *   cl_results_set_warmup(r, &warmup_metrics); // after warmup
 *   cl_results_set_agents(r, agents, n);       // after the fleet joined; again on loss
 *   for each stage i:
 *       every report interval: cl_results_add_interval(r, i, t_s, &delta, interval_s);
 *       at its end:            cl_results_finish_stage(r, i, &s->stages[i], &cumulative,
 *                                                      window_s, CL_STAGE_OK, NULL);
 *       if (s->slo_abort_on_breach && cl_results_breach_count(r) > 0) stop;
 *   cl_results_finish(r, complete, hint, &code);       // verdict, estimates, results.json
 *   // the caller then asks report/report.h for the other files and the table:
 *   cl_report_write_files(cl_results_doc(r), out_dir, formats, &err);  // on failure code 1
 *   cl_report_render(cl_results_doc(r), CL_REPORT_TABLE, stdout);
 *   cl_results_destroy(r);
 *   return code;
 *
 * Files in the output directory: results.json (rewritten atomically after every stage and
 * at the end), intervals.jsonl (one line per stage interval, appended and flushed as it
 * arrives, so a killed run loses at most the interval in flight).  results.csv, report.md
 * and report.html are report/'s, written by the run from the finished document
 * (cl_report_write_files); this module includes nothing of report/.  docs/results.md is the
 * reference for every field.
 */

#define CL_RESULTS_SCHEMA        "chatload.results/1"
#define CL_RESULTS_SCHEMA_PREFIX "chatload.results/"
#define CL_RESULTS_SCHEMA_MAJOR  1
/* Largest results.json `report` and `compare` will read. */
#define CL_RESULTS_MAX_FILE_BYTES (256u << 20)
/* Intervals kept per stage inside results.json: past this the document keeps every other
 * one (stride doubles), so a 12-hour soak stays small; intervals.jsonl keeps them all. */
#define CL_RESULTS_MAX_INTERVALS 1800
/* Intervals kept over all the finished stages: past this the stage that keeps the most is
 * halved, so a sweep of many long stages holds what two long stages hold. */
#define CL_RESULTS_MAX_FINISHED_INTERVALS (2 * CL_RESULTS_MAX_INTERVALS)
/* Agents a kept interval lists at most (intervals.jsonl lists every one). */
#define CL_RESULTS_AGENTS_KEPT 8
/* Most repeats of one stage (scenario `repeat`, `--repeat`). */
#define CL_RESULTS_MAX_REPEATS 100
/* A stage is client-bound when, in any interval, the busiest agent used more than this
 * share of its CPU capacity ... */
#define CL_RESULTS_CLIENT_CPU_FRACTION 0.85
/* ... or when the stage's dispatch lag (queue) p99 or event-loop lag p99 exceeds this. */
#define CL_RESULTS_CLIENT_LAG_US 50000

struct cl_results;

/* One agent as the fleet saw it (strings are copied). */
struct cl_results_agent {
	uint32_t id;
	const char *host;
	uint32_t workers;
	int64_t clock_offset_us; /* coordinator time - agent time */
	int64_t start_skew_us;   /* worst measured start skew over the stages */
	bool lost;
	const char *address; /* the agent's IP address as the coordinator saw it; NULL: local */
	const struct cl_source_conns *sources; /* connections per source address; NULL: none */
};

/*
 * Starts a run's results.  Copies what it needs from s (name, file, stages, slos,
 * estimate, output formats), so s need not outlive r.  scenario_path is hashed (SHA-256
 * of the file's bytes; the field is null when it cannot be read) and may be NULL.  argv
 * (argc entries) is recorded as command_line.  The output directory is out_dir when given
 * (used as is, created if missing); otherwise `<s->output.dir or "results">/<name>-<UTC
 * stamp>/`, made unique with a "-2", "-3"... suffix, with a `latest` symlink next to it.
 * Creates the directory and intervals.jsonl (truncating one left in a reused out_dir) and
 * writes an initial results.json (complete: false).  On failure returns a negative CL_E*
 * code, fills err and sets *out to NULL.
 */
int cl_results_create(const struct cl_scenario *s, const char *scenario_path, int argc, char **argv,
		      const char *out_dir, struct cl_results **out, struct cl_err *err);

/*
 * Makes a run's results directory as cl_results_create does, for a caller that writes into it
 * before the run (chatload bench's scenario.yaml): out_dir when given (used as is, created if
 * missing), else `<parent or "results">/<name>-<UTC stamp of wall_us>/`, made unique with a
 * "-2", "-3"... suffix, with parent's `latest` symlink pointed at it. *dir gets the path
 * (malloc'd; the caller frees). 0, or a negative CL_E* code with err filled.
 */
int cl_results_make_dir(const char *out_dir, const char *parent, const char *name, int64_t wall_us,
			char **dir, struct cl_err *err);

/* Records the readiness gate's outcome (copied).  rr NULL: the gate did not run. */
void cl_results_set_readiness(struct cl_results *r, const struct cl_readiness_result *rr);

/* Records the target the run actually loaded: its URL (credentials stripped; for the
 * built-in simulator, its loopback address) and the model used (found by the readiness
 * gate when the scenario named none).  Top-level field `target`. */
void cl_results_set_target(struct cl_results *r, const char *url, const char *model,
			   bool simulator);

/* Records what the workload was (top-level field `workload`): its source, bodies, output
 * lengths asked for, ignore_eos, shared prefix groups, dataset figures, the run's salt
 * (docs/results.md). */
void cl_results_set_workload(struct cl_results *r, const struct cl_scn_workload *w,
			     const struct cl_workload_stats *st);

/* Records warmup totals (requests started, completed, errors) from the merged warmup
 * metrics; they are excluded from every stage. */
void cl_results_set_warmup(struct cl_results *r, const struct cl_metrics *warmup);

/* Replaces the agents list (copied).  Call again when an agent is lost. */
int cl_results_set_agents(struct cl_results *r, const struct cl_results_agent *agents, size_t n);

/*
 * One report interval of stage `stage` (index into the scenario's stages): `interval` holds
 * the merged deltas of that interval, t_s the end of the interval in seconds since the
 * stage started, interval_s its length.  Appends a line to intervals.jsonl and flushes it;
 * keeps a copy for the stage's `intervals` and its client-health verdict.  Does not
 * rewrite results.json.  CL_EINVAL (bad index, stage already finished), CL_EIO.
 */
int cl_results_add_interval(struct cl_results *r, size_t stage, double t_s,
			    const struct cl_metrics *interval, double interval_s);

/* One agent's health in one report interval: what the run saw in its report. */
struct cl_results_agent_health {
	uint32_t agent;
	double cpu_pct;             /* its process CPU, 100 = one core */
	double loop_lag_p99_ms;     /* NaN: no sample */
	double dispatch_lag_p99_ms; /* NaN: no request dispatched */
};

/* cl_results_add_interval with each agent's health in the interval (agents[n], n may be 0),
 * written as the row's `agents` array. */
int cl_results_add_interval_agents(struct cl_results *r, size_t stage, double t_s,
				   const struct cl_metrics *interval, double interval_s,
				   const struct cl_results_agent_health *agents, size_t n);

/* Stalls a stage's `client.stalls` lists at most; the rest are counted in stalls_unlisted. */
#define CL_RESULTS_MAX_STALLS 64

/* One client stall in a stage: an agent that could not run (seen by its own loops), one
 * that went silent long enough to be called missing and came back (seen by the
 * coordinator), or the coordinator itself that could not run (coordinator_itself: agent 0,
 * host NULL).  Each makes the stage client-bound. */
struct cl_results_stall {
	uint32_t agent;           /* agent id */
	const char *host;         /* its host name (copied) */
	double at_s;              /* when it began, seconds since the stage's START_AT */
	double length_s;          /* how long it lasted */
	bool seen_by_coordinator; /* false: seen by the agent itself */
	bool coordinator_itself;  /* the coordinator's own stall (seen_by_coordinator too) */
};

/*
 * Records stalls of stage `stage` (copied), for its client-health verdict; call before
 * cl_results_finish_stage (any number of times).  unlisted_agent and unlisted_coordinator
 * count stalls seen (by an agent, by the coordinator) that could not be listed.  0,
 * CL_EINVAL (bad index, stage finished), CL_ENOMEM.
 */
int cl_results_add_stalls(struct cl_results *r, size_t stage, const struct cl_results_stall *s,
			  size_t n, uint64_t unlisted_agent, uint64_t unlisted_coordinator);

/* Records what the server's /metrics said over stage `stage` (results.json's stages[].server,
 * from coordinator/server/); takes ownership of server, also on failure.  Call before
 * cl_results_finish_stage.  CL_EINVAL (bad index, finished stage), CL_ENOMEM (server NULL). */
int cl_results_set_server(struct cl_results *r, size_t stage, json_t *server);

/* Records the run-wide account of the server's /metrics (results.json's `server_metrics`:
 * mode, URL, availability, restarts, the extra series kept); takes ownership, also on
 * failure.  Call before cl_results_finish.  CL_ENOMEM (NULL). */
int cl_results_set_server_metrics(struct cl_results *r, json_t *server_metrics);

/* Records the output.requests account (results.json's `requests_log`: file, records
 * written, records the agents dropped, per agent); takes ownership, also on failure.
 * CL_ENOMEM (NULL). */
int cl_results_set_requests_log(struct cl_results *r, json_t *block);

/* Records what the agents spent on stage `stage` over its measured window: their CPU summed
 * (100 = one core) and the streams they had in flight, both averaged over the samples the
 * run took; results.json's client.agents_cpu_pct_mean, streams_mean and cpu_per_stream_pct
 * (capacity planning sizes the agents from them).  Call before cl_results_finish_stage.
 * CL_EINVAL (bad index, finished stage, values not finite). */
int cl_results_set_client_load(struct cl_results *r, size_t stage, double agents_cpu_pct_mean,
			       double streams_mean);

/* Load a lost agent put on the target that no report covers: from the end of its last
 * reported interval until it stopped (an agent stops its load CL_WIRE_AGENT_SILENCE_US after
 * its last reply, or when its share of the stage ends), estimated at its last rate. */
struct cl_results_blind {
	uint32_t agent;
	const char *host;    /* copied */
	const char *cause;   /* how it was lost: "silent" or "coordinator_stall" */
	double from_s;       /* since START_AT: the end of its last reported interval */
	double to_s;         /* when it stopped, at the latest */
	double rate_basis_s; /* the reported time its rate was taken over */
	double requests_per_s, output_tokens_per_s; /* its last rate */
};

/* Records a lost agent's unaccounted load in stage `stage` (copied; listed under the
 * stage's `unaccounted`, warned about).  Call before cl_results_finish_stage.  0,
 * CL_EINVAL (bad index, stage finished), CL_ENOMEM. */
int cl_results_add_unaccounted(struct cl_results *r, size_t stage,
			       const struct cl_results_blind *b);

/* How a stage ended.  results.json spells it with cl_stage_status_name; a stage that is
 * not CL_STAGE_OK carries a reason. */
enum cl_stage_status {
	CL_STAGE_OK,          /* every participating agent finished its share */
	CL_STAGE_FAILED,      /* an agent was lost or failed, or the stage overran its bound */
	CL_STAGE_DEGRADED,    /* an agent was lost and agents.on_loss let the others go on */
	CL_STAGE_INTERRUPTED, /* a signal stopped the run during the stage */
	CL_STAGE_ABORTED,     /* slo.abort_on_breach stopped it: N intervals in a row breached */
	CL_STAGE_N_STATUS
};

/* "ok", "failed", "degraded", "interrupted", "aborted"; NULL for a value outside the enum. */
const char *cl_stage_status_name(enum cl_stage_status s);
/* The inverse, for documents read back: 0, or CL_EINVAL (and *out untouched) when name is
 * NULL or not a status this version writes. */
int cl_stage_status_parse(const char *name, enum cl_stage_status *out);

/*
 * Stage `stage` ended: st is its scenario entry, cumulative the stage's merged metrics,
 * window_s the measured window in seconds (the throughput denominator), status how it
 * ended with an optional reason (copied).  Builds the
 * stage's summary (counts, throughput, latency percentiles, client health, stored
 * histograms), evaluates the SLOs that apply to it, and rewrites results.json atomically.
 * CL_EINVAL (bad index or status, window_s < 0), CL_ESTATE (stage already finished),
 * CL_ENOMEM, CL_EIO (the document is still updated in memory).
 */
int cl_results_finish_stage(struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			    const struct cl_metrics *cumulative, double window_s,
			    enum cl_stage_status status, const char *reason);

/*
 * One run of stage `stage` ended, as cl_results_finish_stage says.  For a stage whose
 * scenario entry has `repeat: N` (N > 1) it records repeat k (the k-th call) in the stage's
 * `repeats` with its own batch-means ci95, merges cumulative into the stage's pooled
 * metrics and window, and at the N-th call finishes the stage from the pooled figures with
 * ci95 across the repeats.  The stage's intervals between calls belong to the next repeat
 * (their rows carry `repeat`).  Any other stage: cl_results_finish_stage.  Same errors.
 */
int cl_results_finish_repeat(struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			     const struct cl_metrics *cumulative, double window_s,
			     enum cl_stage_status status, const char *reason);

/* The run stops before every repeat of stage `stage` ran: finishes it from the repeats that
 * did (its reason says how many), or does nothing when none did or it is finished.  0,
 * CL_EINVAL, CL_ENOMEM, CL_EIO. */
int cl_results_end_repeats(struct cl_results *r, size_t stage, const struct cl_scn_stage *st);

/* A generate job's stage (finished): its mode becomes "generate" and block (taken, also on
 * failure) becomes its `generate` object; results.json is rewritten.  0, CL_EINVAL (not a
 * finished stage), CL_ENOMEM, CL_EIO. */
int cl_results_set_generate(struct cl_results *r, size_t stage, json_t *block);

/* SLO breaches found so far (for slo.abort_on_breach).  0 when none. */
size_t cl_results_breach_count(const struct cl_results *r);

/*
 * Consecutive intervals of stage `stage`, up to the latest, in which an SLO that applies to
 * the stage was breached (each interval judged on its own metrics; a latency SLO on an
 * interval without data is not a breach there).  Counted only when the scenario has
 * slo.abort_on_breach: { intervals: N }.  When not 0, why[n] says which SLO and by how much
 * in the latest interval.  0 for a bad index, a probe or a finished stage.
 */
uint32_t cl_results_breach_streak(const struct cl_results *r, size_t stage, char *why, size_t n);

/* A probe of a capacity search: an ordinary stage in the document, judged by the search's
 * SLOs (its `probe` object) instead of the run's, so its breaches are the search's answer
 * and not the run's verdict. */
struct cl_results_probe_def {
	const char *search;            /* the search's name (copied) */
	double level;                  /* streams, or requests per second */
	const struct cl_scn_slo *slos; /* what it must meet (copied) */
	size_t n_slos;
};

/*
 * Inserts a stage called name (copied) at position at, shifting the stages after it, none
 * of which may have reported an interval or finished (the run inserts a search's probes
 * just before the search's own entry).  probe NULL: an ordinary stage.  0, CL_EINVAL (at past
 * the end, or a later stage already began), CL_ENOMEM.
 */
int cl_results_insert_stage(struct cl_results *r, size_t at, const char *name,
			    const struct cl_results_probe_def *probe);
/* Removes the stage at position at, which has neither reported nor finished (a search's own
 * entry once its probes ran).  0, CL_EINVAL. */
int cl_results_remove_stage(struct cl_results *r, size_t at);

/* The finished stage `stage` as the document has it (owned by r), NULL when it has not
 * finished. */
const json_t *cl_results_stage(const struct cl_results *r, size_t stage);

/*
 * Sets the document's top-level `capacity` from a search's state (its probes are finished
 * stages of this document) and rewrites results.json: the sustainable level and what was
 * measured there, the knee of the throughput curve, the probes, the advice when the search
 * stopped, the plan for plan->requests_per_s or output_tokens_per_s (NULL or zero: none),
 * and a one-line `summary` every renderer prints.  name is the search's, q its scenario
 * entry.  0, CL_EIO (the document is updated in memory), CL_ENOMEM.
 */
struct cl_capacity;
int cl_results_set_capacity(struct cl_results *r, const char *name, const struct cl_scn_search *q,
			    const struct cl_capacity *c, const struct cl_scn_plan *plan);

/*
 * Ends the run: final verdict, estimates, warnings, finished_at, complete and exit_code,
 * then writes results.json and syncs intervals.jsonl (the other output.formats are the
 * caller's to write with cl_report_write_files, from cl_results_doc).  exit_code_hint is what the
 * run loop knows (CL_EXIT_OK, or CL_EXIT_FAILED / CL_EXIT_NOT_READY / ...; CL_EXIT_SLO_BREACH when
 * it stopped early for slo.abort_on_breach, since an incomplete run is otherwise a failed one). The
 * exit code is: the hint when it is not 0; else 1 when the run is incomplete or a stage failed;
 * else 99 when an SLO was breached; else 0.  *exit_code_out is always set (1 when a file could not
 * be written, in which case the first error is returned; cl_results_last_error names it).
 * May be called once.
 */
int cl_results_finish(struct cl_results *r, bool complete, int exit_code_hint, int *exit_code_out);

/* The document (owned by r; valid until destroy).  Never NULL after a successful create. */
const json_t *cl_results_doc(const struct cl_results *r);

/* A copy of the document as it stands (the caller owns it), with each running stage that
 * has reported intervals added as {index, name, status "running", intervals}: what the
 * live report page shows.  A shallow copy: it shares its values with r's document, so the
 * caller only reads it, and drops it before the next call that changes r.  NULL when out
 * of memory.  Same thread as the other calls. */
json_t *cl_results_live_doc(const struct cl_results *r);
/* The output directory (owned by r). */
const char *cl_results_dir(const struct cl_results *r);
/* The first I/O error seen, as a message; "" when none. */
const char *cl_results_last_error(const struct cl_results *r);

/* Frees r and closes intervals.jsonl.  Accepts NULL.  Writes nothing. */
void cl_results_destroy(struct cl_results *r);

/* -- the stored histogram form ----------------------------------------------------------
 * {"lowest", "highest", "sigfigs", "total", "overflow", "min", "max", "sum",
 *  "buckets": [[value, count], ...]} with every number an integer; value is the bucket's
 * highest equivalent value, buckets ascending; min/max/sum are null when total is 0.
 */

/* Encodes h.  Returns a new reference or NULL (out of memory). */
json_t *cl_results_hist_to_json(const struct cl_hist *h);

/*
 * Rebuilds a histogram from its stored form: initialises h from the stored configuration
 * and fills it so that every percentile, the mean, min, max, count and overflow equal the
 * original's exactly.  j is untrusted (a file): every field is type-checked, bucket values
 * must lie in [lowest, the top of the bucket holding highest] and ascend by bucket, counts positive
 * and summing (with overflow) to total, and the bucket list no longer than the configuration
 * allows. On failure returns CL_EPARSE (or CL_EINVAL for an impossible configuration, CL_ENOMEM),
 * fills err naming the field, and leaves h destroyable.
 */
int cl_results_hist_from_json(const json_t *j, struct cl_hist *h, struct cl_err *err);

/* -- reading documents (renderers, compare) -------------------------------------------
 * Lenient accessors for documents read from files: a dotted path of object keys
 * ("throughput.requests_per_s"); missing or mistyped fields give NULL / NAN / def. */
const json_t *cl_results_get(const json_t *o, const char *path);
double cl_results_num(const json_t *o, const char *path);
const char *cl_results_str(const json_t *o, const char *path, const char *def);
/* A stage's client.reasons joined with ", " into buf (truncated to n, "" when it has
 * none); returns buf. */
char *cl_results_client_reasons(const json_t *stage, char *buf, size_t n);

/*
 * Reads and parses a results file (or a directory holding results.json), checks the
 * schema version and the shape every consumer relies on (cl_results_check).  On failure
 * returns CL_EIO / CL_ETOOBIG / CL_EPARSE / CL_EVERSION with err naming the file and the
 * field ("'new.json': stages[1].latency_ms: expected an object").  *out is a new reference.
 */
int cl_results_load(const char *path, json_t **out, struct cl_err *err);

/*
 * The stage a results document's estimates came from: its name (NULL when the document has
 * no estimate resting on a stage; borrowed from doc), the requests/s they used, and whether
 * that stage was client-bound, so its rate describes the client and the hours may be too
 * many (the run's own warnings say so; a generate job planned from it should too).
 */
const char *cl_results_estimate_source(const json_t *doc, double *requests_per_s,
				       bool *client_bound);

/* Checks doc's schema version and structure; err names the first bad field. */
int cl_results_check(const json_t *doc, struct cl_err *err);

/* SHA-256 of a buffer as 64 lower-case hex digits plus NUL into hex[65]. */
void cl_results_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
