/* The measurement record: names, init/merge and error samples (its msgpack form: metrics_wire.c).
 */
#include "chatload/metrics.h"

#include "metrics_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const lat_names[CL_LAT__COUNT] = {
	[CL_LAT_QUEUE] = "queue",
	[CL_LAT_TTFB] = "ttfb",
	[CL_LAT_TTFT] = "ttft",
	[CL_LAT_TTFC] = "ttfc",
	[CL_LAT_ITL] = "itl",
	[CL_LAT_TPOT] = "tpot",
	[CL_LAT_E2E] = "e2e",
	[CL_LAT_E2E_SCHED] = "e2e_sched",
	[CL_LAT_LOOP_LAG] = "loop_lag",
	[CL_LAT_DNS] = "dns",
	[CL_LAT_CONNECT] = "connect",
	[CL_LAT_TLS] = "tls",
	[CL_LAT_SEND] = "send",
	[CL_LAT_TTFT_CONNECTION] = "ttft_connection",
	[CL_LAT_TTFT_SERVER_WAIT] = "ttft_server_wait",
	[CL_LAT_TTFT_AFTER_FIRST_BYTE] = "ttft_after_first_byte",
	[CL_LAT_TTFT_TURN1] = "ttft_turn1",
	[CL_LAT_TTFT_TURN1 + 1] = "ttft_turn2",
	[CL_LAT_TTFT_TURN1 + 2] = "ttft_turn3",
	[CL_LAT_TTFT_TURN1 + 3] = "ttft_turn4",
	[CL_LAT_TTFT_TURN1 + 4] = "ttft_turn5",
	[CL_LAT_TTFT_TURN1 + 5] = "ttft_turn6",
	[CL_LAT_TTFT_TURN1 + 6] = "ttft_turn7",
	[CL_LAT_TTFT_TURN1 + 7] = "ttft_turn8",
};

static const char *const cnt_names[CL_CNT__COUNT] = {
	[CL_CNT_TOKENS_PER_CHUNK] = "tokens_per_chunk", [CL_CNT_OUTPUT_TOKENS] = "output_tokens",
	[CL_CNT_REASONING_TOKENS] = "reasoning_tokens", [CL_CNT_PROMPT_TOKENS] = "prompt_tokens",
	[CL_CNT_REQUESTED_TOKENS] = "requested_tokens", [CL_CNT_RTF_MILLI] = "rtf_milli",
};

static const char *const ctr_names[CL_CTR__COUNT] = {
	[CL_CTR_STARTED] = "started",
	[CL_CTR_COMPLETED] = "completed",
	[CL_CTR_CUT] = "cut",
	[CL_CTR_ERR_CONNECT] = "err_connect",
	[CL_CTR_ERR_TLS] = "err_tls",
	[CL_CTR_ERR_HTTP_4XX] = "err_http_4xx",
	[CL_CTR_ERR_HTTP_429] = "err_http_429",
	[CL_CTR_ERR_HTTP_5XX] = "err_http_5xx",
	[CL_CTR_ERR_TIMEOUT] = "err_timeout",
	[CL_CTR_ERR_STREAM_MALFORMED] = "err_stream_malformed",
	[CL_CTR_ERR_STREAM_INCOMPLETE] = "err_stream_incomplete",
	[CL_CTR_ERR_STREAM_ERROR] = "err_stream_error",
	[CL_CTR_ERR_EMPTY_ANSWER] = "err_empty_answer",
	[CL_CTR_ERR_OTHER] = "err_other",
	[CL_CTR_OUTPUT_TOKENS] = "output_tokens",
	[CL_CTR_REASONING_TOKENS] = "reasoning_tokens",
	[CL_CTR_PROMPT_TOKENS] = "prompt_tokens",
	[CL_CTR_CHUNKS] = "chunks",
	[CL_CTR_BYTES] = "bytes",
	[CL_CTR_USAGE_FROM_SERVER] = "usage_from_server",
	[CL_CTR_USAGE_FROM_CHUNKS] = "usage_from_chunks",
	[CL_CTR_GOOD] = "good",
	[CL_CTR_COMPLETED_IN_WINDOW] = "completed_in_window",
	[CL_CTR_REQUESTED_TOKENS] = "requested_tokens",
	[CL_CTR_REQUESTED_RECEIVED] = "requested_received",
	[CL_CTR_SHORT_OUTPUT] = "short_output",
	[CL_CTR_COMPLETED_H1] = "completed_h1",
	[CL_CTR_COMPLETED_H2] = "completed_h2",
	[CL_CTR_CONNECTIONS_OPENED] = "connections_opened",
	[CL_CTR_NO_CONTENT] = "no_content",
	[CL_CTR_REPEATED] = "repeated",
	[CL_CTR_WINDOW_SHARE_MILLI] = "window_share_milli",
	[CL_CTR_RESENT] = "resent",
	[CL_CTR_SHORT_FINISH_STOP] = "short_finish_stop",
	[CL_CTR_SHORT_FINISH_LENGTH] = "short_finish_length",
	[CL_CTR_SHORT_FINISH_OTHER] = "short_finish_other",
	[CL_CTR_TURN1_COMPLETED] = "turn1_completed",
	[CL_CTR_TURN1_COMPLETED + 1] = "turn2_completed",
	[CL_CTR_TURN1_COMPLETED + 2] = "turn3_completed",
	[CL_CTR_TURN1_COMPLETED + 3] = "turn4_completed",
	[CL_CTR_TURN1_COMPLETED + 4] = "turn5_completed",
	[CL_CTR_TURN1_COMPLETED + 5] = "turn6_completed",
	[CL_CTR_TURN1_COMPLETED + 6] = "turn7_completed",
	[CL_CTR_TURN1_COMPLETED + 7] = "turn8_completed",
	[CL_CTR_TURN1_PROMPT_TOKENS] = "turn1_prompt_tokens",
	[CL_CTR_TURN1_PROMPT_TOKENS + 1] = "turn2_prompt_tokens",
	[CL_CTR_TURN1_PROMPT_TOKENS + 2] = "turn3_prompt_tokens",
	[CL_CTR_TURN1_PROMPT_TOKENS + 3] = "turn4_prompt_tokens",
	[CL_CTR_TURN1_PROMPT_TOKENS + 4] = "turn5_prompt_tokens",
	[CL_CTR_TURN1_PROMPT_TOKENS + 5] = "turn6_prompt_tokens",
	[CL_CTR_TURN1_PROMPT_TOKENS + 6] = "turn7_prompt_tokens",
	[CL_CTR_TURN1_PROMPT_TOKENS + 7] = "turn8_prompt_tokens",
	[CL_CTR_CACHED_PROMPT_TOKENS] = "cached_prompt_tokens",
	[CL_CTR_EMBEDDING_INPUTS] = "embedding_inputs",
	[CL_CTR_TOOL_CALLS] = "tool_calls",
	[CL_CTR_CANCELLED] = "cancelled",
	[CL_CTR_DOCUMENTS] = "documents",
	[CL_CTR_AUDIO_MS] = "audio_ms",
};

/* Latencies in µs: 1 µs .. 1 h at 3 digits (23552 buckets, 184 KiB). */
static const struct cl_hist_cfg lat_cfg = { .lowest = 1, .highest = 3600000000LL, .sigfigs = 3 };
/* Counts: 1 .. 10^7 at 3 digits (15360 buckets, 120 KiB).  tokens_per_chunk is recorded in
 * milli-tokens (1000 per token), so this covers up to 10,000 tokens in one chunk. */
/* TTFT per turn index and the stages of a connection (lookup, connect, TLS, send and TTFT's
 * three parts): 1 µs .. 1 h at 2 digits (3328 buckets, 26 KiB), fifteen of them. */
static const struct cl_hist_cfg turn_cfg = { .lowest = 1, .highest = 3600000000LL, .sigfigs = 2 };
static const struct cl_hist_cfg cnt_cfg = { .lowest = 1, .highest = 10000000LL, .sigfigs = 3 };

const char *cl_lat_name(int i)
{
	return i >= 0 && i < CL_LAT__COUNT ? lat_names[i] : NULL;
}

const char *cl_cnt_name(int i)
{
	return i >= 0 && i < CL_CNT__COUNT ? cnt_names[i] : NULL;
}

const char *cl_ctr_name(int i)
{
	return i >= 0 && i < CL_CTR__COUNT ? ctr_names[i] : NULL;
}

/* Index of the name ptr[0..len) in table, -1 when absent.  ptr need not be NUL-terminated. */
static int lookup(const char *const *table, int n, const char *ptr, size_t len)
{
	for (int i = 0; i < n; i++)
		if (strlen(table[i]) == len && memcmp(table[i], ptr, len) == 0)
			return i;
	return -1;
}

int cl_lat_from_name(const char *name)
{
	return name ? lookup(lat_names, CL_LAT__COUNT, name, strlen(name)) : -1;
}

int cl_cnt_from_name(const char *name)
{
	return name ? lookup(cnt_names, CL_CNT__COUNT, name, strlen(name)) : -1;
}

int cl_ctr_from_name(const char *name)
{
	return name ? lookup(ctr_names, CL_CTR__COUNT, name, strlen(name)) : -1;
}

const struct cl_hist_cfg *cl_metrics_lat_cfg(void)
{
	return &lat_cfg;
}

const struct cl_hist_cfg *cl_metrics_cnt_cfg(void)
{
	return &cnt_cfg;
}

int cl_metrics_init(struct cl_metrics *m)
{
	int rc = 0;
	memset(m, 0, sizeof(*m));
	for (int i = 0; i < CL_LAT__COUNT && !rc; i++)
		rc = cl_hist_init(&m->lat[i],
				  (i >= CL_LAT_TTFT_TURN1 && i <= CL_LAT_TTFT_TURN_LAST) ||
					  (i >= CL_LAT_DNS && i <= CL_LAT_TTFT_AFTER_FIRST_BYTE)
				      ? &turn_cfg
				      : &lat_cfg);
	for (int i = 0; i < CL_CNT__COUNT && !rc; i++)
		rc = cl_hist_init(&m->cnt[i], &cnt_cfg);
	if (rc)
		cl_metrics_destroy(m);
	return rc;
}

const char *cl_ep_lat_name(int i)
{
	static const enum cl_lat of[CL_EP_LAT__COUNT] = { CL_LAT_TTFT, CL_LAT_ITL };
	return i >= 0 && i < CL_EP_LAT__COUNT ? cl_lat_name(of[i]) : NULL;
}

int cl_metrics_eps_init(struct cl_metrics *m, uint32_t n)
{
	if (n > CL_METRICS_EPS_MAX)
		return CL_EINVAL;
	if (n <= m->n_eps)
		return 0;
	struct cl_ep_metrics *eps = calloc(n, sizeof(*eps));
	if (!eps)
		return CL_ENOMEM;
	for (uint32_t i = m->n_eps; i < n; i++)
		for (int k = 0; k < CL_EP_LAT__COUNT; k++)
			if (cl_hist_init(&eps[i].lat[k], &lat_cfg) != 0) {
				for (uint32_t j = m->n_eps; j <= i; j++)
					for (int q = 0; q < CL_EP_LAT__COUNT; q++)
						cl_hist_destroy(&eps[j].lat[q]);
				free(eps);
				return CL_ENOMEM;
			}
	/* the histograms own their counts by pointer, so moving the records is safe */
	if (m->n_eps)
		memcpy(eps, m->eps, m->n_eps * sizeof(*eps));
	free(m->eps);
	m->eps = eps;
	m->n_eps = n;
	return 0;
}

int cl_metrics_cls_init(struct cl_metrics *m, uint32_t n)
{
	if (n > CL_METRICS_CLASSES_MAX)
		return CL_EINVAL;
	if (n <= m->n_cls)
		return 0;
	struct cl_metrics *cls = calloc(n, sizeof(*cls));
	if (!cls)
		return CL_ENOMEM;
	for (uint32_t i = m->n_cls; i < n; i++)
		if (cl_metrics_init(&cls[i]) != 0) {
			for (uint32_t j = m->n_cls; j <= i; j++)
				cl_metrics_destroy(&cls[j]);
			free(cls);
			return CL_ENOMEM;
		}
	/* the histograms own their counts by pointer, so moving the records is safe */
	if (m->n_cls)
		memcpy(cls, m->cls, m->n_cls * sizeof(*cls));
	free(m->cls);
	m->cls = cls;
	m->n_cls = n;
	return 0;
}

void cl_metrics_destroy(struct cl_metrics *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; m->cls && i < m->n_cls; i++)
		cl_metrics_destroy(&m->cls[i]);
	free(m->cls);
	m->cls = NULL;
	m->n_cls = 0;
	for (int i = 0; i < CL_LAT__COUNT; i++)
		cl_hist_destroy(&m->lat[i]);
	for (int i = 0; i < CL_CNT__COUNT; i++)
		cl_hist_destroy(&m->cnt[i]);
	for (uint32_t i = 0; m->eps && i < m->n_eps; i++)
		for (int k = 0; k < CL_EP_LAT__COUNT; k++)
			cl_hist_destroy(&m->eps[i].lat[k]);
	free(m->eps);
	m->eps = NULL;
	m->n_eps = 0;
}

void cl_metrics_reset(struct cl_metrics *m)
{
	for (int i = 0; i < CL_LAT__COUNT; i++)
		cl_hist_reset(&m->lat[i]);
	for (int i = 0; i < CL_CNT__COUNT; i++)
		cl_hist_reset(&m->cnt[i]);
	memset(m->ctr, 0, sizeof(m->ctr));
	memset(&m->health, 0, sizeof(m->health));
	memset(m->err_samples, 0, sizeof(m->err_samples));
	m->n_err_samples = 0;
	for (uint32_t i = 0; i < m->n_eps; i++) {
		for (int k = 0; k < CL_EP_LAT__COUNT; k++)
			cl_hist_reset(&m->eps[i].lat[k]);
		memset(m->eps[i].ctr, 0, sizeof(m->eps[i].ctr));
	}
	for (uint32_t i = 0; i < m->n_cls; i++)
		cl_metrics_reset(&m->cls[i]);
}

void cl_metrics_trim(struct cl_metrics *m)
{
	cl_metrics_reset(m);
	for (int i = 0; i < CL_LAT__COUNT; i++)
		cl_hist_trim(&m->lat[i]);
	for (int i = 0; i < CL_CNT__COUNT; i++)
		cl_hist_trim(&m->cnt[i]);
	for (uint32_t i = 0; i < m->n_eps; i++)
		for (int k = 0; k < CL_EP_LAT__COUNT; k++)
			cl_hist_trim(&m->eps[i].lat[k]);
	for (uint32_t i = 0; i < m->n_cls; i++)
		cl_metrics_trim(&m->cls[i]);
}

/* Records kept for decoded REPORTs: the coordinator decodes one report at a time, so a few
 * cover its bursts. */
#define POOL_KEEP 4
/* Every this many records given back, the one given back sheds its pages (cl_metrics_trim):
 * ~30 s of a soak with two agents at 100 ms intervals.  Odd, so records that take turns
 * are each trimmed in turn. */
#define POOL_TRIM_EVERY 601
static struct {
	pthread_mutex_t mu;
	struct cl_metrics *kept[POOL_KEEP];
	int n;
	unsigned long given;
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct cl_metrics *cli_metrics_take(void)
{
	struct cl_metrics *m = NULL;
	pthread_mutex_lock(&pool.mu);
	if (pool.n > 0)
		m = pool.kept[--pool.n];
	pthread_mutex_unlock(&pool.mu);
	if (m)
		return m;
	if (!(m = calloc(1, sizeof(*m))))
		return NULL;
	if (cl_metrics_init(m) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

void cli_metrics_give(struct cl_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&pool.mu);
	bool trim = ++pool.given % POOL_TRIM_EVERY == 0;
	pthread_mutex_unlock(&pool.mu);
	if (trim)
		cl_metrics_trim(m);
	else
		cl_metrics_reset(m);
	pthread_mutex_lock(&pool.mu);
	if (pool.n < POOL_KEEP) {
		pool.kept[pool.n++] = m;
		m = NULL;
	}
	pthread_mutex_unlock(&pool.mu);
	if (m) {
		cl_metrics_destroy(m);
		free(m);
	}
}

void cli_metrics_health_merge(struct cl_health *dst, const struct cl_health *src)
{
	if (src->cpu_pct > dst->cpu_pct)
		dst->cpu_pct = src->cpu_pct;
	if (src->cpu_pct_capacity > dst->cpu_pct_capacity)
		dst->cpu_pct_capacity = src->cpu_pct_capacity;
	if (src->rss_bytes > dst->rss_bytes)
		dst->rss_bytes = src->rss_bytes;
	dst->inflight += src->inflight;
}

int cl_metrics_merge(struct cl_metrics *dst, const struct cl_metrics *src)
{
	int rc;
	for (int i = 0; i < CL_LAT__COUNT; i++)
		if ((rc = cl_hist_merge(&dst->lat[i], &src->lat[i])))
			return rc;
	for (int i = 0; i < CL_CNT__COUNT; i++)
		if ((rc = cl_hist_merge(&dst->cnt[i], &src->cnt[i])))
			return rc;
	for (int i = 0; i < CL_CTR__COUNT; i++)
		dst->ctr[i] += src->ctr[i];
	cli_metrics_health_merge(&dst->health, &src->health);
	if (src->n_eps && (rc = cl_metrics_eps_init(dst, src->n_eps)))
		return rc;
	for (uint32_t e = 0; e < src->n_eps; e++) {
		for (int k = 0; k < CL_EP_LAT__COUNT; k++)
			if ((rc = cl_hist_merge(&dst->eps[e].lat[k], &src->eps[e].lat[k])))
				return rc;
		for (int i = 0; i < CL_CTR__COUNT; i++)
			dst->eps[e].ctr[i] += src->eps[e].ctr[i];
	}
	if (src->n_cls && (rc = cl_metrics_cls_init(dst, src->n_cls)))
		return rc;
	for (uint32_t k = 0; k < src->n_cls; k++)
		if ((rc = cl_metrics_merge(&dst->cls[k], &src->cls[k])))
			return rc;
	for (uint32_t i = 0; i < src->n_err_samples && i < CL_ERR_SAMPLES_MAX &&
			     dst->n_err_samples < CL_ERR_SAMPLES_MAX;
	     i++)
		dst->err_samples[dst->n_err_samples++] = src->err_samples[i];
	return 0;
}

void cl_metrics_add_err_sample(struct cl_metrics *m, int ctr, int http_status, const char *body,
			       size_t body_len)
{
	if (m->n_err_samples >= CL_ERR_SAMPLES_MAX)
		return;
	struct cl_err_sample *s = &m->err_samples[m->n_err_samples++];
	/* Only error classes are samples; anything else would not survive the wire. */
	s->ctr = ctr >= CL_CTR_FIRST_ERROR && ctr <= CL_CTR_LAST_ERROR ? ctr : CL_CTR_ERR_OTHER;
	s->http_status = http_status;
	if (!body)
		body_len = 0;
	if (body_len > CL_ERR_SAMPLE_BODY_MAX - 1)
		body_len = CL_ERR_SAMPLE_BODY_MAX - 1;
	if (body_len)
		memcpy(s->body, body, body_len);
	s->body[body_len] = '\0';
}
