/* chatload run: one run from scenario to results, the coordinator's main job. */
#ifndef CHATLOAD_RUN_H
#define CHATLOAD_RUN_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct cl_run_opts {
	const char *scenario_path;
	const char *const *overrides; /* --set, NULL-terminated */
	const char *out_dir;          /* --out */
	int argc;                     /* the command line, recorded in results */
	char **argv;
	atomic_int *stop;           /* set by SIGINT/SIGTERM */
	bool insecure;              /* --insecure: plaintext agents.listen off loopback */
	const char *metrics_listen; /* --metrics-listen HOST:PORT, NULL: no live metrics */
	bool metrics_allow_remote;  /* --metrics-allow-remote: a non-loopback metrics address */
	const char *web_listen;     /* --web HOST:PORT: the live report page, NULL: none */
	bool web_allow_remote;      /* --web-allow-remote: a non-loopback --web address */
	uint32_t repeat; /* --repeat N: every stage but searches and replays N times; 0: as set */
};

/* Runs the scenario.  Returns the process exit code (enum cl_exit). Blocks for the run. */
int cl_run(const struct cl_run_opts *opts);

#endif
