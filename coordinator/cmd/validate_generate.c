/* chatload validate and a generate job: its input checked as chatload run checks it, with
 * nothing written, and its section of the plan (settings, what the check found, the
 * estimate its length rests on). */
#include "coordinator/cmd/validate_int.h"

#include "coordinator/results/results.h"

#include <stdio.h>

/* generate.estimate_from: the file, the stage its estimate rests on and its rate, and a
 * warning when that stage was client-bound (its rate then describes the client). */
static void print_estimate_from(const char *path)
{
	json_t *doc = NULL;
	struct cl_err err = { 0 };
	char msg[600];
	printf("  estimate from: %s\n", path);
	if (cl_results_load(path, &doc, &err) != 0) {
		printf("    cannot read it: %s\n", cl_err_format(&err, msg, sizeof(msg)));
		return;
	}
	double rps;
	bool client_bound;
	const char *stage = cl_results_estimate_source(doc, &rps, &client_bound);
	if (!stage)
		printf("    no estimate with a stage in it: run the benchmark with estimate: { "
		       "samples: [...] }\n");
	else
		printf("    its estimate: stage '%s', %.4g requests/s\n", stage, rps);
	if (stage && client_bound)
		printf("    warning: stage '%s' was client-bound: its %.4g requests/s describe the "
		       "client, not the server, so the job's plan may be too long; estimate from "
		       "a stage that was not\n",
		       stage, rps);
	json_decref(doc);
}

/* A generate job: its settings and what the input check found (nothing is written, so
 * ids already in output or errors are not counted: run skips them). */
void cli_validate_print_generate(const struct cl_scenario *s, const struct cl_gen_scan *scan,
				 const struct cl_err *first_bad)
{
	const struct cl_scn_generate *g = &s->generate;
	char a[32], b[32], msg[1024];
	printf("generate:\n");
	static const char *const formats[] = { "batch", "openai", "sharegpt", "text" };
	printf("  input: %s\n", g->input);
	printf("  input format: %s%s\n", formats[g->input_format],
	       g->input_format == CL_GEN_INPUT_BATCH
		   ? ""
		   : " (a dataset: each record's custom_id is its line number; workload's model, "
		     "system_prompt, max_tokens and target.body apply, never ignore_eos)");
	printf("  input %s: %llu, %llu valid, %llu invalid\n",
	       g->input_format == CL_GEN_INPUT_BATCH ? "lines" : "records",
	       (unsigned long long)scan->lines, (unsigned long long)scan->valid,
	       (unsigned long long)scan->invalid);
	if (scan->invalid)
		printf("  first invalid line (skip_invalid: written to errors): %s\n",
		       cl_err_format(first_bad, msg, sizeof(msg)));
	printf("  output: %s\n  errors: %s\n", g->output, g->errors);
	if (g->rate_per_s > 0)
		printf("  rate: %g/s, evenly spaced (retries included), at most %u streams\n",
		       g->rate_per_s, g->concurrency);
	else
		printf("  concurrency: %u\n", g->concurrency);
	printf("  max attempts: %u\n", g->max_attempts);
	printf("  backoff: %s to %s\n", cli_validate_dur(g->backoff_initial_us, a, sizeof(a)),
	       cli_validate_dur(g->backoff_max_us, b, sizeof(b)));
	printf("  skip invalid: %s\n", g->skip_invalid ? "yes" : "no");
	if (g->estimate_from)
		print_estimate_from(g->estimate_from);
}

/* A dataset's rendered record, counted (a cl_workload_body_fn): validate writes nothing. */
static int count_record(void *arg, uint32_t line, const char *json, size_t len, struct cl_err *err)
{
	(void)line, (void)json, (void)len, (void)err;
	((struct cl_gen_scan *)arg)->lines++;
	return 0;
}

int cli_validate_check_generate(const struct cl_scenario *s, struct cl_gen_scan *scan,
				struct cl_err *first_bad, struct cl_err *err)
{
	if (s->generate.input_format != CL_GEN_INPUT_BATCH) {
		/* a dataset: every record rendered as run renders it, one at a time, and counted;
		 * a bad one stops it */
		int rc = cl_workload_render_generate(s, cl_scenario_render_model(s), count_record,
						     scan, NULL, err);
		if (rc == 0)
			scan->valid = scan->to_send = scan->lines;
		return rc;
	}
	struct cl_gen_idset seen = { 0 };
	int rc = cl_gen_scan(s->generate.input, NULL, s->generate.skip_invalid, NULL, &seen, NULL,
			     scan, s->generate.skip_invalid ? first_bad : err);
	cl_gen_idset_free(&seen);
	return rc;
}
