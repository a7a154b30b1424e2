/* Log-linear (HDR-style) histogram: fixed memory, O(1) record, exact merge (no encoding here). */
#include "chatload/hist.h"

#include "hist_int.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
	/* highest >= 2 lowest, written so that no lowest overflows (lowest >= 1 here) */
	if (!cfg_in || cfg->lowest < 1 || cfg->sigfigs < 1 || cfg->sigfigs > 5 ||
	    cfg->highest > HIST_HIGHEST_MAX || cfg->highest / 2 < cfg->lowest)
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
	h->nz_lo = h->counts_len;
	h->nz_hi = 0;
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
	if (h->counts && h->nz_hi > h->nz_lo)
		memset(h->counts + h->nz_lo, 0, (size_t)(h->nz_hi - h->nz_lo) * sizeof(*h->counts));
	h->nz_lo = h->counts_len;
	h->nz_hi = 0;
	h->total = 0;
	h->overflow = 0;
	h->min = INT64_MAX;
	h->max = 0;
	h->sum = 0;
}

void cl_hist_trim(struct cl_hist *h)
{
	cl_hist_reset(h);
	if (!h->counts)
		return;
	/* Only the pages wholly inside counts: the partial ones at its ends hold the
	 * allocator's or a neighbour's bytes.  Private anonymous pages dropped with
	 * MADV_DONTNEED read back as zero, which is what an empty histogram holds; where
	 * madvise fails the counts are zero already, only still resident. */
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		return;
	uintptr_t lo = (uintptr_t)h->counts, hi = lo + (size_t)h->counts_len * sizeof(*h->counts);
	uintptr_t first = (lo + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	uintptr_t last = hi & ~((uintptr_t)page - 1);
	if (last > first)
		(void)madvise((void *)first, last - first, MADV_DONTNEED);
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
	int32_t i = counts_index_of(h, v);
	h->counts[i] += n;
	cli_hist_occupy(h, i);
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
	for (int32_t i = src->nz_lo; i < src->nz_hi; i++)
		dst->counts[i] += src->counts[i];
	if (src->nz_hi > src->nz_lo) {
		cli_hist_occupy(dst, src->nz_lo);
		cli_hist_occupy(dst, src->nz_hi - 1);
	}
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
	for (int32_t i = h->nz_lo; i < h->nz_hi; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			int64_t v = highest_at_index(h, i);
			return v < h->max ? v : h->max;
		}
	}
	return h->max; /* counts disagree with total: only reachable through corruption */
}

double cl_hist_count_at_or_below(const struct cl_hist *h, double value)
{
	if (h->total == 0 || value <= (double)h->min - 1)
		return 0;
	if (value >= (double)h->max)
		return (double)h->total;
	double below = 0;
	for (int32_t i = h->nz_lo; i < h->nz_hi; i++) {
		if (!h->counts[i])
			continue;
		/* The bucket holds the integers lo..hi, narrowed to the exact min and max (the
		 * end buckets hold nothing beyond them).  As a continuum it is (lo - 1, hi], each
		 * integer standing for the unit below it, so that a bucket's highest equivalent
		 * value (what cl_hist_percentile answers) has the whole bucket at or below it. */
		int64_t lo = value_at_index(h, i), hi = highest_at_index(h, i);
		lo = lo > h->min ? lo : h->min;
		hi = hi < h->max ? hi : h->max;
		if (value >= (double)hi) {
			below += (double)h->counts[i];
			continue;
		}
		if (value > (double)lo - 1)
			below += (double)h->counts[i] * (value - (double)(lo - 1)) /
				 (double)(hi - lo + 1);
		break;
	}
	return below; /* overflowed values lie above max, and value is below it */
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

const struct cl_hist_cfg *cl_hist_config(const struct cl_hist *h)
{
	return &h->cfg;
}

double cl_hist_sum(const struct cl_hist *h)
{
	return h->sum;
}

/* A public "bucket" is one counter (what cl_hist_next_bucket walks), so this is counts_len,
 * not the number of doubling ranges HdrHistogram calls buckets (h->bucket_count). */
int32_t cl_hist_bucket_count(const struct cl_hist *h)
{
	return h->counts_len;
}

bool cl_hist_next_bucket(const struct cl_hist *h, int32_t *state, int32_t *index, int64_t *value,
			 uint64_t *count)
{
	int32_t from = *state < h->nz_lo ? h->nz_lo : *state;
	for (int32_t i = from; i < h->nz_hi; i++) {
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
