/* What faults leave in a stage's record, from the run's side: the coordinator's own stalls
 * during the stage, and the load lost agents put on the target that no report covers (their
 * blind windows).  docs/protocol.md ("Faults") says what each fault leaves. */
#include "coordinator/run/internal.h"

#include "chatload/log.h"

#include <stdio.h>

const char *cli_run_loss_words(const struct cl_fleet_agent *a, char *buf, size_t n)
{
	if (a->lost_cause == CL_LOSS_COORDINATOR_STALL)
		snprintf(buf, n,
			 "this coordinator could not run for longer than the %.0f s an agent waits "
			 "for a reply, so the agent stopped its load as it must",
			 CL_WIRE_AGENT_SILENCE_US / 1e6);
	else
		snprintf(buf, n,
			 "nothing came from it for %.0f s (a partition, a crash or a frozen "
			 "host)",
			 CL_WIRE_LOST_US / 1e6);
	return buf;
}

void cli_run_note_own_stalls(struct run *r)
{
	struct run_stage *st = r->st;
	const struct cl_fleet *f = &r->fleet;
	if (f->n_own - st->own_seen > CL_FLEET_OWN_STALLS)
		st->own_seen = f->n_own - CL_FLEET_OWN_STALLS; /* older ones are gone */
	for (; st->own_seen < f->n_own; st->own_seen++) {
		const struct cl_stall *s = &f->own_stalls[st->own_seen % CL_FLEET_OWN_STALLS];
		cl_stall_list_add(&st->own_stalls, s->start_us, s->length_us);
	}
	/* The newest may have grown since (the fleet's two witnesses of one stall): adding it
	 * again merges. */
	if (f->n_own > st->own_first) {
		const struct cl_stall *s = &f->own_stalls[(f->n_own - 1) % CL_FLEET_OWN_STALLS];
		cl_stall_list_add(&st->own_stalls, s->start_us, s->length_us);
	}
}

static void file_own_stalls(struct run *r, const struct run_stage *st, int64_t end_us)
{
	struct cl_results_stall out[CL_STALLS_MAX];
	size_t n = 0;
	for (uint32_t k = 0; k < st->own_stalls.n && k < CL_STALLS_MAX; k++) {
		int64_t from = st->own_stalls.ep[k].start_us;
		int64_t to = from + st->own_stalls.ep[k].length_us;
		if (from < st->start_coord_us)
			from = st->start_coord_us;
		if (to > end_us)
			to = end_us;
		if (to <= from)
			continue;
		out[n++] = (struct cl_results_stall){
			.at_s = (from - st->start_coord_us) / 1e6,
			.length_s = (to - from) / 1e6,
			.seen_by_coordinator = true,
			.coordinator_itself = true,
		};
	}
	uint32_t dropped = st->own_stalls.dropped;
	if ((n || dropped) && cl_results_add_stalls(r->res, st->index, out, n, 0, dropped) != 0)
		CL_ERROR("cannot record the coordinator's stalls in stage '%s': out of memory",
			 st->scn->name);
}

/*
 * A lost agent's blind window: from the end of its last reported interval (START_AT + the
 * intervals it reported) until it stopped at the latest, CL_WIRE_AGENT_SILENCE_US after the
 * last reply it can have had (our answer to its last request), or when its share of the
 * stage ended.  Its rate is the one of its last CL_RUN_RECENT reports.
 */
static void file_blind(struct run *r, const struct run_stage *st, size_t i)
{
	const struct cl_fleet_agent *a = &r->fleet.agents[i];
	const struct run_agent *ra = &r->agents[i];
	int64_t iv = r->s.agents.report_interval_us;
	int64_t from = st->start_coord_us + (ra->stage.last_interval + 1) * iv;
	int64_t to = a->last_seen_us + CL_WIRE_AGENT_SILENCE_US;
	const struct cl_scn_stage *scn = st->scn;
	if (scn->duration_us && to > st->start_coord_us + scn->ramp_us + scn->duration_us)
		to = st->start_coord_us + scn->ramp_us + scn->duration_us;
	if (to <= from)
		return;
	uint64_t done = 0, tokens = 0;
	int64_t span = 0;
	uint64_t n = ra->stage.n_reports < CL_RUN_RECENT ? ra->stage.n_reports : CL_RUN_RECENT;
	for (uint64_t k = 0; k < n; k++) {
		done += ra->stage.recent[k].completed;
		tokens += ra->stage.recent[k].output_tokens;
		span += ra->stage.recent[k].span_us;
	}
	struct cl_results_blind b = {
		.agent = a->id,
		.host = a->host,
		.cause =
		    a->lost_cause == CL_LOSS_COORDINATOR_STALL ? "coordinator_stall" : "silent",
		.from_s = (from - st->start_coord_us) / 1e6,
		.to_s = (to - st->start_coord_us) / 1e6,
		.rate_basis_s = span / 1e6,
		.requests_per_s = span > 0 ? (double)done / (span / 1e6) : 0,
		.output_tokens_per_s = span > 0 ? (double)tokens / (span / 1e6) : 0,
	};
	CL_WARN("agent %u (%s) was lost: its load from %.1f s to at most %.1f s into stage '%s' is "
		"in no "
		"report (up to about %.0f requests at its last rate)",
		a->id, a->label, b.from_s, b.to_s, scn->name,
		b.requests_per_s * (b.to_s - b.from_s));
	if (cl_results_add_unaccounted(r->res, st->index, &b) != 0)
		CL_ERROR("cannot record agent %u's unaccounted load: out of memory", a->id);
}

void cli_run_file_faults(struct run *r, const struct run_stage *st, int64_t end_us)
{
	file_own_stalls(r, st, end_us);
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		const struct run_agent *ra = &r->agents[i];
		/* given: it was not lost yet when the stage began */
		if (ra->stage.given && a->live == CL_LIVE_LOST && !ra->stage.final_seen)
			file_blind(r, st, i);
	}
}
