/* A stage's per-request records (output.requests) sent to the coordinator in REQUESTS
 * messages, one in flight at a time on the answers' channel, encoded once so a resend carries
 * the same seq.  Called by session.c and activity.c; calls state.h and the engine's record
 * ring. */
#ifndef CHATLOAD_AGENT_DAEMON_REQUESTS_H
#define CHATLOAD_AGENT_DAEMON_REQUESTS_H

#include "agent/daemon/state.h"

#include <stdbool.h>
#include <stddef.h>

/* When no REQUESTS is pending, encodes the next one from the engine's waiting records into
 * s->req_buf (req_pending set).  Returns true when one is pending. */
bool cl_requests_next(struct session *s);
/* The pending REQUESTS was acknowledged: drops it. */
void cl_requests_answered(struct session *s);
/* Records not yet acknowledged: waiting in the engine or in the pending message. */
size_t cl_requests_outstanding(struct session *s);
/* Drops the pending REQUESTS. */
void cl_requests_clear(struct session *s);

#endif
