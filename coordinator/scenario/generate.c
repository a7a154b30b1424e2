/* The scenario's `generate:` job: its keys, their defaults and the checks across sections
 * (a scenario is either a benchmark with stages or a generate job, never both). */
#include "coordinator/scenario/internal.h"

#include "chatload/units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define SEC  1000000LL

static void conv_input_format(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "batch", "openai", "sharegpt", "text" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_generate *)obj)->input_format = (enum cl_gen_input_format)x;
}

static void conv_gen_rate(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	double x;
	if (cli_scn_get_rate(c, v, &x) == 0)
		((struct cl_scn_generate *)obj)->rate_per_s = x;
}

static const struct scn_field generate_fields[] = {
	SCN_FIELD("input", SCN_F_NESTR, struct cl_scn_generate, input),
	SCN_FIELD("output", SCN_F_NESTR, struct cl_scn_generate, output),
	SCN_FIELD("errors", SCN_F_NESTR, struct cl_scn_generate, errors),
	SCN_RANGE("concurrency", SCN_F_U32, struct cl_scn_generate, concurrency, 1, 100000),
	SCN_RANGE("max_attempts", SCN_F_U32, struct cl_scn_generate, max_attempts, 1, 100),
	SCN_FIELD("skip_invalid", SCN_F_BOOL, struct cl_scn_generate, skip_invalid),
	SCN_RANGE("backoff_initial", SCN_F_DUR, struct cl_scn_generate, backoff_initial_us, 0,
		  3600 * SEC),
	SCN_RANGE("backoff_max", SCN_F_DUR, struct cl_scn_generate, backoff_max_us, 0, 3600 * SEC),
	SCN_FIELD("estimate_from", SCN_F_NESTR, struct cl_scn_generate, estimate_from),
	SCN_CUSTOM("input_format", conv_input_format),
	SCN_CUSTOM("rate", conv_gen_rate),
};
enum { G_INPUT, G_OUTPUT, G_ERRORS, G_SKIP = 5, G_ESTIMATE = 8 };

/* path relative to the scenario's directory, as workload.dataset is. */
static void resolve(struct scn_ctx *c, char **path)
{
	if (!*path || (*path)[0] == '/' || !c->dir[0])
		return;
	char *p = NULL;
	if (asprintf(&p, "%s/%s", c->dir, *path) < 0) {
		c->oom = true;
		return;
	}
	free(*path);
	*path = p;
}

/* The directory of path must exist, so the job can write there. */
static void check_writable_dir(struct scn_ctx *c, const struct ynode *at, const char *what,
			       const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		cli_scn_error(c, at, "%s: the directory '%s' of '%s' does not exist", what, dir,
			      path);
	else if (access(dir, W_OK) != 0)
		cli_scn_error(c, at, "%s: cannot write in '%s': %s", what, dir, strerror(errno));
}

void cli_scn_conv_generate(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_generate *g = &L(c)->s->generate;
	const struct ynode *seen[N(generate_fields)] = { 0 };
	char got[96];
	(void)obj;
	g->set = true;
	g->line = v ? v->line : 0;
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "generate must be a mapping (input, output, errors, concurrency, "
			      "max_attempts, skip_invalid), got %s",
			      cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, generate_fields, N(generate_fields), g, seen, cli_scn_hint_for);
	if (!seen[G_INPUT])
		cli_scn_error(c, v,
			      "generate needs input (an OpenAI Batch file: one "
			      "{\"custom_id\", \"method\", \"url\", \"body\"} per line)");
	if (!seen[G_OUTPUT])
		cli_scn_error(c, v, "generate needs output (the file answers are appended to)");
	if (!g->input || !g->output)
		return;
	resolve(c, &g->input);
	resolve(c, &g->output);
	resolve(c, &g->errors);
	resolve(c, &g->estimate_from);
	if (g->estimate_from && access(g->estimate_from, R_OK) != 0)
		cli_scn_error(c, seen[G_ESTIMATE], "generate.estimate_from: cannot open '%s': %s",
			      g->estimate_from, strerror(errno));
	if (!g->errors) {
		size_t n = strlen(g->output);
		size_t stem = n > 6 && strcmp(g->output + n - 6, ".jsonl") == 0 ? n - 6 : n;
		if (asprintf(&g->errors, "%.*s.errors.jsonl", (int)stem, g->output) < 0) {
			g->errors = NULL;
			c->oom = true;
			return;
		}
	}
	struct stat st;
	if (stat(g->input, &st) != 0 || access(g->input, R_OK) != 0)
		cli_scn_error(c, seen[G_INPUT], "generate.input: cannot open '%s': %s", g->input,
			      strerror(errno));
	else if (S_ISDIR(st.st_mode))
		cli_scn_error(c, seen[G_INPUT], "generate.input: '%s' is a directory", g->input);
	check_writable_dir(c, seen[G_OUTPUT], "generate.output", g->output);
	check_writable_dir(c, seen[G_ERRORS] ? seen[G_ERRORS] : seen[G_OUTPUT], "generate.errors",
			   g->errors);
	if (strcmp(g->output, g->errors) == 0 || strcmp(g->output, g->input) == 0 ||
	    strcmp(g->errors, g->input) == 0)
		cli_scn_error(c, seen[G_ERRORS] ? seen[G_ERRORS] : seen[G_OUTPUT],
			      "generate.input, output and errors must be three different files");
	if (g->input_format != CL_GEN_INPUT_BATCH && g->skip_invalid)
		cli_scn_error(c, seen[G_SKIP],
			      "generate.skip_invalid works with a Batch input only: a bad dataset "
			      "record stops the job (fix or remove its line)");
	if (g->backoff_max_us < g->backoff_initial_us)
		cli_scn_error(c, v,
			      "generate.backoff_max (%lld ms) is shorter than "
			      "generate.backoff_initial (%lld ms)",
			      (long long)(g->backoff_max_us / 1000),
			      (long long)(g->backoff_initial_us / 1000));
}

void cli_scn_check_generate(struct scn_ctx *c, const struct ynode *generate_at,
			    const struct ynode *stages_at)
{
	struct scn_loader *l = L(c);
	if (generate_at && stages_at) {
		cli_scn_error(c, stages_at,
			      "stages and generate are exclusive: a scenario is a benchmark "
			      "(stages) or a generate job (generate at line %d), not both",
			      generate_at->line);
		return;
	}
	if (!generate_at)
		return;
	/* calibrate renders the workload again, built to the target's tokens: a generate job's
	 * dataset records are sent as written, so there is nothing to build. */
	if (l->s->generate.input_format != CL_GEN_INPUT_BATCH && l->s->workload.calibrate)
		cli_scn_error(
		    c, generate_at,
		    "workload.calibrate does not apply to a generate job: its records are "
		    "sent as written");
	/* A generate job sends chat completions (its Batch lines' url is checked to be one),
	 * so the workload's other request shapes do not apply to it. */
	if (l->s->workload.api != CL_API_CHAT)
		cli_scn_error(c, generate_at,
			      "workload.api: %s does not apply to a generate job: it sends chat "
			      "completions (/v1/chat/completions) only",
			      cl_api_name(l->s->workload.api));
	/* A generate job goes on without a lost agent (its requests are given to the others)
	 * unless the scenario says on_loss: fail itself. */
	if (!l->agents[AGF_ON_LOSS])
		l->s->agents.on_loss = CL_ON_LOSS_CONTINUE;
	/* The job is one stage of the results (mode "generate"), so reports, compare and the
	 * nightly read it as any run. */
	struct cl_scn_stage st;
	cli_scenario_stage_defaults(&st);
	st.name = strdup("generate");
	st.mode = CL_MODE_CONCURRENCY;
	st.concurrency = l->s->generate.concurrency;
	if (l->s->generate.rate_per_s > 0) { /* paced: a rate stage, concurrency its cap */
		st.mode = CL_MODE_RATE;
		st.rate_per_s = l->s->generate.rate_per_s;
		st.arrival = CL_ARRIVAL_CONSTANT;
	}
	st.line = generate_at->line;
	if (!st.name || cl_scenario_insert_stage(l->s, 0, &st) != 0) {
		free(st.name);
		c->oom = true;
	}
}
