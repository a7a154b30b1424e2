/* The agent's state for one session with a coordinator, shared by the files that serve it:
 * session.c (join, poll, commands), activity.c (engines, warmup and stages), probe_thread.c
 * (the readiness gate on its own thread) and report_queue.c (reports awaiting their ACK). */
#ifndef CHATLOAD_AGENT_SESSION_H
#define CHATLOAD_AGENT_SESSION_H

#include "control.h"

#include "engine/engine.h"
#include "generate/runner.h"
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
	bool failed;                           /* the session ended badly */

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
	uint64_t req_sent;              /* records acknowledged, for the log */
	int64_t final_wait_until_us;   /* a stage's final report held for its records until */
};

/* Records an engine keeps for output.requests before it drops new ones: ~4 MB, two full
 * REQUESTS messages, a second or more of requests at thousands a second. */
#define CL_REQUESTS_RING 8192u

/* ---- session.c ------------------------------------------------------------------------- */

/*
 * One session: dial, HELLO until welcomed, then POLL/REPORT until QUIT, silence or *s->stop.
 * Blocks.  Returns 0 after QUIT, CL_ECLOSED when stopped, CL_ETIMEDOUT after silence,
 * CL_EREFUSED (a refused HELLO leaves its reason in s->refusal, unlogged), or another error.  s->o,
 * s->stop and s->probe_mu must be set; the rest zeroed.
 */
int cl_session_run(struct session *s);

/* Stops the gate and the load and frees everything s owns (not s itself, nor probe_mu). */
void cl_session_cleanup(struct session *s);

/*
 * Sleeps us microseconds, or less when *stop becomes nonzero (the signal handler pokes the
 * wake-up), so SIGTERM ends an idle agent at once.  Returns false when stopped.
 */
bool cl_session_nap(const atomic_int *stop, int64_t us);

/* Puts the agent in CL_AGENT_FAILED with the formatted message (sent with the next POLL). */
void cl_session_fail(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- report_queue.c -------------------------------------------------------------------- */

/* Queues a report, encoded now with the next seq; an interval report is sent its share of
 * the spread later (cl_wire_report_spread_us), the others at once.  Logs and drops it when
 * the queue is full or it cannot be encoded. */
void cl_report_queue_push(struct session *s, struct cl_msg_report *rep, const char *what);

/* The oldest queued report (the one to send), NULL when none is queued. */
struct pending_report *cl_report_queue_head(struct session *s);

/* Checks the coordinator's reply to the oldest report and takes that report off the queue
 * when ACKed or refused: 0, CL_EREFUSED (dropped) or CL_EPROTO (kept for the next try), with
 * err filled. */
int cl_report_queue_answered(struct session *s, const struct cl_msg *reply, struct cl_err *err);

/* Drops every queued report. */
void cl_report_queue_clear(struct session *s);

/* ---- activity.c ------------------------------------------------------------------------ */

/* PREPARE: takes ownership of reply's plan (reply is zeroed), checks the target against the
 * allow-list and builds the engine.  Failures put the agent in CL_AGENT_FAILED. */
void cl_activity_prepare(struct session *s, struct cl_msg *reply);
/* BODIES: appends the next part of the workload PREPARE began (taking the bodies out of c);
 * with the last part, sets up as PREPARE does.  Out of order: the session fails. */
void cl_activity_bodies(struct session *s, struct cl_msg_cmd *c);

/* WARMUP: starts the warmup now, on its own engine when it has its own body. */
void cl_activity_warmup(struct session *s, struct cl_msg_cmd *c);

/* START_AT: starts the stage at the coordinator time it names, on this agent's clock. */
void cl_activity_start_stage(struct session *s, struct cl_msg_cmd *c);

/* Queues the stage's delta when an interval has passed, and the final one when it ended. */
void cl_activity_pump(struct session *s, int64_t now);

/* Stops the stage or warmup in progress (cut_now: abandon requests in flight) and waits for
 * the engine, up to 15 s. */
void cl_activity_stop(struct session *s, bool cut_now);

/* Stops any activity and destroys both engines. */
void cl_activity_destroy(struct session *s);

/* ---- generate.c ------------------------------------------------------------------------ */

/* GENERATE: starts the runner with this agent's share (the target checked against the
 * allow-list).  With a runner already running, only its rate changes (an agent was lost and
 * this one takes part of its share): leases and streams stay.  Failures fail the agent. */
void cl_generate_start(struct session *s, struct cl_msg_cmd *c);
/* LEASE: hands the items to the runner (taking them out of c).  Without a runner the
 * session fails. */
void cl_generate_lease(struct session *s, struct cl_msg_cmd *c);
/* When no ANSWERS is pending, encodes the next one from the runner's finished answers into
 * s->ans_buf (ans_pending set).  Returns true when one is pending. */
bool cl_generate_next_answers(struct session *s);
/* The pending ANSWERS was acknowledged: drops it. */
void cl_generate_answered(struct session *s);
/* Stops the runner (requests in flight cut) and drops the pending ANSWERS. */
void cl_generate_stop(struct session *s);

/* ---- requests.c ----------------------------------------------------------------------- */

/* When no REQUESTS is pending, encodes the next one from the engine's waiting records into
 * s->req_buf (req_pending set).  Returns true when one is pending. */
bool cl_requests_next(struct session *s);
/* The pending REQUESTS was acknowledged: drops it. */
void cl_requests_answered(struct session *s);
/* Records not yet acknowledged: waiting in the engine or in the pending message. */
size_t cl_requests_outstanding(struct session *s);
/* Drops the pending REQUESTS. */
void cl_requests_clear(struct session *s);

/* ---- probe_thread.c -------------------------------------------------------------------- */

/* PROBE: takes ownership of reply's settings (reply is zeroed) and starts the readiness gate
 * on its own thread.  Failures put the agent in CL_AGENT_FAILED. */
void cl_probe_thread_start(struct session *s, struct cl_msg *reply);

/* Queues the gate's progress (every 2 s at most) and, when it has finished, its result. */
void cl_probe_thread_pump(struct session *s, int64_t now);

/* Cancels a running gate and joins its thread (a no-op when none runs). */
void cl_probe_thread_stop(struct session *s);

#endif
