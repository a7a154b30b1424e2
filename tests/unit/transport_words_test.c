/* TLS messages from common/ name no program: without words they are neutral, and with the
 * caller's words (the agent's, the coordinator's) they say exactly what the user set. */
#include "chatload/err.h"
#include "chatload/transport.h"

#include <nng/protocol/reqrep0/rep.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static const char *const URL = "tls+tcp://127.0.0.1:7700";

static void test_dial_without_ca_is_neutral_by_default(void **state)
{
	(void)state;
	struct cl_err err = { 0 };
	struct cl_tls_opts tls = { 0 };
	assert_int_equal(cl_transport_check_dial(URL, &tls, false, &err), CL_EINVAL);
	assert_string_equal(
	    err.msg, "dialing 'tls+tcp://127.0.0.1:7700' needs a CA file to verify the server");
	/* no options at all: the same words */
	struct cl_err err2 = { 0 };
	assert_int_equal(cl_transport_check_dial(URL, NULL, false, &err2), CL_EINVAL);
	assert_string_equal(err2.msg, err.msg);
}

static void test_dial_without_ca_in_the_callers_words(void **state)
{
	(void)state;
	static const struct cl_tls_words words = { .peer = "the coordinator", .ca = "--tls-ca" };
	struct cl_err err = { 0 };
	struct cl_tls_opts tls = { .words = &words };
	assert_int_equal(cl_transport_check_dial(URL, &tls, false, &err), CL_EINVAL);
	/* what the agent printed before the words moved to it (fleet_tls_test pins the start) */
	assert_string_equal(err.msg, "dialing 'tls+tcp://127.0.0.1:7700' needs a CA file to "
				     "verify the coordinator (--tls-ca)");
}

/* Listening on tls+tcp:// without a certificate fails before anything binds. */
static void listen_without_cert(const struct cl_tls_words *words, struct cl_err *err)
{
	nng_socket sock;
	assert_int_equal(nng_rep0_open_raw(&sock), 0);
	struct cl_tls_opts tls = { .words = words };
	assert_int_equal(cl_transport_listen(sock, "tls+tcp://127.0.0.1:0", &tls, false, NULL, err),
			 CL_EINVAL);
	nng_close(sock);
}

static void test_listen_without_cert(void **state)
{
	(void)state;
	struct cl_err err = { 0 };
	listen_without_cert(NULL, &err);
	assert_string_equal(err.msg,
			    "listening on 'tls+tcp://127.0.0.1:0' needs a TLS certificate and key");
	static const struct cl_tls_words coord = { .cert = "agents.tls.cert",
						   .key = "agents.tls.key" };
	struct cl_err err2 = { 0 };
	listen_without_cert(&coord, &err2);
	assert_string_equal(err2.msg,
			    "listening on 'tls+tcp://127.0.0.1:0' needs a TLS certificate "
			    "and key (agents.tls.cert, agents.tls.key)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dial_without_ca_is_neutral_by_default),
		cmocka_unit_test(test_dial_without_ca_in_the_callers_words),
		cmocka_unit_test(test_listen_without_cert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
