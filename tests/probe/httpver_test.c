/* The HTTP-version decision both the probe and the engine take from a target (httpver.h). */
#include "client/httpver/httpver.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static struct cl_httpver choose(const char *url, bool h2, bool fallback, uint32_t streams)
{
	struct cl_target_plan t = { .base_url = (char *)url,
				    .http2 = h2,
				    .http2_fallback = fallback,
				    .http2_streams = streams };
	struct cl_httpver v;
	cl_httpver_choose(&t, &v);
	return v;
}

static void http1(void **state)
{
	struct cl_httpver v = choose("http://127.0.0.1:8000/v1", false, false, 0);
	assert_int_equal(v.curl_version, CURL_HTTP_VERSION_1_1);
	assert_false(v.h2);
	assert_false(v.multiplex);
	assert_false(v.fresh_connection);
	assert_int_equal(v.streams_per_conn, 1);
	assert_string_equal(cl_httpver_describe(&v), "HTTP/1.1");
}

static void tls_alpn(void **state)
{
	struct cl_httpver v = choose("https://gw.example/v1", true, false, 0);
	assert_int_equal(v.curl_version, CURL_HTTP_VERSION_2TLS);
	assert_true(v.tls && v.h2 && v.h2_required && v.multiplex);
	assert_false(v.fresh_connection); /* ALPN connections are reused on every libcurl */
	assert_int_equal(v.streams_per_conn, CL_HTTP2_DEFAULT_STREAMS);
	v = choose("https://gw.example/v1", true, true, 250);
	assert_int_equal(v.curl_version, CURL_HTTP_VERSION_2TLS);
	assert_false(v.h2_required);
	assert_int_equal(v.streams_per_conn, 250);
	assert_string_equal(cl_httpver_describe(&v), "HTTP/2 (preferred)");
}

static void h2c(void **state)
{
	struct cl_httpver v = choose("http://gw:8080/v1", true, false, 64);
	assert_int_equal(v.curl_version, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	assert_true(v.h2_required);
	if (cl_httpver_h2c_reuse_broken()) {
		/* curl < 7.89: a connection per request, and then no multiplexing. */
		assert_true(v.fresh_connection);
		assert_false(v.multiplex);
		assert_int_equal(v.streams_per_conn, 1);
	} else {
		assert_false(v.fresh_connection);
		assert_true(v.multiplex);
		assert_int_equal(v.streams_per_conn, 64);
	}
	/* preferred over cleartext: Upgrade, the one way that can fall back. */
	v = choose("http://gw:8080/v1", true, true, 0);
	assert_int_equal(v.curl_version, CURL_HTTP_VERSION_2_0);
	assert_true(v.multiplex);
	assert_false(v.fresh_connection);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(http1),
		cmocka_unit_test(tls_alpn),
		cmocka_unit_test(h2c),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
