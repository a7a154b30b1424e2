/* The measurement record's msgpack form: encoder, and an all-or-nothing hostile-input decoder. */
#include "chatload/metrics_wire.h"

#include "chatload/assert.h"
#include "chatload/hist_wire.h"

#include "metrics_int.h"
#include "mpk_read.h"

#include <math.h>
#include <string.h>

static int pack_str(msgpack_packer *pk, const char *s, size_t n)
{
	int rc = msgpack_pack_str(pk, n);
	return rc ? rc : msgpack_pack_str_body(pk, s, n);
}

static int pack_key(msgpack_packer *pk, const char *key)
{
	return pack_str(pk, key, strlen(key));
}

static int pack_hists(msgpack_packer *pk, const struct cl_hist *h, int n, const char *(*name)(int))
{
	size_t used = 0;
	for (int i = 0; i < n; i++)
		used += cl_hist_count(&h[i]) != 0;
	int rc = msgpack_pack_map(pk, used);
	for (int i = 0; i < n && !rc; i++) {
		if (!cl_hist_count(&h[i]))
			continue;
		rc = pack_key(pk, name(i));
		rc = rc ? rc : cl_hist_pack(&h[i], pk);
	}
	return rc;
}

static int pack_ctrs(msgpack_packer *pk, const uint64_t *ctr)
{
	size_t used = 0;
	for (int i = 0; i < CL_CTR__COUNT; i++)
		used += ctr[i] != 0;
	int rc = msgpack_pack_map(pk, used);
	for (int i = 0; i < CL_CTR__COUNT && !rc; i++) {
		if (!ctr[i])
			continue;
		rc = pack_key(pk, cl_ctr_name(i));
		rc = rc ? rc : msgpack_pack_uint64(pk, ctr[i]);
	}
	return rc;
}

/* "eps": one {lat, ctr} map per endpoint, in the plan's order (target.urls). */
static int pack_eps(msgpack_packer *pk, const struct cl_metrics *m)
{
	int rc = pack_key(pk, "eps");
	rc = rc ? rc : msgpack_pack_array(pk, m->n_eps);
	for (uint32_t e = 0; e < m->n_eps && !rc; e++) {
		rc = msgpack_pack_map(pk, 2);
		rc = rc ? rc : pack_key(pk, "lat");
		rc = rc ? rc : pack_hists(pk, m->eps[e].lat, CL_EP_LAT__COUNT, cl_ep_lat_name);
		rc = rc ? rc : pack_key(pk, "ctr");
		rc = rc ? rc : pack_ctrs(pk, m->eps[e].ctr);
	}
	return rc;
}

int cl_metrics_pack(const struct cl_metrics *m, msgpack_packer *pk)
{
	int rc = msgpack_pack_map(pk, 5 + !!m->n_eps + !!m->n_cls);
	rc = rc ? rc : pack_key(pk, "lat");
	rc = rc ? rc : pack_hists(pk, m->lat, CL_LAT__COUNT, cl_lat_name);
	rc = rc ? rc : pack_key(pk, "cnt");
	rc = rc ? rc : pack_hists(pk, m->cnt, CL_CNT__COUNT, cl_cnt_name);

	rc = rc ? rc : pack_key(pk, "ctr");
	rc = rc ? rc : pack_ctrs(pk, m->ctr);
	if (m->n_eps)
		rc = rc ? rc : pack_eps(pk, m);
	/* "cls": one whole record per request class, in the plan's order (workload.classes) */
	if (m->n_cls) {
		rc = rc ? rc : pack_key(pk, "cls");
		rc = rc ? rc : msgpack_pack_array(pk, m->n_cls);
		for (uint32_t k = 0; k < m->n_cls && !rc; k++)
			rc = cl_metrics_pack(&m->cls[k], pk);
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
			name = cl_ctr_name(CL_CTR_ERR_OTHER);
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

/* A finite number >= 0 (the health gauges). */
static bool get_nonneg(const msgpack_object *o, double *out)
{
	return cli_mpk_f64(o, out) && isfinite(*out) && *out >= 0;
}

/*
 * One pass over a decoded metrics map.  With apply false it only validates (m untouched);
 * with apply true it adds into m and assumes a validating pass succeeded.  Two passes make
 * unpack_add all-or-nothing: an accumulator never holds half of a rejected delta.
 */
static int walk_hists(struct cl_hist *hists, int n, const char *(*name)(int), const char *field,
		      const char *kind, const msgpack_object *obj, bool apply, struct cl_err *err)
{
	char q[64];
	if (obj->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(err, CL_EPARSE, "metrics '%s' is not a map", field);
	CL_ASSERT(n > 0 && n <= 32); /* seen holds one bit per histogram */
	uint32_t seen = 0;
	for (uint32_t i = 0; i < obj->via.map.size; i++) {
		const msgpack_object *k = &obj->via.map.ptr[i].key;
		int idx = cli_mpk_str_index(k, name, n);
		if (idx < 0)
			return cl_err_set(err, CL_EPARSE, "unknown %s histogram '%s'", kind,
					  cli_mpk_quote(k, q, sizeof(q)));
		if (seen & (1u << idx))
			return cl_err_set(err, CL_EPARSE, "duplicate %s histogram '%s'", kind,
					  name(idx));
		seen |= 1u << idx;
		int rc = apply ? cl_hist_unpack_add(&hists[idx], &obj->via.map.ptr[i].val, err)
			       : cl_hist_unpack_check(&hists[idx], &obj->via.map.ptr[i].val, err);
		if (rc)
			return cl_err_prefix(err, "%s histogram '%s'", kind, name(idx));
	}
	return 0;
}

static int walk_ctrs(uint64_t *ctr, const msgpack_object *obj, bool apply, struct cl_err *err)
{
	char q[64];
	if (obj->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(err, CL_EPARSE, "metrics 'ctr' is not a map");
	uint64_t seen = 0; /* one bit per counter */
	_Static_assert(CL_CTR__COUNT <= 64, "the seen mask holds every counter");
	for (uint32_t i = 0; i < obj->via.map.size; i++) {
		const msgpack_object *k = &obj->via.map.ptr[i].key;
		const msgpack_object *v = &obj->via.map.ptr[i].val;
		int idx = cli_mpk_str_index(k, cl_ctr_name, CL_CTR__COUNT);
		if (idx < 0)
			return cl_err_set(err, CL_EPARSE, "unknown counter '%s'",
					  cli_mpk_quote(k, q, sizeof(q)));
		if (seen & (1ull << idx))
			return cl_err_set(err, CL_EPARSE, "duplicate counter '%s'",
					  cl_ctr_name(idx));
		seen |= 1ull << idx;
		uint64_t n_add, sum;
		if (!cli_mpk_u64(v, &n_add))
			return cl_err_set(err, CL_EPARSE,
					  "counter '%s' is not a non-negative integer",
					  cl_ctr_name(idx));
		if (__builtin_add_overflow(ctr[idx], n_add, &sum))
			return cl_err_set(err, CL_EPARSE, "counter '%s' would overflow",
					  cl_ctr_name(idx));
		if (apply)
			ctr[idx] = sum;
	}
	return 0;
}

/* "eps": at most CL_METRICS_EPS_MAX maps of {lat, ctr}.  The validating pass grows m to hold
 * them (empty records: no value of m changes), so both passes have histograms to read. */
static int walk_eps(struct cl_metrics *m, const msgpack_object *obj, bool apply, struct cl_err *err)
{
	char q[64];
	if (obj->type != MSGPACK_OBJECT_ARRAY)
		return cl_err_set(err, CL_EPARSE, "metrics 'eps' is not an array");
	uint32_t n = obj->via.array.size;
	if (n > CL_METRICS_EPS_MAX)
		return cl_err_set(err, CL_EPARSE, "metrics 'eps' has %u endpoints (max %d)", n,
				  CL_METRICS_EPS_MAX);
	if (!apply && cl_metrics_eps_init(m, n) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory for %u endpoints", n);
	for (uint32_t e = 0; e < n; e++) {
		const msgpack_object *o = &obj->via.array.ptr[e];
		if (o->type != MSGPACK_OBJECT_MAP)
			return cl_err_set(err, CL_EPARSE, "metrics 'eps[%u]' is not a map", e);
		unsigned seen = 0;
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			const msgpack_object *k = &o->via.map.ptr[i].key;
			const msgpack_object *v = &o->via.map.ptr[i].val;
			unsigned bit;
			int rc;
			if (cli_mpk_str_is(k, "lat")) {
				bit = 1;
				rc = walk_hists(m->eps[e].lat, CL_EP_LAT__COUNT, cl_ep_lat_name,
						"lat", "endpoint latency", v, apply, err);
			} else if (cli_mpk_str_is(k, "ctr")) {
				bit = 2;
				rc = walk_ctrs(m->eps[e].ctr, v, apply, err);
			} else {
				return cl_err_set(err, CL_EPARSE, "unknown field '%s' in eps[%u]",
						  cli_mpk_quote(k, q, sizeof(q)), e);
			}
			if (seen & bit)
				return cl_err_set(err, CL_EPARSE, "duplicate field in eps[%u]", e);
			seen |= bit;
			if (rc)
				return cl_err_prefix(err, "eps[%u]", e);
		}
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
		if (cli_mpk_str_is(k, "cpu_pct"))
			ok = get_nonneg(v, &h.cpu_pct);
		else if (cli_mpk_str_is(k, "cpu_pct_capacity"))
			ok = get_nonneg(v, &h.cpu_pct_capacity);
		else if (cli_mpk_str_is(k, "rss_bytes"))
			ok = cli_mpk_i64(v, &h.rss_bytes) && h.rss_bytes >= 0;
		else if (cli_mpk_str_is(k, "inflight"))
			ok = cli_mpk_i64(v, &h.inflight) && h.inflight >= 0;
		else
			return cl_err_set(err, CL_EPARSE, "unknown health field '%s'",
					  cli_mpk_quote(k, q, sizeof(q)));
		if (!ok)
			return cl_err_set(err, CL_EPARSE,
					  "health field '%s' is not a non-negative number",
					  cli_mpk_quote(k, q, sizeof(q)));
	}
	int64_t inflight;
	if (__builtin_add_overflow(m->health.inflight, h.inflight, &inflight))
		return cl_err_set(err, CL_EPARSE, "health 'inflight' would overflow");
	if (apply)
		cli_metrics_health_merge(&m->health, &h);
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
			if (cli_mpk_str_is(k, "ctr")) {
				ctr = cli_mpk_str_index(v, cl_ctr_name, CL_CTR__COUNT);
				if (ctr < CL_CTR_FIRST_ERROR || ctr > CL_CTR_LAST_ERROR)
					return cl_err_set(err, CL_EPARSE,
							  "error sample %u has unknown error "
							  "class '%s'",
							  i, cli_mpk_quote(v, q, sizeof(q)));
			} else if (cli_mpk_str_is(k, "http_status")) {
				if (!cli_mpk_i64(v, &status) || status < 0 || status > 999)
					return cl_err_set(err, CL_EPARSE,
							  "error sample %u has a bad http_status",
							  i);
			} else if (cli_mpk_str_is(k, "body")) {
				if (!cli_mpk_bytes(v, &body, &body_len))
					return cl_err_set(err, CL_EPARSE,
							  "error sample %u body is not a string",
							  i);
			} else {
				return cl_err_set(err, CL_EPARSE, "unknown error sample field '%s'",
						  cli_mpk_quote(k, q, sizeof(q)));
			}
		}
		if (ctr < 0)
			return cl_err_set(err, CL_EPARSE, "error sample %u lacks 'ctr'", i);
		if (apply)
			cl_metrics_add_err_sample(m, ctr, (int)status, body, body_len);
	}
	return 0;
}

static int walk(struct cl_metrics *m, const msgpack_object *obj, bool apply, bool in_class,
		struct cl_err *err);

/* "cls": at most CL_METRICS_CLASSES_MAX whole records, none with endpoints or classes of its
 * own.  The validating pass grows m to hold them, as walk_eps does. */
static int walk_cls(struct cl_metrics *m, const msgpack_object *obj, bool apply, struct cl_err *err)
{
	if (obj->type != MSGPACK_OBJECT_ARRAY)
		return cl_err_set(err, CL_EPARSE, "metrics 'cls' is not an array");
	uint32_t n = obj->via.array.size;
	if (n > CL_METRICS_CLASSES_MAX)
		return cl_err_set(err, CL_EPARSE, "metrics 'cls' has %u classes (max %d)", n,
				  CL_METRICS_CLASSES_MAX);
	if (!apply && cl_metrics_cls_init(m, n) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory for %u classes", n);
	for (uint32_t k = 0; k < n; k++) {
		int rc = walk(&m->cls[k], &obj->via.array.ptr[k], apply, true, err);
		if (rc)
			return cl_err_prefix(err, "cls[%u]", k);
	}
	return 0;
}

static int walk(struct cl_metrics *m, const msgpack_object *obj, bool apply, bool in_class,
		struct cl_err *err)
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
		if (cli_mpk_str_is(k, "lat")) {
			bit = 1;
			rc = walk_hists(m->lat, CL_LAT__COUNT, cl_lat_name, "lat", "latency", v,
					apply, err);
		} else if (cli_mpk_str_is(k, "cnt")) {
			bit = 2;
			rc = walk_hists(m->cnt, CL_CNT__COUNT, cl_cnt_name, "cnt", "count", v,
					apply, err);
		} else if (cli_mpk_str_is(k, "ctr")) {
			bit = 4;
			rc = walk_ctrs(m->ctr, v, apply, err);
		} else if (cli_mpk_str_is(k, "health")) {
			bit = 8;
			rc = walk_health(m, v, apply, err);
		} else if (cli_mpk_str_is(k, "errs")) {
			bit = 16;
			rc = walk_errs(m, v, apply, err);
		} else if (cli_mpk_str_is(k, "eps") && !in_class) {
			bit = 32;
			rc = walk_eps(m, v, apply, err);
		} else if (cli_mpk_str_is(k, "cls") && !in_class) {
			bit = 64;
			rc = walk_cls(m, v, apply, err);
		} else {
			return cl_err_set(err, CL_EPARSE, "unknown metrics field '%s'",
					  cli_mpk_quote(k, q, sizeof(q)));
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
	int rc = walk(m, obj, false, false, err);
	if (rc)
		return rc;
	rc = walk(m, obj, true, false, err);
	return rc;
}
