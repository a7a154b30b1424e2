/* What a serving engine's /metrics says, in one vocabulary: each engine's names mapped to
 * requests running and waiting, KV-cache usage, prefix cache, preemptions and the server's
 * own TTFT and queue-time histograms.  Names matched (and the versions they were read from)
 * are listed in docs/results.md, "stages[].server". */
#ifndef CHATLOAD_SERVER_VOCAB_H
#define CHATLOAD_SERVER_VOCAB_H

#include "prom.h"

#include <stdbool.h>
#include <stdint.h>

enum cl_srv_engine {
	CL_SRV_UNKNOWN = 0,
	CL_SRV_VLLM,
	CL_SRV_SGLANG,
	CL_SRV_LLAMACPP,
	CL_SRV_TGI,
};

#define CL_SRV_MAX_BUCKETS 48

/* A histogram summed over its label sets: cumulative counts per upper bound, ascending,
 * the last one +Inf.  n == 0: the server does not offer it. */
struct cl_srv_hist {
	uint32_t n;
	double le[CL_SRV_MAX_BUCKETS];
	double count[CL_SRV_MAX_BUCKETS];
	double sum;
};

/* The latency histograms of one model_name (vLLM's and SGLang's pages label every series
 * with it; several engines or a router behind one page have several), for the request
 * classes' server view (docs/results.md, stages[].server.models). */
#define CL_SRV_MAX_MODELS 16
#define CL_SRV_MODEL_NAME 128
struct cl_srv_model_hists {
	char name[CL_SRV_MODEL_NAME]; /* the label's value as the page wrote it */
	struct cl_srv_hist ttft, queue, e2e;
};

/* One scrape in the common vocabulary.  A figure the server does not offer is NAN. */
struct cl_srv_snap {
	int64_t t_us; /* CLOCK_MONOTONIC of the scrape's start */
	enum cl_srv_engine engine;
	double running, waiting;            /* requests, summed over engines/models */
	double kv_usage;                    /* 0..1, mean over series */
	double prefix_queries, prefix_hits; /* counters (tokens for vLLM) */
	double prefix_hit_rate;             /* a gauge when that is all the server offers */
	double preemptions;                 /* counter */
	double spec_accepted, spec_draft;   /* counters: speculative decoding tokens */
	double aborted; /* counter: requests ended because their client went away (vLLM's
			 * request_success_total{finished_reason="abort"}) */
	struct cl_srv_hist ttft, queue, e2e; /* seconds */
	/* the same histograms per model_name label (none: a page without the label) */
	struct cl_srv_model_hists models[CL_SRV_MAX_MODELS];
	uint32_t n_models;
	/* process_start_time_seconds (Prometheus' client libraries, so vLLM, SGLang, TGI): a
	 * new value is a new process, a restart even when no counter had counted yet */
	double start_time_s;
	uint32_t series; /* samples on the page */
	/* GPU telemetry (dcgm-exporter's names, on any page read): cl_srv_vocab_gpu */
	double gpu_util;         /* 0..1, mean over GPUs */
	double gpu_mem_used;     /* bytes, summed over GPUs */
	double gpu_mem_fraction; /* used ÷ (used + free), over the GPUs that give both */
	double gpu_energy_j;     /* energy since the driver loaded, J, summed over GPUs */
	double gpu_power_w;      /* power draw, W, summed over GPUs */
	uint32_t gpu_count;      /* series of either (GPUs) the pages gave */
};

/* Fills snap from page (t_us set by the caller).  Never fails: what is missing is NAN. */
void cl_srv_vocab_read(const struct cl_prom_page *page, struct cl_srv_snap *snap);

/* Adds the GPU figures of pages[0..n) to snap (after cl_srv_vocab_read, which leaves them
 * NAN): dcgm-exporter's DCGM_FI_DEV_GPU_UTIL (percent; else DCGM_FI_PROF_GR_ENGINE_ACTIVE, a
 * ratio), DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE (MiB), DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
 * (mJ, a counter) and DCGM_FI_DEV_POWER_USAGE (W), one series per GPU. */
void cl_srv_vocab_gpu(const struct cl_prom_page *const *pages, size_t n, struct cl_srv_snap *snap);

/* True when the vocabulary reads a sample of this name (a histogram's _bucket, _sum and
 * _count too): the series left out of the raw ones kept beside it. */
bool cl_srv_vocab_known(const char *name);

/* "vllm", "sglang", "llama.cpp", "tgi", "unknown". */
const char *cl_srv_engine_name(enum cl_srv_engine e);

/* The q quantile (0..1) of a histogram's counts, interpolated linearly inside the bucket as
 * Prometheus' histogram_quantile does; NAN when it holds no count.  In the histogram's unit. */
double cl_srv_hist_quantile(const struct cl_srv_hist *h, double q);

#endif
