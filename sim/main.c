/* chatload-sim: an OpenAI-compatible streaming simulator with exact timing (docs/simulator.md).
 * main wires the modules together: flags, the server (or --processes servers), the exit
 * summary. */
#include "chatload/clock.h"
#include "chatload/fdlimit.h"
#include "chatload/exitcode.h"
#include "chatload/log.h"
#include "config.h"
#include "sim/serve/procs.h"
#include "sim/serve/server.h"
#include "sim.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void say_ready(int ready_fd, int port)
{
	if (ready_fd < 0)
		return;
	char line[16];
	int n = snprintf(line, sizeof(line), "%d\n", port);
	if (write(ready_fd, line, (size_t)n) != n)
		CL_WARN("cannot tell the supervisor this process listens");
	close(ready_fd);
}

/* One server from start to exit summary; returns the exit code (procs.h, cl_sim_serve_fn). */
static int serve(const struct cl_sim_config *cfg, int ready_fd)
{
	int64_t start_us = cl_mono_us();
	static struct cl_sim sim; /* large (the lateness histogram): not on the stack */
	struct cl_err err = { 0 };
	char msg[1024];
	int rc, exit_code = CL_EXIT_FAILED;

	cl_fd_limit_raise(); /* ten thousand streams need ten thousand descriptors */
	if ((rc = cl_sim_server_init(&sim, cfg, start_us, &err)) != 0) {
		/* A listen address that cannot resolve, or one off loopback without
		 * --allow-remote, is a bad flag like any other (exit 2); a busy port or a file
		 * that cannot be written is a failure (exit 1). */
		bool usage = rc == CL_EREFUSED || rc == CL_EINVAL;
		if (usage)
			fprintf(stderr, "chatload-sim: %s\n(see chatload-sim --help)\n",
				cl_err_format(&err, msg, sizeof(msg)));
		else
			CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
		cl_sim_server_destroy(&sim);
		return usage ? CL_EXIT_USAGE : CL_EXIT_FAILED;
	}
	say_ready(ready_fd, sim.port);
	if (cl_sim_server_run(&sim) != 0) {
		CL_ERROR("event loop failed");
		goto out;
	}
	exit_code = CL_EXIT_OK;
out:;
	/* Draining is over: a late signal (a supervisor's forward crossing a direct one) must
	 * not kill the process while it writes its files.  Freeing the loop's signal events
	 * puts the default action back, so the signals are blocked first, and a pending one
	 * dies with the process. */
	sigset_t late;
	sigemptyset(&late);
	sigaddset(&late, SIGTERM);
	sigaddset(&late, SIGINT);
	sigprocmask(SIG_BLOCK, &late, NULL);
	cl_sim_server_destroy(&sim);
	if (exit_code == CL_EXIT_OK) {
		CL_INFO("served %llu chat requests (%llu rejected, %llu client gone, %llu cut), "
			"%llu chunks, lateness p50 %lldus p99 %lldus max %lldus",
			(unsigned long long)sim.stats.requests,
			(unsigned long long)sim.stats.rejected,
			(unsigned long long)sim.stats.client_gone,
			(unsigned long long)sim.stats.cut, (unsigned long long)sim.stats.chunks,
			(long long)cl_sim_stats_percentile(&sim.stats, 50),
			(long long)cl_sim_stats_percentile(&sim.stats, 99),
			(long long)sim.stats.late_max_us);
		if (cfg->stats_file && cl_sim_stats_write(&sim.stats, cfg->stats_file, &err) != 0) {
			CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
			exit_code = CL_EXIT_FAILED;
		}
	}
	return exit_code;
}

int main(int argc, char **argv)
{
	static struct cl_sim_config cfg;
	struct cl_err err = { 0 };
	char msg[1024];

	cl_log_init("chatload-sim");
	int rc = cl_sim_config_parse(&cfg, argc, argv, &err);
	if (rc == 1)
		return CL_EXIT_OK;
	if (rc < 0) {
		fprintf(stderr, "chatload-sim: %s\n(see chatload-sim --help)\n",
			cl_err_format(&err, msg, sizeof(msg)));
		return CL_EXIT_USAGE;
	}
	if (cfg.processes > 1)
		return cl_sim_procs_run(&cfg, serve);
	return serve(&cfg, -1);
}
