/* The phases before the measured stages, both of which must pass for the stages to run: the
 * readiness gate (every agent probes the target until it answers) and warmup (load that is
 * recorded apart from the results). */
#include "coordinator/run/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/clock.h"
#include "chatload/exitcode.h"
#include "chatload/units.h"

#include <stdio.h>
#include <string.h>

#define NOTE_EVERY_US 5000000LL /* readiness: how often to say what we wait for */

/* ---- readiness ----------------------------------------------------------------------- */

/*
 * Says what the gate waits for, from the least advanced agent's latest report: the phase not
 * passed yet, when the earlier ones passed ("at", since the gate started), and generation
 * attempts only once generation is tried (connect and /v1/models polls are not counted).
 * Agents report a phase's pass at once, so the phase named is one still pending.
 */
static void show_probe(struct run *r, int64_t started_us)
{
	const struct cl_readiness_result *w = NULL;
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct run_agent *ra = &r->agents[i];
		if (!ra->probe.seen || ra->probe.final)
			continue;
		if (!w || ra->probe.result.phase < w->phase)
			w = &ra->probe.result;
	}
	char el[32];
	cl_format_duration_us(cl_mono_us() - started_us, CL_DURATION_TENTHS, el, sizeof(el));
	if (!w) {
		cl_progress_note(&r->prog, "readiness: waiting for the gate (%s elapsed)", el);
		return;
	}
	char done[160] = "", a[32];
	size_t n = 0;
	for (int p = CL_READY_CONNECT; p < (int)w->phase && p < CL_READY__PHASES; p++)
		if (w->phase_passed_us[p] >= 0 && n < sizeof(done))
			n += (size_t)snprintf(
			    done + n, sizeof(done) - n, "; %s ok at %s", cl_readiness_phase_name(p),
			    cl_format_duration_us(w->phase_passed_us[p], CL_DURATION_TENTHS, a,
						  sizeof(a)));
	char tries[48] = "";
	if (w->phase == CL_READY_GENERATION)
		snprintf(tries, sizeof(tries), "; %u generation attempt%s", w->attempts,
			 w->attempts == 1 ? "" : "s");
	cl_progress_note(&r->prog, "readiness: waiting for %s (%s elapsed%s%s)%s%s",
			 cl_readiness_phase_name(w->phase), el, done, tries,
			 w->last_error[0] ? "; last error: " : "", w->last_error);
}

/* Every agent starts the gate against the target, from scratch. */
static void readiness_send(struct run *r)
{
	const struct cl_scn_readiness *rd = &r->s.readiness;
	for (size_t i = 0; i < CL_FLEET_MAX_AGENTS; i++)
		memset(&r->agents[i].probe, 0, sizeof(r->agents[i].probe));
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
}

/* Waits until every agent's gate has ended, saying now and then what it waits for. */
static int readiness_wait(struct run *r)
{
	int64_t started = cl_mono_us();
	/* The agents enforce the deadline; ours only guards against an agent that hangs. */
	int64_t deadline = started + r->s.readiness.timeout_us + RUN_HANG_GRACE_US;
	int64_t next_note = started + NOTE_EVERY_US;
	for (;;) {
		cl_fleet_serve(&r->fleet, RUN_SERVE_US);
		char why[1400];
		if (atomic_load(r->o->stop)) {
			cl_progress_note(&r->prog, "interrupted during the readiness gate");
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ECLOSED;
		}
		size_t who;
		if (cli_run_fleet_broken(r, RUN_PHASE_READINESS, &who, why, sizeof(why))) {
			cl_progress_note(&r->prog, "readiness gate failed: %s", why);
			r->exit_hint = CL_EXIT_FAILED;
			return CL_EIO;
		}
		if (cli_run_all_finished(r, RUN_PHASE_READINESS))
			return 0;
		if (cl_mono_us() > deadline) {
			cl_progress_note(&r->prog, "readiness gate: agents did not report in time");
			r->exit_hint = CL_EXIT_NOT_READY;
			return CL_ETIMEDOUT;
		}
		if (cl_mono_us() >= next_note) {
			show_probe(r, started);
			next_note = cl_mono_us() + NOTE_EVERY_US;
		}
	}
}

/* The run's gate is the worst agent's: the first that did not pass, else agent 1.  Records
 * and shows it; a passing gate also names the model when the scenario did not. */
static int readiness_verdict(struct run *r)
{
	const struct cl_readiness_result *res = &r->agents[0].probe.result;
	for (size_t i = 0; i < r->fleet.n; i++) {
		if (r->agents[i].probe.result.status != CL_READY_PASSED) {
			res = &r->agents[i].probe.result;
			break;
		}
	}
	cl_results_set_readiness(r->res, res);
	char line[1024];
	cl_readiness_describe(res, line, sizeof(line));
	cl_progress_note(&r->prog, "%s", line);
	if (res->status != CL_READY_PASSED && r->probe_tools)
		cl_progress_note(
		    &r->prog,
		    "the gate's request was the workload's shape: %s with tools (%u "
		    "function definitions of workload.tools, tool_choice %s); a server "
		    "that refuses tools refuses that shape",
		    cl_api_name(r->s.workload.api), r->s.workload.tools_count,
		    (const char *const[]){ "auto", "none",
					   "required" }[r->s.workload.tools_choice % 3]);
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

int cli_run_readiness(struct run *r)
{
	readiness_send(r);
	int rc = readiness_wait(r);
	return rc != 0 ? rc : readiness_verdict(r);
}

/* ---- warmup --------------------------------------------------------------------------- */

/* Splits the warmup among the agents and sends each its share; *whole gets the plan. */
static int warmup_send(struct run *r, struct cl_stage_plan *whole)
{
	const struct cl_scn_warmup *w = &r->s.warmup;
	*whole = (struct cl_stage_plan){
		.name = "warmup",
		.mode = CL_MODE_CONCURRENCY,
		.concurrency = w->concurrency ? w->concurrency : 1,
		.requests = w->requests,
		.duration_us = w->requests ? 0 : w->duration_us,
		.drain_timeout_us = w->request_timeout_us,
		.seed = r->s.workload.seed ^ 0x5741524d,
	};
	if (cli_run_split_shares(r, whole) != 0)
		return CL_ENOMEM;
	for (size_t i = 0; i < r->fleet.n; i++) {
		struct run_agent *ra = &r->agents[i];
		ra->warm.seen = false;
		ra->warm.participates = cli_run_has_share(r, i, whole);
		if (!ra->warm.participates)
			continue;
		struct cl_msg_cmd c = { .cmd = CL_CMD_WARMUP };
		c.warmup = (struct cl_cmd_warmup){ .stage = ra->share,
						   .max_tokens = w->max_tokens,
						   .request_timeout_us = w->request_timeout_us,
						   .body_json = r->warmup_body };
		cl_fleet_send(&r->fleet, i, &c);
	}
	return 0;
}

/* Waits for every participant's warmup report, up to deadline. */
static int warmup_wait(struct run *r, int64_t deadline)
{
	for (;;) {
		cl_fleet_serve(&r->fleet, RUN_SERVE_US);
		char why[1400];
		if (atomic_load(r->o->stop)) {
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ECLOSED;
		}
		size_t who;
		if (cli_run_fleet_broken(r, RUN_PHASE_WARMUP, &who, why, sizeof(why))) {
			cl_progress_note(&r->prog, "warmup failed: %s", why);
			r->exit_hint = CL_EXIT_FAILED;
			return CL_EIO;
		}
		if (cli_run_all_finished(r, RUN_PHASE_WARMUP))
			return 0;
		if (cl_mono_us() > deadline) {
			cl_progress_note(&r->prog, "warmup did not finish in time");
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ETIMEDOUT;
		}
	}
}

/* Records and shows the warmup; fails the run on errors when warmup.fail_on_error says so. */
static int warmup_verdict(struct run *r)
{
	cl_results_set_warmup(r->res, &r->warm);
	uint64_t errors = cl_verdict_errors(&r->warm);
	char ttft[32];
	cl_format_duration_us(cl_hist_percentile(&r->warm.lat[CL_LAT_TTFT], 50),
			      CL_DURATION_PRECISE, ttft, sizeof(ttft));
	cl_progress_note(&r->prog, "warmup: %llu completed, %llu errors, ttft p50 %s",
			 (unsigned long long)r->warm.ctr[CL_CTR_COMPLETED],
			 (unsigned long long)errors, ttft);
	if (errors && r->s.warmup.fail_on_error) {
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
	struct cl_stage_plan whole;
	if (warmup_send(r, &whole) != 0)
		return CL_ENOMEM;
	char d[32];
	cl_progress_note(
	    &r->prog, "warmup: %u requests at concurrency %u (timeout %s each)", w->requests,
	    whole.concurrency,
	    cl_format_duration_us(w->request_timeout_us, CL_DURATION_PRECISE, d, sizeof(d)));
	int64_t bound = w->requests
			    ? (int64_t)(w->requests / whole.concurrency + 1) * w->request_timeout_us
			    : w->duration_us + w->request_timeout_us;
	int rc = warmup_wait(r, cl_mono_us() + bound + RUN_HANG_GRACE_US);
	return rc != 0 ? rc : warmup_verdict(r);
}
