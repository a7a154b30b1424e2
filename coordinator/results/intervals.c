/* A stage's intervals as they come: the client figures each one feeds (CPU, drift, the
 * batch means of ci95, the abort window), its line in intervals.jsonl, its summary kept in
 * results.json (every other one dropped when the cap is reached) with the agents' health,
 * and the stage's stall episodes. */
#include "results/results.h"
#include "results/internal.h"
#include "results/verdict.h"

#include "chatload/err.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Halves the kept intervals (every other one stays) and doubles the stride. */
static int decimate(struct stage_state *ss)
{
	json_t *kept = json_array();
	if (!kept)
		return CL_ENOMEM;
	for (size_t i = 0; i < json_array_size(ss->intervals); i += 2) {
		if (json_array_append(kept, json_array_get(ss->intervals, i)) != 0) {
			json_decref(kept);
			return CL_ENOMEM;
		}
	}
	json_decref(ss->intervals);
	ss->intervals = kept;
	ss->stride *= 2;
	return 0;
}

int cl_results_add_interval(struct cl_results *r, size_t stage, double t_s,
			    const struct cl_metrics *interval, double interval_s)
{
	return cl_results_add_interval_agents(r, stage, t_s, interval, interval_s, NULL, 0);
}

/* The interval's `agents` array: each agent's health.  NULL when out of memory. */
static json_t *agents_health_json(const struct cl_results_agent_health *a, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		json_t *o = json_pack(
		    "{s:I,s:o,s:o,s:o}", "agent", (json_int_t)a[i].agent, "cpu_pct",
		    isfinite(a[i].cpu_pct) ? json_real(cli_rj_round(a[i].cpu_pct, 1)) : json_null(),
		    "loop_lag_p99_ms",
		    isfinite(a[i].loop_lag_p99_ms)
			? json_real(cli_rj_round(a[i].loop_lag_p99_ms, 3))
			: json_null(),
		    "dispatch_lag_p99_ms",
		    isfinite(a[i].dispatch_lag_p99_ms)
			? json_real(cli_rj_round(a[i].dispatch_lag_p99_ms, 3))
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
	if (n && cli_rj_set(iv, "agents", agents_health_json(agents, n)) != 0) {
		json_decref(iv);
		return CL_ENOMEM;
	}
	int rc = 0;
	/* The checkpoint line: stage first, so `grep` and `jq` find a stage's lines. */
	json_t *line = json_pack("{s:o,s:I}", "stage", cli_rj_str(ss->name ? ss->name : ""),
				 "stage_index", (json_int_t)stage);
	if (!line || json_object_update(line, iv) != 0) {
		rc = CL_ENOMEM;
		goto out;
	}
	if (r->intervals_fp) {
		if (json_dumpf(line, r->intervals_fp, RJ_LINE_FLAGS) != 0 ||
		    fputc('\n', r->intervals_fp) == EOF || fflush(r->intervals_fp) != 0) {
			struct cl_err e;
			cl_err_set(&e, CL_EIO, "cannot write '%s/%s': %s", r->dir, CLI_RS_INTERVALS_JSONL,
				   strerror(errno));
			cli_rs_remember_error(r, &e);
			rc = CL_EIO;
		}
	}
	if (ss->seen % ss->stride == 0) {
		if (json_array_size(ss->intervals) >= CL_RESULTS_MAX_INTERVALS) {
			int drc = decimate(ss);
			if (drc != 0) {
				rc = drc;
				goto out;
			}
		}
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
