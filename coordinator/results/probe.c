/* Stages a run adds as it goes: a capacity search's probes, inserted into the results as the
 * search decides on them and judged by the search's SLOs, and the search's answer, the
 * document's `capacity`. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/server/explain.h"
#include "coordinator/results/verdict.h"

#include "coordinator/results/capacity.h"

#include "chatload/assert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_rs_stage_state_free(struct stage_state *ss)
{
	free(ss->name);
	json_decref(ss->intervals);
	json_decref(ss->server);
	json_decref(ss->checks);
	json_decref(ss->client.stalls);
	json_decref(ss->client.unaccounted);
	cli_rs_drift_free(ss->drift);
	cli_rs_ci_free(ss->ci);
	cli_rs_ci_reps_free(ss->reps);
	json_decref(ss->repeats);
	if (ss->pooled)
		cl_metrics_destroy(ss->pooled);
	free(ss->pooled);
	free(ss->pooled_reason);
	free(ss->probe_search);
	for (size_t i = 0; ss->probe_slos && i < ss->n_probe_slos; i++) {
		free(ss->probe_slos[i].key);
		free(ss->probe_slos[i].stage);
	}
	free(ss->probe_slos);
	memset(ss, 0, sizeof(*ss));
}

/* Fills a fresh stage state; on failure it stays freeable. */
static int probe_state(struct stage_state *ss, const char *name,
		       const struct cl_results_probe_def *probe)
{
	ss->stride = 1;
	if (!(ss->intervals = json_array()) || !(ss->name = strdup(name)))
		return CL_ENOMEM;
	if (!probe)
		return 0;
	ss->probe = true;
	ss->probe_level = probe->level;
	if (!(ss->probe_search = strdup(probe->search ? probe->search : "search")))
		return CL_ENOMEM;
	if (probe->n_slos && !(ss->probe_slos = calloc(probe->n_slos, sizeof(*ss->probe_slos))))
		return CL_ENOMEM;
	for (size_t i = 0; i < probe->n_slos; i++) {
		ss->probe_slos[i] = probe->slos[i];
		ss->probe_slos[i].stage = NULL;
		ss->probe_slos[i].key = strdup(probe->slos[i].key ? probe->slos[i].key : "slo");
		ss->n_probe_slos = i + 1;
		if (!ss->probe_slos[i].key)
			return CL_ENOMEM;
	}
	return 0;
}

int cl_results_insert_stage(struct cl_results *r, size_t at, const char *name,
			    const struct cl_results_probe_def *probe)
{
	if (at > r->n_stages || !name)
		return CL_EINVAL;
	for (size_t i = at; i < r->n_stages; i++)
		if (r->stages[i].seen || r->stages[i].finished)
			return CL_EINVAL;
	struct stage_state fresh = { 0 };
	int rc = probe_state(&fresh, name, probe);
	struct stage_state *p = NULL;
	if (rc == 0 && !(p = realloc(r->stages, (r->n_stages + 1) * sizeof(*p))))
		rc = CL_ENOMEM;
	if (rc != 0) {
		cli_rs_stage_state_free(&fresh);
		return rc;
	}
	r->stages = p;
	memmove(&p[at + 1], &p[at], (r->n_stages - at) * sizeof(*p));
	p[at] = fresh;
	r->n_stages++;
	return 0;
}

int cl_results_remove_stage(struct cl_results *r, size_t at)
{
	if (at >= r->n_stages || r->stages[at].seen || r->stages[at].finished)
		return CL_EINVAL;
	cli_rs_stage_state_free(&r->stages[at]);
	memmove(&r->stages[at], &r->stages[at + 1], (r->n_stages - at - 1) * sizeof(*r->stages));
	r->n_stages--;
	return 0;
}

const json_t *cl_results_stage(const struct cl_results *r, size_t stage)
{
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(r->doc, "stages"), i, s)
	{
		if (json_integer_value(json_object_get(s, "index")) == (json_int_t)stage)
			return s;
	}
	return NULL;
}

json_t *cli_rs_probe_json(const struct stage_state *ss, const struct cl_metrics *m, double window_s)
{
	json_t *checks = cli_rs_checks(ss->probe_slos, ss->n_probe_slos, ss->name, m, window_s);
	if (!checks)
		return NULL;
	bool pass = json_array_size(checks) > 0;
	size_t i;
	json_t *c;
	json_array_foreach(checks, i, c) pass &= json_is_true(json_object_get(c, "pass"));
	/* The fewest samples any latency SLO's percentile rested on, against what it needs:
	 * a p99 of 20 values is their maximum. */
	bool any = false;
	uint64_t samples = 0, needed = 0;
	for (size_t k = 0; k < ss->n_probe_slos; k++) {
		const struct cl_scn_slo *slo = &ss->probe_slos[k];
		if (slo->kind != CL_SLO_LATENCY)
			continue;
		uint64_t n = cl_verdict_slo_samples(slo, m), want = cl_verdict_samples_needed(slo);
		if (!any || n * needed < samples * want) { /* the lowest share of its need */
			samples = n;
			needed = want;
		}
		any = true;
	}
	return json_pack("{s:o,s:f,s:b,s:o,s:o,s:o}", "search", cli_rj_str(ss->probe_search),
			 "level", ss->probe_level, "pass", pass, "checks", checks, "samples",
			 any ? cli_rj_uint(samples) : json_null(), "samples_needed",
			 any ? cli_rj_uint(needed) : json_null());
}

int cl_results_set_client_load(struct cl_results *r, size_t stage, double agents_cpu_pct_mean,
			       double streams_mean)
{
	if (stage >= r->n_stages || r->stages[stage].finished || !isfinite(agents_cpu_pct_mean) ||
	    !isfinite(streams_mean))
		return CL_EINVAL;
	struct cli_rs_client *c = &r->stages[stage].client;
	c->load_known = true;
	c->agents_cpu_pct_mean = agents_cpu_pct_mean;
	c->streams_mean = streams_mean;
	return 0;
}

int cl_results_set_server(struct cl_results *r, size_t stage, json_t *server)
{
	if (!server)
		return CL_ENOMEM;
	if (stage >= r->n_stages || r->stages[stage].finished) {
		json_decref(server);
		return CL_EINVAL;
	}
	json_decref(r->stages[stage].server);
	r->stages[stage].server = server;
	return 0;
}

int cl_results_set_server_metrics(struct cl_results *r, json_t *server_metrics)
{
	if (!server_metrics)
		return CL_ENOMEM;
	return json_object_set_new(r->doc, "server_metrics", server_metrics) ? CL_ENOMEM : 0;
}

int cl_results_set_requests_log(struct cl_results *r, json_t *block)
{
	if (!block)
		return CL_ENOMEM;
	return json_object_set_new(r->doc, "requests_log", block) ? CL_ENOMEM : 0;
}

/* ---- the capacity answer ---- */

static const char *state_name(enum cl_capacity_state s)
{
	switch (s) {
	case CL_CAP_FOUND:
		return "found";
	case CL_CAP_AT_MAX:
		return "at_max";
	case CL_CAP_BELOW_FROM:
		return "below_from";
	case CL_CAP_STOPPED:
		return "stopped";
	default:
		return "running";
	}
}

/* "8 streams", "12.5 req/s" */
static char *level_text(const struct cl_capacity *c, double v, char *buf, size_t n)
{
	if (c->over == CL_MODE_CONCURRENCY)
		snprintf(buf, n, "%g stream%s", v, v == 1 ? "" : "s");
	else
		snprintf(buf, n, "%g req/s", v);
	return buf;
}

/* A level in the document: whole streams are integers. */
static json_t *level_json(const struct cl_capacity *c, double v)
{
	if (!(v > 0))
		return json_null();
	return c->over == CL_MODE_CONCURRENCY ? json_integer((json_int_t)v) : json_real(v);
}

static json_t *num_or_null(double v, int digits)
{
	return cli_rj_real(isfinite(v) ? cli_rj_sig(v, digits) : NAN);
}

/* One probe as the answer lists it, from its stage object. */
static json_t *probe_json(const struct cl_capacity *cap, const struct cl_capacity_probe *p,
			  const json_t *st)
{
	json_t *breaches = json_array();
	size_t i;
	const json_t *c;
	json_array_foreach(cl_results_get(st, "probe.checks"), i, c)
	{
		if (!json_is_true(json_object_get(c, "pass")) &&
		    cli_rj_append(breaches, json_deep_copy(json_object_get(c, "slo")))) {
			json_decref(breaches);
			return NULL;
		}
	}
	return json_pack(
	    "{s:o,s:I,s:o,s:b,s:b,s:b,s:o,s:o,s:o,s:o,s:o}", "stage",
	    st ? json_deep_copy(json_object_get(st, "name")) : json_null(), "index",
	    (json_int_t)p->stage, "level", level_json(cap, p->level), "pass", p->pass, "trusted",
	    p->trusted, "client_bound", json_is_true(cl_results_get(st, "client.client_bound")),
	    "requests_per_s", num_or_null(p->requests_per_s, 6), "output_tokens_per_s",
	    num_or_null(p->output_tokens_per_s, 6), "ttft_p99_ms",
	    num_or_null(cl_results_num(st, "latency_ms.ttft.p99"), 9), "itl_p99_ms",
	    num_or_null(cl_results_num(st, "latency_ms.itl.p99"), 9), "breaches", breaches);
}

/* What was measured at the sustainable level. */
static json_t *at_json(const json_t *st)
{
	if (!st)
		return json_null();
	return json_pack(
	    "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "stage",
	    json_deep_copy(json_object_get(st, "name")), "requests_per_s",
	    num_or_null(cl_results_num(st, "throughput.requests_per_s"), 6), "output_tokens_per_s",
	    num_or_null(cl_results_num(st, "throughput.output_tokens_per_s"), 6), "ttft_p50_ms",
	    num_or_null(cl_results_num(st, "latency_ms.ttft.p50"), 9), "ttft_p99_ms",
	    num_or_null(cl_results_num(st, "latency_ms.ttft.p99"), 9), "itl_p50_ms",
	    num_or_null(cl_results_num(st, "latency_ms.itl.p50"), 9), "itl_p99_ms",
	    num_or_null(cl_results_num(st, "latency_ms.itl.p99"), 9), "e2e_p50_ms",
	    num_or_null(cl_results_num(st, "latency_ms.e2e.p50"), 9), "error_rate",
	    num_or_null(cl_results_num(st, "requests.error_rate"), 6), "streams_mean",
	    num_or_null(cl_results_num(st, "client.streams_mean"), 6), "cpu_per_stream_pct",
	    num_or_null(cl_results_num(st, "client.cpu_per_stream_pct"), 4),
	    "agent_cpu_capacity_pct", num_or_null(cl_results_num(st, "client.cpu_capacity_pct"), 4),
	    "joules_per_output_token",
	    num_or_null(cl_results_num(st, "energy.joules_per_output_token"), 6),
	    "output_tokens_per_joule",
	    num_or_null(cl_results_num(st, "energy.output_tokens_per_joule"), 6),
	    "cost_per_million_output_tokens",
	    num_or_null(cl_results_num(st, "cost.per_million_output_tokens"), 6));
}

/* The plan: servers and agents for the load asked (capacity.c), and with the scenario's
 * `cost:` what those servers cost an hour (the target's hour, per_hour, each). */
static json_t *plan_json(const struct cl_scn_plan *plan, const json_t *at, double per_hour,
			 const char *currency, char *line, size_t n)
{
	line[0] = '\0';
	if (!plan || (plan->requests_per_s <= 0 && plan->output_tokens_per_s <= 0))
		return json_null();
	bool by_tokens = plan->output_tokens_per_s > 0;
	double want = by_tokens ? plan->output_tokens_per_s : plan->requests_per_s;
	double per = cl_results_num(at, by_tokens ? "output_tokens_per_s" : "requests_per_s");
	struct cl_capacity_plan p;
	bool ok = json_is_object(at) &&
		  cl_capacity_plan(want, per, cl_results_num(at, "streams_mean"),
				   cl_results_num(at, "cpu_per_stream_pct"),
				   cl_results_num(at, "agent_cpu_capacity_pct"), &p);
	const char *unit = by_tokens ? "output tok/s" : "req/s";
	if (ok && p.agents)
		snprintf(line, n,
			 "plan: %g %s needs %llu server%s like this one (%.4g %s each) and %llu "
			 "agent%s like these (%.4g%% CPU per stream, %.4g streams)",
			 want, unit, (unsigned long long)p.servers, p.servers == 1 ? "" : "s", per,
			 unit, (unsigned long long)p.agents, p.agents == 1 ? "" : "s",
			 cl_results_num(at, "cpu_per_stream_pct"), p.streams);
	else if (ok)
		snprintf(line, n,
			 "plan: %g %s needs %llu server%s like this one (%.4g %s each); agents: "
			 "unknown (no CPU figures)",
			 want, unit, (unsigned long long)p.servers, p.servers == 1 ? "" : "s", per,
			 unit);
	else
		snprintf(line, n, "plan: %g %s: no answer (no sustainable level was found)", want,
			 unit);
	double cost = ok && per_hour > 0 ? per_hour * (double)p.servers : NAN;
	size_t used = strlen(line);
	if (isfinite(cost) && used < n)
		snprintf(line + used, n - used, "; they cost %.6g%s%s an hour", cost,
			 currency ? " " : "", currency ? currency : "");
	json_t *plan_o = json_pack(
	    "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s}", "requests_per_s",
	    by_tokens ? json_null() : json_real(want), "output_tokens_per_s",
	    by_tokens ? json_real(want) : json_null(), "per_server", num_or_null(ok ? per : NAN, 6),
	    "servers", ok ? json_integer((json_int_t)p.servers) : json_null(), "servers_exact",
	    num_or_null(ok ? p.servers_exact : NAN, 4), "streams",
	    num_or_null(ok ? p.streams : NAN, 4), "agent_cpu_pct",
	    num_or_null(ok ? p.agent_cpu_pct : NAN, 4), "agents",
	    ok && p.agents ? json_integer((json_int_t)p.agents) : json_null(), "note",
	    ok ? json_null() : json_string("no sustainable level was found"), "summary", line);
	if (plan_o && cli_rj_set(plan_o, "cost_per_hour", num_or_null(cost, 6))) {
		json_decref(plan_o);
		return NULL;
	}
	return plan_o;
}

/* What the server said about the step from the sustainable level to the first that broke
 * (coordinator/server/explain.c); json null when there is no such step or no figure. */
static json_t *explain(const struct cl_results *r, const struct cl_capacity *c,
		       const json_t *at_stage)
{
	const json_t *above = NULL;
	for (size_t i = 0; i < c->n; i++)
		if (c->probes[i].level == c->hi && c->probes[i].trusted && !c->probes[i].pass)
			above = cl_results_stage(r, c->probes[i].stage);
	if (!above || c->state != CL_CAP_FOUND)
		return json_null();
	char lv[48];
	return cl_srv_explain(at_stage, above, level_text(c, c->hi, lv, sizeof(lv)));
}

/* The one line the summary prints, and the advice when there is something to do. */
static void answer_text(const struct cl_capacity *c, const char *name, const json_t *at, long knee,
			char *line, size_t n, char *advice, size_t na)
{
	char a[48], b[48], t[48];
	advice[0] = '\0';
	double tol = cl_capacity_tolerance_abs(c);
	int o = 0;
	switch (c->state) {
	case CL_CAP_FOUND:
		o = snprintf(line, n,
			     "capacity '%s': %s sustainable (%s breaks the SLOs; within %s)", name,
			     level_text(c, c->lo, a, sizeof(a)), level_text(c, c->hi, b, sizeof(b)),
			     level_text(c, tol, t, sizeof(t)));
		break;
	case CL_CAP_AT_MAX:
		o = snprintf(line, n,
			     "capacity '%s': at least %s (max probed; every probe met the SLOs)",
			     name, level_text(c, c->lo, a, sizeof(a)));
		snprintf(advice, na,
			 "every probe up to search.max met the SLOs: raise search.max to find "
			 "the limit");
		break;
	case CL_CAP_BELOW_FROM:
		o = snprintf(line, n, "capacity '%s': none (even %s breaks the SLOs)", name,
			     level_text(c, c->hi, a, sizeof(a)));
		snprintf(advice, na,
			 "no level met the SLOs: check them against one request's latency at "
			 "the lowest load (a probe's TTFT, ITL), or lower search.from");
		break;
	default:
		o = snprintf(line, n, "capacity '%s': search stopped (%s); %s%s", name,
			     c->stop_reason,
			     c->lo > 0 ? "at least " : "no trusted level met the SLOs",
			     c->lo > 0 ? level_text(c, c->lo, a, sizeof(a)) : "");
		snprintf(advice, na,
			 "%s: add agents or workers (agents.local, agents.workers, more client "
			 "hosts) and run the search again; a probe whose client was the limit "
			 "says nothing about the server",
			 c->stop_reason);
		break;
	}
	if (o > 0 && (size_t)o < n && at && json_is_object(at))
		o += snprintf(line + o, n - (size_t)o,
			      ", %.4g output tok/s, %.4g req/s, TTFT p99 %.1f ms there",
			      cl_results_num(at, "output_tokens_per_s"),
			      cl_results_num(at, "requests_per_s"),
			      cl_results_num(at, "ttft_p99_ms"));
	if (o > 0 && (size_t)o < n && knee >= 0)
		o += snprintf(line + o, n - (size_t)o, "; knee at %s",
			      level_text(c, c->probes[knee].level, a, sizeof(a)));
	if (o > 0 && (size_t)o < n)
		snprintf(line + o, n - (size_t)o, "; %zu probes", c->n);
}

int cl_results_set_capacity(struct cl_results *r, const char *name, const struct cl_scn_search *q,
			    const struct cl_capacity *c, const struct cl_scn_plan *plan)
{
	CL_ASSERT(c->n <= CL_CAPACITY_MAX_PROBES); /* x[] and y[] below hold every probe */
	json_t *probes = json_array(), *slos = json_array();
	if (!probes || !slos)
		goto oom;
	double x[CL_CAPACITY_MAX_PROBES], y[CL_CAPACITY_MAX_PROBES];
	size_t nk = 0;
	const json_t *at_stage = NULL;
	for (size_t i = 0; i < c->n; i++) {
		const struct cl_capacity_probe *p = &c->probes[i];
		const json_t *st = cl_results_stage(r, p->stage);
		if (cli_rj_append(probes, probe_json(c, p, st)))
			goto oom;
		if (p->pass && p->trusted && p->level == c->lo && c->lo > 0)
			at_stage = st;
		/* The knee of the trusted points: output tokens/s, or requests/s without tokens. */
		if (p->trusted && isfinite(p->output_tokens_per_s)) {
			x[nk] = p->level;
			y[nk++] =
			    p->output_tokens_per_s > 0 ? p->output_tokens_per_s : p->requests_per_s;
		}
	}
	long kx = cl_capacity_knee(x, y, nk);
	long knee = -1;
	for (size_t i = 0; kx >= 0 && i < c->n; i++)
		if (c->probes[i].level == x[kx] && c->probes[i].trusted)
			knee = (long)i;
	for (size_t i = 0; i < q->n_slos; i++) {
		const struct cl_scn_slo *slo = &q->slos[i];
		if (cli_rj_append(slos, json_pack("{s:s,s:f,s:s}", "key", slo->key, "limit",
						  cl_verdict_to_unit(slo, slo->limit), "unit",
						  cl_verdict_unit(slo))))
			goto oom;
	}
	json_t *at = at_json(at_stage);
	char line[1024], advice[400], plan_line[400];
	answer_text(c, name, at, knee, line, sizeof(line), advice, sizeof(advice));
	/* The probes the answer rests on (the last level that met the SLOs, the first that broke
	 * them) with fewer samples than their percentiles need, even after running on. */
	json_t *thin = json_array();
	if (!thin)
		goto oom;
	for (size_t i = 0; i < c->n; i++) {
		const struct cl_capacity_probe *p = &c->probes[i];
		const json_t *st = cl_results_stage(r, p->stage);
		const json_t *got = cl_results_get(st, "probe.samples"),
			     *need = cl_results_get(st, "probe.samples_needed");
		if (!p->trusted || (p->level != c->lo && p->level != c->hi) ||
		    !json_is_integer(got) || !json_is_integer(need) ||
		    json_integer_value(got) >= json_integer_value(need))
			continue;
		const char *pn = cl_results_str(st, "name", "?");
		if (cli_rj_append(thin, json_pack("{s:s,s:O,s:O}", "stage", pn, "samples", got,
						  "samples_needed", need))) {
			json_decref(thin);
			goto oom;
		}
		size_t l = strlen(line);
		snprintf(line + l, sizeof(line) - l,
			 "; rests on a thin probe: '%s' had %lld samples of the %lld its SLO "
			 "percentile needs",
			 pn, (long long)json_integer_value(got),
			 (long long)json_integer_value(need));
	}
	json_t *why = explain(r, c, at_stage);
	const char *why_text = json_string_value(json_object_get(why, "text"));
	size_t ll = strlen(line);
	if (why_text && ll < sizeof(line))
		snprintf(line + ll, sizeof(line) - ll, "; server: %s", why_text);
	json_t *plan_j =
	    plan_json(plan, at, r->cost_per_hour, r->cost_currency, plan_line, sizeof(plan_line));
	bool conc = c->over == CL_MODE_CONCURRENCY;
	json_t *knee_j =
	    knee >= 0
		? json_pack("{s:o,s:o,s:o}", "level", level_json(c, c->probes[knee].level), "stage",
			    json_deep_copy(
				cl_results_get(cl_results_stage(r, c->probes[knee].stage), "name")),
			    "output_tokens_per_s",
			    num_or_null(c->probes[knee].output_tokens_per_s, 6))
		: json_null();
	json_t *cap = json_pack(
	    "{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:f,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s}",
	    "search", name, "over", conc ? "concurrency" : "rate", "unit",
	    conc ? "streams" : "requests/s", "status", state_name(c->state), "sustainable",
	    level_json(c, c->lo), "breaks_at", level_json(c, c->hi), "from", level_json(c, c->from),
	    "max", level_json(c, c->max), "tolerance", c->tolerance, "tolerance_relative",
	    c->relative, "stopped_because",
	    c->state == CL_CAP_STOPPED ? json_string(c->stop_reason) : json_null(), "advice",
	    advice[0] ? json_string(advice) : json_null(), "at_sustainable", at, "knee", knee_j,
	    "slo", slos, "probes", probes, "plan", plan_j, "explanation", why, "thin_probes", thin,
	    "summary", line);
	if (!cap)
		return CL_ENOMEM;
	if (json_object_set_new(r->doc, "capacity", cap) != 0)
		return CL_ENOMEM;
	return cli_rs_write(r);
oom:
	json_decref(probes);
	json_decref(slos);
	return CL_ENOMEM;
}
