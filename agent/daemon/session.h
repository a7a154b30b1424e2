/* One session with a coordinator, the top of the daemon: dial, join with HELLO, then a long
 * POLL and the queued REPORTs (and a generate job's ANSWERS or a stage's REQUESTS) in flight
 * on REQ contexts of their own, each command applied by the module that owns it (activity.c,
 * probe_thread.c, genjob.c), until QUIT, silence or a stop.  Called by control.c only. */
#ifndef CHATLOAD_AGENT_DAEMON_SESSION_H
#define CHATLOAD_AGENT_DAEMON_SESSION_H

#include "agent/daemon/state.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

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

#endif
