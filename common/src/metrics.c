/* The measurement record: names, init/merge, error samples and its msgpack wire form. */
#include "chatload/metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const lat_names[CL_LAT__COUNT] = {
	[CL_LAT_QUEUE] = "queue",       [CL_LAT_TTFB] = "ttfb",
	[CL_LAT_TTFT] = "ttft",         [CL_LAT_TTFC] = "ttfc",
	[CL_LAT_ITL] = "itl",           [CL_LAT_TPOT] = "tpot",
	[CL_LAT_E2E] = "e2e",           [CL_LAT_E2E_SCHED] = "e2e_sched",
	[CL_LAT_LOOP_LAG] = "loop_lag",
};

static const char *const cnt_names[CL_CNT__COUNT] = {
	[CL_CNT_TOKENS_PER_CHUNK] = "tokens_per_chunk",
	[CL_CNT_OUTPUT_TOKENS] = "output_tokens",
	[CL_CNT_REASONING_TOKENS] = "reasoning_tokens",
	[CL_CNT_PROMPT_TOKENS] = "prompt_tokens",
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
};

/* Latencies in µs: 1 µs .. 1 h at 3 digits (23552 buckets, 184 KiB). */
static const struct cl_hist_cfg lat_cfg = { .lowest = 1, .highest = 3600000000LL, .sigfigs = 3 };
/* Counts: 1 .. 10^7 at 3 digits (15360 buckets, 120 KiB).  tokens_per_chunk is recorded in
 * milli-tokens (1000 per token), so this covers up to 10,000 tokens in one chunk. */
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
		rc = cl_hist_init(&m->lat[i], &lat_cfg);
	for (int i = 0; i < CL_CNT__COUNT && !rc; i++)
		rc = cl_hist_init(&m->cnt[i], &cnt_cfg);
	if (rc)
		cl_metrics_destroy(m);
	return rc;
}

void cl_metrics_destroy(struct cl_metrics *m)
{
	if (!m)
		return;
	for (int i = 0; i < CL_LAT__COUNT; i++)
		cl_hist_destroy(&m->lat[i]);
	for (int i = 0; i < CL_CNT__COUNT; i++)
		cl_hist_destroy(&m->cnt[i]);
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
}

static void health_merge(struct cl_health *dst, const struct cl_health *src)
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
	health_merge(&dst->health, &src->health);
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

static int pack_str(msgpack_packer *pk, const char *s, size_t n)
{
	int rc = msgpack_pack_str(pk, n);
	return rc ? rc : msgpack_pack_str_body(pk, s, n);
}

static int pack_key(msgpack_packer *pk, const char *key)
{
	return pack_str(pk, key, strlen(key));
}

static int pack_hists(msgpack_packer *pk, const struct cl_hist *h, int n, const char *const *names)
{
	size_t used = 0;
	for (int i = 0; i < n; i++)
		used += cl_hist_count(&h[i]) != 0;
	int rc = msgpack_pack_map(pk, used);
	for (int i = 0; i < n && !rc; i++) {
		if (!cl_hist_count(&h[i]))
			continue;
		rc = pack_key(pk, names[i]);
		rc = rc ? rc : cl_hist_pack(&h[i], pk);
	}
	return rc;
}

int cl_metrics_pack(const struct cl_metrics *m, msgpack_packer *pk)
{
	int rc = msgpack_pack_map(pk, 5);
	rc = rc ? rc : pack_key(pk, "lat");
	rc = rc ? rc : pack_hists(pk, m->lat, CL_LAT__COUNT, lat_names);
	rc = rc ? rc : pack_key(pk, "cnt");
	rc = rc ? rc : pack_hists(pk, m->cnt, CL_CNT__COUNT, cnt_names);

	size_t used = 0;
	for (int i = 0; i < CL_CTR__COUNT; i++)
		used += m->ctr[i] != 0;
	rc = rc ? rc : pack_key(pk, "ctr");
	rc = rc ? rc : msgpack_pack_map(pk, used);
	for (int i = 0; i < CL_CTR__COUNT && !rc; i++) {
		if (!m->ctr[i])
			continue;
		rc = pack_key(pk, ctr_names[i]);
		rc = rc ? rc : msgpack_pack_uint64(pk, m->ctr[i]);
	}

	rc = rc ? rc : pack_key(pk, "health");
	rc = rc ? rc : msgpack_pack_map(pk, 4);
	rc = rc ? rc : pack_key(pk, "cpu_pct");
	rc = rc ? rc : msgpack_pack_double(pk, m->health.cpu_pct);
	rc = rc ? rc : pack_key(pk, "cpu_pct_capacity");
	rc = rc ? rc : msgpack_pack_double(pk, m->health.cpu_pct_capacity);
	rc = rc ? rc : pack_key(pk, "rss_bytes");
	rc = rc ? rc : msgpack_pack_int64(pk, m->health.rss_bytes);
	rc = rc ? rc : pack_key(pk, "inflight");
	rc = rc ? rc : msgpack_pack_int64(pk, m->health.inflight);

	uint32_t n_err =
	    m->n_err_samples < CL_ERR_SAMPLES_MAX ? m->n_err_samples : CL_ERR_SAMPLES_MAX;
	rc = rc ? rc : pack_key(pk, "errs");
	rc = rc ? rc : msgpack_pack_array(pk, n_err);
	for (uint32_t i = 0; i < n_err && !rc; i++) {
		const struct cl_err_sample *s = &m->err_samples[i];
		const char *name = cl_ctr_name(s->ctr);
		if (!name || s->ctr < CL_CTR_FIRST_ERROR || s->ctr > CL_CTR_LAST_ERROR)
			name = ctr_names[CL_CTR_ERR_OTHER];
		rc = msgpack_pack_map(pk, 3);
		rc = rc ? rc : pack_key(pk, "ctr");
		rc = rc ? rc : pack_key(pk, name);
		rc = rc ? rc : pack_key(pk, "http_status");
		rc = rc ? rc : msgpack_pack_int32(pk, s->http_status);
		rc = rc ? rc : pack_key(pk, "body");
		rc = rc ? rc : pack_str(pk, s->body, strnlen(s->body, sizeof(s->body)));
	}
	return rc ? CL_ENOMEM : 0;
}

/* --- decoding --- */

static bool key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	       memcmp(k->via.str.ptr, name, n) == 0;
}

/* Copies a hostile string for an error message: at most 48 bytes, non-printables as '?'. */
static const char *quote(const msgpack_object *o, char *buf, size_t n)
{
	if (o->type != MSGPACK_OBJECT_STR) {
		snprintf(buf, n, "<non-string>");
		return buf;
	}
	size_t len = o->via.str.size;
	size_t max = n - 4 < 48 ? n - 4 : 48;
	size_t j = 0;
	for (size_t i = 0; i < len && j < max; i++) {
		unsigned char c = (unsigned char)o->via.str.ptr[i];
		buf[j++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (len > max) {
		memcpy(buf + j, "...", 3);
		j += 3;
	}
	buf[j] = '\0';
	return buf;
}

static int name_of(const msgpack_object *k, const char *const *table, int n)
{
	if (k->type != MSGPACK_OBJECT_STR)
		return -1;
	return lookup(table, n, k->via.str.ptr, k->via.str.size);
}

static bool get_i64(const msgpack_object *o, int64_t *out)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= (uint64_t)INT64_MAX) {
		*out = (int64_t)o->via.u64;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = o->via.i64;
		return true;
	}
	return false;
}

static bool get_f64(const msgpack_object *o, double *out)
{
	if (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32)
		*out = o->via.f64;
	else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		*out = (double)o->via.u64;
	else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		*out = (double)o->via.i64;
	else
		return false;
	return isfinite(*out);
}

/*
 * One pass over a decoded metrics map.  With apply false it only validates (m untouched);
 * with apply true it adds into m and assumes a validating pass succeeded.  Two passes make
 * unpack_add all-or-nothing: an accumulator never holds half of a rejected delta.
 */
static int walk_hists(struct cl_hist *hists, int n, const char *const *names, const char *field,
		      const char *kind, const msgpack_object *obj, bool apply, struct cl_err *err)
{
	char q[64];
	if (obj->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(err, CL_EPARSE, "metrics '%s' is not a map", field);
	uint32_t seen = 0;
	for (uint32_t i = 0; i < obj->via.map.size; i++) {
		const msgpack_object *k = &obj->via.map.ptr[i].key;
		int idx = name_of(k, names, n);
		if (idx < 0)
			return cl_err_set(err, CL_EPARSE, "unknown %s histogram '%s'", kind,
					  quote(k, q, sizeof(q)));
		if (seen & (1u << idx))
			return cl_err_set(err, CL_EPARSE, "duplicate %s histogram '%s'", kind,
					  names[idx]);
		seen |= 1u << idx;
		int rc = apply ? cl_hist_unpack_add(&hists[idx], &obj->via.map.ptr[i].val, err)
			       : cl_hist_unpack_check(&hists[idx], &obj->via.map.ptr[i].val, err);
		if (rc)
			return cl_err_prefix(err, "%s histogram '%s'", kind, names[idx]);
	}
	return 0;
}

static int walk_ctrs(struct cl_metrics *m, const msgpack_object *obj, bool apply,
		     struct cl_err *err)
{
	char q[64];
	if (obj->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(err, CL_EPARSE, "metrics 'ctr' is not a map");
	uint32_t seen = 0;
	for (uint32_t i = 0; i < obj->via.map.size; i++) {
		const msgpack_object *k = &obj->via.map.ptr[i].key;
		const msgpack_object *v = &obj->via.map.ptr[i].val;
		int idx = name_of(k, ctr_names, CL_CTR__COUNT);
		if (idx < 0)
			return cl_err_set(err, CL_EPARSE, "unknown counter '%s'",
					  quote(k, q, sizeof(q)));
		if (seen & (1u << idx))
			return cl_err_set(err, CL_EPARSE, "duplicate counter '%s'", ctr_names[idx]);
		seen |= 1u << idx;
		if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			return cl_err_set(err, CL_EPARSE,
					  "counter '%s' is not a non-negative integer",
					  ctr_names[idx]);
		uint64_t sum;
		if (__builtin_add_overflow(m->ctr[idx], v->via.u64, &sum))
			return cl_err_set(err, CL_EPARSE, "counter '%s' would overflow",
					  ctr_names[idx]);
		if (apply)
			m->ctr[idx] = sum;
	}
	return 0;
}

static int walk_health(struct cl_metrics *m, const msgpack_object *obj, bool apply,
		       struct cl_err *err)
{
	char q[64];
	struct cl_health h = { 0 };
	if (obj->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(err, CL_EPARSE, "metrics 'health' is not a map");
	for (uint32_t i = 0; i < obj->via.map.size; i++) {
		const msgpack_object *k = &obj->via.map.ptr[i].key;
		const msgpack_object *v = &obj->via.map.ptr[i].val;
		bool ok;
		if (key_is(k, "cpu_pct"))
			ok = get_f64(v, &h.cpu_pct) && h.cpu_pct >= 0;
		else if (key_is(k, "cpu_pct_capacity"))
			ok = get_f64(v, &h.cpu_pct_capacity) && h.cpu_pct_capacity >= 0;
		else if (key_is(k, "rss_bytes"))
			ok = get_i64(v, &h.rss_bytes) && h.rss_bytes >= 0;
		else if (key_is(k, "inflight"))
			ok = get_i64(v, &h.inflight) && h.inflight >= 0;
		else
			return cl_err_set(err, CL_EPARSE, "unknown health field '%s'",
					  quote(k, q, sizeof(q)));
		if (!ok)
			return cl_err_set(err, CL_EPARSE,
					  "health field '%s' is not a non-negative number",
					  quote(k, q, sizeof(q)));
	}
	int64_t inflight;
	if (__builtin_add_overflow(m->health.inflight, h.inflight, &inflight))
		return cl_err_set(err, CL_EPARSE, "health 'inflight' would overflow");
	if (apply)
		health_merge(&m->health, &h);
	return 0;
}

static int walk_errs(struct cl_metrics *m, const msgpack_object *obj, bool apply,
		     struct cl_err *err)
{
	char q[64];
	if (obj->type != MSGPACK_OBJECT_ARRAY)
		return cl_err_set(err, CL_EPARSE, "metrics 'errs' is not an array");
	for (uint32_t i = 0; i < obj->via.array.size; i++) {
		const msgpack_object *e = &obj->via.array.ptr[i];
		int ctr = -1;
		int64_t status = 0;
		const char *body = NULL;
		size_t body_len = 0;
		if (e->type != MSGPACK_OBJECT_MAP)
			return cl_err_set(err, CL_EPARSE, "error sample %u is not a map", i);
		for (uint32_t j = 0; j < e->via.map.size; j++) {
			const msgpack_object *k = &e->via.map.ptr[j].key;
			const msgpack_object *v = &e->via.map.ptr[j].val;
			if (key_is(k, "ctr")) {
				ctr = name_of(v, ctr_names, CL_CTR__COUNT);
				if (ctr < CL_CTR_FIRST_ERROR || ctr > CL_CTR_LAST_ERROR)
					return cl_err_set(err, CL_EPARSE,
							  "error sample %u has unknown error "
							  "class '%s'",
							  i, quote(v, q, sizeof(q)));
			} else if (key_is(k, "http_status")) {
				if (!get_i64(v, &status) || status < 0 || status > 999)
					return cl_err_set(err, CL_EPARSE,
							  "error sample %u has a bad http_status",
							  i);
			} else if (key_is(k, "body")) {
				if (v->type == MSGPACK_OBJECT_STR) {
					body = v->via.str.ptr;
					body_len = v->via.str.size;
				} else if (v->type == MSGPACK_OBJECT_BIN) {
					body = v->via.bin.ptr;
					body_len = v->via.bin.size;
				} else {
					return cl_err_set(err, CL_EPARSE,
							  "error sample %u body is not a string",
							  i);
				}
			} else {
				return cl_err_set(err, CL_EPARSE, "unknown error sample field '%s'",
						  quote(k, q, sizeof(q)));
			}
		}
		if (ctr < 0)
			return cl_err_set(err, CL_EPARSE, "error sample %u lacks 'ctr'", i);
		if (apply)
			cl_metrics_add_err_sample(m, ctr, (int)status, body, body_len);
	}
	return 0;
}

static int walk(struct cl_metrics *m, const msgpack_object *obj, bool apply, struct cl_err *err)
{
	char q[64];
	unsigned seen = 0;
	if (obj->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(err, CL_EPARSE, "metrics record is not a map");
	for (uint32_t i = 0; i < obj->via.map.size; i++) {
		const msgpack_object *k = &obj->via.map.ptr[i].key;
		const msgpack_object *v = &obj->via.map.ptr[i].val;
		unsigned bit;
		int rc;
		if (key_is(k, "lat")) {
			bit = 1;
			rc = walk_hists(m->lat, CL_LAT__COUNT, lat_names, "lat", "latency", v,
					apply, err);
		} else if (key_is(k, "cnt")) {
			bit = 2;
			rc = walk_hists(m->cnt, CL_CNT__COUNT, cnt_names, "cnt", "count", v, apply,
					err);
		} else if (key_is(k, "ctr")) {
			bit = 4;
			rc = walk_ctrs(m, v, apply, err);
		} else if (key_is(k, "health")) {
			bit = 8;
			rc = walk_health(m, v, apply, err);
		} else if (key_is(k, "errs")) {
			bit = 16;
			rc = walk_errs(m, v, apply, err);
		} else {
			return cl_err_set(err, CL_EPARSE, "unknown metrics field '%s'",
					  quote(k, q, sizeof(q)));
		}
		if (seen & bit)
			return cl_err_set(err, CL_EPARSE, "duplicate metrics field '%.*s'",
					  (int)k->via.str.size, k->via.str.ptr);
		seen |= bit;
		if (rc)
			return rc;
	}
	return 0;
}

int cl_metrics_unpack_add(struct cl_metrics *m, const msgpack_object *obj, struct cl_err *err)
{
	int rc = walk(m, obj, false, err);
	if (rc)
		return rc;
	rc = walk(m, obj, true, err);
	return rc;
}
