/* The histogram's msgpack form: sparse encoding and a validate-then-add decoder. */
#include "chatload/hist_wire.h"

#include "hist_int.h"

#include "mpk_read.h"

#include <math.h>
#include <string.h>

static int pack_key(msgpack_packer *pk, const char *key)
{
	size_t n = strlen(key);
	int rc = msgpack_pack_str(pk, n);
	return rc ? rc : msgpack_pack_str_body(pk, key, n);
}

int cl_hist_pack(const struct cl_hist *h, msgpack_packer *pk)
{
	uint32_t nonzero = 0;
	for (int32_t i = h->nz_lo; i < h->nz_hi; i++)
		nonzero += h->counts[i] != 0;

	int rc = msgpack_pack_map(pk, 7);
	rc = rc ? rc : pack_key(pk, "cfg");
	rc = rc ? rc : msgpack_pack_array(pk, 3);
	rc = rc ? rc : msgpack_pack_int64(pk, h->cfg.lowest);
	rc = rc ? rc : msgpack_pack_int64(pk, h->cfg.highest);
	rc = rc ? rc : msgpack_pack_int32(pk, h->cfg.sigfigs);
	rc = rc ? rc : pack_key(pk, "n");
	rc = rc ? rc : msgpack_pack_uint64(pk, h->total);
	rc = rc ? rc : pack_key(pk, "o");
	rc = rc ? rc : msgpack_pack_uint64(pk, h->overflow);
	rc = rc ? rc : pack_key(pk, "min");
	rc = rc ? rc : msgpack_pack_int64(pk, h->min);
	rc = rc ? rc : pack_key(pk, "max");
	rc = rc ? rc : msgpack_pack_int64(pk, h->max);
	rc = rc ? rc : pack_key(pk, "sum");
	rc = rc ? rc : msgpack_pack_double(pk, h->sum);
	rc = rc ? rc : pack_key(pk, "b");
	rc = rc ? rc : msgpack_pack_array(pk, (size_t)nonzero * 2);
	int32_t prev = 0;
	for (int32_t i = h->nz_lo; i < h->nz_hi && !rc; i++) {
		if (!h->counts[i])
			continue;
		rc = msgpack_pack_uint32(pk, (uint32_t)(i - prev));
		rc = rc ? rc : msgpack_pack_uint64(pk, h->counts[i]);
		prev = i;
	}
	return rc ? CL_ENOMEM : 0;
}

/* The decoded scalar fields of one encoding, and its bucket array. */
struct decoded {
	uint64_t n, o;
	int64_t min, max;
	double sum;
	const msgpack_object_array *b;
};

/* The fields of an encoding, as bits of the set read_fields has seen. */
enum { K_CFG = 1, K_N = 2, K_O = 4, K_MIN = 8, K_MAX = 16, K_SUM = 32, K_B = 64 };

/* Checks the "cfg" value v: [lowest, highest, sigfigs], equal to h's. */
static int read_cfg(const struct cl_hist *h, const msgpack_object *v, struct cl_err *err)
{
	int64_t lo, hi, sf;
	if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != 3 ||
	    !cli_mpk_i64(&v->via.array.ptr[0], &lo) || !cli_mpk_i64(&v->via.array.ptr[1], &hi) ||
	    !cli_mpk_i64(&v->via.array.ptr[2], &sf))
		return cl_err_set(err, CL_EPARSE,
				  "histogram 'cfg' is not [lowest, highest, sigfigs]");
	if (lo != h->cfg.lowest || hi != h->cfg.highest || sf != h->cfg.sigfigs)
		return cl_err_set(err, CL_EPARSE,
				  "histogram config [%lld, %lld, %lld] differs from the expected "
				  "[%lld, %lld, %d]",
				  (long long)lo, (long long)hi, (long long)sf,
				  (long long)h->cfg.lowest, (long long)h->cfg.highest,
				  h->cfg.sigfigs);
	return 0;
}

/* Reads the field named k (value v) into d, checking its type; *bit says which it was. */
static int read_field(const struct cl_hist *h, const msgpack_object *k, const msgpack_object *v,
		      struct decoded *d, unsigned *bit, struct cl_err *err)
{
	if (cli_mpk_str_is(k, "cfg")) {
		*bit = K_CFG;
		return read_cfg(h, v, err);
	} else if (cli_mpk_str_is(k, "n")) {
		*bit = K_N;
		if (!cli_mpk_u64(v, &d->n))
			return cl_err_set(err, CL_EPARSE,
					  "histogram 'n' is not a non-negative integer");
	} else if (cli_mpk_str_is(k, "o")) {
		*bit = K_O;
		if (!cli_mpk_u64(v, &d->o))
			return cl_err_set(err, CL_EPARSE,
					  "histogram 'o' is not a non-negative integer");
	} else if (cli_mpk_str_is(k, "min")) {
		*bit = K_MIN;
		if (!cli_mpk_i64(v, &d->min))
			return cl_err_set(err, CL_EPARSE, "histogram 'min' is not an integer");
	} else if (cli_mpk_str_is(k, "max")) {
		*bit = K_MAX;
		if (!cli_mpk_i64(v, &d->max))
			return cl_err_set(err, CL_EPARSE, "histogram 'max' is not an integer");
	} else if (cli_mpk_str_is(k, "sum")) {
		*bit = K_SUM;
		/* A sum of values >= 0 is never packed as a negative integer: that is refused as
		 * a wrong type, like a string. */
		if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER || !cli_mpk_f64(v, &d->sum))
			return cl_err_set(err, CL_EPARSE, "histogram 'sum' is not a number");
		if (!isfinite(d->sum) || d->sum < 0)
			return cl_err_set(err, CL_EPARSE,
					  "histogram 'sum' is negative or not finite");
	} else if (cli_mpk_str_is(k, "b")) {
		*bit = K_B;
		if (v->type != MSGPACK_OBJECT_ARRAY)
			return cl_err_set(err, CL_EPARSE, "histogram 'b' is not an array");
		d->b = &v->via.array;
	} else {
		const char *ks;
		size_t kn;
		if (!cli_mpk_str(k, &ks, &kn))
			return cl_err_set(err, CL_EPARSE, "histogram key is not a string");
		return cl_err_set(err, CL_EPARSE, "unknown histogram field '%.*s'",
				  kn > 32 ? 32 : (int)kn, ks);
	}
	return 0;
}

/* Reads every field of the map obj into d: each known, typed, once, none missing. */
static int read_fields(const struct cl_hist *h, const msgpack_object *obj, struct decoded *d,
		       struct cl_err *err)
{
	if (obj->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(err, CL_EPARSE, "histogram is not a map");
	unsigned seen = 0;
	const msgpack_object_map *m = &obj->via.map;
	for (uint32_t i = 0; i < m->size; i++) {
		unsigned bit = 0;
		int rc = read_field(h, &m->ptr[i].key, &m->ptr[i].val, d, &bit, err);
		if (rc)
			return rc;
		if (seen & bit)
			return cl_err_set(err, CL_EPARSE, "duplicate histogram field");
		seen |= bit;
	}
	if (seen != (K_CFG | K_N | K_O | K_MIN | K_MAX | K_SUM | K_B))
		return cl_err_set(err, CL_EPARSE,
				  "histogram lacks a field (needs cfg, n, o, min, max, sum, b)");
	return 0;
}

/* Checks that the scalar fields agree with each other and with h's range, and that the
 * bucket array's length is possible. */
static int check_scalars(const struct cl_hist *h, const struct decoded *d, struct cl_err *err)
{
	if (d->o > d->n)
		return cl_err_set(err, CL_EPARSE, "histogram overflow %llu exceeds count %llu",
				  (unsigned long long)d->o, (unsigned long long)d->n);
	if (d->n > 0 && (d->min < 0 || d->min > d->max))
		return cl_err_set(err, CL_EPARSE,
				  "histogram min %lld and max %lld are inconsistent",
				  (long long)d->min, (long long)d->max);
	if (d->n > 0 && d->o == 0 && d->max > h->cfg.highest)
		return cl_err_set(err, CL_EPARSE,
				  "histogram max %lld is above %lld but nothing overflowed",
				  (long long)d->max, (long long)h->cfg.highest);
	if (d->o > 0 && d->max <= h->cfg.highest)
		return cl_err_set(err, CL_EPARSE,
				  "histogram has overflowed values but max %lld is not above %lld",
				  (long long)d->max, (long long)h->cfg.highest);
	if (d->n == 0 && d->sum != 0)
		return cl_err_set(err, CL_EPARSE, "empty histogram has a non-zero sum");
	if (d->b->size % 2 != 0)
		return cl_err_set(err, CL_EPARSE, "histogram bucket array has odd length %u",
				  d->b->size);
	if (d->b->size > 2 * (uint64_t)h->counts_len)
		return cl_err_set(err, CL_EPARSE, "histogram bucket array length %u exceeds %lld",
				  d->b->size, 2 * (long long)h->counts_len);
	return 0;
}

/* Checks the buckets: (index delta, count) pairs whose indices ascend inside h's range and
 * whose counts, with the overflow, sum to n; then the sum against n * [min, max], and that
 * adding them to h cannot overflow its total. */
static int check_buckets(const struct cl_hist *h, const struct decoded *d, struct cl_err *err)
{
	uint64_t index = 0, count_sum = d->o;
	for (uint32_t i = 0; i < d->b->size; i += 2) {
		uint64_t delta, count;
		if (!cli_mpk_u64(&d->b->ptr[i], &delta) || !cli_mpk_u64(&d->b->ptr[i + 1], &count))
			return cl_err_set(err, CL_EPARSE,
					  "histogram bucket entry %u is not a non-negative integer",
					  i / 2);
		if (i > 0 && delta == 0)
			return cl_err_set(
			    err, CL_EPARSE,
			    "histogram bucket index %llu repeated (indices must ascend)",
			    (unsigned long long)index);
		if (delta >= (uint64_t)h->counts_len || index + delta >= (uint64_t)h->counts_len)
			return cl_err_set(
			    err, CL_EPARSE, "histogram bucket index %llu out of range (max %d)",
			    (unsigned long long)(delta >= (uint64_t)h->counts_len ? delta
										  : index + delta),
			    h->counts_len - 1);
		index += delta;
		if (__builtin_add_overflow(count_sum, count, &count_sum))
			return cl_err_set(err, CL_EPARSE, "histogram bucket counts overflow");
	}
	if (count_sum != d->n)
		return cl_err_set(err, CL_EPARSE,
				  "histogram counts sum to %llu (with overflow) but n is %llu",
				  (unsigned long long)count_sum, (unsigned long long)d->n);
	/* The sum must lie between n * min and n * max (with room for double rounding), or the
	 * mean would be nonsense. */
	if (d->n > 0 && (d->sum < (double)d->min * (double)d->n * (1 - 1e-9) ||
			 d->sum > (double)d->max * (double)d->n * (1 + 1e-9)))
		return cl_err_set(err, CL_EPARSE, "histogram sum %.17g is outside n * [min, max]",
				  d->sum);
	uint64_t dummy;
	if (__builtin_add_overflow(h->total, d->n, &dummy))
		return cl_err_set(err, CL_EPARSE, "histogram total count would overflow");
	return 0;
}

/* Validates obj against h's configuration without touching h. */
static int decode_check(const struct cl_hist *h, const msgpack_object *obj, struct decoded *d,
			struct cl_err *err)
{
	int rc = read_fields(h, obj, d, err);
	rc = rc ? rc : check_scalars(h, d, err);
	return rc ? rc : check_buckets(h, d, err);
}

int cl_hist_unpack_check(const struct cl_hist *h, const msgpack_object *obj, struct cl_err *err)
{
	struct decoded d = { 0 };
	if (!h->counts)
		return cl_err_set(err, CL_EINVAL, "histogram not initialised");
	return decode_check(h, obj, &d, err);
}

int cl_hist_unpack_add(struct cl_hist *h, const msgpack_object *obj, struct cl_err *err)
{
	struct decoded d = { 0 };
	if (!h->counts)
		return cl_err_set(err, CL_EINVAL, "histogram not initialised");
	int rc = decode_check(h, obj, &d, err);
	if (rc)
		return rc;
	if (d.n == 0)
		return 0;
	uint64_t index = 0;
	for (uint32_t i = 0; i < d.b->size; i += 2) {
		index += d.b->ptr[i].via.u64;
		h->counts[index] += d.b->ptr[i + 1].via.u64;
		cli_hist_occupy(h, (int32_t)index);
	}
	h->total += d.n;
	h->overflow += d.o;
	h->sum += d.sum;
	if (d.min < h->min)
		h->min = d.min;
	if (d.max > h->max)
		h->max = d.max;
	return 0;
}
