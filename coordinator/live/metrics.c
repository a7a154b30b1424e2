/* The run's live metrics: snapshots the run thread writes, Prometheus text rendered for HTTP
 * threads (see live/metrics.h; docs/metrics.md lists every name). */
#include "coordinator/live/metrics.h"

#include "chatload/assert.h"
#include "chatload/clock.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Latency summaries exported per stage: the histogram, the family name, its help. */
static const struct {
	int lat;
	const char *name;
	const char *help;
} lats[] = {
	{ CL_LAT_TTFT, "chatload_ttft_seconds", "Time to first token (reasoning or content)." },
	{ CL_LAT_TTFC, "chatload_ttfc_seconds", "Time to first content token." },
	{ CL_LAT_ITL, "chatload_itl_seconds", "Inter-token latency: gap between token chunks." },
	{ CL_LAT_TPOT, "chatload_tpot_seconds", "Time per output token after the first." },
	{ CL_LAT_E2E, "chatload_e2e_seconds", "Request end to end: sent to last token." },
	{ CL_LAT_QUEUE, "chatload_dispatch_lag_seconds",
	  "Intended start to handed to libcurl (client dispatch lag)." },
};
static const double quantiles[] = { 0.5, 0.9, 0.99 };
#define NQ 3

/* Error classes as the label `class` spells them: the counter names without "err_". */
static const int err_ctrs[] = { CL_CTR_ERR_CONNECT,
				CL_CTR_ERR_TLS,
				CL_CTR_ERR_HTTP_4XX,
				CL_CTR_ERR_HTTP_429,
				CL_CTR_ERR_HTTP_5XX,
				CL_CTR_ERR_TIMEOUT,
				CL_CTR_ERR_STREAM_MALFORMED,
				CL_CTR_ERR_STREAM_INCOMPLETE,
				CL_CTR_ERR_STREAM_ERROR,
				CL_CTR_ERR_EMPTY_ANSWER,
				CL_CTR_ERR_OTHER };

/* Plain counters per stage: name, help, counter. */
static const struct {
	const char *name;
	const char *help;
	int ctr;
} counters[] = {
	{ "chatload_requests_started_total", "Requests handed to libcurl in the measured window.",
	  CL_CTR_STARTED },
	{ "chatload_requests_completed_total", "Requests that completed without error.",
	  CL_CTR_COMPLETED },
	{ "chatload_requests_cut_total", "Requests cancelled at the end of a stage (not errors).",
	  CL_CTR_CUT },
	{ "chatload_requests_cancelled_total",
	  "Requests the client abandoned (workload.cancel; not completed, not errors).",
	  CL_CTR_CANCELLED },
	{ "chatload_requests_no_content_total", "Completed requests without a content token.",
	  CL_CTR_NO_CONTENT },
	{ "chatload_output_tokens_total", "Output tokens received (reasoning included).",
	  CL_CTR_OUTPUT_TOKENS },
	{ "chatload_reasoning_tokens_total", "Reasoning tokens received.",
	  CL_CTR_REASONING_TOKENS },
	{ "chatload_prompt_tokens_total", "Prompt tokens of completed requests (from usage).",
	  CL_CTR_PROMPT_TOKENS },
	{ "chatload_response_bytes_total", "Response body bytes received.", CL_CTR_BYTES },
	/* workload.api: embeddings: the inputs embedded (their tokens are the prompt tokens
	 * above; their latency chatload_e2e_seconds); 0 for the generating APIs. */
	{ "chatload_embedding_inputs_total",
	  "Embedding inputs (vectors) answered by completed requests.", CL_CTR_EMBEDDING_INPUTS },
	/* workload.api: rerank or score: the documents scored (the queries are the completed
	 * requests, their tokens the prompt tokens above); 0 for every other API. */
	{ "chatload_documents_total", "Documents sent by completed rerank or score requests.",
	  CL_CTR_DOCUMENTS },
	/* workload.api: transcription: the audio completed requests uploaded; 0 otherwise. */
	{ "chatload_audio_seconds_total", "Seconds of audio transcribed by completed requests.",
	  CL_CTR_AUDIO_MS },
};

static const char *const phase_names[CL_LIVE__PHASES] = { "starting", "readiness", "warmup",
							  "stages", "finished" };

/* Per request class (workload.classes): what each class's record gives a stage. */
#define LM_CLASSES_MAX 16
struct lm_class {
	uint64_t started, completed, errors, output_tokens;
	double ttft_q[NQ], e2e_q[NQ]; /* seconds; NAN without data */
	double ttft_sum_s, e2e_sum_s; /* a summary's _sum and _count */
	uint64_t ttft_count, e2e_count;
};

struct lm_stage {
	char *name;
	uint32_t n_cls;
	struct lm_class cls[LM_CLASSES_MAX];
	size_t index;
	char mode[16];
	double level;
	char status[16]; /* "running" while it runs */
	uint64_t ctr[CL_CTR__COUNT];
	struct {
		double q[NQ]; /* seconds; NAN without data */
		double sum_s;
		uint64_t count;
	} lat[N(lats)];
};

struct cl_live_metrics {
	pthread_mutex_t mu;
	char *scenario;
	double start_time_s;
	enum cl_live_phase phase;
	int exit_code;
	struct cl_live_fleet fleet;
	struct lm_stage *stages;
	size_t n, cap;
	long running; /* index into stages, -1: none */
	size_t breaches;
	char *cls_names[LM_CLASSES_MAX]; /* workload.classes, the `request_class` label */
	size_t n_cls_names;
	bool have_server; /* the server is scraped: its figures are rendered */
	struct cl_live_server server;
	char server_source[32], server_url[1024];
};

struct cl_live_metrics *cl_live_metrics_new(const char *scenario)
{
	struct cl_live_metrics *lm = calloc(1, sizeof(*lm));
	if (!lm)
		return NULL;
	if (pthread_mutex_init(&lm->mu, NULL) != 0) {
		free(lm);
		return NULL;
	}
	lm->scenario = strdup(scenario ? scenario : "");
	if (!lm->scenario) {
		cl_live_metrics_free(lm);
		return NULL;
	}
	lm->start_time_s = cl_wall_us() / 1e6;
	lm->running = -1;
	return lm;
}

void cl_live_metrics_free(struct cl_live_metrics *lm)
{
	if (!lm)
		return;
	for (size_t i = 0; i < lm->n; i++)
		free(lm->stages[i].name);
	for (size_t i = 0; i < lm->n_cls_names; i++)
		free(lm->cls_names[i]);
	free(lm->stages);
	free(lm->scenario);
	pthread_mutex_destroy(&lm->mu);
	free(lm);
}

void cl_live_metrics_phase(struct cl_live_metrics *lm, enum cl_live_phase phase, int exit_code)
{
	if (!lm)
		return;
	pthread_mutex_lock(&lm->mu);
	lm->phase = phase;
	if (phase == CL_LIVE_FINISHED)
		lm->exit_code = exit_code;
	pthread_mutex_unlock(&lm->mu);
}

void cl_live_metrics_fleet(struct cl_live_metrics *lm, const struct cl_live_fleet *f)
{
	if (!lm)
		return;
	pthread_mutex_lock(&lm->mu);
	lm->fleet = *f;
	pthread_mutex_unlock(&lm->mu);
}

void cl_live_metrics_breaches(struct cl_live_metrics *lm, size_t breaches)
{
	if (!lm)
		return;
	pthread_mutex_lock(&lm->mu);
	lm->breaches = breaches;
	pthread_mutex_unlock(&lm->mu);
}

int cl_live_metrics_stage_start(struct cl_live_metrics *lm, size_t index, const char *name,
				const char *mode, double level)
{
	if (!lm)
		return 0;
	struct lm_stage st = { .index = index, .level = level };
	snprintf(st.mode, sizeof(st.mode), "%s", mode);
	snprintf(st.status, sizeof(st.status), "running");
	for (size_t k = 0; k < N(lats); k++)
		for (size_t q = 0; q < NQ; q++)
			st.lat[k].q[q] = NAN;
	if (!(st.name = strdup(name ? name : "")))
		return CL_ENOMEM;
	pthread_mutex_lock(&lm->mu);
	int rc = 0;
	if (lm->n == lm->cap) {
		size_t cap = lm->cap ? lm->cap * 2 : 16;
		struct lm_stage *p = realloc(lm->stages, cap * sizeof(*p));
		if (!p)
			rc = CL_ENOMEM;
		else {
			lm->stages = p;
			lm->cap = cap;
		}
	}
	if (rc == 0) {
		CL_ASSERT(lm->n < lm->cap);
		lm->stages[lm->n] = st;
		lm->running = (long)lm->n++;
	}
	pthread_mutex_unlock(&lm->mu);
	if (rc != 0)
		free(st.name);
	return rc;
}

int cl_live_metrics_classes(struct cl_live_metrics *lm, const char *const *names, size_t n)
{
	if (!lm)
		return 0;
	pthread_mutex_lock(&lm->mu);
	int rc = 0;
	for (size_t i = 0; i < n && i < LM_CLASSES_MAX && rc == 0; i++) {
		if (!(lm->cls_names[i] = strdup(names[i] ? names[i] : "")))
			rc = CL_ENOMEM;
		else
			lm->n_cls_names = i + 1;
	}
	pthread_mutex_unlock(&lm->mu);
	return rc;
}

static void quantiles_s(const struct cl_hist *h, double *out)
{
	uint64_t n = cl_hist_count(h);
	for (size_t q = 0; q < NQ; q++)
		out[q] = n ? cl_hist_percentile(h, quantiles[q] * 100) / 1e6 : NAN;
}

/* The running stage's figures from cum, computed outside the lock. */
static void snapshot(const struct cl_metrics *cum, struct lm_stage *out)
{
	memcpy(out->ctr, cum->ctr, sizeof(out->ctr));
	out->n_cls = cum->n_cls < LM_CLASSES_MAX ? cum->n_cls : LM_CLASSES_MAX;
	for (uint32_t k = 0; k < out->n_cls; k++) {
		const struct cl_metrics *c = &cum->cls[k];
		struct lm_class *o = &out->cls[k];
		o->started = c->ctr[CL_CTR_STARTED];
		o->completed = c->ctr[CL_CTR_COMPLETED];
		o->output_tokens = c->ctr[CL_CTR_OUTPUT_TOKENS];
		o->errors = 0;
		for (int e = CL_CTR_FIRST_ERROR; e <= CL_CTR_LAST_ERROR; e++)
			o->errors += c->ctr[e];
		quantiles_s(&c->lat[CL_LAT_TTFT], o->ttft_q);
		quantiles_s(&c->lat[CL_LAT_E2E], o->e2e_q);
		o->ttft_count = cl_hist_count(&c->lat[CL_LAT_TTFT]);
		o->ttft_sum_s = o->ttft_count ? cl_hist_sum(&c->lat[CL_LAT_TTFT]) / 1e6 : 0;
		o->e2e_count = cl_hist_count(&c->lat[CL_LAT_E2E]);
		o->e2e_sum_s = o->e2e_count ? cl_hist_sum(&c->lat[CL_LAT_E2E]) / 1e6 : 0;
	}
	for (size_t k = 0; k < N(lats); k++) {
		const struct cl_hist *h = &cum->lat[lats[k].lat];
		out->lat[k].count = cl_hist_count(h);
		out->lat[k].sum_s = out->lat[k].count ? cl_hist_sum(h) / 1e6 : 0;
		for (size_t q = 0; q < NQ; q++)
			out->lat[k].q[q] = out->lat[k].count
					       ? cl_hist_percentile(h, quantiles[q] * 100) / 1e6
					       : NAN;
	}
}

static void install(struct cl_live_metrics *lm, const struct lm_stage *snap, const char *status)
{
	pthread_mutex_lock(&lm->mu);
	if (lm->running >= 0) {
		CL_ASSERT((size_t)lm->running < lm->n);
		struct lm_stage *st = &lm->stages[lm->running];
		memcpy(st->ctr, snap->ctr, sizeof(st->ctr));
		memcpy(st->lat, snap->lat, sizeof(st->lat));
		st->n_cls = snap->n_cls;
		memcpy(st->cls, snap->cls, sizeof(st->cls));
		if (status) {
			snprintf(st->status, sizeof(st->status), "%s", status);
			lm->running = -1;
		}
	}
	pthread_mutex_unlock(&lm->mu);
}

void cl_live_metrics_stage_update(struct cl_live_metrics *lm, const struct cl_metrics *cum)
{
	if (!lm)
		return;
	struct lm_stage snap;
	snapshot(cum, &snap);
	install(lm, &snap, NULL);
}

void cl_live_metrics_stage_end(struct cl_live_metrics *lm, const struct cl_metrics *cum,
			       const char *status)
{
	if (!lm)
		return;
	struct lm_stage snap;
	snapshot(cum, &snap);
	install(lm, &snap, status ? status : "ok");
}

/* ---- rendering ---- */

/* A label value with \, " and newline escaped, as the text format requires. */
static int put_label(struct cl_buf *b, const char *s)
{
	int rc = 0;
	for (const char *p = s; *p && rc == 0; p++) {
		if (*p == '\\')
			rc = cl_buf_puts(b, "\\\\");
		else if (*p == '"')
			rc = cl_buf_puts(b, "\\\"");
		else if (*p == '\n')
			rc = cl_buf_puts(b, "\\n");
		else
			rc = cl_buf_append(b, p, 1);
	}
	return rc;
}

static int family(struct cl_buf *b, const char *name, const char *type, const char *help)
{
	return cl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{stage="..."<extra>} value */
static int stage_sample(struct cl_buf *b, const char *name, const struct lm_stage *st,
			const char *extra, double v)
{
	int rc = cl_buf_printf(b, "%s{stage=\"", name);
	rc |= put_label(b, st->name);
	rc |= cl_buf_printf(b, "\"%s} ", extra ? extra : "");
	if (isnan(v))
		rc |= cl_buf_puts(b, "NaN\n");
	else
		rc |= cl_buf_printf(b, "%.17g\n", v);
	return rc;
}

static int render_run(struct cl_live_metrics *lm, struct cl_buf *b)
{
	int rc = family(b, "chatload_run_info", "gauge", "The run: its scenario; always 1.");
	rc |= cl_buf_puts(b, "chatload_run_info{scenario=\"");
	rc |= put_label(b, lm->scenario);
	rc |= cl_buf_printf(b, "\",version=\"%s\"} 1\n", CHATLOAD_VERSION);
	rc |= family(b, "chatload_run_start_time_seconds", "gauge",
		     "When the run started, in seconds since the Unix epoch.");
	rc |= cl_buf_printf(b, "chatload_run_start_time_seconds %.3f\n", lm->start_time_s);
	rc |= family(b, "chatload_run_phase", "gauge",
		     "The run's phase: 1 for the current one, 0 for the others.");
	for (int p = 0; p < CL_LIVE__PHASES; p++)
		rc |= cl_buf_printf(b, "chatload_run_phase{phase=\"%s\"} %d\n", phase_names[p],
				    p == (int)lm->phase);
	if (lm->phase == CL_LIVE_FINISHED) {
		rc |= family(b, "chatload_run_exit_code", "gauge",
			     "The run's exit code, once it finished.");
		rc |= cl_buf_printf(b, "chatload_run_exit_code %d\n", lm->exit_code);
	}
	rc |= family(b, "chatload_slo_breaches", "gauge", "SLO checks breached so far.");
	rc |= cl_buf_printf(b, "chatload_slo_breaches %zu\n", lm->breaches);
	const struct cl_live_fleet *f = &lm->fleet;
	rc |= family(b, "chatload_agents", "gauge", "Agents in the run by liveness.");
	rc |= cl_buf_printf(b,
			    "chatload_agents{state=\"ok\"} %u\nchatload_agents{state=\"missing\"} "
			    "%u\nchatload_agents{state=\"lost\"} %u\n",
			    f->ok, f->missing, f->lost);
	rc |= family(b, "chatload_agents_joined_total", "counter", "Agents that joined the run.");
	rc |= cl_buf_printf(b, "chatload_agents_joined_total %u\n", f->joined_total);
	rc |= family(b, "chatload_agents_lost_total", "counter", "Agents the run lost.");
	rc |= cl_buf_printf(b, "chatload_agents_lost_total %u\n", f->lost);
	rc |= family(b, "chatload_streams_in_flight", "gauge",
		     "Requests in flight on every agent, as they last reported.");
	rc |= cl_buf_printf(b, "chatload_streams_in_flight %lld\n", (long long)f->streams);
	rc |= family(b, "chatload_agents_cpu_cores", "gauge",
		     "CPU the agents use, summed, in cores.");
	rc |= cl_buf_printf(b, "chatload_agents_cpu_cores %.4g\n", f->cpu_pct_sum / 100.0);
	rc |= family(b, "chatload_agents_resident_memory_bytes", "gauge",
		     "Resident memory of the agents, summed.");
	rc |= cl_buf_printf(b, "chatload_agents_resident_memory_bytes %lld\n",
			    (long long)f->rss_bytes_sum);
	return rc;
}

static int render_stages(struct cl_live_metrics *lm, struct cl_buf *b)
{
	if (!lm->n)
		return 0;
	char extra[160];
	int rc = family(b, "chatload_stage_info", "gauge",
			"A stage of the run: its index, mode and load level; always 1.");
	for (size_t i = 0; i < lm->n; i++) {
		const struct lm_stage *st = &lm->stages[i];
		snprintf(extra, sizeof(extra), ",index=\"%zu\",mode=\"%s\",level=\"%g\"", st->index,
			 st->mode, st->level);
		rc |= stage_sample(b, "chatload_stage_info", st, extra, 1);
	}
	rc |= family(b, "chatload_stage_running", "gauge", "1 while the stage runs, then 0.");
	for (size_t i = 0; i < lm->n; i++)
		rc |= stage_sample(b, "chatload_stage_running", &lm->stages[i], NULL,
				   (long)i == lm->running);
	rc |=
	    family(b, "chatload_stage_status", "gauge",
		   "How the stage ended (ok, failed, degraded, interrupted, aborted), or running; "
		   "always 1.");
	for (size_t i = 0; i < lm->n; i++) {
		snprintf(extra, sizeof(extra), ",status=\"%s\"", lm->stages[i].status);
		rc |= stage_sample(b, "chatload_stage_status", &lm->stages[i], extra, 1);
	}
	for (size_t c = 0; c < N(counters); c++) {
		rc |= family(b, counters[c].name, "counter", counters[c].help);
		for (size_t i = 0; i < lm->n; i++)
			rc |= stage_sample(b, counters[c].name, &lm->stages[i], NULL,
					   (double)lm->stages[i].ctr[counters[c].ctr] /
					       (counters[c].ctr == CL_CTR_AUDIO_MS ? 1000.0 : 1.0));
	}
	rc |= family(b, "chatload_request_errors_total", "counter",
		     "Failed requests by error class.");
	for (size_t i = 0; i < lm->n; i++) {
		for (size_t e = 0; e < N(err_ctrs); e++) {
			snprintf(extra, sizeof(extra), ",class=\"%s\"",
				 cl_ctr_name(err_ctrs[e]) + 4);
			rc |= stage_sample(b, "chatload_request_errors_total", &lm->stages[i],
					   extra, (double)lm->stages[i].ctr[err_ctrs[e]]);
		}
	}
	for (size_t k = 0; k < N(lats); k++) {
		char name[96];
		rc |= family(b, lats[k].name, "summary", lats[k].help);
		for (size_t i = 0; i < lm->n; i++) {
			const struct lm_stage *st = &lm->stages[i];
			for (size_t q = 0; q < NQ; q++) {
				snprintf(extra, sizeof(extra), ",quantile=\"%g\"", quantiles[q]);
				rc |= stage_sample(b, lats[k].name, st, extra, st->lat[k].q[q]);
			}
			snprintf(name, sizeof(name), "%s_sum", lats[k].name);
			rc |= stage_sample(b, name, st, NULL, st->lat[k].sum_s);
			snprintf(name, sizeof(name), "%s_count", lats[k].name);
			rc |= stage_sample(b, name, st, NULL, (double)st->lat[k].count);
		}
	}
	return rc;
}

/* name{stage="...",request_class="..."<extra>} value, for each class of each stage */
static int class_family(struct cl_live_metrics *lm, struct cl_buf *b, const char *name,
			const char *type, const char *help, size_t what)
{
	int rc = family(b, name, type, help);
	char extra[200];
	for (size_t i = 0; i < lm->n; i++) {
		const struct lm_stage *st = &lm->stages[i];
		for (uint32_t k = 0; k < st->n_cls && k < lm->n_cls_names; k++) {
			const struct lm_class *c = &st->cls[k];
			size_t at = (size_t)snprintf(extra, sizeof(extra), ",request_class=\"");
			for (const char *p = lm->cls_names[k]; *p && at + 3 < sizeof(extra); p++)
				extra[at++] = *p; /* names are [A-Za-z0-9_.-]: nothing to escape */
			extra[at] = '\0';
			if (what < 4) {
				const uint64_t v[] = { c->started, c->completed, c->errors,
						       c->output_tokens };
				snprintf(extra + at, sizeof(extra) - at, "\"");
				rc |= stage_sample(b, name, st, extra, (double)v[what]);
				continue;
			}
			for (size_t q = 0; q < NQ; q++) {
				snprintf(extra + at, sizeof(extra) - at, "\",quantile=\"%g\"",
					 quantiles[q]);
				rc |= stage_sample(b, name, st, extra,
						   what == 4 ? c->ttft_q[q] : c->e2e_q[q]);
			}
			/* a summary carries its _sum and _count beside the quantiles */
			char part[128];
			snprintf(extra + at, sizeof(extra) - at, "\"");
			snprintf(part, sizeof(part), "%s_sum", name);
			rc |= stage_sample(b, part, st, extra,
					   what == 4 ? c->ttft_sum_s : c->e2e_sum_s);
			snprintf(part, sizeof(part), "%s_count", name);
			rc |= stage_sample(b, part, st, extra,
					   (double)(what == 4 ? c->ttft_count : c->e2e_count));
		}
	}
	return rc;
}

/* workload.classes: each class's share of each stage, labelled request_class (`class` is
 * the error class of chatload_request_errors_total). */
static int render_classes(struct cl_live_metrics *lm, struct cl_buf *b)
{
	if (!lm->n || !lm->n_cls_names)
		return 0;
	int rc = class_family(lm, b, "chatload_class_requests_started_total", "counter",
			      "Requests of a request class started in the measured window.", 0);
	rc |= class_family(lm, b, "chatload_class_requests_completed_total", "counter",
			   "Requests of a request class that completed without error.", 1);
	rc |= class_family(lm, b, "chatload_class_request_errors_total", "counter",
			   "Failed requests of a request class, every error class.", 2);
	rc |= class_family(lm, b, "chatload_class_output_tokens_total", "counter",
			   "Output tokens received by a request class's requests.", 3);
	rc |= class_family(lm, b, "chatload_class_ttft_seconds", "summary",
			   "Time to first token of a request class's requests, by quantile.", 4);
	rc |= class_family(lm, b, "chatload_class_e2e_seconds", "summary",
			   "End to end latency of a request class's requests, by quantile.", 5);
	return rc;
}

void cl_live_metrics_server(struct cl_live_metrics *lm, const struct cl_live_server *s)
{
	pthread_mutex_lock(&lm->mu);
	lm->server = *s;
	snprintf(lm->server_source, sizeof(lm->server_source), "%s", s->source ? s->source : "");
	snprintf(lm->server_url, sizeof(lm->server_url), "%s", s->url ? s->url : "");
	lm->server.source = lm->server_source;
	lm->server.url = lm->server_url;
	lm->have_server = true;
	pthread_mutex_unlock(&lm->mu);
}

/* A gauge of the server's, left out when it does not offer it. */
static int server_gauge(struct cl_buf *b, const char *name, const char *help, double v)
{
	if (isnan(v))
		return 0;
	return family(b, name, "gauge", help) | cl_buf_printf(b, "%s %.6g\n", name, v);
}

static int render_server(struct cl_live_metrics *lm, struct cl_buf *b)
{
	if (!lm->have_server)
		return 0;
	const struct cl_live_server *s = &lm->server;
	int rc = family(b, "chatload_server_info", "gauge",
			"The server's /metrics page scraped and the engine recognised; always 1.");
	rc |= cl_buf_puts(b, "chatload_server_info{url=\"");
	rc |= put_label(b, s->url);
	rc |= cl_buf_puts(b, "\",source=\"");
	rc |= put_label(b, s->source);
	rc |= cl_buf_puts(b, "\"} 1\n");
	rc |= family(b, "chatload_server_up", "gauge",
		     "1 when the last scrape of the server's /metrics read the page, else 0.");
	rc |= cl_buf_printf(b, "chatload_server_up %d\n", s->up ? 1 : 0);
	rc |= family(b, "chatload_server_scrapes_total", "counter",
		     "Scrapes of the server's /metrics by result.");
	rc |= cl_buf_printf(b,
			    "chatload_server_scrapes_total{result=\"ok\"} %u\n"
			    "chatload_server_scrapes_total{result=\"failed\"} %u\n",
			    s->scrapes_ok, s->scrapes_failed);
	rc |= family(b, "chatload_server_restarts_total", "counter",
		     "Server restarts seen (a counter went down or the process start time "
		     "changed).");
	rc |= cl_buf_printf(b, "chatload_server_restarts_total %u\n", s->restarts);
	rc |= server_gauge(b, "chatload_server_requests_running",
			   "Requests the server is running, as it last said.", s->running);
	rc |= server_gauge(b, "chatload_server_requests_waiting",
			   "Requests waiting in the server's queue, as it last said.", s->waiting);
	rc |= server_gauge(b, "chatload_server_kv_cache_usage_ratio",
			   "The server's KV-cache usage, 0..1, as it last said.", s->kv_usage);
	rc |= server_gauge(b, "chatload_server_prefix_cache_hit_ratio",
			   "The server's prefix-cache hits / queries since the previous scrape.",
			   s->prefix_hit_rate);
	if (!isnan(s->preemptions)) {
		rc |= family(b, "chatload_server_preemptions_total", "counter",
			     "Preemptions the server counted since the first scrape, restarts "
			     "added up.");
		rc |= cl_buf_printf(b, "chatload_server_preemptions_total %.0f\n", s->preemptions);
	}
	return rc;
}

int cl_live_metrics_render(struct cl_live_metrics *lm, struct cl_buf *body)
{
	pthread_mutex_lock(&lm->mu);
	int rc = render_run(lm, body);
	rc |= render_server(lm, body);
	rc |= render_stages(lm, body);
	rc |= render_classes(lm, body);
	pthread_mutex_unlock(&lm->mu);
	return rc ? CL_ENOMEM : 0;
}
