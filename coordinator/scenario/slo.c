/* The scenario's SLOs: the top-level slo (a mapping, or a list of them each naming its stage)
 * and search.slo, every key read into a struct cl_scn_slo (soak guards: scenario/jobs.c). */
#include "chatload/metrics.h"

#include "coordinator/scenario/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

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

/* The settings written beside the SLOs (stage, abort_on_breach, max_drift): true when k is
 * one of them, read or reported here. */
static bool slo_setting(struct scn_ctx *c, struct slo_map *m, const struct ynode *k,
			const struct ynode *v, bool merged)
{
	if (strcmp(k->str, "stage") != 0 && strcmp(k->str, "abort_on_breach") != 0 &&
	    strcmp(k->str, "max_drift") != 0)
		return false;
	if (m->in_search) {
		cli_scn_error(c, k,
			      "%s: '%s' is not allowed in search.slo (it holds the SLOs a probe "
			      "must meet; put it in the top-level slo)",
			      cli_scn_path(c), k->str);
		return true;
	}
	if (strcmp(k->str, "stage") == 0) {
		if (m->stage_key && !merged)
			cli_scn_error(c, k, "duplicate key 'stage' in %s", cli_scn_path(c));
		else if (!m->stage_key && cli_scn_scalar(c, v, "a stage name")) {
			m->stage = v;
			m->stage_key = k;
		}
	} else if (strcmp(k->str, "abort_on_breach") == 0) {
		cli_scn_conv_abort(c, v);
	} else {
		cli_scn_conv_drift(c, v);
	}
	return true;
}

/* A key that is not <metric>_<statistic>: names the SLO it is closest to, or the forms. */
static void unknown_slo(struct scn_ctx *c, const struct ynode *k)
{
	static const char *const fixed[] = { "error_rate",
					     "min_output_tokens_per_s",
					     "min_requests_per_s",
					     "abort_on_breach",
					     "stage",
					     "max_drift" };
	const char *all[N(fixed) + 4] = { "ttft_p99", "itl_p99", "e2e_p99", "tpot_mean" };
	memcpy(all + 4, fixed, sizeof(fixed));
	const char *sug = cli_scn_suggest(k->str, all, N(all));
	if (sug)
		cli_scn_error(c, k, "unknown SLO '%s' (did you mean '%s'?)", k->str, sug);
	else
		cli_scn_error(c, k,
			      "unknown SLO '%s' (expected <metric>_p<NN> such as ttft_p99, "
			      "<metric>_mean, error_rate, min_output_tokens_per_s or "
			      "min_requests_per_s)",
			      k->str);
}

/* <metric>_<statistic> on a metric no SLO may name: the closest one, or the list. */
static void unknown_metric(struct scn_ctx *c, const struct ynode *k, const char *metric)
{
	const char *names[CL_LAT__COUNT];
	size_t n;
	slo_metric_names(names, &n);
	const char *sug = cli_scn_suggest(metric, names, n);
	char list[200] = "";
	size_t o = 0;
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", names[i]);
	if (sug)
		cli_scn_error(c, k, "SLO '%s' is on an unknown metric '%s' (did you mean '%s'?)",
			      k->str, metric, sug);
	else
		cli_scn_error(c, k, "SLO '%s' is on an unknown metric '%s' (latency metrics: %s)",
			      k->str, metric, list);
}

/* A latency SLO, <metric>_p<NN>, <metric>_mean or <metric>_max, with a duration: fills o's
 * lat, percentile and limit (µs); false after reporting what is wrong. */
static bool latency_slo(struct scn_ctx *c, const struct ynode *k, const struct ynode *v,
			struct cl_scn_slo *o)
{
	const char *us = strrchr(k->str, '_');
	char metric[64] = "";
	if (us && (size_t)(us - k->str) < sizeof(metric))
		snprintf(metric, sizeof(metric), "%.*s", (int)(us - k->str), k->str);
	const char *stat = us ? us + 1 : "";
	if (slo_metric(k->str) >= 0) {
		cli_scn_error(c, k,
			      "SLO '%s' needs a statistic: write %s_p99 (or %s_p50, %s_mean, "
			      "%s_max)",
			      k->str, k->str, k->str, k->str, k->str);
		return false;
	}
	if (!us || !metric[0]) {
		unknown_slo(c, k);
		return false;
	}
	if ((o->lat = slo_metric(metric)) < 0) {
		unknown_metric(c, k, metric);
		return false;
	}
	if (strcmp(stat, "mean") == 0)
		o->percentile = -1;
	else if (strcmp(stat, "max") == 0)
		o->percentile = 100;
	else if (stat[0] != 'p' || (o->percentile = parse_pctl(stat + 1)) < 0) {
		cli_scn_error(
		    c, k,
		    "SLO '%s': '%s' is not a statistic; write p50, p90, p99, p999 (99.9), "
		    "mean or max",
		    k->str, stat);
		return false;
	}
	int64_t us_limit;
	if (cli_scn_get_dur(c, v, 1, 0, &us_limit) != 0)
		return false;
	o->limit = (double)us_limit;
	return true;
}

/* The SLO named by k with the limit v: fills o's kind, lat, percentile and limit; false after
 * reporting what is wrong. */
static bool slo_limit(struct scn_ctx *c, const struct ynode *k, const struct ynode *v,
		      struct cl_scn_slo *o)
{
	o->lat = -1;
	o->percentile = 0;
	if (strcmp(k->str, "error_rate") == 0) {
		o->kind = CL_SLO_ERROR_RATE;
		return cli_scn_get_percent(c, v, &o->limit) == 0;
	}
	if (strcmp(k->str, "min_output_tokens_per_s") == 0 ||
	    strcmp(k->str, "min_requests_per_s") == 0) {
		o->kind = k->str[4] == 'o' ? CL_SLO_MIN_OUTPUT_TPS : CL_SLO_MIN_REQUEST_RATE;
		return cli_scn_get_double(c, v, 1e-9, 1e308, &o->limit) == 0;
	}
	o->kind = CL_SLO_LATENCY;
	return latency_slo(c, k, v, o);
}

/* One key of an slo mapping: a setting, or an SLO added to the scenario's list. */
static void slo_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v, bool merged,
		     void *argp)
{
	struct slo_map *m = argp;
	char got[96];
	if (k->kind != YN_SCALAR) {
		cli_scn_error(c, k, "keys in %s must be names such as ttft_p99, got %s",
			      cli_scn_path(c), cli_scn_describe(k, got, sizeof(got)));
		return;
	}
	size_t mark = cli_scn_path_key(c, k->str);
	struct cl_scn_slo want = { 0 };
	if (slo_setting(c, m, k, v, merged))
		goto out;
	if (slo_seen(c, m, k->str)) {
		if (!merged)
			cli_scn_error(c, k, "duplicate SLO '%s'", k->str);
		goto out;
	}
	if (!slo_limit(c, k, v, &want))
		goto out;
	struct cl_scn_slo *o = slo_new(c, k);
	if (o) {
		o->kind = want.kind;
		o->lat = want.lat;
		o->percentile = want.percentile;
		o->limit = want.limit;
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
void cli_scn_conv_slo(struct scn_ctx *c, const struct ynode *v, void *obj)
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
