/* chatload run: flags for one run (run/run.c does the work). */
#include "coordinator/cmd/commands.h"
#include "coordinator/cmd/run_int.h"
#include "coordinator/run/run.h"
#include "coordinator/scenario/scenario.h"

#include "chatload/exitcode.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OVERRIDES 128

/*
 * Set by SIGINT/SIGTERM, read by the run loop.  nng's threads do not block signals, so the
 * handler may run on any of them: an atomic (lock-free, so safe in a handler) rather than a
 * volatile sig_atomic_t, which promises nothing between threads.
 */
static atomic_int g_stop;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag must be lock-free for the handler");

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&g_stop, 1);
}

int cli_cmd_run_opts(struct cl_run_opts *o)
{
	o->stop = &g_stop;
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return cl_run(o);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: chatload run SCENARIO [--set KEY.PATH=VALUE]... [--out DIR] [--repeat N]\n"
		"                    [--metrics-listen HOST:PORT [--metrics-allow-remote]]\n"
		"                    [--web HOST:PORT [--web-allow-remote]]\n\n"
		"Runs a scenario: starts the built-in simulator if the scenario asks for one,\n"
		"spawns local agents (agents.local) or waits for remote ones (agents.listen),\n"
		"passes the readiness gate, warms up, runs every stage and writes results as it\n"
		"goes (results.json, intervals.jsonl, results.csv, report.md, report.html).\n\n"
		"  --set K=V    override a scenario value, e.g. --set stages.1.duration=30s\n"
		"               --set target.model=llama (repeatable)\n"
		"  --out DIR    results directory (default: output.dir or results/<name>-<UTC>/)\n"
		"  --repeat N   run every stage N times (not searches or replays): figures\n"
		"               pooled, each repeat's own and a 95%% interval across them\n"
		"  --insecure   allow a plaintext tcp:// agents.listen off loopback\n"
		"  --metrics-listen HOST:PORT\n"
		"               serve live Prometheus metrics at http://HOST:PORT/metrics for\n"
		"               the whole run (loopback only; port 0 picks one, printed)\n"
		"  --metrics-allow-remote\n"
		"               allow a --metrics-listen address off loopback\n"
		"  --web HOST:PORT\n"
		"               serve the report live at http://HOST:PORT/ during the run,\n"
		"               refreshed every 2 s (loopback only; port 0 picks one, printed;\n"
		"               the same address as --metrics-listen shares its port)\n"
		"  --web-allow-remote\n"
		"               allow a --web address off loopback\n\n"
		"exit codes: 0 ok, 1 run failed or interrupted, 2 bad input, 3 target not ready,\n"
		"            99 SLO breached\n");
}

int cl_cmd_run(int argc, char **argv)
{
	struct cl_run_opts o = { .argc = argc, .argv = argv, .stop = &g_stop };
	const char *overrides[MAX_OVERRIDES + 1];
	size_t n_over = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return CL_EXIT_OK;
		} else if (strcmp(a, "--set") == 0 || strcmp(a, "--out") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "chatload run: %s needs a value\n", a);
				return CL_EXIT_USAGE;
			}
			if (a[2] == 's') {
				if (n_over == MAX_OVERRIDES) {
					fprintf(stderr, "chatload run: too many --set\n");
					return CL_EXIT_USAGE;
				}
				overrides[n_over++] = argv[++i];
			} else {
				o.out_dir = argv[++i];
			}
		} else if (strcmp(a, "--repeat") == 0 || strncmp(a, "--repeat=", 9) == 0) {
			const char *v = a[8] == '=' ? a + 9 : i + 1 < argc ? argv[++i] : NULL;
			char *end = NULL;
			unsigned long n = v ? strtoul(v, &end, 10) : 0;
			if (!v || !*v || *end || v[0] == '-' || n < 1 || n > CL_SCN_MAX_REPEAT) {
				fprintf(stderr,
					"chatload run: --repeat needs a count from 1 to %d, got "
					"'%s'\n",
					CL_SCN_MAX_REPEAT, v ? v : "");
				return CL_EXIT_USAGE;
			}
			o.repeat = (uint32_t)n;
		} else if (strcmp(a, "--insecure") == 0) {
			o.insecure = true;
		} else if (strcmp(a, "--metrics-listen") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "chatload run: %s needs a value\n", a);
				return CL_EXIT_USAGE;
			}
			o.metrics_listen = argv[++i];
		} else if (strncmp(a, "--metrics-listen=", 17) == 0) {
			o.metrics_listen = a + 17;
		} else if (strcmp(a, "--metrics-allow-remote") == 0) {
			o.metrics_allow_remote = true;
		} else if (strcmp(a, "--web") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "chatload run: %s needs a value\n", a);
				return CL_EXIT_USAGE;
			}
			o.web_listen = argv[++i];
		} else if (strncmp(a, "--web=", 6) == 0) {
			o.web_listen = a + 6;
		} else if (strcmp(a, "--web-allow-remote") == 0) {
			o.web_allow_remote = true;
		} else if (strncmp(a, "--set=", 6) == 0 && n_over < MAX_OVERRIDES) {
			overrides[n_over++] = a + 6;
		} else if (strncmp(a, "--out=", 6) == 0) {
			o.out_dir = a + 6;
		} else if (a[0] == '-') {
			fprintf(stderr, "chatload run: unknown option '%s'\n", a);
			usage(stderr);
			return CL_EXIT_USAGE;
		} else if (o.scenario_path) {
			fprintf(stderr, "chatload run: one scenario at a time ('%s' and '%s')\n",
				o.scenario_path, a);
			return CL_EXIT_USAGE;
		} else {
			o.scenario_path = a;
		}
	}
	if (!o.scenario_path) {
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	overrides[n_over] = NULL;
	o.overrides = overrides;
	return cli_cmd_run_opts(&o);
}
