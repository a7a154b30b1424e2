/* chatload compare: compares two results.json files and exits 99 on a regression. */
#include "coordinator/cmd/commands.h"
#include "coordinator/report/compare.h"
#include "coordinator/results/results.h"

#include "chatload/err.h"
#include "chatload/exitcode.h"
#include "chatload/units.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fputs("usage: chatload compare BASE.json NEW.json [--max-regression 5%]\n"
	      "                        [--max-error-increase 0.1%] [--format table|md|json]\n"
	      "                        [-o FILE]\n\n"
	      "Compares stages by name: output tok/s, req/s, TTFT p50/p99, ITL p50/p99, TPOT p50,\n"
	      "E2E p50 and error rate.  Exit 99 when any regressed beyond the limit, 0 otherwise,\n"
	      "2 on bad input (or when the runs have no stage in common).\n",
	      out);
}

static int percent_flag(const char *flag, const char *value, double *out)
{
	struct cl_err err = { 0 };
	if (!value) {
		fprintf(stderr, "chatload compare: '%s' needs a percentage such as '5%%'\n", flag);
		return CL_EXIT_USAGE;
	}
	if (cl_parse_percent(value, out, &err) != 0) {
		fprintf(stderr, "chatload compare: %s: %s\n", flag, err.msg);
		return CL_EXIT_USAGE;
	}
	return 0;
}

int cl_cmd_compare(int argc, char **argv)
{
	const char *files[2] = { NULL, NULL }, *out_path = NULL;
	size_t n_files = 0;
	struct cl_compare_opts opts = { CL_COMPARE_DEFAULT_MAX_REGRESSION,
					CL_COMPARE_DEFAULT_MAX_ERROR_INCREASE };
	enum cl_compare_format fmt = CL_COMPARE_TABLE;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		int rc;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return CL_EXIT_OK;
		} else if (strcmp(a, "--max-regression") == 0) {
			if ((rc = percent_flag(a, next, &opts.max_regression)) != 0)
				return rc;
			i++;
		} else if (strncmp(a, "--max-regression=", 17) == 0) {
			if ((rc = percent_flag("--max-regression", a + 17, &opts.max_regression)) !=
			    0)
				return rc;
		} else if (strcmp(a, "--max-error-increase") == 0) {
			if ((rc = percent_flag(a, next, &opts.max_error_increase)) != 0)
				return rc;
			i++;
		} else if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0) {
			const char *v = a[8] == '=' ? a + 9 : next;
			if (!v || cl_compare_parse_format(v, &fmt) != 0) {
				fprintf(
				    stderr,
				    "chatload compare: unknown format '%s' (expected table, md or "
				    "json)\n",
				    v ? v : "");
				return CL_EXIT_USAGE;
			}
			if (a[8] != '=')
				i++;
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (!next) {
				fprintf(stderr, "chatload compare: '%s' needs a file name\n", a);
				return CL_EXIT_USAGE;
			}
			out_path = next;
			i++;
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "chatload compare: unknown option '%s'\n", a);
			usage(stderr);
			return CL_EXIT_USAGE;
		} else if (n_files < 2) {
			files[n_files++] = a;
		} else {
			fprintf(stderr, "chatload compare: unexpected argument '%s'\n", a);
			return CL_EXIT_USAGE;
		}
	}
	if (n_files != 2) {
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	json_t *docs[2] = { NULL, NULL };
	int code = CL_EXIT_OK;
	for (int k = 0; k < 2; k++) {
		struct cl_err err = { 0 };
		if (cl_results_load(files[k], &docs[k], &err) != 0) {
			char msg[1024];
			fprintf(stderr, "chatload compare: %s\n",
				cl_err_format(&err, msg, sizeof(msg)));
			code = CL_EXIT_USAGE;
			goto out;
		}
	}
	/* Two runs of different scenarios share no stage: every stage would read as missing,
	 * i.e. regressed, which says nothing true.  Bad input, not a regression. */
	if (cl_compare_common(docs[0], docs[1]) == 0) {
		fprintf(stderr,
			"chatload compare: no stages in common: '%s' and '%s' name their stages "
			"differently (compare runs of the same scenario)\n",
			files[0], files[1]);
		code = CL_EXIT_USAGE;
		goto out;
	}
	FILE *out = stdout;
	if (out_path && !(out = fopen(out_path, "w"))) {
		fprintf(stderr, "chatload compare: cannot write '%s': %s\n", out_path,
			strerror(errno));
		code = CL_EXIT_FAILED;
		goto out;
	}
	code = cl_compare(docs[0], docs[1], files[0], files[1], &opts, fmt, out);
	if ((out != stdout && fclose(out) != 0) || (out == stdout && fflush(stdout) != 0)) {
		fprintf(stderr, "chatload compare: cannot write '%s'\n",
			out_path ? out_path : "standard output");
		code = CL_EXIT_FAILED;
	}
out:
	json_decref(docs[0]);
	json_decref(docs[1]);
	return code;
}
