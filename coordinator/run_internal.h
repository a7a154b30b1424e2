/* State shared by the files that implement chatload run (run.c, run_setup.c, run_stage.c);
 * internal to them, hence the prefix cli_run_. */
#ifndef CHATLOAD_RUN_INTERNAL_H
#define CHATLOAD_RUN_INTERNAL_H

#include "run.h"

#include "chatload/plan.h"
#include "chatload/readiness.h"

struct run {
	const struct cl_run_opts *o;
	struct cl_scenario s;
	struct cl_results *res;
	struct cl_progress prog;

	/* processes we own */
	struct cl_child sim;
	struct cl_child local[CL_RUN_MAX_LOCAL];
	size_t n_local;
	char sim_url[128];
	char ipc_path[108];
	char ipc_url[128];
	char token[65];

	struct cl_fleet fleet;
	uint32_t expect; /* agents to wait for: local + remote */

	/* what the agents are told */
	struct cl_target_plan target;
	struct cl_workload_plan workload;
	char *warmup_body;
	char *probe_extra; /* readiness.body merged over target.body */
	struct cl_stage_plan shares[CL_FLEET_MAX_AGENTS]; /* current stage/warmup, per agent */
	struct cl_stage_plan stage_plan;                  /* current stage, whole */

	/* readiness */
	struct cl_readiness_result probe[CL_FLEET_MAX_AGENTS];
	bool probe_final[CL_FLEET_MAX_AGENTS];
	bool probe_seen[CL_FLEET_MAX_AGENTS];

	/* warmup */
	struct cl_metrics warm;
	bool warm_ready;
	bool warm_seen[CL_FLEET_MAX_AGENTS];
	bool warm_participates[CL_FLEET_MAX_AGENTS];

	/* the stage running now (NULL between stages) */
	struct cl_run_stage *st;

	int64_t worst_skew_us[CL_FLEET_MAX_AGENTS];
	int exit_hint; /* CL_EXIT_* the run decided (0: let the results decide) */
	bool complete;
};

/* run_setup.c */
int cli_run_start_simulator(struct run *r, struct cl_err *err);
int cli_run_start_fleet(struct run *r, struct cl_err *err);
int cli_run_wait_for_agents(struct run *r, struct cl_err *err);
void cli_run_stop_processes(struct run *r);
void cli_run_record_agents(struct run *r);

/* run_stage.c */
void cli_run_on_report(void *ctx, struct cl_fleet_agent *a, struct cl_msg_report *rep);
int cli_run_readiness(struct run *r);
int cli_run_warmup(struct run *r);
int cli_run_stage(struct run *r, size_t index);

#endif
