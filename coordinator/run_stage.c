/* The phases of a run that command the fleet: readiness gate, warmup and each stage, and the
 * merging of the agents' reports into per-interval and cumulative metrics. */
#include "run_internal.h"

#include "probe/readiness.h"

#include "chatload/clock.h"
#include "chatload/exitcode.h"
#include "chatload/log.h"
#include "chatload/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START_LEAD_US 500000 /* START_AT this far ahead: every agent hears it in time */

/* ---- reports ------------------------------------------------------------------------- */

static size_t agent_index(const struct cl_fleet_agent *a)
{
	return a->id - 1;
}

static void emit_interval(struct run *r, struct cl_run_stage *st, size_t slot)
{
	double interval_s = r->s.agents.report_interval_us / 1e6;
	struct cl_metrics *m = &st->ring[slot];
	int64_t k = st->ring_k[slot];
	if (k >= 0) {
		cl_results_add_interval(r->res, st->index, (double)(k + 1) * interval_s, m,
					interval_s);
		st->last_req_s = m->ctr[CL_CTR_COMPLETED_IN_WINDOW] / interval_s;
		st->last_tok_s = m->ctr[CL_CTR_OUTPUT_TOKENS] / interval_s;
		st->last_ttft_p50_ms = cl_hist_percentile(&m->lat[CL_LAT_TTFT], 50) / 1e3;
		if (k >= st->next_emit)
			st->next_emit = k + 1;
	}
	cl_metrics_reset(m);
	st->ring_k[slot] = -1;
}

/* Writes every interval all participating agents have reported (or moved past). */
static void emit_ready_intervals(struct run *r, struct cl_run_stage *st, bool all)
{
	for (;;) {
		int64_t k = st->next_emit;
		size_t slot = (size_t)(k % CL_RUN_INTERVAL_RING);
		if (st->ring_k[slot] != k)
			return;
		bool ready = true;
		for (size_t i = 0; i < r->fleet.n && !all; i++) {
			const struct cl_fleet_agent *a = &r->fleet.agents[i];
			if (!st->participates[i] || a->live == CL_LIVE_LOST || st->final_seen[i])
				continue;
			if (st->last_interval[i] < k)
				ready = false;
		}
		if (!ready)
			return;
		emit_interval(r, st, slot);
	}
}

static void on_stage_report(struct run *r, struct cl_fleet_agent *a, struct cl_msg_report *rep)
{
	struct cl_run_stage *st = r->st;
	size_t i = agent_index(a);
	if (!st || rep->stage != st->index || !rep->metrics) {
		CL_WARN("agent %u sent a report for stage %u, which is not running; ignored", a->id,
			rep->stage);
		return;
	}
	cl_metrics_merge(&st->cum, rep->metrics);
	st->span_us[i] += rep->span_us;
	if (rep->start_skew_us > r->worst_skew_us[i])
		r->worst_skew_us[i] = rep->start_skew_us;
	if (rep->error)
		CL_ERROR("agent %u (%s): %s", a->id, a->host, rep->error);
	if (rep->kind == CL_REPORT_FINAL) {
		st->final_seen[i] = true;
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
	if (k > st->last_interval[i])
		st->last_interval[i] = k;
	emit_ready_intervals(r, st, false);
}

void cli_run_on_report(void *ctx, struct cl_fleet_agent *a, struct cl_msg_report *rep)
{
	struct run *r = ctx;
	size_t i = agent_index(a);
	switch (rep->kind) {
	case CL_REPORT_PROBE:
		if (rep->readiness) {
			r->probe[i] = *rep->readiness;
			r->probe_seen[i] = true;
			r->probe_final[i] = rep->readiness->status != CL_READY_PENDING;
		}
		break;
	case CL_REPORT_WARMUP:
		if (rep->metrics && r->warm_ready)
			cl_metrics_merge(&r->warm, rep->metrics);
		r->warm_seen[i] = true;
		break;
	case CL_REPORT_INTERVAL:
	case CL_REPORT_FINAL:
		on_stage_report(r, a, rep);
		break;
	default:
		break;
	}
}

/* ---- helpers ------------------------------------------------------------------------- */

enum breakage { FLEET_WHOLE = 0, FLEET_LOST, FLEET_FAILED };

/* Whether an agent that must take part is lost or failed: which (*who, index into the
 * fleet) and why (a message for people).  The first such agent is reported. */
static enum breakage fleet_broken(struct run *r, const bool *participates, size_t *who, char *why,
				  size_t n)
{
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		if (participates && !participates[i])
			continue;
		*who = i;
		if (a->live == CL_LIVE_LOST) {
			snprintf(why, n, "agent %u (%s) was lost", a->id, a->host);
			return FLEET_LOST;
		}
		if (a->state == CL_AGENT_FAILED) {
			snprintf(why, n, "agent %u (%s) failed: %s", a->id, a->host,
				 a->error[0] ? a->error : "no reason given");
			return FLEET_FAILED;
		}
	}
	return FLEET_WHOLE;
}

static void agent_counts(const struct cl_fleet *f, uint32_t *ok, uint32_t *missing,
			 int64_t *inflight)
{
	*ok = *missing = 0;
	*inflight = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->agents[i].live == CL_LIVE_OK)
			(*ok)++;
		else
			(*missing)++;
		*inflight += f->agents[i].inflight;
	}
}

/* ---- readiness ----------------------------------------------------------------------- */

static void show_probe(struct run *r, int64_t started_us)
{
	/* The least advanced agent decides what we are waiting for. */
	const struct cl_readiness_result *w = NULL;
	for (size_t i = 0; i < r->fleet.n; i++) {
		if (!r->probe_seen[i] || r->probe_final[i])
			continue;
		if (!w || r->probe[i].phase < w->phase)
			w = &r->probe[i];
	}
	static const char *const phase[] = { "connect", "/v1/models", "generation" };
	char el[32];
	cl_format_duration_us(cl_mono_us() - started_us, el, sizeof(el));
	if (!w) {
		cl_progress_note(&r->prog, "readiness: waiting for the gate (%s)", el);
		return;
	}
	cl_progress_note(&r->prog, "readiness: waiting for %s (%s elapsed, %u attempts)%s%s",
			 w->phase >= 0 && w->phase < 3 ? phase[w->phase] : "?", el, w->attempts,
			 w->last_error[0] ? "; last error: " : "", w->last_error);
}

int cli_run_readiness(struct run *r)
{
	const struct cl_scn_readiness *rd = &r->s.readiness;
	memset(r->probe, 0, sizeof(r->probe));
	memset(r->probe_seen, 0, sizeof(r->probe_seen));
	memset(r->probe_final, 0, sizeof(r->probe_final));
	struct cl_msg_cmd c = { .cmd = CL_CMD_PROBE };
	c.probe = (struct cl_cmd_probe){
		.timeout_us = rd->timeout_us,
		.request_timeout_us = rd->request_timeout_us,
		.consecutive = rd->consecutive,
		.backoff_initial_us = rd->backoff_initial_us,
		.backoff_max_us = rd->backoff_max_us,
		.seed = (uint64_t)cl_wall_us(),
		.body_json = NULL,
		.prompt = rd->prompt,
		.max_tokens = rd->max_tokens,
		.extra_body_json = r->probe_extra,
		.target = &r->target,
	};
	cl_fleet_broadcast(&r->fleet, &c);
	int64_t started = cl_mono_us();
	/* The agents enforce the deadline; ours only guards against an agent that hangs. */
	int64_t deadline = started + rd->timeout_us + 30 * 1000000LL;
	int64_t next_note = started + 5 * 1000000LL;
	for (;;) {
		cl_fleet_serve(&r->fleet, 100000);
		char why[1400];
		if (*r->o->stop) {
			cl_progress_note(&r->prog, "interrupted during the readiness gate");
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ECLOSED;
		}
		size_t who;
		if (fleet_broken(r, NULL, &who, why, sizeof(why))) {
			cl_progress_note(&r->prog, "readiness gate failed: %s", why);
			r->exit_hint = CL_EXIT_FAILED;
			return CL_EIO;
		}
		size_t done = 0;
		for (size_t i = 0; i < r->fleet.n; i++)
			done += r->probe_final[i];
		if (done == r->fleet.n)
			break;
		if (cl_mono_us() > deadline) {
			cl_progress_note(&r->prog, "readiness gate: agents did not report in time");
			r->exit_hint = CL_EXIT_NOT_READY;
			return CL_ETIMEDOUT;
		}
		if (cl_mono_us() >= next_note) {
			show_probe(r, started);
			next_note = cl_mono_us() + 5 * 1000000LL;
		}
	}
	/* The run's gate is the worst agent's: the first that did not pass, else agent 1. */
	const struct cl_readiness_result *res = &r->probe[0];
	for (size_t i = 0; i < r->fleet.n; i++) {
		if (r->probe[i].status != CL_READY_PASSED) {
			res = &r->probe[i];
			break;
		}
	}
	cl_results_set_readiness(r->res, res);
	char line[1024];
	cl_probe_describe(res, line, sizeof(line));
	cl_progress_note(&r->prog, "%s", line);
	if (res->status != CL_READY_PASSED) {
		r->exit_hint = CL_EXIT_NOT_READY;
		return CL_ETIMEDOUT;
	}
	if (!r->target.model && res->model[0]) {
		r->target.model = strdup(res->model);
		if (!r->target.model)
			return CL_ENOMEM;
	}
	return 0;
}

/* ---- warmup and stages ---------------------------------------------------------------- */

static uint32_t weights_of(struct run *r, uint32_t *w)
{
	for (size_t i = 0; i < r->fleet.n; i++)
		w[i] = r->fleet.agents[i].live == CL_LIVE_LOST ? 0 : r->fleet.agents[i].workers;
	return (uint32_t)r->fleet.n;
}

static bool share_is_empty(const struct cl_stage_plan *whole, const struct cl_stage_plan *p)
{
	if (whole->requests && !p->requests)
		return true;
	if (p->mode == CL_MODE_CONCURRENCY)
		return p->concurrency == 0;
	return p->rate_per_s <= 0;
}

static void free_shares(struct run *r)
{
	for (size_t i = 0; i < CL_FLEET_MAX_AGENTS; i++)
		cl_stage_plan_free(&r->shares[i]);
}

int cli_run_warmup(struct run *r)
{
	const struct cl_scn_warmup *w = &r->s.warmup;
	if (!w->requests && !w->duration_us)
		return 0;
	if (!r->warm_ready) {
		if (cl_metrics_init(&r->warm) != 0)
			return CL_ENOMEM;
		r->warm_ready = true;
	}
	struct cl_stage_plan whole = {
		.name = "warmup",
		.mode = CL_MODE_CONCURRENCY,
		.concurrency = w->concurrency ? w->concurrency : 1,
		.requests = w->requests,
		.duration_us = w->requests ? 0 : w->duration_us,
		.drain_timeout_us = w->request_timeout_us,
		.seed = r->s.workload.seed ^ 0x5741524d,
	};
	uint32_t weights[CL_FLEET_MAX_AGENTS];
	size_t n = weights_of(r, weights);
	free_shares(r);
	if (cl_stage_plan_split(&whole, weights, n, r->shares) != 0)
		return CL_ENOMEM;
	memset(r->warm_seen, 0, sizeof(r->warm_seen));
	for (size_t i = 0; i < n; i++) {
		r->warm_participates[i] = !share_is_empty(&whole, &r->shares[i]);
		if (!r->warm_participates[i])
			continue;
		struct cl_msg_cmd c = { .cmd = CL_CMD_WARMUP };
		c.warmup = (struct cl_cmd_warmup){ .stage = r->shares[i],
						   .max_tokens = w->max_tokens,
						   .request_timeout_us = w->request_timeout_us,
						   .body_json = r->warmup_body };
		cl_fleet_send(&r->fleet, i, &c);
	}
	char d[32];
	cl_progress_note(&r->prog, "warmup: %u requests at concurrency %u (timeout %s each)",
			 w->requests, whole.concurrency,
			 cl_format_duration_us(w->request_timeout_us, d, sizeof(d)));
	int64_t bound = w->requests
			    ? (int64_t)(w->requests / whole.concurrency + 1) * w->request_timeout_us
			    : w->duration_us + w->request_timeout_us;
	int64_t deadline = cl_mono_us() + bound + 30 * 1000000LL;
	for (;;) {
		cl_fleet_serve(&r->fleet, 100000);
		char why[1400];
		if (*r->o->stop) {
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ECLOSED;
		}
		size_t who;
		if (fleet_broken(r, r->warm_participates, &who, why, sizeof(why))) {
			cl_progress_note(&r->prog, "warmup failed: %s", why);
			r->exit_hint = CL_EXIT_FAILED;
			return CL_EIO;
		}
		bool all = true;
		for (size_t i = 0; i < n; i++)
			all &= !r->warm_participates[i] || r->warm_seen[i];
		if (all)
			break;
		if (cl_mono_us() > deadline) {
			cl_progress_note(&r->prog, "warmup did not finish in time");
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ETIMEDOUT;
		}
	}
	cl_results_set_warmup(r->res, &r->warm);
	uint64_t errors = 0;
	for (int c = CL_CTR_FIRST_ERROR; c <= CL_CTR_LAST_ERROR; c++)
		errors += r->warm.ctr[c];
	char ttft[32];
	cl_format_duration_us(cl_hist_percentile(&r->warm.lat[CL_LAT_TTFT], 50), ttft,
			      sizeof(ttft));
	cl_progress_note(&r->prog, "warmup: %llu completed, %llu errors, ttft p50 %s",
			 (unsigned long long)r->warm.ctr[CL_CTR_COMPLETED],
			 (unsigned long long)errors, ttft);
	if (errors && w->fail_on_error) {
		const char *sample = r->warm.n_err_samples ? r->warm.err_samples[0].body : "";
		cl_progress_note(
		    &r->prog,
		    "warmup failed: %llu of %llu requests failed%s%s (warmup.fail_on_error)",
		    (unsigned long long)errors, (unsigned long long)r->warm.ctr[CL_CTR_STARTED],
		    sample[0] ? "; first: " : "", sample);
		r->exit_hint = CL_EXIT_FAILED;
		return CL_EIO;
	}
	return 0;
}

static void stage_plan_from(const struct run *r, size_t i, struct cl_stage_plan *p)
{
	const struct cl_scn_stage *st = &r->s.stages[i];
	*p = (struct cl_stage_plan){
		.index = (uint32_t)i,
		.name = st->name,
		.mode = st->mode,
		.concurrency = st->concurrency,
		.rate_per_s = st->rate_per_s,
		.arrival = st->arrival,
		.gamma_shape = st->gamma_shape,
		.duration_us = st->duration_us,
		.requests = st->requests,
		.ramp_us = st->ramp_us,
		.drain_timeout_us = r->s.workload.drain_timeout_us,
		.seed = r->s.workload.seed * 1000003ULL + i,
	};
	/* A ramp rises from the previous level (k6-style), or from nothing. */
	if (st->ramp_us && i > 0 && r->s.stages[i - 1].mode == st->mode &&
	    st->mode == CL_MODE_CONCURRENCY && r->s.stages[i - 1].concurrency < st->concurrency)
		p->ramp_from = r->s.stages[i - 1].concurrency;
}

static int stage_init(struct cl_run_stage *st, size_t index)
{
	memset(st, 0, sizeof(*st));
	st->index = index;
	for (size_t i = 0; i < CL_FLEET_MAX_AGENTS; i++)
		st->last_interval[i] = -1;
	int rc = cl_metrics_init(&st->cum);
	for (size_t k = 0; k < CL_RUN_INTERVAL_RING && rc == 0; k++) {
		rc = cl_metrics_init(&st->ring[k]);
		st->ring_k[k] = -1;
	}
	return rc;
}

static void stage_destroy(struct cl_run_stage *st)
{
	cl_metrics_destroy(&st->cum);
	for (size_t k = 0; k < CL_RUN_INTERVAL_RING; k++)
		cl_metrics_destroy(&st->ring[k]);
}

static uint64_t errors_of(const struct cl_metrics *m)
{
	uint64_t e = 0;
	for (int c = CL_CTR_FIRST_ERROR; c <= CL_CTR_LAST_ERROR; c++)
		e += m->ctr[c];
	return e;
}

int cli_run_stage(struct run *r, size_t index)
{
	struct cl_run_stage *st = calloc(1, sizeof(*st));
	if (!st || stage_init(st, index) != 0) {
		if (st)
			stage_destroy(st);
		free(st);
		return CL_ENOMEM;
	}
	const struct cl_scn_stage *scn = &r->s.stages[index];
	stage_plan_from(r, index, &r->stage_plan);
	uint32_t weights[CL_FLEET_MAX_AGENTS];
	size_t n = weights_of(r, weights);
	free_shares(r);
	int rc = cl_stage_plan_split(&r->stage_plan, weights, n, r->shares);
	if (rc != 0)
		goto out;
	int64_t start = cl_mono_us() + START_LEAD_US;
	st->start_coord_us = start;
	for (size_t i = 0; i < n; i++) {
		st->participates[i] = weights[i] && !share_is_empty(&r->stage_plan, &r->shares[i]);
		if (!st->participates[i])
			continue;
		struct cl_msg_cmd c = { .cmd = CL_CMD_START_AT };
		c.start_at =
		    (struct cl_cmd_start_at){ .stage = r->shares[i], .start_at_coord_us = start };
		cl_fleet_send(&r->fleet, i, &c);
	}
	r->st = st;
	char d[32];
	if (scn->duration_us)
		cl_format_duration_us(scn->duration_us, d, sizeof(d));
	else
		snprintf(d, sizeof(d), "%llu requests", (unsigned long long)scn->requests);
	if (scn->mode == CL_MODE_CONCURRENCY)
		cl_progress_note(&r->prog, "stage %zu/%zu '%s': concurrency %u for %s", index + 1,
				 r->s.n_stages, scn->name, scn->concurrency, d);
	else
		cl_progress_note(&r->prog, "stage %zu/%zu '%s': %.2f req/s (%s) for %s", index + 1,
				 r->s.n_stages, scn->name, scn->rate_per_s,
				 cl_arrival_name(scn->arrival), d);

	/* Bound the wait: the agents end the stage themselves; this guards against hangs. */
	int64_t bound =
	    scn->duration_us
		? scn->ramp_us + scn->duration_us + r->s.workload.drain_timeout_us
		: (int64_t)(scn->requests / (scn->concurrency ? scn->concurrency : 1) + 1) *
		      r->s.workload.request_timeout_us;
	int64_t deadline = start + bound + 30 * 1000000LL;
	enum cl_stage_status status = CL_STAGE_OK;
	char reason[1400] = "";
	bool stop_sent = false;
	for (;;) {
		cl_fleet_serve(&r->fleet, 100000);
		int64_t now = cl_mono_us();
		if (*r->o->stop && !stop_sent) {
			cl_progress_note(&r->prog, "interrupted: stopping the agents");
			struct cl_msg_cmd c = { .cmd = CL_CMD_STOP };
			c.stop.stage = (uint32_t)index;
			cl_fleet_broadcast(&r->fleet, &c);
			stop_sent = true;
			status = CL_STAGE_INTERRUPTED;
			snprintf(reason, sizeof(reason), "interrupted by a signal");
			deadline = now + r->s.workload.drain_timeout_us + 5 * 1000000LL;
		}
		char why[1400];
		size_t who;
		enum breakage broken = fleet_broken(r, st->participates, &who, why, sizeof(why));
		if (broken) {
			if (broken == FLEET_LOST && r->s.agents.on_loss == CL_ON_LOSS_CONTINUE) {
				/* Degrade: stop waiting for the lost one (others, next time round).
				 */
				st->participates[who] = false;
				cl_progress_note(
				    &r->prog,
				    "%s; continuing without it (agents.on_loss: continue)", why);
				status = CL_STAGE_DEGRADED;
				snprintf(reason, sizeof(reason), "%s", why);
				cli_run_record_agents(r);
			} else {
				cl_progress_note(&r->prog, "stage '%s' failed: %s", scn->name, why);
				struct cl_msg_cmd c = { .cmd = CL_CMD_ABORT };
				cl_fleet_broadcast(&r->fleet, &c);
				status = CL_STAGE_FAILED;
				snprintf(reason, sizeof(reason), "%s", why);
				r->exit_hint = CL_EXIT_FAILED;
				cli_run_record_agents(r);
				break;
			}
		}
		bool all = true;
		for (size_t i = 0; i < n; i++)
			all &= !st->participates[i] || st->final_seen[i];
		if (all)
			break;
		if (now > deadline) {
			cl_progress_note(&r->prog,
					 "stage '%s' failed: agents did not finish in time",
					 scn->name);
			struct cl_msg_cmd c = { .cmd = CL_CMD_ABORT };
			cl_fleet_broadcast(&r->fleet, &c);
			status = CL_STAGE_FAILED;
			snprintf(reason, sizeof(reason), "agents did not finish within %.0f s",
				 (deadline - start) / 1e6);
			r->exit_hint = CL_EXIT_FAILED;
			break;
		}
		/* progress */
		uint32_t ok, missing;
		int64_t inflight;
		agent_counts(&r->fleet, &ok, &missing, &inflight);
		struct cl_progress_snapshot snap = {
			.stage = scn->name,
			.stage_index = index,
			.n_stages = r->s.n_stages,
			.elapsed_s = now > start ? (now - start) / 1e6 : 0,
			.total_s = scn->duration_us ? (scn->ramp_us + scn->duration_us) / 1e6 : 0,
			.requests_done = st->cum.ctr[CL_CTR_COMPLETED] + errors_of(&st->cum),
			.requests_total = scn->requests,
			.active = inflight,
			.requests_per_s = st->last_req_s,
			.output_tokens_per_s = st->last_tok_s,
			.ttft_p50_ms = st->last_ttft_p50_ms,
			.errors = errors_of(&st->cum),
			.agents_ok = ok,
			.agents_missing = missing,
		};
		cl_progress_update(&r->prog, &snap, false);
	}
	cl_progress_end(&r->prog);
	emit_ready_intervals(r, st, true);
	for (size_t k = 0; k < CL_RUN_INTERVAL_RING; k++)
		if (st->ring_k[k] >= 0)
			emit_interval(r, st, k);
	/* Throughput's denominator: the measured window for duration-bound stages; for
	 * request-bound ones the longest time any agent took. */
	double window_s = scn->duration_us / 1e6;
	if (!scn->duration_us || status != CL_STAGE_OK) {
		int64_t longest = 0;
		for (size_t i = 0; i < n; i++)
			if (st->span_us[i] > longest)
				longest = st->span_us[i];
		if (!scn->duration_us || longest < scn->duration_us)
			window_s = longest / 1e6;
	}
	rc = cl_results_finish_stage(r->res, index, scn, &st->cum, window_s, status,
				     reason[0] ? reason : NULL);
	if (rc != 0)
		CL_ERROR("cannot write results for stage '%s': %s", scn->name,
			 cl_results_last_error(r->res));
	if (status == CL_STAGE_INTERRUPTED)
		rc = CL_ECLOSED;
	else if (status == CL_STAGE_FAILED)
		rc = CL_EIO;
	else
		rc = 0;
out:
	r->st = NULL;
	stage_destroy(st);
	free(st);
	return rc;
}
