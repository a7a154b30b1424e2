/* chatload-sim --processes: N servers on one port under common's supervisor (procs.h). */
#include "procs.h"

#include "chatload/log.h"
#include "chatload/procs.h"
#include "chatload/units.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>

struct sim_procs {
	struct cl_sim_config *cfg;
	cl_sim_serve_fn serve;
};

/* In child i: its own files, seed and log name, then the server. */
static int child(void *arg, uint32_t i, int ready_fd)
{
	static char truth[4200], stats[4200], name[48];
	const struct sim_procs *sp = arg;
	struct cl_sim_config c = *sp->cfg;
	snprintf(name, sizeof(name), "chatload-sim.%u", i);
	cl_log_init(name);
	c.process_index = i;
	c.reuse_port = true;
	c.port_file = NULL; /* the supervisor writes it once all listen */
	c.seed = sp->cfg->seed + i;
	if (c.truth_log) {
		snprintf(truth, sizeof(truth), "%s.%u", sp->cfg->truth_log, i);
		c.truth_log = truth;
	}
	if (c.stats_file) {
		snprintf(stats, sizeof(stats), "%s.%u", sp->cfg->stats_file, i);
		c.stats_file = stats;
	}
	return sp->serve(&c, ready_fd);
}

/* Process i listens on this port: process 0 resolved a port 0, the others join it. */
static int ready(void *arg, uint32_t i, const char *line)
{
	struct sim_procs *sp = arg;
	uint64_t port;
	if (cl_parse_u64(line, 65535, &port) != 0 || port == 0)
		return -1;
	snprintf(sp->cfg->listen_port, sizeof(sp->cfg->listen_port), "%u", (unsigned)port);
	return 0;
}

static int started(void *arg)
{
	struct sim_procs *sp = arg;
	struct cl_err err = { 0 };
	char msg[512];
	uint64_t port = 0;
	cl_parse_u64(sp->cfg->listen_port, 65535, &port);
	if (sp->cfg->port_file &&
	    cl_sim_write_port_file(sp->cfg->port_file, (int)port, &err) != 0) {
		CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
		return -1;
	}
	CL_INFO("%u processes listening on %s:%s", sp->cfg->processes, sp->cfg->listen_host,
		sp->cfg->listen_port);
	return 0;
}

int cl_sim_procs_run(struct cl_sim_config *cfg, cl_sim_serve_fn serve)
{
	struct sim_procs sp = { .cfg = cfg, .serve = serve };
	struct cl_procs p = { .n = cfg->processes,
			      .what = "process",
			      .arg = &sp,
			      .child = child,
			      .ready = ready,
			      .started = started };
	return cl_procs_run(&p);
}
