/* State shared by the files that implement chatload run: run/run.c (the whole run), run/setup.c
 * (processes), run/phase.c (the agents in a phase), run/gate.c (readiness and warmup),
 * run/stage.c (a stage), run/merge.c (reports); internal to them, hence cli_run_. */
#ifndef CHATLOAD_RUN_INTERNAL_H
#define CHATLOAD_RUN_INTERNAL_H

#include "coordinator/fleet/fleet.h"
#include "coordinator/live/http.h"
#include "coordinator/live/metrics.h"
#include "coordinator/run/progress.h"
#include "coordinator/results/results.h"
#include "coordinator/run/run.h"
#include "coordinator/run/spawn.h"
#include "coordinator/server/scrape.h"

#include "chatload/metrics.h"
#include "chatload/plan.h"
#include "chatload/readiness.h"
#include "coordinator/scenario/scenario.h"
#include "coordinator/workload/workload.h"
#include "chatload/stall.h"

#include <stdbool.h>
#include <stdint.h>

#define CL_RUN_MAX_LOCAL  64
#define CL_RUN_RECENT     3          /* reports behind an agent's last rate */
#define RUN_SERVE_US      100000     /* one turn of a wait serves the fleet this long */
#define RUN_HANG_GRACE_US 30000000LL /* waited beyond a phase's own bound, for hangs */

/* Everything the run knows about one agent, kept at the agent's index in the fleet (id - 1).
 * The fleet keeps the wire side (session, liveness, queued commands, the figures the
 * agent sends about itself); this is what the run gave the agent and heard back from it,
 * phase by phase.  A new per-agent fact goes here, and only here. */
struct run_agent {
	struct cl_stage_plan share;      /* its part of the current stage or warmup (owned) */
	int64_t worst_skew_us;           /* latest start against START_AT it reported, any stage */
	struct cl_source_conns *sources; /* its latest final report's, owned; NULL: none */
	struct {
		struct cl_readiness_result result; /* its latest gate report */
		bool seen;                         /* it reported at least once */
		bool final;                        /* its gate ended: passed, timed out or fatal */
	} probe;
	struct {
		bool participates; /* given a non-empty share */
		bool seen;         /* its warmup report arrived */
	} warm;
	struct {                   /* the stage running now; reset when one starts */
		bool participates; /* given a non-empty share, and not given up on */
		bool final_seen;   /* its FINAL report arrived */
		/* that FINAL said the agent was stopped before the stage's end (a signal of its
		 * own: it cut its requests and left), and why */
		bool left;
		char left_why[256];
		int64_t last_interval;         /* highest interval index reported, -1 */
		int64_t span_us;               /* agent time covered by its reports */
		struct cl_stall_list stalls;   /* stalls it saw itself (coordinator clock) */
		struct cl_stall_list silences; /* it went missing and came back */
		uint32_t returns_seen;         /* the fleet's count of its returns, filed */
		/* Its last reports, newest at recent[n_reports % CL_RUN_RECENT]: the rate its
		 * unreported load is estimated at when it is lost. */
		struct {
			uint64_t completed, output_tokens;
			int64_t span_us;
		} recent[CL_RUN_RECENT];
		uint64_t n_reports;
		bool given; /* it was given a share when the stage began */
	} stage;
};

/* The stage running now: its merged metrics (run/merge.c) and what its loop has decided so
 * far (run/stage.c). */
/* One interval held until every agent has reported it (run/merge.c). */
struct run_slot {
	int64_t k;         /* interval index held, -1: free */
	int64_t group_end; /* last interval an agent reported together with this one */
	/* Taken from the stage's spares while k is held, given back when its row is
	 * written: the stage holds as many records as intervals wait at once (two or three),
	 * not one per slot of the loss window (102 at 100 ms, ~0.5 MiB resident each). */
	struct cl_metrics *m;
	/* each report's agent health, in the slot of the report's last interval */
	struct cl_results_agent_health health[CL_FLEET_MAX_AGENTS];
	size_t n_health;
};

struct run_stage {
	size_t index;
	uint32_t repeat; /* which run of a repeated stage, 1-based (1: the only one) */
	struct cl_srv_mark srv_at_start; /* the server's counters when the stage started */
	const struct cl_scn_stage *scn;
	struct cl_stage_plan plan; /* the whole stage, before the split (names not owned) */
	struct cl_metrics cum;
	/* Intervals held, at k % n_slots: enough for every interval of the loss window, so an
	 * agent that lags (a partition, a stall) but is not lost delays rows, never drops
	 * them. */
	struct run_slot *slots;
	size_t n_slots;
	/* Records no slot holds, reset, kept for the next interval (at most n_slots): the
	 * top n_warm keep their pages, those under them were trimmed (run/merge.c). */
	struct cl_metrics **spare;
	size_t n_spare, n_warm;
	uint64_t n_released; /* records given back: every so often one is trimmed */
	int64_t next_emit;   /* next interval index to write */
	uint64_t late_reports, late_completed; /* data too late for its rows: totals only */
	struct cl_stall_list own_stalls;       /* the coordinator's own, in the stage */
	uint32_t own_first, own_seen;          /* the fleet's n_own at the start, and filed */
	/* last emitted interval, for the progress line */
	double last_req_s, last_tok_s, last_ttft_p50_ms;
	int64_t start_coord_us; /* START_AT, coordinator clock */
	int64_t deadline_us;    /* stop waiting for the agents after this */
	enum cl_stage_status status;
	char reason[1400]; /* why the status is not ok; "" when it is */
	bool stop_sent;    /* a signal arrived and the agents were told to stop */
	bool cut_sent;     /* ... to cut their requests (a signal, even during a drain) */
	bool ended_early;  /* a probe stopped once its SLOs had their samples (search.c) */
	bool noted_run_on; /* ... and said it was running on for them */
	/* when the agents were first told to stop or abort (0: never): the measured window
	 * ended there, the drain began */
	int64_t stopped_at_us;
	/* the agents' CPU (summed, 100 = one core) and streams in flight, sampled every turn
	 * of the measured window, for capacity planning */
	double load_cpu_sum, load_streams_sum;
	uint32_t load_samples;
};

struct run_gen;      /* run/generate.c */
struct run_requests; /* run/requests.c */

struct run {
	struct run_gen *gen;           /* a generate job's state (NULL: a benchmark) */
	struct run_requests *requests; /* output.requests: requests.jsonl (NULL: not asked) */
	struct cl_srv_scrape *srv;     /* the target's /metrics, scraped all run long; NULL: none */
	int64_t srv_t0_us;             /* when scraping began (server_metrics.restarts[].t_s) */
	const struct cl_run_opts *o;
	struct cl_scenario s;
	struct cl_results *res;
	struct cl_progress prog;

	/* processes we own */
	struct cl_child sim;
	struct cl_child local[CL_RUN_MAX_LOCAL];
	size_t n_local;
	char sim_url[128];
	char ipc_path[108];
	char ipc_url[128];
	char token[65];

	struct cl_fleet fleet;
	uint32_t expect;                              /* agents to wait for: local + remote */
	struct run_agent agents[CL_FLEET_MAX_AGENTS]; /* beside fleet.agents, same index */

	/* what the agents are told */
	struct cl_target_plan target;
	struct cl_workload_plan workload;
	struct cl_workload_stats workload_stats;
	char *warmup_body;
	char *probe_extra; /* readiness.body merged over target.body (over workload.tools) */
	bool probe_tools;  /* the probe offers workload.tools (the gate says so when it fails) */

	/* warmup */
	struct cl_metrics warm;
	bool warm_ready;

	/* the stage running now (NULL between stages) */
	struct run_stage *st;

	int exit_hint; /* CL_EXIT_* the run decided (0: let the results decide) */
	bool complete;

	/* --metrics-listen: the live metrics and their HTTP listener (NULL: not asked) */
	struct cl_live_metrics *live;
	struct cl_http_live *http;
	int64_t live_tick_us;
	/* --web: the live report page, on http (same address as --metrics-listen, or none)
	 * or on a listener of its own (http_web); NULL: not asked */
	struct cli_live_web *web;
	struct cl_http_live *http_web;
	int64_t web_tick_us;
};

/* run/requests.c */
/* With output.requests, creates <results>/requests.jsonl and takes the agents' REQUESTS
 * (the fleet's on_requests).  0 (also when not asked), CL_ENOMEM or CL_EIO. */
int cli_run_requests_open(struct run *r, struct cl_err *err);
/* Puts the records written and dropped so far into results.json's requests_log. */
void cli_run_requests_note(struct run *r);
/* Closes the file; REQUESTS are refused after it.  Safe when never opened. */
void cli_run_requests_close(struct run *r);

/* run/setup.c */
int cli_run_start_simulator(struct run *r, struct cl_err *err);
int cli_run_start_fleet(struct run *r, struct cl_err *err);
int cli_run_wait_for_agents(struct run *r, struct cl_err *err);
void cli_run_stop_processes(struct run *r);
void cli_run_record_agents(struct run *r);

/* run/phase.c */
/* The phases the run waits through; each has its own participants and its own last word
 * (a final gate report, the warmup report, a stage's FINAL report). */
enum run_phase { RUN_PHASE_READINESS, RUN_PHASE_WARMUP, RUN_PHASE_STAGE };
enum run_breakage { RUN_FLEET_WHOLE = 0, RUN_FLEET_LOST, RUN_FLEET_FAILED };
/* Whether every agent taking part in p has said its last word. */
bool cli_run_all_finished(const struct run *r, enum run_phase p);
/* Whether an agent taking part in p is lost or failed: which (*who, index into the fleet)
 * and why (a message for people, into why[n]).  The first such agent is reported. */
enum run_breakage cli_run_fleet_broken(const struct run *r, enum run_phase p, size_t *who,
				       char *why, size_t n);
/* Splits whole among the agents in proportion to their workers (a lost agent gets nothing)
 * into each agent's share, freeing the previous shares first.  0, CL_ENOMEM, CL_EINVAL (no
 * agents); on failure no agent holds a share. */
int cli_run_split_shares(struct run *r, const struct cl_stage_plan *whole);
/* Whether agent i's share of whole asks for any load at all. */
bool cli_run_has_share(const struct run *r, size_t i, const struct cl_stage_plan *whole);

/* run/merge.c */
/* The fleet's report callback: files a readiness, warmup or stage report under its agent
 * and merges stage metrics into r->st, writing every interval all agents have reported. */
void cli_run_on_report(void *ctx, struct cl_fleet_agent *a, struct cl_msg_report *rep);
/* Sizes and allocates the stage's held intervals for the loss window.  0 or CL_ENOMEM. */
int cli_run_intervals_init(struct run *r, struct run_stage *st);
/* Frees them (safe on a stage whose init failed). */
void cli_run_intervals_free(struct run_stage *st);
/* Writes the intervals every agent still waited for has reported; call after liveness
 * changed (a lost agent is no longer waited for). */
void cli_run_emit_intervals(struct run *r);
/* At the end of a stage: writes the intervals still held, complete or not. */
void cli_run_flush_intervals(struct run *r);

/* run/faults.c: what faults leave in a stage's record. */
/* Takes the coordinator's own stalls the fleet noticed since the last call into r->st. */
void cli_run_note_own_stalls(struct run *r);
/* Hands the stage's coordinator stalls and its lost agents' unaccounted load (their blind
 * windows, estimated at their last rate) to the results, clipped to [start, end_us). */
void cli_run_file_faults(struct run *r, const struct run_stage *st, int64_t end_us);
/* Why agent a was lost, for people ("silent for more than 10 s"), into buf[n]. */
const char *cli_run_loss_words(const struct cl_fleet_agent *a, char *buf, size_t n);

/* run/prepare.c: PREPARE to every agent, the rest of a large workload in BODIES parts, and
 * the wait until every agent is ready.  Blocks; 0, or CL_EIO / CL_ETIMEDOUT / CL_ECLOSED
 * with r->exit_hint set and a note shown. */
int cli_run_prepare(struct run *r);

/* run/gate.c and run/stage.c: each blocks for its phase.  0 lets the run go on; a negative
 * code stops it (CL_ECLOSED interrupted, CL_EIO failed, CL_ETIMEDOUT the gate or the warmup
 * ran out of time, CL_ENOMEM), and r->exit_hint then says how the run ends (except after
 * CL_ENOMEM). */
int cli_run_readiness(struct run *r);
int cli_run_warmup(struct run *r);
int cli_run_stage(struct run *r, size_t index);
/* Repeat `repeat` (1-based) of stage `index` (scenario `repeat`): as cli_run_stage, with its
 * own seed for the workload's draws, its results recorded as that repeat's. */
int cli_run_stage_repeat(struct run *r, size_t index, uint32_t repeat);
/* Where stage st's measured window ends on the coordinator's clock, at the latest now: the
 * planned end of a duration-bound stage, the slowest agent's finish of a request-bound one,
 * and never after the agents were told to stop or abort.  The server's gauges are averaged up
 * to it (run/stage.c, and the live page's running stage in run/live.c). */
int64_t cli_run_stage_window_end_us(const struct run *r, const struct run_stage *st, int64_t now);

/* run/live.c: --metrics-listen and --web.  open: starts the listeners (0 when not asked;
 * CL_EINVAL for a bad or non-loopback address, CL_ESYS when it cannot bind, err says why;
 * one listener when both flags name the same address).  phase: the run moved on (a fresh
 * snapshot first).  tick: the fleet and the running stage's metrics, at most every 500 ms,
 * and the live report page, at most every second, unless forced.  close: stops serving and
 * frees; safe when not open. */
int cli_run_live_open(struct run *r, struct cl_err *err);
void cli_run_live_phase(struct run *r, enum cl_live_phase p, int exit_code);
void cli_run_live_tick(struct run *r, bool force);
void cli_run_live_close(struct run *r);

/* run/generate.c: a generate job.  check: opens output and errors (a half-written last line
 * repaired, the ids there read), checks the input (exit 2 on a bad line unless
 * skip_invalid) and opens it for the leases; before any agent starts.  0 or a code with err
 * filled (CL_EINVAL: bad input).  generate: the job, after the gate; returns like
 * cli_run_stage.  free: safe when never checked. */
int cli_run_generate_check(struct run *r, struct cl_err *err);
int cli_run_generate(struct run *r);
void cli_run_generate_free(struct run *r);

/* run/search.c: runs the capacity search whose entry is at *index: each probe is inserted
 * before the entry as an ordinary stage and run, until the search has its answer; then the
 * entry is removed, results.json gets `capacity`, and *index is the last probe's.  Returns
 * like cli_run_stage (0 lets the run go on). */
int cli_run_search(struct run *r, size_t *index);

#endif
