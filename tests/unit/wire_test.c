/* Tests of the wire codec: every message and command round trips field by field, and hostile
 * bytes (huge claimed counts, deep nesting, truncation, wrong types, versions) are refused. */
#include "chatload/wire.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- Allocation counting (only under ASan, whose allocator offers hooks) ---------------- */

int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
					      void (*free_hook)(const volatile void *))
    __attribute__((weak));

static volatile int counting;
static volatile size_t counted_bytes;

static void on_malloc(const volatile void *p, size_t n)
{
	if (counting)
		counted_bytes += n;
}

static void on_free(const volatile void *p)
{
}

static bool hooks_installed;

/* True when allocations can be measured in this build. */
static bool alloc_hooks(void)
{
	if (!hooks_installed && __sanitizer_install_malloc_and_free_hooks)
		hooks_installed =
		    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
	return hooks_installed;
}

/* ---- Helpers ---------------------------------------------------------------------------- */

#define assert_err(rc, want, err, needle)                                                          \
	do {                                                                                       \
		int rc_ = (rc);                                                                    \
		if (rc_ != (want) || !strstr((err).msg, (needle))) {                               \
			print_error("got %d (%s) \"%s\", wanted %d with \"%s\"\n", rc_,            \
				    cl_strerror(rc_), (err).msg, (want), (needle));                \
			fail();                                                                    \
		}                                                                                  \
	} while (0)

static void encode_ok(const struct cl_msg *m, msgpack_sbuffer *sb)
{
	struct cl_err err = { 0 };
	msgpack_sbuffer_clear(sb);
	int rc = cl_wire_encode(m, sb, &err);
	if (rc) {
		print_error("encode failed: %s\n", err.msg);
		fail();
	}
}

/* Encodes in, decodes into out (owned; the caller frees) and checks the envelope. */
static void roundtrip(const struct cl_msg *in, struct cl_msg *out)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	encode_ok(in, &sb);
	struct cl_err err = { 0 };
	int rc = cl_wire_decode(sb.data, sb.size, out, &err);
	if (rc) {
		print_error("decode failed: %s\n", err.msg);
		fail();
	}
	/* A second encoding of what was decoded is byte-identical: nothing was lost. */
	msgpack_sbuffer sb2;
	msgpack_sbuffer_init(&sb2);
	encode_ok(out, &sb2);
	assert_int_equal(sb2.size, sb.size);
	assert_memory_equal(sb2.data, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb2);
	msgpack_sbuffer_destroy(&sb);

	assert_true(out->owned);
	assert_int_equal(out->type, in->type);
	assert_int_equal(out->proto, CL_PROTO_VERSION);
	assert_string_equal(out->run, in->run ? in->run : "");
	assert_int_equal(out->agent, in->agent);
	assert_int_equal(out->seq, in->seq);
}

static int decode_bytes(const void *p, size_t n, struct cl_err *err)
{
	struct cl_msg m;
	int rc = cl_wire_decode(p, n, &m, err);
	cl_msg_free(&m);
	return rc;
}

static void populate_metrics(struct cl_metrics *m, uint64_t seed)
{
	for (int i = 0; i < CL_LAT__COUNT; i++)
		for (uint64_t k = 0; k < 300; k++)
			cl_hist_record(
			    &m->lat[i],
			    (int64_t)((seed * 7919 + k * 104729 + (uint64_t)i) % 9000000));
	cl_hist_record(&m->lat[CL_LAT_E2E], 3600000000LL + 77); /* an overflow */
	for (int i = 0; i < CL_CNT__COUNT; i++)
		for (uint64_t k = 0; k < 80; k++)
			cl_hist_record(&m->cnt[i],
				       (int64_t)(1 + (seed + k * 31 + (uint64_t)i) % 9000));
	for (int i = 0; i < CL_CTR__COUNT; i++)
		m->ctr[i] = i % 5 == 4 ? 0 : seed * 1000 + (uint64_t)i;
	m->health.cpu_pct = 87.5;
	m->health.cpu_pct_capacity = 400;
	m->health.rss_bytes = 123456789;
	m->health.inflight = 1024;
	cl_metrics_add_err_sample(m, CL_CTR_ERR_HTTP_5XX, 503, "{\"error\":\"model loading\"}", 25);
	cl_metrics_add_err_sample(m, CL_CTR_ERR_CONNECT, 0, "connection refused", 18);
}

static void assert_metrics_equal(const struct cl_metrics *a, const struct cl_metrics *b)
{
	for (int i = 0; i < CL_LAT__COUNT; i++) {
		assert_int_equal(cl_hist_count(&a->lat[i]), cl_hist_count(&b->lat[i]));
		if (!cl_hist_equal(&a->lat[i], &b->lat[i])) {
			print_error("latency histogram '%s' differs\n", cl_lat_name(i));
			fail();
		}
	}
	for (int i = 0; i < CL_CNT__COUNT; i++) {
		assert_int_equal(cl_hist_count(&a->cnt[i]), cl_hist_count(&b->cnt[i]));
		if (!cl_hist_equal(&a->cnt[i], &b->cnt[i])) {
			print_error("count histogram '%s' differs\n", cl_cnt_name(i));
			fail();
		}
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

static void assert_opt_str(const char *got, const char *want)
{
	if (!want)
		assert_null(got);
	else
		assert_string_equal(got, want);
}

static char *headers_in[] = { "X-Team: perf", "Authorization-Extra: a\tb", "X-Empty:" };
static char *endpoints_in[] = { "https://llm.example.internal:8443/v1",
				"https://llm-2.example.internal:8443/v1" };

static struct cl_target_plan sample_target(void)
{
	struct cl_target_plan t = {
		.base_url = "https://llm.example.internal:8443/v1",
		.model = "kimi-k2",
		.api_key_env = "OPENAI_API_KEY",
		.headers = headers_in,
		.n_headers = 3,
		.http2 = true,
		.http2_fallback = true,
		.http2_streams = 250,
		.tls_verify = false,
		.ca_file = "/etc/chatload/ca.pem",
		.connect_timeout_us = 5000000,
		.endpoints = endpoints_in,
		.n_endpoints = 2,
		.route = CL_ROUTE_SESSION_HASH,
	};
	return t;
}

static void assert_target_equal(const struct cl_target_plan *a, const struct cl_target_plan *b)
{
	assert_string_equal(a->base_url, b->base_url);
	assert_opt_str(a->model, b->model);
	assert_opt_str(a->api_key_env, b->api_key_env);
	assert_int_equal(a->n_headers, b->n_headers);
	for (size_t i = 0; i < b->n_headers; i++)
		assert_string_equal(a->headers[i], b->headers[i]);
	assert_int_equal(a->http2, b->http2);
	assert_int_equal(a->http2_fallback, b->http2_fallback);
	assert_int_equal(a->http2_streams, b->http2_streams);
	assert_int_equal(a->tls_verify, b->tls_verify);
	assert_opt_str(a->ca_file, b->ca_file);
	assert_int_equal(a->connect_timeout_us, b->connect_timeout_us);
	assert_int_equal(a->n_endpoints, b->n_endpoints);
	for (size_t i = 0; i < b->n_endpoints; i++)
		assert_string_equal(a->endpoints[i], b->endpoints[i]);
	assert_int_equal(a->route, b->route);
}

static struct cl_stage_plan sample_stage(void)
{
	struct cl_stage_plan s = {
		.index = 3,
		.name = "r20/s",
		.mode = CL_MODE_RATE,
		.concurrency = 64,
		.rate_per_s = 6.6666666666666667,
		.arrival = CL_ARRIVAL_GAMMA,
		.gamma_shape = 0.25,
		.duration_us = 120000000,
		.requests = 0,
		.ramp_us = 10000000,
		.ramp_from = 2,
		.drain_timeout_us = 30000000,
		.seed = 0xfedcba9876543210ull,
	};
	return s;
}

static void assert_stage_equal(const struct cl_stage_plan *a, const struct cl_stage_plan *b)
{
	assert_int_equal(a->index, b->index);
	assert_opt_str(a->name, b->name);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->concurrency, b->concurrency);
	assert_true(a->rate_per_s == b->rate_per_s);
	assert_int_equal(a->arrival, b->arrival);
	assert_true(a->gamma_shape == b->gamma_shape);
	assert_int_equal(a->duration_us, b->duration_us);
	assert_int_equal(a->requests, b->requests);
	assert_int_equal(a->ramp_us, b->ramp_us);
	assert_int_equal(a->ramp_from, b->ramp_from);
	assert_int_equal(a->drain_timeout_us, b->drain_timeout_us);
	assert_int_equal(a->seed, b->seed);
}

/* ---- Names ------------------------------------------------------------------------------ */

static void test_names(void **state)
{
	static const char *const types[] = { NULL,      "HELLO",  "POLL", "REPORT",
					     "WELCOME", "REFUSE", "CMD",  "ACK", "ANSWERS",
					     "REQUESTS" };
	static const char *const cmds[] = { "NOOP", "PROBE", "WARMUP", "PREPARE", "START_AT",
					    "STOP", "ABORT", "QUIT",   "BODIES", "GENERATE", "LEASE" };
	static const char *const states[] = { "idle",     "preparing", "ready", "running",
					      "draining", "done",      "failed" };
	static const char *const kinds[] = { "interval", "final", "probe", "warmup" };
	assert_int_equal(sizeof(types) / sizeof(*types), CL_MSG__COUNT);
	assert_int_equal(sizeof(cmds) / sizeof(*cmds), CL_CMD__COUNT);
	assert_int_equal(sizeof(states) / sizeof(*states), CL_AGENT__COUNT);
	assert_int_equal(sizeof(kinds) / sizeof(*kinds), CL_REPORT__COUNT);
	assert_null(cl_msg_type_name(CL_MSG_NONE));
	for (int i = 1; i < CL_MSG__COUNT; i++) {
		assert_string_equal(cl_msg_type_name(i), types[i]);
		assert_int_equal(cl_msg_type_from_name(types[i]), i);
	}
	for (int i = 0; i < CL_CMD__COUNT; i++) {
		assert_string_equal(cl_cmd_name(i), cmds[i]);
		assert_int_equal(cl_cmd_from_name(cmds[i]), i);
	}
	for (int i = 0; i < CL_AGENT__COUNT; i++) {
		assert_string_equal(cl_agent_state_name(i), states[i]);
		assert_int_equal(cl_agent_state_from_name(states[i]), i);
	}
	for (int i = 0; i < CL_REPORT__COUNT; i++) {
		assert_string_equal(cl_report_kind_name(i), kinds[i]);
		assert_int_equal(cl_report_kind_from_name(kinds[i]), i);
	}
	assert_null(cl_cmd_name(CL_CMD__COUNT));
	assert_null(cl_cmd_name(-1));
	assert_int_equal(cl_cmd_from_name("start_at"), -1); /* case matters */
	assert_int_equal(cl_msg_type_from_name(NULL), -1);
}

/* ---- Round trips ------------------------------------------------------------------------ */

static void test_hello(void **state)
{
	char *caps[] = { "http2", "tls", "h2c" };
	struct cl_msg in = { .type = CL_MSG_HELLO, .run = "", .agent = 0, .seq = 1 };
	in.hello = (struct cl_msg_hello){ .version = "0.1.0",
					  .host = "client-07.perf.example",
					  .workers = 16,
					  .caps = caps,
					  .n_caps = 3,
					  .token = "s3cr3t \x01 token",
					  .pid = 4242,
					  .t_send_us = 987654321012 };
	struct cl_msg out;
	roundtrip(&in, &out);
	assert_string_equal(out.hello.version, "0.1.0");
	assert_string_equal(out.hello.host, "client-07.perf.example");
	assert_int_equal(out.hello.workers, 16);
	assert_int_equal(out.hello.n_caps, 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(out.hello.caps[i], caps[i]);
	assert_string_equal(out.hello.token, "s3cr3t \x01 token");
	assert_int_equal(out.hello.pid, 4242);
	assert_int_equal(out.hello.t_send_us, 987654321012);
	cl_msg_free(&out);
	assert_false(out.owned);
	assert_null(out.run);

	/* No caps, NULL strings become "" (required fields are always present). */
	in.hello = (struct cl_msg_hello){ .workers = 1 };
	roundtrip(&in, &out);
	assert_string_equal(out.hello.version, "");
	assert_string_equal(out.hello.token, "");
	assert_int_equal(out.hello.n_caps, 0);
	assert_null(out.hello.caps);
	cl_msg_free(&out);
}

static void test_poll(void **state)
{
	for (int st = 0; st < CL_AGENT__COUNT; st++) {
		struct cl_msg in = { .type = CL_MSG_POLL,
				     .run = "k2-sweep-20261202T160350Z",
				     .agent = 7,
				     .seq = UINT64_MAX - (uint64_t)st };
		in.poll =
		    (struct cl_msg_poll){ .state = (enum cl_agent_state)st,
					  .applied_seq = 41,
					  .cpu_pct = 173.25,
					  .rss_bytes = 3ll << 30,
					  .inflight = 2048,
					  .loop_lag_us = 180,
					  .t_send_us = -5,
					  .error =
					      st == CL_AGENT_FAILED ? "engine: out of fds" : NULL,
					  .clock_offset_us = st % 2 ? -123456789 : 0,
					  .clock_rtt_us = st % 2 ? 211 : 0 };
		struct cl_msg out;
		roundtrip(&in, &out);
		assert_int_equal(out.poll.state, st);
		assert_int_equal(out.poll.applied_seq, 41);
		assert_true(out.poll.cpu_pct == 173.25);
		assert_int_equal(out.poll.rss_bytes, 3ll << 30);
		assert_int_equal(out.poll.inflight, 2048);
		assert_int_equal(out.poll.loop_lag_us, 180);
		assert_int_equal(out.poll.t_send_us, -5);
		assert_opt_str(out.poll.error, in.poll.error);
		/* The clock estimate travels only once the agent has one (rtt > 0). */
		assert_int_equal(out.poll.clock_offset_us, st % 2 ? -123456789 : 0);
		assert_int_equal(out.poll.clock_rtt_us, st % 2 ? 211 : 0);
		cl_msg_free(&out);
	}
}

static void test_report_metrics(void **state)
{
	struct cl_metrics *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	assert_int_equal(cl_metrics_init(m), 0);
	populate_metrics(m, 3);
	static const enum cl_report_kind kinds[] = { CL_REPORT_INTERVAL, CL_REPORT_FINAL,
						     CL_REPORT_WARMUP };
	for (size_t k = 0; k < 3; k++) {
		struct cl_msg in = { .type = CL_MSG_REPORT, .run = "run-1", .agent = 2, .seq = 99 };
		in.report = (struct cl_msg_report){ .kind = kinds[k],
						    .stage = 4,
						    .interval = 17,
						    .span_us = 1000123,
						    .metrics = m,
						    .t_send_us = 5550001,
						    .error = k == 1 ? "lost 3 streams" : NULL,
						    .start_skew_us = (int64_t)k * 1500 };
		struct cl_msg out;
		roundtrip(&in, &out);
		if (k == 0 && alloc_hooks()) {
			/* What a REPORT decode costs: one fixed-size metrics record plus the
			 * msgpack tree, whatever the message claims. */
			cl_msg_free(&out);
			msgpack_sbuffer sb;
			msgpack_sbuffer_init(&sb);
			encode_ok(&in, &sb);
			struct cl_err err = { 0 };
			counted_bytes = 0;
			counting = 1;
			int rc = cl_wire_decode(sb.data, sb.size, &out, &err);
			counting = 0;
			assert_int_equal(rc, 0);
			print_message("%zu-byte REPORT: decode allocated %zu bytes\n", sb.size,
				      counted_bytes);
			assert_true(counted_bytes <= (8u << 20));
			msgpack_sbuffer_destroy(&sb);
		}
		assert_int_equal(out.report.kind, kinds[k]);
		assert_int_equal(out.report.stage, 4);
		assert_int_equal(out.report.interval, 17);
		assert_int_equal(out.report.span_us, 1000123);
		assert_int_equal(out.report.t_send_us, 5550001);
		assert_int_equal(out.report.start_skew_us, (int64_t)k * 1500);
		assert_opt_str(out.report.error, in.report.error);
		assert_null(out.report.readiness);
		assert_non_null(out.report.metrics);
		assert_int_equal(cl_hist_count(&out.report.metrics->lat[CL_LAT_TTFT]), 300);
		assert_int_equal(cl_hist_overflow(&out.report.metrics->lat[CL_LAT_E2E]), 1);
		assert_metrics_equal(out.report.metrics, m);
		cl_msg_free(&out);
	}
	/* An empty record (a quiet interval) also round trips. */
	cl_metrics_reset(m);
	struct cl_msg in = { .type = CL_MSG_REPORT, .run = "run-1", .agent = 2, .seq = 100 };
	in.report = (struct cl_msg_report){ .kind = CL_REPORT_INTERVAL, .metrics = m };
	struct cl_msg out;
	roundtrip(&in, &out);
	assert_metrics_equal(out.report.metrics, m);
	cl_msg_free(&out);
	cl_metrics_destroy(m);
	free(m);
}

/* A REPORT encoded once and stamped as it goes: the stamp lands in t_send_us, every other
 * field (here a small one and the metrics after it) is untouched, the encoding stays valid,
 * and a later stamp (a resend) replaces the first. */
static void test_report_restamp(void **state)
{
	struct cl_metrics *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	assert_int_equal(cl_metrics_init(m), 0);
	populate_metrics(m, 3);
	struct cl_msg in = { .type = CL_MSG_REPORT, .run = "run-1", .agent = 2, .seq = 7 };
	in.report = (struct cl_msg_report){
		.kind = CL_REPORT_INTERVAL, .stage = 1, .interval = 3, .metrics = m, .t_send_us = 5
	};
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_err err = { 0 };
	size_t at = 0;
	assert_int_equal(cl_wire_encode_report(&in, &sb, &at, &err), 0);
	assert_true(at > 0 && at + 8 <= sb.size);
	assert_int_equal((unsigned char)sb.data[at - 1], 0xd3); /* int64, fixed width */
	static const int64_t stamps[] = { 1843921554123LL, 42, INT64_MAX };
	for (size_t k = 0; k < 3; k++) {
		cl_wire_restamp(sb.data, at, stamps[k]);
		assert_int_equal(cl_wire_check(sb.data, sb.size, NULL, &err), 0);
		struct cl_msg out = { 0 };
		assert_int_equal(cl_wire_decode(sb.data, sb.size, &out, &err), 0);
		assert_int_equal(out.seq, 7);
		assert_int_equal(out.report.interval, 3);
		assert_true(out.report.t_send_us == stamps[k]);
		assert_metrics_equal(out.report.metrics, m);
		cl_msg_free(&out);
	}
	/* Only a REPORT has a stamp to set. */
	struct cl_msg poll = { .type = CL_MSG_POLL, .run = "run-1", .agent = 2, .seq = 8 };
	assert_int_equal(cl_wire_encode_report(&poll, &sb, &at, &err), CL_EINVAL);
	msgpack_sbuffer_destroy(&sb);
	cl_metrics_destroy(m);
	free(m);
}

/* The report spread: within a quarter of the interval, never over its cap, and 1,000 agents
 * spread over it evenly (no 10 % of it holds more than twice its share). */
static void test_report_spread(void **state)
{
	assert_int_equal(cl_wire_report_spread_us(0, 7), 0);
	for (uint32_t id = 1; id <= 50; id++) {
		int64_t s = cl_wire_report_spread_us(200000, id);
		assert_true(s >= 0 && s < 50000);
		assert_true(cl_wire_report_spread_us(10000000, id) < CL_WIRE_REPORT_SPREAD_MAX_US);
	}
	int bins[10] = { 0 };
	for (uint32_t id = 1; id <= 1000; id++)
		bins[cl_wire_report_spread_us(1000000, id) * 10 / CL_WIRE_REPORT_SPREAD_MAX_US]++;
	for (int b = 0; b < 10; b++)
		assert_true(bins[b] > 50 && bins[b] < 200);
	/* the same agent, the same share: a fixed offset, not a random one */
	assert_true(cl_wire_report_spread_us(1000000, 3) == cl_wire_report_spread_us(1000000, 3));
}

static void test_report_probe(void **state)
{
	struct cl_readiness_result r = {
		.status = CL_READY_TIMED_OUT,
		.phase = CL_READY_GENERATION,
		.phase_passed_us = { 1200, 4000000, -1 },
		.attempts = 31,
		.probe_ttft_us = -1,
		.probe_total_us = -1,
		.elapsed_us = 900000000,
		.model = "kimi-k2",
		.last_error = "HTTP 503 \"Loading model\"",
		.failing_since_us = 4100000,
	};
	struct cl_msg in = { .type = CL_MSG_REPORT, .run = "p", .agent = 1, .seq = 5 };
	in.report =
	    (struct cl_msg_report){ .kind = CL_REPORT_PROBE, .readiness = &r, .t_send_us = 77 };
	struct cl_msg out;
	roundtrip(&in, &out);
	assert_int_equal(out.report.kind, CL_REPORT_PROBE);
	assert_null(out.report.metrics);
	const struct cl_readiness_result *o = out.report.readiness;
	assert_non_null(o);
	assert_int_equal(o->status, CL_READY_TIMED_OUT);
	assert_int_equal(o->phase, CL_READY_GENERATION);
	for (int i = 0; i < CL_READY__PHASES; i++)
		assert_int_equal(o->phase_passed_us[i], r.phase_passed_us[i]);
	assert_int_equal(o->attempts, 31);
	assert_int_equal(o->probe_ttft_us, -1);
	assert_int_equal(o->probe_total_us, -1);
	assert_int_equal(o->elapsed_us, 900000000);
	assert_string_equal(o->model, "kimi-k2");
	assert_string_equal(o->last_error, "HTTP 503 \"Loading model\"");
	assert_int_equal(o->failing_since_us, 4100000);
	cl_msg_free(&out);

	/* Full-length fixed strings survive exactly. */
	memset(r.model, 'm', sizeof(r.model) - 1);
	memset(r.last_error, 'e', sizeof(r.last_error) - 1);
	r.status = CL_READY_PASSED;
	roundtrip(&in, &out);
	assert_string_equal(out.report.readiness->model, r.model);
	assert_string_equal(out.report.readiness->last_error, r.last_error);
	assert_int_equal(out.report.readiness->status, CL_READY_PASSED);
	cl_msg_free(&out);
}

/* Connections per source address ride on a final REPORT: the pool's order kept, at most
 * CL_SRCADDR_MAX entries; absent when the agent has no pool.  A decoded message owns them. */
static void test_report_sources(void **state)
{
	(void)state;
	struct cl_metrics *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	assert_int_equal(cl_metrics_init(m), 0);
	struct cl_source_conns *sc = calloc(1, sizeof(*sc));
	assert_non_null(sc);
	sc->n = 2;
	snprintf(sc->e[0].address, sizeof(sc->e[0].address), "127.0.0.3");
	sc->e[0].connections = 20001;
	snprintf(sc->e[1].address, sizeof(sc->e[1].address), "fd00::2");
	sc->e[1].connections = 0;
	struct cl_msg in = { .type = CL_MSG_REPORT, .run = "run-1", .agent = 2, .seq = 7 };
	in.report = (struct cl_msg_report){ .kind = CL_REPORT_FINAL, .metrics = m, .sources = sc };
	struct cl_msg out;
	roundtrip(&in, &out);
	assert_non_null(out.report.sources);
	assert_int_equal(out.report.sources->n, 2);
	assert_string_equal(out.report.sources->e[0].address, "127.0.0.3");
	assert_int_equal(out.report.sources->e[0].connections, 20001);
	assert_string_equal(out.report.sources->e[1].address, "fd00::2");
	assert_int_equal(out.report.sources->e[1].connections, 0);
	cl_msg_free(&out);
	in.report.sources = NULL;
	roundtrip(&in, &out);
	assert_null(out.report.sources);
	cl_msg_free(&out);

	/* More than the pool can hold is refused by the encoder, as the decoder would. */
	sc->n = CL_SRCADDR_MAX + 1;
	in.report.sources = sc;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_err err = { 0 };
	assert_err(cl_wire_encode(&in, &sb, &err), CL_ETOOBIG, err,
		   "field 'sources' has too many entries (257, max 256)");
	msgpack_sbuffer_destroy(&sb);
	free(sc);
	cl_metrics_destroy(m);
	free(m);
}

/* A REPORT with a hand-made `stalls` value (and an empty metrics record), for the decoder. */
static int decode_report_with_stalls(const int64_t (*ep)[2], size_t n, bool as_array,
				     struct cl_msg *out, struct cl_err *err)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
#define KEY(k) (msgpack_pack_str(&pk, strlen(k)), msgpack_pack_str_body(&pk, k, strlen(k)))
	msgpack_pack_map(&pk, 11);
	KEY("proto"), msgpack_pack_uint32(&pk, CL_PROTO_VERSION);
	KEY("t_send_us"), msgpack_pack_int64(&pk, 12345);
	KEY("type"), KEY("REPORT");
	KEY("run"), KEY("r");
	KEY("agent"), msgpack_pack_uint32(&pk, 1);
	KEY("seq"), msgpack_pack_uint32(&pk, 3);
	KEY("kind"), KEY("interval");
	KEY("stage"), msgpack_pack_uint32(&pk, 0);
	KEY("interval"), msgpack_pack_uint32(&pk, 0);
	KEY("metrics"), msgpack_pack_map(&pk, 0);
	KEY("stalls");
	if (!as_array) {
		msgpack_pack_map(&pk, 0);
	} else {
		msgpack_pack_array(&pk, n);
		for (size_t i = 0; i < n; i++) {
			msgpack_pack_map(&pk, 2);
			KEY("start_us"), msgpack_pack_int64(&pk, ep[i][0]);
			KEY("length_us"), msgpack_pack_int64(&pk, ep[i][1]);
		}
	}
#undef KEY
	int rc = cl_wire_decode(sb.data, sb.size, out, err);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

/* Stall episodes ride on a REPORT: at most CL_STALLS_MAX, each {start_us, length_us > 0}, put
 * in order and merged whatever order or overlap a peer sends. */
static void test_report_stalls(void **state)
{
	struct cl_metrics *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	assert_int_equal(cl_metrics_init(m), 0);
	struct cl_msg in = { .type = CL_MSG_REPORT, .run = "run-1", .agent = 2, .seq = 7 };
	in.report = (struct cl_msg_report){ .kind = CL_REPORT_FINAL, .metrics = m };
	cl_stall_list_add(&in.report.stalls, -5, 300000);
	cl_stall_list_add(&in.report.stalls, 9000000, 4000000);
	in.report.stalls.dropped = 3;
	struct cl_msg out;
	roundtrip(&in, &out);
	assert_int_equal(out.report.stalls.n, 2);
	assert_int_equal(out.report.stalls.dropped, 3);
	assert_int_equal(out.report.stalls.ep[0].start_us, -5);
	assert_int_equal(out.report.stalls.ep[0].length_us, 300000);
	assert_int_equal(out.report.stalls.ep[1].start_us, 9000000);
	assert_int_equal(out.report.stalls.ep[1].length_us, 4000000);
	cl_msg_free(&out);
	/* None: the fields are left out, and none come back. */
	memset(&in.report.stalls, 0, sizeof(in.report.stalls));
	roundtrip(&in, &out);
	assert_int_equal(out.report.stalls.n, 0);
	assert_int_equal(out.report.stalls.dropped, 0);
	cl_msg_free(&out);

	struct cl_err err = { 0 };
	const int64_t messy[][2] = { { 500, 100 }, { 100, 50 }, { 550, 100 } };
	assert_err(decode_report_with_stalls(messy, 3, true, &out, &err), 0, err, "");
	assert_int_equal(out.report.stalls.n, 2);
	assert_int_equal(out.report.stalls.ep[0].start_us, 100);
	assert_int_equal(out.report.stalls.ep[0].length_us, 50);
	assert_int_equal(out.report.stalls.ep[1].start_us, 500);
	assert_int_equal(out.report.stalls.ep[1].length_us, 150);
	cl_msg_free(&out);

	int64_t many[CL_STALLS_MAX + 1][2];
	for (int i = 0; i <= CL_STALLS_MAX; i++) {
		many[i][0] = i * 1000000;
		many[i][1] = 1000;
	}
	assert_err(decode_report_with_stalls(many, CL_STALLS_MAX + 1, true, &out, &err), CL_ETOOBIG,
		   err, "REPORT: field 'stalls' has too many entries (9, max 8)");
	cl_msg_free(&out);
	const int64_t zero[][2] = { { 10, 0 } };
	assert_err(decode_report_with_stalls(zero, 1, true, &out, &err), CL_EPROTO, err,
		   "field 'stalls[0].length_us'");
	cl_msg_free(&out);
	assert_err(decode_report_with_stalls(NULL, 0, false, &out, &err), CL_EPROTO, err,
		   "REPORT: field 'stalls' must be an array");
	cl_msg_free(&out);

	/* The encoder refuses what the decoder would. */
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	in.report.stalls.n = 1;
	in.report.stalls.ep[0] = (struct cl_stall){ 5, 0 };
	assert_err(cl_wire_encode(&in, &sb, &err), CL_EINVAL, err, "length_us' must be positive");
	in.report.stalls.n = CL_STALLS_MAX + 1;
	assert_err(cl_wire_encode(&in, &sb, &err), CL_ETOOBIG, err, "has too many entries");
	msgpack_sbuffer_destroy(&sb);
	cl_metrics_destroy(m);
	free(m);
}

static void test_replies(void **state)
{
	struct cl_msg out;
	struct cl_msg w = { .type = CL_MSG_WELCOME, .run = "k2-sweep", .agent = 9, .seq = 1 };
	w.welcome = (struct cl_msg_welcome){ .agent_id = 9,
					     .report_interval_us = 1000000,
					     .t_coord_us = 123456789,
					     .t_coord_recv_us = 123456000 };
	roundtrip(&w, &out);
	assert_int_equal(out.welcome.agent_id, 9);
	assert_int_equal(out.welcome.report_interval_us, 1000000);
	assert_int_equal(out.welcome.t_coord_us, 123456789);
	assert_int_equal(out.welcome.t_coord_recv_us, 123456000);
	cl_msg_free(&out);

	struct cl_msg r = { .type = CL_MSG_REFUSE, .run = "k2", .seq = 1 };
	r.refuse.reason = "protocol version 2 is not supported (this side speaks version 1)";
	roundtrip(&r, &out);
	assert_string_equal(out.refuse.reason, r.refuse.reason);
	cl_msg_free(&out);

	struct cl_msg a = { .type = CL_MSG_ACK, .run = "k2", .agent = 3, .seq = 1234567 };
	roundtrip(&a, &out);
	cl_msg_free(&out);
}

static struct cl_msg cmd_msg(enum cl_cmd c)
{
	struct cl_msg m = { .type = CL_MSG_CMD, .run = "k2-sweep", .agent = 4, .seq = 77 };
	m.cmd.cmd = c;
	m.cmd.cmd_seq = 12;
	m.cmd.t_coord_us = 1700000000000;
	m.cmd.t_coord_recv_us = 1699999000000;
	return m;
}

static void check_cmd_envelope(const struct cl_msg *out, enum cl_cmd c)
{
	assert_int_equal(out->cmd.cmd, c);
	assert_int_equal(out->cmd.cmd_seq, 12);
	assert_int_equal(out->cmd.t_coord_us, 1700000000000);
	assert_int_equal(out->cmd.t_coord_recv_us, 1699999000000);
}

static void test_cmd_plain(void **state)
{
	static const enum cl_cmd plain[] = { CL_CMD_NOOP, CL_CMD_ABORT, CL_CMD_QUIT };
	for (size_t i = 0; i < 3; i++) {
		struct cl_msg in = cmd_msg(plain[i]), out;
		roundtrip(&in, &out);
		check_cmd_envelope(&out, plain[i]);
		cl_msg_free(&out);
	}
	struct cl_msg in = cmd_msg(CL_CMD_STOP), out;
	in.cmd.stop.stage = 6;
	roundtrip(&in, &out);
	check_cmd_envelope(&out, CL_CMD_STOP);
	assert_int_equal(out.cmd.stop.stage, 6);
	assert_false(out.cmd.stop.cut);
	cl_msg_free(&out);
	/* an interrupted run's STOP cuts: the flag travels */
	in.cmd.stop.cut = true;
	roundtrip(&in, &out);
	assert_int_equal(out.cmd.stop.stage, 6);
	assert_true(out.cmd.stop.cut);
	cl_msg_free(&out);
}

/* GENERATE, LEASE and ANSWERS: the generate job's messages round-trip field by field, and
 * what the decoder must refuse (an id with a CR, zero attempts, too many items) is refused. */
static void test_generate_messages(void **state)
{
	struct cl_target_plan t = sample_target();
	struct cl_msg in = cmd_msg(CL_CMD_GENERATE), out;
	in.cmd.generate = (struct cl_cmd_generate){ .target = t,
						    .concurrency = 64,
						    .max_attempts = 4,
						    .request_timeout_us = 600000000,
						    .backoff_initial_us = 500000,
						    .backoff_max_us = 30000000,
						    .rate_per_s = 12.5 };
	roundtrip(&in, &out);
	check_cmd_envelope(&out, CL_CMD_GENERATE);
	assert_true(out.cmd.generate.rate_per_s == 12.5);
	assert_int_equal(out.cmd.generate.concurrency, 64);
	assert_int_equal(out.cmd.generate.max_attempts, 4);
	assert_int_equal(out.cmd.generate.request_timeout_us, 600000000);
	assert_int_equal(out.cmd.generate.backoff_initial_us, 500000);
	assert_int_equal(out.cmd.generate.backoff_max_us, 30000000);
	assert_string_equal(out.cmd.generate.target.base_url, t.base_url);
	cl_msg_free(&out);
	/* a negative rate is refused by the encoder */
	in.cmd.generate.rate_per_s = -1;
	struct cl_err eerr = { 0 };
	msgpack_sbuffer gsb;
	msgpack_sbuffer_init(&gsb);
	assert_err(cl_wire_encode(&in, &gsb, &eerr), CL_EINVAL, eerr, "rate_per_s");
	msgpack_sbuffer_destroy(&gsb);

	struct cl_gen_item items[3] = { { .id = "req-1", .body = "{\"messages\":[]}" },
					{ .id = "", .body = "{}" },
					{ .id = "x y/z", .body = "{\"a\":\"\\u00e9\"}" } };
	in = cmd_msg(CL_CMD_LEASE);
	in.cmd.lease.items = items;
	in.cmd.lease.n_items = 3;
	roundtrip(&in, &out);
	assert_int_equal(out.cmd.lease.n_items, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(out.cmd.lease.items[i].id, items[i].id);
		assert_string_equal(out.cmd.lease.items[i].body, items[i].body);
		assert_int_equal(out.cmd.lease.items[i].body_len, strlen(items[i].body));
	}
	cl_msg_free(&out);

	struct cl_gen_answer ans[2] = {
		{ .id = "req-1",
		  .attempts = 2,
		  .status = 200,
		  .request_id = "chatcmpl-7",
		  .body = "{\"object\":\"chat.completion\"}",
		  .ttft_us = 1234,
		  .total_us = 99999,
		  .ttfc_us = 2345,
		  .output_tokens = 17,
		  .prompt_tokens = 41 },
		{ .id = "req-2", .attempts = 4, .status = 500, .error = "500: internal", .retryable = true,
		  .err_class = CL_CTR_ERR_HTTP_5XX },
	};
	ans[0].retries[CL_CTR_ERR_STREAM_ERROR - CL_CTR_FIRST_ERROR] = 1;
	ans[1].retries[CL_CTR_ERR_HTTP_5XX - CL_CTR_FIRST_ERROR] = 2;
	ans[1].retries[CL_CTR_ERR_TIMEOUT - CL_CTR_FIRST_ERROR] = 1;
	in = (struct cl_msg){ .type = CL_MSG_ANSWERS, .run = "r/s", .agent = 2, .seq = 9 };
	in.answers = (struct cl_msg_answers){ .answers = ans, .n_answers = 2, .t_send_us = 77 };
	roundtrip(&in, &out);
	assert_int_equal(out.answers.n_answers, 2);
	assert_int_equal(out.answers.t_send_us, 77);
	assert_string_equal(out.answers.answers[0].body, ans[0].body);
	assert_string_equal(out.answers.answers[0].request_id, "chatcmpl-7");
	assert_int_equal(out.answers.answers[0].attempts, 2);
	assert_int_equal(out.answers.answers[0].ttft_us, 1234);
	assert_int_equal(out.answers.answers[0].total_us, 99999);
	assert_int_equal(out.answers.answers[0].output_tokens, 17);
	assert_false(out.answers.answers[0].retryable);
	assert_null(out.answers.answers[0].error);
	assert_null(out.answers.answers[1].body);
	assert_string_equal(out.answers.answers[1].error, "500: internal");
	assert_int_equal(out.answers.answers[1].status, 500);
	assert_true(out.answers.answers[1].retryable);
	/* the later optional parts: content time, prompt tokens, the class, retries by class */
	assert_int_equal(out.answers.answers[0].ttfc_us, 2345);
	assert_int_equal(out.answers.answers[0].prompt_tokens, 41);
	assert_int_equal(out.answers.answers[0].err_class, 0);
	assert_int_equal(out.answers.answers[1].err_class, CL_CTR_ERR_HTTP_5XX);
	assert_int_equal(out.answers.answers[1].ttfc_us, 0);
	for (size_t k = 0; k < CL_GEN_ERR_CLASSES; k++) {
		assert_int_equal(out.answers.answers[0].retries[k], ans[0].retries[k]);
		assert_int_equal(out.answers.answers[1].retries[k], ans[1].retries[k]);
	}
	cl_msg_free(&out);
	{
		/* more retries than tries, or a class that is not an error, are refused */
		struct cl_err rerr = { 0 };
		msgpack_sbuffer rsb;
		msgpack_sbuffer_init(&rsb);
		ans[1].retries[CL_CTR_ERR_OTHER - CL_CTR_FIRST_ERROR] = 1;
		assert_err(cl_wire_encode(&in, &rsb, &rerr), CL_EINVAL, rerr, "retries");
		ans[1].retries[CL_CTR_ERR_OTHER - CL_CTR_FIRST_ERROR] = 0;
		ans[1].err_class = CL_CTR_COMPLETED;
		assert_err(cl_wire_encode(&in, &rsb, &rerr), CL_EINVAL, rerr, "class");
		ans[1].err_class = CL_CTR_ERR_HTTP_5XX;
		memset(ans[1].retries, 0, sizeof(ans[1].retries)); /* for the checks below */
		msgpack_sbuffer_destroy(&rsb);
	}

	/* refusals: the encoder refuses what the decoder would */
	struct cl_err err = { 0 };
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	ans[1].attempts = 0;
	assert_err(cl_wire_encode(&in, &sb, &err), CL_EINVAL, err, "attempts");
	ans[1].attempts = 1;
	ans[1].id = "a\r\nX-Evil: 1"; /* would split the X-Request-Id header */
	assert_err(cl_wire_encode(&in, &sb, &err), CL_EINVAL, err, "control character");
	struct cl_gen_item *many = calloc(CL_WIRE_MAX_ITEMS + 1, sizeof(*many));
	assert_non_null(many);
	for (size_t i = 0; i <= CL_WIRE_MAX_ITEMS; i++)
		many[i] = (struct cl_gen_item){ .id = "a", .body = "{}" };
	in = cmd_msg(CL_CMD_LEASE);
	in.cmd.lease.items = many;
	in.cmd.lease.n_items = CL_WIRE_MAX_ITEMS + 1;
	assert_err(cl_wire_encode(&in, &sb, &err), CL_ETOOBIG, err, "too many entries");
	free(many);
	assert_int_equal(sb.size, 0);
	msgpack_sbuffer_destroy(&sb);
}

/* REQUESTS (output.requests): a record round-trips field by field, durations never reached
 * travel absent and come back -1, and the encoder refuses a control character in an id. */
static void test_requests_message(void **state)
{
	(void)state;
	struct cl_req_record rec[2] = {
		{ .stage = 3, .id = "a1-0-7", .in_window = true, .start_us = 123456, .ttft_us = 50,
		  .ttfc_us = 60, .e2e_us = 900, .chunks = 16, .last_token_us = 880,
		  .http_status = 200, .prompt_tokens = 10, .output_tokens = 16,
		  .reasoning_tokens = 2, .status = "completed", .sent_us = 12, .ttfb_us = 45,
		  .conn = { .dns_us = 0, .connect_us = 120, .tls_us = 900, .send_us = 7, .wait_us = 30 },
		  .connects = 1 },
		{ .stage = 3, .id = "a1-0-8", .start_us = 123999, .ttft_us = -1, .ttfc_us = -1,
		  .e2e_us = 40, .last_token_us = -1, .http_status = 500, .status = "err_http_5xx",
		  .error = "500: \"boom\"\n", .sent_us = -1, .ttfb_us = -1,
		  .conn = { .dns_us = 3, .connect_us = -1, .tls_us = -1, .send_us = -1, .wait_us = -1 } },
	};
	struct cl_msg in = { .type = CL_MSG_REQUESTS, .run = "r/s", .agent = 2, .seq = 11 }, out;
	in.requests = (struct cl_msg_requests){ .records = rec, .n_records = 2, .dropped = 5,
						.t_send_us = 99 };
	roundtrip(&in, &out);
	assert_int_equal(out.requests.n_records, 2);
	assert_int_equal(out.requests.dropped, 5);
	assert_int_equal(out.requests.t_send_us, 99);
	assert_int_equal(out.requests.records[0].stage, 3);
	const struct cl_req_record *a = &out.requests.records[0], *b = &out.requests.records[1];
	assert_string_equal(a->id, "a1-0-7");
	assert_true(a->in_window);
	assert_int_equal(a->start_us, 123456);
	assert_int_equal(a->ttft_us, 50);
	assert_int_equal(a->ttfc_us, 60);
	assert_int_equal(a->e2e_us, 900);
	assert_int_equal(a->chunks, 16);
	assert_int_equal(a->last_token_us, 880);
	assert_int_equal(a->reasoning_tokens, 2);
	assert_string_equal(a->status, "completed");
	assert_string_equal(a->error, "");
	/* where the time went (issue 44): a 0 travels as 0, a stage never reached as -1 */
	assert_int_equal(a->sent_us, 12);
	assert_int_equal(a->ttfb_us, 45);
	assert_int_equal(a->conn.dns_us, 0);
	assert_int_equal(a->conn.connect_us, 120);
	assert_int_equal(a->conn.tls_us, 900);
	assert_int_equal(a->conn.send_us, 7);
	assert_int_equal(a->conn.wait_us, 30);
	assert_int_equal(a->connects, 1);
	assert_int_equal(b->sent_us, -1);
	assert_int_equal(b->ttfb_us, -1);
	assert_int_equal(b->conn.dns_us, 3);
	assert_int_equal(b->conn.connect_us, -1);
	assert_int_equal(b->conn.wait_us, -1);
	assert_int_equal(b->connects, 0);
	assert_false(b->in_window);
	assert_int_equal(b->ttft_us, -1);
	assert_int_equal(b->ttfc_us, -1);
	assert_int_equal(b->last_token_us, -1);
	assert_int_equal(b->e2e_us, 40);
	assert_int_equal(b->http_status, 500);
	assert_string_equal(b->error, rec[1].error);
	cl_msg_free(&out);

	struct cl_err err = { 0 };
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	snprintf(rec[1].id, sizeof(rec[1].id), "a\r\nX: 1");
	assert_err(cl_wire_encode(&in, &sb, &err), CL_EINVAL, err, "control character");
	assert_int_equal(sb.size, 0);
	msgpack_sbuffer_destroy(&sb);
}

static void test_cmd_probe(void **state)
{
	struct cl_target_plan t = sample_target();
	struct cl_msg in = cmd_msg(CL_CMD_PROBE), out;
	in.cmd.probe = (struct cl_cmd_probe){
		.timeout_us = 900000000,
		.request_timeout_us = 300000000,
		.consecutive = 2,
		.backoff_initial_us = 1000000,
		.backoff_max_us = 30000000,
		.seed = 99,
		.body_json = "{\"model\":\"kimi-k2\",\"stream\":true,\"max_tokens\":16}",
		.prompt = "Say just OK",
		.max_tokens = 16,
		.extra_body_json = "{\"chat_template_kwargs\":{\"thinking\":false}}",
		.target = &t,
	};
	roundtrip(&in, &out);
	check_cmd_envelope(&out, CL_CMD_PROBE);
	const struct cl_cmd_probe *p = &out.cmd.probe;
	assert_int_equal(p->timeout_us, 900000000);
	assert_int_equal(p->request_timeout_us, 300000000);
	assert_int_equal(p->consecutive, 2);
	assert_int_equal(p->backoff_initial_us, 1000000);
	assert_int_equal(p->backoff_max_us, 30000000);
	assert_int_equal(p->seed, 99);
	assert_string_equal(p->body_json, in.cmd.probe.body_json);
	assert_string_equal(p->prompt, "Say just OK");
	assert_int_equal(p->max_tokens, 16);
	assert_string_equal(p->extra_body_json, in.cmd.probe.extra_body_json);
	assert_non_null(p->target);
	assert_target_equal(p->target, &t);
	cl_msg_free(&out);

	/* The optional parts absent: they come back NULL, not "". */
	in.cmd.probe = (struct cl_cmd_probe){ .timeout_us = 1, .consecutive = 1 };
	roundtrip(&in, &out);
	assert_null(out.cmd.probe.body_json);
	assert_null(out.cmd.probe.prompt);
	assert_null(out.cmd.probe.extra_body_json);
	assert_null(out.cmd.probe.target);
	assert_int_equal(out.cmd.probe.timeout_us, 1);
	cl_msg_free(&out);
}

static void test_cmd_warmup_start(void **state)
{
	struct cl_msg in = cmd_msg(CL_CMD_WARMUP), out;
	in.cmd.warmup.stage = sample_stage();
	in.cmd.warmup.max_tokens = 64;
	in.cmd.warmup.request_timeout_us = 60000000;
	in.cmd.warmup.body_json = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}";
	roundtrip(&in, &out);
	check_cmd_envelope(&out, CL_CMD_WARMUP);
	assert_stage_equal(&out.cmd.warmup.stage, &in.cmd.warmup.stage);
	assert_int_equal(out.cmd.warmup.max_tokens, 64);
	assert_int_equal(out.cmd.warmup.request_timeout_us, 60000000);
	assert_string_equal(out.cmd.warmup.body_json, in.cmd.warmup.body_json);
	cl_msg_free(&out);

	in = cmd_msg(CL_CMD_START_AT);
	in.cmd.start_at.stage = sample_stage();
	in.cmd.start_at.stage.name = NULL; /* optional */
	in.cmd.start_at.stage.mode = CL_MODE_CONCURRENCY;
	in.cmd.start_at.stage.arrival = CL_ARRIVAL_POISSON;
	in.cmd.start_at.stage.requests = UINT64_MAX;
	in.cmd.start_at.start_at_coord_us = 1700000250000;
	roundtrip(&in, &out);
	check_cmd_envelope(&out, CL_CMD_START_AT);
	assert_stage_equal(&out.cmd.start_at.stage, &in.cmd.start_at.stage);
	assert_int_equal(out.cmd.start_at.start_at_coord_us, 1700000250000);
	cl_msg_free(&out);

	/* A concurrency past the one bound the scenario loader holds too is refused by the
	 * encoder as by the decoder (wire_bounds_test pushes every bound both ways), naming
	 * the field; the bound itself travels. */
	in.cmd.start_at.stage.concurrency = CL_PLAN_CONCURRENCY_MAX;
	roundtrip(&in, &out);
	assert_int_equal(out.cmd.start_at.stage.concurrency, CL_PLAN_CONCURRENCY_MAX);
	cl_msg_free(&out);
	in.cmd.start_at.stage.concurrency = CL_PLAN_CONCURRENCY_MAX + 1;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_err err = { 0 };
	assert_err(cl_wire_encode(&in, &sb, &err), CL_EINVAL, err,
		   "field 'args.stage.concurrency' is out of range (1000001, max 1000000)");
	assert_int_equal(sb.size, 0);
	msgpack_sbuffer_destroy(&sb);
}

/* PREPARE with a workload of many bodies of varied sizes. */
#define N_BODIES 3000
static void test_cmd_prepare(void **state)
{
	struct cl_request_body *bodies = calloc(N_BODIES, sizeof(*bodies));
	assert_non_null(bodies);
	for (size_t i = 0; i < N_BODIES; i++) {
		size_t pad = (i * 37) % 2000;
		char *j = malloc(pad + 128);
		assert_non_null(j);
		int n = snprintf(j, 128,
				 "{\"model\":\"m\",\"messages\":[{\"content\":\"prompt %zu ", i);
		memset(j + n, 'a' + (int)(i % 26), pad);
		strcpy(j + n + pad, "\"}]}");
		bodies[i].json = j;
		bodies[i].len = strlen(j);
		bodies[i].prompt_chars = (uint32_t)(pad + 10);
	}
	struct cl_msg in = cmd_msg(CL_CMD_PREPARE), out;
	in.cmd.prepare.target = sample_target();
	in.cmd.prepare.workload = (struct cl_workload_plan){ .bodies = bodies,
							     .n_bodies = N_BODIES,
							     .request_timeout_us = 600000000,
							     .max_tokens = 4096 };
	roundtrip(&in, &out);
	check_cmd_envelope(&out, CL_CMD_PREPARE);
	assert_target_equal(&out.cmd.prepare.target, &in.cmd.prepare.target);
	const struct cl_workload_plan *w = &out.cmd.prepare.workload;
	assert_int_equal(w->n_bodies, N_BODIES);
	assert_int_equal(w->request_timeout_us, 600000000);
	assert_int_equal(w->max_tokens, 4096);
	for (size_t i = 0; i < N_BODIES; i++) {
		assert_int_equal(w->bodies[i].len, bodies[i].len);
		assert_string_equal(w->bodies[i].json, bodies[i].json);
		assert_int_equal(w->bodies[i].prompt_chars, bodies[i].prompt_chars);
	}
	cl_msg_free(&out);

	/* A minimal target: the optional strings absent come back NULL. */
	in.cmd.prepare.target = (struct cl_target_plan){ .base_url = "http://127.0.0.1:9/v1" };
	in.cmd.prepare.workload.n_bodies = 1;
	roundtrip(&in, &out);
	assert_target_equal(&out.cmd.prepare.target, &in.cmd.prepare.target);
	assert_int_equal(out.cmd.prepare.workload.n_bodies, 1);
	cl_msg_free(&out);

	struct cl_workload_plan own = { .bodies = bodies, .n_bodies = N_BODIES };
	cl_workload_plan_free(&own);
}

/* A workload in parts: PREPARE with the first bodies, their max_tokens, the total and the
 * agent's first body; BODIES with the next part at its offset. */
static void test_cmd_prepare_parts(void **state)
{
	struct cl_request_body bodies[4] = {
		{ .json = "{\"a\":1}", .len = 7, .prompt_chars = 3, .max_tokens = 120 },
		{ .json = "{\"b\":2}", .len = 7, .prompt_chars = 4, .max_tokens = 0, .cls = 2 },
		{ .json = "{\"c\":3}",
		  .len = 7,
		  .prompt_chars = 5,
		  .max_tokens = 7,
		  .turn = 2,
		  .hist_at = 1,
		  .user_len = 5,
		  .at_us = 1500000 },
		{ .json = "{\"d\":4}", .len = 7, .prompt_chars = 6, .max_tokens = 4096 },
	};
	/* request classes: each one's name and headers, a body's class by its index */
	char *h1[] = { "X-Chatload-Class: batch", "X-Tenant: acme" };
	struct cl_class_plan classes[] = { { .name = "chat" },
					   { .name = "batch", .headers = h1, .n_headers = 2 },
					   { .name = "base" } };
	struct cl_msg in = cmd_msg(CL_CMD_PREPARE), out;
	in.cmd.prepare.target = sample_target();
	in.cmd.prepare.workload = (struct cl_workload_plan){ .bodies = bodies,
							     .n_bodies = 2,
							     .total_bodies = 4,
							     .first_body = 3,
							     .max_tokens = 9,
							     .think_time_us = 700000,
							     .trace_stride = 3,
							     .share = 1,
							     .per_stage = true,
							     .retag = "0a1b2c3d",
							     .tool_result_tokens = 64,
							     .tool_max_rounds = 0,
							     .classes = classes,
							     .n_classes = 3 };
	roundtrip(&in, &out);
	const struct cl_workload_plan *w = &out.cmd.prepare.workload;
	assert_int_equal(w->n_classes, 3);
	assert_string_equal(w->classes[1].name, "batch");
	assert_int_equal(w->classes[1].n_headers, 2);
	assert_string_equal(w->classes[1].headers[1], "X-Tenant: acme");
	assert_int_equal(w->classes[0].n_headers, 0);
	assert_int_equal(w->bodies[0].cls, 0);
	assert_int_equal(w->bodies[1].cls, 2);
	assert_int_equal(w->n_bodies, 2);
	assert_int_equal(w->total_bodies, 4);
	assert_int_equal(w->first_body, 3);
	assert_int_equal(w->bodies[0].max_tokens, 120);
	assert_int_equal(w->bodies[1].max_tokens, 0);
	assert_int_equal(w->bodies[1].turn, 0);
	assert_int_equal(w->think_time_us, 700000);
	assert_int_equal(w->trace_stride, 3);
	assert_int_equal(w->share, 1);
	assert_true(w->per_stage);
	assert_string_equal(w->retag, "0a1b2c3d");
	/* the agentic loop: both keys, even a max_rounds of 0 */
	assert_int_equal(w->tool_result_tokens, 64);
	assert_int_equal(w->tool_max_rounds, 0);
	cl_msg_free(&out);

	/* Without parts the decoder says the total is what came. */
	in.cmd.prepare.workload.total_bodies = 0;
	in.cmd.prepare.workload.first_body = 1;
	in.cmd.prepare.workload.share = 0; /* absent: all bodies */
	in.cmd.prepare.workload.per_stage = false;
	in.cmd.prepare.workload.retag[0] = '\0'; /* absent: no retagging */
	in.cmd.prepare.workload.tool_result_tokens = 0; /* absent: no agentic loop */
	in.cmd.prepare.workload.tool_max_rounds = 3;    /* not sent without it */
	in.cmd.prepare.workload.n_classes = 0;          /* absent: no classes */
	roundtrip(&in, &out);
	assert_int_equal(out.cmd.prepare.workload.tool_result_tokens, 0);
	assert_int_equal(out.cmd.prepare.workload.tool_max_rounds, 0);
	assert_int_equal(out.cmd.prepare.workload.total_bodies, 2);
	assert_int_equal(out.cmd.prepare.workload.first_body, 1);
	assert_int_equal(out.cmd.prepare.workload.share, 0);
	assert_int_equal(out.cmd.prepare.workload.n_classes, 0);
	assert_null(out.cmd.prepare.workload.classes);
	assert_false(out.cmd.prepare.workload.per_stage);
	assert_string_equal(out.cmd.prepare.workload.retag, "");
	cl_msg_free(&out);

	/* A first body beyond the total cannot be encoded. */
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_err err = { 0 };
	in.cmd.prepare.workload.first_body = 2;
	assert_int_equal(cl_wire_encode(&in, &sb, &err), CL_EINVAL);
	assert_non_null(strstr(err.msg, "first_body"));
	msgpack_sbuffer_destroy(&sb);

	struct cl_msg b = cmd_msg(CL_CMD_BODIES);
	b.cmd.bodies = (struct cl_cmd_bodies){ .offset = 2, .bodies = &bodies[2], .n_bodies = 2 };
	roundtrip(&b, &out);
	check_cmd_envelope(&out, CL_CMD_BODIES);
	assert_int_equal(out.cmd.bodies.offset, 2);
	assert_int_equal(out.cmd.bodies.n_bodies, 2);
	assert_string_equal(out.cmd.bodies.bodies[1].json, "{\"d\":4}");
	assert_int_equal(out.cmd.bodies.bodies[1].max_tokens, 4096);
	assert_int_equal(out.cmd.bodies.bodies[0].prompt_chars, 5);
	assert_int_equal(out.cmd.bodies.bodies[0].turn, 2);
	assert_int_equal(out.cmd.bodies.bodies[0].hist_at, 1);
	assert_int_equal(out.cmd.bodies.bodies[0].user_len, 5);
	assert_int_equal(out.cmd.bodies.bodies[0].at_us, 1500000);
	cl_msg_free(&out);

	/* A history place past the body's end is refused by the encoder. */
	bodies[2].user_len = 7;
	msgpack_sbuffer_init(&sb);
	assert_int_equal(cl_wire_encode(&b, &sb, &err), CL_EINVAL);
	assert_non_null(strstr(err.msg, "hist_at"));
	msgpack_sbuffer_destroy(&sb);
	/* ... and by the packer, which makes the same checks. */
	msgpack_sbuffer_init(&sb);
	assert_int_equal(cl_wire_pack_bodies(&bodies[2], 2, &sb, &err), CL_EINVAL);
	assert_non_null(strstr(err.msg, "bodies[0]"));
	assert_int_equal(sb.size, 0);
	msgpack_sbuffer_destroy(&sb);
	bodies[2].user_len = 5;

	/* A part packed once goes out as it is: what arrives is the packed bodies, not the
	 * ones the command also names. */
	msgpack_sbuffer_init(&sb);
	assert_int_equal(cl_wire_pack_bodies(&bodies[0], 2, &sb, &err), 0);
	b.cmd.bodies.packed = sb.data;
	b.cmd.bodies.packed_len = sb.size;
	roundtrip(&b, &out);
	assert_int_equal(out.cmd.bodies.n_bodies, 2);
	assert_string_equal(out.cmd.bodies.bodies[0].json, bodies[0].json);
	assert_int_equal(out.cmd.bodies.bodies[0].max_tokens, 120);
	assert_null(out.cmd.bodies.packed);
	cl_msg_free(&out);
	/* Bytes that are not one msgpack value fail the encoder's final check. */
	msgpack_sbuffer broken;
	msgpack_sbuffer_init(&broken);
	assert_int_equal(msgpack_sbuffer_write(&broken, sb.data, sb.size - 1), 0);
	b.cmd.bodies.packed = broken.data;
	b.cmd.bodies.packed_len = broken.size;
	struct cl_err err2 = { 0 };
	msgpack_sbuffer out_sb;
	msgpack_sbuffer_init(&out_sb);
	assert_int_not_equal(cl_wire_encode(&b, &out_sb, &err2), 0);
	assert_non_null(strstr(err2.msg, "cannot encode CMD"));
	msgpack_sbuffer_destroy(&out_sb);
	msgpack_sbuffer_destroy(&broken);
	msgpack_sbuffer_destroy(&sb);

	/* A workload sent wholly in parts: PREPARE carries the plan and no bodies. */
	in.cmd.prepare.workload.bodies = NULL;
	in.cmd.prepare.workload.n_bodies = 0;
	in.cmd.prepare.workload.total_bodies = 4;
	in.cmd.prepare.workload.first_body = 3;
	roundtrip(&in, &out);
	assert_int_equal(out.cmd.prepare.workload.n_bodies, 0);
	assert_int_equal(out.cmd.prepare.workload.total_bodies, 4);
	assert_int_equal(out.cmd.prepare.workload.first_body, 3);
	cl_msg_free(&out);
}

/* ---- Hostile input ------------------------------------------------------------------------ */

static void test_huge_counts(void **state)
{
	static const unsigned char arr32[] = { 0xdd, 0xff, 0x00, 0x00, 0x00 };
	static const unsigned char map32[] = { 0xdf, 0xff, 0xff, 0xff, 0xff };
	static const unsigned char map16[] = { 0xde, 0xff, 0xff, 0xa1, 'a', 0x01 };
	static const unsigned char str32[] = { 0xdb, 0x7f, 0xff, 0xff, 0xff, 'x' };
	static const unsigned char bin32[] = { 0xc6, 0xff, 0xff, 0xff, 0xf0 };
	static const unsigned char ext32[] = { 0xc9, 0xff, 0xff, 0xff, 0xf0, 0x01 };
	static const unsigned char nested[] = {
		0x81, 0xa1, 'k', 0xdd, 0x00, 0x01, 0x00, 0x00, 0xc0
	};
	struct {
		const unsigned char *p;
		size_t n;
		const char *needle;
	} cases[] = {
		{ arr32, sizeof(arr32),
		  "array at byte 0 claims 4278190080 elements but only 0 bytes" },
		{ map32, sizeof(map32), "map at byte 0 claims 8589934590 elements" },
		{ map16, sizeof(map16), "map at byte 0 claims 131070 elements but only 3 bytes" },
		{ str32, sizeof(str32), "claims 2147483647 bytes but only 1 remain" },
		{ bin32, sizeof(bin32), "claims 4294967280 bytes" },
		{ ext32, sizeof(ext32), "claims 4294967281 bytes" },
		{ nested, sizeof(nested),
		  "array at byte 3 claims 65536 elements but only 1 bytes" },
	};
	bool measure = alloc_hooks();
	size_t worst = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct cl_err err = { 0 };
		assert_err(cl_wire_check(cases[i].p, cases[i].n, NULL, &err), CL_EPARSE, err,
			   cases[i].needle);
		counted_bytes = 0;
		counting = 1;
		struct cl_msg m;
		int rc = cl_wire_decode(cases[i].p, cases[i].n, &m, &err);
		counting = 0;
		assert_err(rc, CL_EPARSE, err, cases[i].needle);
		assert_false(m.owned);
		cl_msg_free(&m);
		if (measure && counted_bytes > 1024) {
			print_error("case %zu: decode allocated %zu bytes\n", i, counted_bytes);
			fail();
		}
		if (counted_bytes > worst)
			worst = counted_bytes;
	}
	if (measure)
		print_message("hostile decodes allocated at most %zu bytes\n", worst);
	/* For scale: a valid ACK costs msgpack-c's first zone chunk plus the run string. */
	struct cl_msg ack = { .type = CL_MSG_ACK, .run = "run", .seq = 1 };
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	encode_ok(&ack, &sb);
	counted_bytes = 0;
	counting = 1;
	struct cl_err err = { 0 };
	int rc = decode_bytes(sb.data, sb.size, &err);
	counting = 0;
	assert_int_equal(rc, 0);
	msgpack_sbuffer_destroy(&sb);
	if (measure) {
		print_message("valid %zu-byte ACK: decode allocated %zu bytes\n", sb.size,
			      counted_bytes);
		assert_true(counted_bytes > 0);
		assert_true(counted_bytes <= 16384);
	} else {
		print_message("(allocation counts not measured: not an ASan build)\n");
	}
}

/* n nested one-entry maps {"k": {"k": ... nil}}. */
static void pack_nested(msgpack_sbuffer *sb, int n)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	for (int i = 0; i < n; i++) {
		msgpack_pack_map(&pk, 1);
		msgpack_pack_str_with_body(&pk, "k", 1);
	}
	msgpack_pack_nil(&pk);
}

static void test_depth(void **state)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_err err = { 0 };
	struct cl_wire_stats st;

	pack_nested(&sb, CL_WIRE_MAX_DEPTH);
	assert_int_equal(cl_wire_check(sb.data, sb.size, &st, &err), 0);
	assert_int_equal(st.max_depth, CL_WIRE_MAX_DEPTH);
	assert_int_equal(st.objects, 2 * CL_WIRE_MAX_DEPTH + 1);

	msgpack_sbuffer_clear(&sb);
	pack_nested(&sb, CL_WIRE_MAX_DEPTH + 1);
	assert_err(cl_wire_check(sb.data, sb.size, NULL, &err), CL_EPARSE, err,
		   "nesting deeper than 16");

	msgpack_sbuffer_clear(&sb);
	pack_nested(&sb, 64);
	bool measure = alloc_hooks();
	counted_bytes = 0;
	counting = 1;
	int rc = decode_bytes(sb.data, sb.size, &err);
	counting = 0;
	assert_err(rc, CL_EPARSE, err, "nesting deeper than 16");
	if (measure)
		assert_true(counted_bytes <= 1024);

	/* Arrays count too, empty ones included. */
	msgpack_sbuffer_clear(&sb);
	for (int i = 0; i < 40; i++)
		msgpack_sbuffer_write(&sb, "\x91", 1);
	msgpack_sbuffer_write(&sb, "\x90", 1);
	assert_err(cl_wire_check(sb.data, sb.size, NULL, &err), CL_EPARSE, err, "nesting deeper");
	msgpack_sbuffer_destroy(&sb);
}

static void test_malformed_bytes(void **state)
{
	struct cl_err err = { 0 };
	assert_err(cl_wire_check("", 0, NULL, &err), CL_EPARSE, err, "empty message");
	assert_err(decode_bytes("\xc1", 1, &err), CL_EPARSE, err, "invalid msgpack byte 0xc1");
	assert_err(decode_bytes("\x81\xa1k\xc1", 4, &err), CL_EPARSE, err, "0xc1 at byte 3");
	assert_err(decode_bytes("\xa3ok", 3, &err), CL_EPARSE, err, "truncated");
	assert_err(decode_bytes("\xcd\x01", 2, &err), CL_EPARSE, err, "truncated");
	assert_err(decode_bytes("\xa2ok", 3, &err), CL_EPROTO, err,
		   "message is a string, not a map");
	assert_err(decode_bytes("\x80", 1, &err), CL_EPROTO, err, "field 'proto' is missing");
	static char one;
	assert_err(cl_wire_check(&one, (size_t)CL_WIRE_MAX_MSG + 1, NULL, &err), CL_ETOOBIG, err,
		   "larger than");

	/* More objects than CL_WIRE_MAX_OBJECTS, each a single byte. */
	size_t n = (size_t)CL_WIRE_MAX_OBJECTS + 5;
	unsigned char *big = malloc(n);
	assert_non_null(big);
	big[0] = 0xdd;
	uint32_t cnt = (uint32_t)(n - 5);
	big[1] = (unsigned char)(cnt >> 24);
	big[2] = (unsigned char)(cnt >> 16);
	big[3] = (unsigned char)(cnt >> 8);
	big[4] = (unsigned char)cnt;
	memset(big + 5, 0xc0, n - 5);
	assert_err(cl_wire_check(big, n, NULL, &err), CL_ETOOBIG, err, "more than 2097152 objects");
	free(big);
}

/* A valid REPORT with metrics and a valid PREPARE; every strict prefix is refused as
 * truncated, and so is each with one byte more. */
static void test_truncations(void **state)
{
	struct cl_metrics *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	assert_int_equal(cl_metrics_init(m), 0);
	populate_metrics(m, 1);
	struct cl_msg rep = { .type = CL_MSG_REPORT, .run = "r", .agent = 1, .seq = 2 };
	rep.report = (struct cl_msg_report){ .kind = CL_REPORT_FINAL, .metrics = m, .error = "e" };

	struct cl_request_body bodies[] = { { .json = "{\"a\":1}", .len = 7, .prompt_chars = 1 },
					    { .json = "{\"b\":2}", .len = 7, .prompt_chars = 2 } };
	struct cl_msg prep = cmd_msg(CL_CMD_PREPARE);
	prep.cmd.prepare.target = sample_target();
	prep.cmd.prepare.workload.bodies = bodies;
	prep.cmd.prepare.workload.n_bodies = 2;

	const struct cl_msg *msgs[] = { &rep, &prep };
	for (size_t k = 0; k < 2; k++) {
		msgpack_sbuffer sb;
		msgpack_sbuffer_init(&sb);
		encode_ok(msgs[k], &sb);
		struct cl_err err = { 0 };
		assert_int_equal(decode_bytes(sb.data, sb.size, &err), 0);
		for (size_t len = 0; len < sb.size; len++) {
			int rc = decode_bytes(sb.data, len, &err);
			if (rc != CL_EPARSE) {
				print_error("prefix %zu of %zu: got %d \"%s\"\n", len, sb.size, rc,
					    err.msg);
				fail();
			}
		}
		msgpack_sbuffer_write(&sb, "\x00", 1);
		assert_err(decode_bytes(sb.data, sb.size, &err), CL_EPARSE, err,
			   "1 trailing bytes after the message");
		msgpack_sbuffer_destroy(&sb);
	}
	cl_metrics_destroy(m);
	free(m);
}

/* A hand-built map: each entry is a key and a typed value, so a test can break one. */
enum vt { V_UINT, V_INT, V_DBL, V_STR, V_BOOL, V_NIL, V_ARR, V_MAP, V_OMIT };
struct kv {
	const char *k;
	enum vt t;
	int64_t i;
	double d;
	const char *s;
};

#define KV_U(key, v)                                                                               \
	{                                                                                          \
		.k = (key), .t = V_UINT, .i = (v)                                                  \
	}
#define KV_I(key, v)                                                                               \
	{                                                                                          \
		.k = (key), .t = V_INT, .i = (v)                                                   \
	}
#define KV_D(key, v)                                                                               \
	{                                                                                          \
		.k = (key), .t = V_DBL, .d = (v)                                                   \
	}
#define KV_S(key, v)                                                                               \
	{                                                                                          \
		.k = (key), .t = V_STR, .s = (v)                                                   \
	}
#define KV_T(key, tt)                                                                              \
	{                                                                                          \
		.k = (key), .t = (tt)                                                              \
	}

static void pack_kvs(msgpack_sbuffer *sb, const struct kv *kv, size_t n)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	size_t live = 0;
	for (size_t i = 0; i < n; i++)
		live += kv[i].t != V_OMIT;
	msgpack_pack_map(&pk, live);
	for (size_t i = 0; i < n; i++) {
		if (kv[i].t == V_OMIT)
			continue;
		msgpack_pack_str_with_body(&pk, kv[i].k, strlen(kv[i].k));
		switch (kv[i].t) {
		case V_UINT:
			msgpack_pack_uint64(&pk, (uint64_t)kv[i].i);
			break;
		case V_INT:
			msgpack_pack_int64(&pk, kv[i].i);
			break;
		case V_DBL:
			msgpack_pack_double(&pk, kv[i].d);
			break;
		case V_STR:
			msgpack_pack_str_with_body(&pk, kv[i].s, strlen(kv[i].s));
			break;
		case V_BOOL:
			msgpack_pack_true(&pk);
			break;
		case V_NIL:
			msgpack_pack_nil(&pk);
			break;
		case V_ARR:
			msgpack_pack_array(&pk, 0);
			break;
		case V_MAP:
			msgpack_pack_map(&pk, 0);
			break;
		case V_OMIT:
			break;
		}
	}
}

static int decode_kvs(const struct kv *kv, size_t n, struct cl_err *err)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	pack_kvs(&sb, kv, n);
	int rc = decode_bytes(sb.data, sb.size, err);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

static const struct kv poll_kvs[] = {
	KV_U("proto", 1),       KV_S("type", "POLL"),    KV_S("run", "r"),
	KV_U("agent", 3),       KV_U("seq", 9),          KV_S("state", "running"),
	KV_U("applied_seq", 4), KV_D("cpu_pct", 55.5),   KV_I("rss_bytes", 1 << 20),
	KV_I("inflight", 12),   KV_I("loop_lag_us", 40), KV_I("t_send_us", -3),
	KV_S("error", "boom"),
};
#define N_POLL (sizeof(poll_kvs) / sizeof(*poll_kvs))

static void test_wrong_types(void **state)
{
	struct cl_err err = { 0 };
	assert_int_equal(decode_kvs(poll_kvs, N_POLL, &err), 0);
	for (size_t i = 0; i < N_POLL; i++) {
		struct kv kv[N_POLL];
		memcpy(kv, poll_kvs, sizeof(kv));
		char needle[64];
		snprintf(needle, sizeof(needle), "field '%s' must be", kv[i].k);
		/* A string where a number belongs, a number where a string belongs. */
		enum vt orig = kv[i].t;
		kv[i].t = orig == V_STR ? V_UINT : V_STR;
		kv[i].s = "7";
		kv[i].i = 7;
		assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err, needle);
		/* Containers and nil are wrong for every field of POLL. */
		kv[i].t = V_MAP;
		assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err, needle);
		kv[i].t = V_NIL;
		assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err, needle);
		/* Missing: refused naming the field, except the optional error. */
		kv[i].t = V_OMIT;
		int rc = decode_kvs(kv, N_POLL, &err);
		if (strcmp(kv[i].k, "error") == 0) {
			assert_int_equal(rc, 0);
		} else {
			snprintf(needle, sizeof(needle), "field '%s' is missing", kv[i].k);
			assert_err(rc, CL_EPROTO, err, needle);
		}
	}
	/* Ranges: negative where unsigned, negative sizes, NaN, uint32 overflow. */
	struct kv kv[N_POLL];
	memcpy(kv, poll_kvs, sizeof(kv));
	kv[6] = (struct kv)KV_I("applied_seq", -1);
	assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err,
		   "POLL: field 'applied_seq' must be an unsigned integer, not a negative integer");
	memcpy(kv, poll_kvs, sizeof(kv));
	kv[8] = (struct kv)KV_I("rss_bytes", -1);
	assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err, "'rss_bytes' is out of range");
	memcpy(kv, poll_kvs, sizeof(kv));
	kv[7] = (struct kv)KV_D("cpu_pct", NAN);
	assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err, "'cpu_pct' must be a finite");
	memcpy(kv, poll_kvs, sizeof(kv));
	kv[3] = (struct kv)KV_U("agent", 1ll << 32);
	assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err, "'agent' is out of range");
	memcpy(kv, poll_kvs, sizeof(kv));
	kv[7] = (struct kv)KV_U("cpu_pct", 50); /* an integer is a number */
	assert_int_equal(decode_kvs(kv, N_POLL, &err), 0);
	memcpy(kv, poll_kvs, sizeof(kv));
	kv[5].s = "sleeping";
	assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err,
		   "field 'state' has unknown value 'sleeping'");
}

static void test_version_type_cmd(void **state)
{
	struct cl_err err = { 0 };
	struct kv kv[N_POLL];
	memcpy(kv, poll_kvs, sizeof(kv));
	kv[0].i = 2;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	pack_kvs(&sb, kv, N_POLL);
	struct cl_msg m;
	int rc = cl_wire_decode(sb.data, sb.size, &m, &err);
	assert_err(rc, CL_EVERSION, err,
		   "protocol version 2 is not supported (this side speaks version 1)");
	assert_int_equal(m.proto, 2); /* kept for the caller's log line */
	assert_false(m.owned);
	cl_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);

	/* With another version, even an otherwise unreadable message names the version. */
	struct kv v2[] = { KV_U("proto", 2), KV_U("type", 5) };
	assert_err(decode_kvs(v2, 2, &err), CL_EVERSION, err, "version 2");

	memcpy(kv, poll_kvs, sizeof(kv));
	kv[1].s = "HELO";
	assert_err(decode_kvs(kv, N_POLL, &err), CL_EPROTO, err, "unknown message type 'HELO'");

	struct kv cmd[] = { KV_U("proto", 1),   KV_S("type", "CMD"),  KV_S("run", ""),
			    KV_U("agent", 1),   KV_U("seq", 1),       KV_S("cmd", "JUMP"),
			    KV_U("cmd_seq", 1), KV_I("t_coord_us", 5) };
	assert_err(decode_kvs(cmd, 8, &err), CL_EPROTO, err,
		   "CMD: field 'cmd' has unknown command 'JUMP'");
	cmd[5].s = "STOP"; /* STOP needs args */
	assert_err(decode_kvs(cmd, 8, &err), CL_EPROTO, err, "CMD: field 'args' is missing");
	cmd[5].s = "QUIT";
	assert_int_equal(decode_kvs(cmd, 8, &err), 0);
}

static void test_caps_and_content(void **state)
{
	char host[CL_WIRE_MAX_HOST + 2];
	memset(host, 'h', sizeof(host));
	host[CL_WIRE_MAX_HOST] = '\0';
	struct kv hello[] = { KV_U("proto", 1),   KV_S("type", "HELLO"), KV_S("run", ""),
			      KV_U("agent", 0),   KV_U("seq", 1),        KV_S("version", "0.1.0"),
			      KV_S("host", host), KV_U("workers", 2),    KV_T("caps", V_ARR),
			      KV_S("token", ""),  KV_I("pid", 1),        KV_I("t_send_us", 1) };
	size_t n = sizeof(hello) / sizeof(*hello);
	struct cl_err err = { 0 };
	assert_int_equal(decode_kvs(hello, n, &err), 0); /* 255 bytes: at the cap */
	host[CL_WIRE_MAX_HOST] = 'h';
	host[CL_WIRE_MAX_HOST + 1] = '\0';
	assert_err(decode_kvs(hello, n, &err), CL_ETOOBIG, err,
		   "HELLO: field 'host' is too long (256 bytes, max 255)");

	/* The encoder refuses the same, and leaves the buffer as it was. */
	struct cl_msg m = { .type = CL_MSG_HELLO };
	m.hello.host = host;
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_sbuffer_write(&sb, "xyz", 3);
	assert_err(cl_wire_encode(&m, &sb, &err), CL_ETOOBIG, err,
		   "cannot encode HELLO: field 'host' is too long (256 bytes, max 255)");
	assert_int_equal(sb.size, 3);

	hello[6].s = "evil\x1b[2Jhost";
	assert_err(decode_kvs(hello, n, &err), CL_EPROTO, err,
		   "field 'host' contains a control character");
	m.hello.host = "evil\nhost";
	assert_err(cl_wire_encode(&m, &sb, &err), CL_EINVAL, err, "contains a control character");
	hello[6].s = "ok";

	/* A NUL inside a string (msgpack allows it; C strings cannot hold it). */
	static const char nul_run[] = "\x85\xa5proto\x01\xa4type\xa3"
				      "ACK\xa3run\xa3r\x00x\xa5"
				      "agent\x01\xa3seq\x01";
	assert_err(decode_bytes(nul_run, sizeof(nul_run) - 1, &err), CL_EPROTO, err,
		   "ACK: field 'run' contains a NUL byte");

	/* Unknown keys are ignored; duplicates of known keys are not. */
	struct kv extra[] = { KV_U("proto", 1),      KV_S("type", "ACK"), KV_S("run", ""),
			      KV_U("agent", 0),      KV_U("seq", 1),      KV_T("zz_future", V_MAP),
			      KV_T("zz_more", V_ARR) };
	assert_int_equal(decode_kvs(extra, 7, &err), 0);
	extra[6] = (struct kv)KV_U("seq", 2);
	assert_err(decode_kvs(extra, 7, &err), CL_EPROTO, err, "field 'seq' is given twice");
	/* A non-string key. */
	static const char intkey[] = "\x86\xa5proto\x01\xa4type\xa3"
				     "ACK\xa3run\xa0\xa5"
				     "agent\x01\xa3seq\x01\x07\x07";
	assert_err(decode_bytes(intkey, sizeof(intkey) - 1, &err), CL_EPROTO, err,
		   "has a key that is an integer");

	/* Too many caps, a header with CR LF (would split the HTTP request). */
	char *caps[CL_WIRE_MAX_CAPS + 1];
	for (size_t i = 0; i <= CL_WIRE_MAX_CAPS; i++)
		caps[i] = "c";
	m.hello = (struct cl_msg_hello){ .caps = caps, .n_caps = CL_WIRE_MAX_CAPS + 1 };
	assert_err(cl_wire_encode(&m, &sb, &err), CL_ETOOBIG, err, "'caps' has too many entries");
	char *hdr[] = { "X-A: 1\r\nX-Injected: 2" };
	struct cl_msg p = cmd_msg(CL_CMD_PREPARE);
	p.cmd.prepare.target =
	    (struct cl_target_plan){ .base_url = "http://x/v1", .headers = hdr, .n_headers = 1 };
	assert_err(cl_wire_encode(&p, &sb, &err), CL_EINVAL, err,
		   "CMD: field 'args.target.headers[0]' contains a control character");
	assert_int_equal(sb.size, 3);
	msgpack_sbuffer_destroy(&sb);
}

/* Deep fields are named by their path; bad metrics and missing parts are refused. */
static void test_nested_errors(void **state)
{
	struct cl_err err = { 0 };
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_request_body bodies[3] = { { .json = "{}" }, { .json = "{}" }, { .json = "{}" } };
	struct cl_msg p = cmd_msg(CL_CMD_PREPARE);
	p.cmd.prepare.target = sample_target();
	p.cmd.prepare.workload = (struct cl_workload_plan){ .bodies = bodies, .n_bodies = 3 };
	encode_ok(&p, &sb);
	/* Turn the last body's prompt_chars value (0, a positive fixint) into -1. */
	char *hit = memmem(sb.data, sb.size, "prompt_chars\x00", 13);
	char *last = NULL;
	while (hit) {
		last = hit;
		hit =
		    memmem(hit + 1, sb.size - (size_t)(hit + 1 - sb.data), "prompt_chars\x00", 13);
	}
	assert_non_null(last);
	last[12] = (char)0xff;
	assert_err(decode_bytes(sb.data, sb.size, &err), CL_EPROTO, err,
		   "CMD: field 'args.workload.bodies[2].prompt_chars' must be an unsigned integer");

	/* START_AT with an unknown arrival. */
	struct cl_msg s = cmd_msg(CL_CMD_START_AT);
	s.cmd.start_at.stage = sample_stage();
	encode_ok(&s, &sb);
	char *g = memmem(sb.data, sb.size, "gamma", 5);
	assert_non_null(g);
	memcpy(g, "gamme", 5);
	assert_err(decode_bytes(sb.data, sb.size, &err), CL_EPROTO, err,
		   "field 'args.stage.arrival' has unknown value 'gamme'");

	/* A report whose metrics name an unknown histogram. */
	struct cl_metrics *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	assert_int_equal(cl_metrics_init(m), 0);
	cl_hist_record(&m->lat[CL_LAT_TTFT], 1000);
	struct cl_msg r = { .type = CL_MSG_REPORT, .run = "r" };
	r.report = (struct cl_msg_report){ .kind = CL_REPORT_INTERVAL, .metrics = m };
	encode_ok(&r, &sb);
	char *t = memmem(sb.data, sb.size, "ttft", 4);
	assert_non_null(t);
	memcpy(t, "ttfx", 4);
	assert_err(decode_bytes(sb.data, sb.size, &err), CL_EPROTO, err,
		   "REPORT: field 'metrics' is invalid");
	assert_non_null(strstr(err.msg, "ttfx"));
	/* Kinds other than probe need metrics; probe needs readiness. */
	r.report.metrics = NULL;
	assert_err(cl_wire_encode(&r, &sb, &err), CL_EINVAL, err, "'metrics' is required");
	struct kv rep[] = { KV_U("proto", 1), KV_S("type", "REPORT"), KV_S("run", ""),
			    KV_U("agent", 0), KV_U("seq", 1),         KV_S("kind", "interval"),
			    KV_U("stage", 0), KV_U("interval", 0),    KV_I("t_send_us", 0) };
	assert_err(decode_kvs(rep, 9, &err), CL_EPROTO, err, "REPORT: field 'metrics' is missing");
	rep[5].s = "probe";
	assert_err(decode_kvs(rep, 9, &err), CL_EPROTO, err,
		   "REPORT: field 'readiness' is missing");
	cl_metrics_destroy(m);
	free(m);
	msgpack_sbuffer_destroy(&sb);
}

static void test_encode_refusals(void **state)
{
	struct cl_err err = { 0 };
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_msg m = { 0 };
	assert_err(cl_wire_encode(&m, &sb, &err), CL_EINVAL, err, "unknown type 0");
	m = (struct cl_msg){ .type = CL_MSG_POLL };
	m.poll.state = CL_AGENT__COUNT;
	assert_err(cl_wire_encode(&m, &sb, &err), CL_EINVAL, err,
		   "'state' has an unknown value (7)");
	m.poll.state = CL_AGENT_IDLE;
	m.poll.cpu_pct = INFINITY;
	assert_err(cl_wire_encode(&m, &sb, &err), CL_EINVAL, err, "'cpu_pct' must be a finite");
	m.poll.cpu_pct = 0;
	m.poll.loop_lag_us = -1;
	assert_err(cl_wire_encode(&m, &sb, &err), CL_EINVAL, err,
		   "'loop_lag_us' must not be negative");
	m = (struct cl_msg){ .type = CL_MSG_WELCOME };
	assert_err(cl_wire_encode(&m, &sb, &err), CL_EINVAL, err,
		   "'report_interval_us' must be positive");
	struct cl_msg c = cmd_msg(CL_CMD_START_AT);
	c.cmd.start_at.stage = sample_stage();
	c.cmd.start_at.stage.ramp_us = -2;
	assert_err(cl_wire_encode(&c, &sb, &err), CL_EINVAL, err,
		   "CMD: field 'args.stage.ramp_us' must not be negative");
	c = cmd_msg(CL_CMD__COUNT);
	assert_err(cl_wire_encode(&c, &sb, &err), CL_EINVAL, err, "'cmd' has an unknown value (11)");
	assert_int_equal(sb.size, 0);
	msgpack_sbuffer_destroy(&sb);
}

/* A decode that fails late (after many allocations) leaks nothing: LeakSanitizer checks. */
static void test_partial_failure_frees(void **state)
{
	enum { N = 200 };
	struct cl_request_body *bodies = calloc(N, sizeof(*bodies));
	assert_non_null(bodies);
	for (size_t i = 0; i < N; i++)
		bodies[i].json = i == N - 1 ? "{\"last\":\"BAD\"}" : "{\"x\":\"body\"}";
	struct cl_msg p = cmd_msg(CL_CMD_PREPARE);
	p.cmd.prepare.target = sample_target();
	p.cmd.prepare.workload = (struct cl_workload_plan){ .bodies = bodies, .n_bodies = N };
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	encode_ok(&p, &sb);
	char *bad = memmem(sb.data, sb.size, "BAD", 3);
	assert_non_null(bad);
	bad[0] = 0x01; /* a control character is fine in JSON text... */
	struct cl_err err = { 0 };
	assert_int_equal(decode_bytes(sb.data, sb.size, &err), 0);
	bad[0] = 0x00; /* ... a NUL is not */
	struct cl_msg out;
	assert_err(cl_wire_decode(sb.data, sb.size, &out, &err), CL_EPROTO, err,
		   "'args.workload.bodies[199].json' contains a NUL byte");
	assert_false(out.owned);
	assert_int_equal(out.type, CL_MSG_CMD);
	assert_int_equal(out.seq, 77);
	cl_msg_free(&out);
	free(bodies);
	msgpack_sbuffer_destroy(&sb);

	/* cl_msg_free on NULL, a zeroed message, and a borrowed one (frees nothing). */
	cl_msg_free(NULL);
	struct cl_msg z = { 0 };
	cl_msg_free(&z);
	char run[] = "stack";
	struct cl_msg b = { .type = CL_MSG_REFUSE, .run = run };
	b.refuse.reason = run;
	cl_msg_free(&b);
	assert_null(b.run);
	assert_string_equal(run, "stack");
}

/* ---- Helpers the protocol prescribes -------------------------------------------------- */

static void test_token_equal(void **state)
{
	assert_true(cl_wire_token_equal("s3cret", "s3cret"));
	assert_false(cl_wire_token_equal("s3cret", "s3creT"));
	assert_false(cl_wire_token_equal("s3cret", "X3cret"));
	assert_false(cl_wire_token_equal("s3cret", "s3cre"));
	assert_false(cl_wire_token_equal("s3cret", "s3crett"));
	assert_false(cl_wire_token_equal("s3cret", ""));
	assert_false(cl_wire_token_equal("", "x"));
	assert_true(cl_wire_token_equal("", ""));
	assert_true(cl_wire_token_equal(NULL, ""));
	assert_true(cl_wire_token_equal("", NULL));
	assert_false(cl_wire_token_equal("a", NULL));
}

static void test_clock_est(void **state)
{
	struct cl_clock_est e = { 0 };
	int64_t off, rtt;
	assert_false(cl_clock_est_get(&e, &off, &rtt));
	assert_int_equal(cl_clock_est_to_local(&e, 500), 500);

	/* The coordinator's clock runs 1,000,000 us ahead.  Asymmetric delays bias a sample by
	 * half the asymmetry; the lowest-rtt sample is the least biased. */
	const int64_t truth = 1000000;
	struct {
		int64_t up, down;
	} d[] = { { 900, 100 }, { 300, 300 }, { 5000, 40 }, { 120, 80 }, { 2000, 2000 } };
	int64_t t = 10000000;
	for (size_t i = 0; i < 5; i++) {
		int64_t send = t, coord = t + d[i].up + truth, recv = t + d[i].up + d[i].down;
		assert_true(cl_clock_est_add(&e, send, 0, coord, recv));
		t += 1000000;
	}
	assert_true(cl_clock_est_get(&e, &off, &rtt));
	assert_int_equal(rtt, 200);                    /* {120, 80} */
	assert_int_equal(off, truth + (120 - 80) / 2); /* biased by half the asymmetry */
	assert_int_equal(cl_clock_est_to_local(&e, 50000000 + off), 50000000);

	/* A held long poll with its arrival time stamped is exact despite the 1 s hold. */
	struct cl_clock_est h = { 0 };
	int64_t send = 100, arrive = 100 + 50 + truth, reply = arrive + 1000000;
	assert_true(cl_clock_est_add(&h, send, arrive, reply, send + 50 + 1000000 + 50));
	assert_true(cl_clock_est_get(&h, &off, &rtt));
	assert_int_equal(rtt, 100);
	assert_int_equal(off, truth);
	/* Without the arrival time the same exchange would look like a 1 s round trip. */
	assert_true(cl_clock_est_add(&h, send, 0, reply, send + 50 + 1000000 + 50));
	assert_true(cl_clock_est_get(&h, &off, &rtt));
	assert_int_equal(rtt, 100); /* the good sample still wins */

	/* Nonsense (reply before request) is ignored. */
	assert_false(cl_clock_est_add(&h, 1000, 0, 5, 999));

	/* The window forgets: after CL_CLOCK_EST_WINDOW worse samples the old best is gone. */
	for (int i = 0; i < CL_CLOCK_EST_WINDOW; i++)
		assert_true(cl_clock_est_add(&h, 0, 0, truth + 2000 + 500, 5000));
	assert_true(cl_clock_est_get(&h, &off, &rtt));
	assert_int_equal(rtt, 5000);
	assert_int_equal(off, truth);
	assert_int_equal(h.n, CL_CLOCK_EST_WINDOW);
	assert_int_equal(h.total, CL_CLOCK_EST_WINDOW + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_generate_messages),
		cmocka_unit_test(test_requests_message),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_poll),
		cmocka_unit_test(test_report_metrics),
		cmocka_unit_test(test_report_restamp),
		cmocka_unit_test(test_report_spread),
		cmocka_unit_test(test_report_probe),
		cmocka_unit_test(test_report_stalls),
		cmocka_unit_test(test_report_sources),
		cmocka_unit_test(test_replies),
		cmocka_unit_test(test_cmd_plain),
		cmocka_unit_test(test_cmd_probe),
		cmocka_unit_test(test_cmd_warmup_start),
		cmocka_unit_test(test_cmd_prepare),
		cmocka_unit_test(test_cmd_prepare_parts),
		cmocka_unit_test(test_huge_counts),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_malformed_bytes),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_version_type_cmd),
		cmocka_unit_test(test_caps_and_content),
		cmocka_unit_test(test_nested_errors),
		cmocka_unit_test(test_encode_refusals),
		cmocka_unit_test(test_partial_failure_frees),
		cmocka_unit_test(test_token_equal),
		cmocka_unit_test(test_clock_est),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
