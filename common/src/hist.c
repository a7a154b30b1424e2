/* Log-linear (HDR-style) histogram: fixed memory, O(1) record, exact merge, sparse encoding. */
#include "chatload/hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Layout (HdrHistogram's): values are split into buckets of doubling range.  Bucket 0 holds
 * [0, sub_bucket_count << unit_magnitude) in steps of 1 << unit_magnitude; bucket b > 0
 * holds the upper half of its sub-buckets, [half << (b + unit), count << (b + unit)), in
 * steps of 1 << (b + unit).  The lower half of every bucket b > 0 would duplicate bucket
 * b - 1, so it is not stored: counts_len = (bucket_count + 1) * sub_bucket_half_count.
 * sub_bucket_count is the power of two at or above 2 * 10^sigfigs, so a step is at most
 * v / 10^sigfigs for every v >= sub_bucket_half_count << unit_magnitude.
 */

/* Highest supported `highest`: keeps every shift and "+ width - 1" below INT64_MAX. */
#define HIST_HIGHEST_MAX (INT64_MAX / 2)

static int32_t bucket_index_of(const struct cl_hist *h, int64_t v)
{
	/* The mask forces values below one bucket's range into bucket 0. */
	int32_t pow2ceiling = 64 - __builtin_clzll((uint64_t)(v | h->sub_bucket_mask));
	return pow2ceiling - h->unit_magnitude - (h->sub_bucket_half_count_magnitude + 1);
}

static int32_t counts_index_of(const struct cl_hist *h, int64_t v)
{
	int32_t bucket = bucket_index_of(h, v);
	int32_t sub = (int32_t)(v >> (bucket + h->unit_magnitude));
	return ((bucket + 1) << h->sub_bucket_half_count_magnitude) +
	       (sub - h->sub_bucket_half_count);
}

/* Lowest value that lands in counts[index]. */
static int64_t value_at_index(const struct cl_hist *h, int32_t index)
{
	int32_t bucket = (index >> h->sub_bucket_half_count_magnitude) - 1;
	int32_t sub = (index & (h->sub_bucket_half_count - 1)) + h->sub_bucket_half_count;
	if (bucket < 0) {
		sub -= h->sub_bucket_half_count;
		bucket = 0;
	}
	return (int64_t)sub << (bucket + h->unit_magnitude);
}

/* Highest value that lands in counts[index] (its "highest equivalent value"). */
static int64_t highest_at_index(const struct cl_hist *h, int32_t index)
{
	int32_t bucket = (index >> h->sub_bucket_half_count_magnitude) - 1;
	if (bucket < 0)
		bucket = 0;
	int64_t width = (int64_t)1 << (bucket + h->unit_magnitude);
	return value_at_index(h, index) + width - 1;
}

static bool cfg_equal(const struct cl_hist_cfg *a, const struct cl_hist_cfg *b)
{
	return a->lowest == b->lowest && a->highest == b->highest && a->sigfigs == b->sigfigs;
}

int cl_hist_init(struct cl_hist *h, const struct cl_hist_cfg *cfg_in)
{
	/* Copied first: cfg_in may point into *h (re-initialising with its own config). */
	struct cl_hist_cfg cfg_copy = cfg_in ? *cfg_in : (struct cl_hist_cfg){ 0 };
	const struct cl_hist_cfg *cfg = &cfg_copy;
	memset(h, 0, sizeof(*h));
	h->min = INT64_MAX;
	if (!cfg_in || cfg->lowest < 1 || cfg->sigfigs < 1 || cfg->sigfigs > 5 ||
	    cfg->highest > HIST_HIGHEST_MAX || cfg->highest < 2 * cfg->lowest)
		return CL_EINVAL;

	int64_t single_unit_max = 2;
	for (int i = 0; i < cfg->sigfigs; i++)
		single_unit_max *= 10;
	/* ceil(log2(2 * 10^sigfigs)): 2000 -> 11, so 2048 sub-buckets for 3 digits. */
	int32_t sub_bucket_count_magnitude = 64 - __builtin_clzll((uint64_t)single_unit_max - 1);
	int32_t unit_magnitude = 63 - __builtin_clzll((uint64_t)cfg->lowest);
	int32_t half_magnitude = sub_bucket_count_magnitude - 1;
	if (unit_magnitude + half_magnitude > 61)
		return CL_EINVAL;

	h->cfg = *cfg;
	h->unit_magnitude = unit_magnitude;
	h->sub_bucket_half_count_magnitude = half_magnitude;
	h->sub_bucket_count = (int32_t)1 << (half_magnitude + 1);
	h->sub_bucket_half_count = h->sub_bucket_count / 2;
	h->sub_bucket_mask = ((int64_t)h->sub_bucket_count - 1) << unit_magnitude;

	/* Buckets until the first untrackable value exceeds highest. */
	int64_t smallest_untrackable = (int64_t)h->sub_bucket_count << unit_magnitude;
	int32_t buckets = 1;
	while (smallest_untrackable <= cfg->highest) {
		smallest_untrackable <<= 1;
		buckets++;
	}
	h->bucket_count = buckets;
	h->counts_len = (buckets + 1) * h->sub_bucket_half_count;

	h->counts = calloc((size_t)h->counts_len, sizeof(*h->counts));
	if (!h->counts) {
		h->counts_len = 0;
		return CL_ENOMEM;
	}
	return 0;
}

void cl_hist_destroy(struct cl_hist *h)
{
	if (!h)
		return;
	free(h->counts);
	h->counts = NULL;
	h->counts_len = 0;
}

void cl_hist_reset(struct cl_hist *h)
{
	if (h->counts)
		memset(h->counts, 0, (size_t)h->counts_len * sizeof(*h->counts));
	h->total = 0;
	h->overflow = 0;
	h->min = INT64_MAX;
	h->max = 0;
	h->sum = 0;
}

void cl_hist_record_n(struct cl_hist *h, int64_t value, uint64_t n)
{
	if (n == 0)
		return;
	int64_t v = value < 0 ? 0 : value;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->total += n;
	h->sum += (double)v * (double)n;
	if (v > h->cfg.highest) {
		h->overflow += n;
		return;
	}
	if (v < h->cfg.lowest)
		v = h->cfg.lowest;
	h->counts[counts_index_of(h, v)] += n;
}

void cl_hist_record(struct cl_hist *h, int64_t value)
{
	cl_hist_record_n(h, value, 1);
}

int cl_hist_merge(struct cl_hist *dst, const struct cl_hist *src)
{
	if (!cfg_equal(&dst->cfg, &src->cfg) || !dst->counts || !src->counts)
		return CL_EINVAL;
	if (src->total == 0)
		return 0;
	for (int32_t i = 0; i < dst->counts_len; i++)
		dst->counts[i] += src->counts[i];
	dst->total += src->total;
	dst->overflow += src->overflow;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	return 0;
}

/*
 * Rank (1-based) of the value at percentile p: ceil(p/100 * n), the nearest-rank definition.
 * p/100*n is computed in double, so an exact product like 99.99% of 10000 can come out as
 * 9999.0000000001; shrinking it by a relative 1e-12 before ceil() keeps such products at the
 * intended integer without moving any genuinely fractional rank for n below ~10^11.
 */
static uint64_t rank_of(double p, uint64_t n)
{
	double x = p / 100.0 * (double)n;
	x -= x * 1e-12;
	double r = ceil(x);
	if (!(r >= 1.0))
		return 1;
	if (r >= (double)n)
		return n;
	return (uint64_t)r;
}

int64_t cl_hist_percentile(const struct cl_hist *h, double p)
{
	if (h->total == 0)
		return 0;
	if (!(p >= 0.0)) /* also NaN */
		p = 0.0;
	if (p >= 100.0)
		return h->max;
	uint64_t rank = rank_of(p, h->total);
	uint64_t in_buckets = h->total - h->overflow;
	/* Overflowed values rank above every bucket; all we know of them is the max. */
	if (rank > in_buckets)
		return h->max;
	uint64_t seen = 0;
	for (int32_t i = 0; i < h->counts_len; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			int64_t v = highest_at_index(h, i);
			return v < h->max ? v : h->max;
		}
	}
	return h->max; /* counts disagree with total: only reachable through corruption */
}

double cl_hist_mean(const struct cl_hist *h)
{
	return h->total ? h->sum / (double)h->total : 0.0;
}

int64_t cl_hist_min(const struct cl_hist *h)
{
	return h->total ? h->min : 0;
}

int64_t cl_hist_max(const struct cl_hist *h)
{
	return h->max;
}

uint64_t cl_hist_count(const struct cl_hist *h)
{
	return h->total;
}

uint64_t cl_hist_overflow(const struct cl_hist *h)
{
	return h->overflow;
}

bool cl_hist_equal(const struct cl_hist *a, const struct cl_hist *b)
{
	if (!cfg_equal(&a->cfg, &b->cfg) || a->counts_len != b->counts_len)
		return false;
	if (a->total != b->total || a->overflow != b->overflow || a->sum != b->sum)
		return false;
	if (a->total && (a->min != b->min || a->max != b->max))
		return false;
	if (a->counts_len && a->counts && b->counts)
		return memcmp(a->counts, b->counts, (size_t)a->counts_len * sizeof(*a->counts)) ==
		       0;
	return a->counts == b->counts;
}

bool cl_hist_next_bucket(const struct cl_hist *h, int32_t *state, int32_t *index, int64_t *value,
			 uint64_t *count)
{
	for (int32_t i = *state < 0 ? 0 : *state; i < h->counts_len; i++) {
		if (h->counts[i]) {
			*index = i;
			*value = highest_at_index(h, i);
			*count = h->counts[i];
			*state = i + 1;
			return true;
		}
	}
	*state = h->counts_len;
	return false;
}

static int pack_key(msgpack_packer *pk, const char *key)
{
	size_t n = strlen(key);
	int rc = msgpack_pack_str(pk, n);
	return rc ? rc : msgpack_pack_str_body(pk, key, n);
}

int cl_hist_pack(const struct cl_hist *h, msgpack_packer *pk)
{
	uint32_t nonzero = 0;
	for (int32_t i = 0; i < h->counts_len; i++)
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
	for (int32_t i = 0; i < h->counts_len && !rc; i++) {
		if (!h->counts[i])
			continue;
		rc = msgpack_pack_uint32(pk, (uint32_t)(i - prev));
		rc = rc ? rc : msgpack_pack_uint64(pk, h->counts[i]);
		prev = i;
	}
	return rc ? CL_ENOMEM : 0;
}

static bool key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	       memcmp(k->via.str.ptr, name, n) == 0;
}

/* A msgpack integer as int64 (false when not an integer or beyond int64). */
static bool get_i64(const msgpack_object *o, int64_t *out)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (o->via.u64 > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)o->via.u64;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = o->via.i64;
		return true;
	}
	return false;
}

static bool get_u64(const msgpack_object *o, uint64_t *out)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return false;
	*out = o->via.u64;
	return true;
}

/* The decoded scalar fields of one encoding, and its bucket array. */
struct decoded {
	uint64_t n, o;
	int64_t min, max;
	double sum;
	const msgpack_object_array *b;
};

/* Validates obj against h's configuration without touching h. */
static int decode_check(const struct cl_hist *h, const msgpack_object *obj, struct decoded *d,
			struct cl_err *err)
{
	enum { K_CFG = 1, K_N = 2, K_O = 4, K_MIN = 8, K_MAX = 16, K_SUM = 32, K_B = 64 };
	if (obj->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(err, CL_EPARSE, "histogram is not a map");
	unsigned seen = 0;
	const msgpack_object_map *m = &obj->via.map;
	for (uint32_t i = 0; i < m->size; i++) {
		const msgpack_object *k = &m->ptr[i].key;
		const msgpack_object *v = &m->ptr[i].val;
		unsigned bit;
		if (key_is(k, "cfg")) {
			bit = K_CFG;
			int64_t lo, hi, sf;
			if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != 3 ||
			    !get_i64(&v->via.array.ptr[0], &lo) ||
			    !get_i64(&v->via.array.ptr[1], &hi) ||
			    !get_i64(&v->via.array.ptr[2], &sf))
				return cl_err_set(
				    err, CL_EPARSE,
				    "histogram 'cfg' is not [lowest, highest, sigfigs]");
			if (lo != h->cfg.lowest || hi != h->cfg.highest || sf != h->cfg.sigfigs)
				return cl_err_set(
				    err, CL_EPARSE,
				    "histogram config [%lld, %lld, %lld] differs from the expected "
				    "[%lld, %lld, %d]",
				    (long long)lo, (long long)hi, (long long)sf,
				    (long long)h->cfg.lowest, (long long)h->cfg.highest,
				    h->cfg.sigfigs);
		} else if (key_is(k, "n")) {
			bit = K_N;
			if (!get_u64(v, &d->n))
				return cl_err_set(err, CL_EPARSE,
						  "histogram 'n' is not a non-negative integer");
		} else if (key_is(k, "o")) {
			bit = K_O;
			if (!get_u64(v, &d->o))
				return cl_err_set(err, CL_EPARSE,
						  "histogram 'o' is not a non-negative integer");
		} else if (key_is(k, "min")) {
			bit = K_MIN;
			if (!get_i64(v, &d->min))
				return cl_err_set(err, CL_EPARSE,
						  "histogram 'min' is not an integer");
		} else if (key_is(k, "max")) {
			bit = K_MAX;
			if (!get_i64(v, &d->max))
				return cl_err_set(err, CL_EPARSE,
						  "histogram 'max' is not an integer");
		} else if (key_is(k, "sum")) {
			bit = K_SUM;
			if (v->type == MSGPACK_OBJECT_FLOAT64 || v->type == MSGPACK_OBJECT_FLOAT32)
				d->sum = v->via.f64;
			else if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
				d->sum = (double)v->via.u64;
			else
				return cl_err_set(err, CL_EPARSE,
						  "histogram 'sum' is not a number");
			if (!isfinite(d->sum) || d->sum < 0)
				return cl_err_set(err, CL_EPARSE,
						  "histogram 'sum' is negative or not finite");
		} else if (key_is(k, "b")) {
			bit = K_B;
			if (v->type != MSGPACK_OBJECT_ARRAY)
				return cl_err_set(err, CL_EPARSE, "histogram 'b' is not an array");
			d->b = &v->via.array;
		} else {
			if (k->type != MSGPACK_OBJECT_STR)
				return cl_err_set(err, CL_EPARSE, "histogram key is not a string");
			int len = k->via.str.size > 32 ? 32 : (int)k->via.str.size;
			return cl_err_set(err, CL_EPARSE, "unknown histogram field '%.*s'", len,
					  k->via.str.ptr);
		}
		if (seen & bit)
			return cl_err_set(err, CL_EPARSE, "duplicate histogram field");
		seen |= bit;
	}
	if (seen != (K_CFG | K_N | K_O | K_MIN | K_MAX | K_SUM | K_B))
		return cl_err_set(err, CL_EPARSE,
				  "histogram lacks a field (needs cfg, n, o, min, max, sum, b)");

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

	uint64_t index = 0, count_sum = d->o;
	for (uint32_t i = 0; i < d->b->size; i += 2) {
		uint64_t delta, count;
		if (!get_u64(&d->b->ptr[i], &delta) || !get_u64(&d->b->ptr[i + 1], &count))
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
