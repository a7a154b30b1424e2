/* The scenario keys of chatload's two long jobs: the capacity search stage (`search:`) and
 * `plan:`, and the soak guards in `slo:` (abort_on_breach with a window, max_drift). */
#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define SEC  1000000LL
#define DAY  (86400LL * SEC)

/* ---- search ---- */

/* The search mapping as written; the levels wait for `over` to be known. */
struct search_spec {
	int over;
	const struct ynode *from, *max, *tolerance, *slo;
	int64_t probe_duration_us;
	int64_t max_probe_duration_us;
	int64_t ramp_us;
	int arrival;
	double burstiness;
	uint32_t max_concurrency;
};

static void keep_node(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	(void)c;
	*(const struct ynode **)obj = v;
}

static void conv_over(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "concurrency", "rate" };
	cli_scn_get_enum(c, v, names, N(names), obj);
}

static void conv_search_arrival(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "constant", "poisson", "gamma" };
	cli_scn_get_enum(c, v, names, N(names), obj);
}

enum {
	Q_OVER,
	Q_FROM,
	Q_MAX,
	Q_TOL,
	Q_DUR,
	Q_RAMP,
	Q_ARRIVAL,
	Q_BURST,
	Q_MAXC,
	Q_SLO,
	Q_MAXDUR,
	Q__COUNT
};

static const struct scn_field search_fields[Q__COUNT] = {
	[Q_OVER] = SCN_CUSTOM_AT("over", struct search_spec, over, conv_over),
	[Q_FROM] = SCN_CUSTOM_AT("from", struct search_spec, from, keep_node),
	[Q_MAX] = SCN_CUSTOM_AT("max", struct search_spec, max, keep_node),
	[Q_TOL] = SCN_CUSTOM_AT("tolerance", struct search_spec, tolerance, keep_node),
	[Q_DUR] = SCN_RANGE("probe_duration", SCN_F_DUR, struct search_spec, probe_duration_us, 1,
			    100 * DAY),
	[Q_RAMP] = SCN_RANGE("ramp", SCN_F_DUR, struct search_spec, ramp_us, 0, 100 * DAY),
	[Q_ARRIVAL] = SCN_CUSTOM_AT("arrival", struct search_spec, arrival, conv_search_arrival),
	[Q_BURST] = SCN_DRANGE("burstiness", struct search_spec, burstiness, 1e-3, 1000),
	[Q_MAXC] = SCN_RANGE("max_concurrency", SCN_F_U32, struct search_spec, max_concurrency, 1,
			     CL_PLAN_CONCURRENCY_MAX),
	[Q_SLO] = SCN_CUSTOM_AT("slo", struct search_spec, slo, keep_node),
	[Q_MAXDUR] = SCN_RANGE("max_probe_duration", SCN_F_DUR, struct search_spec,
			       max_probe_duration_us, 1, 100 * DAY),
};

/* One level of the search's kind at search.<key>: streams or a rate.  0, or -1 (reported). */
static int get_level(struct scn_ctx *c, const struct ynode *v, const char *key, bool rate,
		     double *out)
{
	size_t mark = cli_scn_path_key(c, key);
	int rc;
	if (rate) {
		rc = cli_scn_get_rate(c, v, out);
	} else {
		uint32_t n = 0;
		rc = cli_scn_get_u32(c, v, 1, CL_PLAN_CONCURRENCY_MAX, &n);
		*out = n;
	}
	cli_scn_path_pop(c, mark);
	return rc;
}

/* tolerance: a percentage of the upper bracket, or an absolute level of the search's kind. */
static int get_tolerance(struct scn_ctx *c, const struct ynode *v, bool rate,
			 struct cl_scn_search *q)
{
	if (v && v->kind == YN_SCALAR && v->len && v->str[v->len - 1] == '%') {
		size_t mark = cli_scn_path_key(c, "tolerance");
		int rc = cli_scn_get_percent(c, v, &q->tolerance);
		if (rc == 0 && (q->tolerance <= 0 || q->tolerance >= 1)) {
			cli_scn_error(c, v, "%s must be more than 0%% and less than 100%%",
				      cli_scn_path(c));
			rc = -1;
		}
		cli_scn_path_pop(c, mark);
		q->tolerance_relative = true;
		return rc;
	}
	return get_level(c, v, "tolerance", rate, &q->tolerance);
}

/* Builds the search from its spec; false after reporting a problem. */
static bool search_build(struct scn_ctx *c, const struct ynode *at, const struct search_spec *sp,
			 const struct ynode **seen, struct cl_scn_search *q)
{
	size_t before = c->n_errors;
	const char *p = cli_scn_path(c);
	if (!seen[Q_OVER]) {
		cli_scn_error(c, at, "%s needs over: concurrency or over: rate", p);
		return false;
	}
	bool rate = sp->over == 1;
	q->over = rate ? CL_MODE_RATE : CL_MODE_CONCURRENCY;
	q->from = 1;
	q->tolerance = rate ? 0.05 : 1;
	q->tolerance_relative = rate;
	q->probe_duration_us = seen[Q_DUR] ? sp->probe_duration_us : 30 * SEC;
	q->max_probe_duration_us =
	    seen[Q_MAXDUR] ? sp->max_probe_duration_us : 4 * q->probe_duration_us;
	if (seen[Q_MAXDUR] && q->max_probe_duration_us < q->probe_duration_us)
		cli_scn_error(c, seen[Q_MAXDUR],
			      "%s.max_probe_duration must be at least probe_duration (a probe "
			      "short of samples runs on from probe_duration up to it)",
			      p);
	q->ramp_us = sp->ramp_us;
	q->arrival = seen[Q_ARRIVAL] ? (enum cl_arrival)sp->arrival
		     : seen[Q_BURST] ? CL_ARRIVAL_GAMMA
				     : CL_ARRIVAL_POISSON;
	q->gamma_shape = seen[Q_BURST] ? sp->burstiness : 1.0;
	q->max_concurrency = sp->max_concurrency;
	if (sp->from)
		get_level(c, sp->from, "from", rate, &q->from);
	if (!sp->max)
		cli_scn_error(c, at, "%s needs max: the highest level to probe (e.g. max: %s)", p,
			      rate ? "200/s" : "256");
	else
		get_level(c, sp->max, "max", rate, &q->max);
	if (sp->tolerance)
		get_tolerance(c, sp->tolerance, rate, q);
	if (!rate) {
		static const int rate_only[] = { Q_ARRIVAL, Q_BURST, Q_MAXC };
		for (size_t i = 0; i < N(rate_only); i++)
			if (seen[rate_only[i]])
				cli_scn_error(c, seen[rate_only[i]],
					      "%s.%s only applies to over: rate", p,
					      search_fields[rate_only[i]].name);
	}
	if (seen[Q_BURST] && seen[Q_ARRIVAL] && q->arrival != CL_ARRIVAL_GAMMA)
		cli_scn_error(c, seen[Q_BURST], "%s.burstiness needs arrival: gamma", p);
	if (c->n_errors == before && sp->max && q->from > q->max)
		cli_scn_error(c, sp->max, "%s.max (%g) is below search.from (%g)", p, q->max,
			      q->from);
	if (seen[Q_RAMP] && q->ramp_us >= q->probe_duration_us)
		cli_scn_error(c, seen[Q_RAMP],
			      "%s.ramp must be shorter than probe_duration (the probe measures "
			      "after its ramp)",
			      p);
	if (sp->slo) {
		size_t mark = cli_scn_path_key(c, "slo");
		cli_scn_take_slos(c, sp->slo, &q->slos, &q->n_slos);
		cli_scn_path_pop(c, mark);
		if (!q->n_slos && !cli_ynode_is_null(sp->slo) && c->n_errors == before)
			cli_scn_error(c, sp->slo, "%s.slo has no SLO (e.g. ttft_p99: 1s)", p);
	}
	return c->n_errors == before;
}

static void conv_search(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_search **out = obj;
	struct search_spec sp = { 0 };
	const struct ynode *seen[Q__COUNT] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { over: concurrency, max: 64, "
			      "probe_duration: 30s }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, search_fields, Q__COUNT, &sp, seen, NULL);
	struct cl_scn_search *q = calloc(1, sizeof(*q));
	if (!q) {
		c->oom = true;
		return;
	}
	if (!search_build(c, v, &sp, seen, q)) {
		cl_scenario_search_free(q);
		return;
	}
	*out = q;
}

struct search_entry {
	char *name;
	struct cl_scn_search *search;
};

static const struct scn_field search_entry_fields[] = {
	SCN_FIELD("name", SCN_F_NESTR, struct search_entry, name),
	SCN_CUSTOM_AT("search", struct search_entry, search, conv_search),
};

/* Keys that make sense on an ordinary stage but not beside search: */
static void refuse_stage_key(struct scn_ctx *c, const struct ynode *k, const struct ynode *v,
			     bool merged, void *arg)
{
	(void)v;
	(void)merged;
	(void)arg;
	if (k->kind != YN_SCALAR || strcmp(k->str, "name") == 0 || strcmp(k->str, "search") == 0)
		return;
	if (strcmp(k->str, "repeat") == 0) {
		cli_scn_error(
		    c, k,
		    "%s.repeat: a search stage cannot repeat (each run of it chooses its own "
		    "probes; repeat the stages at the level it found instead)",
		    cli_scn_path(c));
		return;
	}
	static const char *const inside[] = { "concurrency", "rate",     "duration",
					      "ramp",        "arrival",  "burstiness",
					      "gamma_shape", "requests", "max_concurrency" };
	for (size_t i = 0; i < N(inside); i++) {
		if (strcmp(k->str, inside[i]) == 0) {
			cli_scn_error(
			    c, k,
			    "%s: a search stage chooses its own levels; '%s' is not "
			    "allowed beside search (probe settings go inside it: over, "
			    "from, max, probe_duration, max_probe_duration, ramp, arrival, "
			    "max_concurrency)",
			    cli_scn_path(c), k->str);
			return;
		}
	}
}

bool cli_scn_is_search_entry(struct scn_ctx *c, const struct ynode *entry)
{
	(void)c;
	if (!entry || entry->kind != YN_MAP)
		return false;
	for (size_t i = 0; i + 1 < entry->n; i += 2)
		if (entry->kids[i]->kind == YN_SCALAR && strcmp(entry->kids[i]->str, "search") == 0)
			return true;
	return false;
}

void cli_scn_conv_search_stage(struct scn_ctx *c, const struct ynode *entry)
{
	struct scn_loader *l = L(c);
	struct cl_scenario *s = l->s;
	struct search_entry e = { 0 };
	const struct ynode *seen[N(search_entry_fields)] = { 0 };
	size_t before = c->n_errors;
	cli_scn_map_each(c, entry, refuse_stage_key, NULL);
	if (c->n_errors != before)
		return;
	cli_scn_fields(c, entry, search_entry_fields, N(search_entry_fields), &e, seen, NULL);
	if (c->n_errors != before || c->oom || !e.search) {
		free(e.name);
		cl_scenario_search_free(e.search);
		return;
	}
	if (s->n_stages >= SCN_MAX_STAGES) {
		cli_scn_error(c, entry, "more than %d stages after expanding sweeps",
			      SCN_MAX_STAGES);
		free(e.name);
		cl_scenario_search_free(e.search);
		return;
	}
	struct cl_scn_stage st;
	cli_scenario_stage_defaults(&st);
	st.mode = e.search->over;
	st.duration_us = e.search->probe_duration_us;
	st.ramp_us = e.search->ramp_us;
	st.arrival = e.search->arrival;
	st.gamma_shape = e.search->gamma_shape;
	st.line = entry->line;
	st.search = e.search;
	st.name = e.name ? e.name : strdup("search");
	if (!st.name || cl_scenario_insert_stage(s, s->n_stages, &st) != 0) {
		c->oom = true;
		free(st.name);
		cl_scenario_search_free(e.search);
		return;
	}
	l->cap_stages = s->n_stages;
	l->stage_nodes[s->n_stages - 1] = seen[0] ? seen[0] : entry;
}

/* The checks a search needs from the rest of the scenario: one search at most, SLOs to
 * judge probes by (the top-level ones that apply to every stage when search.slo is not
 * given), probe names that cannot collide, and references that cannot point at it. */
void cli_scn_check_search(struct scn_ctx *c, const struct ynode *plan_at)
{
	struct scn_loader *l = L(c);
	struct cl_scenario *s = l->s;
	size_t n = s->n_stages < SCN_MAX_STAGES ? s->n_stages : SCN_MAX_STAGES;
	long found = -1;
	for (size_t i = 0; i < n; i++) {
		struct cl_scn_search *q = s->stages[i].search;
		if (!q)
			continue;
		if (found >= 0) {
			cli_scn_error(c, l->stage_nodes[i],
				      "stages[%zu]: a scenario has one search stage (results.json "
				      "holds one capacity answer); the other is at line %d",
				      i, s->stages[found].line);
			continue;
		}
		found = (long)i;
		if (!q->n_slos) {
			for (size_t k = 0; k < s->n_slos && k < SCN_MAX_SLOS; k++)
				if (!s->slos[k].stage)
					q->n_slos++;
			if (q->n_slos && !(q->slos = calloc(q->n_slos, sizeof(*q->slos)))) {
				c->oom = true;
				return;
			}
			size_t o = 0;
			for (size_t k = 0; k < s->n_slos && k < SCN_MAX_SLOS && q->slos; k++) {
				if (s->slos[k].stage)
					continue;
				q->slos[o] = s->slos[k];
				q->slos[o].stage = NULL;
				if (!(q->slos[o++].key = strdup(s->slos[k].key)))
					c->oom = true;
			}
		}
		if (!q->n_slos)
			cli_scn_error(c, l->stage_nodes[i],
				      "search stage '%s' has no SLO to judge its probes by: give "
				      "search.slo (e.g. { ttft_p99: 1s, error_rate: 1%% }) or a "
				      "top-level slo for every stage",
				      s->stages[i].name);
		size_t len = strlen(s->stages[i].name);
		for (size_t k = 0; k < n; k++) {
			const char *other = s->stages[k].name;
			if (k != i && strncmp(other, s->stages[i].name, len) == 0 &&
			    other[len] == '-')
				cli_scn_error(c, l->stage_nodes[k],
					      "stage name '%s' could collide with the probes of "
					      "search '%s' (named %s-c8, %s-r20, ...); rename one",
					      other, s->stages[i].name, s->stages[i].name,
					      s->stages[i].name);
		}
		for (size_t k = 0; k < s->n_slos && k < SCN_MAX_SLOS; k++)
			if (s->slos[k].stage && strcmp(s->slos[k].stage, s->stages[i].name) == 0)
				cli_scn_error(c, l->slo_stage_nodes[k],
					      "slo.stage '%s' names a search stage: give a "
					      "search's SLOs in its search.slo",
					      s->slos[k].stage);
		if (s->estimate.from_stage &&
		    strcmp(s->estimate.from_stage, s->stages[i].name) == 0)
			cli_scn_error(c, l->from_stage,
				      "estimate.from_stage '%s' names a search stage, which is "
				      "not a load level; name an ordinary stage",
				      s->estimate.from_stage);
	}
	if (plan_at && found < 0)
		cli_scn_error(c, plan_at,
			      "plan needs a search stage (stages: [ { search: { over: "
			      "concurrency, max: 64 } } ]): it plans from the sustainable level "
			      "the search finds");
}

/* ---- plan ---- */

static const struct scn_field plan_fields[] = {
	SCN_DRANGE("requests_per_s", struct cl_scn_plan, requests_per_s, 1e-6, 1e12),
	SCN_DRANGE("output_tokens_per_s", struct cl_scn_plan, output_tokens_per_s, 1e-6, 1e15),
};

void cli_scn_conv_plan(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_plan *p = &((struct cl_scenario *)obj)->plan;
	const struct ynode *seen[N(plan_fields)] = { 0 };
	cli_scn_fields(c, v, plan_fields, N(plan_fields), p, seen, NULL);
	if (!v || v->kind != YN_MAP)
		return;
	if (seen[0] && seen[1])
		cli_scn_error(c, seen[1],
			      "plan: give requests_per_s or output_tokens_per_s, not both");
	else if (!seen[0] && !seen[1])
		cli_scn_error(c, v,
			      "plan needs the load to plan for: requests_per_s (e.g. 500) or "
			      "output_tokens_per_s (e.g. 50000)");
}

/* ---- cost ---- */

static const struct scn_field cost_fields[] = {
	SCN_DRANGE("per_hour", struct cl_scn_cost, per_hour, 1e-9, 1e9),
	SCN_RANGE("gpus", SCN_F_U32, struct cl_scn_cost, gpus, 1, 1000000),
	SCN_RANGE("servers", SCN_F_U32, struct cl_scn_cost, servers, 1, 1000000),
	SCN_FIELD("currency", SCN_F_NESTR, struct cl_scn_cost, currency),
};

void cli_scn_conv_cost(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_cost *k = &((struct cl_scenario *)obj)->cost;
	const struct ynode *seen[N(cost_fields)] = { 0 };
	cli_scn_fields(c, v, cost_fields, N(cost_fields), k, seen, NULL);
	if (v && v->kind == YN_MAP && !seen[0])
		cli_scn_error(c, v,
			      "cost needs per_hour: what one server (or with gpus: one GPU) costs "
			      "an hour (e.g. { per_hour: 2.50, gpus: 8 })");
}

/* ---- slo.abort_on_breach, slo.max_drift ---- */

void cli_scn_conv_abort(struct scn_ctx *c, const struct ynode *v)
{
	struct cl_scenario *s = L(c)->s;
	if (v && v->kind == YN_MAP) {
		static const struct scn_field f[] = { SCN_RANGE(
		    "intervals", SCN_F_U32, struct cl_scenario, slo_abort_intervals, 1, 1000000) };
		const struct ynode *seen[1] = { 0 };
		cli_scn_fields(c, v, f, 1, s, seen, NULL);
		/* The window alone: a stage whose totals breached, but never N intervals in a
		 * row, does not stop the run (that is what `true` asks for). */
		if (!seen[0])
			cli_scn_error(c, v,
				      "%s needs intervals: how many consecutive report intervals "
				      "must breach an SLO (e.g. { intervals: 3 })",
				      cli_scn_path(c));
		return;
	}
	cli_scn_get_bool(c, v, &s->slo_abort_on_breach);
}

/* A drift limit: a percentage. */
static void conv_rel(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	double x;
	if (cli_scn_get_percent(c, v, &x) == 0)
		*(double *)obj = x;
}

static const struct scn_field drift_fields[] = {
	SCN_RANGE("window", SCN_F_DUR, struct cl_scn_drift, window_us, 1, 100 * DAY),
	SCN_CUSTOM_AT("ttft_p99", struct cl_scn_drift, ttft_p99, conv_rel),
	SCN_CUSTOM_AT("itl_p99", struct cl_scn_drift, itl_p99, conv_rel),
	SCN_CUSTOM_AT("output_tokens_per_s", struct cl_scn_drift, output_tokens_per_s, conv_rel),
	SCN_CUSTOM_AT("error_rate", struct cl_scn_drift, error_rate, conv_rel),
};

void cli_scn_conv_drift(struct scn_ctx *c, const struct ynode *v)
{
	struct cl_scn_drift *d = &L(c)->s->drift;
	if (d->set) {
		cli_scn_error(c, v, "%s is given twice", cli_scn_path(c));
		return;
	}
	d->set = true;
	if (v && v->kind == YN_SCALAR && !cli_ynode_is_null(v)) {
		/* max_drift: 20% = TTFT p99, ITL p99 and output tokens/s, each by 20% */
		double x;
		if (cli_scn_get_percent(c, v, &x) == 0)
			d->ttft_p99 = d->itl_p99 = d->output_tokens_per_s = x;
		return;
	}
	const struct ynode *seen[N(drift_fields)] = { 0 };
	cli_scn_fields(c, v, drift_fields, N(drift_fields), d, seen, NULL);
	bool any = false;
	for (size_t i = 1; i < N(drift_fields); i++)
		any |= seen[i] != NULL;
	if (!any)
		cli_scn_error(c, v,
			      "%s needs a limit: a percentage (max_drift: 20%%) or a mapping of "
			      "ttft_p99, itl_p99, output_tokens_per_s, error_rate",
			      cli_scn_path(c));
}
