/* chatload report: re-renders a saved results.json as a table, CSV, Markdown or HTML, or
 * writes its stages as vLLM's benchmark result JSON. */
#include "coordinator/cmd/commands.h"
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"

#include "chatload/err.h"
#include "chatload/exitcode.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* vLLM's --metric-percentiles takes any number of them; eight is more than its users ask. */
#define REPORT_PCT_MAX 8

static void usage(FILE *out)
{
	fputs(
	    "usage: chatload report RESULTS.json|DIR [--format table|csv|md|html|vllm] [-o FILE]\n"
	    "                       [--check] [--stage NAME] [--metric-percentiles 50,90,99]\n\n"
	    "Renders a saved results document exactly as the run rendered it.\n"
	    "  --format F   table (default), csv, md, html, or vllm: each stage as vLLM's\n"
	    "               benchmark result JSON (one object a line; the per-request lists\n"
	    "               from requests.jsonl when the run kept one)\n"
	    "  --stage NAME with vllm: that stage only (one JSON document)\n"
	    "  --metric-percentiles P,...  with vllm: the p<P>_*_ms keys (default 99)\n"
	    "  -o FILE      write to FILE instead of standard output\n"
	    "  --check      exit with the run's own exit code (0 ok, 1 failed or incomplete,\n"
	    "               3 not ready, 99 SLO breached) instead of 0\n",
	    out);
}

/* "50,90,99" into pct[REPORT_PCT_MAX], each in (0, 100]; says what is wrong on stderr. */
static int parse_percentiles(const char *list, double *pct, size_t *n)
{
	*n = 0;
	for (const char *p = list;;) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || !isfinite(v) || v <= 0 || v > 100 ||
		    (*end != ',' && *end != '\0')) {
			fprintf(
			    stderr,
			    "chatload report: --metric-percentiles '%s': expected percentiles in "
			    "(0, 100] separated by commas, e.g. 50,90,99\n",
			    list);
			return CL_EINVAL;
		}
		if (*n == REPORT_PCT_MAX) {
			fprintf(stderr, "chatload report: --metric-percentiles '%s': at most %d\n",
				list, REPORT_PCT_MAX);
			return CL_EINVAL;
		}
		pct[(*n)++] = v;
		if (*end == '\0')
			return 0;
		p = end + 1;
	}
}

/* The requests.jsonl of the run whose results path names (the file or its directory), when
 * the document says the run kept one (requests_log); *out NULL otherwise.  0 or CL_ENOMEM. */
static int requests_path(const char *path, const json_t *doc, char **out)
{
	*out = NULL;
	const char *file = cl_results_str(doc, "requests_log.file", NULL);
	if (!file)
		return 0;
	struct stat st;
	size_t dir_len;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		dir_len = strlen(path);
	} else {
		const char *slash = strrchr(path, '/');
		dir_len = slash ? (size_t)(slash - path) : 0;
	}
	size_t n = dir_len + strlen(file) + 3;
	if (!(*out = malloc(n)))
		return CL_ENOMEM;
	if (dir_len == 0 && path[0] != '/')
		snprintf(*out, n, "%s", file);
	else
		snprintf(*out, n, "%.*s/%s", (int)dir_len, path, file);
	return 0;
}

/* What the command line asked for. */
struct report_args {
	const char *path, *out_path;
	enum cl_report_format fmt;
	bool check;
	double pct[REPORT_PCT_MAX];
	struct cl_report_vllm_opts vopt; /* its percentiles point at pct */
};

/* The format called name into *fmt: 0, or -1 after saying which formats there are. */
static int parse_format(const char *name, enum cl_report_format *fmt)
{
	if (cl_report_parse_format(name, fmt) == 0)
		return 0;
	fprintf(stderr,
		"chatload report: unknown format '%s' (expected table, csv, md, html or vllm)\n",
		name);
	return -1;
}

/* The flags into a: -1 to go on, else the exit code to return at once (--help, or a usage
 * error said on stderr). */
static int parse_args(int argc, char **argv, struct report_args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			usage(stdout);
			return CL_EXIT_OK;
		} else if (strcmp(arg, "--format") == 0 || strcmp(arg, "-f") == 0) {
			if (parse_format(i + 1 < argc ? argv[i + 1] : "", &a->fmt) != 0)
				return CL_EXIT_USAGE;
			i++;
		} else if (strncmp(arg, "--format=", 9) == 0) {
			if (parse_format(arg + 9, &a->fmt) != 0)
				return CL_EXIT_USAGE;
		} else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "chatload report: '%s' needs a file name\n", arg);
				return CL_EXIT_USAGE;
			}
			a->out_path = argv[++i];
		} else if (strcmp(arg, "--stage") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "chatload report: '--stage' needs a stage name\n");
				return CL_EXIT_USAGE;
			}
			a->vopt.stage = argv[++i];
		} else if (strcmp(arg, "--metric-percentiles") == 0) {
			if (i + 1 >= argc ||
			    parse_percentiles(argv[i + 1], a->pct, &a->vopt.n_percentiles) != 0)
				return CL_EXIT_USAGE;
			i++;
		} else if (strcmp(arg, "--check") == 0) {
			a->check = true;
		} else if (arg[0] == '-' && arg[1] != '\0') {
			fprintf(stderr, "chatload report: unknown option '%s'\n", arg);
			usage(stderr);
			return CL_EXIT_USAGE;
		} else if (!a->path) {
			a->path = arg;
		} else {
			fprintf(stderr, "chatload report: unexpected argument '%s'\n", arg);
			return CL_EXIT_USAGE;
		}
	}
	if (!a->path) {
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	if (a->fmt != CL_REPORT_VLLM && (a->vopt.stage || a->vopt.n_percentiles)) {
		fprintf(stderr, "chatload report: '%s' is for --format vllm\n",
			a->vopt.stage ? "--stage" : "--metric-percentiles");
		return CL_EXIT_USAGE;
	}
	return -1;
}

/* doc (read from a->path) rendered to out as a asks: 0, or an error; with vllm, one that err
 * describes is the input's (a stage, requests.jsonl), one it does not is writing out. */
static int render(const struct report_args *a, const json_t *doc, FILE *out, struct cl_err *err)
{
	if (a->fmt != CL_REPORT_VLLM)
		return cl_report_render(doc, a->fmt, out);
	struct cl_report_vllm_opts vopt = a->vopt;
	char *requests = NULL;
	int rc = requests_path(a->path, doc, &requests);
	if (rc == 0) {
		vopt.requests_path = requests;
		rc = cl_report_vllm(doc, &vopt, out, err);
	}
	free(requests);
	return rc;
}

int cl_cmd_report(int argc, char **argv)
{
	struct report_args a = { .fmt = CL_REPORT_TABLE };
	a.vopt.percentiles = a.pct;
	int code = parse_args(argc, argv, &a);
	if (code >= 0)
		return code;
	struct cl_err err = { 0 };
	char msg[1024];
	json_t *doc = NULL;
	if (cl_results_load(a.path, &doc, &err) != 0) {
		fprintf(stderr, "chatload report: %s\n", cl_err_format(&err, msg, sizeof(msg)));
		return CL_EXIT_USAGE;
	}
	code = CL_EXIT_OK;
	FILE *out = stdout;
	if (a.out_path && !(out = fopen(a.out_path, "w"))) {
		fprintf(stderr, "chatload report: cannot write '%s': %s\n", a.out_path,
			strerror(errno));
		code = CL_EXIT_FAILED;
		goto out;
	}
	int rc = render(&a, doc, out, &err);
	if (rc != 0 && a.fmt == CL_REPORT_VLLM && err.msg[0]) {
		fprintf(stderr, "chatload report: %s\n", cl_err_format(&err, msg, sizeof(msg)));
		if (out != stdout)
			fclose(out);
		code = rc == CL_ENOTFOUND ? CL_EXIT_USAGE : CL_EXIT_FAILED;
		goto out;
	}
	if (out != stdout) {
		if (fclose(out) != 0)
			rc = CL_EIO;
	} else if (fflush(stdout) != 0) {
		rc = CL_EIO;
	}
	if (rc != 0) {
		fprintf(stderr, "chatload report: cannot write '%s': %s\n",
			a.out_path ? a.out_path : "standard output", cl_strerror(rc));
		code = CL_EXIT_FAILED;
		goto out;
	}
	if (a.check) {
		const json_t *ec = json_object_get(doc, "exit_code");
		/* A run that never reached its end (killed) has no exit code: it failed. */
		code = json_is_integer(ec) ? (int)json_integer_value(ec) : CL_EXIT_FAILED;
	}
out:
	json_decref(doc);
	return code;
}
