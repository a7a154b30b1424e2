/* The stored histogram form of results.json, and the decoder that rebuilds an exact
 * cl_hist from it (so any percentile can be recomputed from a file, long after the run). */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"

#include "chatload/hist_wire.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

json_t *cl_results_hist_to_json(const struct cl_hist *h)
{
	json_t *o = json_object();
	json_t *b = json_array();
	if (!o || !b)
		goto fail;
	uint64_t total = cl_hist_count(h);
	const struct cl_hist_cfg *cfg = cl_hist_config(h);
	if (cli_rj_set(o, "lowest", json_integer(cfg->lowest)) ||
	    cli_rj_set(o, "highest", json_integer(cfg->highest)) ||
	    cli_rj_set(o, "sigfigs", json_integer(cfg->sigfigs)) ||
	    cli_rj_set(o, "total", cli_rj_uint(total)) ||
	    cli_rj_set(o, "overflow", cli_rj_uint(cl_hist_overflow(h))))
		goto fail;
	/* Every recorded value is an integer, so the sum is one: stored as an integer it
	 * survives the file exactly (a double would be printed with rounding). */
	json_t *min = total ? json_integer(cl_hist_min(h)) : json_null();
	json_t *max = total ? json_integer(cl_hist_max(h)) : json_null();
	double hsum = cl_hist_sum(h);
	json_t *sum = total ? (fabs(hsum) < 9.0e18 ? json_integer((json_int_t)llround(hsum))
						   : json_real(hsum))
			    : json_null();
	if (cli_rj_set(o, "min", min) || cli_rj_set(o, "max", max) || cli_rj_set(o, "sum", sum))
		goto fail;
	int32_t state = 0, index;
	int64_t value;
	uint64_t count;
	while (cl_hist_next_bucket(h, &state, &index, &value, &count)) {
		json_t *pair = json_pack("[Io]", (json_int_t)value, cli_rj_uint(count));
		if (cli_rj_append(b, pair))
			goto fail;
	}
	if (json_object_set_new(o, "buckets", b) != 0) {
		b = NULL;
		goto fail;
	}
	return o;
fail:
	json_decref(b);
	json_decref(o);
	return NULL;
}

static int get_int(const json_t *j, const char *key, bool nullable, json_int_t *out, bool *is_null,
		   struct cl_err *err)
{
	const json_t *v = json_object_get(j, key);
	if (is_null)
		*is_null = false;
	if (nullable && json_is_null(v)) {
		*is_null = true;
		*out = 0;
		return 0;
	}
	if (!json_is_integer(v))
		return cl_err_set(err, CL_EPARSE, "%s: expected an integer", key);
	*out = json_integer_value(v);
	return 0;
}

/* The stored form's fields, as read and before they are checked against each other. */
struct stored {
	json_int_t lowest, highest, sigfigs, total, overflow, min, max;
	bool min_null, max_null, sum_null;
	double sum;
	const json_t *buckets;
	size_t nb;
};

/* Reads the scalar fields of a stored histogram (each of the right type). */
static int read_fields(const json_t *j, struct stored *st, struct cl_err *err)
{
	int rc;
	if (!json_is_object(j))
		return cl_err_set(err, CL_EPARSE, "expected a histogram object");
	if ((rc = get_int(j, "lowest", false, &st->lowest, NULL, err)) ||
	    (rc = get_int(j, "highest", false, &st->highest, NULL, err)) ||
	    (rc = get_int(j, "sigfigs", false, &st->sigfigs, NULL, err)) ||
	    (rc = get_int(j, "total", false, &st->total, NULL, err)) ||
	    (rc = get_int(j, "overflow", false, &st->overflow, NULL, err)) ||
	    (rc = get_int(j, "min", true, &st->min, &st->min_null, err)) ||
	    (rc = get_int(j, "max", true, &st->max, &st->max_null, err)))
		return rc;
	const json_t *sv = json_object_get(j, "sum");
	if (json_is_null(sv))
		st->sum_null = true;
	else if (json_is_integer(sv))
		st->sum = (double)json_integer_value(sv);
	else if (json_is_real(sv))
		st->sum = json_real_value(sv);
	else
		return cl_err_set(err, CL_EPARSE, "sum: expected a number");
	return 0;
}

/* A configuration cl_hist_init accepts: 1 to 5 significant digits over [lowest, highest]. */
static int check_config(const struct stored *st, struct cl_err *err)
{
	json_int_t lowest = st->lowest, highest = st->highest, sigfigs = st->sigfigs;
	if (sigfigs < 1 || sigfigs > 5 || lowest < 1 || highest / 2 < lowest)
		return cl_err_set(err, CL_EINVAL,
				  "impossible histogram configuration [%" PRId64 ", %" PRId64
				  "] with %" PRId64 " significant digits",
				  (int64_t)lowest, (int64_t)highest, (int64_t)sigfigs);
	return 0;
}

/* The counts against each other and against h's size: total, overflow, the buckets array,
 * and min/max/sum present when anything was recorded. */
static int check_counts(const json_t *j, struct stored *st, const struct cl_hist *h,
			struct cl_err *err)
{
	if (st->total < 0 || st->overflow < 0 || st->overflow > st->total)
		return cl_err_set(err, CL_EPARSE,
				  "total/overflow: impossible counts %" PRId64 "/%" PRId64,
				  (int64_t)st->total, (int64_t)st->overflow);
	st->buckets = json_object_get(j, "buckets");
	if (!json_is_array(st->buckets))
		return cl_err_set(err, CL_EPARSE, "buckets: expected an array");
	st->nb = json_array_size(st->buckets);
	if (st->total == 0) {
		if (st->nb != 0 || st->overflow != 0)
			return cl_err_set(err, CL_EPARSE, "buckets: present although total is 0");
		return 0;
	}
	if (st->min_null || st->max_null || st->sum_null)
		return cl_err_set(err, CL_EPARSE, "min/max/sum: null although total is %" PRId64,
				  (int64_t)st->total);
	if (st->nb > (size_t)cl_hist_bucket_count(h))
		return cl_err_set(err, CL_EPARSE, "buckets: %zu entries, more than the %d buckets",
				  st->nb, (int)cl_hist_bucket_count(h));
	return 0;
}

/* Records each stored bucket's count into scratch (empty, of the stored configuration),
 * checking the values ascend inside the range and the counts add up to the total. */
static int record_buckets(const struct stored *st, struct cl_hist *scratch, struct cl_err *err)
{
	/* The bucket holding `highest` reaches a little past it, and its value is the bucket's
	 * top: that top is the largest value a stored bucket may carry. */
	int32_t tstate = 0, tindex;
	int64_t top = st->highest;
	uint64_t tcount;
	cl_hist_record(scratch, st->highest);
	cl_hist_next_bucket(scratch, &tstate, &tindex, &top, &tcount);
	cl_hist_reset(scratch);
	json_int_t prev = -1;
	uint64_t counted = 0;
	for (size_t i = 0; i < st->nb; i++) {
		const json_t *pair = json_array_get(st->buckets, i);
		const json_t *v = json_array_get(pair, 0), *c = json_array_get(pair, 1);
		if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_integer(v) ||
		    !json_is_integer(c))
			return cl_err_set(err, CL_EPARSE, "buckets[%zu]: expected [value, count]",
					  i);
		json_int_t value = json_integer_value(v), count = json_integer_value(c);
		if (value < st->lowest || value > top || value <= prev)
			return cl_err_set(err, CL_EPARSE,
					  "buckets[%zu]: value %" PRId64
					  " out of range or not ascending",
					  i, (int64_t)value);
		if (count <= 0 || (uint64_t)count > (uint64_t)st->total - counted)
			return cl_err_set(err, CL_EPARSE, "buckets[%zu]: bad count %" PRId64, i,
					  (int64_t)count);
		counted += (uint64_t)count;
		prev = value;
		cl_hist_record_n(scratch, value < st->highest ? value : st->highest,
				 (uint64_t)count);
	}
	if (counted + (uint64_t)st->overflow != (uint64_t)st->total)
		return cl_err_set(err, CL_EPARSE,
				  "buckets: counts sum to %" PRIu64 " plus overflow %" PRId64
				  ", not total %" PRId64,
				  counted, (int64_t)st->overflow, (int64_t)st->total);
	return 0;
}

/* Packs the wire form, {cfg, n, o, min, max, sum, b: [idx0, count0, idx1-idx0, ...]}, of
 * the stored fields and scratch's buckets into sbuf; an error when two stored values fell
 * into one bucket. */
static int pack_wire(const struct stored *st, const struct cl_hist *scratch, msgpack_sbuffer *sbuf,
		     struct cl_err *err)
{
	msgpack_sbuffer_init(sbuf);
	msgpack_packer pk;
	msgpack_packer_init(&pk, sbuf, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 7);
	msgpack_pack_str_with_body(&pk, "cfg", 3);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_int64(&pk, st->lowest);
	msgpack_pack_int64(&pk, st->highest);
	msgpack_pack_int64(&pk, st->sigfigs);
	msgpack_pack_str_with_body(&pk, "n", 1);
	msgpack_pack_uint64(&pk, (uint64_t)st->total);
	msgpack_pack_str_with_body(&pk, "o", 1);
	msgpack_pack_uint64(&pk, (uint64_t)st->overflow);
	msgpack_pack_str_with_body(&pk, "min", 3);
	msgpack_pack_int64(&pk, st->min);
	msgpack_pack_str_with_body(&pk, "max", 3);
	msgpack_pack_int64(&pk, st->max);
	msgpack_pack_str_with_body(&pk, "sum", 3);
	msgpack_pack_double(&pk, st->sum);
	msgpack_pack_str_with_body(&pk, "b", 1);
	msgpack_pack_array(&pk, st->nb * 2);
	int32_t state = 0, index, prev_index = 0;
	int64_t value;
	uint64_t count;
	size_t seen = 0;
	while (cl_hist_next_bucket(scratch, &state, &index, &value, &count)) {
		if (seen < st->nb) {
			msgpack_pack_int32(&pk, seen == 0 ? index : index - prev_index);
			msgpack_pack_uint64(&pk, count);
		}
		prev_index = index;
		seen++;
	}
	if (seen != st->nb)
		return cl_err_set(err, CL_EPARSE,
				  "buckets: %zu values fall into %zu buckets (two share one)",
				  st->nb, seen);
	return 0;
}

/*
 * The wire decoder (cl_hist_unpack_add) is the one place that validates and installs a
 * sparse histogram, min/max/sum included, so the stored form is translated into the wire
 * form and handed to it.  The stored form names buckets by value, the wire form by index;
 * recording each value into a scratch histogram of the same configuration and walking it
 * yields the indices, and proves each value lands in a bucket of its own.
 */
int cl_results_hist_from_json(const json_t *j, struct cl_hist *h, struct cl_err *err)
{
	int rc = 0;
	struct stored st = { 0 };
	struct cl_hist scratch = { 0 };
	msgpack_sbuffer sbuf = { 0 };
	msgpack_unpacked up;
	msgpack_unpacked_init(&up);
	memset(h, 0, sizeof(*h));

	if ((rc = read_fields(j, &st, err)) != 0 || (rc = check_config(&st, err)) != 0)
		goto out;
	struct cl_hist_cfg cfg = { .lowest = st.lowest,
				   .highest = st.highest,
				   .sigfigs = (int32_t)st.sigfigs };
	if ((rc = cl_hist_init(h, &cfg)) != 0) {
		cl_err_set(err, rc, "cannot create a histogram: %s", cl_strerror(rc));
		goto out;
	}
	if ((rc = check_counts(j, &st, h, err)) != 0 || st.total == 0)
		goto out; /* total 0: h is initialised and empty */
	if ((rc = cl_hist_init(&scratch, &cfg)) != 0) {
		cl_err_set(err, rc, "cannot create a histogram: %s", cl_strerror(rc));
		goto out;
	}
	if ((rc = record_buckets(&st, &scratch, err)) != 0 ||
	    (rc = pack_wire(&st, &scratch, &sbuf, err)) != 0)
		goto out;
	if (msgpack_unpack_next(&up, sbuf.data, sbuf.size, NULL) != MSGPACK_UNPACK_SUCCESS) {
		rc = cl_err_set(err, CL_ENOMEM, "cannot decode a histogram");
		goto out;
	}
	rc = cl_hist_unpack_add(h, &up.data, err);
out:
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sbuf);
	cl_hist_destroy(&scratch);
	return rc;
}
