/* chatload validate: its flags, then each scenario loaded and its workload rendered as a run
 * would, every error printed with its position, or the resolved plan (validate_plan.c) and,
 * with --dump-bodies, the request bodies. */
#include "coordinator/cmd/commands.h"
#include "coordinator/cmd/validate_int.h"

#include "chatload/exitcode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: chatload validate [--set KEY.PATH=VALUE]... SCENARIO...\n\n"
	    "Checks each scenario and prints the plan it resolves to, defaults included.\n"
	    "Errors are printed as file:line:column: message.\n\n"
	    "The workload is read in full (every dataset line), as chatload run reads it before\n"
	    "it starts anything; so is a generate job's input (nothing is written).\n\n"
	    "options:\n"
	    "  --set KEY.PATH=VALUE  override a value before checking, e.g.\n"
	    "                        --set stages.0.duration=30s --set target.model=x\n"
	    "                        (list entries by index; VALUE is YAML, so [1,2] is a list)\n"
	    "  --dump-bodies FILE    write the request bodies, one JSON object a line, in the\n"
	    "                        order an agent starting at the first sends them (one\n"
	    "                        scenario only), with an example of the run's salt\n"
	    "  -h, --help            show this help\n\n"
	    "exit codes: 0 every scenario is valid, 2 a scenario has errors or cannot be read\n");
}

/* Writes the bodies, one a line, from first_body on (0: the order of agent 1). */
static int dump_bodies(const char *path, const struct cl_workload_plan *w)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < w->n_bodies; i++) {
		fwrite(w->bodies[i].json, 1, w->bodies[i].len, f);
		fputc('\n', f);
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Prints every diagnostic of one file; returns how many. */
static size_t print_diags(const struct cl_diags *d)
{
	char line[1024];
	for (size_t i = 0; i < d->n; i++)
		fprintf(stderr, "%s\n", cl_err_format(&d->items[i], line, sizeof(line)));
	if (d->dropped)
		fprintf(stderr, "... and %zu more error%s\n", d->dropped,
			d->dropped == 1 ? "" : "s");
	return d->n + d->dropped;
}

int cl_cmd_validate(int argc, char **argv)
{
	const char **sets = calloc((size_t)argc + 1, sizeof(char *));
	const char **files = calloc((size_t)argc + 1, sizeof(char *));
	size_t n_sets = 0, n_files = 0;
	const char *dump = NULL;
	int rc = CL_EXIT_USAGE;
	if (!sets || !files) {
		fprintf(stderr, "chatload validate: out of memory\n");
		goto out;
	}
	bool options = true;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (options && strcmp(arg, "--") == 0) {
			options = false;
		} else if (options && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)) {
			usage(stdout);
			rc = CL_EXIT_OK;
			goto out;
		} else if (options && strcmp(arg, "--set") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr,
					"chatload validate: '--set' needs KEY.PATH=VALUE\n");
				goto out;
			}
			sets[n_sets++] = argv[++i];
		} else if (options && strncmp(arg, "--set=", 6) == 0) {
			sets[n_sets++] = arg + 6;
		} else if (options && strcmp(arg, "--dump-bodies") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr,
					"chatload validate: '--dump-bodies' needs a file\n");
				goto out;
			}
			dump = argv[++i];
		} else if (options && arg[0] == '-' && arg[1]) {
			fprintf(stderr, "chatload validate: unknown option '%s'\n", arg);
			usage(stderr);
			goto out;
		} else {
			files[n_files++] = arg;
		}
	}
	if (!n_files) {
		fprintf(stderr, "chatload validate: no scenario given\n");
		usage(stderr);
		goto out;
	}
	if (dump && n_files > 1) {
		fprintf(stderr, "chatload validate: --dump-bodies takes one scenario\n");
		goto out;
	}

	size_t bad = 0;
	for (size_t i = 0; i < n_files; i++) {
		struct cl_scenario s;
		struct cl_diags d = { 0 };
		int lrc = cl_scenario_load_file(files[i], sets, &s, &d);
		struct cl_workload_plan w = { 0 };
		/* zeroed: the rendering makes the salt a run would, so --dump-bodies shows what
		 * is sent; a run makes a tag of its own (workload.salt) */
		struct cl_workload_stats st = { 0 };
		struct cl_err werr = { 0 }, first_bad = { 0 };
		struct cl_gen_scan scan = { 0 };
		char line[1024];
		if (lrc == 0 && cl_workload_render_stats(&s, cl_scenario_render_model(&s), &w, &st,
							 &werr) != 0) {
			/* The scenario is sound but its workload is not: a dataset line, a
			 * length out of range.  The message names the file, line and column. */
			bad++;
			if (werr.file[0])
				fprintf(stderr, "%s\n", cl_err_format(&werr, line, sizeof(line)));
			else
				fprintf(stderr, "%s: workload: %s\n", files[i],
					cl_err_format(&werr, line, sizeof(line)));
		} else if (lrc == 0 && s.generate.set &&
			   cli_validate_check_generate(&s, &scan, &first_bad, &werr) != 0) {
			/* The job's input has a bad line (or cannot be read): run would stop
			 * there with exit 2 before sending anything, so validate does too. */
			bad++;
			fprintf(stderr, "%s\n", cl_err_format(&werr, line, sizeof(line)));
		} else if (lrc == 0) {
			if (i)
				printf("\n");
			cl_workload_trace_fill_stages(&s, &st);
			cli_validate_print_plan(&s, &st, &scan, &first_bad);
			cli_validate_print_classes(&s.workload, &w);
			if (dump && dump_bodies(dump, &w) != 0)
				bad++;
		} else {
			bad++;
			if (!print_diags(&d))
				fprintf(stderr, "%s: %s\n", files[i], cl_strerror(lrc));
		}
		fflush(stdout);
		cl_workload_plan_free(&w);
		cl_diags_free(&d);
		cl_scenario_free(&s);
	}
	rc = bad ? CL_EXIT_USAGE : CL_EXIT_OK;
	if (bad && n_files > 1)
		fprintf(stderr, "%zu of %zu scenarios have errors\n", bad, n_files);
out:
	free(sets);
	free(files);
	return rc;
}
