/* What the agent runs for a benchmark: PREPARE (and its BODIES) builds the engine, WARMUP and
 * START_AT run it, and each interval's and the final measurements go to the report queue.
 * Called by session.c; calls report_queue.h, requests.h (records still owed before a final
 * report) and state.h. */
#ifndef CHATLOAD_AGENT_DAEMON_ACTIVITY_H
#define CHATLOAD_AGENT_DAEMON_ACTIVITY_H

#include "agent/daemon/state.h"

#include <stdbool.h>
#include <stdint.h>

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

#endif
