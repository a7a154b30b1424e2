/* What a phase of the run (readiness, warmup, a stage) asks of the agents' records: who
 * takes part, who has finished, who broke, and each one's share of the load. */
#include "coordinator/run/internal.h"

#include <stdio.h>

static bool takes_part(const struct run_agent *ra, enum run_phase p)
{
	switch (p) {
	case RUN_PHASE_WARMUP:
		return ra->warm.participates;
	case RUN_PHASE_STAGE:
		return ra->stage.participates;
	default:
		return true; /* every agent passes the gate */
	}
}

/* Whether the agent has nothing more to say in this phase (or never had). */
static bool has_finished(const struct run_agent *ra, enum run_phase p)
{
	switch (p) {
	case RUN_PHASE_WARMUP:
		return !ra->warm.participates || ra->warm.seen;
	case RUN_PHASE_STAGE:
		return !ra->stage.participates || ra->stage.final_seen;
	default:
		return ra->probe.final;
	}
}

bool cli_run_all_finished(const struct run *r, enum run_phase p)
{
	for (size_t i = 0; i < r->fleet.n; i++)
		if (!has_finished(&r->agents[i], p))
			return false;
	return true;
}

enum run_breakage cli_run_fleet_broken(const struct run *r, enum run_phase p, size_t *who,
				       char *why, size_t n)
{
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		if (!takes_part(&r->agents[i], p))
			continue;
		*who = i;
		if (a->live == CL_LIVE_LOST) {
			char words[200];
			snprintf(why, n, "agent %u (%s) was lost: %s", a->id, a->label,
				 cli_run_loss_words(a, words, sizeof(words)));
			return RUN_FLEET_LOST;
		}
		if (a->state == CL_AGENT_FAILED) {
			snprintf(why, n, "agent %u (%s) failed: %s", a->id, a->label,
				 a->error[0] ? a->error : "no reason given");
			return RUN_FLEET_FAILED;
		}
	}
	return RUN_FLEET_WHOLE;
}

int cli_run_split_shares(struct run *r, const struct cl_stage_plan *whole)
{
	uint32_t weights[CL_FLEET_MAX_AGENTS];
	struct cl_stage_plan shares[CL_FLEET_MAX_AGENTS];
	size_t n = r->fleet.n;
	for (size_t i = 0; i < n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		weights[i] = a->live == CL_LIVE_LOST ? 0 : a->workers;
	}
	for (size_t i = 0; i < CL_FLEET_MAX_AGENTS; i++)
		cl_stage_plan_free(&r->agents[i].share);
	int rc = cl_stage_plan_split(whole, weights, n, shares);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		r->agents[i].share = shares[i];
	return 0;
}

bool cli_run_has_share(const struct run *r, size_t i, const struct cl_stage_plan *whole)
{
	const struct cl_stage_plan *p = &r->agents[i].share;
	if (whole->requests && !p->requests)
		return false;
	if (p->mode == CL_MODE_CONCURRENCY)
		return p->concurrency != 0;
	return p->rate_per_s > 0;
}
