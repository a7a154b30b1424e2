/* The control thread's wake-up: one pipe that the signal handler and nng's aio callbacks poke
 * and the control thread sleeps on, so it sleeps as long as it means to (no timed slices to
 * look at a stop flag) and still wakes at once for a stop or a reply. */
#ifndef CHATLOAD_AGENT_DAEMON_WAKE_H
#define CHATLOAD_AGENT_DAEMON_WAKE_H

#include <stdint.h>

/* Once, before the signal handlers are installed and any aio exists.  0, or -errno. */
int cl_wake_open(void);
/* Wakes the sleeper (or its next sleep).  Async-signal-safe; any thread. */
void cl_wake_poke(void);
/* Sleeps until poked or for us, whichever comes first, and takes every poke made so far.
 * Only the control thread sleeps here.  Callers re-check what they wait for: a poke may be
 * for something else. */
void cl_wake_sleep(int64_t us);

#endif
