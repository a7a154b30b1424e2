/* The stored histogram form: encode -> decode gives back an identical cl_hist (every
 * percentile, mean, min, max, overflow), and hostile stored forms are refused. */
#include "coord_metrics.h"
#include "coordinator/results/results.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

static const double pcts[] = { 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100 };

static void assert_same(const struct cl_hist *a, const struct cl_hist *b)
{
	assert_true(cl_hist_equal(a, b));
	assert_int_equal(cl_hist_count(a), cl_hist_count(b));
	assert_int_equal(cl_hist_overflow(a), cl_hist_overflow(b));
	assert_int_equal(cl_hist_min(a), cl_hist_min(b));
	assert_int_equal(cl_hist_max(a), cl_hist_max(b));
	assert_float_equal(cl_hist_mean(a), cl_hist_mean(b), 0);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		assert_int_equal(cl_hist_percentile(a, pcts[i]), cl_hist_percentile(b, pcts[i]));
}

/* Encodes h, dumps it to text and parses it back (the path a file takes), then decodes. */
static void roundtrip(const struct cl_hist *h)
{
	json_t *j = cl_results_hist_to_json(h);
	assert_non_null(j);
	char *text = json_dumps(j, JSON_COMPACT);
	assert_non_null(text);
	json_error_t je;
	json_t *back = json_loads(text, 0, &je);
	assert_non_null(back);
	struct cl_hist r;
	struct cl_err err = { 0 };
	int rc = cl_results_hist_from_json(back, &r, &err);
	if (rc != 0)
		fail_msg("decode failed: %s", err.msg);
	assert_same(h, &r);
	cl_hist_destroy(&r);
	json_decref(back);
	free(text);
	json_decref(j);
}

static void test_latency_roundtrip(void **state)
{
	struct cl_hist h;
	assert_int_equal(cl_hist_init(&h, cl_metrics_lat_cfg()), 0);
	uint64_t seed = 42;
	for (int i = 0; i < 20000; i++)
		cl_hist_record(&h, (int64_t)(tm_lognormal(&seed, 20000, 0.8)) + 1);
	/* Extremes of the range too: lowest, below lowest, highest. */
	cl_hist_record(&h, 1);
	cl_hist_record(&h, 0);
	cl_hist_record(&h, cl_metrics_lat_cfg()->highest);
	roundtrip(&h);
	cl_hist_destroy(&h);
}

static void test_count_and_overflow_roundtrip(void **state)
{
	struct cl_hist h;
	assert_int_equal(cl_hist_init(&h, cl_metrics_cnt_cfg()), 0);
	for (int i = 1; i <= 5000; i++)
		cl_hist_record_n(&h, i * 7, (uint64_t)(i % 5 + 1));
	cl_hist_record_n(&h, cl_metrics_cnt_cfg()->highest + 12345, 3); /* overflow */
	assert_int_equal(cl_hist_overflow(&h), 3);
	roundtrip(&h);
	cl_hist_destroy(&h);
}

static void test_empty_roundtrip(void **state)
{
	struct cl_hist h;
	assert_int_equal(cl_hist_init(&h, cl_metrics_lat_cfg()), 0);
	json_t *j = cl_results_hist_to_json(&h);
	assert_true(json_is_null(json_object_get(j, "min")));
	assert_int_equal(json_array_size(json_object_get(j, "buckets")), 0);
	json_decref(j);
	roundtrip(&h);
	cl_hist_destroy(&h);
}

/* A valid stored form to corrupt: three values. */
static json_t *sample(void)
{
	struct cl_hist h;
	assert_int_equal(cl_hist_init(&h, cl_metrics_lat_cfg()), 0);
	cl_hist_record_n(&h, 1000, 2);
	cl_hist_record(&h, 5000);
	cl_hist_record(&h, 90000);
	json_t *j = cl_results_hist_to_json(&h);
	cl_hist_destroy(&h);
	assert_non_null(j);
	return j;
}

/* Decoding j must fail with a message containing want; h stays destroyable. */
static void expect_reject(json_t *j, const char *want)
{
	struct cl_hist h;
	struct cl_err err = { 0 };
	int rc = cl_results_hist_from_json(j, &h, &err);
	assert_int_not_equal(rc, 0);
	if (!strstr(err.msg, want))
		fail_msg("message '%s' does not mention '%s'", err.msg, want);
	cl_hist_destroy(&h);
	json_decref(j);
}

static void test_rejects(void **state)
{
	json_t *j;

	j = sample(); /* a value far above highest cannot be a bucket */
	json_array_set_new(json_array_get(json_object_get(j, "buckets"), 2), 0,
			   json_integer(cl_metrics_lat_cfg()->highest * 2));
	expect_reject(j, "buckets[2]");

	j = sample(); /* descending values */
	json_array_set_new(json_array_get(json_object_get(j, "buckets"), 1), 0, json_integer(10));
	expect_reject(j, "not ascending");

	j = sample(); /* two values in one bucket (width > 1 at 90 ms) */
	{
		json_t *b = json_object_get(j, "buckets");
		int64_t top = json_integer_value(json_array_get(json_array_get(b, 2), 0));
		json_array_set_new(b, 1, json_pack("[Ii]", (json_int_t)(top - 1), 1));
	}
	expect_reject(j, "share");

	j = sample(); /* counts disagree with total */
	json_object_set_new(j, "total", json_integer(99));
	expect_reject(j, "total");

	j = sample(); /* zero count */
	json_array_set_new(json_array_get(json_object_get(j, "buckets"), 0), 1, json_integer(0));
	expect_reject(j, "count");

	j = sample(); /* wrong type */
	json_array_set_new(json_array_get(json_object_get(j, "buckets"), 0), 0,
			   json_string("1000"));
	expect_reject(j, "[value, count]");

	j = sample(); /* missing field */
	json_object_del(j, "buckets");
	expect_reject(j, "buckets");

	j = sample();
	json_object_set_new(j, "sigfigs", json_integer(9));
	expect_reject(j, "configuration");

	j = sample(); /* min above max: the wire decoder's consistency checks apply */
	json_object_set_new(j, "min", json_integer(100000));
	expect_reject(j, "min");

	j = sample(); /* null extremes with values present */
	json_object_set_new(j, "max", json_null());
	expect_reject(j, "null");

	j = sample(); /* more entries than the configuration has buckets */
	{
		json_t *b = json_array();
		for (int i = 0; i < 30000; i++)
			json_array_append_new(b, json_pack("[ii]", i + 1, 1));
		json_object_set_new(j, "buckets", b);
		json_object_set_new(j, "total", json_integer(30000));
	}
	expect_reject(j, "more than");

	expect_reject(json_string("nope"), "histogram");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_latency_roundtrip),
		cmocka_unit_test(test_count_and_overflow_roundtrip),
		cmocka_unit_test(test_empty_roundtrip),
		cmocka_unit_test(test_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
