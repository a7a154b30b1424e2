/* Log-linear (HDR-style) histogram: fixed memory, O(1) record, exact merge.  Its msgpack form is
 * in chatload/hist_wire.h. */
#ifndef CHATLOAD_HIST_H
#define CHATLOAD_HIST_H

#include "chatload/err.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * Range and precision.  Every value v in [lowest, highest] is recorded in a bucket whose
 * width is at most max(v / 10^sigfigs, 2^floor(log2(lowest))) (so reported percentiles are
 * within that error; with lowest = 1 the width is 1 up to 2*10^sigfigs, i.e. relative error
 * below 10^-sigfigs everywhere).  lowest is the resolution unit, as in HdrHistogram.
 * highest must not exceed INT64_MAX / 2.
 * Values below lowest are recorded as lowest; values above highest are counted in
 * `overflow` (and in count and max), never silently lost.
 */
struct cl_hist_cfg {
	int64_t lowest;  /* >= 1 */
	int64_t highest; /* >= 2 * lowest */
	int32_t sigfigs; /* 1..5 */
};

/* Fields are private to hist.c and hist_wire.c: use the functions below.  Exposed only so that a
 * histogram can be embedded by value. */
struct cl_hist {
	struct cl_hist_cfg cfg;
	int32_t unit_magnitude;
	int32_t sub_bucket_half_count_magnitude;
	int32_t sub_bucket_count;
	int32_t sub_bucket_half_count;
	int64_t sub_bucket_mask;
	int32_t bucket_count;
	int32_t counts_len;
	uint64_t *counts;
	/* counts[i] is 0 outside [nz_lo, nz_hi) (empty: counts_len, 0), so merging, resetting,
	 * encoding and percentiles walk what is occupied, not all counts_len counters. */
	int32_t nz_lo, nz_hi;
	uint64_t total;    /* all recorded values, overflow included */
	uint64_t overflow; /* values above cfg.highest */
	int64_t min;       /* exact min/max of recorded values (INT64_MAX/0 when empty) */
	int64_t max;
	double sum; /* for the mean; exact enough in double for µs over hours */
};

/* Allocates the counts for cfg.  CL_EINVAL for a bad cfg, CL_ENOMEM.  h is destroyable on
 * failure. */
CL_MUST_CHECK int cl_hist_init(struct cl_hist *h, const struct cl_hist_cfg *cfg);
/* Frees; safe on zeroed or failed-init histograms. */
void cl_hist_destroy(struct cl_hist *h);
/* Empties, keeping memory.  O(occupied range). */
void cl_hist_reset(struct cl_hist *h);
/* Empties and gives the kernel back the whole pages of the counts (they read as zero when
 * next touched): the pages that rare values touched once stop counting in the process's
 * RSS.  A record reused for hours calls this now and then, not per use: it is a syscall,
 * and the pages it frees are touched again by the next values.  Never fails. */
void cl_hist_trim(struct cl_hist *h);

/* Records one value (or n of the same value).  O(1), never allocates, never fails. */
void cl_hist_record(struct cl_hist *h, int64_t value);
void cl_hist_record_n(struct cl_hist *h, int64_t value, uint64_t n);

/* dst += src exactly, in O(src's occupied range).  CL_EINVAL when the configurations
 * differ. */
CL_MUST_CHECK int cl_hist_merge(struct cl_hist *dst, const struct cl_hist *src);

/* Value at percentile p (0..100): the highest value equivalent to the bucket holding the
 * p-th ranked value (HdrHistogram semantics), clamped to the exact max.  0 when empty.
 * p = 100 gives max. */
int64_t cl_hist_percentile(const struct cl_hist *h, double p);
double cl_hist_mean(const struct cl_hist *h);
/* How many recorded values are at or below value: whole buckets below it, and of the bucket
 * holding it the share of its width up to value (its values taken as spread evenly over it,
 * each integer v standing for (v - 1, v], so a bucket's highest equivalent value has all of
 * it).  Exact at and beyond the min and max; overflowed values lie above every value below
 * the max.  0 when empty. */
double cl_hist_count_at_or_below(const struct cl_hist *h, double value);
int64_t cl_hist_min(const struct cl_hist *h);
int64_t cl_hist_max(const struct cl_hist *h);
uint64_t cl_hist_count(const struct cl_hist *h);
uint64_t cl_hist_overflow(const struct cl_hist *h);
bool cl_hist_equal(const struct cl_hist *a, const struct cl_hist *b);

/* The configuration h was initialised with. */
const struct cl_hist_cfg *cl_hist_config(const struct cl_hist *h);
/* Sum of the recorded values (overflowed ones included), for a mean or an exact copy. */
double cl_hist_sum(const struct cl_hist *h);
/* How many buckets h has: the indices cl_hist_next_bucket yields are below this.  Fixed by the
 * configuration (23552 for 1 .. 3.6e9 at 3 digits); 0 for an uninitialised histogram. */
int32_t cl_hist_bucket_count(const struct cl_hist *h);

/* Iterates non-empty buckets in ascending order: *state starts at 0; returns false at the
 * end.  *value is the bucket's highest equivalent value, *count its count. */
bool cl_hist_next_bucket(const struct cl_hist *h, int32_t *state, int32_t *index, int64_t *value,
			 uint64_t *count);

#endif
