/* What the fleet keeps beside its agent table, each on a thread other than the run loop's:
 * the watch on the coordinator's own stalls (fleet/watch.c) and the address book of the
 * pipes agents came on (fleet/peers.c).  Internal to the files of fleet/, hence cli_fleet_. */
#ifndef CHATLOAD_FLEET_INTERNAL_H
#define CHATLOAD_FLEET_INTERNAL_H

#include "chatload/stall.h"

#include <nng/nng.h>
#include <stddef.h>
#include <stdint.h>

/* ---- fleet/watch.c ------------------------------------------------------------------- */

struct cli_fleet_watch;

/*
 * Starts a thread that wakes every 100 ms and notes every wake-up CL_STALL_MIN_US or more
 * late, by CLOCK_MONOTONIC or CLOCK_BOOTTIME (which also runs while the machine sleeps): a
 * stall of the whole coordinator process (SIGSTOP, a VM pause, a suspend, a starved host).
 * A thread of its own, because the run loop may block in a slow fsync without being stalled.
 * 0, CL_ENOMEM or CL_ESYS; *out is NULL on failure.
 */
int cli_fleet_watch_start(struct cli_fleet_watch **out);

/* Adds a stall seen by another thread (the run loop's own late wake-up), [start, +length). */
void cli_fleet_watch_note(struct cli_fleet_watch *w, int64_t start_us, int64_t length_us);

/* Moves the stalls noted since the last call into out (merged, oldest first); returns how
 * many.  Never blocks for long. */
uint32_t cli_fleet_watch_take(struct cli_fleet_watch *w, struct cl_stall_list *out);

/* Stops and joins the thread and frees w.  Accepts NULL. */
void cli_fleet_watch_stop(struct cli_fleet_watch *w);

/* ---- fleet/peers.c ------------------------------------------------------------------- */

struct cli_fleet_peers;

/*
 * Registers with sock's pipe events and remembers the remote address of every pipe as it is
 * added, so a message handled after its pipe closed (a backlog read after a partition heals
 * or the coordinator wakes up) still names its peer.  Keeps the latest 256 pipes.  0 or
 * CL_ENOMEM / CL_ESYS; *out is NULL on failure.  Free only after sock is closed.
 */
int cli_fleet_peers_open(nng_socket sock, struct cli_fleet_peers **out);

/* The address of the pipe a message came on into buf: as it is now, else as remembered,
 * else "peer of closed pipe N" (only past 256 newer pipes).  Returns buf. */
char *cli_fleet_peers_name(struct cli_fleet_peers *p, nng_msg *msg, char *buf, size_t n);

/* Frees p.  Accepts NULL.  The socket must be closed first (no callback may be running). */
void cli_fleet_peers_free(struct cli_fleet_peers *p);

#endif
