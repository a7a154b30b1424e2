/* PROBE: the readiness gate (client/probe/) on a thread of its own, because it blocks; its
 * progress and result handed to the control thread under probe_mu and queued as reports.
 * Called by session.c; calls report_queue.h, state.h and the gate. */
#ifndef CHATLOAD_AGENT_DAEMON_PROBE_THREAD_H
#define CHATLOAD_AGENT_DAEMON_PROBE_THREAD_H

#include "agent/daemon/state.h"

#include <stdint.h>

/* PROBE: takes ownership of reply's settings (reply is zeroed) and starts the readiness gate
 * on its own thread.  Failures put the agent in CL_AGENT_FAILED. */
void cl_probe_thread_start(struct session *s, struct cl_msg *reply);

/* Queues the gate's progress (every 2 s at most) and, when it has finished, its result. */
void cl_probe_thread_pump(struct session *s, int64_t now);

/* Cancels a running gate and joins its thread (a no-op when none runs). */
void cl_probe_thread_stop(struct session *s);

#endif
