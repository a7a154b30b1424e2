/* Test helpers for the coordinator tests: deterministic synthetic traffic recorded into real
 * cl_metrics (real histograms, real merge), and a hand-built scenario.  Header-only so each
 * test program and results_fixture.c can include it. */
#ifndef CHATLOAD_TESTS_COORD_METRICS_H
#define CHATLOAD_TESTS_COORD_METRICS_H

#include "chatload/metrics.h"
#include "coordinator/scenario/scenario.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: reproducible across runs and machines. */
static inline uint64_t tm_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static inline double tm_unit(uint64_t *s)
{
	return ((tm_rand(s) >> 11) + 0.5) / 9007199254740992.0;
}

/* Roughly lognormal around median with spread sigma (Box-Muller). */
static inline double tm_lognormal(uint64_t *s, double median, double sigma)
{
	double u1 = tm_unit(s), u2 = tm_unit(s);
	double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
	return median * exp(sigma * z);
}

/* What one batch of synthetic requests looks like. */
struct tm_traffic {
	uint32_t requests;      /* completed requests to record */
	uint32_t errors_5xx;    /* failed requests (class http_5xx) */
	double ttft_ms;         /* median TTFT */
	double itl_ms;          /* median inter-token gap */
	uint32_t output_tokens; /* per request */
	uint32_t prompt_tokens;
	uint32_t tokens_per_chunk; /* 1 normally; 2+ looks like speculative decoding */
	double queue_ms;           /* median dispatch lag */
	bool usage_from_chunks;    /* counts as if the server sent no usage */
	double good_ttft_ms;       /* requests with ttft under this count as good (0: all) */
	double cpu_pct, cpu_capacity_pct;
	int64_t inflight;
};

/* Records t into m as if the engine had measured it.  Every value lands in real
 * histograms; counters are kept consistent (started = completed + errors). */
static inline void tm_record(struct cl_metrics *m, uint64_t *seed, const struct tm_traffic *t)
{
	uint32_t chunks = t->output_tokens / (t->tokens_per_chunk ? t->tokens_per_chunk : 1);
	if (chunks == 0)
		chunks = 1;
	for (uint32_t i = 0; i < t->requests; i++) {
		int64_t queue = (int64_t)(tm_lognormal(seed, t->queue_ms, 0.3) * 1000) + 1;
		int64_t ttfb = (int64_t)(tm_lognormal(seed, t->ttft_ms * 0.4, 0.2) * 1000) + 1;
		int64_t ttft = (int64_t)(tm_lognormal(seed, t->ttft_ms, 0.35) * 1000) + 1;
		int64_t e2e = ttft;
		cl_hist_record(&m->lat[CL_LAT_QUEUE], queue);
		cl_hist_record(&m->lat[CL_LAT_TTFB], ttfb);
		cl_hist_record(&m->lat[CL_LAT_TTFT], ttft);
		cl_hist_record(&m->lat[CL_LAT_TTFC], ttft);
		for (uint32_t c = 1; c < chunks; c++) {
			int64_t gap = (int64_t)(tm_lognormal(seed, t->itl_ms, 0.25) * 1000) + 1;
			cl_hist_record(&m->lat[CL_LAT_ITL], gap);
			e2e += gap;
		}
		for (uint32_t c = 0; c < chunks; c++)
			cl_hist_record(
			    &m->cnt[CL_CNT_TOKENS_PER_CHUNK],
			    1000 * (int64_t)(t->tokens_per_chunk ? t->tokens_per_chunk : 1));
		if (t->output_tokens > 1)
			cl_hist_record(&m->lat[CL_LAT_TPOT], (e2e - ttft) / (t->output_tokens - 1));
		cl_hist_record(&m->lat[CL_LAT_E2E], e2e);
		cl_hist_record(&m->lat[CL_LAT_E2E_SCHED], e2e + queue);
		cl_hist_record(&m->lat[CL_LAT_LOOP_LAG], 50 + (int64_t)(tm_unit(seed) * 200));
		cl_hist_record(&m->cnt[CL_CNT_OUTPUT_TOKENS], t->output_tokens);
		cl_hist_record(&m->cnt[CL_CNT_PROMPT_TOKENS], t->prompt_tokens);
		m->ctr[CL_CTR_STARTED]++;
		m->ctr[CL_CTR_COMPLETED]++;
		m->ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
		m->ctr[CL_CTR_WINDOW_SHARE_MILLI] += 1000; /* whole lifetime inside */
		m->ctr[CL_CTR_OUTPUT_TOKENS] += t->output_tokens;
		m->ctr[CL_CTR_PROMPT_TOKENS] += t->prompt_tokens;
		m->ctr[CL_CTR_CHUNKS] += chunks;
		m->ctr[CL_CTR_BYTES] += 120ull * chunks;
		m->ctr[t->usage_from_chunks ? CL_CTR_USAGE_FROM_CHUNKS
					    : CL_CTR_USAGE_FROM_SERVER]++;
		if (t->good_ttft_ms <= 0 || ttft <= (int64_t)(t->good_ttft_ms * 1000))
			m->ctr[CL_CTR_GOOD]++;
	}
	for (uint32_t i = 0; i < t->errors_5xx; i++) {
		static const char body[] = "{\"error\":{\"message\":\"model overloaded\"}}";
		m->ctr[CL_CTR_STARTED]++;
		m->ctr[CL_CTR_ERR_HTTP_5XX]++;
		cl_metrics_add_err_sample(m, CL_CTR_ERR_HTTP_5XX, 503, body, sizeof(body) - 1);
	}
	if (t->cpu_pct > m->health.cpu_pct)
		m->health.cpu_pct = t->cpu_pct;
	if (t->cpu_capacity_pct > m->health.cpu_pct_capacity)
		m->health.cpu_pct_capacity = t->cpu_capacity_pct;
	m->health.inflight = t->inflight;
	m->health.rss_bytes = 64 << 20;
}

/* A scenario built by hand (the loader is another module): n concurrency stages named
 * "c<N>", or rate stages when rate_per_s > 0.  Free with tm_scenario_free. */
static inline void tm_scenario(struct cl_scenario *s, const char *name, const uint32_t *conc,
			       size_t n)
{
	memset(s, 0, sizeof(*s));
	s->name = strdup(name);
	s->target.url = strdup("http://127.0.0.1:30001/v1");
	s->target.model = strdup("test-model");
	s->stages = calloc(n, sizeof(*s->stages));
	s->n_stages = n;
	for (size_t i = 0; i < n; i++) {
		char buf[32];
		snprintf(buf, sizeof(buf), "c%u", conc[i]);
		s->stages[i].name = strdup(buf);
		s->stages[i].mode = CL_MODE_CONCURRENCY;
		s->stages[i].concurrency = conc[i];
		s->stages[i].duration_us = 10000000;
	}
	s->output.formats = CL_FMT_JSON | CL_FMT_CSV | CL_FMT_MD | CL_FMT_HTML;
}

/* Adds an SLO (key as a user writes it). */
static inline void tm_add_slo(struct cl_scenario *s, const char *key, enum cl_slo_kind kind,
			      int lat, double percentile, double limit, const char *stage)
{
	s->slos = realloc(s->slos, (s->n_slos + 1) * sizeof(*s->slos));
	struct cl_scn_slo *slo = &s->slos[s->n_slos++];
	memset(slo, 0, sizeof(*slo));
	slo->key = strdup(key);
	slo->kind = kind;
	slo->lat = lat;
	slo->percentile = percentile;
	slo->limit = limit;
	slo->stage = stage ? strdup(stage) : NULL;
}

static inline void tm_scenario_free(struct cl_scenario *s)
{
	free(s->name);
	free(s->target.url);
	free(s->target.model);
	for (size_t i = 0; i < s->n_stages; i++)
		free(s->stages[i].name);
	free(s->stages);
	for (size_t i = 0; i < s->n_slos; i++) {
		free(s->slos[i].key);
		free(s->slos[i].stage);
	}
	free(s->slos);
	free(s->estimate.samples);
	free(s->estimate.from_stage);
	memset(s, 0, sizeof(*s));
}

#endif
