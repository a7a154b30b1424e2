/* chatload run, start to end: load, fleet, readiness, warmup, stages, verdict, reports. */
#include "coordinator/run/internal.h"

#include "coordinator/run/calibrate.h"

#include "coordinator/report/report.h"

#include "chatload/clock.h"
#include "chatload/exitcode.h"
#include "chatload/log.h"
#include "coordinator/workload/workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail_msg(struct run *r, int code, const struct cl_err *err, const char *what)
{
	char msg[900];
	cl_progress_end(&r->prog);
	fprintf(stderr, "chatload: %s: %s\n", what, cl_err_format(err, msg, sizeof(msg)));
	r->exit_hint = code;
	return code;
}

/* Scrapes the server's /metrics from readiness to the end, as target.server_metrics says:
 * `auto` (the target URL's scheme://host:port/metrics, noted when absent), a URL (warned
 * about when it cannot be read), or false.  Never fails the run (docs/scenario.md). */
static void start_server_metrics(struct run *r)
{
	const struct cl_scn_server_metrics *m = &r->s.target.server_metrics;
	char url[1024];
	if (m->mode == CL_SCN_SRV_OFF)
		return;
	if (m->mode == CL_SCN_SRV_URL) {
		snprintf(url, sizeof(url), "%s", m->url);
	} else if (cl_srv_metrics_url(r->target.base_url, url, sizeof(url)) != 0) {
		CL_INFO("server metrics: no /metrics URL from '%s'", r->target.base_url);
		return;
	}
	struct cl_srv_scrape_opts o = {
		.url = url,
		.target = &r->target,
		.interval_us = m->interval_us,
		.quiet = m->mode == CL_SCN_SRV_AUTO,
		.headers = (const char *const *)m->headers,
		.n_headers = m->n_headers,
		.series = (const char *const *)m->series,
		.n_series = m->n_series,
		.extra = (const char *const *)m->extra,
		.n_extra = m->n_extra,
	};
	struct cl_err err = { 0 };
	char msg[600];
	if (cl_srv_scrape_start(&o, &r->srv, &err) != 0)
		CL_WARN("server metrics: cannot start scraping '%s': %s", url,
			cl_err_format(&err, msg, sizeof(msg)));
	r->srv_t0_us = cl_mono_us();
}

/* results.json's server_metrics: the run-wide account, or {mode: off}. */
static void record_server_metrics(struct run *r)
{
	const struct cl_scn_server_metrics *m = &r->s.target.server_metrics;
	json_t *j = NULL;
	if (m->mode == CL_SCN_SRV_OFF)
		j = json_pack("{s:s}", "mode", "off");
	else if (r->srv)
		j = cl_srv_scrape_run_json(r->srv, m->mode == CL_SCN_SRV_URL ? "url" : "auto",
					   r->srv_t0_us);
	else
		return;
	if (cl_results_set_server_metrics(r->res, j) != 0)
		CL_WARN("server metrics: out of memory for results.json's server_metrics");
}

/* Builds the target plan the agents get: the scenario's, or the simulator's address. */
static int make_target(struct run *r, struct cl_err *err)
{
	const struct cl_scn_target *t = &r->s.target;
	struct cl_target_plan *p = &r->target;
	memset(p, 0, sizeof(*p));
	const char *url = t->simulator ? r->sim_url : t->url;
	size_t len = strlen(url);
	while (len && url[len - 1] == '/')
		len--;
	p->base_url = strndup(url, len);
	/* no model named and a server: the readiness gate finds it (the loader refuses a
	 * scenario with neither) */
	if (t->model || t->simulator)
		p->model = strdup(cl_scenario_render_model(&r->s));
	if (t->api_key_env)
		p->api_key_env = strdup(t->api_key_env);
	if (t->n_headers) {
		p->headers = calloc(t->n_headers, sizeof(char *));
		if (!p->headers)
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		for (size_t i = 0; i < t->n_headers; i++)
			if (!(p->headers[p->n_headers++] = strdup(t->headers[i])))
				return cl_err_set(err, CL_ENOMEM, "out of memory");
	}
	p->http2 = t->http2;
	p->http2_fallback = t->http2_fallback;
	p->http2_streams = t->http2_streams;
	p->tls_verify = t->tls_verify;
	if (t->ca_file)
		p->ca_file = strdup(t->ca_file);
	p->connect_timeout_us = t->connect_timeout_us;
	p->api = r->s.workload.api; /* the gate sends what the stages send */
	/* several endpoints (target.urls): base_url is the first */
	if (t->n_urls) {
		if (!(p->endpoints = calloc(t->n_urls, sizeof(char *))))
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		for (size_t i = 0; i < t->n_urls; i++)
			if (!(p->endpoints[p->n_endpoints++] = strdup(t->urls[i])))
				return cl_err_set(err, CL_ENOMEM, "out of memory");
		p->route = t->route;
	}
	if (!p->base_url || ((t->model || t->simulator) && !p->model))
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	return 0;
}

/* Reads the whole workload (every dataset line) before anything starts, so bad input is
 * reported at once with its file:line:column, not after the agents and the readiness gate. */
static int load_workload(struct run *r, struct cl_err *err)
{
	struct cl_workload_stats st = r->workload_stats; /* a rendering again keeps its tag */
	int rc = cl_workload_render_stats(&r->s, cl_scenario_render_model(&r->s), &r->workload, &st,
					  err);
	if (rc == 0) {
		r->workload_stats = st;
		cl_workload_trace_fill_stages(&r->s, &st);
	}
	return rc;
}

#define CALIBRATE_PROMPTS 16 /* prompts counted to calibrate on what is sent */

/* The workload rendered again, built to chars_per_token. */
static int rerender(struct run *r, double chars_per_token, struct cl_err *err)
{
	r->s.workload.chars_per_token = chars_per_token;
	cl_workload_plan_free(&r->workload);
	return load_workload(r, err);
}

/*
 * workload.calibrate: the target's own characters per token from its /tokenize on a sample
 * of the vocabulary, then on the prompts as they will be sent (their leading number, the word
 * cut at their end and a prefix make them count differently), the workload rendered again to
 * that, and counted once more to say what it achieved.  A target without /tokenize (OpenAI's
 * own API, a gateway) keeps the estimate: the run goes on, and says so here and in
 * results.json.
 */
static int calibrate(struct run *r, struct cl_err *err)
{
	double sample = 0;
	struct cl_err cerr = { 0 };
	struct cl_calibrate_check first, again;
	char line[600];
	if (cl_calibrate_tokens(&r->target, r->target.model, &sample, &cerr) != 0) {
		cl_progress_note(&r->prog,
				 "calibrate: %s; prompts keep the estimate of 4 characters a token",
				 cl_err_format(&cerr, line, sizeof(line)));
		return 0;
	}
	int rc = rerender(r, sample, err);
	if (rc != 0)
		return rc;
	if (cl_calibrate_prompts(&r->target, r->target.model, &r->workload, CALIBRATE_PROMPTS,
				 &first, &cerr) != 0) {
		cl_progress_note(&r->prog,
				 "calibrate: the target counts %.2f characters a token (/tokenize) "
				 "on a sample of the vocabulary; counting the prompts failed (%s): "
				 "prompts are built to the sample's figure",
				 sample, cl_err_format(&cerr, line, sizeof(line)));
		r->workload_stats.calib_sample_cpt = sample;
		return 0;
	}
	double cpt = (double)first.chars / (double)first.tokens;
	if ((rc = rerender(r, cpt, err)) != 0)
		return rc;
	if (cl_calibrate_prompts(&r->target, r->target.model, &r->workload, CALIBRATE_PROMPTS,
				 &again, &cerr) != 0)
		again = first; /* counted once already: say that */
	struct cl_workload_stats *st = &r->workload_stats;
	st->calib_sample_cpt = sample;
	st->calib_prompts = again.prompts;
	st->calib_built_mean = (double)again.chars / cpt / again.prompts;
	st->calib_counted_mean = (double)again.tokens / again.prompts;
	const struct cl_scn_workload *w = &r->s.workload;
	bool built = w->kind == CL_WORKLOAD_SYNTHETIC || w->kind == CL_WORKLOAD_TRACE ||
		     w->shared_prefix_groups;
	cl_progress_note(&r->prog,
			 "calibrate: the target counts %.2f characters a token (/tokenize) on a "
			 "sample of the vocabulary, %.2f on %u of the prompts to be sent; %s: "
			 "counted again, those prompts are %.1f tokens on average, %.1f by the "
			 "calibrated figure",
			 sample, cpt, first.prompts,
			 built ? "prompts are built to the second"
			       : "the prompts are sent as written",
			 st->calib_counted_mean, st->calib_built_mean);
	return 0;
}

/* Puts the model found into the bodies, and renders the warmup's own body if it has one. */
static int render(struct run *r, struct cl_err *err)
{
	int rc = r->s.workload.calibrate ? calibrate(r, err) : 0;
	if (rc != 0)
		return rc;
	rc = cl_workload_plan_set_model(&r->workload, cl_scenario_render_model(&r->s),
					r->target.model, err);
	if (rc != 0)
		return rc;
	const struct cl_scn_warmup *w = &r->s.warmup;
	if (!cl_scenario_warmup_own_body(&r->s))
		return 0; /* warmup uses the workload's own bodies */
	char *extra = NULL;
	if ((rc = cl_body_json_merge_text(r->s.target.body_json, w->body_json, &extra, err)) != 0)
		return rc;
	const char *prompt = r->s.workload.kind == CL_WORKLOAD_PROMPTS && r->s.workload.n_prompts
				 ? r->s.workload.prompts[0]
				 : r->s.readiness.prompt;
	rc = cl_body_json_probe_api(r->s.workload.api, r->target.model, prompt, w->max_tokens,
				    extra, &r->warmup_body, err);
	free(extra);
	return rc;
}

/* Frees what the run holds; its processes were stopped at `finish` (none exist on the
 * only path that skips it). */
static void cleanup(struct run *r)
{
	cli_run_generate_free(r);
	cli_run_requests_close(r);
	cli_run_live_close(r);
	cl_fleet_close(&r->fleet);
	for (size_t i = 0; i < CL_FLEET_MAX_AGENTS; i++) {
		cl_stage_plan_free(&r->agents[i].share);
		free(r->agents[i].sources);
		r->agents[i].sources = NULL;
	}
	cl_target_plan_free(&r->target);
	cl_workload_plan_free(&r->workload);
	free(r->warmup_body);
	free(r->probe_extra);
	if (r->warm_ready)
		cl_metrics_destroy(&r->warm);
	cl_results_destroy(r->res);
	cl_scenario_free(&r->s);
}

/* Loads the scenario, printing each problem: 0, or nonzero with r->s left empty. */
/* workload.tools go into the readiness probe as into every body (under readiness.body and
 * target.body, which win): a server that refuses tools then fails the gate, which names the
 * request shape it refused and the server's answer, rather than every request of a stage. */
static int probe_with_tools(struct run *r, struct cl_err *err)
{
	char *tools = NULL, *merged = NULL;
	int rc = cl_workload_tools_json(&r->s.workload, &tools, err);
	if (rc || !tools)
		return rc;
	rc = cl_body_json_merge_text(tools, r->probe_extra, &merged, err);
	free(tools);
	if (rc)
		return rc;
	free(r->probe_extra);
	r->probe_extra = merged;
	r->probe_tools = true;
	return 0;
}

static int load_scenario(struct run *r)
{
	struct cl_diags diags = { 0 };
	int rc = cl_scenario_load_file(r->o->scenario_path, r->o->overrides, &r->s, &diags);
	if (rc != 0) {
		char msg[900];
		for (size_t i = 0; i < diags.n; i++)
			fprintf(stderr, "%s\n", cl_err_format(&diags.items[i], msg, sizeof(msg)));
	}
	cl_diags_free(&diags);
	/* --repeat: every stage that can repeat does (a search chooses its own probes and a
	 * replay replays the same arrivals, so those run once, as the scenario key refuses; a
	 * generate job's one stage is the job, done once). */
	for (size_t i = 0; rc == 0 && r->o->repeat && !r->s.generate.set && i < r->s.n_stages; i++)
		if (!r->s.stages[i].search && !r->s.stages[i].replay)
			r->s.stages[i].repeat = r->o->repeat;
	return rc;
}

/* After stage `i` (or a round of repeats ending with it): whether slo.abort_on_breach stops
 * the run now. */
static bool breach_stops(struct run *r, size_t i)
{
	if (!r->s.slo_abort_on_breach || cl_results_breach_count(r->res) == 0)
		return false;
	cl_progress_note(&r->prog, "SLO breached in stage '%s': stopping (slo.abort_on_breach)",
			 r->s.stages[i].name);
	r->exit_hint = CL_EXIT_SLO_BREACH;
	return true;
}

/*
 * Stages [from, to), none a search, of which some repeat: run in rounds, round k running
 * the k-th repeat of each stage that has one.  Interleaved rather than one stage's repeats
 * back to back, so that a target that drifts over the run (caches warming, a neighbour's
 * load, thermal limits) moves every stage's figures alike instead of biasing the later
 * stages, and each stage's repeats spread over the block's whole time, so their spread
 * includes that drift instead of hiding it.  When the run stops early, the stages finish
 * from the repeats that ran.
 */
static int run_rounds(struct run *r, size_t from, size_t to)
{
	uint32_t rounds = 1;
	for (size_t i = from; i < to; i++)
		if (r->s.stages[i].repeat > rounds)
			rounds = r->s.stages[i].repeat;
	int rc = 0;
	for (uint32_t k = 1; rc == 0 && k <= rounds; k++) {
		for (size_t i = from; rc == 0 && i < to; i++) {
			if (k > (r->s.stages[i].repeat ? r->s.stages[i].repeat : 1))
				continue;
			rc = cli_run_stage_repeat(r, i, k);
			if (rc == 0 && breach_stops(r, i))
				rc = -1;
		}
	}
	for (size_t i = from; rc != 0 && i < to; i++)
		if (cl_results_end_repeats(r->res, i, &r->s.stages[i]) != 0)
			CL_ERROR("cannot write results for stage '%s': %s", r->s.stages[i].name,
				 cl_results_last_error(r->res));
	return rc;
}

/* Runs the stages in order (a search runs its probes as stages; a block of stages that
 * repeat runs in rounds): 0 when all ran, nonzero when one failed or an SLO breach stopped
 * the run (slo.abort_on_breach). */
static int run_stages(struct run *r)
{
	for (size_t i = 0; i < r->s.n_stages; i++) {
		if (r->s.stages[i].search) {
			int rc = cli_run_search(r, &i);
			if (rc != 0)
				return rc;
			if (breach_stops(r, i))
				return -1;
			continue;
		}
		/* The block of ordinary stages from i up to the next search. */
		size_t end = i;
		bool repeats = false;
		while (end < r->s.n_stages && !r->s.stages[end].search)
			repeats |= r->s.stages[end++].repeat > 1;
		if (repeats) {
			int rc = run_rounds(r, i, end);
			if (rc != 0)
				return rc;
			i = end - 1;
			continue;
		}
		int rc = cli_run_stage(r, i);
		if (rc != 0)
			return rc;
		if (breach_stops(r, i))
			return -1;
	}
	return 0;
}

/* The report files output.formats asks for, written by report/ from the finished document
 * beside results.json (results/ writes results.json only).  0, or the first failure with err
 * saying which file and why. */
static int write_reports(struct run *r, struct cl_err *err)
{
	static const struct {
		unsigned scenario;
		enum cl_report_format report;
	} map[] = { { CL_FMT_CSV, CL_REPORT_CSV },
		    { CL_FMT_MD, CL_REPORT_MD },
		    { CL_FMT_HTML, CL_REPORT_HTML } };
	unsigned files = 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (r->s.output.formats & map[i].scenario)
			files |= CL_REPORT_FILE(map[i].report);
	}
	return cl_report_write_files(cl_results_doc(r->res), cl_results_dir(r->res), files, err);
}

/* Ends the run on every path after the results exist: stops the processes, writes the
 * result files and prints the table.  code is the failure found so far (0: none); returns
 * the run's exit code. */
static int finish(struct run *r, int code)
{
	cl_progress_end(&r->prog);
	cli_run_record_agents(r);
	cli_run_stop_processes(r);
	if (r->res)
		record_server_metrics(r);
	cli_run_requests_note(r);
	cl_srv_scrape_stop(r->srv);
	r->srv = NULL;
	if (r->res) {
		int final = 0;
		struct cl_err err = { 0 };
		bool failed =
		    cl_results_finish(r->res, r->complete, code ? code : r->exit_hint, &final) != 0;
		if (write_reports(r, &err) != 0) {
			final = CL_EXIT_FAILED;
			failed = true;
		}
		/* The run's first error: results.json's (or an earlier checkpoint's), else a
		 * report file's. */
		const char *why = cl_results_last_error(r->res);
		if (failed)
			fprintf(stderr, "chatload: cannot write every result file: %s\n",
				why[0] ? why : err.msg);
		cl_report_render(cl_results_doc(r->res), CL_REPORT_TABLE, stdout);
		fflush(stdout);
		code = final;
		cli_run_live_phase(r, CL_LIVE_FINISHED, code);
	} else if (!code) {
		code = r->exit_hint ? r->exit_hint : CL_EXIT_FAILED;
	}
	return code;
}

int cl_run(const struct cl_run_opts *o)
{
	struct run *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "chatload: out of memory\n");
		return CL_EXIT_FAILED;
	}
	r->o = o;
	cl_progress_init(&r->prog, stderr);
	struct cl_err err = { 0 };
	int code = CL_EXIT_OK;
	if (load_scenario(r) != 0) {
		free(r);
		return CL_EXIT_USAGE;
	}
	if (load_workload(r, &err) != 0) {
		char msg[900];
		fprintf(stderr, "%s\n", cl_err_format(&err, msg, sizeof(msg)));
		cleanup(r);
		free(r);
		return CL_EXIT_USAGE;
	}
	/* A generate job's input is checked before anything starts: a bad line is bad input. */
	if (r->s.generate.set) {
		int grc = cli_run_generate_check(r, &err);
		if (grc != 0) {
			char msg[900];
			fprintf(stderr, "chatload: %s\n", cl_err_format(&err, msg, sizeof(msg)));
			cleanup(r);
			free(r);
			return grc == CL_EINVAL ? CL_EXIT_USAGE : CL_EXIT_FAILED;
		}
	}

	if (cl_results_create(&r->s, o->scenario_path, o->argc, o->argv, o->out_dir, &r->res,
			      &err) != 0) {
		code = fail_msg(r, CL_EXIT_FAILED, &err, "cannot create the results directory");
		goto out;
	}
	int lrc = cli_run_live_open(r, &err);
	if (lrc != 0) {
		code = fail_msg(r, lrc == CL_EINVAL ? CL_EXIT_USAGE : CL_EXIT_FAILED, &err,
				"cannot serve the live pages");
		goto finish;
	}
	cl_progress_note(&r->prog, "run '%s': results in %s", r->s.name, cl_results_dir(r->res));
	if (r->s.target.simulator && cli_run_start_simulator(r, &err) != 0) {
		code = fail_msg(r, CL_EXIT_FAILED, &err, "cannot start the built-in simulator");
		goto finish;
	}
	if (make_target(r, &err) != 0) {
		code = fail_msg(r, CL_EXIT_USAGE, &err, "bad target");
		goto finish;
	}
	start_server_metrics(r);
	if (cl_body_json_merge_text(r->s.target.body_json, r->s.readiness.body_json,
				    &r->probe_extra, &err) != 0) {
		code = fail_msg(r, CL_EXIT_USAGE, &err, "bad readiness.body");
		goto finish;
	}
	if (probe_with_tools(r, &err) != 0) {
		code = fail_msg(r, CL_EXIT_FAILED, &err, "cannot render workload.tools");
		goto finish;
	}
	int frc = cli_run_start_fleet(r, &err);
	if (frc != 0) {
		/* A listen address or TLS setting that can never work is bad input. */
		bool bad_input = frc == CL_EREFUSED || frc == CL_EINVAL;
		code = fail_msg(r, bad_input ? CL_EXIT_USAGE : CL_EXIT_FAILED, &err,
				"cannot start the agents");
		goto finish;
	}
	if (cli_run_requests_open(r, &err) != 0) {
		code = fail_msg(r, CL_EXIT_FAILED, &err, "cannot keep the request records");
		goto finish;
	}
	if (cli_run_wait_for_agents(r, &err) != 0) {
		code = fail_msg(r, CL_EXIT_FAILED, &err, "agents did not join");
		goto finish;
	}
	cli_run_record_agents(r);

	if (r->s.readiness.enabled) {
		cli_run_live_phase(r, CL_LIVE_READINESS, 0);
		if (cli_run_readiness(r) != 0)
			goto finish;
	}
	cl_results_set_target(r->res, r->target.base_url, r->target.model, r->s.target.simulator);
	if (render(r, &err) != 0) {
		code = fail_msg(r, CL_EXIT_USAGE, &err, "cannot render the workload");
		goto finish;
	}
	cl_results_set_workload(r->res, &r->s.workload, &r->workload_stats);
	if (r->gen) {
		cli_run_live_phase(r, CL_LIVE_STAGES, 0);
		if (cli_run_generate(r) == 0)
			r->complete = true;
		goto finish;
	}
	cli_run_live_phase(r, CL_LIVE_WARMUP, 0);
	if (cli_run_prepare(r) != 0)
		goto finish;
	if (cli_run_warmup(r) != 0)
		goto finish;

	cli_run_live_phase(r, CL_LIVE_STAGES, 0);
	if (run_stages(r) == 0)
		r->complete = true;
finish:
	code = finish(r, code);
out:
	cleanup(r);
	free(r);
	return code;
}
