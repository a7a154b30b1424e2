/* chatload compare: matches stages by name, compares each headline metric in the direction
 * that matters, and counts regressions beyond the allowed change. */
#include "coordinator/report/compare.h"
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"
#include "coordinator/results/ci.h"
#include "coordinator/results/json_int.h"

#include "chatload/err.h"
#include "chatload/exitcode.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum better { HIGHER, LOWER, LOWER_RATE };

struct metric {
	const char *name;  /* in the comparison */
	const char *label; /* for people */
	const char *path;  /* in a stage object */
	enum better better;
};

static const struct metric metrics[] = {
	{ "output_tokens_per_s", "output tok/s", "throughput.output_tokens_per_s", HIGHER },
	{ "requests_per_s", "req/s", "throughput.requests_per_s", HIGHER },
	{ "ttft_p50_ms", "TTFT p50 ms", "latency_ms.ttft.p50", LOWER },
	{ "ttft_p99_ms", "TTFT p99 ms", "latency_ms.ttft.p99", LOWER },
	{ "itl_p50_ms", "ITL p50 ms", "latency_ms.itl.p50", LOWER },
	{ "itl_p99_ms", "ITL p99 ms", "latency_ms.itl.p99", LOWER },
	{ "tpot_p50_ms", "TPOT p50 ms", "latency_ms.tpot.p50", LOWER },
	{ "tpot_p99_ms", "TPOT p99 ms", "latency_ms.tpot.p99", LOWER },
	{ "e2e_p50_ms", "E2E p50 ms", "latency_ms.e2e.p50", LOWER },
	{ "e2e_p99_ms", "E2E p99 ms", "latency_ms.e2e.p99", LOWER },
	{ "error_rate", "error rate", "requests.error_rate", LOWER_RATE },
};
#define N_METRICS (sizeof(metrics) / sizeof(metrics[0]))

/* An embeddings stage (`embeddings` in either run) has no tokens out, so no TTFT, ITL or
 * TPOT: its figures are its latency (e2e), the requests, inputs and input tokens a second,
 * and errors, each with its ci95 (results/ci.c) so noise is judged as for the others. */
static const struct metric emb_metrics[] = {
	{ "inputs_per_s", "inputs/s", "embeddings.inputs_per_s", HIGHER },
	{ "input_tokens_per_s", "input tok/s", "embeddings.input_tokens_per_s", HIGHER },
	{ "requests_per_s", "req/s", "throughput.requests_per_s", HIGHER },
	{ "e2e_p50_ms", "E2E p50 ms", "latency_ms.e2e.p50", LOWER },
	{ "e2e_p99_ms", "E2E p99 ms", "latency_ms.e2e.p99", LOWER },
	{ "error_rate", "error rate", "requests.error_rate", LOWER_RATE },
};
#define N_EMB_METRICS (sizeof(emb_metrics) / sizeof(emb_metrics[0]))

/* A rerank or score stage (`rerank` in either run), likewise: documents and tokens read a
 * second beside its queries (req/s), latency and errors. */
static const struct metric rerank_metrics[] = {
	{ "documents_per_s", "docs/s", "rerank.documents_per_s", HIGHER },
	{ "rerank_tokens_per_s", "input tok/s", "rerank.tokens_per_s", HIGHER },
	{ "requests_per_s", "req/s", "throughput.requests_per_s", HIGHER },
	{ "e2e_p50_ms", "E2E p50 ms", "latency_ms.e2e.p50", LOWER },
	{ "e2e_p99_ms", "E2E p99 ms", "latency_ms.e2e.p99", LOWER },
	{ "error_rate", "error rate", "requests.error_rate", LOWER_RATE },
};
#define N_RERANK_METRICS (sizeof(rerank_metrics) / sizeof(rerank_metrics[0]))

/* A transcription stage (`audio` in either run): the audio transcribed a second and the
 * real-time factor before the request figures; TTFT (the first text) only means something
 * streamed, and is n/a otherwise.  The audio's figures have no ci95: judged by the limit. */
static const struct metric audio_metrics[] = {
	{ "audio_seconds_per_s", "audio s/s", "audio.seconds_per_s", HIGHER },
	{ "rtf_p50", "RTF p50", "audio.rtf.p50", LOWER },
	{ "rtf_p99", "RTF p99", "audio.rtf.p99", LOWER },
	{ "requests_per_s", "req/s", "throughput.requests_per_s", HIGHER },
	{ "ttft_p50_ms", "TTFT p50 ms", "latency_ms.ttft.p50", LOWER },
	{ "ttft_p99_ms", "TTFT p99 ms", "latency_ms.ttft.p99", LOWER },
	{ "e2e_p50_ms", "E2E p50 ms", "latency_ms.e2e.p50", LOWER },
	{ "e2e_p99_ms", "E2E p99 ms", "latency_ms.e2e.p99", LOWER },
	{ "error_rate", "error rate", "requests.error_rate", LOWER_RATE },
};
#define N_AUDIO_METRICS (sizeof(audio_metrics) / sizeof(audio_metrics[0]))

/* The server's own figures (stages[].server, when it was scraped in either run): they
 * explain a change in the client's figures, they do not decide one, so they never count as
 * regressions (a queue of 0 that became 1 is not a failed night) and are shown only when
 * one of the runs has them (older files have none). */
static const struct metric srv_metrics[] = {
	{ "server_requests_waiting_max", "server waiting max", "server.requests_waiting.max",
	  LOWER },
	{ "server_kv_cache_usage_max", "server KV usage max", "server.kv_cache_usage.max", LOWER },
	{ "server_prefix_cache_hit_rate", "server prefix hits", "server.prefix_cache_hit_rate",
	  HIGHER },
	{ "server_preemptions", "server preemptions", "server.preemptions", LOWER },
	{ "server_ttft_p99_ms", "server TTFT p99 ms", "server.ttft_ms.p99", LOWER },
	{ "server_queue_time_p99_ms", "server queue p99 ms", "server.queue_time_ms.p99", LOWER },
	{ "server_restarts", "server restarts", "server.restarts", LOWER },
	/* joules and money (stages[].energy, stages[].cost): they follow the throughput */
	{ "joules_per_output_token", "J per output token", "energy.joules_per_output_token",
	  LOWER },
	{ "output_tokens_per_joule", "output tok per J", "energy.output_tokens_per_joule", HIGHER },
	{ "cost_per_million_output_tokens", "cost per M output tok",
	  "cost.per_million_output_tokens", LOWER },
};
#define N_SRV_METRICS (sizeof(srv_metrics) / sizeof(srv_metrics[0]))

/* Shares shown in % and their change in percentage points. */
static bool is_ratio(const char *metric)
{
	/* a request class's row is "<class>.<metric>" */
	const char *dot = strrchr(metric, '.');
	if (dot)
		metric = dot + 1;
	return strcmp(metric, "error_rate") == 0 ||
	       strcmp(metric, "server_kv_cache_usage_max") == 0 ||
	       strcmp(metric, "server_prefix_cache_hit_rate") == 0;
}

/* A capacity search's answer, compared as one more "stage": its probes differ from run to
 * run with the answer, so they are not matched by name. */
static const struct metric cap_metrics[] = {
	{ "sustainable", "sustainable level", "sustainable", HIGHER },
	{ "output_tokens_per_s", "output tok/s there", "at_sustainable.output_tokens_per_s",
	  HIGHER },
	{ "joules_per_output_token", "J per output token there",
	  "at_sustainable.joules_per_output_token", LOWER },
	{ "plan_cost_per_hour", "plan's cost per hour", "plan.cost_per_hour", LOWER },
};
#define N_CAP_METRICS (sizeof(cap_metrics) / sizeof(cap_metrics[0]))

/* A capacity search's probe: compared through the capacity answer, not by name. */
static bool is_probe(const json_t *stage)
{
	return json_is_object(json_object_get(stage, "probe"));
}

int cl_compare_parse_format(const char *name, enum cl_compare_format *out)
{
	if (!name)
		return CL_EINVAL;
	if (strcasecmp(name, "table") == 0)
		*out = CL_COMPARE_TABLE;
	else if (strcasecmp(name, "md") == 0 || strcasecmp(name, "markdown") == 0)
		*out = CL_COMPARE_MD;
	else if (strcasecmp(name, "json") == 0)
		*out = CL_COMPARE_JSON;
	else
		return CL_EINVAL;
	return 0;
}

/* How a stage shows in the comparison: in both runs, only in the base, only in the new. */
enum cmp_status { CMP_COMPARED, CMP_MISSING, CMP_NEW, CMP_N_STATUS };

static const char *cmp_status_name(enum cmp_status s)
{
	static const char *const names[CMP_N_STATUS] = { "compared", "missing", "new" };
	return names[s];
}

/* A comparison's stage status read back; anything unknown shows as missing, as a stage
 * that was not compared always has. */
static enum cmp_status cmp_status_of(const json_t *stage)
{
	const char *name = cl_results_str(stage, "status", "");
	for (int s = 0; s < CMP_N_STATUS; s++)
		if (strcmp(name, cmp_status_name((enum cmp_status)s)) == 0)
			return (enum cmp_status)s;
	return CMP_MISSING;
}

static const json_t *find_stage(const json_t *doc, const char *name)
{
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		const char *n = cl_results_str(s, "name", NULL);
		if (n && strcmp(n, name) == 0)
			return s;
	}
	return NULL;
}

/* A stage client-bound by an event (an agent or the coordinator stalled, an agent went
 * missing, an agent's CPU was saturated: the reasons that fail a run by default).  Every
 * stream in flight during a freeze shows it as latency, so the stage's tails (the p99s)
 * describe the client and are shown but not judged, by compare and history alike; its
 * medians and throughput, which a freeze of a fraction of a second barely moves, are judged
 * (their ci95 widens with it).  Leaving the whole night out was tried: on a shared machine
 * most 50-second nights hold a 250 ms stall somewhere, and the history then never had three
 * nights to judge by.  The two percentile reasons (loop_lag, dispatch_lag) are evidence to
 * read, as in a run: the stage is judged whole, with a warning. */
bool cl_compare_client_bound_tails(const json_t *s)
{
	static const char *const events[] = { "stall", "agent_missing", "coordinator_stall",
					      "cpu" };
	if (!json_is_true(cl_results_get(s, "client.client_bound")))
		return false;
	size_t i;
	const json_t *why;
	json_array_foreach(cl_results_get(s, "client.reasons"), i, why)
	{
		for (size_t k = 0; k < sizeof(events) / sizeof(events[0]); k++)
			if (json_is_string(why) && strcmp(json_string_value(why), events[k]) == 0)
				return true;
	}
	return false;
}

/* Decides one metric; returns its verdict word and sets *change (NaN when undefined).
 * noise is half the width of the 99 % interval of the difference n - b (NaN when either run
 * has no interval for it): a change beyond the limit that noise could explain is "within
 * noise", not a regression. */
static const char *judge(enum better better, double b, double n, double noise,
			 const struct cl_compare_opts *o, double *change)
{
	*change = NAN;
	if (!isfinite(b))
		return "n/a";
	if (!isfinite(n))
		return "regressed"; /* the base measured it, the new run could not */
	if (b == n) {
		*change = 0;
		return "same";
	}
	if (b != 0)
		*change = (n - b) / fabs(b);
	bool up = n > b;
	bool worse = better == HIGHER ? !up : up;
	if (!worse)
		return "better";
	bool beyond;
	if (better == LOWER_RATE)
		beyond = n - b > o->max_error_increase && (b == 0 || *change > o->max_regression);
	else
		beyond = b == 0 || fabs(*change) > o->max_regression;
	if (!beyond)
		return "worse";
	return isfinite(noise) && fabs(n - b) <= noise ? "within noise" : "regressed";
}

/* How much wider a figure's 99 % interval is than its 95 % one: t(0.995, df) / t(0.975, df)
 * with the degrees of freedom its half came from (its batches or repeats, less one: 1.66 for
 * five repeats, 1.44 for ten batches), 2.576 / 1.96 for an order-statistic interval (older
 * files).  For a percentile's cdf_batch_means or cdf_repeats interval, mapped back through
 * the quantiles, the ratio holds where the density is smooth around the figure. */
static double widen_to_99(const json_t *ci, const char *metric)
{
	const json_t *fig = json_object_get(ci, metric);
	const char *method = cl_results_str(fig, "method", "");
	/* cdf_batch_means and cdf_repeats count values in n; their batches (or repeats) are the
	 * stage's n. */
	bool cdf = strcmp(method, "cdf_batch_means") == 0 || strcmp(method, "cdf_repeats") == 0;
	double n = cl_results_num(cdf ? ci : fig, "n");
	if (strcmp(method, "order_statistics") == 0 || !(n >= 2) || n > 1e9)
		return 2.576 / 1.96;
	size_t df = (size_t)n - 1;
	return cl_ci_t995(df) / cl_ci_t975(df);
}

/* Half the width of the 99 % interval of the difference of a figure between two runs, from
 * their 95 % ones: each widened to 99 % (widen_to_99), then added in quadrature (the two runs
 * are independent).  99 %, not 95 %: compare judges eleven figures a stage, and a run's
 * verdict is one call over all of them (docs/results.md, "Comparing runs").  NaN when either
 * run has none (a results file from before ci95, or too few intervals). */
static double noise_of(const char *metric, const json_t *bs, const json_t *ns)
{
	const json_t *cb = json_object_get(bs, "ci95"), *cn = json_object_get(ns, "ci95");
	double hb = cl_results_num(json_object_get(cb, metric), "half");
	double hn = cl_results_num(json_object_get(cn, metric), "half");
	if (!isfinite(hb) || !isfinite(hn) || hb < 0 || hn < 0) /* a file's nonsense: unknown */
		return NAN;
	hb *= widen_to_99(cb, metric);
	hn *= widen_to_99(cn, metric);
	return sqrt(hb * hb + hn * hn);
}

static json_t *run_json(const json_t *doc, const char *file)
{
	return json_pack("{s:o,s:o,s:o,s:o}", "file", cli_rj_str(file), "scenario",
			 cli_rj_str(cl_results_str(doc, "scenario.name", NULL)), "started_at",
			 cli_rj_str(cl_results_str(doc, "started_at", NULL)), "complete",
			 json_boolean(json_is_true(json_object_get(doc, "complete"))));
}

static json_t *metric_json(const struct metric *mt, const json_t *bs, const json_t *ns,
			   const struct cl_compare_opts *o, size_t *regressions)
{
	double b = cl_results_num(bs, mt->path), n = cl_results_num(ns, mt->path);
	double change, noise = noise_of(mt->name, bs, ns);
	const char *verdict = judge(mt->better, b, n, noise, o, &change);
	/* A tail of a stage the client froze in, in either run: shown, not judged. */
	if (strstr(mt->name, "_p99_") && strcmp(verdict, "n/a") != 0 &&
	    (cl_compare_client_bound_tails(bs) || cl_compare_client_bound_tails(ns)))
		verdict = "client-bound";
	if (strcmp(verdict, "regressed") == 0)
		(*regressions)++;
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:s}", "metric", mt->name, "label",
			 mt->label, "better", mt->better == HIGHER ? "higher" : "lower", "base",
			 cli_rj_real(b), "new", cli_rj_real(n), "change",
			 cli_rj_real(cli_rj_sig(change, 6)), "noise",
			 cli_rj_real(cli_rj_sig(noise, 6)), "verdict", verdict);
}

/* A server figure's row, or NULL (*skip) when neither run has it. */
static json_t *srv_metric_json(const struct metric *mt, const json_t *bs, const json_t *ns,
			       const struct cl_compare_opts *o, bool *skip)
{
	double b = cl_results_num(bs, mt->path), n = cl_results_num(ns, mt->path);
	*skip = !isfinite(b) && !isfinite(n);
	if (*skip)
		return NULL;
	double change = NAN;
	const char *verdict = "n/a";
	if (isfinite(b) && isfinite(n)) {
		/* no interval for the server's figures: the limit alone words it */
		verdict = judge(mt->better, b, n, NAN, o, &change);
		if (strcmp(verdict, "regressed") == 0)
			verdict = "worse";
	}
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:n,s:s,s:b}", "metric", mt->name, "label",
			 mt->label, "better", mt->better == HIGHER ? "higher" : "lower", "base",
			 cli_rj_real(b), "new", cli_rj_real(n), "change",
			 cli_rj_real(cli_rj_sig(change, 6)), "noise", "verdict", verdict,
			 "informational", true);
}

/* A request class's share of a stage (stages[].classes, matched by name): the client
 * figures of the class, each row named "<class>.<metric>".  A class has no ci95 of its own,
 * so no noise to tell a change from chance: its rows are informational, as the server's,
 * and the stage's own rows decide.  0 or CL_ENOMEM. */
static int class_rows(json_t *ms, const json_t *bs, const json_t *ns,
		      const struct cl_compare_opts *o)
{
	size_t i, k;
	const json_t *bc, *nc;
	json_array_foreach(json_object_get(bs, "classes"), i, bc)
	{
		const char *cls = cl_results_str(bc, "name", "");
		const json_t *match = NULL;
		json_array_foreach(json_object_get(ns, "classes"), k, nc)
		{
			if (strcmp(cl_results_str(nc, "name", ""), cls) == 0)
				match = nc;
		}
		for (size_t m = 0; match && m < N_METRICS; m++) {
			char name[200], label[200];
			struct metric mt = metrics[m];
			snprintf(name, sizeof(name), "%s.%s", cls, mt.name);
			snprintf(label, sizeof(label), "class %s: %s", cls, mt.label);
			mt.name = name;
			mt.label = label;
			bool skip;
			json_t *row = srv_metric_json(&mt, bc, match, o, &skip);
			if (!skip && cli_rj_append(ms, row))
				return CL_ENOMEM;
		}
	}
	return 0;
}

static int add_warnings(json_t *w, const json_t *doc, const char *which)
{
	int rc = 0;
	if (!json_is_true(json_object_get(doc, "complete"))) {
		char buf[160];
		snprintf(buf, sizeof(buf), "the %s run did not complete", which);
		rc |= cli_rj_append(w, json_string(buf));
	}
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		if (!json_is_true(cl_results_get(s, "client.client_bound")))
			continue;
		char reasons[160], buf[400];
		cl_results_client_reasons(s, reasons, sizeof(reasons));
		snprintf(buf, sizeof(buf),
			 cl_compare_client_bound_tails(s)
			     ? "stage '%s' of the %s run was client-bound (%s): its tails describe "
			       "the client, so its p99s are not judged"
			     : "stage '%s' of the %s run was client-bound (%s): judged, but its "
			       "tails may describe the client",
			 cl_results_str(s, "name", "?"), which, reasons[0] ? reasons : "?");
		rc |= cli_rj_append(w, cli_rj_str(buf));
	}
	return rc;
}

json_t *cl_compare_build(const json_t *base, const json_t *cur, const char *base_name,
			 const char *cur_name, const struct cl_compare_opts *opts,
			 size_t *regressions)
{
	size_t reg = 0;
	json_t *stages = json_array(), *warnings = json_array(), *out = NULL;
	if (!stages || !warnings)
		goto fail;
	size_t i;
	const json_t *bs;
	json_array_foreach(json_object_get(base, "stages"), i, bs)
	{
		if (is_probe(bs))
			continue;
		const char *name = cl_results_str(bs, "name", "");
		const json_t *ns = find_stage(cur, name);
		json_t *ms = json_array();
		if (!ms)
			goto fail;
		bool emb = json_is_object(json_object_get(bs, "embeddings")) ||
			   (ns && json_is_object(json_object_get(ns, "embeddings")));
		bool rr = json_is_object(json_object_get(bs, "rerank")) ||
			  (ns && json_is_object(json_object_get(ns, "rerank")));
		bool audio = json_is_object(json_object_get(bs, "audio")) ||
			     (ns && json_is_object(json_object_get(ns, "audio")));
		const struct metric *list = rr      ? rerank_metrics
					    : emb   ? emb_metrics
					    : audio ? audio_metrics
						    : metrics;
		size_t n_list = rr      ? N_RERANK_METRICS
				: emb   ? N_EMB_METRICS
				: audio ? N_AUDIO_METRICS
					: N_METRICS;
		for (size_t m = 0; ns && m < n_list; m++) {
			if (cli_rj_append(ms, metric_json(&list[m], bs, ns, opts, &reg))) {
				json_decref(ms);
				goto fail;
			}
		}
		for (size_t m = 0; ns && m < N_SRV_METRICS; m++) {
			bool skip;
			json_t *row = srv_metric_json(&srv_metrics[m], bs, ns, opts, &skip);
			if (!skip && cli_rj_append(ms, row)) {
				json_decref(ms);
				goto fail;
			}
		}
		if (ns && class_rows(ms, bs, ns, opts) != 0) {
			json_decref(ms);
			goto fail;
		}
		if (!ns)
			reg++;
		if (cli_rj_append(stages,
				  json_pack("{s:o,s:s,s:o}", "stage", cli_rj_str(name), "status",
					    cmp_status_name(ns ? CMP_COMPARED : CMP_MISSING),
					    "metrics", ms)))
			goto fail;
	}
	const json_t *bc = json_object_get(base, "capacity"),
		     *nc = json_object_get(cur, "capacity");
	if (json_is_object(bc)) {
		char label[160];
		snprintf(label, sizeof(label), "capacity '%s'", cl_results_str(bc, "search", "?"));
		json_t *ms = json_array();
		if (!ms)
			goto fail;
		for (size_t m = 0; json_is_object(nc) && m < N_CAP_METRICS; m++) {
			/* Joules and money: informational as the server's figures are (they follow
			 * the throughput, already judged), and only where either run has them
			 * (older files do not). */
			bool skip = false;
			json_t *row = m < 2 ? metric_json(&cap_metrics[m], bc, nc, opts, &reg)
					    : srv_metric_json(&cap_metrics[m], bc, nc, opts, &skip);
			if (skip)
				continue;
			if (cli_rj_append(ms, row)) {
				json_decref(ms);
				goto fail;
			}
		}
		if (!json_is_object(nc))
			reg++;
		if (cli_rj_append(
			stages,
			json_pack("{s:s,s:s,s:o}", "stage", label, "status",
				  cmp_status_name(json_is_object(nc) ? CMP_COMPARED : CMP_MISSING),
				  "metrics", ms)))
			goto fail;
	}
	const json_t *ns;
	json_array_foreach(json_object_get(cur, "stages"), i, ns)
	{
		const char *name = cl_results_str(ns, "name", "");
		if (is_probe(ns) || find_stage(base, name))
			continue;
		if (cli_rj_append(stages, json_pack("{s:o,s:s,s:[]}", "stage", cli_rj_str(name),
						    "status", cmp_status_name(CMP_NEW), "metrics")))
			goto fail;
	}
	if (add_warnings(warnings, base, "base") || add_warnings(warnings, cur, "new"))
		goto fail;
	out = json_pack("{s:s,s:o,s:o,s:f,s:f,s:I,s:o,s:o}", "schema", "chatload.compare/1", "base",
			run_json(base, base_name), "new", run_json(cur, cur_name), "max_regression",
			opts->max_regression, "max_error_increase", opts->max_error_increase,
			"regressions", (json_int_t)reg, "stages", stages, "warnings", warnings);
	if (regressions)
		*regressions = reg;
	return out;
fail:
	json_decref(stages);
	json_decref(warnings);
	return NULL;
}

static void fmt_value(char *buf, size_t n, const char *metric, double v)
{
	if (!isfinite(v))
		snprintf(buf, n, "-");
	else if (is_ratio(metric))
		snprintf(buf, n, "%.2f%%", v * 100);
	else
		cli_rp_fmt_ms(buf, n, v); /* the same precision rule suits rates */
}

static void fmt_change(char *buf, size_t n, const json_t *m)
{
	const char *metric = cl_results_str(m, "metric", "");
	double b = cl_results_num(m, "base"), v = cl_results_num(m, "new");
	double c = cl_results_num(m, "change");
	if (is_ratio(metric) && isfinite(b) && isfinite(v))
		snprintf(buf, n, "%+.2fpp", (v - b) * 100);
	else if (isfinite(c))
		snprintf(buf, n, "%+.1f%%", c * 100);
	else
		snprintf(buf, n, "-");
}

/* The noise as the change is written: +-% of the base (error rate: pp); "-" when unknown. */
static void fmt_noise(char *buf, size_t n, const json_t *m)
{
	const char *metric = cl_results_str(m, "metric", "");
	double b = cl_results_num(m, "base"), z = cl_results_num(m, "noise");
	if (!isfinite(z))
		snprintf(buf, n, "-");
	else if (strcmp(metric, "error_rate") == 0)
		snprintf(buf, n, "\xc2\xb1%.2fpp", z * 100);
	else if (isfinite(b) && b != 0)
		snprintf(buf, n, "\xc2\xb1%.1f%%", 100 * z / fabs(b));
	else
		snprintf(buf, n, "-");
}

/* One row of cells per metric (or per missing/new stage), shared by table and Markdown. */
#define CMP_COLS 7
static const char *const cmp_head[CMP_COLS] = { "stage",  "metric", "base",   "new",
						"change", "noise",  "verdict" };
static const bool cmp_numeric[CMP_COLS] = { false, false, true, true, true, true, false };

typedef void (*row_fn)(FILE *out, char cells[CMP_COLS][96], void *ctx);

static void each_row(const json_t *cmp, FILE *out, row_fn fn, void *ctx)
{
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(cmp, "stages"), i, s)
	{
		char cells[CMP_COLS][96] = { { 0 } };
		enum cmp_status status = cmp_status_of(s);
		bool is_new = status == CMP_NEW;
		snprintf(cells[0], 96, "%s", cl_results_str(s, "stage", "-"));
		if (status != CMP_COMPARED) {
			snprintf(cells[1], 96, "-");
			snprintf(cells[2], 96, "%s", is_new ? "-" : "present");
			snprintf(cells[3], 96, "%s", is_new ? "present" : "-");
			snprintf(cells[4], 96, "-");
			snprintf(cells[5], 96, "-");
			snprintf(cells[6], 96, "%s", is_new ? "new stage" : "MISSING (regressed)");
			fn(out, cells, ctx);
			continue;
		}
		size_t k;
		const json_t *m;
		json_array_foreach(json_object_get(s, "metrics"), k, m)
		{
			const char *metric = cl_results_str(m, "metric", "");
			const char *verdict = cl_results_str(m, "verdict", "-");
			snprintf(cells[1], 96, "%s", cl_results_str(m, "label", metric));
			fmt_value(cells[2], 96, metric, cl_results_num(m, "base"));
			fmt_value(cells[3], 96, metric, cl_results_num(m, "new"));
			fmt_change(cells[4], 96, m);
			fmt_noise(cells[5], 96, m);
			snprintf(cells[6], 96, "%s",
				 strcmp(verdict, "regressed") == 0 ? "REGRESSED" : verdict);
			fn(out, cells, ctx);
		}
	}
}

struct widths {
	size_t w[CMP_COLS];
	bool print;
};

static void table_row(FILE *out, char cells[CMP_COLS][96], void *ctx)
{
	struct widths *w = ctx;
	for (int c = 0; c < CMP_COLS; c++) {
		size_t len = strlen(cells[c]);
		if (!w->print) {
			if (len > w->w[c])
				w->w[c] = len;
			continue;
		}
		int width = c + 1 < CMP_COLS ? (int)w->w[c] : 0;
		fprintf(out, cmp_numeric[c] ? "%*s" : "%-*s", width, cells[c]);
		fputs(c + 1 < CMP_COLS ? "  " : "\n", out);
	}
}

static void md_row(FILE *out, char cells[CMP_COLS][96], void *ctx)
{
	fputc('|', out);
	for (int c = 0; c < CMP_COLS; c++) {
		fputc(' ', out);
		cli_rp_put_md(out, cells[c][0] ? cells[c] : "-");
		fputs(" |", out);
	}
	fputc('\n', out);
}

static void summary_line(const json_t *cmp, FILE *out, bool md)
{
	double reg = cl_results_num(cmp, "regressions");
	double lim = cl_results_num(cmp, "max_regression") * 100;
	double err = cl_results_num(cmp, "max_error_increase") * 100;
	/* The units, once, for a reader who did not write the flags. */
	fprintf(
	    out,
	    "change: new against base, in %% of the base value (the error rate's in "
	    "percentage points, pp);\nhigher is better for tok/s, req/s and the sustainable "
	    "level, lower for latencies (ms) and the error rate;\na change for the worse "
	    "beyond %g%% (error rate: %g pp) is a regression, within it 'worse';\nnoise: the 99%% "
	    "interval of the change from both runs' ci95, where both have one: a change\n"
	    "beyond the limit but within the noise is 'within noise', not a regression.\n%s",
	    lim, err, md ? "\n" : "");
	if (reg > 0)
		fprintf(out, "%sresult: %.0f regression%s beyond %g%% (error rate: %g pp)%s\n",
			md ? "**" : "", reg, reg == 1 ? "" : "s", lim, err, md ? "**" : "");
	else
		fprintf(out, "%sresult: no regression beyond %g%% (error rate: %g pp)%s\n",
			md ? "**" : "", lim, err, md ? "**" : "");
	size_t i, k, noisy = 0;
	const json_t *w, *st, *m;
	bool srv = false;
	json_array_foreach(json_object_get(cmp, "stages"), i, st)
	{
		json_array_foreach(json_object_get(st, "metrics"), k, m)
		{
			noisy += strcmp(cl_results_str(m, "verdict", ""), "within noise") == 0;
			srv |= json_is_true(json_object_get(m, "informational"));
		}
	}
	if (noisy)
		fprintf(out, "%s%zu change%s beyond the limit %s within the noise of the runs\n",
			md ? "- " : "", noisy, noisy == 1 ? "" : "s", noisy == 1 ? "is" : "are");
	if (srv)
		fprintf(out,
			"%sthe server's own figures (its /metrics, 'server ...' rows) explain the "
			"client's; they never count as regressions.\n",
			md ? "\n" : "");
	json_array_foreach(json_object_get(cmp, "warnings"), i, w)
	{
		fprintf(out, "%swarning: %s\n", md ? "- " : "", json_string_value(w));
	}
}

int cl_compare_render(const json_t *cmp, enum cl_compare_format fmt, FILE *out)
{
	const char *bf = cl_results_str(cmp, "base.file", "base"),
		   *nf = cl_results_str(cmp, "new.file", "new");
	switch (fmt) {
	case CL_COMPARE_JSON:
		if (cli_rj_dump(cmp, out) != 0)
			return CL_EIO;
		break;
	case CL_COMPARE_TABLE: {
		fprintf(out, "compare: %s -> %s\n\n", bf, nf);
		struct widths w = { { 0 }, false };
		char head[CMP_COLS][96];
		for (int c = 0; c < CMP_COLS; c++)
			snprintf(head[c], 96, "%s", cmp_head[c]);
		table_row(out, head, &w);
		each_row(cmp, out, table_row, &w);
		w.print = true;
		table_row(out, head, &w);
		each_row(cmp, out, table_row, &w);
		fputc('\n', out);
		summary_line(cmp, out, false);
		break;
	}
	case CL_COMPARE_MD: {
		fputs("# chatload compare\n\nBase: `", out);
		cli_rp_put_md(out, bf);
		fputs("` New: `", out);
		cli_rp_put_md(out, nf);
		fputs("`\n\n", out);
		char head[CMP_COLS][96];
		for (int c = 0; c < CMP_COLS; c++)
			snprintf(head[c], 96, "%s", cmp_head[c]);
		md_row(out, head, NULL);
		fputc('|', out);
		for (int c = 0; c < CMP_COLS; c++)
			fputs(cmp_numeric[c] ? "---:|" : "---|", out);
		fputc('\n', out);
		each_row(cmp, out, md_row, NULL);
		fputc('\n', out);
		summary_line(cmp, out, true);
		break;
	}
	default:
		return CL_EINVAL;
	}
	return ferror(out) ? CL_EIO : 0;
}

size_t cl_compare_common(const json_t *base, const json_t *cur)
{
	size_t n = 0, i;
	const json_t *bs;
	json_array_foreach(json_object_get(base, "stages"), i, bs)
	{
		n += !is_probe(bs) && find_stage(cur, cl_results_str(bs, "name", "")) != NULL;
	}
	/* A capacity search's answer compares as one more stage. */
	n += json_is_object(json_object_get(base, "capacity")) &&
	     json_is_object(json_object_get(cur, "capacity"));
	return n;
}

int cl_compare(const json_t *base, const json_t *cur, const char *base_name, const char *cur_name,
	       const struct cl_compare_opts *opts, enum cl_compare_format fmt, FILE *out)
{
	size_t reg = 0;
	json_t *cmp = cl_compare_build(base, cur, base_name, cur_name, opts, &reg);
	if (!cmp)
		return CL_EXIT_FAILED;
	int rc = cl_compare_render(cmp, fmt, out);
	json_decref(cmp);
	if (rc != 0)
		return CL_EXIT_FAILED;
	return reg ? CL_EXIT_SLO_BREACH : CL_EXIT_OK;
}

size_t cl_compare_n_metrics(void)
{
	return N_METRICS;
}

bool cl_compare_metric(size_t i, struct cl_compare_metric *out)
{
	if (i >= N_METRICS)
		return false;
	*out = (struct cl_compare_metric){ metrics[i].name, metrics[i].label, metrics[i].path,
					   metrics[i].better == HIGHER,
					   metrics[i].better == LOWER_RATE };
	return true;
}
