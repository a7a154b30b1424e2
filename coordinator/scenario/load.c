/* The scenario loader's entry points: file or text -> YAML tree -> overrides -> sections, then
 * the checks across sections (target, agents, stage names, SLO and estimate references). */
#include "scenario/scenario.h"

#include "chatload/buf.h"
#include "chatload/metrics.h"
#include "chatload/units.h"

#include "scenario/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- slo ---- */

/* SLO-able latency metrics: all but the client's own loop lag. */
static int slo_metric(const char *name)
{
	int m = cl_lat_from_name(name);
	return m == CL_LAT_LOOP_LAG ? -1 : m;
}

/* The metrics an SLO may name, most used first (so a typo's suggestion favours them). */
static void slo_metric_names(const char **names, size_t *n)
{
	static const int order[] = { CL_LAT_TTFT, CL_LAT_ITL,  CL_LAT_E2E,   CL_LAT_TPOT,
				     CL_LAT_TTFC, CL_LAT_TTFB, CL_LAT_QUEUE, CL_LAT_E2E_SCHED };
	*n = 0;
	for (size_t i = 0; i < N(order); i++)
		names[(*n)++] = cl_lat_name(order[i]);
}

/* "99" -> 99, "999" -> 99.9, "9999" -> 99.99, "5" -> 5, "100" -> 100; -1 if malformed. */
static double parse_pctl(const char *digits)
{
	size_t len = strlen(digits);
	if (len == 0 || len > 6)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (digits[i] < '0' || digits[i] > '9')
			return -1;
	}
	if (strcmp(digits, "100") == 0)
		return 100;
	double v = 0;
	for (size_t i = 0; i < len && i < 2; i++)
		v = v * 10 + (digits[i] - '0');
	double scale = 0.1;
	for (size_t i = 2; i < len; i++, scale /= 10)
		v += (digits[i] - '0') * scale;
	return v > 0 && v <= 100 ? v : -1;
}

static struct cl_scn_slo *slo_new(struct scn_ctx *c, const struct ynode *k)
{
	struct scn_loader *l = L(c);
	struct cl_scenario *s = l->s;
	if (s->n_slos >= SCN_MAX_SLOS) {
		if (s->n_slos++ == SCN_MAX_SLOS)
			cli_scn_error(c, k, "more than %d SLOs", SCN_MAX_SLOS);
		return NULL;
	}
	if (s->n_slos == l->cap_slos) {
		size_t cap = l->cap_slos ? l->cap_slos * 2 : 8;
		struct cl_scn_slo *p = realloc(s->slos, cap * sizeof(*p));
		const struct ynode **q = realloc(l->slo_stage_nodes, cap * sizeof(*q));
		if (p)
			s->slos = p;
		if (q)
			l->slo_stage_nodes = q;
		if (!p || !q) {
			c->oom = true;
			return NULL;
		}
		l->cap_slos = cap;
	}
	struct cl_scn_slo *o = &s->slos[s->n_slos];
	memset(o, 0, sizeof(*o));
	if (!(o->key = strdup(k->str))) {
		c->oom = true;
		return NULL;
	}
	o->line = k->line;
	l->slo_stage_nodes[s->n_slos] = NULL;
	s->n_slos++;
	return o;
}

struct slo_map {
	size_t first;              /* index of this mapping's first slo */
	bool in_search;            /* search.slo: SLOs only */
	const struct ynode *stage; /* its stage: value */
	const struct ynode *stage_key;
};

static bool slo_seen(struct scn_ctx *c, const struct slo_map *m, const char *key)
{
	struct cl_scenario *s = L(c)->s;
	for (size_t i = m->first; i < s->n_slos && i < SCN_MAX_SLOS; i++) {
		if (strcmp(s->slos[i].key, key) == 0)
			return true;
	}
	return false;
}

static void slo_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v, bool merged,
		     void *argp)
{
	static const char *const fixed[] = { "error_rate",
					     "min_output_tokens_per_s",
					     "min_requests_per_s",
					     "abort_on_breach",
					     "stage",
					     "max_drift" };
	struct slo_map *m = argp;
	char got[96];
	if (k->kind != YN_SCALAR) {
		cli_scn_error(c, k, "keys in %s must be names such as ttft_p99, got %s",
			      cli_scn_path(c), cli_scn_describe(k, got, sizeof(got)));
		return;
	}
	size_t mark = cli_scn_path_key(c, k->str);
	if (m->in_search &&
	    (strcmp(k->str, "stage") == 0 || strcmp(k->str, "abort_on_breach") == 0 ||
	     strcmp(k->str, "max_drift") == 0)) {
		cli_scn_error(c, k,
			      "%s: '%s' is not allowed in search.slo (it holds the SLOs a probe "
			      "must meet; put it in the top-level slo)",
			      cli_scn_path(c), k->str);
		goto out;
	}
	if (strcmp(k->str, "stage") == 0) {
		if (m->stage_key && !merged)
			cli_scn_error(c, k, "duplicate key 'stage' in %s", cli_scn_path(c));
		else if (!m->stage_key && cli_scn_scalar(c, v, "a stage name")) {
			m->stage = v;
			m->stage_key = k;
		}
		goto out;
	}
	if (strcmp(k->str, "abort_on_breach") == 0) {
		cli_scn_conv_abort(c, v);
		goto out;
	}
	if (strcmp(k->str, "max_drift") == 0) {
		cli_scn_conv_drift(c, v);
		goto out;
	}
	if (slo_seen(c, m, k->str)) {
		if (!merged)
			cli_scn_error(c, k, "duplicate SLO '%s'", k->str);
		goto out;
	}

	double x = 0;
	int kind = -1, lat = -1;
	double pctl = 0;
	if (strcmp(k->str, "error_rate") == 0) {
		if (cli_scn_get_percent(c, v, &x) == 0)
			kind = CL_SLO_ERROR_RATE;
	} else if (strcmp(k->str, "min_output_tokens_per_s") == 0 ||
		   strcmp(k->str, "min_requests_per_s") == 0) {
		if (cli_scn_get_double(c, v, 1e-9, 1e308, &x) == 0)
			kind = k->str[4] == 'o' ? CL_SLO_MIN_OUTPUT_TPS : CL_SLO_MIN_REQUEST_RATE;
	} else {
		/* <metric>_p<NN>, <metric>_mean, <metric>_max */
		const char *us = strrchr(k->str, '_');
		const char *names[CL_LAT__COUNT];
		size_t n;
		slo_metric_names(names, &n);
		char metric[64] = "";
		if (us && (size_t)(us - k->str) < sizeof(metric))
			snprintf(metric, sizeof(metric), "%.*s", (int)(us - k->str), k->str);
		const char *stat = us ? us + 1 : "";
		if (slo_metric(k->str) >= 0) {
			cli_scn_error(
			    c, k,
			    "SLO '%s' needs a statistic: write %s_p99 (or %s_p50, %s_mean, "
			    "%s_max)",
			    k->str, k->str, k->str, k->str, k->str);
			goto out;
		}
		if (!us || !metric[0]) {
			const char *all[N(fixed) + 4] = { "ttft_p99", "itl_p99", "e2e_p99",
							  "tpot_mean" };
			memcpy(all + 4, fixed, sizeof(fixed));
			const char *sug = cli_scn_suggest(k->str, all, N(all));
			if (sug)
				cli_scn_error(c, k, "unknown SLO '%s' (did you mean '%s'?)", k->str,
					      sug);
			else
				cli_scn_error(
				    c, k,
				    "unknown SLO '%s' (expected <metric>_p<NN> such as ttft_p99, "
				    "<metric>_mean, error_rate, min_output_tokens_per_s or "
				    "min_requests_per_s)",
				    k->str);
			goto out;
		}
		if ((lat = slo_metric(metric)) < 0) {
			const char *sug = cli_scn_suggest(metric, names, n);
			char list[200] = "";
			size_t o = 0;
			for (size_t i = 0; i < n; i++)
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
						      i ? ", " : "", names[i]);
			if (sug)
				cli_scn_error(
				    c, k,
				    "SLO '%s' is on an unknown metric '%s' (did you mean '%s'?)",
				    k->str, metric, sug);
			else
				cli_scn_error(
				    c, k,
				    "SLO '%s' is on an unknown metric '%s' (latency metrics: %s)",
				    k->str, metric, list);
			goto out;
		}
		if (strcmp(stat, "mean") == 0)
			pctl = -1;
		else if (strcmp(stat, "max") == 0)
			pctl = 100;
		else if (stat[0] != 'p' || (pctl = parse_pctl(stat + 1)) < 0) {
			cli_scn_error(
			    c, k,
			    "SLO '%s': '%s' is not a statistic; write p50, p90, p99, p999 (99.9), "
			    "mean or max",
			    k->str, stat);
			goto out;
		}
		int64_t us_limit;
		if (cli_scn_get_dur(c, v, 1, 0, &us_limit) == 0) {
			kind = CL_SLO_LATENCY;
			x = (double)us_limit;
		}
	}
	if (kind < 0)
		goto out;
	struct cl_scn_slo *o = slo_new(c, k);
	if (o) {
		o->kind = (enum cl_slo_kind)kind;
		o->lat = lat;
		o->percentile = kind == CL_SLO_LATENCY ? pctl : 0;
		o->limit = x;
	}
out:
	cli_scn_path_pop(c, mark);
}

static void slo_one_map(struct scn_ctx *c, const struct ynode *v)
{
	struct scn_loader *l = L(c);
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(
		    c, v, "%s must be a mapping such as { ttft_p99: 2s, error_rate: 1%% }, got %s",
		    cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	struct slo_map m = { .first = l->s->n_slos };
	cli_scn_map_each(c, v, slo_pair, &m);
	if (!m.stage)
		return;
	if (l->s->n_slos == m.first) {
		cli_scn_error(c, m.stage_key, "%s.stage is given without an SLO for it",
			      cli_scn_path(c));
		return;
	}
	for (size_t i = m.first; i < l->s->n_slos && i < SCN_MAX_SLOS; i++) {
		if (!(l->s->slos[i].stage = strdup(m.stage->str)))
			c->oom = true;
		l->slo_stage_nodes[i] = m.stage;
	}
}

void cli_scn_take_slos(struct scn_ctx *c, const struct ynode *v, struct cl_scn_slo **out, size_t *n)
{
	struct scn_loader *l = L(c);
	struct cl_scenario *s = l->s;
	char got[96];
	*out = NULL;
	*n = 0;
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_MAP) {
		cli_scn_error(c, v, "%s must be a mapping such as { ttft_p99: 1s }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	/* Parsed into the scenario's list like any SLO, then moved out of it. */
	struct slo_map m = { .first = s->n_slos, .in_search = true };
	cli_scn_map_each(c, v, slo_pair, &m);
	size_t end = s->n_slos < SCN_MAX_SLOS ? s->n_slos : SCN_MAX_SLOS;
	if (end <= m.first)
		return;
	*out = calloc(end - m.first, sizeof(**out));
	if (!*out) {
		c->oom = true;
		return;
	}
	memcpy(*out, &s->slos[m.first], (end - m.first) * sizeof(**out));
	*n = end - m.first;
	s->n_slos = m.first;
}

/* slo: a mapping, or a list of mappings (each may name its stage). */
static void conv_slo(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_SEQ) {
		slo_one_map(c, v);
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		slo_one_map(c, v->kids[i]);
		cli_scn_path_pop(c, mark);
	}
}

/* ---- estimate and output ---- */

static void conv_samples(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_estimate *e = obj;
	char got[96];
	if (!v || v->kind != YN_SEQ || v->n == 0 || v->n > SCN_MAX_LIST) {
		cli_scn_error(c, v,
			      "%s must be a list of sample counts (e.g. [100000, 500000]), got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (!(e->samples = calloc(v->n, sizeof(*e->samples)))) {
		c->oom = true;
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		if (cli_scn_get_u64(c, v->kids[i], 1, 1000000000000000ull,
				    &e->samples[e->n_samples]) == 0)
			e->n_samples++;
		cli_scn_path_pop(c, mark);
	}
}

static void conv_from_stage(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	if (cli_scn_scalar(c, v, "a stage name or a concurrency"))
		L(c)->from_stage = v;
}

static const struct scn_field estimate_fields[] = {
	SCN_CUSTOM("samples", conv_samples),
	SCN_CUSTOM("from_stage", conv_from_stage),
};

static void conv_estimate(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	const struct ynode *seen[N(estimate_fields)] = { 0 };
	cli_scn_fields(c, v, estimate_fields, N(estimate_fields), &L(c)->s->estimate, seen,
		       cli_scn_hint_for);
	if (v && v->kind == YN_MAP && !seen[0])
		cli_scn_error(c, v, "estimate needs samples (e.g. samples: [100000, 500000])");
}

static void conv_formats(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "json", "csv", "md", "html" };
	struct cl_scn_output *o = obj;
	char got[96];
	if (!v || (v->kind != YN_SEQ && v->kind != YN_SCALAR) || cli_ynode_is_null(v)) {
		cli_scn_error(c, v, "%s must be a list of formats (json, csv, md, html), got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	size_t n = v->kind == YN_SEQ ? v->n : 1;
	o->formats = CL_FMT_JSON; /* results.json is always written */
	for (size_t i = 0; i < n; i++) {
		const struct ynode *x = v->kind == YN_SEQ ? v->kids[i] : v;
		size_t mark = v->kind == YN_SEQ ? cli_scn_path_index(c, i) : c->path_len;
		int f;
		if (cli_scn_get_enum(c, x, names, N(names), &f) == 0)
			o->formats |= 1u << f;
		cli_scn_path_pop(c, mark);
	}
}

static const struct scn_field output_fields[] = {
	SCN_FIELD("dir", SCN_F_NESTR, struct cl_scn_output, dir),
	SCN_CUSTOM("formats", conv_formats),
};

static void conv_output(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	const struct ynode *seen[N(output_fields)] = { 0 };
	cli_scn_fields(c, v, output_fields, N(output_fields), &L(c)->s->output, seen,
		       cli_scn_hint_for);
}

/* ---- the whole document ---- */

enum {
	T_NAME,
	T_DESC,
	T_TARGET,
	T_AGENTS,
	T_READY,
	T_WARMUP,
	T_WORKLOAD,
	T_STAGES,
	T_SLO,
	T_ESTIMATE,
	T_OUTPUT,
	T_CLIENT_BOUND,
	T_PLAN,
	T__COUNT
};

static void conv_client_bound(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "fail", "warn" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scenario *)obj)->client_bound = (enum cl_client_bound_policy)x;
}

static const struct scn_field top_fields[T__COUNT] = {
	[T_NAME] = SCN_FIELD("name", SCN_F_NESTR, struct cl_scenario, name),
	[T_DESC] = SCN_FIELD("description", SCN_F_STR, struct cl_scenario, description),
	[T_TARGET] = SCN_CUSTOM("target", cli_scn_conv_target),
	[T_AGENTS] = SCN_CUSTOM("agents", cli_scn_conv_agents),
	[T_READY] = SCN_CUSTOM("readiness", cli_scn_conv_readiness),
	[T_WARMUP] = SCN_CUSTOM("warmup", cli_scn_conv_warmup),
	[T_WORKLOAD] = SCN_CUSTOM("workload", cli_scn_conv_workload),
	[T_STAGES] = SCN_CUSTOM("stages", cli_scn_conv_stages),
	[T_SLO] = SCN_CUSTOM("slo", conv_slo),
	[T_ESTIMATE] = SCN_CUSTOM("estimate", conv_estimate),
	[T_OUTPUT] = SCN_CUSTOM("output", conv_output),
	[T_CLIENT_BOUND] = SCN_CUSTOM("client_bound", conv_client_bound),
	[T_PLAN] = SCN_CUSTOM("plan", cli_scn_conv_plan),
};

/* Finds a stage by name, else (for a number) the concurrency stage with that concurrency. */
static long find_stage(const struct cl_scenario *s, const char *ref)
{
	for (size_t i = 0; i < s->n_stages; i++) {
		if (strcmp(s->stages[i].name, ref) == 0)
			return (long)i;
	}
	uint64_t conc;
	if (cl_parse_u64(ref, UINT32_MAX, &conc) != 0)
		return -1;
	for (size_t i = 0; i < s->n_stages; i++) {
		if (s->stages[i].mode == CL_MODE_CONCURRENCY && s->stages[i].concurrency == conc)
			return (long)i;
	}
	return -1;
}

/* Resolves a stage reference to the stage's name (freeing *name), or reports it. */
static void resolve_stage_ref(struct scn_ctx *c, const struct ynode *at, const char *what,
			      char **name)
{
	struct cl_scenario *s = L(c)->s;
	const char *ref = at->str;
	long i = find_stage(s, ref);
	if (i >= 0) {
		char *p = strdup(s->stages[i].name);
		if (!p) {
			c->oom = true;
			return;
		}
		free(*name);
		*name = p;
		return;
	}
	const char *names[64];
	size_t n = 0;
	char list[300] = "";
	size_t o = 0;
	for (size_t k = 0; k < s->n_stages; k++) {
		if (n < 64)
			names[n++] = s->stages[k].name;
		if (o < sizeof(list))
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", k ? ", " : "",
					      s->stages[k].name);
	}
	const char *sug = cli_scn_suggest(ref, names, n);
	if (sug)
		cli_scn_error(c, at, "%s '%s' names no stage (did you mean '%s'?)", what, ref, sug);
	else
		cli_scn_error(c, at, "%s '%s' names no stage (stages: %s)", what, ref, list);
}

static void check_target(struct scn_ctx *c)
{
	struct scn_loader *l = L(c);
	struct cl_scn_target *t = &l->s->target;
	const struct ynode **seen = l->target;
	if (!l->top[T_TARGET]) {
		cli_scn_error(c, l->root,
			      "missing 'target': give target.url (a server such as "
			      "http://127.0.0.1:8000/v1) or target.simulator (the built-in one)");
		return;
	}
	bool sim = seen[1] && t->simulator;
	if (!seen[0] && !sim) {
		cli_scn_error(c, seen[1] ? seen[1] : l->top[T_TARGET],
			      "target needs url (a server such as http://127.0.0.1:"
			      "8000/v1) or simulator (the built-in one)");
		return;
	}
	if (seen[0] && sim) {
		cli_scn_error(c, seen[1],
			      "target.url and target.simulator are exclusive: give one");
		return;
	}
	const struct ynode *h2 = cli_scn_target_key(l, "http2"),
			   *streams = cli_scn_target_key(l, "http2_streams_per_connection");
	if (streams && !t->http2)
		cli_scn_error(c, streams,
			      "target.http2_streams_per_connection needs target.http2 (true, "
			      "required or preferred)");
	if (sim && t->http2 && !t->http2_fallback)
		cli_scn_error(c, h2 ? h2 : seen[1],
			      "target.simulator speaks HTTP/1.1 only: target.http2 must be false "
			      "or preferred with it (put an HTTP/2 proxy in front and use "
			      "target.url to test HTTP/2)");
	if (!t->simulator || !l->sim_model) {
		/* a simulator without its own model serves the one the scenario asks for */
		if (t->simulator && t->model) {
			struct cl_sim_kv *kv = realloc(t->sim, (t->n_sim + 1) * sizeof(*kv));
			if (!kv) {
				c->oom = true;
				return;
			}
			t->sim = kv;
			kv[t->n_sim].key = strdup("model");
			kv[t->n_sim].value = strdup(t->model);
			t->n_sim++;
			if (!kv[t->n_sim - 1].key || !kv[t->n_sim - 1].value)
				c->oom = true;
		}
		return;
	}
	if (t->model) {
		/* the simulator's model may be a comma-separated list */
		const char *list = l->sim_model->str;
		size_t ml = strlen(t->model);
		bool found = false;
		for (const char *p = list; *p && !found;) {
			const char *e = strchr(p, ',');
			size_t len = e ? (size_t)(e - p) : strlen(p);
			found = len == ml && strncmp(p, t->model, ml) == 0;
			p = e ? e + 1 : p + len;
		}
		if (!found)
			cli_scn_error(c, seen[2],
				      "target.model '%s' is not served by target.simulator.model "
				      "'%s' (the simulator would answer 404)",
				      t->model, list);
	}
}

static void check_agents(struct scn_ctx *c)
{
	struct scn_loader *l = L(c);
	struct cl_scn_agents *a = &l->s->agents;
	const struct ynode **seen = l->agents; /* order of agents_fields */
	const struct ynode *at = l->top[T_AGENTS] ? l->top[T_AGENTS] : l->root;
	bool local_zero = l->given.agents_local ? a->local == 0 : a->listen != NULL;
	if (local_zero && !a->listen)
		cli_scn_error(c, seen[0] ? seen[0] : at,
			      "agents.local is 0 and agents.listen is not set: "
			      "no agent would run the load");
	if (a->listen && a->expect == 0 && local_zero)
		cli_scn_error(c, seen[2] ? seen[2] : seen[1],
			      "agents.listen is set but agents.expect is 0: "
			      "say how many remote agents to wait for");
	if (!a->listen && seen[2] && a->expect > 0)
		cli_scn_error(c, seen[2],
			      "agents.expect needs agents.listen (the address remote agents "
			      "dial)");
	if ((uint64_t)a->local + a->expect > CL_SCN_MAX_AGENTS)
		cli_scn_error(c, seen[2] ? seen[2] : at,
			      "agents.local (%u) and agents.expect (%u) make %llu agents; a run "
			      "takes at most %u",
			      a->local, a->expect, (unsigned long long)a->local + a->expect,
			      CL_SCN_MAX_AGENTS);
	if (seen[6] && seen[7])
		cli_scn_error(c, seen[7],
			      "agents.token_env and agents.token_file are exclusive: give one");
	bool tls_url = a->listen && strncmp(a->listen, "tls+", 4) == 0;
	if (seen[8] && a->listen && !tls_url)
		cli_scn_error(c, seen[8],
			      "agents.tls is set but agents.listen '%s' is not a tls+tcp:// "
			      "address",
			      a->listen);
	if (tls_url && (!a->tls_cert || !a->tls_key))
		cli_scn_error(c, seen[1],
			      "agents.listen uses TLS: set agents.tls.cert and agents.tls.key");
}

static void check_stages(struct scn_ctx *c)
{
	struct scn_loader *l = L(c);
	struct cl_scenario *s = l->s;
	if (!l->top[T_STAGES])
		cli_scn_error(c, l->root,
			      "missing 'stages': add at least one, e.g. stages: [ { "
			      "concurrency: 8, duration: 1m } ]");
	size_t n = s->n_stages < SCN_MAX_STAGES ? s->n_stages : SCN_MAX_STAGES;
	for (size_t i = 1; i < n; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(s->stages[i].name, s->stages[j].name) == 0) {
				cli_scn_error(c, l->stage_nodes[i],
					      "stage name '%s' is used twice (also by the "
					      "stage at line %d); names must be unique",
					      s->stages[i].name, s->stages[j].line);
				break;
			}
		}
	}
	for (size_t i = 0; i < s->n_slos && i < SCN_MAX_SLOS; i++) {
		if (l->slo_stage_nodes[i])
			resolve_stage_ref(c, l->slo_stage_nodes[i], "slo.stage", &s->slos[i].stage);
	}
	if (l->from_stage)
		resolve_stage_ref(c, l->from_stage, "estimate.from_stage", &s->estimate.from_stage);
	cli_scn_check_search(c, l->top[T_PLAN]);
	cli_scn_check_replay(c);
}

static void convert(struct scn_loader *l)
{
	struct scn_ctx *c = &l->c;
	struct cl_scenario *s = l->s;
	char got[96];
	if (l->root->kind != YN_MAP) {
		cli_scn_error(c, l->root,
			      "a scenario must be a mapping of keys (name, target, stages, ...), "
			      "got %s",
			      cli_scn_describe(l->root, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, l->root, top_fields, T__COUNT, s, l->top, cli_scn_hint_for);
	check_target(c);
	check_agents(c);
	check_stages(c);
	if (s->n_stages > SCN_MAX_STAGES)
		s->n_stages = SCN_MAX_STAGES;
	if (s->n_slos > SCN_MAX_SLOS)
		s->n_slos = SCN_MAX_SLOS;
	if (cli_scenario_derive_defaults(s, &l->given, c->file))
		c->oom = true;
}

/* The directory of path ("" for none), for resolving relative paths inside the scenario. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup("");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

int cl_scenario_load_string(const char *text, size_t len, const char *name,
			    const char *const *overrides, struct cl_scenario *out,
			    struct cl_diags *diags)
{
	struct scn_loader *l = calloc(1, sizeof(*l));
	struct ytree tree = { 0 };
	char *dir = NULL;
	int rc = CL_ENOMEM;
	cl_scenario_defaults(out);
	if (!name)
		name = "<scenario>";
	if (!l || !(dir = dir_of(name)) || !(out->file = strdup(name)))
		goto out;
	struct scn_ctx *c = &l->c;
	c->file = name;
	c->dir = dir;
	c->diags = diags;
	l->s = out;

	if (len > CL_SCENARIO_MAX_BYTES) {
		cli_scn_error(c, NULL, "the scenario is larger than %u MiB; refusing to read it",
			      CL_SCENARIO_MAX_BYTES >> 20);
		rc = CL_ETOOBIG;
		goto out;
	}
	struct ynode *root = NULL;
	rc = cli_ytree_parse(c, &tree, text, len, NULL, &root);
	if (rc) {
		rc = rc == CL_EPARSE ? CL_EINVAL : rc;
		goto out;
	}
	if (!root) {
		cli_scn_error(c, NULL,
			      "the scenario is empty (expected a mapping with at least 'target' "
			      "and 'stages')");
		rc = CL_EINVAL;
		goto out;
	}
	tree.root = root;
	if (root->kind == YN_MAP) {
		for (size_t i = 0; overrides && overrides[i]; i++) {
			int orc = cli_ytree_override(c, &tree, overrides[i]);
			if (orc == CL_ENOMEM || orc == CL_ETOOBIG) {
				rc = orc;
				goto out;
			}
		}
	}
	l->root = tree.root;
	convert(l);
	rc = c->oom ? CL_ENOMEM : c->n_errors ? CL_EINVAL : 0;
out:
	if (rc == CL_ENOMEM && l) {
		struct cl_err e;
		cl_err_setpos(&e, CL_ENOMEM, name, 0, 0,
			      "out of memory while loading the scenario");
		cl_diags_add(diags, &e);
	}
	if (rc)
		cl_scenario_free(out);
	if (l)
		free(l->slo_stage_nodes);
	free(l);
	free(dir);
	cli_ytree_free(&tree);
	return rc;
}

int cl_scenario_load_file(const char *path, const char *const *overrides, struct cl_scenario *out,
			  struct cl_diags *diags)
{
	struct cl_buf b;
	struct cl_err e;
	struct stat st;
	int rc;
	cl_scenario_defaults(out);
	cl_buf_init(&b, CL_SCENARIO_MAX_BYTES);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		cl_err_set(&e, CL_EIO, "cannot read scenario '%s': Is a directory", path);
		cl_diags_add(diags, &e);
		return CL_EIO;
	}
	rc = cl_buf_read_file(&b, path);
	if (rc == CL_ETOOBIG) {
		cl_err_setpos(&e, CL_ETOOBIG, path, 0, 0,
			      "the scenario is larger than %u MiB; refusing to read it",
			      CL_SCENARIO_MAX_BYTES >> 20);
		cl_diags_add(diags, &e);
		cl_buf_free(&b);
		return rc;
	}
	if (rc) {
		int err = errno;
		cl_err_set(&e, rc, "cannot open scenario '%s': %s", path,
			   rc == CL_ENOMEM ? "out of memory" : strerror(err));
		cl_diags_add(diags, &e);
		cl_buf_free(&b);
		return rc;
	}
	rc = cl_scenario_load_string(b.data ? b.data : "", b.len, path, overrides, out, diags);
	cl_buf_free(&b);
	return rc;
}
