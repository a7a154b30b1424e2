/* The agents' reports during a run: each filed under its agent, and stage metrics merged
 * into per-interval rows (written once every agent has reported the interval) and the
 * stage's cumulative totals. */
#include "run_internal.h"

#include "chatload/log.h"

#include <math.h>

static struct run_agent *agent_of(struct run *r, const struct cl_fleet_agent *a)
{
	return &r->agents[a->id - 1];
}

static void emit_interval(struct run *r, struct run_stage *st, size_t slot)
{
	double interval_s = r->s.agents.report_interval_us / 1e6;
	struct cl_metrics *m = &st->ring[slot];
	int64_t k = st->ring_k[slot];
	if (k >= 0) {
		cl_results_add_interval(r->res, st->index, (double)(k + 1) * interval_s, m,
					interval_s);
		st->last_req_s = m->ctr[CL_CTR_COMPLETED_IN_WINDOW] / interval_s;
		st->last_tok_s = m->ctr[CL_CTR_OUTPUT_TOKENS] / interval_s;
		const struct cl_hist *ttft = &m->lat[CL_LAT_TTFT];
		st->last_ttft_p50_ms =
		    cl_hist_count(ttft) ? cl_hist_percentile(ttft, 50) / 1e3 : NAN; /* "-" */
		if (k >= st->next_emit)
			st->next_emit = k + 1;
	}
	cl_metrics_reset(m);
	st->ring_k[slot] = -1;
}

/* Writes every interval all participating agents have reported (or moved past); with all,
 * the held intervals from next_emit up to the first gap, whoever is missing. */
static void emit_ready_intervals(struct run *r, struct run_stage *st, bool all)
{
	for (;;) {
		int64_t k = st->next_emit;
		size_t slot = (size_t)(k % CL_RUN_INTERVAL_RING);
		if (st->ring_k[slot] != k)
			return;
		bool ready = true;
		for (size_t i = 0; i < r->fleet.n && !all; i++) {
			const struct run_agent *ra = &r->agents[i];
			if (!ra->stage.participates || r->fleet.agents[i].live == CL_LIVE_LOST ||
			    ra->stage.final_seen)
				continue;
			if (ra->stage.last_interval < k)
				ready = false;
		}
		if (!ready)
			return;
		emit_interval(r, st, slot);
	}
}

/* Files the stalls an agent saw in its own loops, moved to the coordinator's clock with the
 * agent's offset estimate (0 for a local agent: the same clock). */
static void file_stalls(struct run *r, const struct cl_fleet_agent *a,
			const struct cl_msg_report *rep)
{
	struct run_agent *ra = agent_of(r, a);
	for (uint32_t i = 0; i < rep->stalls.n && i < CL_STALLS_MAX; i++) {
		const struct cl_stall *s = &rep->stalls.ep[i];
		int64_t start;
		if (__builtin_add_overflow(s->start_us, a->clock_offset_us, &start))
			continue; /* nonsense from the peer: no instant on our clock */
		CL_WARN("agent %u (%s) stalled for %.2f s in stage '%s': it could not run", a->id,
			a->host, s->length_us / 1e6, r->st->scn->name);
		cl_stall_list_add(&ra->stage.stalls, start, s->length_us);
	}
	uint32_t d = ra->stage.stalls.dropped;
	ra->stage.stalls.dropped =
	    d > UINT32_MAX - rep->stalls.dropped ? UINT32_MAX : d + rep->stalls.dropped;
}

static void on_stage_report(struct run *r, struct cl_fleet_agent *a, struct cl_msg_report *rep)
{
	struct run_stage *st = r->st;
	struct run_agent *ra = agent_of(r, a);
	if (!st || rep->stage != st->index || !rep->metrics) {
		CL_WARN("agent %u sent a report for stage %u, which is not running; ignored", a->id,
			rep->stage);
		return;
	}
	cl_metrics_merge(&st->cum, rep->metrics);
	ra->stage.span_us += rep->span_us;
	file_stalls(r, a, rep);
	if (rep->start_skew_us > ra->worst_skew_us)
		ra->worst_skew_us = rep->start_skew_us;
	if (rep->error)
		CL_ERROR("agent %u (%s): %s", a->id, a->label, rep->error);
	if (rep->kind == CL_REPORT_FINAL) {
		ra->stage.final_seen = true;
		emit_ready_intervals(r, st, false);
		return;
	}
	int64_t k = rep->interval;
	if (k < st->next_emit) {
		/* Its interval was already written without it (the agent lagged): the data stays
		 * in the stage's totals, just not in that interval's row. */
		return;
	}
	size_t slot = (size_t)(k % CL_RUN_INTERVAL_RING);
	if (st->ring_k[slot] != k && st->ring_k[slot] >= 0)
		emit_interval(r, st, slot); /* a laggard holds an old interval: write it now */
	st->ring_k[slot] = k;
	cl_metrics_merge(&st->ring[slot], rep->metrics);
	if (k > ra->stage.last_interval)
		ra->stage.last_interval = k;
	emit_ready_intervals(r, st, false);
}

void cli_run_on_report(void *ctx, struct cl_fleet_agent *a, struct cl_msg_report *rep)
{
	struct run *r = ctx;
	struct run_agent *ra = agent_of(r, a);
	switch (rep->kind) {
	case CL_REPORT_PROBE:
		if (rep->readiness) {
			ra->probe.result = *rep->readiness;
			ra->probe.seen = true;
			ra->probe.final = rep->readiness->status != CL_READY_PENDING;
		}
		break;
	case CL_REPORT_WARMUP:
		if (rep->metrics && r->warm_ready)
			cl_metrics_merge(&r->warm, rep->metrics);
		ra->warm.seen = true;
		break;
	case CL_REPORT_INTERVAL:
	case CL_REPORT_FINAL:
		on_stage_report(r, a, rep);
		break;
	default:
		break;
	}
}

void cli_run_flush_intervals(struct run *r)
{
	struct run_stage *st = r->st;
	emit_ready_intervals(r, st, true);
	for (size_t k = 0; k < CL_RUN_INTERVAL_RING; k++)
		if (st->ring_k[k] >= 0)
			emit_interval(r, st, k);
}
