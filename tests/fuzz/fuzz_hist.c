/* libFuzzer target: arbitrary bytes through the wire pre-check, msgpack-c, and the histogram
 * and metrics decoders, with the invariants a decoded record must keep. */
#include "chatload/hist.h"
#include "chatload/hist_wire.h"
#include "chatload/metrics.h"
#include "chatload/metrics_wire.h"
#include "chatload/wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cl_hist lat, cnt, scratch;
static struct cl_metrics *metrics;
static msgpack_sbuffer sb;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_hist: invariant broken: %s\n", what);
	abort();
}

/* What every histogram a decoder accepted must satisfy. */
static void check_hist(const struct cl_hist *h)
{
	uint64_t in_buckets = 0;
	int32_t st = 0, idx, prev = -1;
	int64_t val;
	uint64_t c;
	while (cl_hist_next_bucket(h, &st, &idx, &val, &c)) {
		if (idx <= prev || idx >= h->counts_len)
			die("bucket order");
		prev = idx;
		in_buckets += c;
	}
	if (in_buckets + cl_hist_overflow(h) != cl_hist_count(h))
		die("counts do not add up to n");
	if (cl_hist_count(h) && cl_hist_min(h) > cl_hist_max(h))
		die("min > max");
	int64_t last = 0;
	for (double p = 0; p <= 100; p += 12.5) {
		int64_t v = cl_hist_percentile(h, p);
		if (v < last || v > cl_hist_max(h))
			die("percentiles not monotonic or above max");
		last = v;
	}
}

/* Encodes h, decodes into an empty histogram, and requires the same histogram back. */
static void check_roundtrip(const struct cl_hist *h)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	if (cl_hist_pack(h, &pk))
		die("pack failed");
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	struct cl_err err = { 0 };
	if (msgpack_unpack_next(&u, sb.data, sb.size, &off) != MSGPACK_UNPACK_SUCCESS)
		die("own encoding does not parse");
	cl_hist_reset(&scratch);
	if (cl_hist_unpack_add(&scratch, &u.data, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		die("own encoding rejected");
	}
	if (!cl_hist_equal(&scratch, h))
		die("round trip changed the histogram");
	msgpack_unpacked_destroy(&u);
}

/* A rejected record must leave the (empty) accumulator empty: unpack_add is all or nothing. */
static void check_metrics_empty(const struct cl_metrics *m)
{
	for (int i = 0; i < CL_LAT__COUNT; i++)
		if (cl_hist_count(&m->lat[i]))
			die("rejected metrics left a latency histogram filled");
	for (int i = 0; i < CL_CNT__COUNT; i++)
		if (cl_hist_count(&m->cnt[i]))
			die("rejected metrics left a count histogram filled");
	for (int i = 0; i < CL_CTR__COUNT; i++)
		if (m->ctr[i])
			die("rejected metrics left a counter set");
	if (m->n_err_samples || m->health.inflight || m->health.rss_bytes || m->health.cpu_pct ||
	    m->health.cpu_pct_capacity)
		die("rejected metrics left samples or health set");
}

static void setup(void)
{
	if (cl_hist_init(&lat, cl_metrics_lat_cfg()) || cl_hist_init(&cnt, cl_metrics_cnt_cfg()) ||
	    cl_hist_init(&scratch, cl_metrics_lat_cfg()))
		die("init");
	metrics = malloc(sizeof(*metrics));
	if (!metrics || cl_metrics_init(metrics))
		die("metrics init");
	msgpack_sbuffer_init(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!metrics)
		setup();
	/* The production path: nothing reaches msgpack-c before the pre-validator bounded it
	 * (msgpack-c allocates claimed container counts up front). */
	if (cl_wire_check(data, size, NULL, NULL))
		return 0;
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	if (msgpack_unpack_next(&u, (const char *)data, size, &off) != MSGPACK_UNPACK_SUCCESS)
		goto out;

	struct cl_err err = { 0 };
	if (cl_hist_unpack_add(&lat, &u.data, &err) == 0) {
		check_hist(&lat);
		check_roundtrip(&lat);
		cl_hist_reset(&lat);
	} else if (err.code != CL_EPARSE || !err.msg[0] || cl_hist_count(&lat)) {
		die("hist rejection without CL_EPARSE, message, or with h changed");
	}
	if (cl_hist_unpack_add(&cnt, &u.data, &err) == 0) {
		check_hist(&cnt);
		cl_hist_reset(&cnt);
	}
	cl_err_clear(&err);
	if (cl_metrics_unpack_add(metrics, &u.data, &err) == 0) {
		for (int i = 0; i < CL_LAT__COUNT; i++)
			check_hist(&metrics->lat[i]);
		for (int i = 0; i < CL_CNT__COUNT; i++)
			check_hist(&metrics->cnt[i]);
		if (metrics->n_err_samples > CL_ERR_SAMPLES_MAX)
			die("error samples above the cap");
		for (uint32_t i = 0; i < metrics->n_err_samples; i++)
			if (strnlen(metrics->err_samples[i].body, CL_ERR_SAMPLE_BODY_MAX) >=
			    CL_ERR_SAMPLE_BODY_MAX)
				die("error sample body not terminated");
		/* Re-encode and decode: the record must survive its own wire form. */
		msgpack_packer pk;
		msgpack_sbuffer_clear(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		if (cl_metrics_pack(metrics, &pk))
			die("metrics pack failed");
		msgpack_unpacked u2;
		msgpack_unpacked_init(&u2);
		size_t off2 = 0;
		if (msgpack_unpack_next(&u2, sb.data, sb.size, &off2) != MSGPACK_UNPACK_SUCCESS)
			die("own metrics encoding does not parse");
		cl_metrics_reset(metrics);
		if (cl_metrics_unpack_add(metrics, &u2.data, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			die("own metrics encoding rejected");
		}
		msgpack_unpacked_destroy(&u2);
		cl_metrics_reset(metrics);
	} else if (err.code != CL_EPARSE || !err.msg[0]) {
		die("metrics rejection without CL_EPARSE or a message");
	} else {
		check_metrics_empty(metrics);
	}
out:
	msgpack_unpacked_destroy(&u);
	return 0;
}
