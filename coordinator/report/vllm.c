/* A stage of a results document as vLLM's benchmark result JSON (`vllm bench serve
 * --save-result`): vLLM's key names, each filled from the figure of chatload's that has its
 * meaning, and the per-request lists from requests.jsonl when the run kept one.  Which figure
 * fills which key, and where the definitions differ, is docs/results.md, "vLLM's result
 * JSON". */
#include "coordinator/report/report.h"
#include "coordinator/results/json_int.h"
#include "coordinator/results/results.h"

#include "chatload/assert.h"
#include "chatload/err.h"
#include "chatload/hist.h"
#include "chatload/log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A line of requests.jsonl cannot be longer than this: a record is a few hundred bytes
 * and its error message at most 256 (docs/results.md, "requests.jsonl"). */
#define VLLM_LINE_MAX (64 * 1024)

/* vLLM's metric names and the latency each is filled from (latency_ms.<key>,
 * histograms.lat.<key>). */
static const struct {
	const char *vllm;
	const char *chatload;
} metrics[] = { { "ttft", "ttft" }, { "tpot", "tpot" }, { "itl", "itl" }, { "e2el", "e2e" } };

/* One request of requests.jsonl, as the lists need it. */
struct vrec {
	int64_t stage_index;
	int64_t start_unix_us; /* -1: not in the line */
	double ttft_s;         /* NAN: not reached */
	double e2e_s;          /* the last token (last_token_ms), as vLLM's latency; NAN: none */
	json_int_t prompt_tokens, output_tokens;
	bool completed;
	char *error; /* the message of an error line; NULL otherwise */
};

struct vrecs {
	struct vrec *v;
	size_t n, cap;
};

static void vrecs_free(struct vrecs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].error);
	free(r->v);
	r->v = NULL;
	r->n = r->cap = 0;
}

static double num_or_nan(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Adds line `lineno` of requests.jsonl to r when it is a measured request that ended
 * (completed or error) of a stage in `want` (NULL: any).  0, CL_EPARSE naming the line and
 * field, or CL_ENOMEM. */
static int add_line(struct vrecs *r, const char *line, size_t len, const char *path, int lineno,
		    const json_t *want, struct cl_err *err)
{
	json_error_t je;
	json_t *o = json_loadb(line, len, 0, &je);
	int rc = 0;
	if (!json_is_object(o)) {
		rc = cl_err_setpos(err, CL_EPARSE, path, lineno, o ? 0 : je.column,
				   "not a JSON object: %s", o ? "another JSON value" : je.text);
		goto out;
	}
	const json_t *idx = json_object_get(o, "stage_index");
	const char *status = cl_results_str(o, "status", NULL);
	if (!json_is_integer(idx) || !status) {
		rc = cl_err_setpos(err, CL_EPARSE, path, lineno, 0, "field '%s': expected %s",
				   json_is_integer(idx) ? "status" : "stage_index",
				   json_is_integer(idx) ? "a string" : "an integer");
		goto out;
	}
	if (want && !json_equal((json_t *)want, (json_t *)idx))
		goto out;
	if (!json_is_true(json_object_get(o, "in_window")))
		goto out; /* a ramp's request: not in the stage's figures */
	bool completed = strcmp(status, "completed") == 0;
	if (!completed && strcmp(status, "error") != 0)
		goto out; /* cut: vLLM has no such outcome (docs/results.md) */
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		struct vrec *v = realloc(r->v, cap * sizeof(*v));
		if (!v) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory reading '%s'", path);
			goto out;
		}
		r->v = v;
		r->cap = cap;
	}
	struct vrec *x = &r->v[r->n];
	const json_t *pt = json_object_get(o, "prompt_tokens");
	const json_t *ot = json_object_get(o, "output_tokens");
	*x = (struct vrec){
		.stage_index = json_integer_value(idx),
		.start_unix_us = json_is_integer(json_object_get(o, "start_unix_us"))
				     ? json_integer_value(json_object_get(o, "start_unix_us"))
				     : -1,
		.ttft_s = num_or_nan(o, "ttft_ms") / 1e3,
		.e2e_s = num_or_nan(o, "last_token_ms") / 1e3,
		.prompt_tokens = json_is_integer(pt) ? json_integer_value(pt) : 0,
		.output_tokens = json_is_integer(ot) ? json_integer_value(ot) : 0,
		.completed = completed,
	};
	if (!completed) {
		const char *msg = cl_results_str(o, "error.message", "");
		if (!(x->error = strdup(msg))) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory reading '%s'", path);
			goto out;
		}
	}
	r->n++;
out:
	json_decref(o);
	return rc;
}

/* Reads the measured, ended requests of the stage with index `want` (NULL: every stage)
 * from requests.jsonl.  0, or CL_EIO / CL_EPARSE / CL_ETOOBIG / CL_ENOMEM with err. */
static int read_requests(const char *path, const json_t *want, struct vrecs *r, struct cl_err *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return cl_err_set(err, CL_EIO, "cannot open '%s': %s", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0, lineno = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len > VLLM_LINE_MAX) {
			rc = cl_err_setpos(err, CL_ETOOBIG, path, lineno, 0,
					   "line of %zd bytes, more than a record can be (%d)", len,
					   VLLM_LINE_MAX);
			break;
		}
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		if (len == 0)
			continue;
		if ((rc = add_line(r, line, (size_t)len, path, lineno, want, err)) != 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = cl_err_set(err, CL_EIO, "cannot read '%s': %s", path, strerror(errno));
	free(line);
	fclose(f);
	return rc;
}

static int by_stage_then_start(const void *a, const void *b)
{
	const struct vrec *x = a, *y = b;
	if (x->stage_index != y->stage_index)
		return x->stage_index < y->stage_index ? -1 : 1;
	if (x->start_unix_us != y->start_unix_us)
		return x->start_unix_us < y->start_unix_us ? -1 : 1;
	return 0;
}

/* vLLM's key for a percentile: p99, p99.9 (Python's str of the float, int when whole). */
static void pct_key(char *buf, size_t n, double p, const char *metric)
{
	if (p == floor(p))
		snprintf(buf, n, "p%.0f_%s_ms", p, metric);
	else
		snprintf(buf, n, "p%.15g_%s_ms", p, metric);
}

/* The population standard deviation (numpy's std) of a stored histogram, in its unit: each
 * value taken as its bucket's (within the histogram's precision, 0.1 %), around the exact
 * mean.  NAN without values, or when some lay above the histogram's range. */
static double hist_std(const struct cl_hist *h)
{
	uint64_t n = cl_hist_count(h);
	if (n == 0 || cl_hist_overflow(h) > 0)
		return NAN;
	double mean = cl_hist_mean(h), ss = 0;
	int32_t state = 0, index;
	int64_t value;
	uint64_t count;
	while (cl_hist_next_bucket(h, &state, &index, &value, &count)) {
		double d = (double)value - mean;
		ss += d * d * (double)count;
	}
	return sqrt(ss / (double)n);
}

static int set_num(json_t *o, const char *key, double v)
{
	return cli_rj_set(o, key, cli_rj_real(v));
}

/* Sets key to v (owned) unless an earlier step failed (rc), when v is freed instead. */
static int set_owned(json_t *o, const char *key, json_t *v, int rc)
{
	if (rc) {
		json_decref(v);
		return rc;
	}
	return cli_rj_set(o, key, v);
}

/* Copies a number of the document, or null. */
static int set_from(json_t *o, const char *key, const json_t *stage, const char *path)
{
	const json_t *v = cl_results_get(stage, path);
	return cli_rj_set(o, key, json_is_number(v) ? json_deep_copy(v) : json_null());
}

/* mean_, median_, std_ and p<P>_ of one metric, in ms. */
static int add_metric(json_t *o, const json_t *stage, const char *vllm, const char *ours,
		      const struct cl_report_vllm_opts *opt, struct cl_err *err)
{
	char key[96], path[96];
	snprintf(key, sizeof(key), "mean_%s_ms", vllm);
	snprintf(path, sizeof(path), "latency_ms.%s.mean", ours);
	int rc = set_from(o, key, stage, path);
	snprintf(key, sizeof(key), "median_%s_ms", vllm);
	snprintf(path, sizeof(path), "latency_ms.%s.p50", ours);
	rc = rc ? rc : set_from(o, key, stage, path);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "histograms.lat.%s", ours);
	const json_t *stored = cl_results_get(stage, path);
	struct cl_hist h = { 0 };
	bool have = false;
	if (stored) {
		struct cl_err e = { 0 };
		if ((rc = cl_results_hist_from_json(stored, &h, &e)) != 0) {
			cl_hist_destroy(&h);
			if (err) {
				*err = e;
				cl_err_prefix(err, "stage '%s': %s",
					      cl_results_str(stage, "name", "?"), path);
			}
			return rc;
		}
		have = cl_hist_count(&h) > 0;
	}
	snprintf(key, sizeof(key), "std_%s_ms", vllm);
	rc = set_num(o, key, have ? hist_std(&h) / 1e3 : NAN);
	for (size_t i = 0; rc == 0 && i < opt->n_percentiles; i++) {
		pct_key(key, sizeof(key), opt->percentiles[i], vllm);
		double v = have ? (double)cl_hist_percentile(&h, opt->percentiles[i]) / 1e3 : NAN;
		rc = set_num(o, key, v);
	}
	cl_hist_destroy(&h);
	return rc;
}

/* "2026-12-02T16:42:13.079Z" -> vLLM's "20261202-164213" (its `date`, here UTC). */
static json_t *vllm_date(const json_t *doc)
{
	/* The digits of "YYYY-MM-DDTHH:MM:SS" in order; anything else is no date. */
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	const char *s = cl_results_str(doc, "started_at", NULL);
	char buf[16];
	size_t n = 0;
	for (size_t i = 0; s && i + 1 < sizeof(shape); i++) {
		if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
			return json_null();
		if (shape[i] == 'd')
			buf[n++] = s[i];
		if (n == 8 && shape[i] == 'd' && shape[i + 1] == 'T')
			buf[n++] = '-';
	}
	if (!s)
		return json_null();
	buf[n] = '\0';
	return json_string(buf);
}

/* vLLM's backend for the API the run spoke (its ASYNC_REQUEST_FUNCS names); null for the
 * Responses API, which vLLM's benchmark has no backend for. */
static json_t *vllm_backend(const json_t *doc)
{
	const char *api = cl_results_str(doc, "scenario.target.api", "chat");
	if (strcmp(api, "chat") == 0)
		return json_string("openai-chat");
	if (strcmp(api, "completions") == 0)
		return json_string("openai");
	if (strcmp(api, "embeddings") == 0)
		return json_string("openai-embeddings");
	return json_null();
}

/* The keys vLLM writes before the benchmark's own figures: the run's setup. */
static int add_setup(json_t *o, const json_t *doc, const json_t *stage)
{
	const char *model = cl_results_str(doc, "target.model", NULL);
	if (!model)
		model = cl_results_str(doc, "scenario.target.model", NULL);
	bool rate_mode = strcmp(cl_results_str(stage, "mode", ""), "rate") == 0;
	const char *arrival = cl_results_str(stage, "arrival", "");
	json_t *rate = json_string("inf"), *burst = json_real(1.0);
	if (rate_mode) {
		json_decref(rate);
		rate = json_deep_copy(cl_results_get(stage, "rate"));
		json_decref(burst);
		/* vLLM's burstiness is the gamma shape of its arrival gaps: 1 is Poisson.  A
		 * constant rate is vLLM's inf, which JSON cannot hold; a gamma stage's shape
		 * and a trace have no figure in results.json. */
		burst = strcmp(arrival, "poisson") == 0 ? json_real(1.0) : json_null();
	}
	const json_t *conc = cl_results_get(stage, "concurrency");
	int rc = cli_rj_set(o, "date", vllm_date(doc));
	rc = rc ? rc : cli_rj_set(o, "endpoint_type", vllm_backend(doc));
	rc = rc ? rc : cli_rj_set(o, "backend", vllm_backend(doc));
	rc = rc ? rc : cli_rj_set(o, "label", cli_rj_str(cl_results_str(stage, "name", "")));
	rc = rc ? rc : cli_rj_set(o, "model_id", cli_rj_str(model));
	rc = rc ? rc : cli_rj_set(o, "tokenizer_id", json_null());
	rc = rc ? rc : set_from(o, "num_prompts", stage, "requests.started");
	rc = set_owned(o, "request_rate", rate ? rate : json_null(), rc);
	rc = set_owned(o, "burstiness", burst, rc);
	rc = rc ? rc
		: cli_rj_set(o, "max_concurrency",
			     json_is_integer(conc) ? json_deep_copy(conc) : json_null());
	return rc;
}

/* The figures of vLLM's `result` for a generation stage, or its pooling one for embeddings. */
static int add_figures(json_t *o, const json_t *stage, const struct cl_report_vllm_opts *opt,
		       struct cl_err *err)
{
	bool embed = json_is_object(json_object_get(stage, "embeddings"));
	int rc = set_from(o, "duration", stage, "duration_s");
	rc = rc ? rc : set_from(o, "completed", stage, "requests.completed");
	if (!embed)
		rc = rc ? rc : set_from(o, "failed", stage, "requests.errors_total");
	rc = rc ? rc : set_from(o, "total_input_tokens", stage, "tokens.prompt");
	if (embed) {
		rc = rc ? rc : set_from(o, "total_input_sequences", stage, "embeddings.inputs");
		rc =
		    rc ? rc : set_from(o, "request_throughput", stage, "throughput.requests_per_s");
		rc =
		    rc ? rc
		       : set_from(o, "input_sequence_throughput", stage, "embeddings.inputs_per_s");
		rc = rc ? rc
			: set_from(o, "total_token_throughput", stage,
				   "embeddings.input_tokens_per_s");
		return rc ? rc : add_metric(o, stage, "e2el", "e2e", opt, err);
	}
	rc = rc ? rc : set_from(o, "total_output_tokens", stage, "tokens.output");
	rc = rc ? rc : set_from(o, "request_throughput", stage, "throughput.requests_per_s");
	/* vLLM's goodput counts requests meeting its --goodput thresholds; a scenario sets no
	 * per-request threshold, so there is none to give (docs/results.md). */
	rc = rc ? rc : cli_rj_set(o, "request_goodput", json_null());
	rc = rc ? rc : set_from(o, "output_throughput", stage, "throughput.output_tokens_per_s");
	rc =
	    rc ? rc : set_from(o, "total_token_throughput", stage, "throughput.total_tokens_per_s");
	for (size_t i = 0; rc == 0 && i < sizeof(metrics) / sizeof(metrics[0]); i++)
		rc = add_metric(o, stage, metrics[i].vllm, metrics[i].chatload, opt, err);
	return rc;
}

/* A float as Python's json writes one: a whole number keeps its ".0" (vLLM's 0.0). */
static void put_real(FILE *out, double v)
{
	if (!isfinite(v))
		fputs("null", out);
	else if (v == floor(v) && fabs(v) < 1e15)
		fprintf(out, "%.1f", v);
	else
		fprintf(out, "%.15g", v);
}

/* The per-request lists (vLLM's --save-detailed ones that requests.jsonl can fill), written
 * after the object's other keys: ",\"input_lens\":[...],...".  The records are one stage's,
 * in the order they were sent. */
static int put_lists(FILE *out, const struct vrec *v, size_t n, bool embed)
{
	fputs(",\"input_lens\":[", out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%lld", i ? "," : "", (long long)v[i].prompt_tokens);
	if (!embed) {
		/* vLLM writes 0 output tokens and 0.0 s of TTFT and latency for a request that
		 * failed; its figures are over the successful ones. */
		fputs("],\"output_lens\":[", out);
		for (size_t i = 0; i < n; i++)
			fprintf(out, "%s%lld", i ? "," : "",
				(long long)(v[i].completed ? v[i].output_tokens : 0));
		fputs("],\"ttfts\":[", out);
		for (size_t i = 0; i < n; i++) {
			fputs(i ? "," : "", out);
			put_real(out, v[i].completed && isfinite(v[i].ttft_s) ? v[i].ttft_s : 0.0);
		}
	}
	fputs("],\"latencies\":[", out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? "," : "", out);
		put_real(out, v[i].completed && isfinite(v[i].e2e_s) ? v[i].e2e_s : 0.0);
	}
	/* Seconds to the microsecond, written from the integer: a double printed to 15
	 * digits would lose the microseconds of a Unix time. */
	fputs("],\"start_times\":[", out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? "," : "", out);
		if (v[i].start_unix_us >= 0)
			fprintf(out, "%lld.%06lld", (long long)(v[i].start_unix_us / 1000000),
				(long long)(v[i].start_unix_us % 1000000));
		else
			fputs("null", out);
	}
	fputs("],\"errors\":[", out);
	for (size_t i = 0; i < n; i++) {
		json_t *s = cli_rj_str(v[i].error ? v[i].error : "");
		char *text = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
		json_decref(s);
		if (!text)
			return CL_ENOMEM;
		fprintf(out, "%s%s", i ? "," : "", text);
		free(text);
	}
	fputs("]", out);
	return 0;
}

/* One stage as one line: the object, then the lists when recs (may be NULL) holds every
 * measured request that ended. */
static int put_stage(const json_t *doc, const json_t *stage, const struct vrec *recs, size_t n,
		     const struct cl_report_vllm_opts *opt, FILE *out, struct cl_err *err)
{
	json_t *o = json_object();
	if (!o)
		return CL_ENOMEM;
	int rc = add_setup(o, doc, stage);
	rc = rc ? rc : add_figures(o, stage, opt, err);
	char *text = rc ? NULL : json_dumps(o, RJ_LINE_FLAGS);
	json_decref(o);
	if (rc)
		return rc;
	if (!text)
		return CL_ENOMEM;
	size_t len = strlen(text);
	CL_ASSERT(len >= 2 && text[len - 1] == '}');
	fwrite(text, 1, len - 1, out);
	free(text);
	bool embed = json_is_object(json_object_get(stage, "embeddings"));
	if (recs && (rc = put_lists(out, recs, n, embed)) != 0)
		return rc;
	fputs("}\n", out);
	return ferror(out) ? CL_EIO : 0;
}

/* Whether requests.jsonl's records of this stage are all its measured requests that ended:
 * completed + errors, no fewer (an agent dropped some) and no more. */
static bool lists_whole(const json_t *stage, size_t n)
{
	double want = cl_results_num(stage, "requests.completed") +
		      cl_results_num(stage, "requests.errors_total");
	return isfinite(want) && (double)n == want;
}

int cl_report_vllm(const json_t *doc, const struct cl_report_vllm_opts *opt, FILE *out,
		   struct cl_err *err)
{
	static const double def_pct[] = { 99.0 };
	struct cl_report_vllm_opts o = opt ? *opt : (struct cl_report_vllm_opts){ 0 };
	if (!o.percentiles || o.n_percentiles == 0) {
		o.percentiles = def_pct;
		o.n_percentiles = 1;
	}
	const json_t *stages = json_object_get(doc, "stages");
	const json_t *only = NULL;
	size_t i;
	const json_t *s;
	if (o.stage) {
		json_array_foreach(stages, i, s)
		{
			if (strcmp(cl_results_str(s, "name", ""), o.stage) == 0) {
				only = s;
				break;
			}
		}
		if (!only) {
			char names[256] = "";
			json_array_foreach(stages, i, s)
			{
				size_t len = strlen(names);
				if (len + 4 < sizeof(names))
					snprintf(names + len, sizeof(names) - len, "%s'%s'",
						 len ? ", " : "", cl_results_str(s, "name", ""));
			}
			return cl_err_set(err, CL_ENOTFOUND,
					  "no stage '%s' in the results (its stages: %s)", o.stage,
					  names[0] ? names : "none");
		}
	}
	struct vrecs recs = { 0 };
	int rc = 0;
	if (o.requests_path) {
		rc = read_requests(o.requests_path, only ? json_object_get(only, "index") : NULL,
				   &recs, err);
		if (rc)
			goto out;
		if (recs.n > 1)
			qsort(recs.v, recs.n, sizeof(recs.v[0]), by_stage_then_start);
	}
	json_array_foreach(stages, i, s)
	{
		if (only && s != only)
			continue;
		/* This stage's records: a run of recs (sorted by stage). */
		int64_t idx = json_integer_value(json_object_get(s, "index"));
		size_t lo = 0, hi;
		while (lo < recs.n && recs.v[lo].stage_index < idx)
			lo++;
		for (hi = lo; hi < recs.n && recs.v[hi].stage_index == idx; hi++)
			;
		const struct vrec *mine = NULL;
		if (o.requests_path && lists_whole(s, hi - lo))
			mine = recs.v + lo;
		else if (o.requests_path)
			CL_WARN("stage '%s': %s holds %zu of its %.0f measured requests that ended "
				"(requests_log.dropped in results.json counts those the agents "
				"dropped): "
				"its per-request lists are left out",
				cl_results_str(s, "name", ""), o.requests_path, hi - lo,
				cl_results_num(s, "requests.completed") +
				    cl_results_num(s, "requests.errors_total"));
		if ((rc = put_stage(doc, s, mine, hi - lo, &o, out, err)) != 0)
			goto out;
	}
out:
	vrecs_free(&recs);
	return rc;
}
