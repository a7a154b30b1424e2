/* The one msgpack field reader (common/src/mpk_read.c): every type and range edge, and that a
 * refused read leaves the output untouched. */
#include "common/src/mpk_read.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static msgpack_object obj_u(uint64_t v)
{
	msgpack_object o = { .type = MSGPACK_OBJECT_POSITIVE_INTEGER };
	o.via.u64 = v;
	return o;
}

static msgpack_object obj_i(int64_t v)
{
	msgpack_object o = { .type = MSGPACK_OBJECT_NEGATIVE_INTEGER };
	o.via.i64 = v;
	return o;
}

static msgpack_object obj_f(double v)
{
	msgpack_object o = { .type = MSGPACK_OBJECT_FLOAT64 };
	o.via.f64 = v;
	return o;
}

static msgpack_object obj_s(const char *p, size_t n)
{
	msgpack_object o = { .type = MSGPACK_OBJECT_STR };
	o.via.str.ptr = p;
	o.via.str.size = (uint32_t)n;
	return o;
}

static void test_integers(void **state)
{
	(void)state;
	uint64_t u = 7;
	int64_t i = 7;
	msgpack_object big = obj_u(UINT64_MAX), neg = obj_i(-5), f = obj_f(1.0);
	assert_true(cli_mpk_u64(&big, &u));
	assert_true(u == UINT64_MAX);
	u = 7;
	assert_false(cli_mpk_u64(&neg, &u));
	assert_int_equal(u, 7);
	assert_false(cli_mpk_u64(&f, &u)); /* a float is not an integer, even 1.0 */
	assert_int_equal(u, 7);
	assert_false(cli_mpk_i64(&big, &i)); /* above INT64_MAX */
	assert_int_equal(i, 7);
	msgpack_object edge = obj_u((uint64_t)INT64_MAX);
	assert_true(cli_mpk_i64(&edge, &i));
	assert_true(i == INT64_MAX);
	assert_true(cli_mpk_i64(&neg, &i));
	assert_int_equal(i, -5);
}

static void test_floats_and_bools(void **state)
{
	(void)state;
	double d = 0;
	bool b = false;
	msgpack_object two = obj_u(2), m3 = obj_i(-3), f = obj_f(0.25), s = obj_s("x", 1);
	assert_true(cli_mpk_f64(&two, &d)); /* other encoders pack 2.0 as 2 */
	assert_true(d == 2.0);
	assert_true(cli_mpk_f64(&m3, &d));
	assert_true(d == -3.0);
	assert_true(cli_mpk_f64(&f, &d));
	assert_true(d == 0.25);
	d = 9;
	assert_false(cli_mpk_f64(&s, &d));
	assert_true(d == 9);
	msgpack_object t = { .type = MSGPACK_OBJECT_BOOLEAN };
	t.via.boolean = true;
	assert_true(cli_mpk_bool(&t, &b));
	assert_true(b);
	b = false;
	assert_false(cli_mpk_bool(&two, &b));
	assert_false(b);
}

static const char *names(int i)
{
	static const char *const n[] = { "ttft", NULL, "itl" };
	return i >= 0 && i < 3 ? n[i] : NULL;
}

static void test_strings(void **state)
{
	(void)state;
	const char nul[] = { 'i', 't', 'l', '\0', 'x' };
	msgpack_object itl = obj_s("itl", 3), withnul = obj_s(nul, sizeof(nul)),
		       pre = obj_s("it", 2), num = obj_u(1);
	assert_true(cli_mpk_str_is(&itl, "itl"));
	assert_false(cli_mpk_str_is(&withnul, "itl")); /* lengths must match: no NUL tricks */
	assert_false(cli_mpk_str_is(&pre, "itl"));
	assert_false(cli_mpk_str_is(&num, "itl"));
	assert_int_equal(cli_mpk_str_index(&itl, names, 3), 2);
	assert_int_equal(cli_mpk_str_index(&pre, names, 3), -1);
	assert_int_equal(cli_mpk_str_index(&num, names, 3), -1);
	const char *p = NULL;
	size_t n = 0;
	assert_true(cli_mpk_str(&itl, &p, &n));
	assert_int_equal(n, 3);
	assert_false(cli_mpk_str(&num, &p, &n));
	msgpack_object bin = { .type = MSGPACK_OBJECT_BIN };
	bin.via.bin.ptr = "ab";
	bin.via.bin.size = 2;
	assert_false(cli_mpk_str(&bin, &p, &n));
	assert_true(cli_mpk_bytes(&bin, &p, &n));
	assert_int_equal(n, 2);
}

static void test_messages(void **state)
{
	(void)state;
	char buf[64];
	char hostile[100];
	memset(hostile, 'a', sizeof(hostile));
	hostile[3] = '\n';
	hostile[4] = (char)0xff;
	msgpack_object h = obj_s(hostile, sizeof(hostile)), num = obj_u(1);
	const char *q = cli_mpk_quote(&h, buf, sizeof(buf));
	assert_int_equal(strlen(q), 48 + 3); /* capped, marked as cut */
	assert_memory_equal(q, "aaa??aaa", 8);
	assert_string_equal(q + 48, "...");
	assert_string_equal(cli_mpk_quote(&num, buf, sizeof(buf)), "<non-string>");
	assert_non_null(strstr(cli_mpk_type_word(&num), "integer"));
	msgpack_object s = obj_s("x", 1);
	assert_non_null(strstr(cli_mpk_type_word(&s), "string"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_floats_and_bools),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
