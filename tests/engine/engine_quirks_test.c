/* The engine against servers that behave like real ones rather than like a specification:
 * llama.cpp's close after every answer (no request lost, re-sends counted as reconnects),
 * a stream held open after [DONE] (completed at [DONE] with its true e2e, the connection
 * dropped), wrong-typed chunks (stream_malformed, with the reason in the sample), and the
 * connection reuse kept against a normal server. */
#include "harness.h"

#include "chatload/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

static uint64_t errors(const struct cl_metrics *m)
{
	uint64_t n = 0;
	for (int i = CL_CTR_FIRST_ERROR; i <= CL_CTR_LAST_ERROR; i++)
		n += m->ctr[i];
	return n;
}

static void print_errors(const char *what, const struct cl_metrics *m)
{
	printf("  %s: %llu started, %llu completed, %llu errors", what,
	       (unsigned long long)m->ctr[CL_CTR_STARTED],
	       (unsigned long long)m->ctr[CL_CTR_COMPLETED], (unsigned long long)errors(m));
	for (int i = CL_CTR_FIRST_ERROR; i <= CL_CTR_LAST_ERROR; i++)
		if (m->ctr[i])
			printf(" %s=%llu", cl_ctr_name(i), (unsigned long long)m->ctr[i]);
	printf("\n");
	for (uint32_t i = 0; i < m->n_err_samples; i++)
		printf("    sample %s: %s\n", cl_ctr_name(m->err_samples[i].ctr),
		       m->err_samples[i].body);
}

/* Sums over the request log rows [from, n): new connections, reconnects, the most
 * reconnects of one request, and rows the engine closed at [DONE]. */
struct log_sums {
	size_t rows, new_conns, closed_at_done;
	int64_t reconnects, max_reconnects;
};

static struct log_sums sum_log(const struct h_jsonl *log, size_t from)
{
	struct log_sums s = { 0 };
	for (size_t i = from; i < log->n; i++) {
		json_t *r = log->rows[i];
		s.rows++;
		s.new_conns += json_is_true(json_object_get(r, "new_connection"));
		s.closed_at_done += json_is_true(json_object_get(r, "closed_at_done"));
		int64_t k = h_int(r, "reconnects", 0);
		s.reconnects += k;
		if (k > s.max_reconnects)
			s.max_reconnects = k;
	}
	return s;
}

static const char *const FAST[] = { "--ttft", "2ms", "--itl", "1ms", "--output-tokens", "8" };

/* Starts a sim with FAST plus extra (NULL-terminated). */
static void start_sim(struct h_sim *sim, const char *const *extra)
{
	const char *args[32];
	size_t n = 0;
	for (size_t i = 0; i < sizeof(FAST) / sizeof(FAST[0]); i++)
		args[n++] = FAST[i];
	for (size_t i = 0; extra && extra[i] && n < 31; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	assert_int_equal(h_sim_start(sim, args), 0);
}

/*
 * llama.cpp's habit: keep-alive advertised, the connection closed after every answer.  The
 * simulator closes it only once the next request arrived, so every reuse loses the race and
 * libcurl re-sends on a fresh connection.  Before the fix, libcurl 7.88 counted those
 * re-sends on the reused easy handle across requests and failed every sixth ("Connection
 * died, tried 5 times before giving up").  Now a stage of N completes N.
 */
static void test_close_after_answer(void **state)
{
	struct h_sim sim;
	const char *extra[] = { "--close-after-answer", NULL };
	start_sim(&sim, extra);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .max_tokens = 8 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(4, 200, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 60000000, &m), 0);
	struct cl_engine_stats st;
	cl_engine_stats(he.e, &st);
	struct h_jsonl log, truth;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	struct log_sums s = sum_log(&log, 0);
	print_errors("close-after-answer, C=4, 200 requests", &m);
	printf("  %zu new connections, %lld reconnects (most on one request: %lld), engine "
	       "stats %llu\n",
	       s.new_conns, (long long)s.reconnects, (long long)s.max_reconnects,
	       (unsigned long long)st.reconnects);
	h_sim_stop(&sim);
	assert_int_equal(m.ctr[CL_CTR_STARTED], 200);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 200);
	assert_int_equal(errors(&m), 0);
	assert_int_equal(s.rows, 200);
	/* Every reuse met a closed connection: all but the first request of each of the 4
	 * streams was re-sent at least once, and each re-send is counted. */
	check_cmp(s.reconnects, >=, 196);
	assert_int_equal(st.reconnects, (uint64_t)s.reconnects);
	assert_int_equal(s.new_conns, 200);
	assert_int_equal(s.closed_at_done, 0);
	/* The simulator answered each request once: the re-sends were never answered twice. */
	assert_int_equal(h_jsonl_load(&truth, sim.truth_path), 0);
	assert_int_equal(truth.n, 200);
	h_jsonl_free(&truth);
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/*
 * Idle connections the server will close pile up between stages (16 after a C=16 stage):
 * the next request can meet more of them in a row than libcurl retries (5).  The engine
 * then re-sends it once on a fresh connection: still no request lost.
 */
static void test_close_after_answer_between_stages(void **state)
{
	struct h_sim sim;
	const char *extra[] = { "--close-after-answer", NULL };
	start_sim(&sim, extra);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .max_tokens = 8 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_metrics m1, m2;
	struct cl_stage_plan p1 = h_closed(16, 64, 0), p2 = h_closed(1, 20, 0);
	assert_int_equal(h_run(&he, &p1, 0, 60000000, &m1), 0);
	assert_int_equal(h_run(&he, &p2, 0, 60000000, &m2), 0);
	h_sim_stop(&sim);
	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	struct log_sums s2 = sum_log(&log, 64);
	print_errors("C=16, 64 requests", &m1);
	print_errors("then C=1, 20 requests", &m2);
	printf("  second stage: %lld reconnects, most on one request %lld\n",
	       (long long)s2.reconnects, (long long)s2.max_reconnects);
	assert_int_equal(m1.ctr[CL_CTR_COMPLETED], 64);
	assert_int_equal(errors(&m1), 0);
	assert_int_equal(m2.ctr[CL_CTR_COMPLETED], 20);
	assert_int_equal(errors(&m2), 0);
	check_cmp(s2.reconnects, >=, 20);
	h_jsonl_free(&log);
	cl_metrics_destroy(&m1);
	cl_metrics_destroy(&m2);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* Against a normal keep-alive server the engine reuses every connection: C connections for
 * the whole stage, no reconnect, nothing closed at [DONE]. */
static void test_normal_server_keeps_connections(void **state)
{
	struct h_sim sim;
	start_sim(&sim, NULL);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .max_tokens = 8 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(4, 200, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 60000000, &m), 0);
	h_sim_stop(&sim);
	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	struct log_sums s = sum_log(&log, 0);
	print_errors("normal server, C=4, 200 requests", &m);
	printf("  %zu new connections, %lld reconnects, %zu closed at [DONE]\n", s.new_conns,
	       (long long)s.reconnects, s.closed_at_done);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 200);
	assert_int_equal(s.new_conns, 4);
	assert_int_equal(s.reconnects, 0);
	assert_int_equal(s.closed_at_done, 0);
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/*
 * A stream ending in [DONE] whose body is delimited by a close that never comes: each
 * request completes at [DONE] (not at request_timeout), its e2e is the truth's, and the
 * connection is dropped (it cannot carry another request).
 */
static void test_hold_after_done(void **state)
{
	struct h_sim sim;
	const char *extra[] = { "--hold-after-done", NULL };
	start_sim(&sim, extra);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .max_tokens = 8, .request_timeout_us = 5000000 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(2, 10, 0);
	struct cl_metrics m;
	int64_t t0 = cl_mono_us();
	assert_int_equal(h_run(&he, &p, 0, 20000000, &m), 0);
	int64_t took = cl_mono_us() - t0;
	h_sim_stop(&sim);
	print_errors("hold-after-done, C=2, 10 requests", &m);
	printf("  stage took %lld ms (request_timeout 5 s)\n", (long long)took / 1000);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 10);
	assert_int_equal(errors(&m), 0);
	check_cmp(took, <, 2000000);
	struct h_jsonl log, truth;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	assert_int_equal(h_jsonl_load(&truth, sim.truth_path), 0);
	assert_int_equal(log.n, 10);
	for (size_t i = 0; i < log.n; i++) {
		json_t *r = log.rows[i];
		json_t *t = h_jsonl_find(&truth, "x_request_id", h_str(r, "id"));
		assert_non_null(t);
		assert_string_equal(h_str(r, "status"), "completed");
		assert_true(json_is_true(json_object_get(r, "closed_at_done")));
		assert_true(json_is_true(json_object_get(r, "new_connection")));
		/* e2e ends at the last token (received after the simulator wrote it), and the
		 * request ends right after [DONE], not at a timeout. */
		int64_t last = h_int(r, "last_us", 0), end = h_int(r, "end_us", 0);
		check_cmp(last, >=, h_int(t, "actual_last_us", 0));
		check_cmp(last - h_int(t, "actual_last_us", 0), <, 50000);
		check_cmp(end - last, <, 50000);
		assert_int_equal(h_int(r, "tokens", -1), 8);
	}
	h_jsonl_free(&log);
	h_jsonl_free(&truth);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

/* The same fault on a chunked body, which could still end by itself: the engine waits a
 * short grace for the end, then completes the request at [DONE] and drops the connection. */
static void test_chunked_held_after_done_grace(void **state)
{
	struct h_held_server hs;
	assert_int_equal(h_held_server_start(&hs, 3), 0);

	struct h_sim nosim = { .pid = -1 };
	snprintf(nosim.dir, sizeof(nosim.dir), "/tmp/cl-engine-test-XXXXXX");
	assert_non_null(mkdtemp(nosim.dir));
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1,
				   .port_override = hs.port,
				   .request_timeout_us = 5000000 };
	assert_int_equal(h_engine_create(&he, &nosim, &o), 0);
	struct cl_stage_plan p = h_closed(1, 3, 0);
	struct cl_metrics m;
	int64_t t0 = cl_mono_us();
	assert_int_equal(h_run(&he, &p, 0, 20000000, &m), 0);
	int64_t took = cl_mono_us() - t0;
	h_held_server_stop(&hs);
	print_errors("chunked stream held after [DONE], C=1, 3 requests", &m);
	printf("  stage took %lld ms\n", (long long)took / 1000);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 3);
	assert_int_equal(errors(&m), 0);
	check_cmp(took, <, 2000000);
	struct h_jsonl log;
	assert_int_equal(h_jsonl_load(&log, he.log_path), 0);
	assert_int_equal(log.n, 3);
	for (size_t i = 0; i < log.n; i++) {
		json_t *r = log.rows[i];
		int64_t wait = h_int(r, "end_us", 0) - h_int(r, "last_us", 0);
		printf("  request %zu: ended %lld ms after its last token\n", i,
		       (long long)wait / 1000);
		assert_true(json_is_true(json_object_get(r, "closed_at_done")));
		assert_true(json_is_true(json_object_get(r, "new_connection")));
		check_cmp(wait, >=, 90000); /* the grace, 100 ms */
		check_cmp(wait, <, 600000);
		assert_int_equal(h_int(r, "tokens", -1), 1);
	}
	h_jsonl_free(&log);
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&nosim);
}

/* Valid JSON of the wrong shape is not an answer: each of the four shapes, alone or all in
 * one stream, is stream_malformed, and the sample names what was wrong. */
static void test_wrong_type_chunks(void **state)
{
	struct h_sim sim;
	const char *extra[] = { "--fault-schedule",
				"wrong-type@1,wrong-type@2,wrong-type@3,wrong-type@4,wrong-type@6",
				"--wrong-type-shape", "rotate", NULL };
	start_sim(&sim, extra);
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .max_tokens = 8 };
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	struct cl_stage_plan p = h_closed(1, 6, 0);
	struct cl_metrics m;
	assert_int_equal(h_run(&he, &p, 0, 20000000, &m), 0);
	h_sim_stop(&sim);
	print_errors("wrong-type, one shape per request", &m);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 1); /* request 5 */
	assert_int_equal(m.ctr[CL_CTR_ERR_STREAM_MALFORMED], 5);
	assert_int_equal(errors(&m), 5);
	assert_int_equal(m.n_err_samples, 4);
	static const char *const want[] = {
		"choices[].delta.content is not a string: {",
		"choices is not an array: {",
		"usage.completion_tokens is not a non-negative integer: {",
		"the chunk is not a JSON object: [1,2,3]",
	};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(m.err_samples[i].ctr, CL_CTR_ERR_STREAM_MALFORMED);
		if (!strstr(m.err_samples[i].body, want[i]))
			fail_msg("sample %d: \"%s\" lacks \"%s\"", i, m.err_samples[i].body,
				 want[i]);
	}
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);

	/* All four in one stream, then [DONE]: the first wrong event decides. */
	const char *all[] = { "--fault-wrong-type", "1", NULL };
	start_sim(&sim, all);
	assert_int_equal(h_engine_create(&he, &sim, &o), 0);
	p = h_closed(2, 4, 0);
	assert_int_equal(h_run(&he, &p, 0, 20000000, &m), 0);
	h_sim_stop(&sim);
	print_errors("wrong-type, all four shapes in each stream", &m);
	assert_int_equal(m.ctr[CL_CTR_ERR_STREAM_MALFORMED], 4);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 0);
	assert_non_null(strstr(m.err_samples[0].body, "delta.content is not a string"));
	cl_metrics_destroy(&m);
	h_engine_destroy(&he);
	h_sim_cleanup(&sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_after_answer),
		cmocka_unit_test(test_close_after_answer_between_stages),
		cmocka_unit_test(test_normal_server_keeps_connections),
		cmocka_unit_test(test_hold_after_done),
		cmocka_unit_test(test_chunked_held_after_done_grace),
		cmocka_unit_test(test_wrong_type_chunks),
	};
	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
