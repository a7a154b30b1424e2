/* The state of one session with a coordinator, the one record the daemon's modules share,
 * and what every module may do to it beyond its own fields: fail the session, or move the
 * agent's state (the `state` a POLL tells, docs/protocol.md) with the invariants each state
 * holds checked.  The bottom of the daemon: it calls no other module of the folder.
 *
 * Who owns which fields: session.c the socket, the channels, the run and the clock;
 * activity.c PREPARE's plan, the engines and the stage or warmup in progress;
 * probe_thread.c the gate's fields; report_queue.c the queue q; genjob.c the generate job's
 * runner and its ANSWERS; requests.c the REQUESTS message.  Every field is read and written
 * on the control thread, except those the comments mark for the gate's thread. */
#ifndef CHATLOAD_AGENT_DAEMON_STATE_H
#define CHATLOAD_AGENT_DAEMON_STATE_H

#include "agent/daemon/control.h"

#include "agent/engine/engine.h"
#include "agent/generate/runner.h"
#include "client/probe/readiness.h"

#include "chatload/clock.h"
#include "chatload/err.h"
#include "chatload/metrics.h"
#include "chatload/wire.h"

#include <nng/nng.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Reports the agent holds while the coordinator does not answer: every interval of the
 * longest silence it rides out (CL_WIRE_AGENT_SILENCE_US at the shortest report interval,
 * 100 ms: 100 reports) plus a final, warmup or probe report, so a partition healed in time
 * loses no delta. */
#define MAX_PENDING_REPORTS 128

enum activity { ACT_NONE, ACT_STAGE, ACT_WARMUP };

/* A report encoded once, so a resend after a lost ACK carries the same seq. */
struct pending_report {
	msgpack_sbuffer buf;
	size_t t_send_at; /* where its t_send_us is, set as it goes (cl_wire_restamp) */
	uint64_t seq;
	int64_t not_before_us; /* not sent before this (an interval report's spread) */
	char what[32];
};

/*
 * One request and its reply at a time, on a context of the session's REQ socket.  The
 * session has two: POLLs on one and REPORTs on the other, so a POLL the coordinator holds (a
 * long poll, docs/protocol.md) never delays a report.  The aio's callback sets done and pokes
 * the control thread's wake-up (wake.h); the control thread moves the exchange on.
 */
enum channel_phase { CHANNEL_IDLE, CHANNEL_SENDING, CHANNEL_WAITING };
struct channel {
	const char *name; /* "poll", "report": for messages */
	nng_ctx ctx;
	bool ctx_open;
	nng_aio *aio;
	atomic_bool done;
	enum channel_phase phase;
	bool cancelled;      /* given up on (a stop, or news for a newer POLL) */
	int64_t t_send_us;   /* when the request went */
	int64_t deadline_us; /* the reply is given up after this */
	int64_t next_us;     /* no request before this (a pause after a failure or a NOOP) */
};

/* One session with a coordinator: from dialling to QUIT, silence or a stop. */
struct session {
	const struct cl_agent_opts *o;
	atomic_int *stop; /* set by a signal handler, which may run on any thread */
	nng_socket sock;
	bool sock_open;
	struct channel polls, reports, answers;
	enum cl_agent_state poll_state; /* the state the POLL in flight told */
	uint64_t seq;
	uint32_t agent_id;
	char run[CL_WIRE_MAX_RUN + 1];
	int64_t report_interval_us;
	struct cl_clock_est clock;
	int64_t last_reply_us;
	uint64_t applied_seq;
	enum cl_agent_state state;
	char error[CL_WIRE_MAX_ERROR];
	char refusal[CL_WIRE_MAX_REASON + 64]; /* why the coordinator refused our HELLO ("": it
						* did not) */
	bool quit;                             /* QUIT received */
	bool leaving; /* stopped by a signal: the stage was cut, its final report goes now */
	bool failed;  /* the session ended badly */

	/* PREPARE */
	struct cl_msg prepare_msg; /* owns the decoded target and workload */
	bool prepared;
	struct cl_engine *engine;

	/* stage or warmup in progress */
	enum activity act;
	struct cl_engine *act_engine; /* engine running it (engine, or warm_engine) */
	struct cl_engine *warm_engine;
	struct cl_workload_plan warm_workload;
	struct cl_request_body warm_body;
	uint32_t stage;
	uint32_t interval;
	int64_t interval_start_us;
	int64_t start_local_us;
	int64_t start_skew_us; /* how late START_AT was applied; sent with the first report */
	struct cl_metrics acc;
	bool acc_ready;
	uint64_t acc_uses;           /* intervals reported from acc: every so often it is trimmed */
	struct cl_stall_list stalls; /* the control thread's own stalls in the stage, unreported */

	/* PROBE, run on its own thread because the gate blocks */
	pthread_t probe_thread;
	bool probe_running;
	atomic_int probe_cancel; /* set by the control loop, read by the gate's thread */
	atomic_int probe_done;   /* set by the gate's thread once probe_res is filled */
	struct cl_msg probe_msg; /* owns the probe settings */
	struct cl_probe_cfg probe_cfg;
	struct cl_readiness_result probe_res;
	/* progress of a running gate, handed over from its thread */
	pthread_mutex_t probe_mu;
	struct cl_readiness_result probe_now;
	bool probe_news;
	int32_t probe_sent_phase; /* the phase of the last progress sent */
	int64_t probe_last_sent_us;

	/* reports waiting for their ACK, oldest first */
	struct pending_report q[MAX_PENDING_REPORTS];
	size_t q_head, q_len;

	int64_t cpu_prev_us, cpu_prev_at_us;

	/* a generate job (GENERATE, LEASE): its runner and the ANSWERS message in flight,
	 * encoded once so a resend carries the same seq */
	struct cl_gen_runner *gen;
	msgpack_sbuffer ans_buf;
	bool ans_pending; /* ans_buf holds an ANSWERS not yet acknowledged */
	uint64_t ans_seq;
	size_t ans_count;
	uint64_t ans_sent; /* answers acknowledged, for the log */

	/* output.requests: the REQUESTS message in flight on the same channel, encoded once so
	 * a resend carries the same seq (requests.c) */
	msgpack_sbuffer req_buf;
	bool req_pending;
	uint64_t req_seq;
	size_t req_count;
	uint64_t req_sent;           /* records acknowledged, for the log */
	int64_t final_wait_until_us; /* a stage's final report held for its records until */
};

/* Records an engine keeps for output.requests before it drops new ones: ~4 MB, two full
 * REQUESTS messages, a second or more of requests at thousands a second. */
#define CL_REQUESTS_RING 8192u

/* Puts the agent in CL_AGENT_FAILED with the formatted message (sent with the next POLL),
 * and logs it. */
void cl_session_fail(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Moves the agent to state st, asserting what st means holds (CL_ASSERT, on in release):
 * READY has a prepared engine; RUNNING a stage, a warmup or a generate job under way; DRAINING
 * a stage or warmup under way; DONE none any more.  IDLE and PREPARING assert nothing (a
 * gate, a new PREPARE or ABORT may come in any state); FAILED goes through cl_session_fail.
 */
void cl_session_set_state(struct session *s, enum cl_agent_state st);

#endif
