/* The daemon's side of a generate job: the GENERATE and LEASE commands applied to the
 * runner (the library agent/generate/, which does the requests) and the runner's finished
 * answers batched into ANSWERS messages.  Called by session.c; calls state.h and the
 * runner. */
#ifndef CHATLOAD_AGENT_DAEMON_GENJOB_H
#define CHATLOAD_AGENT_DAEMON_GENJOB_H

#include "agent/daemon/state.h"

#include <stdbool.h>

/* GENERATE: starts the runner with this agent's share (the target checked against the
 * allow-list).  With a runner already running, only its rate changes (an agent was lost and
 * this one takes part of its share): leases and streams stay.  Failures fail the agent. */
void cl_genjob_start(struct session *s, struct cl_msg_cmd *c);
/* LEASE: hands the items to the runner (taking them out of c).  Without a runner the
 * session fails. */
void cl_genjob_lease(struct session *s, struct cl_msg_cmd *c);
/* When no ANSWERS is pending, encodes the next one from the runner's finished answers into
 * s->ans_buf (ans_pending set).  Returns true when one is pending. */
bool cl_genjob_next_answers(struct session *s);
/* The pending ANSWERS was acknowledged: drops it. */
void cl_genjob_answered(struct session *s);
/* Stops the runner (requests in flight cut) and drops the pending ANSWERS. */
void cl_genjob_stop(struct session *s);

#endif
