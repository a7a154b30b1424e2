/* The readiness probe against servers that behave like real ones: llama.cpp's close after
 * every answer, a stream held open after [DONE] (close-delimited, and chunked), and
 * wrong-typed chunks.  Real chatload-sim as a child process (the engine tests' harness). */
#include "tests/engine/harness.h"
#include "client/probe/probe_http.h"
#include "client/probe/readiness.h"

#include "chatload/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define MS  1000LL
#define SEC 1000000LL

#define assert_contains(hay, needle)                                                               \
	do {                                                                                       \
		const char *h_ = (hay), *n_ = (needle);                                            \
		if (!h_ || !strstr(h_, n_))                                                        \
			fail_msg("expected \"%s\" in \"%s\"", n_, h_ ? h_ : "(null)");             \
	} while (0)

static struct cl_target_plan target_for(const char *url)
{
	struct cl_target_plan t = { 0 };
	t.base_url = (char *)url;
	t.tls_verify = true;
	return t;
}

static struct cl_probe_cfg cfg_for(const struct cl_target_plan *t, int64_t timeout_us)
{
	struct cl_probe_cfg c = { 0 };
	c.target = t;
	c.timeout_us = timeout_us;
	c.request_timeout_us = 5 * SEC;
	c.backoff_initial_us = 100 * MS;
	c.backoff_max_us = 300 * MS;
	c.max_tokens = 4;
	c.seed = 42;
	return c;
}

static void sim_url(const struct h_sim *s, char *url, size_t n)
{
	snprintf(url, n, "http://127.0.0.1:%d/v1", s->port);
}

static void print_verdict(const struct cl_readiness_result *r)
{
	char v[1024];
	cl_readiness_describe(r, v, sizeof(v));
	printf("  verdict: %s\n", v);
}

/* Every answer closes its connection once the next request is on it: /models, then six
 * generations in a row, each re-sent by libcurl on a fresh connection, none failing. */
static void test_close_after_answer(void **state)
{
	struct h_sim s;
	const char *args[] = { "--close-after-answer", "--ttft", "5ms", "--itl", "1ms", NULL };
	assert_int_equal(h_sim_start(&s, args), 0);
	char url[64];
	sim_url(&s, url, sizeof(url));
	struct cl_target_plan t = target_for(url);
	struct cl_probe_cfg cfg = cfg_for(&t, 20 * SEC);
	cfg.consecutive = 6;
	struct cl_readiness_result r;
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	h_sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, 0);
	assert_int_equal(r.status, CL_READY_PASSED);
	assert_string_equal(r.last_error, ""); /* not one attempt failed */
	h_sim_cleanup(&s);
}

/* A close-delimited stream held open after [DONE]: the gate passes at once, and the probe's
 * total time ends at [DONE], not at the request timeout. */
static void test_hold_after_done(void **state)
{
	struct h_sim s;
	const char *args[] = { "--hold-after-done", "--ttft", "20ms", "--itl", "5ms", NULL };
	assert_int_equal(h_sim_start(&s, args), 0);
	char url[64];
	sim_url(&s, url, sizeof(url));
	struct cl_target_plan t = target_for(url);
	struct cl_probe_cfg cfg = cfg_for(&t, 20 * SEC);
	struct cl_readiness_result r;
	int64_t t0 = cl_mono_us();
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	int64_t took = cl_mono_us() - t0;
	h_sim_stop(&s);
	print_verdict(&r);
	printf("  probe ttft %lld ms, total %lld ms, gate %lld ms\n",
	       (long long)r.probe_ttft_us / 1000, (long long)r.probe_total_us / 1000,
	       (long long)took / 1000);
	assert_int_equal(rc, 0);
	assert_string_equal(r.last_error, "");
	/* 4 tokens: 20 ms + 3 x 5 ms = 35 ms of generation; generous bounds for a loaded host. */
	assert_true(r.probe_total_us >= 30 * MS);
	assert_true(r.probe_total_us < 1 * SEC);
	assert_true(took < 3 * SEC);
	h_sim_cleanup(&s);
}

/* A chunked stream held open after [DONE]: ended after a short grace, and passed. */
static void test_chunked_held_after_done(void **state)
{
	struct h_held_server hs;
	assert_int_equal(h_held_server_start(&hs, 2), 0);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", hs.port);
	struct cl_target_plan t = target_for(url);
	struct cl_probe_http h;
	struct cl_err err = { 0 };
	assert_int_equal(cli_probe_http_init(&h, &t, NULL, NULL, &err), 0);
	for (int i = 0; i < 2; i++) {
		struct cl_probe_attempt a;
		int64_t t0 = cl_mono_us();
		cli_probe_http_generate(&h, "{\"stream\":true}", 5 * SEC, &a);
		int64_t took = cl_mono_us() - t0;
		printf("  attempt %d: outcome %d '%s' in %lld ms, total %lld ms\n", i, a.outcome,
		       a.error, (long long)took / 1000, (long long)a.total_us / 1000);
		assert_int_equal(a.outcome, CL_PROBE_OK);
		/* The grace (100 ms) plus up to a second for libcurl's progress callback. */
		assert_true(took >= 90 * MS);
		assert_true(took < 2 * SEC);
		assert_true(a.total_us < 90 * MS); /* ends at [DONE], not at the grace */
	}
	cli_probe_http_destroy(&h);
	h_held_server_stop(&hs);
}

/* Wrong-typed chunks are malformed for the probe too, and the reason says which field. */
static void test_wrong_type(void **state)
{
	struct h_sim s;
	const char *args[] = { "--fault-wrong-type", "1", "--ttft", "5ms", "--itl", "1ms", NULL };
	assert_int_equal(h_sim_start(&s, args), 0);
	char url[64];
	sim_url(&s, url, sizeof(url));
	struct cl_target_plan t = target_for(url);
	struct cl_probe_cfg cfg = cfg_for(&t, 700 * MS);
	cfg.max_tokens = 8;
	struct cl_readiness_result r;
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	h_sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, CL_ETIMEDOUT);
	assert_int_equal(r.phase, CL_READY_GENERATION);
	assert_contains(r.last_error,
			"malformed chunk in stream (choices[].delta.content is not a string)");
	h_sim_cleanup(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_after_answer),
		cmocka_unit_test(test_hold_after_done),
		cmocka_unit_test(test_chunked_held_after_done),
		cmocka_unit_test(test_wrong_type),
	};
	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
