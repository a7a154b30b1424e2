/* chatload-sim's /metrics (metrics.h). */
#include "metrics.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "chatload/err.h"
#include "sim/sim.h"

#include <stdio.h>
#include <string.h>

/* vLLM v0.11's buckets (vllm/v1/metrics/loggers.py), so a page reads like its pages. */
static const double ttft_le[CL_SIM_TTFT_BUCKETS] = { 0.001, 0.005, 0.01,  0.02,  0.04, 0.06,
						     0.08,  0.1,   0.25,  0.5,   0.75, 1.0,
						     2.5,   5.0,   7.5,   10.0,  20.0, 40.0,
						     80.0,  160.0, 640.0, 2560.0 };
static const double queue_le[CL_SIM_QUEUE_BUCKETS] = { 0.3,   0.5,   0.8,   1.0,    1.5,
						       2.0,   2.5,   5.0,   10.0,   20.0,
						       30.0,  40.0,  50.0,  60.0,   120.0,
						       240.0, 480.0, 960.0, 1920.0, 7680.0 };

int cl_sim_metrics_init(struct cl_sim *s)
{
	memset(&s->metrics, 0, sizeof(s->metrics));
	s->metrics.start_time_s = (double)cl_wall_us() / 1e6;
	s->metrics.ttft_le = s->cfg->n_ttft_buckets ? s->cfg->ttft_buckets : ttft_le;
	s->metrics.n_ttft_le =
	    s->cfg->n_ttft_buckets ? s->cfg->n_ttft_buckets : CL_SIM_TTFT_BUCKETS;
	if (!s->cfg->prefix_cache)
		return 0;
	return cl_sim_prefix_init(&s->metrics.prefix);
}

void cl_sim_metrics_destroy(struct cl_sim *s)
{
	cl_sim_prefix_destroy(&s->metrics.prefix);
}

uint32_t cl_sim_metrics_prefix(struct cl_sim *s, const struct cl_sim_prefix_key *k,
			       uint32_t prompt_tokens)
{
	return cl_sim_prefix_lookup(&s->metrics.prefix, k, prompt_tokens, s->cfg->chars_per_token);
}

static uint64_t footprint(const struct cl_sim_stream *st)
{
	return (uint64_t)st->prompt_tokens + st->planned_tokens;
}

void cl_sim_metrics_started(struct cl_sim *s, const struct cl_sim_stream *st)
{
	struct cl_sim_metrics *m = &s->metrics;
	m->kv_reserved += footprint(st);
	if (s->cfg->kv_cache_tokens && m->kv_reserved > s->cfg->kv_cache_tokens)
		m->preemptions++;
}

void cl_sim_metrics_ended(struct cl_sim *s, const struct cl_sim_stream *st)
{
	struct cl_sim_metrics *m = &s->metrics;
	uint64_t f = footprint(st);
	/* Only a stream metrics_started counted ends, with the same footprint. */
	CL_ASSERT(m->kv_reserved >= f);
	m->kv_reserved -= f;
	m->generation_tokens += st->sent_tokens;
	m->finished++;
}

static void observe(uint64_t *buckets, const double *le, size_t n, double v)
{
	size_t i = 0;
	while (i < n && v > le[i])
		i++;
	buckets[i]++;
}

/* The index of the served name st asked for (--model's order; 0 when none matched). */
static size_t model_index(const struct cl_sim *s, const struct cl_sim_stream *st)
{
	for (size_t i = 0; st->model && i < s->cfg->n_models && i < CL_SIM_METRICS_MODELS; i++)
		if (st->model == s->cfg->models[i])
			return i;
	return 0;
}

void cl_sim_metrics_first(struct cl_sim *s, const struct cl_sim_stream *st, int64_t actual_us)
{
	struct cl_sim_metrics *m = &s->metrics;
	double ttft_s = (actual_us - st->arrival_us) / 1e6;
	double queue_s = (st->start_us - st->arrival_us) / 1e6;
	size_t k = model_index(s, st);
	observe(m->ttft[k], m->ttft_le, m->n_ttft_le, ttft_s);
	observe(m->queue[k], queue_le, CL_SIM_QUEUE_BUCKETS, queue_s);
	m->ttft_sum_s[k] += ttft_s;
	m->queue_sum_s[k] += queue_s;
	m->model_seen[k] = true;
	m->prompt_tokens += st->prompt_tokens;
}

/* Prompt and output tokens of the streams holding a slot, now: the KV cache in use. */
static uint64_t kv_used(const struct cl_sim *s)
{
	uint64_t used = 0;
	for (const struct cl_sim_conn *c = s->conns; c; c = c->next)
		if (c->st.phase == CL_SIM_PHASE_RUNNING)
			used += (uint64_t)c->st.prompt_tokens + c->st.sent_tokens;
	return used;
}

struct names {
	const char *running, *waiting, *kv, *ttft, *queue, *pq, *ph, *preempt, *prompt, *gen;
	const char *labels; /* of every series */
};

static const struct names vllm = {
	"vllm:num_requests_running",       "vllm:num_requests_waiting",
	"vllm:kv_cache_usage_perc",        "vllm:time_to_first_token_seconds",
	"vllm:request_queue_time_seconds", "vllm:prefix_cache_queries_total",
	"vllm:prefix_cache_hits_total",    "vllm:num_preemptions_total",
	"vllm:prompt_tokens_total",        "vllm:generation_tokens_total",
	"engine=\"0\",model_name=\"%s\"",
};
static const struct names sglang = {
	"sglang:num_running_reqs",
	"sglang:num_queue_reqs",
	"sglang:token_usage",
	"sglang:time_to_first_token_seconds",
	"sglang:queue_time_seconds",
	NULL,
	NULL,
	"sglang:num_retracted_reqs_total",
	"sglang:prompt_tokens_total",
	"sglang:generation_tokens_total",
	"model_name=\"%s\"",
};
static const struct names llamacpp = {
	"llamacpp:requests_processing",
	"llamacpp:requests_deferred",
	"llamacpp:kv_cache_usage_ratio",
	NULL,
	NULL,
	NULL,
	NULL,
	NULL,
	"llamacpp:prompt_tokens_total",
	"llamacpp:tokens_predicted_total",
	"",
};

static int one(struct cl_buf *b, const char *name, const char *type, const char *lab, double v)
{
	if (!name)
		return 0;
	return cl_buf_printf(b, "# HELP %s chatload-sim's %s.\n# TYPE %s %s\n%s%s%s%s %.9g\n", name,
			     name, name, type, name, *lab ? "{" : "", lab, *lab ? "}" : "", v);
}

/* One series of histogram `name` (after its HELP and TYPE lines when head). */
static int hist(struct cl_buf *b, const char *name, bool head, const char *lab,
		const uint64_t *buckets, const double *le, size_t n, double sum)
{
	if (!name)
		return 0;
	const char *sep = *lab ? "," : "";
	int rc = head ? cl_buf_printf(b, "# HELP %s chatload-sim's %s.\n# TYPE %s histogram\n",
				      name, name, name)
		      : 0;
	uint64_t cum = 0;
	for (size_t i = 0; i <= n && !rc; i++) {
		cum += buckets[i];
		char lev[32];
		if (i < n)
			snprintf(lev, sizeof(lev), "%g", le[i]);
		rc = cl_buf_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, lab, sep,
				   i < n ? lev : "+Inf", (unsigned long long)cum);
	}
	if (!rc)
		rc = cl_buf_printf(b, "%s_sum%s%s%s %.9g\n%s_count%s%s%s %llu\n", name,
				   *lab ? "{" : "", lab, *lab ? "}" : "", sum, name,
				   *lab ? "{" : "", lab, *lab ? "}" : "", (unsigned long long)cum);
	return rc;
}

int cl_sim_metrics_render(struct cl_sim *s, struct cl_buf *b)
{
	const struct cl_sim_config *cfg = s->cfg;
	const struct cl_sim_metrics *m = &s->metrics;
	const struct names *nm = cfg->metrics_names == CL_SIM_NAMES_SGLANG     ? &sglang
				 : cfg->metrics_names == CL_SIM_NAMES_LLAMACPP ? &llamacpp
									       : &vllm;
	char lab[160];
	snprintf(lab, sizeof(lab), nm->labels, cfg->models[0]);
	double cap = cfg->kv_cache_tokens ? (double)cfg->kv_cache_tokens : 0;
	double usage = cap > 0 ? (double)kv_used(s) / cap : 0;
	if (usage > 1)
		usage = 1;
	int rc = one(b, nm->running, "gauge", lab, s->active);
	rc = rc ? rc : one(b, nm->waiting, "gauge", lab, s->queued);
	rc = rc ? rc : one(b, nm->kv, "gauge", lab, usage);
	if (!rc && cfg->metrics_names == CL_SIM_NAMES_SGLANG && cfg->prefix_cache)
		rc = one(b, "sglang:cache_hit_rate", "gauge", lab,
			 m->prefix.queries ? (double)m->prefix.hits / m->prefix.queries : 0);
	if (cfg->prefix_cache) {
		rc = rc ? rc : one(b, nm->pq, "counter", lab, (double)m->prefix.queries);
		rc = rc ? rc : one(b, nm->ph, "counter", lab, (double)m->prefix.hits);
	}
	rc = rc ? rc : one(b, nm->preempt, "counter", lab, (double)m->preemptions);
	rc = rc ? rc : one(b, nm->prompt, "counter", lab, (double)m->prompt_tokens);
	rc = rc ? rc : one(b, nm->gen, "counter", lab, (double)m->generation_tokens);
	/* TTFT and queue time per served name, as several engines (or a router) behind one
	 * page label theirs by model_name; the first name always (a page with no request yet
	 * still offers the histograms), the others once they served a request.  (vLLM itself
	 * labels a LoRA adapter's requests with its base model's name.) */
	for (int fam = 0; fam < 2; fam++) /* each family's series together */
		for (size_t k = 0; !rc && k < cfg->n_models && k < CL_SIM_METRICS_MODELS; k++) {
			if (k && !m->model_seen[k])
				continue;
			snprintf(lab, sizeof(lab), nm->labels, cfg->models[k]);
			rc = fam == 0 ? hist(b, nm->ttft, k == 0, lab, m->ttft[k], m->ttft_le,
					     m->n_ttft_le, m->ttft_sum_s[k])
				      : hist(b, nm->queue, k == 0, lab, m->queue[k], queue_le,
					     CL_SIM_QUEUE_BUCKETS, m->queue_sum_s[k]);
		}
	snprintf(lab, sizeof(lab), nm->labels, cfg->models[0]);
	/* Clients that went away mid-answer, as vLLM counts the requests it aborts for them
	 * (vllm:request_success_total by finished_reason; only "abort" here, the one a test
	 * compares with a client's cancelled requests).  The other engines' names: none. */
	if (!rc && nm == &vllm) {
		char alab[200];
		snprintf(alab, sizeof(alab), "%s,finished_reason=\"abort\"", lab);
		rc = one(b, "vllm:request_success_total", "counter", alab,
			 (double)s->stats.client_gone);
	}
	/* Prometheus' Python client adds it to vLLM's and SGLang's pages; llama.cpp's has none.
	 * A scraper tells a restart by it even before any counter went down. */
	if (!rc && cfg->metrics_names != CL_SIM_NAMES_LLAMACPP)
		rc =
		    cl_buf_printf(b,
				  "# HELP process_start_time_seconds Start time of the process "
				  "since unix epoch in seconds.\n# TYPE process_start_time_seconds "
				  "gauge\nprocess_start_time_seconds %.3f\n",
				  m->start_time_s);
	return rc;
}
