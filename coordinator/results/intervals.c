/* A stage's intervals as they come: the client figures each one feeds (CPU, drift, the
 * batch means of ci95, the abort window), its line in intervals.jsonl, its summary kept in
 * results.json (every other one dropped when the cap is reached) with the agents' health,
 * and the stage's stall episodes; and the live document, the running stages' kept intervals
 * added to the finished stages (cl_results_live_doc). */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/err.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Halves the kept intervals (every other one stays, the first among them) in place, so the
 * finished stage's object that holds the same array sees it, and doubles the stride. */
static void decimate(struct stage_state *ss)
{
	json_t *a = ss->intervals;
	size_t n = json_array_size(a), kept = (n + 1) / 2;
	for (size_t i = 1; i < kept; i++) /* 2i > i: read before it is overwritten */
		json_array_set(a, i, json_array_get(a, 2 * i));
	while (json_array_size(a) > kept)
		json_array_remove(a, json_array_size(a) - 1);
	ss->stride *= 2;
}

int cli_rs_fit_finished_intervals(struct cl_results *r)
{
	json_t *stages = json_object_get(r->doc, "stages");
	for (;;) {
		size_t total = 0, most = 0;
		struct stage_state *big = NULL;
		for (size_t i = 0; i < r->n_stages; i++) {
			struct stage_state *ss = &r->stages[i];
			size_t n = ss->finished ? json_array_size(ss->intervals) : 0;
			total += n;
			if (n > most) {
				most = n;
				big = ss;
			}
		}
		if (total <= CL_RESULTS_MAX_FINISHED_INTERVALS || most < 2)
			return 0;
		decimate(big);
		size_t k;
		json_t *o;
		json_array_foreach(stages, k, o)
		{
			if (json_object_get(o, "intervals") == big->intervals &&
			    cli_rj_set(o, "intervals_stride",
				       json_integer((json_int_t)big->stride)))
				return CL_ENOMEM;
		}
	}
}

int cl_results_add_interval(struct cl_results *r, size_t stage, double t_s,
			    const struct cl_metrics *interval, double interval_s)
{
	return cl_results_add_interval_agents(r, stage, t_s, interval, interval_s, NULL, 0);
}

/* Ranks a figure that may be missing (NaN) below every one measured. */
static double rank(double v)
{
	return isfinite(v) ? v : -1;
}

enum health_figure { BY_CPU, BY_DISPATCH_LAG, BY_LOOP_LAG };

/* The agent of a[0..n) not yet in pick[0..k) with the highest figure `by`. */
static size_t worst_by(const struct cl_results_agent_health *a, size_t n, const size_t *pick,
		       size_t k, enum health_figure by)
{
	size_t best = SIZE_MAX;
	double best_v = 0;
	for (size_t i = 0; i < n; i++) {
		bool taken = false;
		for (size_t j = 0; j < k && !taken; j++)
			taken = pick[j] == i;
		double v = rank(by == BY_CPU            ? a[i].cpu_pct
				: by == BY_DISPATCH_LAG ? a[i].dispatch_lag_p99_ms
							: a[i].loop_lag_p99_ms);
		if (!taken && (best == SIZE_MAX || v > best_v)) {
			best = i;
			best_v = v;
		}
	}
	return best;
}

static int cmp_size(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;
	return a < b ? -1 : a > b;
}

/* Which of n agents a kept row lists (indexes into pick, in the agents' order; returns how
 * many): every one up to CL_RESULTS_AGENTS_KEPT; past that the busiest CPU, the highest
 * dispatch lag and then the highest loop lags, so each figure's worst agent is listed. */
static size_t pick_kept(const struct cl_results_agent_health *a, size_t n, size_t *pick)
{
	if (n <= CL_RESULTS_AGENTS_KEPT) {
		for (size_t i = 0; i < n; i++)
			pick[i] = i;
		return n;
	}
	pick[0] = worst_by(a, n, pick, 0, BY_CPU);
	pick[1] = worst_by(a, n, pick, 1, BY_DISPATCH_LAG);
	for (size_t k = 2; k < CL_RESULTS_AGENTS_KEPT; k++)
		pick[k] = worst_by(a, n, pick, k, BY_LOOP_LAG);
	qsort(pick, CL_RESULTS_AGENTS_KEPT, sizeof(*pick), cmp_size);
	return CL_RESULTS_AGENTS_KEPT;
}

/* The `agents` array of the agents pick[0..n) names (NULL: every one of a[0..n)): each
 * agent's health.  NULL when out of memory. */
static json_t *agents_health_json(const struct cl_results_agent_health *all, const size_t *pick,
				  size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		const struct cl_results_agent_health *a = &all[pick ? pick[i] : i];
		json_t *o = json_pack(
		    "{s:I,s:o,s:o,s:o}", "agent", (json_int_t)a->agent, "cpu_pct",
		    isfinite(a->cpu_pct) ? json_real(cli_rj_round(a->cpu_pct, 1)) : json_null(),
		    "loop_lag_p99_ms",
		    isfinite(a->loop_lag_p99_ms) ? json_real(cli_rj_round(a->loop_lag_p99_ms, 3))
						 : json_null(),
		    "dispatch_lag_p99_ms",
		    isfinite(a->dispatch_lag_p99_ms)
			? json_real(cli_rj_round(a->dispatch_lag_p99_ms, 3))
			: json_null());
		if (cli_rj_append(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

int cl_results_add_interval_agents(struct cl_results *r, size_t stage, double t_s,
				   const struct cl_metrics *interval, double interval_s,
				   const struct cl_results_agent_health *agents, size_t n)
{
	if (stage >= r->n_stages || r->stages[stage].finished || !isfinite(t_s) ||
	    !isfinite(interval_s) || interval_s < 0)
		return CL_EINVAL;
	struct stage_state *ss = &r->stages[stage];
	const struct cl_health *h = &interval->health;
	if (h->cpu_pct > ss->client.cpu_max_pct)
		ss->client.cpu_max_pct = h->cpu_pct;
	if (h->cpu_pct_capacity > ss->client.cpu_capacity_pct)
		ss->client.cpu_capacity_pct = h->cpu_pct_capacity;
	if (cl_verdict_cpu_bound(h->cpu_pct, h->cpu_pct_capacity))
		ss->client.cpu_bound_intervals++;
	if (!ss->probe) {
		if (!ss->drift && ss->seen == 0)
			ss->drift = cli_rs_drift_new(&r->drift, ss->ramp_s, ss->duration_s,
						     r->report_interval_s);
		cli_rs_drift_add(ss->drift, t_s, interval_s, interval);
		if (!ss->ci) /* freed at the end of each repeat */
			ss->ci = cli_rs_ci_new(ss->ramp_s, ss->duration_s);
		cli_rs_ci_add(ss->ci, t_s, interval_s, interval);
		if (r->abort_intervals)
			cli_rs_interval_breach(r, ss, t_s, interval, interval_s);
	}

	json_t *iv = cli_rs_interval_json(t_s, interval_s, interval);
	if (!iv)
		return CL_ENOMEM;
	/* A repeated stage's intervals say which repeat they belong to (t_s starts again). */
	if (ss->repeat_n > 1 &&
	    cli_rj_set(iv, "repeat", json_integer((json_int_t)ss->repeats_done + 1)) != 0) {
		json_decref(iv);
		return CL_ENOMEM;
	}
	int rc = 0;
	/* The checkpoint line: stage first, so `grep` and `jq` find a stage's lines.  It lists
	 * every agent; the row kept in results.json the worst few past CL_RESULTS_AGENTS_KEPT,
	 * so 1,000 agents do not hold 1,800 rows of 1,000 each (docs/results.md). */
	json_t *line = json_pack("{s:o,s:I}", "stage", cli_rj_str(ss->name ? ss->name : ""),
				 "stage_index", (json_int_t)stage);
	if (!line || json_object_update(line, iv) != 0 ||
	    (n && cli_rj_set(line, "agents", agents_health_json(agents, NULL, n)) != 0)) {
		rc = CL_ENOMEM;
		goto out;
	}
	if (n) {
		size_t pick[CL_RESULTS_AGENTS_KEPT];
		size_t k = pick_kept(agents, n, pick);
		if (cli_rj_set(iv, "agents",
			       k == n ? json_incref(json_object_get(line, "agents"))
				      : agents_health_json(agents, pick, k)) != 0 ||
		    (k < n && cli_rj_set(iv, "agents_total", cli_rj_uint(n)) != 0)) {
			rc = CL_ENOMEM;
			goto out;
		}
	}
	if (r->intervals_fp) {
		if (json_dumpf(line, r->intervals_fp, RJ_LINE_FLAGS) != 0 ||
		    fputc('\n', r->intervals_fp) == EOF || fflush(r->intervals_fp) != 0) {
			struct cl_err e;
			cl_err_set(&e, CL_EIO, "cannot write '%s/%s': %s", r->dir,
				   CLI_RS_INTERVALS_JSONL, strerror(errno));
			cli_rs_remember_error(r, &e);
			rc = CL_EIO;
		}
	}
	if (ss->seen % ss->stride == 0) {
		if (json_array_size(ss->intervals) >= CL_RESULTS_MAX_INTERVALS)
			decimate(ss);
		if (ss->seen % ss->stride == 0 && json_array_append(ss->intervals, iv) != 0)
			rc = CL_ENOMEM;
	}
	ss->seen++;
out:
	json_decref(line);
	json_decref(iv);
	return rc;
}

int cl_results_add_stalls(struct cl_results *r, size_t stage, const struct cl_results_stall *s,
			  size_t n, uint64_t unlisted_agent, uint64_t unlisted_coordinator)
{
	if (stage >= r->n_stages || r->stages[stage].finished)
		return CL_EINVAL;
	struct cli_rs_client *c = &r->stages[stage].client;
	if (!c->stalls && !(c->stalls = json_array()))
		return CL_ENOMEM;
	c->stalls_unlisted += unlisted_agent + unlisted_coordinator;
	c->stalls_agent += (uint32_t)(unlisted_agent > UINT32_MAX ? UINT32_MAX : unlisted_agent);
	c->stalls_coordinator +=
	    (uint32_t)(unlisted_coordinator > UINT32_MAX ? UINT32_MAX : unlisted_coordinator);
	for (size_t i = 0; i < n; i++) {
		const char *reason = "stall";
		if (s[i].coordinator_itself) {
			c->stalls_own++;
			reason = "coordinator_stall";
		} else if (s[i].seen_by_coordinator) {
			c->stalls_coordinator++;
			reason = "agent_missing";
		} else {
			c->stalls_agent++;
		}
		if (json_array_size(c->stalls) >= CL_RESULTS_MAX_STALLS) {
			c->stalls_unlisted++;
			continue;
		}
		json_t *o = json_pack(
		    "{s:o,s:o,s:f,s:f,s:s,s:s}", "agent",
		    s[i].coordinator_itself ? json_null() : json_integer((json_int_t)s[i].agent),
		    "host", cli_rj_str(s[i].coordinator_itself ? NULL : s[i].host), "at_s",
		    cli_rj_round(s[i].at_s, 3), "length_s", cli_rj_round(s[i].length_s, 3),
		    "seen_by", s[i].seen_by_coordinator ? "coordinator" : "agent", "reason",
		    reason);
		if (cli_rj_append(c->stalls, o))
			return CL_ENOMEM;
	}
	return 0;
}

/* The document as it stands during a run, for the live report page (chatload run --web):
 * the finished stages, and the running stages' kept intervals so far. */
json_t *cl_results_live_doc(const struct cl_results *r)
{
	/* Shallow copies: the page only reads the document, so this one shares every value
	 * with r->doc but has its own stages array, where the running stages go.  A deep copy
	 * at every refresh of the page copied every finished stage's kept intervals too. */
	json_t *doc = json_copy(r->doc);
	json_t *stages = json_copy(json_object_get(r->doc, "stages"));
	if (!doc || !json_is_array(stages)) {
		json_decref(stages);
		json_decref(doc);
		return NULL;
	}
	if (json_object_set_new(doc, "stages", stages) != 0) { /* it releases stages */
		json_decref(doc);
		return NULL;
	}
	for (size_t i = 0; i < r->n_stages; i++) {
		const struct stage_state *ss = &r->stages[i];
		if (ss->finished || ss->seen == 0 || !ss->intervals)
			continue;
		/* Only what is known mid-stage: the totals come when it finishes. */
		json_t *o = json_pack("{s:I,s:o,s:s,s:O,s:I,s:I}", "index", (json_int_t)i, "name",
				      cli_rj_str(ss->name), "status", "running", "intervals",
				      ss->intervals, "intervals_stride", (json_int_t)ss->stride,
				      "intervals_total", (json_int_t)ss->seen);
		if (cli_rs_insert_stage(stages, i, o) != 0) {
			json_decref(doc);
			return NULL;
		}
	}
	return doc;
}
