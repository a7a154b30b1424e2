/* Tests of units.c's duration formatting: each style's output is what users read in
 * verdicts, progress lines and error messages, so it is pinned here. */
#include "chatload/units.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#define MS  1000LL
#define SEC 1000000LL

struct dur_case {
	int64_t us;
	const char *want;
};

static void check(enum cl_duration_style style, const struct dur_case *c, size_t n)
{
	char buf[32];
	for (size_t i = 0; i < n; i++) {
		cl_format_duration_us(c[i].us, style, buf, sizeof(buf));
		if (strcmp(buf, c[i].want) != 0)
			fail_msg("style %d, %lld us: got \"%s\", expected \"%s\"", (int)style,
				 (long long)c[i].us, buf, c[i].want);
	}
}

static void precise(void **state)
{
	(void)state;
	static const struct dur_case c[] = {
		{ -5, "0us" },
		{ 0, "0us" },
		{ 850, "850us" },
		{ 12300, "12.3ms" },
		{ 4200 * MS, "4.20s" },
		{ 125 * SEC, "2m05s" },
		{ 5 * 60 * SEC, "5m00s" },
		{ 90 * 60 * SEC, "1h30m" },
		{ 2 * 3600 * SEC, "2h00m" },
	};
	check(CL_DURATION_PRECISE, c, sizeof(c) / sizeof(c[0]));
}

static void tenths(void **state)
{
	(void)state;
	static const struct dur_case c[] = {
		{ -5, "0.0s" },
		{ 0, "0.0s" },
		{ 1200, "0.0s" },
		{ 6200 * MS, "6.2s" },
		{ 59 * SEC, "59.0s" },
		{ 59940 * MS, "59.9s" },
		{ 59960 * MS, "1m" }, /* would print as 60.0s */
		{ 125 * SEC, "2m05s" },
		{ 5 * 60 * SEC, "5m" },
		{ 15 * 60 * SEC + 20 * MS, "15m" },
		{ 90 * 60 * SEC, "1h30m" },
		{ 2 * 3600 * SEC, "2h" },
	};
	check(CL_DURATION_TENTHS, c, sizeof(c) / sizeof(c[0]));
}

static void millis(void **state)
{
	(void)state;
	static const struct dur_case c[] = {
		{ -5, "0ms" },       { 101 * MS, "101ms" }, { 101499, "101ms" },
		{ 101500, "102ms" }, { 1200 * MS, "1.2s" }, { 125 * SEC, "2m05s" },
	};
	check(CL_DURATION_MILLIS, c, sizeof(c) / sizeof(c[0]));
}

/* A short buffer is filled, never overrun, and always terminated. */
static void short_buffer(void **state)
{
	(void)state;
	char small[4];
	cl_format_duration_us(12300, CL_DURATION_PRECISE, small, sizeof(small));
	assert_string_equal(small, "12.");
	char none[1] = { 'x' };
	cl_format_duration_us(12300, CL_DURATION_TENTHS, none, 0);
	assert_int_equal(none[0], 'x');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(precise),
		cmocka_unit_test(tenths),
		cmocka_unit_test(millis),
		cmocka_unit_test(short_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
