/* The run's results document: created at the start of a run (its directory, the scenario's
 * figures it keeps, intervals.jsonl opened), rewritten atomically after every stage and every
 * interval, finished with a verdict and an exit code. What the document holds is built
 * beside: run_info.c (the run before its stages), stage_finish.c (each stage), summary.c. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/clock.h"
#include "chatload/exitcode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RESULTS_JSON "results.json"

void cli_rs_remember_error(struct cl_results *r, const struct cl_err *e)
{
	if (r->last_error[0] == '\0')
		snprintf(r->last_error, sizeof(r->last_error), "%s", e->msg);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A file-name-safe version of the scenario name. */

static int copy_scenario(struct cl_results *r, const struct cl_scenario *s)
{
	r->n_stages = s->n_stages;
	if (s->n_stages) {
		r->stages = calloc(s->n_stages, sizeof(*r->stages));
		if (!r->stages)
			return CL_ENOMEM;
	}
	for (size_t i = 0; i < s->n_stages; i++) {
		struct stage_state *ss = &r->stages[i];
		ss->stride = 1;
		ss->ramp_s = s->stages[i].ramp_us / 1e6;
		ss->duration_s = s->stages[i].duration_us / 1e6;
		ss->repeat_n = s->stages[i].repeat > 1 ? s->stages[i].repeat : 1;
		ss->intervals = json_array();
		if (!ss->intervals ||
		    (s->stages[i].name && !(ss->name = strdup(s->stages[i].name))))
			return CL_ENOMEM;
	}
	if (s->n_slos) {
		r->slos = calloc(s->n_slos, sizeof(*r->slos));
		if (!r->slos)
			return CL_ENOMEM;
	}
	for (size_t i = 0; i < s->n_slos; i++) {
		r->slos[i] = s->slos[i];
		r->slos[i].key = dup_or_null(s->slos[i].key ? s->slos[i].key : "slo");
		r->slos[i].stage = dup_or_null(s->slos[i].stage);
		r->n_slos = i + 1;
		if (!r->slos[i].key || (s->slos[i].stage && !r->slos[i].stage))
			return CL_ENOMEM;
	}
	if (s->estimate.n_samples) {
		r->samples = calloc(s->estimate.n_samples, sizeof(*r->samples));
		if (!r->samples)
			return CL_ENOMEM;
		memcpy(r->samples, s->estimate.samples,
		       s->estimate.n_samples * sizeof(*r->samples));
		r->n_samples = s->estimate.n_samples;
	}
	if (s->estimate.from_stage && !(r->from_stage = strdup(s->estimate.from_stage)))
		return CL_ENOMEM;
	r->cost_per_hour = cl_scenario_cost_per_hour(&s->cost);
	if (s->cost.currency && !(r->cost_currency = strdup(s->cost.currency)))
		return CL_ENOMEM;
	if (cli_rs_classes_copy(r, s) != 0)
		return CL_ENOMEM;
	r->client_bound_warn = s->client_bound == CL_CLIENT_BOUND_WARN;
	r->api = s->workload.api;
	r->abort_intervals = s->slo_abort_intervals;
	r->drift = s->drift;
	r->report_interval_s = s->agents.report_interval_us / 1e6;
	return 0;
}

static int fill_json(FILE *f, void *ctx)
{
	return cli_rj_dump(ctx, f);
}

int cli_rs_write(struct cl_results *r)
{
	struct cl_err e = { 0 };
	int rc = cli_rs_summarise(r);
	if (rc != 0) {
		cl_err_set(&e, rc, "cannot build '%s/%s': %s", r->dir, RESULTS_JSON,
			   cl_strerror(rc));
		cli_rs_remember_error(r, &e);
		return rc;
	}
	rc = cli_rj_write_atomic(r->dir, RESULTS_JSON, fill_json, r->doc, &e);
	if (rc != 0)
		cli_rs_remember_error(r, &e);
	return rc;
}

int cl_results_create(const struct cl_scenario *s, const char *scenario_path, int argc, char **argv,
		      const char *out_dir, struct cl_results **out, struct cl_err *err)
{
	int rc = 0;
	*out = NULL;
	struct cl_results *r = calloc(1, sizeof(*r));
	if (!r)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	r->started_wall_us = cl_wall_us();
	if ((rc = copy_scenario(r, s)) != 0) {
		cl_err_set(err, rc, "out of memory");
		goto out;
	}
	if ((rc = cl_results_make_dir(out_dir, s->output.dir, s->name, r->started_wall_us, &r->dir,
				      err)) != 0)
		goto out;

	json_t *argv_json = json_array();
	for (int i = 0; argv_json && i < argc; i++) {
		if (cli_rj_append(argv_json, cli_rj_str(argv[i]))) {
			json_decref(argv_json);
			argv_json = NULL;
		}
	}
	char started[40];
	cl_wall_iso8601(r->started_wall_us, started, sizeof(started));
	r->doc = json_pack("{s:s,s:s,s:o,s:o,s:s,s:n,s:n,s:b,s:n,s:o,s:{s:n,s:i,s:[],s:[]},"
			   "s:n,s:n,s:[],s:[],s:[],s:[],s:n}",
			   "schema", CL_RESULTS_SCHEMA, "chatload_version", CHATLOAD_VERSION,
			   "scenario", cli_rs_scenario_json(s, scenario_path), "command_line",
			   argv_json, "started_at", started, "finished_at", "duration_s",
			   "complete", 0, "exit_code", "output_dir", cli_rj_str(r->dir), "verdict",
			   "pass", "evaluated", 0, "checks", "breaches", "readiness", "warmup",
			   "agents", "stages", "estimates", "warnings", "workload");
	if (!r->doc) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		goto out;
	}
	char *ipath = cli_rj_path(r->dir, CLI_RS_INTERVALS_JSONL);
	if (!ipath) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		goto out;
	}
	r->intervals_fp = fopen(ipath, "we");
	if (!r->intervals_fp)
		rc = cl_err_set(err, CL_EIO, "cannot create '%s': %s", ipath, strerror(errno));
	free(ipath);
	if (rc != 0)
		goto out;
	if ((rc = cli_rs_write(r)) != 0) {
		cl_err_set(err, rc, "%s", r->last_error);
		goto out;
	}
	*out = r;
	r = NULL;
out:
	cl_results_destroy(r);
	return rc;
}

size_t cl_results_breach_count(const struct cl_results *r)
{
	return r->breaches;
}

int cl_results_finish(struct cl_results *r, bool complete, int exit_code_hint, int *exit_code_out)
{
	*exit_code_out = CL_EXIT_FAILED;
	if (r->finished)
		return CL_ESTATE;
	r->finished = true;
	int64_t now = cl_wall_us();
	char finished[40];
	cl_wall_iso8601(now, finished, sizeof(finished));
	bool stage_failed = false, client_bound = false;
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(r->doc, "stages"), i, s)
	{
		enum cl_stage_status st;
		if (cl_stage_status_parse(cl_results_str(s, "status", NULL), &st) == 0 &&
		    st == CL_STAGE_FAILED)
			stage_failed = true;
		client_bound |= cli_rs_client_bound_gates(s);
	}
	if (cli_rj_set(r->doc, "finished_at", json_string(finished)) ||
	    cli_rj_set(r->doc, "duration_s",
		       json_real(cli_rj_round((now - r->started_wall_us) / 1e6, 3))) ||
	    cli_rj_set(r->doc, "complete", json_boolean(complete)))
		return CL_ENOMEM;
	/* The verdict decides the code, so summarise before choosing it. */
	int rc = cli_rs_summarise(r);
	if (rc != 0)
		return rc;
	int code = cl_verdict_exit_code(exit_code_hint, complete, stage_failed,
					client_bound && !r->client_bound_warn, r->breaches);
	if (cli_rj_set(r->doc, "exit_code", json_integer(code)))
		return CL_ENOMEM;
	int first = cli_rs_write(r);
	if (r->intervals_fp && fsync(fileno(r->intervals_fp)) != 0 && first == 0)
		first = CL_EIO;
	*exit_code_out = first == 0 ? code : CL_EXIT_FAILED;
	return first;
}

const json_t *cl_results_doc(const struct cl_results *r)
{
	return r->doc;
}

const char *cl_results_dir(const struct cl_results *r)
{
	return r->dir;
}

const char *cl_results_last_error(const struct cl_results *r)
{
	return r->last_error;
}

void cl_results_destroy(struct cl_results *r)
{
	if (!r)
		return;
	if (r->intervals_fp)
		fclose(r->intervals_fp);
	for (size_t i = 0; r->stages && i < r->n_stages; i++)
		cli_rs_stage_state_free(&r->stages[i]);
	free(r->stages);
	for (size_t i = 0; r->slos && i < r->n_slos; i++) {
		free(r->slos[i].key);
		free(r->slos[i].stage);
	}
	free(r->slos);
	cli_rs_classes_free(r);
	free(r->samples);
	free(r->from_stage);
	free(r->cost_currency);
	free(r->dir);
	json_decref(r->doc);
	free(r);
}
