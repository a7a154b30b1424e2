/* Tests of the per-run salt's one definition (chatload/salt.h): a new tag is 8 lowercase hex
 * digits, two tags differ, the rendered prefix is "[<tag>] " with the mark and digits where
 * the agent's retag looks for them, and what is not a tag renders nothing. */
#include "chatload/salt.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_new_tag(void **state)
{
	(void)state;
	char a[CL_SALT_TAG_SIZE], b[CL_SALT_TAG_SIZE];
	cl_salt_new(a);
	cl_salt_new(b);
	assert_int_equal(strlen(a), CL_SALT_DIGITS);
	assert_true(cl_salt_valid(a));
	for (size_t i = 0; i < CL_SALT_DIGITS; i++)
		assert_non_null(strchr("0123456789abcdef", a[i]));
	/* 2^-32 to fail by chance; a copy of one tag for every run would fail always */
	assert_string_not_equal(a, b);
}

/* Every tag is written by cl_salt_from_u64: the low 32 bits, lowest nibble first. */
static void test_from_u64(void **state)
{
	(void)state;
	char t[CL_SALT_TAG_SIZE];
	cl_salt_from_u64(0xffffffff12345678ull, t);
	assert_string_equal(t, "87654321");
	assert_true(cl_salt_valid(t));
	cl_salt_from_u64(0, t);
	assert_string_equal(t, "00000000");
}

static void test_prefix(void **state)
{
	(void)state;
	char out[CL_SALT_PREFIX_LEN + 1];
	assert_int_equal(cl_salt_prefix("0a1b2c3d", out, sizeof(out)), CL_SALT_PREFIX_LEN);
	assert_string_equal(out, "[0a1b2c3d] ");
	assert_int_equal(strlen(out), 11); /* docs/scenario.md: 11 characters */
	assert_memory_equal(out, "[0a1b2c3d]", CL_SALT_MARK_LEN);
	assert_memory_equal(out + 1, "0a1b2c3d", CL_SALT_DIGITS);
}

static void test_not_a_tag(void **state)
{
	(void)state;
	char out[CL_SALT_PREFIX_LEN + 1] = "x";
	const char *bad[] = { NULL, "", "0a1b2c3", "0a1b2c3d4", "0a1b2c3g", "[0a1b2c]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(cl_salt_valid(bad[i]));
		assert_int_equal(cl_salt_prefix(bad[i], out, sizeof(out)), 0);
		assert_string_equal(out, "");
	}
	/* a tag, but no room for it and its NUL */
	assert_int_equal(cl_salt_prefix("0a1b2c3d", out, CL_SALT_PREFIX_LEN), 0);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_tag),
		cmocka_unit_test(test_from_u64),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_not_a_tag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
