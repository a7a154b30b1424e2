/* Tests of srcaddr.c: which addresses a pool holds (blocks expanded, duplicates and oversize
 * refused with the spec named), the bind() check of a local address and the port range. */
#include "chatload/srcaddr.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void assert_has(const char *msg, const char *want)
{
	if (!strstr(msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", msg, want);
}

static void test_pool(void **state)
{
	(void)state;
	struct cl_srcaddr_pool *p = calloc(1, sizeof(*p));
	struct cl_err err = { 0 };
	assert_non_null(p);
	assert_int_equal(cl_srcaddr_add(p, "127.0.0.2", &err), 0);
	/* A /30 gives its two host addresses; a /31 and a /32 all of theirs. */
	assert_int_equal(cl_srcaddr_add(p, "127.0.1.0/30", &err), 0);
	assert_int_equal(cl_srcaddr_add(p, "127.0.2.7/31", &err), 0);
	assert_int_equal(cl_srcaddr_add(p, "127.0.3.9/32", &err), 0);
	assert_int_equal(cl_srcaddr_add(p, "::1", &err), 0);
	const char *want[] = { "127.0.0.2", "127.0.1.1", "127.0.1.2", "127.0.2.6",
			       "127.0.2.7", "127.0.3.9", "::1" };
	assert_int_equal(p->n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < p->n; i++)
		assert_string_equal(p->addr[i], want[i]);

	assert_int_equal(cl_srcaddr_add(p, "127.0.1.1", &err), CL_EINVAL);
	assert_has(err.msg, "source address '127.0.1.1' is given twice");
	assert_int_equal(cl_srcaddr_add(p, "localhost", &err), CL_EINVAL);
	assert_has(err.msg, "'localhost' is not a numeric IPv4 or IPv6 address");
	assert_int_equal(cl_srcaddr_add(p, "127.0.0.0/15", &err), CL_ERANGE);
	assert_has(err.msg, "'127.0.0.0/15': the prefix length must be 16..32");
	assert_int_equal(cl_srcaddr_add(p, "127.0.0.0/x", &err), CL_EINVAL);
	assert_int_equal(cl_srcaddr_add(p, "fd00::/64", &err), CL_EINVAL);
	assert_has(err.msg, "is not an IPv4 CIDR block");
	/* A block past the pool's room is refused whole, naming its size. */
	assert_int_equal(cl_srcaddr_add(p, "10.0.0.0/23", &err), CL_ERANGE);
	assert_has(err.msg, "'10.0.0.0/23' holds 510 addresses: the pool takes at most 256");
	assert_int_equal(p->n, 7);
	free(p);
}

static void test_local(void **state)
{
	(void)state;
	struct cl_err err = { 0 };
	/* All of 127.0.0.0/8 is this host's on Linux; TEST-NET-1 never is. */
	assert_int_equal(cl_srcaddr_check_local("127.0.0.3", &err), 0);
	assert_int_equal(cl_srcaddr_check_local("192.0.2.1", &err), CL_EREFUSED);
	assert_has(err.msg, "source address '192.0.2.1' is not an address of this host (bind: ");
	uint32_t ports = cl_srcaddr_ephemeral_ports();
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f) {
		unsigned lo, hi;
		assert_int_equal(fscanf(f, "%u %u", &lo, &hi), 2);
		fclose(f);
		assert_int_equal(ports, hi - lo + 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_local),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
