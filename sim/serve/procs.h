/* chatload-sim --processes N: N servers on one port (SO_REUSEPORT), each its own process
 * with its own state, descriptors and truth log, and the process that started them
 * supervising them (docs/simulator.md, "Several processes"). */
#ifndef CHATLOAD_SIM_PROCS_H
#define CHATLOAD_SIM_PROCS_H

#include "sim/config.h"

/*
 * Runs one server with the given config and returns the program's exit code.  When
 * ready_fd >= 0 it writes the bound port there as text once it listens ("41234\n") and
 * closes it; a server that fails before listening closes it unwritten.
 */
typedef int (*cl_sim_serve_fn)(const struct cl_sim_config *cfg, int ready_fd);

/*
 * Forks cfg->processes children, each running serve() with its own copy of cfg: process i
 * listens with SO_REUSEPORT on the port process 0 bound (so a port 0 is resolved once),
 * writes its truth log and stats file to FILE.<i> and seeds its RNG with seed + i.  Writes
 * cfg->port_file once every child listens.  Then waits: SIGTERM/SIGINT/SIGUSR1 to this
 * process go to every child; a child that ends before it was told to is reported and the
 * others are stopped, so the simulator never half-serves nor hangs.  Blocks until every
 * child has ended; returns the exit code: 0 when every child exited 0 after a stop signal,
 * a child's own code when it failed before listening (2: a bad flag such as a non-loopback
 * --listen), else 1.
 */
int cl_sim_procs_run(struct cl_sim_config *cfg, cl_sim_serve_fn serve);

#endif
