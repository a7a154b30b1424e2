/* chatload history: the nights of a nightly job read as one trend per stage and headline
 * figure, with the change-points (steps) found in it, rendered as a table, JSON and a
 * self-contained HTML page. */
#ifndef CHATLOAD_HISTORY_H
#define CHATLOAD_HISTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* -- the step detector: a pure function of one figure's series -------------------------- */

/* What one night is, for one figure, against the history before it. */
enum cl_history_label {
	CL_HISTORY_NA = 0,   /* no value that night (the stage did not run, or failed) */
	CL_HISTORY_LEARNING, /* fewer than CL_HISTORY_MIN_BASELINE earlier nights on its level:
			      * the history cannot tell its noise yet, so it is not judged */
	CL_HISTORY_NORMAL,   /* within the band the history expects */
	CL_HISTORY_OUTLIER,  /* left the band, and the next night came back: one bad night */
	CL_HISTORY_STEP,     /* left the band and the nights after it stayed: a change-point.
			      * On the latest night, which has no night after it: left the band
			      * (a step starts, unconfirmed) */
	CL_HISTORY_N_LABELS
};

/* "n/a", "learning", "normal", "outlier", "step". */
const char *cl_history_label_name(enum cl_history_label l);

struct cl_history_rule {
	bool higher_better; /* throughput; latencies and the error rate are lower-better */
	/* Practical limit: a move the wrong way smaller than this fraction of the expected
	 * level is never a step, however certain (compare's --max-regression). */
	double max_regression;
	/* > 0 for a share (the error rate): the move must also exceed this many absolute parts
	 * (compare's --max-error-increase); 0 for other figures. */
	double min_abs_change;
	/* At most this many earlier nights form a night's baseline (taken as at least
	 * CL_HISTORY_MIN_BASELINE). */
	size_t window;
};

/* One night's judgement of one figure. */
struct cl_history_night {
	enum cl_history_label label;
	int direction;    /* +1 worse, -1 better, 0: within the band (for OUTLIER and STEP) */
	size_t baseline;  /* how many earlier nights the baseline holds (0: none) */
	double expected;  /* the baseline's median, NaN without one */
	double spread;    /* 1.4826 x the baseline's MAD (a robust standard deviation), NaN */
	double noise;     /* half-width of the band from noise alone, NaN without a baseline */
	double low, high; /* the band: a value outside it (on either side) leaves it, NaN */
};

/*
 * Judges every night of one figure.  value[i] and half[i] are night i's figure and the
 * half-width of its 95 % interval (ci95; NaN when it has none), oldest first; a NaN value
 * is a night without the figure (CL_HISTORY_NA, skipped by the others).  out[i] gets night
 * i's judgement.  The method, and why, is in docs/results.md ("chatload history").  Pure:
 * no I/O, no allocation beyond a bounded stack buffer; n may be 0.  Returns the label of
 * the latest night that has a value (CL_HISTORY_NA when none does).
 */
enum cl_history_label cl_history_detect(const double *value, const double *half, size_t n,
					const struct cl_history_rule *rule,
					struct cl_history_night *out);

/* The fewest and the most earlier nights a baseline may hold (--last lies between). */
#define CL_HISTORY_MIN_BASELINE 3
#define CL_HISTORY_MAX_WINDOW   60

/* -- the nights of a directory ------------------------------------------------------------ */

/* One night as the command found it: doc is its results (a borrowed reference) or NULL,
 * then skipped says why ("no results.json", "incomplete run", the load error). */
struct cl_history_input {
	const char *name; /* the night's directory name, e.g. "2026-01-03" or "2026-01-03-2" */
	const json_t *doc;
	const char *skipped;
};

struct cl_history_opts {
	double max_regression;     /* default CL_COMPARE_DEFAULT_MAX_REGRESSION */
	double max_error_increase; /* default CL_COMPARE_DEFAULT_MAX_ERROR_INCREASE */
	size_t window;             /* --last K: the baseline's earlier nights, default 7 */
};

#define CL_HISTORY_DEFAULT_WINDOW 7

/*
 * Builds the history of the nights (oldest first; skipped ones are listed with their
 * reason) as a JSON document {schema: "chatload.history/1", dir, window, max_regression,
 * max_error_increase, nights: [{name, started_at, used|skipped}], stages: [{stage, figures:
 * [{metric, label, better, nights: [{value, half, label, direction, expected, low, high}],
 * latest}]}], steps: [{stage, metric, night, direction, latest, from, to}], regressions}.
 * *regressions counts the figures whose latest night starts a step for the worse.
 * Returns a new reference, NULL when out of memory.
 */
json_t *cl_history_build(const struct cl_history_input *nights, size_t n, const char *dir,
			 const struct cl_history_opts *opts, size_t *regressions);

/* The terminal table of a built history: one row per stage and figure (its latest night,
 * the expected level and band, the label), the steps found, the skipped nights.  0 or
 * CL_EIO. */
int cl_history_table(const json_t *hist, FILE *out);

/* The HTML page: a table as above and, per stage, one SVG chart per headline figure with
 * the nights on the x axis, each night's ci95 as an error bar and the band the history
 * expects.  One file, inline CSS and SVG, no scripts, no external assets.  0 or CL_EIO. */
int cl_history_html(const json_t *hist, FILE *out);

#endif
