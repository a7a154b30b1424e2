/* Stages too short for their requests: the judgement (`stages[].too_short`) made on a stage's
 * merged metrics, and the warning that names such a stage with its numbers and the way out. */
#include "coordinator/results/internal.h"

#include <math.h>

/* Fewer completions than this and a stage's percentiles rest on a handful of requests. */
#define SHORT_MIN_COMPLETED 10
/* A window shorter than this many typical lifetimes is mostly its edges: the first wave
 * starting together, the last one cut or finishing in the drain. */
#define SHORT_MIN_LIFETIMES 2.0

/* The typical lifetime of the stage's completed requests (E2E p50) in seconds, NAN when none
 * completed. */
static double lifetime_s(const struct cl_metrics *m)
{
	const struct cl_hist *e2e = &m->lat[CL_LAT_E2E];
	return cl_hist_count(e2e) ? (double)cl_hist_percentile(e2e, 50) / 1e6 : NAN;
}

bool cli_rs_too_short(const struct cl_scn_stage *st, const struct cl_metrics *m, double window_s)
{
	/* A requests-bounded stage's window lasts until its last request ends: it has the
	 * requests it asked for, which is the way out offered to a duration-bounded one. */
	if (!st || st->duration_us <= 0 || st->requests > 0)
		return false;
	if (m->ctr[CL_CTR_COMPLETED] < SHORT_MIN_COMPLETED)
		return true;
	double life = lifetime_s(m);
	return isfinite(life) && window_s < SHORT_MIN_LIFETIMES * life;
}

int cli_rs_short_warning(json_t *w, const json_t *s)
{
	if (!json_is_true(json_object_get(s, "too_short")))
		return 0;
	const char *name = cl_results_str(s, "name", "");
	double done = cl_results_num(s, "requests.completed");
	double started = cl_results_num(s, "requests.started");
	double window = cl_results_num(s, "duration_s");
	double e2e_ms = cl_results_num(s, "latency_ms.e2e.p50");
	char took[96];
	if (isfinite(e2e_ms))
		snprintf(took, sizeof(took), "answers take ~%.3g s", e2e_ms / 1e3);
	else
		snprintf(took, sizeof(took), "no answer ended within the stage and its drain");
	return cli_rs_warn(w,
			   "stage '%s' is too short for its requests: %.0f of %.0f completed in "
			   "%.3g s, %s; its percentiles and rates rest on the stage's edges. "
			   "Lengthen it (to at least %s) or bound it by requests",
			   name, done, started, window, took,
			   isfinite(e2e_ms) ? "two answers' time and 10 completions"
					    : "10 completions");
}
