/* One measured stage of a run: started (the load split among the agents, each told when to
 * begin), polled until every agent has finished or the stage must end (a signal, a lost or
 * failed agent, the deadline), and closed into the results. */
#include "coordinator/run/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/clock.h"
#include "chatload/exitcode.h"
#include "chatload/log.h"
#include "chatload/units.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRV_MARK_WAIT_US 600000 /* a stage boundary waits this long at most for a scrape */
#define START_LEAD_US    500000 /* START_AT this far ahead: every agent hears it in time */

/* ---- start --------------------------------------------------------------------------- */

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

static void stage_free(struct run_stage *st)
{
	if (!st)
		return;
	cl_metrics_destroy(&st->cum);
	cli_run_intervals_free(st);
	free(st);
}

static struct run_stage *stage_new(struct run *r, size_t index, uint32_t repeat)
{
	struct run_stage *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->index = index;
	st->scn = &r->s.stages[index];
	st->status = CL_STAGE_OK;
	st->last_ttft_p50_ms = NAN; /* no interval yet: the progress line shows "-" */
	int rc = cl_metrics_init(&st->cum);
	if (rc == 0)
		rc = cli_run_intervals_init(r, st);
	if (rc != 0) {
		stage_free(st);
		return NULL;
	}
	stage_plan_from(r, index, &st->plan);
	/* Each repeat draws its own prompts and lengths (the first as an unrepeated stage
	 * would), so the spread across repeats includes the workload's sampling. */
	st->repeat = repeat ? repeat : 1;
	st->plan.seed += (uint64_t)(st->repeat - 1) * 7919u;
	return st;
}

static void stage_announce(struct run *r, const struct run_stage *st)
{
	const struct cl_scn_stage *scn = st->scn;
	char d[48];
	if (scn->duration_us)
		cl_format_duration_us(scn->duration_us, CL_DURATION_PRECISE, d, sizeof(d));
	else
		snprintf(d, sizeof(d), "%llu requests", (unsigned long long)scn->requests);
	if (scn->repeat > 1) {
		size_t len = strlen(d);
		snprintf(d + len, sizeof(d) - len, ", repeat %u/%u", st->repeat, scn->repeat);
	}
	if (scn->mode == CL_MODE_CONCURRENCY)
		cl_progress_note(&r->prog, "stage %zu/%zu '%s': concurrency %u for %s",
				 st->index + 1, r->s.n_stages, scn->name, scn->concurrency, d);
	else
		cl_progress_note(&r->prog, "stage %zu/%zu '%s': %.2f req/s (%s) for %s",
				 st->index + 1, r->s.n_stages, scn->name, scn->rate_per_s,
				 cl_arrival_name(scn->arrival), d);
}

static void stage_set_status(struct run_stage *st, enum cl_stage_status status, const char *reason);

/* Splits the stage among the agents, tells each when to start its share and sets r->st.
 * 0, or the error (CL_ENOMEM) with r->st left NULL.  With no agent left to run it, the stage
 * is set up failed (nothing measured passes nothing). */
static int stage_start(struct run *r, size_t index, uint32_t repeat)
{
	struct run_stage *st = stage_new(r, index, repeat);
	if (!st)
		return CL_ENOMEM;
	st->own_first = st->own_seen = r->fleet.n_own; /* earlier stalls are not this stage's */
	if (cl_fleet_active(&r->fleet) == 0) {
		for (size_t i = 0; i < r->fleet.n; i++)
			memset(&r->agents[i].stage, 0, sizeof(r->agents[i].stage));
		st->start_coord_us = cl_mono_us();
		stage_set_status(st, CL_STAGE_FAILED,
				 "no agent is left to run it: every agent "
				 "was lost");
		r->exit_hint = CL_EXIT_FAILED;
		r->st = st;
		cl_progress_note(&r->prog, "stage '%s' failed: no agent is left to run it",
				 st->scn->name);
		return 0;
	}
	int rc = cli_run_split_shares(r, &st->plan);
	if (rc != 0) {
		stage_free(st);
		return rc;
	}
	if (r->srv)
		cl_srv_scrape_mark(r->srv, &st->srv_at_start, SRV_MARK_WAIT_US);
	int64_t start = cl_mono_us() + START_LEAD_US;
	st->start_coord_us = start;
	for (size_t i = 0; i < r->fleet.n; i++) {
		struct run_agent *ra = &r->agents[i];
		memset(&ra->stage, 0, sizeof(ra->stage));
		ra->stage.last_interval = -1;
		ra->stage.returns_seen = r->fleet.agents[i].returns; /* earlier ones are not ours */
		/* A lost agent weighed 0 in the split (every other one has a worker or more). */
		ra->stage.participates =
		    r->fleet.agents[i].live != CL_LIVE_LOST && cli_run_has_share(r, i, &st->plan);
		ra->stage.given = ra->stage.participates;
		if (!ra->stage.participates)
			continue;
		struct cl_msg_cmd c = { .cmd = CL_CMD_START_AT };
		c.start_at =
		    (struct cl_cmd_start_at){ .stage = ra->share, .start_at_coord_us = start };
		cl_fleet_send(&r->fleet, i, &c);
	}
	r->st = st;
	stage_announce(r, st);
	if (r->live && cl_live_metrics_stage_start(
			   r->live, index, st->scn->name, cl_load_mode_name(st->scn->mode),
			   st->scn->mode == CL_MODE_CONCURRENCY ? st->scn->concurrency
								: st->scn->rate_per_s) != 0)
		CL_WARN("live metrics: out of memory for stage '%s'", st->scn->name);
	/* Bound the wait: the agents end the stage themselves; this guards against hangs. */
	const struct cl_scn_stage *scn = st->scn;
	int64_t bound =
	    scn->duration_us
		? scn->ramp_us + scn->duration_us + r->s.workload.drain_timeout_us
		: (int64_t)(scn->requests / (scn->concurrency ? scn->concurrency : 1) + 1) *
		      r->s.workload.request_timeout_us;
	st->deadline_us = start + bound + RUN_HANG_GRACE_US;
	return 0;
}

/* ---- poll ---------------------------------------------------------------------------- */

static void stage_set_status(struct run_stage *st, enum cl_stage_status status, const char *reason)
{
	st->status = status;
	snprintf(st->reason, sizeof(st->reason), "%s", reason);
}

/* The agents are told to stop or abort now: whatever follows is drain, not window. */
static void stage_note_stop(struct run_stage *st, int64_t now)
{
	if (!st->stopped_at_us)
		st->stopped_at_us = now;
}

/* Gives the stage up: every agent is told to abort and the run to fail. */
static void stage_abort(struct run *r, const char *reason)
{
	struct cl_msg_cmd c = { .cmd = CL_CMD_ABORT };
	cl_fleet_broadcast(&r->fleet, &c);
	stage_note_stop(r->st, cl_mono_us());
	stage_set_status(r->st, CL_STAGE_FAILED, reason);
	r->exit_hint = CL_EXIT_FAILED;
}

/* Longest an interrupted stage waits for the agents' final reports: they cut what they hold
 * at once, so only the report's trip is left. */
#define INTERRUPT_REPORT_US (5 * 1000000LL)

/* A signal arrived: the agents cut their requests in flight (no drain: a request the target
 * never answers would hold the run for drain_timeout) and send their final reports at once.
 * Also during a drain already under way (an SLO abort's, a probe's end). */
static void stage_interrupt(struct run *r, int64_t now)
{
	struct run_stage *st = r->st;
	cl_progress_note(&r->prog, "interrupted: stopping the agents, cutting their requests");
	struct cl_msg_cmd c = { .cmd = CL_CMD_STOP };
	c.stop.stage = (uint32_t)st->index;
	c.stop.cut = true;
	cl_fleet_broadcast(&r->fleet, &c);
	/* an SLO abort's drain keeps its status: the signal only hastens its end */
	if (!st->stop_sent)
		stage_set_status(st, CL_STAGE_INTERRUPTED, "interrupted by a signal");
	st->stop_sent = true;
	stage_note_stop(st, now);
	st->cut_sent = true;
	if (st->deadline_us > now + INTERRUPT_REPORT_US)
		st->deadline_us = now + INTERRUPT_REPORT_US;
}

/* A lost or failed participant: with agents.on_loss continue, a lost one is no longer
 * waited for and the stage is degraded; otherwise the stage fails.  True when it failed. */
static bool stage_check_fleet(struct run *r)
{
	struct run_stage *st = r->st;
	char why[1400];
	size_t who;
	enum run_breakage broken = cli_run_fleet_broken(r, RUN_PHASE_STAGE, &who, why, sizeof(why));
	if (!broken)
		return false;
	if (broken == RUN_FLEET_LOST && r->s.agents.on_loss == CL_ON_LOSS_CONTINUE) {
		/* Degrade: stop waiting for the lost one (others, next time round). */
		r->agents[who].stage.participates = false;
		cli_run_record_agents(r);
		size_t left = 0;
		for (size_t i = 0; i < r->fleet.n; i++)
			left += r->agents[i].stage.participates;
		if (left) {
			cl_progress_note(
			    &r->prog, "%s; continuing without it (agents.on_loss: continue)", why);
			stage_set_status(st, CL_STAGE_DEGRADED, why);
			return false;
		}
		/* on_loss: continue goes on with the agents left; with none, the stage measured
		 * nothing from here on and must not pass. */
		char all[sizeof(st->reason)];
		snprintf(all, sizeof(all), "no agent is left: %.1300s", why);
		cl_progress_note(&r->prog, "stage '%s' failed: %s", st->scn->name, all);
		stage_abort(r, all);
		return true;
	}
	cl_progress_note(&r->prog, "stage '%s' failed: %s", st->scn->name, why);
	stage_abort(r, why);
	cli_run_record_agents(r);
	return true;
}

/* An agent whose final report says it was stopped before the stage's end (a signal of its
 * own) ran only part of its share: the stage fails, saying so at once, unless the run was
 * stopped too (interrupted, or already ending).  Before agents said it, such an agent went
 * silent and was declared lost 10 s later. */
static void stage_check_left(struct run *r)
{
	struct run_stage *st = r->st;
	if (st->stop_sent || st->status != CL_STAGE_OK)
		return;
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct run_agent *ra = &r->agents[i];
		if (!ra->stage.participates || !ra->stage.left)
			continue;
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		char why[400];
		snprintf(why, sizeof(why), "agent %u (%s) left the stage before its end: %s", a->id,
			 a->label, ra->stage.left_why);
		cl_progress_note(&r->prog, "stage '%s' failed: %s", st->scn->name, why);
		stage_set_status(st, CL_STAGE_FAILED, why);
		r->exit_hint = CL_EXIT_FAILED;
		return;
	}
}

/* Samples what the agents spend, inside the measured window only (capacity planning). */
static void stage_sample_load(struct run *r, int64_t now)
{
	struct run_stage *st = r->st;
	const struct cl_scn_stage *scn = st->scn;
	int64_t from = st->start_coord_us + scn->ramp_us;
	if (now < from || (scn->duration_us && now > from + scn->duration_us) || st->stop_sent ||
	    st->ended_early)
		return;
	double cpu = 0, streams = 0;
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		if (!r->agents[i].stage.participates || a->live == CL_LIVE_LOST)
			continue;
		cpu += a->cpu_pct;
		streams += (double)a->inflight;
	}
	st->load_cpu_sum += cpu;
	st->load_streams_sum += streams;
	st->load_samples++;
}

/* slo.abort_on_breach: { intervals: N }: N report intervals in a row breached an SLO, so the
 * run stops now; the agents get a drain's time to send their last reports, and everything
 * is written as for any other end. */
static void stage_check_breach_window(struct run *r, int64_t now)
{
	struct run_stage *st = r->st;
	char why[256];
	uint32_t n = r->s.slo_abort_intervals;
	if (!n || st->stop_sent ||
	    cl_results_breach_streak(r->res, st->index, why, sizeof(why)) < n)
		return;
	char reason[400];
	snprintf(reason, sizeof(reason),
		 "stopped by slo.abort_on_breach: %u consecutive intervals breached an SLO (last: "
		 "%s)",
		 n, why);
	cl_progress_note(&r->prog, "stage '%s': %s", st->scn->name, reason);
	struct cl_msg_cmd c = { .cmd = CL_CMD_STOP };
	c.stop.stage = (uint32_t)st->index;
	cl_fleet_broadcast(&r->fleet, &c);
	st->stop_sent = true;
	stage_note_stop(st, now);
	stage_set_status(st, CL_STAGE_ABORTED, reason);
	st->deadline_us = now + r->s.workload.drain_timeout_us + 5 * 1000000LL;
	r->exit_hint = CL_EXIT_SLO_BREACH;
}

/* A probe of a capacity search ends once it has run probe_duration and its SLOs' percentiles
 * have the samples they need (cl_verdict_samples_needed); short of them it runs on, up to
 * max_probe_duration (its duration).  The stop is an ordinary end: the window is the time
 * the agents measured. */
static void stage_check_probe_samples(struct run *r, int64_t now)
{
	struct run_stage *st = r->st;
	const struct cl_scn_stage *scn = st->scn;
	const struct cl_scn_search *q = scn->probe_of;
	if (!q || st->stop_sent || st->ended_early || scn->duration_us <= scn->probe_min_us ||
	    now < st->start_coord_us + scn->ramp_us + scn->probe_min_us)
		return;
	for (size_t i = 0; i < q->n_slos; i++) {
		const struct cl_scn_slo *slo = &q->slos[i];
		uint64_t got = cl_verdict_slo_samples(slo, &st->cum);
		uint64_t need = slo->kind == CL_SLO_LATENCY ? cl_verdict_samples_needed(slo) : 0;
		if (got >= need)
			continue;
		if (!st->noted_run_on) {
			char at[32];
			cl_progress_note(
			    &r->prog,
			    "probe '%s': %s has %llu samples of the %llu it needs: running "
			    "on, up to %s",
			    scn->name, slo->key, (unsigned long long)got, (unsigned long long)need,
			    cl_format_duration_us(scn->duration_us, CL_DURATION_TENTHS, at,
						  sizeof(at)));
			st->noted_run_on = true;
		}
		return;
	}
	struct cl_msg_cmd c = { .cmd = CL_CMD_STOP };
	c.stop.stage = (uint32_t)st->index;
	cl_fleet_broadcast(&r->fleet, &c);
	/* Not stop_sent: a signal during the drain must still interrupt the run. */
	st->ended_early = true;
	stage_note_stop(st, now);
	st->deadline_us = now + r->s.workload.drain_timeout_us + 5 * 1000000LL;
}

static void stage_progress(struct run *r, int64_t now, bool force)
{
	const struct run_stage *st = r->st;
	const struct cl_scn_stage *scn = st->scn;
	uint32_t ok = 0, missing = 0;
	int64_t inflight = 0;
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		if (a->live == CL_LIVE_OK)
			ok++;
		else
			missing++;
		inflight += a->inflight;
	}
	int64_t start = st->start_coord_us;
	struct cl_progress_snapshot snap = {
		.stage = scn->name,
		.stage_index = st->index,
		.n_stages = r->s.n_stages,
		.elapsed_s = now > start ? (now - start) / 1e6 : 0,
		.total_s = scn->duration_us ? (scn->ramp_us + scn->duration_us) / 1e6 : 0,
		.requests_done = st->cum.ctr[CL_CTR_COMPLETED] + cl_verdict_errors(&st->cum),
		.requests_total = scn->requests,
		.active = inflight,
		.requests_per_s = st->last_req_s,
		.output_tokens_per_s = st->last_tok_s,
		.ttft_p50_ms = st->last_ttft_p50_ms,
		.errors = cl_verdict_errors(&st->cum),
		.agents_ok = ok,
		.agents_missing = missing,
	};
	cl_progress_update(&r->prog, &snap, force);
}

/* Files every silence that ended since the last turn: an agent the fleet had marked missing
 * (CL_WIRE_MISSING_US without a request) came back.  The coordinator is the witness here, so
 * a frozen host whose own clock stood still is caught too. */
static void stage_note_silences(struct run *r)
{
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		struct run_agent *ra = &r->agents[i];
		if (a->returns == ra->stage.returns_seen)
			continue;
		ra->stage.returns_seen = a->returns;
		if (ra->stage.participates)
			cl_stall_list_add(&ra->stage.silences, a->silent_from_us,
					  a->silent_until_us - a->silent_from_us);
	}
}

/* One turn of the stage loop: serves the fleet for up to RUN_SERVE_US (reports are merged
 * meanwhile), then reacts to a signal, a broken fleet, the stage's end or its deadline, and
 * shows progress.  True when the stage is over. */
static bool stage_poll(struct run *r)
{
	struct run_stage *st = r->st;
	cl_fleet_serve(&r->fleet, RUN_SERVE_US);
	cli_run_note_own_stalls(r);
	stage_note_silences(r);
	int64_t now = cl_mono_us();
	if (atomic_load(r->o->stop) && !st->cut_sent)
		stage_interrupt(r, now);
	stage_check_breach_window(r, now);
	stage_check_probe_samples(r, now);
	stage_sample_load(r, now);
	cli_run_live_tick(r, false);
	if (stage_check_fleet(r))
		return true;
	cli_run_emit_intervals(r); /* a lost agent is no longer waited for */
	stage_check_left(r);
	if (cli_run_all_finished(r, RUN_PHASE_STAGE))
		return true;
	if (now > st->deadline_us) {
		cl_progress_note(&r->prog, "stage '%s' failed: agents did not finish in time",
				 st->scn->name);
		char reason[128];
		snprintf(reason, sizeof(reason), "agents did not finish within %.0f s",
			 (st->deadline_us - st->start_coord_us) / 1e6);
		stage_abort(r, reason);
		return true;
	}
	stage_progress(r, now, false);
	return false;
}

/* ---- close --------------------------------------------------------------------------- */

/* Throughput's denominator: the measured window for duration-bound stages; for
 * request-bound ones (or a stage cut short) the longest time any agent took.  Never past
 * the moment the agents were told to stop (a probe that had its samples, a signal, an
 * abort): their windows close then, and what they count after it is the drain's, which
 * their reports' spans cover too (a probe ended early read 70 req/s where the same load
 * read 82 in a sweep). */
static double stage_window_s(const struct run *r, const struct run_stage *st)
{
	const struct cl_scn_stage *scn = st->scn;
	double window_s = scn->duration_us / 1e6;
	if (!scn->duration_us || st->status != CL_STAGE_OK || st->ended_early) {
		int64_t longest = 0;
		for (size_t i = 0; i < r->fleet.n; i++)
			if (r->agents[i].stage.span_us > longest)
				longest = r->agents[i].stage.span_us;
		if (!scn->duration_us || longest < scn->duration_us)
			window_s = longest / 1e6;
	}
	int64_t from = st->start_coord_us + scn->ramp_us;
	if (st->stopped_at_us > from && (st->stopped_at_us - from) / 1e6 < window_s)
		window_s = (st->stopped_at_us - from) / 1e6;
	return window_s;
}

/* The request-bound stage's finish is START_AT + the time its slowest agent's reports
 * covered; the moment the agents were told to stop is a probe that had its samples, a
 * signal, an SLO abort or a failure.  Scrapes after the end saw the drain, not the load
 * (issue 40). */
int64_t cli_run_stage_window_end_us(const struct run *r, const struct run_stage *st, int64_t now)
{
	const struct cl_scn_stage *scn = st->scn;
	int64_t from = st->start_coord_us + scn->ramp_us;
	int64_t end = now;
	if (scn->duration_us) {
		end = from + scn->duration_us;
	} else {
		int64_t longest = 0;
		for (size_t i = 0; i < r->fleet.n; i++)
			if (r->agents[i].stage.span_us > longest)
				longest = r->agents[i].stage.span_us;
		if (longest > 0)
			end = st->start_coord_us + longest;
	}
	if (st->stopped_at_us && st->stopped_at_us < end)
		end = st->stopped_at_us;
	if (end > now)
		end = now;
	return end > from ? end : from;
}

/* Adds one agent's episodes (coordinator clock) to out as stalls of the stage that ran from
 * start_us to end_us; the parts outside it are not the stage's. */
static size_t stage_stalls_of(const struct cl_fleet_agent *a, const struct cl_stall_list *l,
			      bool by_coordinator, int64_t start_us, int64_t end_us,
			      struct cl_results_stall *out)
{
	size_t n = 0;
	for (uint32_t k = 0; k < l->n && k < CL_STALLS_MAX; k++) {
		int64_t from = l->ep[k].start_us, to = from + l->ep[k].length_us;
		if (from < start_us)
			from = start_us;
		if (to > end_us)
			to = end_us;
		if (to <= from)
			continue;
		out[n++] = (struct cl_results_stall){
			.agent = a->id,
			.host = a->host,
			.at_s = (from - start_us) / 1e6,
			.length_s = (to - from) / 1e6,
			.seen_by_coordinator = by_coordinator,
		};
	}
	return n;
}

/* Hands the stage's stalls to the results, agent by agent: those the agents saw themselves,
 * then the silences the coordinator saw. */
static void stage_file_stalls(struct run *r, const struct run_stage *st)
{
	int64_t end = cl_mono_us();
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct run_agent *ra = &r->agents[i];
		struct cl_results_stall s[2 * CL_STALLS_MAX];
		size_t n = stage_stalls_of(&r->fleet.agents[i], &ra->stage.stalls, false,
					   st->start_coord_us, end, s);
		n += stage_stalls_of(&r->fleet.agents[i], &ra->stage.silences, true,
				     st->start_coord_us, end, s + n);
		uint32_t lost_a = ra->stage.stalls.dropped, lost_c = ra->stage.silences.dropped;
		if ((n || lost_a || lost_c) &&
		    cl_results_add_stalls(r->res, st->index, s, n, lost_a, lost_c) != 0)
			CL_ERROR("cannot record the stalls of stage '%s': out of memory",
				 st->scn->name);
	}
}

/* Writes the stage's last intervals and its summary, frees r->st, and says whether the
 * run goes on: 0, CL_ECLOSED (interrupted) or CL_EIO (failed). */
static int stage_close(struct run *r)
{
	struct run_stage *st = r->st;
	/* Every stage ends with its progress line: a short one (a `requests:` stage often
	 * takes less than one progress period) would otherwise print none. */
	stage_progress(r, cl_mono_us(), true);
	cl_progress_end(&r->prog);
	cli_run_flush_intervals(r);
	cli_run_note_own_stalls(r);
	stage_note_silences(r);
	stage_file_stalls(r, st);
	cli_run_file_faults(r, st, cl_mono_us());
	if (r->srv && st->srv_at_start.t_us) {
		/* Gauges over the measured window (after the ramp, before the drain), whatever
		 * bounds the stage; counters and histograms from the scrape before the stage to
		 * the one after it. */
		int64_t from = st->start_coord_us + st->scn->ramp_us;
		int64_t to = cli_run_stage_window_end_us(r, st, cl_mono_us());
		struct cl_srv_mark end;
		cl_srv_scrape_mark(r->srv, &end, SRV_MARK_WAIT_US);
		json_t *srv = cl_srv_scrape_stage_json(r->srv, &st->srv_at_start, &end,
						       st->start_coord_us, from, to);
		if (cl_results_set_server(r->res, st->index, srv))
			CL_WARN("server metrics: out of memory for stage '%s'", st->scn->name);
	}
	if (st->load_samples)
		cl_results_set_client_load(r->res, st->index, st->load_cpu_sum / st->load_samples,
					   st->load_streams_sum / st->load_samples);
	if (cl_results_finish_repeat(r->res, st->index, st->scn, &st->cum, stage_window_s(r, st),
				     st->status, st->reason[0] ? st->reason : NULL) != 0)
		CL_ERROR("cannot write results for stage '%s': %s", st->scn->name,
			 cl_results_last_error(r->res));
	if (r->live)
		cl_live_metrics_stage_end(r->live, &st->cum, cl_stage_status_name(st->status));
	cli_run_live_tick(r, true); /* the metrics and the live page see the stage's end */
	int rc = 0;                 /* ok and degraded stages let the run go on */
	if (st->status == CL_STAGE_INTERRUPTED || st->status == CL_STAGE_ABORTED)
		rc = CL_ECLOSED;
	else if (st->status == CL_STAGE_FAILED)
		rc = CL_EIO;
	r->st = NULL;
	stage_free(st);
	return rc;
}

int cli_run_stage(struct run *r, size_t index)
{
	return cli_run_stage_repeat(r, index, 1);
}

int cli_run_stage_repeat(struct run *r, size_t index, uint32_t repeat)
{
	int rc = stage_start(r, index, repeat);
	if (rc != 0)
		return rc;
	if (r->st->status != CL_STAGE_FAILED)
		while (!stage_poll(r))
			;
	return stage_close(r);
}
