/* Builds the document's per-stage, per-interval, warmup and readiness objects from merged
 * metrics (every number in results.json that comes from a measurement is computed here):
 * with a stage its per-turn TTFT (`turns`), whether it was too short for its requests
 * (`too_short`), its share per endpoint (`endpoints`) and the images' cost (`images`). */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/metrics.h"
#include "chatload/readiness.h"

#include <math.h>
#include <string.h>

const char *cl_stage_status_name(enum cl_stage_status s)
{
	switch (s) {
	case CL_STAGE_OK:
		return "ok";
	case CL_STAGE_FAILED:
		return "failed";
	case CL_STAGE_DEGRADED:
		return "degraded";
	case CL_STAGE_INTERRUPTED:
		return "interrupted";
	case CL_STAGE_ABORTED:
		return "aborted";
	default:
		return NULL;
	}
}

/* Latency summary in milliseconds; every statistic null when the histogram is empty. */
static json_t *lat_summary(const struct cl_hist *h)
{
	uint64_t n = cl_hist_count(h);
	if (n == 0)
		return json_pack("{s:i,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}", "count", 0, "mean", "min",
				 "p50", "p90", "p95", "p99", "p999", "max");
	/* Percentiles are bucket values in whole microseconds, so value/1000 is exact to the
	 * printed precision; the mean is rounded to the microsecond. */
	return json_pack(
	    "{s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "count", cli_rj_uint(n), "mean",
	    cli_rj_round(cl_hist_mean(h) / 1000.0, 3), "min", cl_hist_min(h) / 1000.0, "p50",
	    cl_hist_percentile(h, 50) / 1000.0, "p90", cl_hist_percentile(h, 90) / 1000.0, "p95",
	    cl_hist_percentile(h, 95) / 1000.0, "p99", cl_hist_percentile(h, 99) / 1000.0, "p999",
	    cl_hist_percentile(h, 99.9) / 1000.0, "max", cl_hist_max(h) / 1000.0);
}

/* Count summary (tokens), values divided by div (1000 for milli-token histograms). */
static json_t *cnt_summary(const struct cl_hist *h, double div)
{
	uint64_t n = cl_hist_count(h);
	if (n == 0)
		return json_pack("{s:i,s:n,s:n,s:n,s:n,s:n}", "count", 0, "mean", "p50", "p90",
				 "p99", "max");
	return json_pack("{s:o,s:f,s:f,s:f,s:f,s:f}", "count", cli_rj_uint(n), "mean",
			 cli_rj_sig(cl_hist_mean(h) / div, 6), "p50",
			 cl_hist_percentile(h, 50) / div, "p90", cl_hist_percentile(h, 90) / div,
			 "p99", cl_hist_percentile(h, 99) / div, "max", cl_hist_max(h) / div);
}

/* A percentile in ms, or null when the histogram is empty. */
static json_t *pct_ms(const struct cl_hist *h, double p)
{
	return cl_hist_count(h) ? json_real(cl_hist_percentile(h, p) / 1000.0) : json_null();
}

static json_t *rate(uint64_t n, double seconds)
{
	return seconds > 0 ? json_real(cli_rj_sig((double)n / seconds, 6)) : json_null();
}

static const char *token_source(const struct cl_metrics *m)
{
	uint64_t usage = m->ctr[CL_CTR_USAGE_FROM_SERVER],
		 chunks = m->ctr[CL_CTR_USAGE_FROM_CHUNKS];
	if (usage == 0 && chunks == 0)
		return "none";
	if (chunks == 0)
		return "usage";
	return usage == 0 ? "chunks" : "mixed";
}

static json_t *requests_json(const struct cl_metrics *m)
{
	json_t *errors = json_object();
	json_t *samples = json_array();
	json_t *o = NULL;
	if (!errors || !samples)
		goto fail;
	for (size_t i = 0; i < cli_rj_n_err_keys; i++) {
		if (cli_rj_set(errors, cli_rj_err_keys[i],
			       cli_rj_uint(m->ctr[CL_CTR_FIRST_ERROR + i])))
			goto fail;
	}
	uint32_t ns = m->n_err_samples < CL_ERR_SAMPLES_MAX ? m->n_err_samples : CL_ERR_SAMPLES_MAX;
	for (uint32_t i = 0; i < ns; i++) {
		const struct cl_err_sample *es = &m->err_samples[i];
		int k = es->ctr - CL_CTR_FIRST_ERROR;
		const char *cls =
		    k >= 0 && (size_t)k < cli_rj_n_err_keys ? cli_rj_err_keys[k] : "other";
		json_t *body = cli_rj_strn(es->body, strnlen(es->body, sizeof(es->body)));
		json_t *s = json_pack("{s:s,s:i,s:o}", "class", cls, "http_status",
				      (int)es->http_status, "body", body);
		if (cli_rj_append(samples, s))
			goto fail;
	}
	o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:f,s:o,s:o,s:o,s:o}", "started",
		      cli_rj_uint(m->ctr[CL_CTR_STARTED]), "completed",
		      cli_rj_uint(m->ctr[CL_CTR_COMPLETED]), "cut", cli_rj_uint(m->ctr[CL_CTR_CUT]),
		      "good", cli_rj_uint(m->ctr[CL_CTR_GOOD]), "errors_total",
		      cli_rj_uint(cl_verdict_errors(m)), "error_rate",
		      cli_rj_sig(cl_verdict_error_rate(m), 6), "errors", errors, "error_samples",
		      samples, "no_content", cli_rj_uint(m->ctr[CL_CTR_NO_CONTENT]), "repeated",
		      cli_rj_uint(m->ctr[CL_CTR_REPEATED]));
	/* Sent twice: the server had closed the reused connection (docs/engine.md). */
	/* Answers that were tool calls (docs/results.md): always present, 0 without tools. */
	/* Abandoned by the client (workload.cancel): neither completed nor errors. */
	if (o && (cli_rj_set(o, "cancelled", cli_rj_uint(m->ctr[CL_CTR_CANCELLED])) ||
		  cli_rj_set(o, "resent", cli_rj_uint(m->ctr[CL_CTR_RESENT])) ||
		  cli_rj_set(o, "tool_calls", cli_rj_uint(m->ctr[CL_CTR_TOOL_CALLS])))) {
		json_decref(o);
		return NULL;
	}
	return o;
fail:
	json_decref(errors);
	json_decref(samples);
	return NULL;
}

static json_t *tokens_base_json(const struct cl_metrics *m);

/* The finish_reason of the short requests: why they stopped, as the server said. */
static json_t *short_finish_json(const struct cl_metrics *m)
{
	uint64_t stop = m->ctr[CL_CTR_SHORT_FINISH_STOP], len = m->ctr[CL_CTR_SHORT_FINISH_LENGTH],
		 other = m->ctr[CL_CTR_SHORT_FINISH_OTHER], all = m->ctr[CL_CTR_SHORT_OUTPUT];
	uint64_t given = stop + len + other;
	return json_pack("{s:o,s:o,s:o,s:o}", "stop", cli_rj_uint(stop), "length", cli_rj_uint(len),
			 "other", cli_rj_uint(other), "none",
			 cli_rj_uint(all > given ? all - given : 0));
}

/* Output asked for against received, over completed requests: a ratio below 1 is a server
 * that stopped before max_tokens. */
static int add_requested(json_t *o, const struct cl_metrics *m)
{
	uint64_t asked = m->ctr[CL_CTR_REQUESTED_TOKENS];
	json_t *ratio = asked ? json_real(cli_rj_sig(
				    (double)m->ctr[CL_CTR_REQUESTED_RECEIVED] / (double)asked, 6))
			      : json_null();
	return !o || cli_rj_set(o, "requested", cli_rj_uint(asked)) ||
	       cli_rj_set(o, "requested_received",
			  cli_rj_uint(m->ctr[CL_CTR_REQUESTED_RECEIVED])) ||
	       cli_rj_set(o, "received_ratio", ratio) ||
	       cli_rj_set(o, "short_requests", cli_rj_uint(m->ctr[CL_CTR_SHORT_OUTPUT])) ||
	       cli_rj_set(o, "short_finish", short_finish_json(m)) ||
	       cli_rj_set(o, "requested_per_request",
			  cnt_summary(&m->cnt[CL_CNT_REQUESTED_TOKENS], 1));
}

static json_t *tokens_json(const struct cl_metrics *m)
{
	json_t *o = tokens_base_json(m);
	/* The client's own view of the prefix cache: what usage said was served from it. */
	uint64_t cached = m->ctr[CL_CTR_CACHED_PROMPT_TOKENS],
		 prompt = m->ctr[CL_CTR_PROMPT_TOKENS];
	if (o && (cli_rj_set(o, "cached_prompt_tokens", cli_rj_uint(cached)) ||
		  cli_rj_set(o, "cached_prompt_ratio",
			     prompt ? cli_rj_real(cli_rj_round((double)cached / prompt, 4))
				    : json_null()))) {
		json_decref(o);
		return NULL;
	}
	if (add_requested(o, m)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *tokens_base_json(const struct cl_metrics *m)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:o,s:o,s:o}", "prompt",
			 cli_rj_uint(m->ctr[CL_CTR_PROMPT_TOKENS]), "output",
			 cli_rj_uint(m->ctr[CL_CTR_OUTPUT_TOKENS]), "reasoning",
			 cli_rj_uint(m->ctr[CL_CTR_REASONING_TOKENS]), "chunks",
			 cli_rj_uint(m->ctr[CL_CTR_CHUNKS]), "bytes",
			 cli_rj_uint(m->ctr[CL_CTR_BYTES]), "source", token_source(m),
			 "usage_from_server", cli_rj_uint(m->ctr[CL_CTR_USAGE_FROM_SERVER]),
			 "usage_from_chunks", cli_rj_uint(m->ctr[CL_CTR_USAGE_FROM_CHUNKS]),
			 "output_per_request", cnt_summary(&m->cnt[CL_CNT_OUTPUT_TOKENS], 1),
			 "prompt_per_request", cnt_summary(&m->cnt[CL_CNT_PROMPT_TOKENS], 1),
			 "reasoning_per_request", cnt_summary(&m->cnt[CL_CNT_REASONING_TOKENS], 1));
}

static json_t *throughput_json(const struct cl_metrics *m, double window_s)
{
	uint64_t total = m->ctr[CL_CTR_OUTPUT_TOKENS] + m->ctr[CL_CTR_PROMPT_TOKENS];
	double rps = cl_verdict_request_rate(m, window_s);
	json_t *req = isfinite(rps) ? json_real(cli_rj_sig(rps, 6)) : json_null();
	/* Goodput: the request rate times the share of measured requests that met every
	 * per-request SLO (good counts requests started in the window, the rate the lifetimes
	 * inside it; their ratio keeps goodput <= throughput). */
	json_t *good = json_null();
	if (m->ctr[CL_CTR_COMPLETED] && isfinite(rps))
		good = json_real(cli_rj_sig(
		    rps * (double)m->ctr[CL_CTR_GOOD] / (double)m->ctr[CL_CTR_COMPLETED], 6));
	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "requests_per_s", req, "completions_per_s",
			 rate(m->ctr[CL_CTR_COMPLETED_IN_WINDOW], window_s), "output_tokens_per_s",
			 rate(m->ctr[CL_CTR_OUTPUT_TOKENS], window_s), "total_tokens_per_s",
			 rate(total, window_s), "goodput_requests_per_s", good);
}

static json_t *latency_json(const struct cl_metrics *m)
{
	static const int lat[] = { CL_LAT_QUEUE, CL_LAT_TTFB, CL_LAT_TTFT, CL_LAT_TTFC,
				   CL_LAT_ITL,   CL_LAT_TPOT, CL_LAT_E2E,  CL_LAT_E2E_SCHED };
	_Static_assert(sizeof(lat) / sizeof(lat[0]) == 8, "one per cli_rj_lat_keys entry");
	json_t *o = json_object();
	for (size_t i = 0; o && i < cli_rj_n_lat_keys; i++) {
		if (cli_rj_set(o, cli_rj_lat_keys[i], lat_summary(&m->lat[lat[i]]))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *client_json(const struct cl_metrics *m, const struct cl_scn_stage *st,
			   const struct cli_rs_client *c)
{
	const struct cl_hist *q = &m->lat[CL_LAT_QUEUE], *loop = &m->lat[CL_LAT_LOOP_LAG];
	struct cl_client_obs obs = {
		.cpu_max_pct = c->cpu_max_pct,
		.cpu_capacity_pct = c->cpu_capacity_pct,
		.cpu_bound_intervals = c->cpu_bound_intervals,
		.dispatch_lag_p99_us = cl_hist_count(q) ? cl_hist_percentile(q, 99) : -1,
		.loop_lag_p99_us = cl_hist_count(loop) ? cl_hist_percentile(loop, 99) : -1,
		.dispatch_lag_is_backlog = st->mode == CL_MODE_RATE && st->concurrency > 0,
		.stalls = c->stalls_agent,
		.agents_missing = c->stalls_coordinator,
		.coordinator_stalls = c->stalls_own,
	};
	/* The cumulative record's gauges count too (a stage shorter than one interval). */
	if (m->health.cpu_pct > obs.cpu_max_pct)
		obs.cpu_max_pct = m->health.cpu_pct;
	if (m->health.cpu_pct_capacity > obs.cpu_capacity_pct)
		obs.cpu_capacity_pct = m->health.cpu_pct_capacity;
	if (cl_verdict_cpu_bound(m->health.cpu_pct, m->health.cpu_pct_capacity) &&
	    obs.cpu_bound_intervals == 0)
		obs.cpu_bound_intervals = 1;
	unsigned why = cl_verdict_client_bound(&obs);
	json_t *reasons = json_array();
	if (!reasons)
		return NULL;
	if ((why & CL_CLIENT_CPU) && cli_rj_append(reasons, json_string("cpu")))
		goto fail;
	if ((why & CL_CLIENT_DISPATCH_LAG) && cli_rj_append(reasons, json_string("dispatch_lag")))
		goto fail;
	if ((why & CL_CLIENT_LOOP_LAG) && cli_rj_append(reasons, json_string("loop_lag")))
		goto fail;
	if ((why & CL_CLIENT_STALL) && cli_rj_append(reasons, json_string("stall")))
		goto fail;
	if ((why & CL_CLIENT_AGENT_MISSING) && cli_rj_append(reasons, json_string("agent_missing")))
		goto fail;
	if ((why & CL_CLIENT_COORDINATOR_STALL) &&
	    cli_rj_append(reasons, json_string("coordinator_stall")))
		goto fail;
	json_t *o = json_pack("{s:b,s:o,s:o,s:o,s:i,s:o,s:o,s:o,s:o,s:o}", "client_bound", why != 0,
			      "reasons", reasons, "cpu_max_pct",
			      cli_rj_real(cli_rj_round(obs.cpu_max_pct, 1)), "cpu_capacity_pct",
			      cli_rj_real(cli_rj_round(obs.cpu_capacity_pct, 1)),
			      "cpu_bound_intervals", (int)obs.cpu_bound_intervals,
			      "loop_lag_p99_ms", pct_ms(loop, 99), "dispatch_lag_p99_ms",
			      pct_ms(q, 99), "rss_max_bytes", json_integer(m->health.rss_bytes),
			      "stalls", c->stalls ? json_deep_copy(c->stalls) : json_array(),
			      "stalls_unlisted", cli_rj_uint(c->stalls_unlisted));
	/* What the agents spent per stream, for capacity planning (optional fields). */
	if (o && c->load_known &&
	    (cli_rj_set(o, "agents_cpu_pct_mean",
			cli_rj_real(cli_rj_round(c->agents_cpu_pct_mean, 2))) ||
	     cli_rj_set(o, "streams_mean", cli_rj_real(cli_rj_round(c->streams_mean, 2))) ||
	     cli_rj_set(o, "cpu_per_stream_pct",
			c->streams_mean > 0
			    ? cli_rj_real(cli_rj_sig(c->agents_cpu_pct_mean / c->streams_mean, 4))
			    : json_null()))) {
		json_decref(o);
		return NULL;
	}
	return o;
fail:
	json_decref(reasons);
	return NULL;
}

static json_t *histograms_json(const struct cl_metrics *m)
{
	json_t *lat = json_object(), *cnt = json_object();
	if (!lat || !cnt)
		goto fail;
	/* Every kind that holds values, under its metrics.h name, so tools can look up any
	 * percentile; empty ones are left out. */
	for (int i = 0; i < CL_LAT__COUNT; i++) {
		if (cl_hist_count(&m->lat[i]) &&
		    cli_rj_set(lat, cl_lat_name(i), cl_results_hist_to_json(&m->lat[i])))
			goto fail;
	}
	for (int i = 0; i < CL_CNT__COUNT; i++) {
		if (cl_hist_count(&m->cnt[i]) &&
		    cli_rj_set(cnt, cl_cnt_name(i), cl_results_hist_to_json(&m->cnt[i])))
			goto fail;
	}
	return json_pack("{s:o,s:o}", "lat", lat, "cnt", cnt);
fail:
	json_decref(lat);
	json_decref(cnt);
	return NULL;
}

/* The protocol the stage's requests really used and the connections they opened, so a
 * fall-back to HTTP/1.1 (or h2c without multiplexing) shows in the results. */
static json_t *http_json(const struct cl_metrics *m)
{
	uint64_t h1 = m->ctr[CL_CTR_COMPLETED_H1], h2 = m->ctr[CL_CTR_COMPLETED_H2];
	const char *proto = h1 && h2 ? "mixed" : h2 ? "HTTP/2" : h1 ? "HTTP/1.1" : NULL;
	return json_pack("{s:o,s:o,s:o,s:o}", "protocol", cli_rj_str(proto), "completed_h1",
			 cli_rj_uint(h1), "completed_h2", cli_rj_uint(h2), "connections_opened",
			 cli_rj_uint(m->ctr[CL_CTR_CONNECTIONS_OPENED]));
}

/* -- multi-turn figures: TTFT and prompt length by turn index -- */

/* A turn's TTFT: milliseconds at percentile p of h, rounded to the microsecond. */
static json_t *turn_pct_ms(const struct cl_hist *h, double p)
{
	return json_real(cli_rj_round(cl_hist_percentile(h, p) / 1000.0, 3));
}

/* The stage's "turns" array (multi-turn: one entry per turn index that had completed
 * requests; empty without conversations), NULL on out of memory. */
static json_t *turns_json(const struct cl_metrics *m)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	for (int t = 0; t < CL_TURNS_MAX; t++) {
		const struct cl_hist *h = &m->lat[CL_LAT_TTFT_TURN1 + t];
		uint64_t done = m->ctr[CL_CTR_TURN1_COMPLETED + t];
		if (!done)
			continue;
		uint64_t pt = m->ctr[CL_CTR_TURN1_PROMPT_TOKENS + t];
		bool any = cl_hist_count(h) > 0;
		json_t *o = json_pack(
		    "{s:i,s:b,s:o,s:o,s:o,s:o,s:o}", "turn", t + 1, "and_later",
		    t == CL_TURNS_MAX - 1, "requests", cli_rj_uint(done), "ttft_p50_ms",
		    any ? turn_pct_ms(h, 50) : json_null(), "ttft_p90_ms",
		    any ? turn_pct_ms(h, 90) : json_null(), "ttft_p99_ms",
		    any ? turn_pct_ms(h, 99) : json_null(), "prompt_tokens_mean",
		    pt ? json_real(cli_rj_round((double)pt / (double)done, 1)) : json_null());
		if (cli_rj_append(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* -- stages too short for their requests -- */

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

/* stages[].too_short: whether a duration-bounded stage was too short for its requests (fewer
 * than 10 completed, or a window shorter than two typical lifetimes); requests-bounded
 * stages never are.  summary.c warns about such a stage. */
static bool too_short(const struct cl_scn_stage *st, const struct cl_metrics *m, double window_s)
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

json_t *cli_rs_stage_json(size_t index, const struct cl_scn_stage *st, const struct cl_metrics *m,
			  double window_s, enum cl_stage_status status, const char *reason,
			  const struct cli_rs_client *client, enum cl_api api)
{
	bool rate_mode = st->mode == CL_MODE_RATE;
	static const char *const arrivals[] = { "constant", "poisson", "gamma" };
	const char *arrival = st->replay ? "trace"
			      : (unsigned)st->arrival < sizeof(arrivals) / sizeof(arrivals[0])
				  ? arrivals[st->arrival]
				  : "constant";
	json_t *planned =
	    json_pack("{s:o,s:o,s:o}", "duration_s",
		      st->duration_us > 0 ? json_real(st->duration_us / 1e6) : json_null(),
		      "requests", st->requests ? cli_rj_uint(st->requests) : json_null(), "ramp_s",
		      json_real(st->ramp_us / 1e6));
	json_t *conc =
	    (!rate_mode || st->concurrency > 0) ? json_integer(st->concurrency) : json_null();
	json_t *o =
	    json_pack("{s:I,s:o,s:s,s:o,s:s,s:o,s:o,s:s,s:o,s:f,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
		      "index", (json_int_t)index, "name", cli_rj_str(st->name ? st->name : ""),
		      "status", cl_stage_status_name(status), "reason", cli_rj_str(reason), "mode",
		      rate_mode ? "rate" : "concurrency", "concurrency", conc, "rate",
		      rate_mode ? cli_rj_real(st->rate_per_s) : json_null(), "arrival", arrival,
		      "planned", planned, "duration_s", cli_rj_round(window_s, 6), "requests",
		      requests_json(m), "tokens", tokens_json(m), "throughput",
		      throughput_json(m, window_s), "latency_ms", latency_json(m),
		      "tokens_per_chunk", cnt_summary(&m->cnt[CL_CNT_TOKENS_PER_CHUNK], 1000.0),
		      "client", client_json(m, st, client), "histograms", histograms_json(m));
	json_t *turns = o ? turns_json(m) : NULL;
	if (o && turns && json_array_size(turns) == 0)
		json_decref(turns);
	else if (o && cli_rj_set(o, "turns", turns)) {
		json_decref(o);
		return NULL;
	}
	/* Embeddings: what such a stage has in place of output tokens. */
	if (o && api == CL_API_EMBEDDINGS &&
	    cli_rj_set(
		o, "embeddings",
		json_pack("{s:o,s:o,s:o}", "inputs", cli_rj_uint(m->ctr[CL_CTR_EMBEDDING_INPUTS]),
			  "inputs_per_s", rate(m->ctr[CL_CTR_EMBEDDING_INPUTS], window_s),
			  "input_tokens_per_s", rate(m->ctr[CL_CTR_PROMPT_TOKENS], window_s)))) {
		json_decref(o);
		return NULL;
	}
	/* Rerank and score: queries (the completed requests), the documents they scored and
	 * the tokens the server said it read, in place of output tokens. */
	if (o && cl_api_scores(api) &&
	    cli_rj_set(o, "rerank",
		       json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "queries",
				 cli_rj_uint(m->ctr[CL_CTR_COMPLETED]), "documents",
				 cli_rj_uint(m->ctr[CL_CTR_DOCUMENTS]), "tokens",
				 cli_rj_uint(m->ctr[CL_CTR_PROMPT_TOKENS]), "queries_per_s",
				 rate(m->ctr[CL_CTR_COMPLETED], window_s), "documents_per_s",
				 rate(m->ctr[CL_CTR_DOCUMENTS], window_s), "tokens_per_s",
				 rate(m->ctr[CL_CTR_PROMPT_TOKENS], window_s)))) {
		json_decref(o);
		return NULL;
	}
	/* Transcription: the audio transcribed, per second of the window, and the real-time
	 * factor of each request (its e2e over its audio's length). */
	if (o && api == CL_API_TRANSCRIPTION &&
	    cli_rj_set(o, "audio",
		       json_pack("{s:o,s:o,s:o}", "seconds",
				 cli_rj_real(cli_rj_sig(m->ctr[CL_CTR_AUDIO_MS] / 1000.0, 9)),
				 "seconds_per_s", rate(m->ctr[CL_CTR_AUDIO_MS], window_s * 1000.0),
				 "rtf", cnt_summary(&m->cnt[CL_CNT_RTF_MILLI], 1000.0)))) {
		json_decref(o);
		return NULL;
	}
	if (o && (cli_rj_set(o, "http", http_json(m)) ||
		  cli_rj_set(o, "timing", cli_rs_timing_json(m)) ||
		  cli_rj_set(o, "too_short", json_boolean(too_short(st, m, window_s))) ||
		  cli_rj_set(o, "unaccounted",
			     client->unaccounted ? json_deep_copy(client->unaccounted)
						 : json_array()))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *cli_rs_class_figures(const struct cl_metrics *m, double window_s)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "requests", requests_json(m), "tokens",
			 tokens_json(m), "throughput", throughput_json(m, window_s), "latency_ms",
			 latency_json(m), "histograms", histograms_json(m));
}

/* -- stages[].endpoints: a stage's figures per endpoint when the target has several
 * (target.urls; docs/results.md, "Per endpoint") -- */

/* {count, p50, p99} in ms of one endpoint histogram (merged across agents and workers like
 * the stage's own, never percentiles averaged) */
static json_t *ep_lat_json(const struct cl_hist *h)
{
	return json_pack("{s:o,s:o,s:o}", "count", cli_rj_uint(cl_hist_count(h)), "p50",
			 pct_ms(h, 50), "p99", pct_ms(h, 99));
}

static json_t *ep_json(const struct cl_ep_metrics *ep, const char *url, double window_s)
{
	json_t *errors = json_object();
	uint64_t total = 0;
	for (size_t i = 0; errors && i < cli_rj_n_err_keys; i++) {
		uint64_t n = ep->ctr[CL_CTR_FIRST_ERROR + i];
		total += n;
		if (cli_rj_set(errors, cli_rj_err_keys[i], cli_rj_uint(n))) {
			json_decref(errors);
			errors = NULL;
		}
	}
	if (!errors)
		return NULL;
	uint64_t tok = ep->ctr[CL_CTR_OUTPUT_TOKENS];
	json_t *tps = window_s > 0 ? json_real(cli_rj_sig((double)tok / window_s, 6)) : json_null();
	json_t *rps = window_s > 0
			  ? json_real(cli_rj_sig(
				(double)ep->ctr[CL_CTR_WINDOW_SHARE_MILLI] / 1000.0 / window_s, 6))
			  : json_null();
	return json_pack(
	    "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "url", cli_rj_str(url), "started",
	    cli_rj_uint(ep->ctr[CL_CTR_STARTED]), "completed",
	    cli_rj_uint(ep->ctr[CL_CTR_COMPLETED]), "cut", cli_rj_uint(ep->ctr[CL_CTR_CUT]),
	    "cancelled", cli_rj_uint(ep->ctr[CL_CTR_CANCELLED]), "errors_total", cli_rj_uint(total),
	    "errors", errors, "output_tokens", cli_rj_uint(tok), "output_tokens_per_s", tps,
	    "requests_per_s", rps, "ttft_ms", ep_lat_json(&ep->lat[CL_EP_LAT_TTFT]), "itl_ms",
	    ep_lat_json(&ep->lat[CL_EP_LAT_ITL]));
}

json_t *cli_rs_endpoints_json(const struct cl_metrics *m, const json_t *urls, double window_s)
{
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < m->n_eps; i++) {
		const json_t *u = json_array_get(urls, i);
		if (cli_rj_append(a,
				  ep_json(&m->eps[i], u ? json_string_value(u) : NULL, window_s))) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/* stages[].images: what workload.images cost in prompt tokens, the measured prompt tokens per
 * request against the text's estimate, per image. */
json_t *cli_rs_images_json(const json_t *workload, const json_t *stage)
{
	const json_t *im = json_object_get(workload, "images");
	double per_request = json_number_value(json_object_get(im, "count"));
	if (!json_is_object(im) || !(per_request > 0))
		return NULL;
	double text = json_number_value(json_object_get(workload, "prompt_tokens_estimated_mean"));
	const json_t *pp = json_object_get(json_object_get(stage, "tokens"), "prompt_per_request");
	double n = json_number_value(json_object_get(pp, "count"));
	double with = json_number_value(json_object_get(pp, "mean"));
	/* Nothing measured (no usage, or no request finished): the cost is unknown, not 0. */
	bool have = n > 0 && isfinite(with) && json_is_number(json_object_get(pp, "mean"));
	return json_pack(
	    "{s:o,s:o,s:o,s:o}", "per_request", json_integer((json_int_t)per_request),
	    "prompt_tokens_mean", have ? json_real(with) : json_null(),
	    "text_prompt_tokens_estimated_mean", json_real(text), "prompt_tokens_per_image",
	    have ? json_real(cli_rj_sig((with - text) / per_request, 6)) : json_null());
}

json_t *cli_rs_interval_json(double t_s, double interval_s, const struct cl_metrics *m)
{
	const struct cl_hist *ttft = &m->lat[CL_LAT_TTFT], *itl = &m->lat[CL_LAT_ITL];
	/* Added after the first release, at the end: the loop's lag (client health per
	 * interval) and the errors by class (only the classes seen), for the report's
	 * timeline. */
	json_t *by_class = json_object();
	for (size_t k = 0; by_class && k < cli_rj_n_err_keys; k++) {
		uint64_t n = m->ctr[CL_CTR_FIRST_ERROR + k];
		if (n && json_object_set_new(by_class, cli_rj_err_keys[k], cli_rj_uint(n)) != 0) {
			json_decref(by_class);
			by_class = NULL;
		}
	}
	json_t *o = json_pack(
	    "{s:f,s:f,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "t_s",
	    cli_rj_round(t_s, 6), "interval_s", cli_rj_round(interval_s, 6), "active",
	    (json_int_t)m->health.inflight, "started", cli_rj_uint(m->ctr[CL_CTR_STARTED]),
	    "completed", cli_rj_uint(m->ctr[CL_CTR_COMPLETED]), "errors",
	    cli_rj_uint(cl_verdict_errors(m)), "requests_per_s",
	    rate(m->ctr[CL_CTR_COMPLETED_IN_WINDOW], interval_s), "output_tokens_per_s",
	    rate(m->ctr[CL_CTR_OUTPUT_TOKENS], interval_s), "ttft_p50_ms", pct_ms(ttft, 50),
	    "ttft_p99_ms", pct_ms(ttft, 99), "itl_p50_ms", pct_ms(itl, 50), "itl_p99_ms",
	    pct_ms(itl, 99), "dispatch_lag_p99_ms", pct_ms(&m->lat[CL_LAT_QUEUE], 99), "cpu_pct",
	    cli_rj_real(cli_rj_round(m->health.cpu_pct, 1)));
	int rc = o && by_class
		     ? cli_rj_set(o, "loop_lag_p99_ms", pct_ms(&m->lat[CL_LAT_LOOP_LAG], 99))
		     : CL_ENOMEM;
	if (rc == 0) {
		rc = cli_rj_set(o, "errors_by_class", by_class); /* takes it, even on failure */
		by_class = NULL;
	}
	json_decref(by_class);
	if (rc != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *cli_rs_warmup_json(const struct cl_metrics *m)
{
	return json_pack("{s:o,s:o,s:o,s:o}", "requests", cli_rj_uint(m->ctr[CL_CTR_STARTED]),
			 "completed", cli_rj_uint(m->ctr[CL_CTR_COMPLETED]), "errors",
			 cli_rj_uint(cl_verdict_errors(m)), "repeated",
			 cli_rj_uint(m->ctr[CL_CTR_REPEATED]));
}

static json_t *phase_s(int64_t us)
{
	return us >= 0 ? json_real(cli_rj_round(us / 1e6, 3)) : json_null();
}

json_t *cli_rs_readiness_json(const struct cl_readiness_result *rr)
{
	static const char *const status[] = { "pending", "passed", "timed_out", "fatal",
					      "cancelled" };
	const char *st = rr->status >= 0 && (size_t)rr->status < sizeof(status) / sizeof(status[0])
			     ? status[rr->status]
			     : "pending";
	json_t *phases =
	    json_pack("{s:o,s:o,s:o}", "connect_s", phase_s(rr->phase_passed_us[CL_READY_CONNECT]),
		      "models_s", phase_s(rr->phase_passed_us[CL_READY_MODELS]), "generation_s",
		      phase_s(rr->phase_passed_us[CL_READY_GENERATION]));
	return json_pack(
	    "{s:b,s:s,s:o,s:i,s:o,s:o,s:o,s:o,s:o}", "passed", rr->status == CL_READY_PASSED,
	    "status", st, "phases", phases, "attempts", (int)rr->attempts, "elapsed_s",
	    phase_s(rr->elapsed_us), "model",
	    rr->model[0] ? cli_rj_strn(rr->model, strnlen(rr->model, sizeof(rr->model)))
			 : json_null(),
	    "probe_ttft_ms",
	    rr->probe_ttft_us >= 0 ? json_real(rr->probe_ttft_us / 1000.0) : json_null(),
	    "last_error",
	    rr->last_error[0]
		? cli_rj_strn(rr->last_error, strnlen(rr->last_error, sizeof(rr->last_error)))
		: json_null(),
	    "failing_since_s", phase_s(rr->failing_since_us));
}
