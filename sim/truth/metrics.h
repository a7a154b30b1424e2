/* chatload-sim's /metrics: its own state (batch, wait queue, KV cache, prefix cache) and its
 * own TTFT and queue-time histograms, served in vLLM's names, or SGLang's or llama.cpp's. */
#ifndef CHATLOAD_SIM_METRICS_H
#define CHATLOAD_SIM_METRICS_H

#include "chatload/buf.h"
#include "sim/sched/prefix.h"

#include <stdbool.h>
#include <stdint.h>

struct cl_sim;
struct cl_sim_stream;

#define CL_SIM_TTFT_BUCKETS  22 /* vLLM's */
#define CL_SIM_MAX_BUCKETS   40 /* --ttft-buckets */
#define CL_SIM_QUEUE_BUCKETS 20

#define CL_SIM_METRICS_MODELS 8 /* = CL_SIM_MAX_MODELS: TTFT and queue time per served name */

struct cl_sim_metrics {
	struct cl_sim_prefix_cache prefix;
	uint64_t kv_reserved; /* prompt + planned output tokens of running streams */
	uint64_t preemptions; /* streams started while their whole answer did not fit */
	uint64_t prompt_tokens, generation_tokens, finished;
	/* per served model name (--model's order): per bucket (not cumulative); last: +Inf */
	uint64_t ttft[CL_SIM_METRICS_MODELS][CL_SIM_MAX_BUCKETS + 1];
	const double *ttft_le; /* vLLM's, or --ttft-buckets */
	size_t n_ttft_le;
	uint64_t queue[CL_SIM_METRICS_MODELS][CL_SIM_QUEUE_BUCKETS + 1];
	double ttft_sum_s[CL_SIM_METRICS_MODELS], queue_sum_s[CL_SIM_METRICS_MODELS];
	bool model_seen[CL_SIM_METRICS_MODELS]; /* a first token of that model went out */
	double start_time_s; /* process_start_time_seconds: when this process started serving */
};

/* 0 or CL_ENOMEM (the prefix cache's table when --prefix-cache is on). */
int cl_sim_metrics_init(struct cl_sim *s);
void cl_sim_metrics_destroy(struct cl_sim *s);

/* The prompt's cached tokens (0 with --no-prefix-cache), counted as a prefix-cache query. */
uint32_t cl_sim_metrics_prefix(struct cl_sim *s, const struct cl_sim_prefix_key *k,
			       uint32_t prompt_tokens);

/* st got its batch slot: its tokens go into the KV cache; past the capacity a real server
 * preempts a running request, and that is counted (the recompute is not modelled). */
void cl_sim_metrics_started(struct cl_sim *s, const struct cl_sim_stream *st);

/* st's first token went out at actual_us: TTFT from arrival, queue time, prompt tokens. */
void cl_sim_metrics_first(struct cl_sim *s, const struct cl_sim_stream *st, int64_t actual_us);

/* st left its slot (ended or cut). */
void cl_sim_metrics_ended(struct cl_sim *s, const struct cl_sim_stream *st);

/* The exposition page in --metrics-names' vocabulary.  0, CL_ETOOBIG, CL_ENOMEM. */
int cl_sim_metrics_render(struct cl_sim *s, struct cl_buf *b);

#endif
