/* Comparing two results documents stage by stage, direction-aware (higher throughput is
 * better, higher latency and error rate worse), to fail a nightly job on a regression. */
#ifndef CHATLOAD_COMPARE_H
#define CHATLOAD_COMPARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cl_compare_format { CL_COMPARE_TABLE = 0, CL_COMPARE_MD = 1, CL_COMPARE_JSON = 2 };

/* "table", "md" (or "markdown"), "json" -> format.  0 or CL_EINVAL. */
int cl_compare_parse_format(const char *name, enum cl_compare_format *out);

struct cl_compare_opts {
	/* A metric regresses when it moves the wrong way by more than this fraction of the
	 * base value (0.05 = 5%). */
	double max_regression;
	/* The error rate regresses only when it also rises by more than this many absolute
	 * parts (0.001 = 0.1 percentage point), so one stray error in a quiet run is not a
	 * regression. */
	double max_error_increase;
};

/* Defaults: 5% and 0.1 percentage point. */
#define CL_COMPARE_DEFAULT_MAX_REGRESSION     0.05
#define CL_COMPARE_DEFAULT_MAX_ERROR_INCREASE 0.001

/*
 * Builds the comparison of cur against base (both already passed cl_results_check) as a
 * JSON object {schema: "chatload.compare/1", base, new, max_regression, max_error_increase,
 * regressions, stages: [{stage, status: compared|missing|new, metrics: [{metric, better,
 * base, new, change, verdict: regressed|within noise|worse|same|better|client-bound|n/a}]}],
 * warnings}.  Stages are matched by name; a stage of base missing from cur counts as a
 * regression.  *regressions gets the count.  Returns a new reference, NULL when out of
 * memory.
 */
json_t *cl_compare_build(const json_t *base, const json_t *cur, const char *base_name,
			 const char *cur_name, const struct cl_compare_opts *opts,
			 size_t *regressions);

/* Whether a stage's tails (its p99s) describe the client, not the server: it was
 * client-bound by an event (an agent or the coordinator stalled, an agent went missing, an
 * agent's CPU was saturated).  compare and history then show those figures unjudged. */
bool cl_compare_client_bound_tails(const json_t *stage);

/* Renders a comparison built by cl_compare_build.  0 or CL_EIO. */
int cl_compare_render(const json_t *cmp, enum cl_compare_format fmt, FILE *out);

/*
 * Both steps: builds, renders to out, and returns the exit code: CL_EXIT_SLO_BREACH (99)
 * when any metric regressed beyond the limits, CL_EXIT_OK otherwise, CL_EXIT_FAILED when
 * out of memory or writing failed.
 */
/* How many stages (by name, probes left out; a capacity answer counts as one) both runs
 * have: 0 means there is nothing to compare. */
size_t cl_compare_common(const json_t *base, const json_t *cur);

int cl_compare(const json_t *base, const json_t *cur, const char *base_name, const char *cur_name,
	       const struct cl_compare_opts *opts, enum cl_compare_format fmt, FILE *out);

/* The headline figures compare judges (chatload history judges the same ones), in order. */
struct cl_compare_metric {
	const char *name;  /* as in ci95 and compare's JSON: "ttft_p99_ms" */
	const char *label; /* for people: "TTFT p99 ms" */
	const char *path;  /* in a stage object: "latency_ms.ttft.p99" */
	bool higher_better;
	bool rate; /* a share (the error rate): judged with --max-error-increase too */
};
size_t cl_compare_n_metrics(void);
/* Fills *out with the i-th figure and returns true, or false past the end. */
bool cl_compare_metric(size_t i, struct cl_compare_metric *out);

#endif
