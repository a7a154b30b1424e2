/* Tests of the metrics record: names, merge, error samples and the msgpack wire form,
 * including rejection of unknown names and wrong types. */
#include "chatload/hist_wire.h"
#include "chatload/metrics.h"
#include "chatload/metrics_wire.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *const want_lat[] = { "queue",      "ttfb",       "ttft",       "ttfc",
					"itl",        "tpot",       "e2e",        "e2e_sched",
					"loop_lag",   "dns", "connect", "tls", "send", "ttft_connection",
					"ttft_server_wait", "ttft_after_first_byte", "ttft_turn1", "ttft_turn2", "ttft_turn3",
					"ttft_turn4", "ttft_turn5", "ttft_turn6", "ttft_turn7",
					"ttft_turn8" };
static const char *const want_cnt[] = { "tokens_per_chunk", "output_tokens",    "reasoning_tokens",
					"prompt_tokens",    "requested_tokens", "rtf_milli" };
static const char *const want_ctr[] = {
	"started",
	"completed",
	"cut",
	"err_connect",
	"err_tls",
	"err_http_4xx",
	"err_http_429",
	"err_http_5xx",
	"err_timeout",
	"err_stream_malformed",
	"err_stream_incomplete",
	"err_stream_error",
	"err_empty_answer",
	"err_other",
	"output_tokens",
	"reasoning_tokens",
	"prompt_tokens",
	"chunks",
	"bytes",
	"usage_from_server",
	"usage_from_chunks",
	"good",
	"completed_in_window",
	"requested_tokens",
	"requested_received",
	"short_output",
	"completed_h1",
	"completed_h2",
	"connections_opened",
	"no_content",
	"repeated",
	"window_share_milli",
	"resent",
	"short_finish_stop",
	"short_finish_length",
	"short_finish_other",
	"turn1_completed",
	"turn2_completed",
	"turn3_completed",
	"turn4_completed",
	"turn5_completed",
	"turn6_completed",
	"turn7_completed",
	"turn8_completed",
	"turn1_prompt_tokens",
	"turn2_prompt_tokens",
	"turn3_prompt_tokens",
	"turn4_prompt_tokens",
	"turn5_prompt_tokens",
	"turn6_prompt_tokens",
	"turn7_prompt_tokens",
	"turn8_prompt_tokens",
	"cached_prompt_tokens",
	"embedding_inputs",
	"tool_calls",
	"cancelled",
	"documents",
	"audio_ms",
};

static void test_names(void **state)
{
	assert_int_equal(sizeof(want_lat) / sizeof(*want_lat), CL_LAT__COUNT);
	assert_int_equal(sizeof(want_cnt) / sizeof(*want_cnt), CL_CNT__COUNT);
	assert_int_equal(sizeof(want_ctr) / sizeof(*want_ctr), CL_CTR__COUNT);
	for (int i = 0; i < CL_LAT__COUNT; i++) {
		assert_string_equal(cl_lat_name(i), want_lat[i]);
		assert_int_equal(cl_lat_from_name(want_lat[i]), i);
	}
	for (int i = 0; i < CL_CNT__COUNT; i++) {
		assert_string_equal(cl_cnt_name(i), want_cnt[i]);
		assert_int_equal(cl_cnt_from_name(want_cnt[i]), i);
	}
	for (int i = 0; i < CL_CTR__COUNT; i++) {
		assert_string_equal(cl_ctr_name(i), want_ctr[i]);
		assert_int_equal(cl_ctr_from_name(want_ctr[i]), i);
	}
	assert_null(cl_lat_name(-1));
	assert_null(cl_lat_name(CL_LAT__COUNT));
	assert_null(cl_cnt_name(CL_CNT__COUNT));
	assert_null(cl_ctr_name(CL_CTR__COUNT));
	assert_int_equal(cl_lat_from_name("ttf"), -1);
	assert_int_equal(cl_lat_from_name("ttft "), -1);
	assert_int_equal(cl_cnt_from_name("ttft"), -1);
	assert_int_equal(cl_ctr_from_name(""), -1);
	assert_int_equal(cl_ctr_from_name(NULL), -1);

	const struct cl_hist_cfg *l = cl_metrics_lat_cfg(), *c = cl_metrics_cnt_cfg();
	assert_int_equal(l->lowest, 1);
	assert_int_equal(l->highest, 3600000000LL);
	assert_int_equal(l->sigfigs, 3);
	assert_int_equal(c->lowest, 1);
	assert_int_equal(c->highest, 10000000);
	assert_int_equal(c->sigfigs, 3);
}

static void test_init_destroy(void **state)
{
	struct cl_metrics z;
	memset(&z, 0, sizeof(z));
	cl_metrics_destroy(&z);
	cl_metrics_destroy(NULL);

	struct cl_metrics *m = malloc(sizeof(*m));
	assert_non_null(m);
	memset(m, 0xa5, sizeof(*m)); /* init must not rely on a zeroed record */
	assert_int_equal(cl_metrics_init(m), 0);
	size_t bytes = 0;
	for (int i = 0; i < CL_LAT__COUNT; i++) {
		assert_int_equal(cl_hist_count(&m->lat[i]), 0);
		bytes += (size_t)m->lat[i].counts_len * sizeof(uint64_t);
	}
	for (int i = 0; i < CL_CNT__COUNT; i++)
		bytes += (size_t)m->cnt[i].counts_len * sizeof(uint64_t);
	/* 9 * 23552 * 8 + 5 * 15360 * 8, the 6th count histogram (rtf_milli) 15360 * 8, and the
	 * 8 per-turn TTFT histograms and the 7 of a connection's stages at 2 digits:
	 * 15 * 3328 * 8 */
	assert_int_equal(bytes, 2310144 + 122880 + 399360);
	for (int i = CL_LAT_TTFT_TURN1; i <= CL_LAT_TTFT_TURN_LAST; i++)
		assert_int_equal(m->lat[i].cfg.sigfigs, 2);
	for (int i = CL_LAT_DNS; i <= CL_LAT_TTFT_AFTER_FIRST_BYTE; i++)
		assert_int_equal(m->lat[i].cfg.sigfigs, 2);
	for (int i = 0; i < CL_CTR__COUNT; i++)
		assert_int_equal(m->ctr[i], 0);
	assert_int_equal(m->n_err_samples, 0);
	cl_metrics_destroy(m);
	cl_metrics_destroy(m);
	free(m);
}

/* Fills every histogram, some counters, health and error samples from seed. */
static void populate(struct cl_metrics *m, uint64_t seed)
{
	for (int i = 0; i < CL_LAT__COUNT; i++)
		for (uint64_t k = 0; k < 200; k++)
			cl_hist_record(
			    &m->lat[i],
			    (int64_t)((seed * 7919 + k * 104729 + (uint64_t)i) % 5000000));
	cl_hist_record(&m->lat[CL_LAT_E2E], 3600000000LL + 5); /* one overflow */
	for (int i = 0; i < CL_CNT__COUNT; i++)
		for (uint64_t k = 0; k < 50; k++)
			cl_hist_record(&m->cnt[i],
				       (int64_t)(1 + (seed + k * 31 + (uint64_t)i) % 4000));
	for (int i = 0; i < CL_CTR__COUNT; i++)
		m->ctr[i] = i % 4 == 3 ? 0 : seed * 1000 + (uint64_t)i;
	m->health.cpu_pct = 10.0 * (double)seed;
	m->health.cpu_pct_capacity = 200;
	m->health.rss_bytes = (int64_t)(seed << 20);
	m->health.inflight = (int64_t)seed;
	cl_metrics_add_err_sample(m, CL_CTR_ERR_HTTP_5XX, 503, "model loading", 13);
	cl_metrics_add_err_sample(m, CL_CTR_ERR_CONNECT, 0, "connection refused", 18);
}

static void assert_metrics_equal(const struct cl_metrics *a, const struct cl_metrics *b)
{
	for (int i = 0; i < CL_LAT__COUNT; i++)
		if (!cl_hist_equal(&a->lat[i], &b->lat[i])) {
			print_error("latency histogram '%s' differs\n", cl_lat_name(i));
			fail();
		}
	for (int i = 0; i < CL_CNT__COUNT; i++)
		if (!cl_hist_equal(&a->cnt[i], &b->cnt[i])) {
			print_error("count histogram '%s' differs\n", cl_cnt_name(i));
			fail();
		}
	for (int i = 0; i < CL_CTR__COUNT; i++)
		assert_int_equal(a->ctr[i], b->ctr[i]);
	assert_true(a->health.cpu_pct == b->health.cpu_pct);
	assert_true(a->health.cpu_pct_capacity == b->health.cpu_pct_capacity);
	assert_int_equal(a->health.rss_bytes, b->health.rss_bytes);
	assert_int_equal(a->health.inflight, b->health.inflight);
	assert_int_equal(a->n_err_samples, b->n_err_samples);
	for (uint32_t i = 0; i < a->n_err_samples; i++) {
		assert_int_equal(a->err_samples[i].ctr, b->err_samples[i].ctr);
		assert_int_equal(a->err_samples[i].http_status, b->err_samples[i].http_status);
		assert_string_equal(a->err_samples[i].body, b->err_samples[i].body);
	}
}

static int decode_into(struct cl_metrics *m, const char *buf, size_t len, struct cl_err *err)
{
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	int rc;
	if (msgpack_unpack_next(&u, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len)
		rc = cl_err_set(err, CL_EPARSE, "not one msgpack object");
	else
		rc = cl_metrics_unpack_add(m, &u.data, err);
	msgpack_unpacked_destroy(&u);
	return rc;
}

static void pack_metrics(msgpack_sbuffer *sb, const struct cl_metrics *m)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	assert_int_equal(cl_metrics_pack(m, &pk), 0);
}

static const msgpack_object *map_get(const msgpack_object *map, const char *key)
{
	for (uint32_t i = 0; i < map->via.map.size; i++) {
		const msgpack_object *k = &map->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
		    memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
			return &map->via.map.ptr[i].val;
	}
	return NULL;
}

static void test_roundtrip(void **state)
{
	struct cl_metrics a, d;
	assert_int_equal(cl_metrics_init(&a), 0);
	assert_int_equal(cl_metrics_init(&d), 0);
	populate(&a, 3);
	cl_hist_reset(&a.lat[CL_LAT_LOOP_LAG]); /* one empty histogram */
	cl_hist_reset(&a.cnt[CL_CNT_REASONING_TOKENS]);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	pack_metrics(&sb, &a);
	struct cl_err err = { 0 };
	int rc = decode_into(&d, sb.data, sb.size, &err);
	if (rc)
		print_error("decode: %s\n", err.msg);
	assert_int_equal(rc, 0);
	assert_metrics_equal(&a, &d);

	/* Empty histograms and zero counters are left out of the encoding. */
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	assert_int_equal(msgpack_unpack_next(&u, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
	const msgpack_object *lat = map_get(&u.data, "lat");
	const msgpack_object *cnt = map_get(&u.data, "cnt");
	const msgpack_object *ctr = map_get(&u.data, "ctr");
	assert_non_null(lat);
	assert_non_null(cnt);
	assert_non_null(ctr);
	assert_non_null(map_get(&u.data, "health"));
	assert_non_null(map_get(&u.data, "errs"));
	assert_int_equal(lat->via.map.size, CL_LAT__COUNT - 1);
	assert_null(map_get(lat, "loop_lag"));
	assert_int_equal(cnt->via.map.size, CL_CNT__COUNT - 1);
	assert_null(map_get(cnt, "reasoning_tokens"));
	uint32_t nonzero = 0;
	for (int i = 0; i < CL_CTR__COUNT; i++)
		nonzero += a.ctr[i] != 0;
	assert_int_equal(ctr->via.map.size, nonzero);
	assert_null(map_get(ctr, "err_connect")); /* index 3: zero */
	msgpack_unpacked_destroy(&u);

	/* A fully empty record round-trips too. */
	struct cl_metrics e, e2;
	assert_int_equal(cl_metrics_init(&e), 0);
	assert_int_equal(cl_metrics_init(&e2), 0);
	pack_metrics(&sb, &e);
	assert_int_equal(decode_into(&e2, sb.data, sb.size, &err), 0);
	assert_metrics_equal(&e, &e2);

	cl_metrics_destroy(&e);
	cl_metrics_destroy(&e2);
	msgpack_sbuffer_destroy(&sb);
	cl_metrics_destroy(&a);
	cl_metrics_destroy(&d);
}

static void test_delta_equals_merge(void **state)
{
	struct cl_metrics acc, merged, delta;
	assert_int_equal(cl_metrics_init(&acc), 0);
	assert_int_equal(cl_metrics_init(&merged), 0);
	assert_int_equal(cl_metrics_init(&delta), 0);
	populate(&acc, 1);
	populate(&merged, 1);
	populate(&delta, 2);
	delta.health.cpu_pct = 5; /* lower than acc's: the max must keep acc's */
	delta.health.rss_bytes = 1 << 30;

	assert_int_equal(cl_metrics_merge(&merged, &delta), 0);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	pack_metrics(&sb, &delta);
	struct cl_err err = { 0 };
	assert_int_equal(decode_into(&acc, sb.data, sb.size, &err), 0);
	assert_metrics_equal(&acc, &merged);

	/* Merge semantics themselves. */
	assert_true(merged.health.cpu_pct == 10.0);
	assert_int_equal(merged.health.rss_bytes, 1 << 30);
	assert_int_equal(merged.health.inflight, 3);
	assert_int_equal(merged.ctr[CL_CTR_STARTED], 1000 + 2000);
	assert_int_equal(cl_hist_count(&merged.lat[CL_LAT_TTFT]), 400);
	assert_int_equal(cl_hist_overflow(&merged.lat[CL_LAT_E2E]), 2);
	assert_int_equal(merged.n_err_samples, 4);
	assert_string_equal(merged.err_samples[2].body, "model loading");

	/* Reset returns to the empty record. */
	struct cl_metrics fresh;
	assert_int_equal(cl_metrics_init(&fresh), 0);
	cl_metrics_reset(&merged);
	assert_metrics_equal(&merged, &fresh);

	cl_metrics_destroy(&fresh);
	msgpack_sbuffer_destroy(&sb);
	cl_metrics_destroy(&acc);
	cl_metrics_destroy(&merged);
	cl_metrics_destroy(&delta);
}

static void test_err_samples(void **state)
{
	struct cl_metrics m, n;
	assert_int_equal(cl_metrics_init(&m), 0);
	assert_int_equal(cl_metrics_init(&n), 0);
	char big[1000];
	memset(big, 'x', sizeof(big));
	cl_metrics_add_err_sample(&m, CL_CTR_ERR_HTTP_429, 429, big, sizeof(big));
	assert_int_equal(strlen(m.err_samples[0].body), CL_ERR_SAMPLE_BODY_MAX - 1);
	cl_metrics_add_err_sample(&m, CL_CTR_ERR_TIMEOUT, 0, NULL, 50);
	assert_string_equal(m.err_samples[1].body, "");
	cl_metrics_add_err_sample(&m, CL_CTR_STARTED, 0, "abc", 2); /* not an error class */
	assert_int_equal(m.err_samples[2].ctr, CL_CTR_ERR_OTHER);
	assert_string_equal(m.err_samples[2].body, "ab");
	cl_metrics_add_err_sample(&m, CL_CTR_ERR_TLS, 0, "4", 1);
	cl_metrics_add_err_sample(&m, CL_CTR_ERR_TLS, 0, "5", 1);
	cl_metrics_add_err_sample(&m, CL_CTR_ERR_TLS, 0, "6", 1);
	assert_int_equal(m.n_err_samples, CL_ERR_SAMPLES_MAX);
	assert_string_equal(m.err_samples[3].body, "4");

	/* The cap holds across merge and decode. */
	cl_metrics_add_err_sample(&n, CL_CTR_ERR_OTHER, 0, "n0", 2);
	assert_int_equal(cl_metrics_merge(&n, &m), 0);
	assert_int_equal(n.n_err_samples, CL_ERR_SAMPLES_MAX);
	assert_string_equal(n.err_samples[0].body, "n0");
	assert_int_equal(n.err_samples[1].http_status, 429);

	struct cl_metrics d;
	assert_int_equal(cl_metrics_init(&d), 0);
	cl_metrics_add_err_sample(&d, CL_CTR_ERR_OTHER, 0, "d0", 2);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	pack_metrics(&sb, &m);
	struct cl_err err = { 0 };
	assert_int_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_int_equal(d.n_err_samples, CL_ERR_SAMPLES_MAX);
	assert_string_equal(d.err_samples[0].body, "d0");
	assert_int_equal(strlen(d.err_samples[1].body), CL_ERR_SAMPLE_BODY_MAX - 1);
	assert_int_equal(d.err_samples[1].ctr, CL_CTR_ERR_HTTP_429);

	msgpack_sbuffer_destroy(&sb);
	cl_metrics_destroy(&d);
	cl_metrics_destroy(&m);
	cl_metrics_destroy(&n);
}

/* --- hostile encodings --- */

static void key(msgpack_packer *pk, const char *k)
{
	msgpack_pack_str(pk, strlen(k));
	msgpack_pack_str_body(pk, k, strlen(k));
}

enum bad_case {
	B_UNKNOWN_LAT,
	B_UNKNOWN_CNT,
	B_LAT_NAME_IN_CNT,
	B_UNKNOWN_CTR,
	B_UNKNOWN_TOP,
	B_UNKNOWN_HEALTH,
	B_UNKNOWN_ERR_CLASS,
	B_NONERROR_CLASS,
	B_UNKNOWN_ERR_FIELD,
	B_DUP_LAT,
	B_DUP_CTR,
	B_TOP_NOT_MAP,
	B_LAT_NOT_MAP,
	B_LAT_KEY_INT,
	B_HIST_NOT_MAP,
	B_HIST_WRONG_CFG,
	B_CTR_NOT_MAP,
	B_CTR_STR,
	B_CTR_NEG,
	B_CTR_FLOAT,
	B_CTR_OVERFLOW,
	B_HEALTH_STR,
	B_HEALTH_NEG,
	B_HEALTH_NAN,
	B_ERRS_NOT_ARRAY,
	B_ERR_NOT_MAP,
	B_ERR_BODY_INT,
	B_ERR_STATUS_STR,
	B_ERR_NO_CTR,
	B__COUNT
};

/* Expected fragment of each rejection's message. */
static const char *const bad_msg[B__COUNT] = {
	[B_UNKNOWN_LAT] = "unknown latency histogram 'ttft2'",
	[B_UNKNOWN_CNT] = "unknown count histogram 'tokens'",
	[B_LAT_NAME_IN_CNT] = "unknown count histogram 'ttft'",
	[B_UNKNOWN_CTR] = "unknown counter 'err_http_418'",
	[B_UNKNOWN_TOP] = "unknown metrics field 'latency'",
	[B_UNKNOWN_HEALTH] = "unknown health field 'gpu_pct'",
	[B_UNKNOWN_ERR_CLASS] = "unknown error class 'err_gremlins'",
	[B_NONERROR_CLASS] = "unknown error class 'started'",
	[B_UNKNOWN_ERR_FIELD] = "unknown error sample field 'headers'",
	[B_DUP_LAT] = "duplicate latency histogram 'ttft'",
	[B_DUP_CTR] = "duplicate counter 'started'",
	[B_TOP_NOT_MAP] = "not a map",
	[B_LAT_NOT_MAP] = "'lat' is not a map",
	[B_LAT_KEY_INT] = "unknown latency histogram '<non-string>'",
	[B_HIST_NOT_MAP] = "latency histogram 'ttft': histogram is not a map",
	[B_HIST_WRONG_CFG] = "latency histogram 'ttft': histogram config",
	[B_CTR_NOT_MAP] = "'ctr' is not a map",
	[B_CTR_STR] = "counter 'completed' is not a non-negative integer",
	[B_CTR_NEG] = "counter 'completed' is not a non-negative integer",
	[B_CTR_FLOAT] = "counter 'completed' is not a non-negative integer",
	[B_CTR_OVERFLOW] = "counter 'bytes' would overflow",
	[B_HEALTH_STR] = "health field 'cpu_pct'",
	[B_HEALTH_NEG] = "health field 'rss_bytes'",
	[B_HEALTH_NAN] = "health field 'cpu_pct_capacity'",
	[B_ERRS_NOT_ARRAY] = "'errs' is not an array",
	[B_ERR_NOT_MAP] = "error sample 0 is not a map",
	[B_ERR_BODY_INT] = "error sample 0 body is not a string",
	[B_ERR_STATUS_STR] = "error sample 0 has a bad http_status",
	[B_ERR_NO_CTR] = "error sample 0 lacks 'ctr'",
};

/* A record that is valid except for one defect; the valid parts come first, so the test
 * also proves a rejected record is not half-applied. */
static void pack_bad(msgpack_sbuffer *sb, const struct cl_hist *ttft, const struct cl_hist *cnt,
		     int bc)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	if (bc == B_TOP_NOT_MAP) {
		msgpack_pack_array(&pk, 1);
		msgpack_pack_int(&pk, 1);
		return;
	}
	msgpack_pack_map(&pk, bc == B_UNKNOWN_TOP ? 6 : 5);
	/* 1: a valid ctr map first, so a later defect must not leave it applied. */
	key(&pk, "ctr");
	msgpack_pack_map(&pk, 1);
	key(&pk, "started");
	msgpack_pack_uint64(&pk, 7);
	/* 2: lat */
	key(&pk, "lat");
	if (bc == B_LAT_NOT_MAP) {
		msgpack_pack_array(&pk, 0);
	} else {
		msgpack_pack_map(
		    &pk, bc == B_UNKNOWN_LAT || bc == B_DUP_LAT || bc == B_LAT_KEY_INT ? 2 : 1);
		key(&pk, "ttft");
		if (bc == B_HIST_NOT_MAP)
			msgpack_pack_int(&pk, 3);
		else if (bc == B_HIST_WRONG_CFG)
			assert_int_equal(cl_hist_pack(cnt, &pk), 0);
		else
			assert_int_equal(cl_hist_pack(ttft, &pk), 0);
		if (bc == B_UNKNOWN_LAT || bc == B_DUP_LAT) {
			key(&pk, bc == B_UNKNOWN_LAT ? "ttft2" : "ttft");
			assert_int_equal(cl_hist_pack(ttft, &pk), 0);
		} else if (bc == B_LAT_KEY_INT) {
			msgpack_pack_int(&pk, 2);
			assert_int_equal(cl_hist_pack(ttft, &pk), 0);
		}
	}
	/* 3: cnt */
	key(&pk, "cnt");
	msgpack_pack_map(&pk, 1);
	key(&pk, bc == B_UNKNOWN_CNT       ? "tokens"
		 : bc == B_LAT_NAME_IN_CNT ? "ttft"
					   : "output_tokens");
	assert_int_equal(cl_hist_pack(cnt, &pk), 0);
	/* 4: health */
	key(&pk, "health");
	if (bc == B_HEALTH_STR) {
		msgpack_pack_map(&pk, 1);
		key(&pk, "cpu_pct");
		key(&pk, "high");
	} else if (bc == B_HEALTH_NEG) {
		msgpack_pack_map(&pk, 1);
		key(&pk, "rss_bytes");
		msgpack_pack_int64(&pk, -4096);
	} else if (bc == B_HEALTH_NAN) {
		msgpack_pack_map(&pk, 1);
		key(&pk, "cpu_pct_capacity");
		msgpack_pack_double(&pk, NAN);
	} else if (bc == B_UNKNOWN_HEALTH) {
		msgpack_pack_map(&pk, 1);
		key(&pk, "gpu_pct");
		msgpack_pack_double(&pk, 1);
	} else {
		msgpack_pack_map(&pk, 2);
		key(&pk, "cpu_pct");
		msgpack_pack_double(&pk, 50);
		key(&pk, "inflight");
		msgpack_pack_int64(&pk, 9);
	}
	/* 5: errs */
	key(&pk, "errs");
	if (bc == B_ERRS_NOT_ARRAY) {
		msgpack_pack_map(&pk, 0);
	} else if (bc == B_ERR_NOT_MAP) {
		msgpack_pack_array(&pk, 1);
		msgpack_pack_int(&pk, 1);
	} else {
		msgpack_pack_array(&pk, 1);
		msgpack_pack_map(&pk, bc == B_ERR_NO_CTR ? 1 : bc == B_UNKNOWN_ERR_FIELD ? 3 : 2);
		if (bc != B_ERR_NO_CTR) {
			key(&pk, "ctr");
			key(&pk, bc == B_UNKNOWN_ERR_CLASS ? "err_gremlins"
				 : bc == B_NONERROR_CLASS  ? "started"
							   : "err_http_5xx");
		}
		if (bc == B_ERR_BODY_INT) {
			key(&pk, "body");
			msgpack_pack_int(&pk, 5);
		} else if (bc == B_ERR_STATUS_STR) {
			key(&pk, "http_status");
			key(&pk, "503");
		} else {
			key(&pk, "body");
			key(&pk, "oops");
		}
		if (bc == B_UNKNOWN_ERR_FIELD) {
			key(&pk, "headers");
			msgpack_pack_nil(&pk);
		}
	}
	/* 6: an unknown top-level field, only in its own case */
	if (bc == B_UNKNOWN_TOP) {
		key(&pk, "latency");
		msgpack_pack_map(&pk, 0);
	}
}

/* Counter defects in a record of their own (one top-level "ctr"). */
static void pack_bad_ctr(msgpack_sbuffer *sb, int bc)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	key(&pk, "ctr");
	if (bc == B_CTR_NOT_MAP) {
		msgpack_pack_array(&pk, 0);
		return;
	}
	msgpack_pack_map(&pk, 2);
	key(&pk, "started");
	msgpack_pack_uint64(&pk, 3);
	switch (bc) {
	case B_UNKNOWN_CTR:
		key(&pk, "err_http_418");
		msgpack_pack_uint64(&pk, 1);
		break;
	case B_DUP_CTR:
		key(&pk, "started");
		msgpack_pack_uint64(&pk, 1);
		break;
	case B_CTR_STR:
		key(&pk, "completed");
		key(&pk, "1");
		break;
	case B_CTR_NEG:
		key(&pk, "completed");
		msgpack_pack_int64(&pk, -1);
		break;
	case B_CTR_FLOAT:
		key(&pk, "completed");
		msgpack_pack_double(&pk, 1.0);
		break;
	case B_CTR_OVERFLOW:
		key(&pk, "bytes");
		msgpack_pack_uint64(&pk, UINT64_MAX);
		break;
	}
}

static bool is_ctr_case(int bc)
{
	return bc == B_CTR_NOT_MAP || bc == B_CTR_STR || bc == B_CTR_NEG || bc == B_CTR_FLOAT ||
	       bc == B_CTR_OVERFLOW || bc == B_UNKNOWN_CTR || bc == B_DUP_CTR;
}

static void test_hostile(void **state)
{
	struct cl_metrics m, before;
	assert_int_equal(cl_metrics_init(&m), 0);
	assert_int_equal(cl_metrics_init(&before), 0);
	populate(&m, 4);
	m.ctr[CL_CTR_BYTES] = 10; /* so UINT64_MAX more overflows */
	assert_int_equal(cl_metrics_merge(&before, &m), 0);

	struct cl_hist ttft, cnt;
	assert_int_equal(cl_hist_init(&ttft, cl_metrics_lat_cfg()), 0);
	assert_int_equal(cl_hist_init(&cnt, cl_metrics_cnt_cfg()), 0);
	cl_hist_record(&ttft, 250000);
	cl_hist_record(&cnt, 12);

	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	for (int bc = 0; bc < B__COUNT; bc++) {
		if (is_ctr_case(bc))
			pack_bad_ctr(&sb, bc);
		else
			pack_bad(&sb, &ttft, &cnt, bc);
		struct cl_err err = { 0 };
		int rc = decode_into(&m, sb.data, sb.size, &err);
		if (rc != CL_EPARSE || !strstr(err.msg, bad_msg[bc])) {
			print_error("case %d: rc %d (want %d), message '%s' (want '%s')\n", bc, rc,
				    CL_EPARSE, err.msg, bad_msg[bc]);
			fail();
		}
		/* All or nothing: the valid parts before the defect were not applied. */
		assert_metrics_equal(&m, &before);
	}

	/* The control: the same builder without a defect decodes and adds. */
	pack_bad(&sb, &ttft, &cnt, -1);
	struct cl_err err = { 0 };
	int rc = decode_into(&m, sb.data, sb.size, &err);
	if (rc)
		print_error("control: %s\n", err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(m.ctr[CL_CTR_STARTED], before.ctr[CL_CTR_STARTED] + 7);
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_TTFT]),
			 cl_hist_count(&before.lat[CL_LAT_TTFT]) + 1);
	assert_int_equal(m.health.inflight, before.health.inflight + 9);
	assert_true(m.health.cpu_pct == 50.0);

	cl_hist_destroy(&ttft);
	cl_hist_destroy(&cnt);
	msgpack_sbuffer_destroy(&sb);
	cl_metrics_destroy(&m);
	cl_metrics_destroy(&before);
}

/* Several endpoints: each endpoint's record round-trips, a decode or merge into a record
 * with none grows it, merging adds exactly, reset keeps the records and empties them, and a
 * count over the cap or an unknown field is refused with the record unchanged. */
static void test_endpoints(void **state)
{
	(void)state;
	struct cl_metrics a, b, d;
	assert_int_equal(cl_metrics_init(&a), 0);
	assert_int_equal(cl_metrics_init(&b), 0);
	assert_int_equal(cl_metrics_init(&d), 0);
	assert_int_equal(cl_metrics_eps_init(&a, 3), 0);
	assert_int_equal(cl_metrics_eps_init(&a, CL_METRICS_EPS_MAX + 1), CL_EINVAL);
	for (uint32_t e = 0; e < 3; e++) {
		a.eps[e].ctr[CL_CTR_STARTED] = 10 + e;
		a.eps[e].ctr[CL_CTR_ERR_CONNECT] = e;
		for (int k = 0; k < 50; k++) {
			cl_hist_record(&a.eps[e].lat[CL_EP_LAT_TTFT], 1000 * (e + 1) + k);
			cl_hist_record(&a.eps[e].lat[CL_EP_LAT_ITL], 100 * (e + 1) + k);
		}
	}
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	pack_metrics(&sb, &a);
	struct cl_err err = { 0 };
	assert_int_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_int_equal(d.n_eps, 3);
	for (uint32_t e = 0; e < 3; e++) {
		assert_memory_equal(d.eps[e].ctr, a.eps[e].ctr, sizeof(a.eps[e].ctr));
		for (int k = 0; k < CL_EP_LAT__COUNT; k++)
			assert_true(cl_hist_equal(&d.eps[e].lat[k], &a.eps[e].lat[k]));
	}
	/* merged twice: counts add, histograms merge exactly */
	assert_int_equal(cl_metrics_merge(&b, &a), 0);
	assert_int_equal(cl_metrics_merge(&b, &d), 0);
	assert_int_equal(b.n_eps, 3);
	assert_int_equal(b.eps[2].ctr[CL_CTR_STARTED], 24);
	assert_int_equal(cl_hist_count(&b.eps[1].lat[CL_EP_LAT_ITL]), 100);
	assert_int_equal(cl_hist_percentile(&b.eps[1].lat[CL_EP_LAT_TTFT], 50),
			 cl_hist_percentile(&a.eps[1].lat[CL_EP_LAT_TTFT], 50));
	cl_metrics_reset(&b);
	assert_int_equal(b.n_eps, 3);
	assert_int_equal(b.eps[2].ctr[CL_CTR_STARTED], 0);
	assert_int_equal(cl_hist_count(&b.eps[0].lat[CL_EP_LAT_TTFT]), 0);

	/* hostile: an unknown field in an endpoint's record, and too many endpoints */
	msgpack_packer pk;
	msgpack_sbuffer_clear(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	key(&pk, "eps");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 1);
	key(&pk, "bogus");
	msgpack_pack_nil(&pk);
	assert_int_not_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_non_null(strstr(err.msg, "bogus"));
	assert_int_equal(d.eps[0].ctr[CL_CTR_STARTED], 10);
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 1);
	key(&pk, "eps");
	msgpack_pack_array(&pk, CL_METRICS_EPS_MAX + 1);
	for (int i = 0; i <= CL_METRICS_EPS_MAX; i++)
		msgpack_pack_map(&pk, 0);
	assert_int_not_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_int_equal(d.n_eps, 3);

	msgpack_sbuffer_destroy(&sb);
	cl_metrics_destroy(&a);
	cl_metrics_destroy(&b);
	cl_metrics_destroy(&d);
	assert_null(a.eps);
}

/* Request classes: each class's whole record round-trips and merges as the record does, a
 * decode into a record with none grows it, reset keeps them empty, and a class record with
 * classes or endpoints of its own, or too many classes, is refused. */
static void test_classes(void **state)
{
	(void)state;
	struct cl_metrics a, b, d;
	assert_int_equal(cl_metrics_init(&a), 0);
	assert_int_equal(cl_metrics_init(&b), 0);
	assert_int_equal(cl_metrics_init(&d), 0);
	assert_int_equal(cl_metrics_cls_init(&a, 3), 0);
	assert_int_equal(cl_metrics_cls_init(&a, CL_METRICS_CLASSES_MAX + 1), CL_EINVAL);
	for (uint32_t k = 0; k < 3; k++) {
		a.cls[k].ctr[CL_CTR_STARTED] = 10 + k;
		a.cls[k].ctr[CL_CTR_COMPLETED] = 9 + k;
		a.cls[k].ctr[CL_CTR_ERR_HTTP_4XX] = 1;
		for (int i = 0; i < 40; i++) {
			cl_hist_record(&a.cls[k].lat[CL_LAT_TTFT], 1000 * (k + 1) + i);
			cl_hist_record(&a.cls[k].lat[CL_LAT_E2E], 5000 * (k + 1) + i);
			cl_hist_record(&a.cls[k].cnt[CL_CNT_OUTPUT_TOKENS], 8 * (k + 1));
		}
		cl_metrics_add_err_sample(&a.cls[k], CL_CTR_ERR_HTTP_4XX, 404, "no model", 8);
	}
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	pack_metrics(&sb, &a);
	struct cl_err err = { 0 };
	assert_int_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_int_equal(d.n_cls, 3);
	for (uint32_t k = 0; k < 3; k++) {
		assert_memory_equal(d.cls[k].ctr, a.cls[k].ctr, sizeof(a.cls[k].ctr));
		for (int i = 0; i < CL_LAT__COUNT; i++)
			assert_true(cl_hist_equal(&d.cls[k].lat[i], &a.cls[k].lat[i]));
		assert_true(cl_hist_equal(&d.cls[k].cnt[CL_CNT_OUTPUT_TOKENS],
					  &a.cls[k].cnt[CL_CNT_OUTPUT_TOKENS]));
		assert_int_equal(d.cls[k].n_err_samples, 1);
		assert_int_equal(d.cls[k].err_samples[0].http_status, 404);
		assert_int_equal(d.cls[k].n_cls, 0);
	}
	assert_int_equal(cl_metrics_merge(&b, &a), 0);
	assert_int_equal(cl_metrics_merge(&b, &d), 0);
	assert_int_equal(b.n_cls, 3);
	assert_int_equal(b.cls[2].ctr[CL_CTR_STARTED], 24);
	assert_int_equal(cl_hist_count(&b.cls[1].lat[CL_LAT_TTFT]), 80);
	assert_int_equal(cl_hist_percentile(&b.cls[1].lat[CL_LAT_E2E], 50),
			 cl_hist_percentile(&a.cls[1].lat[CL_LAT_E2E], 50));
	cl_metrics_reset(&b);
	assert_int_equal(b.n_cls, 3);
	assert_int_equal(b.cls[2].ctr[CL_CTR_STARTED], 0);
	assert_int_equal(cl_hist_count(&b.cls[0].lat[CL_LAT_TTFT]), 0);

	/* hostile: a class record with classes of its own, and too many classes */
	msgpack_packer pk;
	msgpack_sbuffer_clear(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	key(&pk, "cls");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 1);
	key(&pk, "cls");
	msgpack_pack_array(&pk, 0);
	assert_int_not_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_non_null(strstr(err.msg, "cls[0]"));
	assert_int_equal(d.cls[0].ctr[CL_CTR_STARTED], 10);
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 1);
	key(&pk, "cls");
	msgpack_pack_array(&pk, CL_METRICS_CLASSES_MAX + 1);
	for (int i = 0; i <= CL_METRICS_CLASSES_MAX; i++)
		msgpack_pack_map(&pk, 0);
	assert_int_not_equal(decode_into(&d, sb.data, sb.size, &err), 0);
	assert_int_equal(d.n_cls, 3);

	msgpack_sbuffer_destroy(&sb);
	cl_metrics_destroy(&a);
	cl_metrics_destroy(&b);
	cl_metrics_destroy(&d);
	assert_null(a.cls);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),       cmocka_unit_test(test_init_destroy),
		cmocka_unit_test(test_roundtrip),   cmocka_unit_test(test_delta_equals_merge),
		cmocka_unit_test(test_err_samples), cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_classes), cmocka_unit_test(test_endpoints),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
