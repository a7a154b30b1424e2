/* The agent's load engine: W worker threads, each a libcurl multi on epoll, that send one
 * stage's requests and measure every stream exactly (see docs/engine.md). */
#ifndef CHATLOAD_ENGINE_H
#define CHATLOAD_ENGINE_H

#include "client/http/allow.h"

#include "chatload/err.h"
#include "chatload/fdlimit.h"
#include "chatload/metrics.h"
#include "chatload/plan.h"
#include "chatload/srcaddr.h"
#include "chatload/stall.h"
#include "chatload/reqrec.h"

#include <stdbool.h>
#include <stdint.h>

struct cl_engine;

#define CL_ENGINE_DEFAULT_MAX_STREAMS CL_AGENT_MAX_STREAMS /* chatload/fdlimit.h */
#define CL_ENGINE_MAX_PREFIX          64                   /* longest request_id_prefix */

struct cl_engine_cfg {
	uint32_t workers;                        /* worker threads; 0 = online CPUs */
	uint32_t max_streams;                    /* preallocated stream slots across workers;
						  * 0 = CL_ENGINE_DEFAULT_MAX_STREAMS */
	const struct cl_target_plan *target;     /* deep-copied */
	const struct cl_workload_plan *workload; /* deep-copied */
	const char *request_id_prefix;           /* X-Request-Id = "<prefix>-<worker>-<seq>";
						  * [A-Za-z0-9._:-], at most 64 bytes; NULL: "cl" */
	const char *request_log_path;            /* optional JSONL, one line per finished request
						  * (docs/engine.md lists the fields); truncated at
						  * create */
	uint32_t request_records; /* output.requests: room for this many finished requests'
				   * records awaiting cl_engine_take_records; 0: none kept */
	int64_t good_ttft_us, good_tpot_us, good_e2e_us; /* per-request SLOs for goodput; 0 off */
	const struct cl_allow_list *allow;               /* targets this engine may load (an agent's
							  * --allow-target); NULL or empty: any */
	/* ---- source addresses (issue 29; agents.source_addresses, --source-address) ---- */
	const struct cl_srcaddr_pool *source; /* copied; NULL or empty: the kernel picks. Each
					       * stream slot binds its connections to one
					       * address, the slots taking them in turn */
};

/*
 * Validates cfg, raises RLIMIT_NOFILE to its hard limit, prepares the target with
 * cl_http_target_init (URL checked against cfg->allow, API key read from
 * getenv(target->api_key_env) once and never logged, headers checked), deep-copies the plans
 * and starts the worker threads, which then wait idle for a stage.  Blocks only for that
 * setup.  Returns 0 and *out, or CL_EINVAL (bad cfg; message in err), CL_EREFUSED (target not
 * allowed, api_key_env not set), CL_ENOMEM, CL_ESYS, CL_EIO (request log cannot be opened).  On
 * failure *out is NULL and nothing is left behind. The program must have called curl_global_init
 * (once, in main, before any thread starts); the engine never does.
 */
CL_MUST_CHECK int cl_engine_create(const struct cl_engine_cfg *cfg, struct cl_engine **out,
				   struct cl_err *err);

/* Connections the engine's requests opened from source address i of cfg->source (in pool
 * order) since it was created; 0 for an i out of range.  Thread-safe, never blocks. */
uint64_t cl_engine_source_connections(const struct cl_engine *e, size_t i);

/*
 * Starts one stage: share is this agent's part of it, split across the workers with
 * cl_stage_plan_split (equal weights).  start_mono_us is CLOCK_MONOTONIC µs and may be in
 * the future (the workers wait for it).  Non-blocking: returns once every worker has been
 * handed its share.  share is copied.  CL_ESTATE if a stage is running (state not IDLE or
 * DONE), CL_EINVAL for a share the engine cannot run (e.g. a worker's concurrency above its
 * slots, neither duration nor requests), CL_ERANGE when over HTTP/1.1 its concurrency (or
 * rate cap) needs more sockets than the open-file limit leaves (the message says both).  Metrics
 * left from an earlier stage should be collected before starting; they are not discarded.
 */
int cl_engine_start(struct cl_engine *e, const struct cl_stage_plan *share, int64_t start_mono_us,
		    struct cl_err *err);

/*
 * Adds everything recorded since the previous collect into acc (a delta: histograms merged,
 * counters added, error samples appended) and merges this interval's health gauges into
 * acc->health the way cl_metrics_merge does (cpu_pct, cpu_pct_capacity, rss_bytes: max;
 * inflight: added) — so pass a freshly reset acc per interval.  acc must be initialised.
 * Never stalls the hot path: each worker swaps its metrics record at a safe point between
 * events and the merge happens here, in the caller's thread.  Blocks at most ~1 s in all for
 * that handoff (a worker that misses it is picked up by the next collect, so nothing is lost
 * or counted twice).  Returns 0, or CL_ETIMEDOUT when some worker missed the handoff (acc
 * then holds the others).  Concurrent calls are safe: they take turns.
 */
int cl_engine_collect(struct cl_engine *e, struct cl_metrics *acc);

/*
 * Moves the stalls the workers' event loops saw since the previous call into into (merged:
 * one freeze seen by every worker is one episode).  A stall is a pacing expiry handled
 * CL_STALL_MIN_US or more after it was due; start_us is on this process's CLOCK_MONOTONIC.
 * Non-blocking (each worker's lock is held for a copy).
 */
void cl_engine_take_stalls(struct cl_engine *e, struct cl_stall_list *into);

enum cl_engine_state {
	CL_ENGINE_IDLE,     /* no stage started yet */
	CL_ENGINE_WAITING,  /* started, before start_mono_us */
	CL_ENGINE_RAMPING,  /* in the ramp (not measured) */
	CL_ENGINE_RUNNING,  /* in the measured window */
	CL_ENGINE_DRAINING, /* window over: in-flight requests finishing, until drain_timeout */
	CL_ENGINE_DONE      /* every worker finished the stage */
};

/* The stage's state: the least advanced worker's.  Non-blocking. */
enum cl_engine_state cl_engine_state(struct cl_engine *e);
/* "idle", "waiting", ... */
const char *cl_engine_state_name(enum cl_engine_state s);

/*
 * Ends the stage early: requests stop being started; in-flight ones drain for the stage's
 * drain_timeout_us then are cut (counted CL_CTR_CUT, not errors); cut_now cuts them at once.
 * The measured window closes now.  Non-blocking; no-op when no stage is running.
 */
int cl_engine_stop(struct cl_engine *e, bool cut_now);

/* Blocks until the stage is DONE (0) or timeout_us passes (CL_ETIMEDOUT); timeout_us < 0
 * waits for ever.  CL_ESTATE when no stage was started. */
int cl_engine_wait(struct cl_engine *e, int64_t timeout_us);

/* Streams in flight now, over all workers.  Non-blocking. */
int64_t cl_engine_inflight(struct cl_engine *e);

/* Things about the last (or current) stage that metrics.h has no counter for. */
struct cl_engine_stats {
	uint64_t unsent_backlog; /* rate mode: arrivals due inside the window that were still
				  * waiting for a slot (concurrency cap) when the window closed */
	uint64_t ramp_started;   /* requests started during the ramp (not measured) */
	uint64_t ramp_finished;  /* ... of which finished (any outcome) */
	uint64_t loop_turns;     /* epoll_wait returns, all workers, since create */
	uint64_t socket_events;  /* socket readiness events handed to libcurl, since create */
	uint64_t reconnects;     /* since create: times a request was re-sent on a fresh
				  * connection because the reused one had been closed by the
				  * server (by libcurl, or by the engine once libcurl gave up) */
	uint64_t closed_at_done; /* since create: transfers ended by the engine at [DONE]
				  * (a body delimited by a close that had not come), connection
				  * dropped */
	uint32_t workers;        /* worker threads */
	uint32_t slots_per_worker;
};

/* Fills st (a snapshot; counters of workers still running may move).  Non-blocking. */
void cl_engine_stats(struct cl_engine *e, struct cl_engine_stats *st);

/*
 * Per-request records (cfg.request_records): turns recording on (a stage) or off (a warmup).
 * Each request that finishes while it is on becomes one record, kept until taken; when
 * request_records are waiting the newest is dropped and counted instead.  Non-blocking; a
 * no-op without request_records.
 */
void cl_engine_record_requests(struct cl_engine *e, bool on);

/*
 * Abandoned requests (workload.cancel): on while a stage runs, off for a warmup, whose
 * requests are never cancelled.  A no-op without workload.cancel.  Non-blocking.
 */
void cl_engine_cancel_requests(struct cl_engine *e, bool on);

/* Moves up to max waiting records, oldest first, into out; *dropped gets the records dropped
 * since create.  Returns how many were moved.  Takes the records' lock briefly. */
size_t cl_engine_take_records(struct cl_engine *e, struct cl_req_record *out, size_t max,
			      uint64_t *dropped);

/* Records waiting to be taken. */
size_t cl_engine_records_waiting(struct cl_engine *e);

/* Stops everything (cutting in-flight requests), joins the threads, frees.  NULL ok. */
void cl_engine_destroy(struct cl_engine *e);

#endif
