/* Benchmark of the histogram: ns per record, merge and percentile, and the packed size of a
 * typical latency histogram.  Prints figures; asserts nothing (run by hand, not by ctest). */
#include "chatload/clock.h"
#include "chatload/hist.h"
#include "chatload/hist_wire.h"
#include "chatload/metrics.h"
#include "chatload/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_state = 12345;

/* Uniform in (0, 1], so log() of it is finite. */
static double rng_unit(void)
{
	return cl_splitmix_unit(&rng_state);
}

/* Lognormal latency in µs around median_us with shape sigma. */
static int64_t lognormal_us(double median_us, double sigma)
{
	double z = sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());
	return (int64_t)exp(log(median_us) + sigma * z);
}

static size_t packed_size(const struct cl_hist *h)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	size_t n = cl_hist_pack(h, &pk) ? 0 : sb.size;
	msgpack_sbuffer_destroy(&sb);
	return n;
}

static int32_t nonzero_buckets(const struct cl_hist *h)
{
	int32_t st = 0, idx, n = 0;
	int64_t v;
	uint64_t c;
	while (cl_hist_next_bucket(h, &st, &idx, &v, &c))
		n++;
	return n;
}

int main(void)
{
	enum { N_VALUES = 1 << 20, N_RECORD = 50 * 1000 * 1000, N_MERGE = 20000, N_PCT = 20000 };
	const struct cl_hist_cfg *cfg = cl_metrics_lat_cfg();
	struct cl_hist a, b;
	int64_t *vals = malloc(N_VALUES * sizeof(*vals));
	if (!vals || cl_hist_init(&a, cfg) || cl_hist_init(&b, cfg)) {
		fprintf(stderr, "bench_hist: cannot allocate\n");
		return 1;
	}
	for (int i = 0; i < N_VALUES; i++)
		vals[i] = lognormal_us(20000, 1.0);

	printf("latency histogram: %d counts, %zu bytes of counts\n", a.counts_len,
	       (size_t)a.counts_len * sizeof(uint64_t));

	int64_t t0 = cl_mono_ns();
	for (int i = 0; i < N_RECORD; i++)
		cl_hist_record(&a, vals[i & (N_VALUES - 1)]);
	int64_t t1 = cl_mono_ns();
	printf("record:     %6.2f ns per value (%d values, lognormal around 20 ms)\n",
	       (double)(t1 - t0) / N_RECORD, N_RECORD);

	for (int i = 0; i < 10000; i++)
		cl_hist_record(&b, vals[i]);
	t0 = cl_mono_ns();
	int bad = 0;
	for (int i = 0; i < N_MERGE; i++)
		bad |= cl_hist_merge(&a, &b);
	if (bad) {
		fprintf(stderr, "bench_hist: merge failed\n");
		return 1;
	}
	t1 = cl_mono_ns();
	printf("merge:      %6.0f ns per merge (whole %d-count histogram)\n",
	       (double)(t1 - t0) / N_MERGE, a.counts_len);

	volatile int64_t sink = 0;
	static const double ps[] = { 50, 90, 99, 99.9 };
	t0 = cl_mono_ns();
	for (int i = 0; i < N_PCT; i++)
		sink += cl_hist_percentile(&b, ps[i & 3]);
	t1 = cl_mono_ns();
	printf("percentile: %6.0f ns per call (p50/p90/p99/p99.9 of 10k values)\n",
	       (double)(t1 - t0) / N_PCT);

	/* Typical reports: 10k values in one interval. */
	static const double sigmas[] = { 0.25, 0.5, 1.0 };
	for (int s = 0; s < 3; s++) {
		struct cl_hist t;
		if (cl_hist_init(&t, cfg))
			return 1;
		for (int i = 0; i < 10000; i++)
			cl_hist_record(&t, lognormal_us(20000, sigmas[s]));
		printf("packed:     %6zu bytes for 10k values lognormal median 20 ms sigma %.2f "
		       "(%d non-empty buckets)\n",
		       packed_size(&t), sigmas[s], nonzero_buckets(&t));
		cl_hist_destroy(&t);
	}
	struct cl_hist e;
	if (cl_hist_init(&e, cfg))
		return 1;
	printf("packed:     %6zu bytes for an empty histogram\n", packed_size(&e));

	/* Decode cost of the typical one. */
	for (int i = 0; i < 10000; i++)
		cl_hist_record(&e, lognormal_us(20000, 0.5));
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	if (cl_hist_pack(&e, &pk) != 0) {
		fprintf(stderr, "bench_hist: pack failed\n");
		return 1;
	}
	struct cl_err err = { 0 };
	enum { N_DEC = 2000 };
	t0 = cl_mono_ns();
	for (int i = 0; i < N_DEC; i++) {
		msgpack_unpacked u;
		msgpack_unpacked_init(&u);
		size_t off = 0;
		if (msgpack_unpack_next(&u, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS)
			sink += cl_hist_unpack_add(&b, &u.data, &err);
		msgpack_unpacked_destroy(&u);
	}
	t1 = cl_mono_ns();
	printf("decode:     %6.0f ns per typical histogram (msgpack-c unpack + unpack_add)\n",
	       (double)(t1 - t0) / N_DEC);

	msgpack_sbuffer_destroy(&sb);
	cl_hist_destroy(&e);
	cl_hist_destroy(&a);
	cl_hist_destroy(&b);
	free(vals);
	return (int)(sink & 0);
}
