/* chatload run: one run from scenario to results, the coordinator's main job. */
#ifndef CHATLOAD_RUN_H
#define CHATLOAD_RUN_H

#include "fleet.h"
#include "progress.h"
#include "results.h"
#include "spawn.h"

#include "chatload/metrics.h"
#include "chatload/scenario.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define CL_RUN_MAX_LOCAL     64
#define CL_RUN_INTERVAL_RING 4

struct cl_run_opts {
	const char *scenario_path;
	const char *const *overrides; /* --set, NULL-terminated */
	const char *out_dir;          /* --out */
	int argc;                     /* the command line, recorded in results */
	char **argv;
	volatile sig_atomic_t *stop; /* set by SIGINT/SIGTERM */
	bool insecure;               /* --insecure: plaintext agents.listen off loopback */
};

/* Per-stage bookkeeping while it runs. */
struct cl_run_stage {
	size_t index;
	bool participates[CL_FLEET_MAX_AGENTS]; /* agents given a non-empty share */
	bool final_seen[CL_FLEET_MAX_AGENTS];
	int64_t last_interval[CL_FLEET_MAX_AGENTS]; /* highest interval index reported, -1 */
	int64_t span_us[CL_FLEET_MAX_AGENTS];       /* agent time covered by its reports */
	struct cl_metrics cum;
	struct cl_metrics ring[CL_RUN_INTERVAL_RING];
	int64_t ring_k[CL_RUN_INTERVAL_RING]; /* interval held by each slot, -1 */
	int64_t next_emit;                    /* next interval index to write */
	/* last emitted interval, for the progress line */
	double last_req_s, last_tok_s, last_ttft_p50_ms;
	int64_t start_coord_us;
};

/* Runs the scenario.  Returns the process exit code (enum cl_exit). Blocks for the run. */
int cl_run(const struct cl_run_opts *opts);

#endif
