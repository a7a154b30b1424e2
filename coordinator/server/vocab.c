/* Each engine's metric names mapped to the common vocabulary of vocab.h. */
#include "vocab.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum field {
	F_RUNNING,
	F_WAITING,
	F_KV,
	F_PQ,
	F_PH,
	F_PRATE,
	F_PREEMPT,
	F_SPEC_ACC,
	F_SPEC_DRAFT,
	F_TTFT,
	F_QUEUE,
	F_E2E,
	F_ABORTED,
	F_COUNT,
};

struct map {
	enum cl_srv_engine engine;
	const char *name; /* the sample's name; for histograms the family's */
	enum field f;
};

/* The label F_ABORTED's series carries: the finish reason of a client gone away. */
#define ABORT_LABEL "finished_reason=\"abort\""

/*
 * vLLM: v0.10.2 and v0.11 (V1 engine, vllm/v1/metrics/loggers.py), with the names of v0.6-v0.9
 * kept where they changed (gpu_cache_usage_perc, gpu_prefix_cache_*).  SGLang: v0.4/v0.5
 * (python/sglang/srt/metrics/collector.py, docs/references/production_metrics.md).  llama.cpp:
 * b4748 (examples/server/server.cpp, --metrics).  TGI: v3 (docs reference/metrics).
 * The first name that gives a field wins: a page carrying old and new names counts once.
 */
static const struct map maps[] = {
	{ CL_SRV_VLLM, "vllm:num_requests_running", F_RUNNING },
	{ CL_SRV_VLLM, "vllm:num_requests_waiting", F_WAITING },
	{ CL_SRV_VLLM, "vllm:kv_cache_usage_perc", F_KV },
	{ CL_SRV_VLLM, "vllm:gpu_cache_usage_perc", F_KV },
	{ CL_SRV_VLLM, "vllm:prefix_cache_queries_total", F_PQ },
	{ CL_SRV_VLLM, "vllm:prefix_cache_hits_total", F_PH },
	{ CL_SRV_VLLM, "vllm:gpu_prefix_cache_queries_total", F_PQ },
	{ CL_SRV_VLLM, "vllm:gpu_prefix_cache_hits_total", F_PH },
	{ CL_SRV_VLLM, "vllm:gpu_prefix_cache_hit_rate", F_PRATE },
	{ CL_SRV_VLLM, "vllm:num_preemptions_total", F_PREEMPT },
	{ CL_SRV_VLLM, "vllm:num_preemptions", F_PREEMPT },
	{ CL_SRV_VLLM, "vllm:spec_decode_num_accepted_tokens_total", F_SPEC_ACC },
	{ CL_SRV_VLLM, "vllm:spec_decode_num_draft_tokens_total", F_SPEC_DRAFT },
	{ CL_SRV_VLLM, "vllm:time_to_first_token_seconds", F_TTFT },
	{ CL_SRV_VLLM, "vllm:request_queue_time_seconds", F_QUEUE },
	{ CL_SRV_VLLM, "vllm:e2e_request_latency_seconds", F_E2E },
	/* Requests the server ended because the client went away (vllm/v1/metrics/loggers.py:
	 * vllm:request_success by FinishReason, whose str() is "stop", "length", "abort"). */
	{ CL_SRV_VLLM, "vllm:request_success_total", F_ABORTED }, /* with ABORT_LABEL */
	{ CL_SRV_SGLANG, "sglang:num_running_reqs", F_RUNNING },
	{ CL_SRV_SGLANG, "sglang:num_queue_reqs", F_WAITING },
	{ CL_SRV_SGLANG, "sglang:token_usage", F_KV },
	{ CL_SRV_SGLANG, "sglang:cache_hit_rate", F_PRATE },
	{ CL_SRV_SGLANG, "sglang:num_retracted_reqs_total", F_PREEMPT },
	{ CL_SRV_SGLANG, "sglang:time_to_first_token_seconds", F_TTFT },
	{ CL_SRV_SGLANG, "sglang:queue_time_seconds", F_QUEUE },
	{ CL_SRV_SGLANG, "sglang:e2e_request_latency_seconds", F_E2E },
	{ CL_SRV_LLAMACPP, "llamacpp:requests_processing", F_RUNNING },
	{ CL_SRV_LLAMACPP, "llamacpp:requests_deferred", F_WAITING },
	{ CL_SRV_LLAMACPP, "llamacpp:kv_cache_usage_ratio", F_KV },
	{ CL_SRV_TGI, "tgi_batch_current_size", F_RUNNING },
	{ CL_SRV_TGI, "tgi_queue_size", F_WAITING },
	{ CL_SRV_TGI, "tgi_request_queue_duration", F_QUEUE },
	{ CL_SRV_TGI, "tgi_request_duration", F_E2E },
};

const char *cl_srv_engine_name(enum cl_srv_engine e)
{
	switch (e) {
	case CL_SRV_VLLM:
		return "vllm";
	case CL_SRV_SGLANG:
		return "sglang";
	case CL_SRV_LLAMACPP:
		return "llama.cpp";
	case CL_SRV_TGI:
		return "tgi";
	default:
		return "unknown";
	}
}

static bool is_hist_field(enum field f)
{
	return f == F_TTFT || f == F_QUEUE || f == F_E2E;
}

struct acc {
	const char *by; /* the name that gives this field */
	double sum;
	uint32_t n;
};

static struct cl_srv_hist *hist_of(struct cl_srv_snap *s, enum field f)
{
	return f == F_TTFT ? &s->ttft : f == F_QUEUE ? &s->queue : &s->e2e;
}

/* Adds a bucket's count to the one with the same bound, keeping bounds ascending. */
static void add_bucket(struct cl_srv_hist *h, double le, double count)
{
	uint32_t i = 0;
	while (i < h->n && h->le[i] < le)
		i++;
	if (i < h->n && h->le[i] == le) {
		h->count[i] += count;
		return;
	}
	if (h->n == CL_SRV_MAX_BUCKETS)
		return; /* more bounds than any engine uses: the finest are dropped */
	memmove(&h->le[i + 1], &h->le[i], (h->n - i) * sizeof(double));
	memmove(&h->count[i + 1], &h->count[i], (h->n - i) * sizeof(double));
	h->le[i] = le;
	h->count[i] = count;
	h->n++;
}

static void add_hist_sample(struct cl_srv_hist *h, const struct cl_prom_sample *s,
			    const char *family)
{
	const char *sfx = s->name + strlen(family);
	if (strcmp(sfx, "_bucket") == 0 && !isnan(s->le))
		add_bucket(h, s->le, s->value);
	else if (strcmp(sfx, "_sum") == 0)
		h->sum += s->value;
}

/* The model_name label's value in labels (k="v" pairs joined by ','), into out; false when
 * there is none. */
static bool model_label(const char *labels, char *out, size_t n)
{
	for (const char *p = labels; p && *p;) {
		if (strncmp(p, "model_name=\"", 12) == 0) {
			p += 12;
			size_t k = 0;
			while (*p && *p != '"' && k + 2 < n) { /* room for an escape and the NUL */
				if (*p == '\\' && p[1])
					out[k++] = *p++;
				out[k++] = *p++;
			}
			out[k] = '\0';
			return true;
		}
		/* the next pair: past this value's closing quote */
		const char *q = strchr(p, '"');
		if (!q)
			return false;
		for (q++; *q && *q != '"'; q++)
			if (*q == '\\' && q[1])
				q++;
		p = *q ? q + 1 : q;
		if (*p == ',')
			p++;
	}
	return false;
}

/* snap's histograms of that model_name, a new slot for a new one; NULL when full. */
static struct cl_srv_model_hists *model_slot(struct cl_srv_snap *snap, const char *name)
{
	for (uint32_t i = 0; i < snap->n_models; i++)
		if (strcmp(snap->models[i].name, name) == 0)
			return &snap->models[i];
	if (snap->n_models == CL_SRV_MAX_MODELS)
		return NULL;
	struct cl_srv_model_hists *m = &snap->models[snap->n_models++];
	snprintf(m->name, sizeof(m->name), "%s", name);
	return m;
}

static const struct map *lookup(const struct cl_prom_sample *s)
{
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		const struct map *m = &maps[i];
		if (!is_hist_field(m->f)) {
			if (strcmp(s->name, m->name) == 0 &&
			    (m->f != F_ABORTED || (s->labels && strstr(s->labels, ABORT_LABEL))))
				return m;
			continue;
		}
		/* By the sample's name, so a page without TYPE lines is read too. */
		size_t n = strlen(m->name);
		if (strncmp(s->name, m->name, n) == 0 &&
		    (strcmp(s->name + n, "_bucket") == 0 || strcmp(s->name + n, "_sum") == 0 ||
		     strcmp(s->name + n, "_count") == 0))
			return m;
	}
	return NULL;
}

static double finish(const struct acc *a, enum field f)
{
	if (a->n == 0)
		return NAN;
	return f == F_KV || f == F_PRATE ? a->sum / a->n : a->sum;
}

void cl_srv_vocab_read(const struct cl_prom_page *page, struct cl_srv_snap *snap)
{
	int64_t t = snap->t_us;
	memset(snap, 0, sizeof(*snap));
	snap->t_us = t;
	snap->series = (uint32_t)page->n;
	struct acc acc[F_COUNT] = { { 0 } };
	snap->start_time_s = NAN;
	for (size_t i = 0; i < page->n; i++) {
		const struct cl_prom_sample *s = &page->s[i];
		/* Not an engine's name: it says no engine, only that the process is the same. */
		if (isnan(snap->start_time_s) && strcmp(s->name, "process_start_time_seconds") == 0)
			snap->start_time_s = s->value;
		const struct map *m = lookup(s);
		if (!m || isnan(s->value))
			continue;
		if (snap->engine == CL_SRV_UNKNOWN)
			snap->engine = m->engine;
		struct acc *a = &acc[m->f];
		if (a->by && a->by != m->name)
			continue;
		a->by = m->name;
		a->n++;
		if (is_hist_field(m->f)) {
			add_hist_sample(hist_of(snap, m->f), s, m->name);
			char model[CL_SRV_MODEL_NAME];
			struct cl_srv_model_hists *mh = model_label(s->labels, model, sizeof(model))
							    ? model_slot(snap, model)
							    : NULL;
			if (mh)
				add_hist_sample(m->f == F_TTFT    ? &mh->ttft
						: m->f == F_QUEUE ? &mh->queue
								  : &mh->e2e,
						s, m->name);
		} else
			a->sum += s->value;
	}
	snap->running = finish(&acc[F_RUNNING], F_RUNNING);
	snap->waiting = finish(&acc[F_WAITING], F_WAITING);
	snap->kv_usage = finish(&acc[F_KV], F_KV);
	snap->prefix_queries = finish(&acc[F_PQ], F_PQ);
	snap->prefix_hits = finish(&acc[F_PH], F_PH);
	snap->prefix_hit_rate = finish(&acc[F_PRATE], F_PRATE);
	snap->preemptions = finish(&acc[F_PREEMPT], F_PREEMPT);
	snap->spec_accepted = finish(&acc[F_SPEC_ACC], F_SPEC_ACC);
	snap->spec_draft = finish(&acc[F_SPEC_DRAFT], F_SPEC_DRAFT);
	snap->aborted = finish(&acc[F_ABORTED], F_ABORTED);
	snap->gpu_util = snap->gpu_mem_used = snap->gpu_mem_fraction = NAN;
	snap->gpu_energy_j = snap->gpu_power_w = NAN;
}

/* dcgm-exporter 3.3/4.x (etc/default-counters.csv; docs.nvidia.com/datacenter/cloud-native/
 * gpu-telemetry/latest/dcgm-exporter.html): gauges, one series per GPU (labels gpu, UUID,
 * device, modelName, Hostname). */
#define DCGM_UTIL   "DCGM_FI_DEV_GPU_UTIL"          /* percent */
#define DCGM_ACTIVE "DCGM_FI_PROF_GR_ENGINE_ACTIVE" /* ratio, the profiling counters' */
#define DCGM_USED   "DCGM_FI_DEV_FB_USED"           /* MiB */
#define DCGM_FREE   "DCGM_FI_DEV_FB_FREE"           /* MiB */
/* What the GPUs burn (docs/results.md, "Joules and money"): the energy counter when the
 * exporter has it (a default counter since dcgm-exporter 2.x), else the power gauge. */
#define DCGM_ENERGY "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" /* mJ since boot, a counter */
#define DCGM_POWER  "DCGM_FI_DEV_POWER_USAGE"              /* W */

void cl_srv_vocab_gpu(const struct cl_prom_page *const *pages, size_t n, struct cl_srv_snap *snap)
{
	double util = 0, active = 0, used = 0, free_ = 0, energy = 0, power = 0;
	uint32_t n_util = 0, n_active = 0, n_used = 0, n_free = 0, n_energy = 0, n_power = 0;
	for (size_t p = 0; p < n; p++) {
		for (size_t i = 0; pages[p] && i < pages[p]->n; i++) {
			const struct cl_prom_sample *s = &pages[p]->s[i];
			if (!isfinite(s->value) || strncmp(s->name, "DCGM_FI_", 8) != 0)
				continue;
			if (strcmp(s->name, DCGM_UTIL) == 0)
				util += s->value, n_util++;
			else if (strcmp(s->name, DCGM_ACTIVE) == 0)
				active += s->value, n_active++;
			else if (strcmp(s->name, DCGM_USED) == 0)
				used += s->value, n_used++;
			else if (strcmp(s->name, DCGM_FREE) == 0)
				free_ += s->value, n_free++;
			else if (strcmp(s->name, DCGM_ENERGY) == 0)
				energy += s->value, n_energy++;
			else if (strcmp(s->name, DCGM_POWER) == 0)
				power += s->value, n_power++;
		}
	}
	snap->gpu_util = n_util ? util / n_util / 100 : n_active ? active / n_active : NAN;
	snap->gpu_mem_used = n_used ? used * 1048576.0 : NAN;
	snap->gpu_mem_fraction =
	    n_used && n_used == n_free && used + free_ > 0 ? used / (used + free_) : NAN;
	/* Summed: the server's energy is every GPU's.  A scrape that lost a GPU's series reads
	 * lower; the stage's figure (server/stage.c) refuses a counter that went down. */
	snap->gpu_energy_j = n_energy ? energy / 1000.0 : NAN;
	snap->gpu_power_w = n_power ? power : NAN;
	snap->gpu_count = n_energy > n_power ? n_energy : n_power;
}

bool cl_srv_vocab_known(const char *name)
{
	if (strcmp(name, DCGM_UTIL) == 0 || strcmp(name, DCGM_ACTIVE) == 0 ||
	    strcmp(name, DCGM_USED) == 0 || strcmp(name, DCGM_FREE) == 0)
		return true;
	struct cl_prom_sample s = { .name = (char *)name };
	return lookup(&s) != NULL;
}

double cl_srv_hist_quantile(const struct cl_srv_hist *h, double q)
{
	if (h->n == 0)
		return NAN;
	double total = h->count[h->n - 1];
	if (!(total > 0))
		return NAN;
	double rank = q * total;
	double lo_le = 0, lo_count = 0;
	for (uint32_t i = 0; i < h->n; i++) {
		if (h->count[i] >= rank) {
			if (isinf(h->le[i])) /* past the last finite bound: that bound is all we
						know */
				return i > 0 ? h->le[i - 1] : NAN;
			double in = h->count[i] - lo_count;
			if (!(in > 0))
				return h->le[i];
			return lo_le + (h->le[i] - lo_le) * (rank - lo_count) / in;
		}
		lo_le = h->le[i];
		lo_count = h->count[i];
	}
	return h->le[h->n - 1];
}
