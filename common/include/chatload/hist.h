/* Log-linear (HDR-style) histogram: fixed memory, O(1) record, exact merge, sparse encoding. */
#ifndef CHATLOAD_HIST_H
#define CHATLOAD_HIST_H

#include "chatload/err.h"

#include <msgpack.h>
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

/* Treat fields as private except through the functions below; exposed for embedding. */
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
	uint64_t total;    /* all recorded values, overflow included */
	uint64_t overflow; /* values above cfg.highest */
	int64_t min;       /* exact min/max of recorded values (INT64_MAX/0 when empty) */
	int64_t max;
	double sum; /* for the mean; exact enough in double for µs over hours */
};

/* Allocates the counts for cfg.  CL_EINVAL for a bad cfg, CL_ENOMEM.  h is destroyable on
 * failure. */
int cl_hist_init(struct cl_hist *h, const struct cl_hist_cfg *cfg);
/* Frees; safe on zeroed or failed-init histograms. */
void cl_hist_destroy(struct cl_hist *h);
/* Empties, keeping memory. */
void cl_hist_reset(struct cl_hist *h);

/* Records one value (or n of the same value).  O(1), never allocates, never fails. */
void cl_hist_record(struct cl_hist *h, int64_t value);
void cl_hist_record_n(struct cl_hist *h, int64_t value, uint64_t n);

/* dst += src exactly.  CL_EINVAL when the configurations differ. */
int cl_hist_merge(struct cl_hist *dst, const struct cl_hist *src);

/* Value at percentile p (0..100): the highest value equivalent to the bucket holding the
 * p-th ranked value (HdrHistogram semantics), clamped to the exact max.  0 when empty.
 * p = 100 gives max. */
int64_t cl_hist_percentile(const struct cl_hist *h, double p);
double cl_hist_mean(const struct cl_hist *h);
int64_t cl_hist_min(const struct cl_hist *h);
int64_t cl_hist_max(const struct cl_hist *h);
uint64_t cl_hist_count(const struct cl_hist *h);
uint64_t cl_hist_overflow(const struct cl_hist *h);
bool cl_hist_equal(const struct cl_hist *a, const struct cl_hist *b);

/* Iterates non-empty buckets in ascending order: *state starts at 0; returns false at the
 * end.  *value is the bucket's highest equivalent value, *count its count. */
bool cl_hist_next_bucket(const struct cl_hist *h, int32_t *state, int32_t *index, int64_t *value,
			 uint64_t *count);

/*
 * Sparse msgpack encoding: map {cfg:[lowest,highest,sigfigs], n: total, o: overflow,
 * min, max, sum, b:[idx0, count0, idx1-idx0, count1, ...]} (index deltas keep it small).
 */
int cl_hist_pack(const struct cl_hist *h, msgpack_packer *pk);
/*
 * Decodes obj and ADDS it into h (which must be initialised; an empty h is a plain decode).
 * Rejects (CL_EPARSE, message in err) a config different from h's, an index out of range
 * or not ascending, a count total that disagrees with n, wrong types.  Touches h only after
 * the whole encoding validated.
 */
int cl_hist_unpack_add(struct cl_hist *h, const msgpack_object *obj, struct cl_err *err);
/* Runs every check cl_hist_unpack_add makes, without touching h: lets a caller validate a
 * whole message before adding any of it (cl_metrics_unpack_add does). */
int cl_hist_unpack_check(const struct cl_hist *h, const msgpack_object *obj, struct cl_err *err);

#endif
