/* A stage finished into the document: its SLO checks, its object assembled from the stage's
 * figures with images, endpoints, classes, drift or probe, ci95, intervals, server, energy and
 * cost, inserted in scenario order; a repeated stage's repeats pooled into it first. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Evaluates every SLO that applies to the finished stage (metrics are at hand only now). */
json_t *cli_rs_checks(const struct cl_scn_slo *slos, size_t n, const char *name,
		      const struct cl_metrics *m, double window_s)
{
	json_t *checks = json_array();
	for (size_t i = 0; checks && i < n; i++) {
		const struct cl_scn_slo *slo = &slos[i];
		if (!cl_verdict_applies(slo, name))
			continue;
		bool has_data;
		double v = cl_verdict_measure(slo, m, window_s, &has_data);
		bool pass = cl_verdict_passes(slo, v, has_data);
		double shown = cl_verdict_to_unit(slo, v);
		json_t *c = json_pack("{s:o,s:o,s:f,s:o,s:s,s:b,s:o}", "slo", cli_rj_str(slo->key),
				      "stage", cli_rj_str(name), "limit",
				      cl_verdict_to_unit(slo, slo->limit), "measured",
				      has_data ? cli_rj_real(cli_rj_sig(shown, 9)) : json_null(),
				      "unit", cl_verdict_unit(slo), "pass", pass, "note",
				      has_data ? json_null() : json_string("no data"));
		if (cli_rj_append(checks, c)) {
			json_decref(checks);
			checks = NULL;
		}
	}
	return checks;
}

/* Finishes stage `stage` from cumulative: its object, checks, drift, ci95, into the document.
 * A repeated stage passes its pooled metrics and ss->repeats (n > 0): ci95 is then the
 * interval across the repeats, and the object lists them. */
static int finish_stage_obj(struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			    const struct cl_metrics *cumulative, double window_s,
			    enum cl_stage_status status, const char *reason)
{
	struct stage_state *ss = &r->stages[stage];
	size_t n_rep = json_array_size(ss->repeats);
	json_t *o =
	    cli_rs_stage_json(stage, st, cumulative, window_s, status, reason, &ss->client, r->api);
	/* workload.images: what they cost in prompt tokens, beside the text's estimate. */
	json_t *images = o ? cli_rs_images_json(json_object_get(r->doc, "workload"), o) : NULL;
	if (images && cli_rj_set(o, "images", images)) {
		json_decref(o);
		o = NULL;
	}
	/* several endpoints (target.urls): each one's share of the stage */
	const json_t *urls =
	    json_object_get(json_object_get(json_object_get(r->doc, "scenario"), "target"), "urls");
	if (o && cumulative->n_eps &&
	    cli_rj_set(o, "endpoints", cli_rs_endpoints_json(cumulative, urls, window_s))) {
		json_decref(o);
		o = NULL;
	}
	if (o && n_rep &&
	    (cli_rj_set(o, "repeat", json_integer((json_int_t)ss->repeat_n)) ||
	     json_object_set(o, "repeats", ss->repeats) != 0)) {
		json_decref(o);
		o = NULL;
	}
	/* A probe's breaches are its search's answer, not the run's: its checks live in its
	 * `probe` object; an ordinary stage's feed the verdict, drift checks included. */
	json_t *checks = ss->probe
			     ? json_array()
			     : cli_rs_checks(r->slos, r->n_slos, st->name, cumulative, window_s);
	/* workload.classes: each class's figures and its own SLOs, whose checks join the
	 * stage's (a probe's stay out of the verdict, as its stage's do) */
	json_t *class_checks = json_array();
	json_t *classes =
	    o && cumulative->n_cls && class_checks
		? cli_rs_classes_json(r, st->name, cumulative, window_s, class_checks, ss->server)
		: NULL;
	if (o && cumulative->n_cls && (!classes || cli_rj_set(o, "classes", classes))) {
		json_decref(o);
		o = NULL;
	}
	if (checks && !ss->probe && class_checks && json_array_extend(checks, class_checks) != 0) {
		json_decref(checks);
		checks = NULL;
	}
	json_decref(class_checks);
	json_t *extra = ss->probe ? cli_rs_probe_json(ss, cumulative, window_s)
				  : cli_rs_drift_json(ss->drift, &r->drift, st->name, checks);
	cli_rs_drift_free(ss->drift);
	ss->drift = NULL;
	json_t *ci = NULL;
	if (o && n_rep) {
		const json_t *reps[CL_RESULTS_MAX_REPEATS];
		for (size_t i = 0; i < n_rep && i < CL_RESULTS_MAX_REPEATS; i++)
			reps[i] = json_array_get(ss->repeats, i);
		ci = cli_rs_ci_repeats_json(
		    o, reps, n_rep < CL_RESULTS_MAX_REPEATS ? n_rep : CL_RESULTS_MAX_REPEATS,
		    ss->reps, cumulative);
	} else if (o) {
		ci = cli_rs_ci_json(ss->ci, o, cumulative);
	}
	cli_rs_ci_free(ss->ci);
	ss->ci = NULL;
	cli_rs_ci_reps_free(ss->reps);
	ss->reps = NULL;
	if (!o)
		json_decref(extra);
	if (o && cli_rj_set(o, "ci95", ci)) { /* takes ci, even on failure */
		json_decref(o);
		json_decref(extra);
		o = NULL;
	}
	if (!o || !checks || cli_rj_set(o, ss->probe ? "probe" : "drift", extra) ||
	    cli_rj_set(o, "intervals_stride", json_integer((json_int_t)ss->stride)) ||
	    cli_rj_set(o, "intervals_total", cli_rj_uint(ss->seen)) ||
	    json_object_set(o, "intervals", ss->intervals) != 0 ||
	    (ss->server && json_object_set(o, "server", ss->server) != 0)) {
		json_decref(o);
		json_decref(checks);
		return CL_ENOMEM;
	}
	/* Joules and money, from the figures just set (docs/results.md, "Joules and money"). */
	json_t *energy = cli_rs_energy_json(o);
	json_t *cost = cli_rs_cost_json(r->cost_per_hour, r->cost_currency, o);
	bool bad = energy && cli_rj_set(o, "energy", energy);
	bad = (cost && cli_rj_set(o, "cost", cost)) || bad; /* cli_rj_set takes v either way */
	if (bad) {
		json_decref(o);
		json_decref(checks);
		return CL_ENOMEM;
	}
	/* Keep the document's stages in scenario order whatever order they finish in. */
	if (cli_rs_insert_stage(json_object_get(r->doc, "stages"), stage, o) != 0) {
		json_decref(checks);
		return CL_ENOMEM;
	}
	ss->finished = true;
	ss->checks = checks;
	if (cli_rs_fit_finished_intervals(r) != 0)
		return CL_ENOMEM;
	return cli_rs_write(r);
}

/* What finishing a stage or a repeat may be given: CL_EINVAL for a stage out of range, an
 * unknown status or a window that is no duration; CL_ESTATE once the stage or the document is
 * finished; else 0. */
static int check_finish(const struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			double window_s, enum cl_stage_status status)
{
	bool known = cl_stage_status_name(status) != NULL;
	if (stage >= r->n_stages || !known || !st || !isfinite(window_s) || window_s < 0)
		return CL_EINVAL;
	if (r->stages[stage].finished || r->finished)
		return CL_ESTATE;
	return 0;
}

int cl_results_finish_stage(struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			    const struct cl_metrics *cumulative, double window_s,
			    enum cl_stage_status status, const char *reason)
{
	int rc = check_finish(r, stage, st, window_s, status);
	return rc ? rc : finish_stage_obj(r, stage, st, cumulative, window_s, status, reason);
}

/* One repeat's own object: the stage's figures and its batch-means ci95, without the
 * histograms (the pooled stage has them) or anything the pooled stage says for all. */
static json_t *repeat_json(struct stage_state *ss, size_t stage, const struct cl_scn_stage *st,
			   const struct cl_metrics *m, double window_s, enum cl_stage_status status,
			   const char *reason, enum cl_api api)
{
	json_t *o = cli_rs_stage_json(stage, st, m, window_s, status, reason, &ss->client, api);
	json_t *ci = o ? cli_rs_ci_json(ss->ci, o, m) : NULL;
	if (!o || cli_rj_set(o, "ci95", ci) ||
	    cli_rj_set(o, "repeat", json_integer((json_int_t)ss->repeats_done + 1))) {
		json_decref(o);
		return NULL;
	}
	/* The client's health accumulates over the repeats (its stalls, CPU maxima): it is the
	 * pooled stage's to say, not one repeat's. */
	static const char *const drop[] = { "histograms", "index",           "name",
					    "mode",       "concurrency",     "rate",
					    "arrival",    "planned",         "unaccounted",
					    "client",     "tokens_per_chunk" };
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		json_object_del(o, drop[i]);
	return o;
}

int cl_results_finish_repeat(struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			     const struct cl_metrics *cumulative, double window_s,
			     enum cl_stage_status status, const char *reason)
{
	int rc = check_finish(r, stage, st, window_s, status);
	if (rc != 0)
		return rc;
	struct stage_state *ss = &r->stages[stage];
	if (ss->repeat_n <= 1 || ss->probe)
		return finish_stage_obj(r, stage, st, cumulative, window_s, status, reason);
	if (!ss->repeats && !(ss->repeats = json_array()))
		return CL_ENOMEM;
	if (!ss->pooled) {
		ss->pooled = calloc(1, sizeof(*ss->pooled));
		if (!ss->pooled || cl_metrics_init(ss->pooled) != 0)
			return CL_ENOMEM; /* freed with the stage state */
	}
	if (!ss->reps && !(ss->reps = cli_rs_ci_reps_new()))
		return CL_ENOMEM;
	if (cli_rs_ci_reps_add(ss->reps, window_s, cumulative) != 0)
		return CL_ENOMEM;
	json_t *o = repeat_json(ss, stage, st, cumulative, window_s, status, reason, r->api);
	cli_rs_ci_free(ss->ci);
	ss->ci = NULL;
	if (cli_rj_append(ss->repeats, o) || cl_metrics_merge(ss->pooled, cumulative) != 0)
		return CL_ENOMEM;
	ss->pooled_window_s += window_s;
	/* The pooled stage is as sound as its worst repeat: the first that was not ok says
	 * why. */
	if (status != CL_STAGE_OK && ss->pooled_status == CL_STAGE_OK) {
		char why[1600];
		snprintf(why, sizeof(why), "repeat %u: %s", ss->repeats_done + 1,
			 reason ? reason : cl_stage_status_name(status));
		ss->pooled_status = status;
		free(ss->pooled_reason);
		ss->pooled_reason = strdup(why);
	}
	ss->repeats_done++;
	if (ss->repeats_done < ss->repeat_n)
		return 0;
	return finish_stage_obj(r, stage, st, ss->pooled, ss->pooled_window_s, ss->pooled_status,
				ss->pooled_reason);
}

int cl_results_end_repeats(struct cl_results *r, size_t stage, const struct cl_scn_stage *st)
{
	if (stage >= r->n_stages || !st)
		return CL_EINVAL;
	struct stage_state *ss = &r->stages[stage];
	if (ss->finished || r->finished || ss->repeats_done == 0 || !ss->pooled)
		return 0;
	char why[1700];
	snprintf(why, sizeof(why), "%u of %u repeats ran%s%s", ss->repeats_done, ss->repeat_n,
		 ss->pooled_reason ? "; " : "", ss->pooled_reason ? ss->pooled_reason : "");
	return finish_stage_obj(r, stage, st, ss->pooled, ss->pooled_window_s, ss->pooled_status,
				why);
}

int cl_results_set_generate(struct cl_results *r, size_t stage, json_t *block)
{
	json_t *st = (json_t *)cl_results_stage(r, stage);
	if (!st || !block) {
		json_decref(block);
		return block ? CL_EINVAL : CL_ENOMEM;
	}
	if (json_object_set_new(st, "mode", json_string("generate")) != 0 ||
	    json_object_set_new(st, "generate", block) != 0)
		return CL_ENOMEM;
	return cli_rs_write(r);
}
