/* What `chatload run` does once its flags are read, shared with `chatload bench`, which runs
 * the scenario it writes through exactly this path. */
#ifndef CHATLOAD_CMD_RUN_INT_H
#define CHATLOAD_CMD_RUN_INT_H

#include "coordinator/run/run.h"

/* Installs run's SIGINT/SIGTERM handlers (they set o->stop, which this points at its flag)
 * and ignores SIGPIPE, then runs o (cl_run). Blocks for the run; returns its exit code. */
int cli_cmd_run_opts(struct cl_run_opts *o);

#endif
