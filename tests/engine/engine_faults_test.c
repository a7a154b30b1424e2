/* Every simulator fault lands in the right error class, the engine keeps running after it,
 * and no stream slot leaks: started == completed + errors + cut, inflight back to 0.  Also
 * connection refused, TLS against a plain port, and HTTP 4xx. */
#include "harness.h"

#include "chatload/buf.h"
#include "chatload/clock.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"

static uint64_t errors(const struct cl_metrics *m)
{
	uint64_t n = 0;
	for (int i = CL_CTR_FIRST_ERROR; i <= CL_CTR_LAST_ERROR; i++)
		n += m->ctr[i];
	return n;
}

static void assert_balanced(const struct cl_metrics *m, struct h_engine *he)
{
	assert_int_equal(m->ctr[CL_CTR_STARTED],
			 m->ctr[CL_CTR_COMPLETED] + errors(m) + m->ctr[CL_CTR_CUT]);
	assert_int_equal(cl_engine_inflight(he->e), 0);
	assert_int_equal(cl_engine_state(he->e), CL_ENGINE_DONE);
}

/* What the engine must call each simulator fault. */
static const char *expected_status(const char *fault)
{
	static const struct {
		const char *fault, *status;
	} map[] = {
		{ "500", "err_http_5xx" },
		{ "429", "err_http_429" },
		{ "drop", "err_stream_incomplete" },
		{ "malformed", "err_stream_malformed" },
		{ "error-chunk", "err_stream_error" },
		{ "no-usage", "completed" },
		{ "no-done", "err_stream_incomplete" },
		{ "stall", "err_timeout" },
	};
	if (!fault)
		return "completed";
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].fault, fault) == 0)
			return map[i].status;
	return "?";
}

/* One of each fault, in order, one request at a time, then clean requests: each is classed
 * right and the engine goes on. */
static void test_each_fault_in_order(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft",
			       "5ms",
			       "--itl",
			       "1ms",
			       "--output-tokens",
			       "10",
			       "--fault-schedule",
			       "500@1,429@2,drop@3,malformed@4,error-chunk@5,no-usage@6,no-done@7,"
			       "stall@8",
			       "--stall-for",
			       "3s",
			       "--stall-at",
			       "3",
			       NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .max_tokens = 32, .request_timeout_us = 600000 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(1, 10, 0);
	struct cl_metrics m;
	int64_t t0 = cl_mono_us();
	assert_int_equal(h_run(&he, &p, 0, 20000000, &m), 0);
	int64_t took = cl_mono_us() - t0;
	h_sim_stop(&sim);

	assert_int_equal(m.ctr[CL_CTR_STARTED], 10);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 3);
	assert_int_equal(m.ctr[CL_CTR_ERR_HTTP_5XX], 1);
	assert_int_equal(m.ctr[CL_CTR_ERR_HTTP_429], 1);
	assert_int_equal(m.ctr[CL_CTR_ERR_STREAM_INCOMPLETE], 2);
	assert_int_equal(m.ctr[CL_CTR_ERR_STREAM_MALFORMED], 1);
	assert_int_equal(m.ctr[CL_CTR_ERR_STREAM_ERROR], 1);
	assert_int_equal(m.ctr[CL_CTR_ERR_TIMEOUT], 1);
	assert_int_equal(m.ctr[CL_CTR_ERR_CONNECT] + m.ctr[CL_CTR_ERR_OTHER] +
			     m.ctr[CL_CTR_ERR_TLS] + m.ctr[CL_CTR_ERR_HTTP_4XX],
			 0);
	assert_int_equal(m.ctr[CL_CTR_CUT], 0);
	/* no-usage falls back to counting chunks: 10 tokens all the same. */
	assert_int_equal(m.ctr[CL_CTR_USAGE_FROM_CHUNKS], 1);
	assert_int_equal(m.ctr[CL_CTR_USAGE_FROM_SERVER], 2);
	assert_int_equal(cl_hist_count(&m.cnt[CL_CNT_OUTPUT_TOKENS]), 3);
	assert_int_equal(cl_hist_min(&m.cnt[CL_CNT_OUTPUT_TOKENS]), 10);
	assert_int_equal(cl_hist_max(&m.cnt[CL_CNT_OUTPUT_TOKENS]), 10);
	/* Latencies only from the completed ones. */
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_TTFT]), 3);
	assert_int_equal(cl_hist_count(&m.lat[CL_LAT_E2E]), 3);
	assert_balanced(&m, &he);
	/* The stall was cut by the 600 ms request timeout, not waited out (3 s). */
	check_cmp(took, <, 2500000);

	/* The first four error bodies are kept, with their class and status. */
	assert_int_equal(m.n_err_samples, CL_ERR_SAMPLES_MAX);
	assert_int_equal(m.err_samples[0].ctr, CL_CTR_ERR_HTTP_5XX);
	assert_int_equal(m.err_samples[0].http_status, 500);
	assert_non_null(strstr(m.err_samples[0].body, "error"));
	assert_int_equal(m.err_samples[1].ctr, CL_CTR_ERR_HTTP_429);
	assert_int_equal(m.err_samples[1].http_status, 429);
	assert_int_equal(m.err_samples[2].ctr, CL_CTR_ERR_STREAM_INCOMPLETE);
	assert_int_equal(m.err_samples[3].ctr, CL_CTR_ERR_STREAM_MALFORMED);
	/* Each says what happened in words before the detail (error_text.c). */
	printf("  samples: %s\n           %s\n", m.err_samples[0].body, m.err_samples[2].body);
	assert_ptr_equal(
	    strstr(m.err_samples[0].body, "HTTP 500, the server failed: see its logs: "),
	    m.err_samples[0].body);
	assert_non_null(strstr(m.err_samples[2].body, "before data: [DONE]"));
	check_cmp(strlen(m.err_samples[3].body), >, 0);

	/* Per request, joined with the truth log. */
	struct h_jsonl log, truth;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	assert_int_equal(h_jsonl_load(&truth, sim.truth_path), 0);
	assert_int_equal(log.n, 10);
	for (size_t i = 0; i < log.n; i++) {
		json_t *r = log.rows[i];
		json_t *t = h_jsonl_find(&truth, "x_request_id", h_str(r, "id"));
		assert_non_null(t);
		const char *fault = h_str(t, "fault");
		printf("  %-6s fault %-12s -> %s\n", h_str(r, "id"), fault ? fault : "-",
		       h_str(r, "status"));
		assert_string_equal(h_str(r, "status"), expected_status(fault));
		if (fault && strcmp(fault, "no-usage") == 0) {
			assert_string_equal(h_str(r, "usage"), "chunks");
			assert_int_equal(h_int(r, "tokens", -1), h_int(t, "output_tokens", -2));
		}
		if (strcmp(h_str(r, "status"), "completed") != 0)
			assert_non_null(h_str(r, "error"));
	}
	h_jsonl_free(&log);
	h_jsonl_free(&truth);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* Random faults under concurrency, two workers: every request's class matches the fault the
 * simulator says it injected, and nothing leaks. */
static void test_random_faults_concurrent(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--ttft",
			       "3ms",
			       "--itl",
			       "1ms",
			       "--output-tokens",
			       "8",
			       "--seed",
			       "11",
			       "--fault-500",
			       "0.06",
			       "--fault-429",
			       "0.06",
			       "--fault-drop",
			       "0.06",
			       "--fault-malformed",
			       "0.06",
			       "--fault-error-chunk",
			       "0.06",
			       "--fault-no-usage",
			       "0.06",
			       "--fault-no-done",
			       "0.06",
			       "--fault-stall",
			       "0.03",
			       "--stall-for",
			       "2s",
			       NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 2, .max_tokens = 32, .request_timeout_us = 500000 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(8, 200, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 30000000, &m), 0);
	h_sim_stop(&sim);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 200);
	assert_balanced(&m, &he);

	struct h_jsonl log, truth;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	assert_int_equal(h_jsonl_load(&truth, sim.truth_path), 0);
	assert_int_equal(log.n, 200);
	size_t faulted = 0, completed = 0;
	for (size_t i = 0; i < log.n; i++) {
		json_t *r = log.rows[i];
		json_t *t = h_jsonl_find(&truth, "x_request_id", h_str(r, "id"));
		assert_non_null(t);
		const char *fault = h_str(t, "fault");
		const char *st = h_str(r, "status");
		if (strcmp(st, expected_status(fault)) != 0)
			printf("  %s: fault %s but status %s\n", h_str(r, "id"), fault, st);
		assert_string_equal(st, expected_status(fault));
		faulted += fault != NULL;
		completed += strcmp(st, "completed") == 0;
	}
	printf("  200 requests, %zu with a fault, %zu completed\n", faulted, completed);
	check_cmp(faulted, >, 40);
	assert_int_equal(completed, m.ctr[CL_CTR_COMPLETED]);
	h_jsonl_free(&log);
	h_jsonl_free(&truth);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* A loopback port with nothing listening: connect errors, fast, and the loop keeps going, each
 * user backing off after its failures (50 ms, 100 ms, 200 ms... with jitter in [0.5, 1)). */
static void test_connect_refused(void **state)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	int port = ntohs(a.sin_port);
	close(fd); /* bound, never listened, now closed: connections are refused */

	struct h_sim nosim = { .pid = -1 };
	snprintf(nosim.dir, sizeof(nosim.dir), "/tmp/cl-engine-test-XXXXXX");
	assert_non_null(mkdtemp(nosim.dir));
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .port_override = port };
	assert_int_equal(h_engine_create(&he, &nosim, &o), 0);
	struct cl_stage_plan p = h_closed(4, 0, 300000);
	struct cl_metrics m;
	int64_t t0 = cl_mono_us();
	assert_int_equal(h_run(&he, &p, 0, 10000000, &m), 0);
	int64_t took = cl_mono_us() - t0;
	printf("  refused: %llu connect errors in %lld ms\n",
	       (unsigned long long)m.ctr[CL_CTR_ERR_CONNECT], (long long)took / 1000);
	/* Every user retried (its first wait is 25-50 ms), and none spun: in 300 ms the waits
	 * 25+50+100 ms leave room for at most 4 attempts a user (5 with a margin). */
	check_cmp(m.ctr[CL_CTR_ERR_CONNECT], >=, 2 * 4);
	check_cmp(m.ctr[CL_CTR_ERR_CONNECT], <=, 5 * 4);
	assert_int_equal(m.ctr[CL_CTR_STARTED], m.ctr[CL_CTR_ERR_CONNECT]);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 0);
	assert_balanced(&m, &he);
	check_cmp(took, <, 2000000);
	assert_int_equal(m.err_samples[0].ctr, CL_CTR_ERR_CONNECT);
	assert_non_null(strstr(m.err_samples[0].body, "cannot connect to the server: check"));

	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	int64_t worst = 0;
	for (size_t i = 0; i < log.n; i++) {
		json_t *r = log.rows[i];
		assert_string_equal(h_str(r, "status"), "err_connect");
		int64_t d = h_int(r, "end_us", 0) - h_int(r, "handed_us", 0);
		if (d > worst)
			worst = d;
	}
	printf("  slowest connect failure: %lld us\n", (long long)worst);
	check_cmp(worst, <, 100000);
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&nosim);
}

/* https:// to a plain-HTTP port: the handshake fails, counted as tls. */
static void test_tls_failure(void **state)
{
	struct h_sim sim;
	assert_int_equal(h_sim_start(&sim, NULL), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .https = true };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(2, 6, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 10000000, &m), 0);
	h_sim_stop(&sim);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 6);
	assert_int_equal(m.ctr[CL_CTR_ERR_TLS], 6);
	assert_balanced(&m, &he);
	printf("  tls error sample: %s\n", m.err_samples[0].body);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* A model the server does not serve: 404, counted http_4xx with its body kept. */
static void test_http_4xx(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--model", "some-other-model", NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(1, 3, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 10000000, &m), 0);
	h_sim_stop(&sim);
	assert_int_equal(m.ctr[CL_CTR_ERR_HTTP_4XX], 3);
	assert_int_equal(m.err_samples[0].http_status, 404);
	assert_non_null(strstr(m.err_samples[0].body, "error"));
	printf("  404 body sample: %s\n", m.err_samples[0].body);
	assert_balanced(&m, &he);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* HTTP/2 with prior knowledge to a server that speaks only HTTP/1.1: every request fails,
 * none is mistaken for a success, and nothing leaks (the simulator cannot test h2 itself). */
static void test_http2_to_h1_server(void **state)
{
	struct h_sim sim;
	assert_int_equal(h_sim_start(&sim, NULL), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .http2 = true, .request_timeout_us = 2000000 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(2, 6, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 10000000, &m), 0);
	h_sim_stop(&sim);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 6);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 0);
	assert_int_equal(errors(&m), 6);
	assert_balanced(&m, &he);
	printf("  h2 to an h1 server: class %s, %s\n", cl_ctr_name(m.err_samples[0].ctr),
	       m.err_samples[0].body);
	assert_non_null(strstr(m.err_samples[0].body, "set it to false for HTTP/1.1"));
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* The key is read from the environment once, sent as a Bearer token, and never logged. */
static void test_api_key(void **state)
{
	struct h_sim sim;
	const char *args[] = { "--api-key", "sekrit-123",      "--ttft", "2ms", "--itl",
			       "1ms",       "--output-tokens", "3",      NULL };
	assert_int_equal(h_sim_start(&sim, args), 0);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .api_key_env = "CL_ENGINE_TEST_KEY" };
	setenv("CL_ENGINE_TEST_KEY", "sekrit-123", 1);
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	unsetenv("CL_ENGINE_TEST_KEY"); /* read at create, not later */
	struct cl_stage_plan p = h_closed(2, 4, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 10000000, &m), 0);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 4);
	h_engine_destroy(&he);
	cl_metrics_destroy(&m);

	/* Without the key: 401, an http_4xx. */
	setenv("CL_ENGINE_TEST_KEY", "wrong", 1);
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	unsetenv("CL_ENGINE_TEST_KEY");
	assert_int_equal(h_run(&he, &p, 0, 10000000, &m), 0);
	h_sim_stop(&sim);
	assert_int_equal(m.ctr[CL_CTR_ERR_HTTP_4XX], 4);
	assert_int_equal(m.err_samples[0].http_status, 401);
	/* Neither key appears in anything we wrote. */
	struct cl_buf b;
	cl_buf_init(&b, 1u << 20);
	assert_int_equal(cl_buf_read_file(&b, he.log_path), 0);
	assert_null(strstr(b.data, "sekrit"));
	assert_null(strstr(b.data, "wrong"));
	cl_buf_free(&b);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_fault_in_order),
		cmocka_unit_test(test_random_faults_concurrent),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_tls_failure),
		cmocka_unit_test(test_http_4xx),
		cmocka_unit_test(test_api_key),
		cmocka_unit_test(test_http2_to_h1_server),
	};
	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
