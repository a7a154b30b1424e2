/* chatload report: re-renders a saved results.json as a table, CSV, Markdown or HTML. */
#include "coordinator/cmd/commands.h"
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"

#include "chatload/err.h"
#include "chatload/exitcode.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fputs("usage: chatload report RESULTS.json|DIR [--format table|csv|md|html] [-o FILE]\n"
	      "                       [--check]\n\n"
	      "Renders a saved results document exactly as the run rendered it.\n"
	      "  --format F   table (default), csv, md or html\n"
	      "  -o FILE      write to FILE instead of standard output\n"
	      "  --check      exit with the run's own exit code (0 ok, 1 failed or incomplete,\n"
	      "               3 not ready, 99 SLO breached) instead of 0\n",
	      out);
}

int cl_cmd_report(int argc, char **argv)
{
	const char *path = NULL, *out_path = NULL;
	enum cl_report_format fmt = CL_REPORT_TABLE;
	bool check = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return CL_EXIT_OK;
		} else if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) {
			if (i + 1 >= argc || cl_report_parse_format(argv[i + 1], &fmt) != 0) {
				fprintf(
				    stderr,
				    "chatload report: unknown format '%s' (expected table, csv, md "
				    "or html)\n",
				    i + 1 < argc ? argv[i + 1] : "");
				return CL_EXIT_USAGE;
			}
			i++;
		} else if (strncmp(a, "--format=", 9) == 0) {
			if (cl_report_parse_format(a + 9, &fmt) != 0) {
				fprintf(
				    stderr,
				    "chatload report: unknown format '%s' (expected table, csv, md "
				    "or html)\n",
				    a + 9);
				return CL_EXIT_USAGE;
			}
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "chatload report: '%s' needs a file name\n", a);
				return CL_EXIT_USAGE;
			}
			out_path = argv[++i];
		} else if (strcmp(a, "--check") == 0) {
			check = true;
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "chatload report: unknown option '%s'\n", a);
			usage(stderr);
			return CL_EXIT_USAGE;
		} else if (!path) {
			path = a;
		} else {
			fprintf(stderr, "chatload report: unexpected argument '%s'\n", a);
			return CL_EXIT_USAGE;
		}
	}
	if (!path) {
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	struct cl_err err = { 0 };
	json_t *doc = NULL;
	if (cl_results_load(path, &doc, &err) != 0) {
		char msg[1024];
		fprintf(stderr, "chatload report: %s\n", cl_err_format(&err, msg, sizeof(msg)));
		return CL_EXIT_USAGE;
	}
	int code = CL_EXIT_OK;
	FILE *out = stdout;
	if (out_path && !(out = fopen(out_path, "w"))) {
		fprintf(stderr, "chatload report: cannot write '%s': %s\n", out_path,
			strerror(errno));
		code = CL_EXIT_FAILED;
		goto out;
	}
	int rc = cl_report_render(doc, fmt, out);
	if (out != stdout && fclose(out) != 0)
		rc = CL_EIO;
	else if (out == stdout && fflush(stdout) != 0)
		rc = CL_EIO;
	if (rc != 0) {
		fprintf(stderr, "chatload report: cannot write '%s': %s\n",
			out_path ? out_path : "standard output", cl_strerror(rc));
		code = CL_EXIT_FAILED;
		goto out;
	}
	if (check) {
		const json_t *ec = json_object_get(doc, "exit_code");
		/* A run that never reached its end (killed) has no exit code: it failed. */
		code = json_is_integer(ec) ? (int)json_integer_value(ec) : CL_EXIT_FAILED;
	}
out:
	json_decref(doc);
	return code;
}
