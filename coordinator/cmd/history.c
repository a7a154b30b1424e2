/* chatload history: reads a nightly job's nights (DIR/<YYYY-MM-DD>[-N]/results.json, as
 * deploy/nightly.sh lays them out), judges the trend and exits 99 when the latest night
 * starts a step for the worse. */
#include "coordinator/cmd/commands.h"
#include "coordinator/report/compare.h"
#include "coordinator/report/history.h"
#include "coordinator/results/results.h"

#include "chatload/err.h"
#include "chatload/exitcode.h"
#include "chatload/units.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_NIGHTS 30
#define MAX_NIGHTS     1000

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: chatload history DIR [--last K] [--nights N] [--max-regression 5%%]\n"
	    "                        [--max-error-increase 0.1%%] [--html FILE] [--json FILE]\n"
	    "                        [-o FILE]\n\n"
	    "Reads the nights under DIR (each DIR/YYYY-MM-DD[-N]/results.json, as\n"
	    "deploy/nightly.sh keeps them), the newest N (default %d), and judges each stage's\n"
	    "headline figures against the nights before: a night outside the band the history\n"
	    "expects (the median and spread of up to K earlier nights, 3 to 60, default %d,\n"
	    "with the nights' ci95; and beyond --max-regression) is a step when the next night\n"
	    "stays there, an outlier when it comes back.  Prints a table (-o: to FILE), writes "
	    "the\n"
	    "charts to --html FILE and the analysis to --json FILE.\n"
	    "Exit 99 when the latest night starts a step for the worse, 0 otherwise, 2 on bad\n"
	    "input (no readable night in DIR, bad flags).\n",
	    DEFAULT_NIGHTS, CL_HISTORY_DEFAULT_WINDOW);
}

static int percent_flag(const char *flag, const char *value, double *out)
{
	struct cl_err err = { 0 };
	if (!value) {
		fprintf(stderr, "chatload history: '%s' needs a percentage such as '5%%'\n", flag);
		return CL_EXIT_USAGE;
	}
	if (cl_parse_percent(value, out, &err) != 0) {
		fprintf(stderr, "chatload history: %s: %s\n", flag, err.msg);
		return CL_EXIT_USAGE;
	}
	return 0;
}

static int count_flag(const char *flag, const char *value, uint64_t min, uint64_t max, size_t *out)
{
	uint64_t v;
	if (!value || cl_parse_u64(value, max, &v) != 0 || v < min) {
		fprintf(stderr,
			"chatload history: %s needs a whole number from %llu to %llu, not '%s'\n",
			flag, (unsigned long long)min, (unsigned long long)max, value ? value : "");
		return CL_EXIT_USAGE;
	}
	*out = (size_t)v;
	return 0;
}

/* A night's directory name: YYYY-MM-DD, or YYYY-MM-DD-N for another run the same date.
 * *seq gets N (1 without a suffix), so 2026-01-03-10 sorts after 2026-01-03-9. */
static bool night_name(const char *name, unsigned long *seq)
{
	static const char shape[] = "dddd-dd-dd";
	for (size_t i = 0; i < sizeof(shape) - 1; i++)
		if (shape[i] == 'd' ? !isdigit((unsigned char)name[i]) : name[i] != shape[i])
			return false;
	*seq = 1;
	const char *rest = name + sizeof(shape) - 1;
	if (*rest == '\0')
		return true;
	if (*rest != '-' || !isdigit((unsigned char)rest[1]))
		return false;
	char *end;
	errno = 0;
	*seq = strtoul(rest + 1, &end, 10);
	return *end == '\0' && errno == 0;
}

struct night {
	char *name;
	unsigned long seq;
	json_t *doc;
	char *skipped;
};

static int night_cmp(const void *a, const void *b)
{
	const struct night *x = a, *y = b;
	int c = strncmp(x->name, y->name, 10);
	if (c)
		return c;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static void nights_free(struct night *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		json_decref(v[i].doc);
		free(v[i].skipped);
	}
	free(v);
}

/* Lists DIR's nights, oldest first.  Returns 0, or an exit code after saying why. */
static int list_nights(const char *dir, struct night **out, size_t *n_out)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "chatload history: cannot read directory '%s': %s\n", dir,
			strerror(errno));
		return CL_EXIT_USAGE;
	}
	struct night *v = NULL;
	size_t n = 0, cap = 0;
	int code = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		unsigned long seq;
		if (!night_name(e->d_name, &seq))
			continue; /* latest, *.tmp, anything else the job keeps there */
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct night *nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				code = CL_EXIT_FAILED;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n] = (struct night){ strdup(e->d_name), seq, NULL, NULL };
		if (!v[n++].name) {
			code = CL_EXIT_FAILED;
			break;
		}
	}
	closedir(d);
	if (code) {
		fprintf(stderr, "chatload history: out of memory listing '%s'\n", dir);
		nights_free(v, n);
		return code;
	}
	if (n)
		qsort(v, n, sizeof(*v), night_cmp);
	*out = v;
	*n_out = n;
	return 0;
}

/* Loads one night, or says why it is skipped. */
static int load_night(const char *dir, struct night *night)
{
	char path[4096], why[1200];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s/results.json", dir, night->name);
	why[0] = '\0';
	if (stat(path, &st) != 0) {
		snprintf(why, sizeof(why), "no results.json (the run wrote none: see its run.log)");
	} else {
		struct cl_err err = { 0 };
		char msg[1024];
		if (cl_results_load(path, &night->doc, &err) != 0) {
			night->doc = NULL;
			snprintf(why, sizeof(why), "unreadable: %s",
				 cl_err_format(&err, msg, sizeof(msg)));
		} else if (!json_is_true(json_object_get(night->doc, "complete"))) {
			snprintf(why, sizeof(why),
				 "incomplete run (results.json says complete: false)");
			json_decref(night->doc);
			night->doc = NULL;
		}
	}
	if (why[0] && !(night->skipped = strdup(why)))
		return CL_EXIT_FAILED;
	return 0;
}

static int write_to(const char *path, const json_t *hist, int (*fn)(const json_t *, FILE *))
{
	FILE *f = path ? fopen(path, "w") : stdout;
	if (!f) {
		fprintf(stderr, "chatload history: cannot write '%s': %s\n", path, strerror(errno));
		return CL_EXIT_FAILED;
	}
	int rc = fn(hist, f);
	if ((path && fclose(f) != 0) || (!path && fflush(stdout) != 0) || rc != 0) {
		fprintf(stderr, "chatload history: cannot write '%s'\n",
			path ? path : "standard output");
		return CL_EXIT_FAILED;
	}
	return 0;
}

static int dump_json(const json_t *hist, FILE *f)
{
	return json_dumpf(hist, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) != 0 ||
		       fputc('\n', f) == EOF
		   ? CL_EIO
		   : 0;
}

int cl_cmd_history(int argc, char **argv)
{
	const char *dir = NULL, *out_path = NULL, *html_path = NULL, *json_path = NULL;
	size_t max_nights = DEFAULT_NIGHTS;
	struct cl_history_opts opts = { CL_COMPARE_DEFAULT_MAX_REGRESSION,
					CL_COMPARE_DEFAULT_MAX_ERROR_INCREASE,
					CL_HISTORY_DEFAULT_WINDOW };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		int rc = 0;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return CL_EXIT_OK;
		} else if (strcmp(a, "--max-regression") == 0) {
			rc = percent_flag(a, next, &opts.max_regression);
			i++;
		} else if (strcmp(a, "--max-error-increase") == 0) {
			rc = percent_flag(a, next, &opts.max_error_increase);
			i++;
		} else if (strcmp(a, "--last") == 0) {
			rc = count_flag(a, next, CL_HISTORY_MIN_BASELINE, CL_HISTORY_MAX_WINDOW,
					&opts.window);
			i++;
		} else if (strcmp(a, "--nights") == 0) {
			rc = count_flag(a, next, 1, MAX_NIGHTS, &max_nights);
			i++;
		} else if (strcmp(a, "--html") == 0 || strcmp(a, "--json") == 0 ||
			   strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (!next) {
				fprintf(stderr, "chatload history: '%s' needs a file name\n", a);
				return CL_EXIT_USAGE;
			}
			if (strcmp(a, "--html") == 0)
				html_path = next;
			else if (strcmp(a, "--json") == 0)
				json_path = next;
			else
				out_path = next;
			i++;
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "chatload history: unknown option '%s'\n", a);
			usage(stderr);
			return CL_EXIT_USAGE;
		} else if (!dir) {
			dir = a;
		} else {
			fprintf(stderr, "chatload history: unexpected argument '%s'\n", a);
			return CL_EXIT_USAGE;
		}
		if (rc)
			return rc;
	}
	if (!dir) {
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	struct night *nights = NULL;
	struct cl_history_input *in = NULL;
	json_t *hist = NULL;
	size_t n = 0, n_used = 0;
	int code = list_nights(dir, &nights, &n);
	if (code)
		return code;
	size_t first = n > max_nights ? n - max_nights : 0;
	if (!(in = calloc(n - first + 1, sizeof(*in)))) {
		code = CL_EXIT_FAILED;
		goto out;
	}
	for (size_t i = first; i < n; i++) {
		if ((code = load_night(dir, &nights[i])) != 0)
			goto out;
		in[i - first] =
		    (struct cl_history_input){ nights[i].name, nights[i].doc, nights[i].skipped };
		n_used += nights[i].doc != NULL;
	}
	if (n_used == 0) {
		fprintf(stderr,
			"chatload history: no night with a complete results.json in '%s' (a night "
			"is a directory named YYYY-MM-DD or YYYY-MM-DD-N, as deploy/nightly.sh "
			"makes)\n",
			dir);
		for (size_t i = first; i < n; i++)
			fprintf(stderr, "chatload history: skipped %s: %s\n", nights[i].name,
				nights[i].skipped ? nights[i].skipped : "?");
		code = CL_EXIT_USAGE;
		goto out;
	}
	size_t regressions = 0;
	if (!(hist = cl_history_build(in, n - first, dir, &opts, &regressions))) {
		fprintf(stderr, "chatload history: out of memory\n");
		code = CL_EXIT_FAILED;
		goto out;
	}
	if ((code = write_to(out_path, hist, cl_history_table)) != 0 ||
	    (html_path && (code = write_to(html_path, hist, cl_history_html)) != 0) ||
	    (json_path && (code = write_to(json_path, hist, dump_json)) != 0))
		goto out;
	code = regressions ? CL_EXIT_SLO_BREACH : CL_EXIT_OK;
out:
	json_decref(hist);
	free(in);
	nights_free(nights, n);
	return code;
}
