/* chatload-sim's server: the listening socket, signals and the orderly shutdown on
 * SIGTERM/SIGINT, around one libevent loop. */
#ifndef CHATLOAD_SIM_SERVER_H
#define CHATLOAD_SIM_SERVER_H

#include "sim/sim.h"

#include <stdbool.h>
#include <stddef.h>

/* Writes port to path atomically (a temporary file renamed over it).  0 or CL_EIO. */
int cl_sim_write_port_file(const char *path, int port, struct cl_err *err);

/*
 * Builds the server: event loop, listening socket (refusing a non-loopback address unless
 * cfg->allow_remote), port file, truth log, signal handlers.  s must be zeroed; on failure
 * err says why and cl_sim_server_destroy cleans up what was built.  start_us is the
 * process start on CLOCK_MONOTONIC (readiness phases count from it).
 */
int cl_sim_server_init(struct cl_sim *s, const struct cl_sim_config *cfg, int64_t start_us,
		       struct cl_err *err);

/* Runs the loop until a signal's shutdown has finished.  Blocks.  0 or CL_ESYS. */
int cl_sim_server_run(struct cl_sim *s);

/* Closes everything, flushes the truth log.  Safe on a zeroed or half-built server. */
void cl_sim_server_destroy(struct cl_sim *s);

#endif
