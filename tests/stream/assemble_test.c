/* Tests of the generate job's answer assembly (agent/generate/assemble.c): what it tells the
 * runner about a stream, which decides whether a try brought an answer (issue 40). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/generate/assemble.h"

/* Feeds one event's data; returns cl_asm_feed's result, the code in *code, why in why. */
static int feed(struct cl_asm *a, const char *data, int *code, char *why, size_t n)
{
	return cl_asm_feed(a, data, strlen(data), code, why, n);
}

/* [DONE] alone (what llama.cpp's `error:` field leaves once data: lines are read) is no
 * answer: no choice, not finished, no token. */
static void test_done_alone_is_no_answer(void **state)
{
	(void)state;
	struct cl_asm *a = cl_asm_new();
	assert_non_null(a);
	char why[400];
	int code;
	assert_int_equal(feed(a, "[DONE]", &code, why, sizeof(why)), 0);
	assert_true(cl_asm_done(a));
	assert_false(cl_asm_has_choice(a));
	assert_false(cl_asm_finished(a));
	assert_false(cl_asm_has_token(a));
	/* a usage-only chunk (choices: []) does not make one either */
	assert_int_equal(feed(a, "{\"choices\":[],\"usage\":{\"prompt_tokens\":7,"
				 "\"completion_tokens\":0}}",
			      &code, why, sizeof(why)),
			 0);
	assert_false(cl_asm_has_choice(a));
	assert_false(cl_asm_finished(a));
	assert_int_equal(cl_asm_prompt_tokens(a), 7);
	cl_asm_free(a);
}

/* An error in the stream, as an object (vLLM) with its code, or as a string (TGI): the
 * server's words are kept and the assembly says an error came. */
static void test_error_dialects(void **state)
{
	(void)state;
	struct cl_asm *a = cl_asm_new();
	char why[400];
	int code = -1;
	assert_int_equal(feed(a, "{\"error\":{\"object\":\"error\",\"message\":\"too long\","
				 "\"code\":400}}",
			      &code, why, sizeof(why)),
			 -1);
	assert_int_equal(code, 400);
	assert_string_equal(why, "the server sent an error in the stream (code 400): too long");
	assert_true(cl_asm_error_seen(a));
	cl_asm_reset(a);
	assert_false(cl_asm_error_seen(a));
	assert_int_equal(feed(a, "{\"error\":\"Input validation error\",\"error_type\":"
				 "\"validation\"}",
			      &code, why, sizeof(why)),
			 -1);
	assert_int_equal(code, 0);
	assert_string_equal(why, "the server sent an error in the stream: Input validation error");
	assert_true(cl_asm_error_seen(a));
	/* a chunk that is not JSON is malformed, not an error the server sent */
	cl_asm_reset(a);
	assert_int_equal(feed(a, "{\"choices\":[", &code, why, sizeof(why)), -1);
	assert_false(cl_asm_error_seen(a));
	cl_asm_free(a);
}

/* Content is what reaches the user: a content token or a tool call, not reasoning alone;
 * an answer is whole once every choice seen has its finish_reason. */
static void test_content_and_finish(void **state)
{
	(void)state;
	struct cl_asm *a = cl_asm_new();
	char why[400];
	int code;
	assert_int_equal(feed(a, "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":"
				 "\"hm\"},\"finish_reason\":null}]}",
			      &code, why, sizeof(why)),
			 0);
	assert_true(cl_asm_has_token(a));
	assert_true(cl_asm_has_choice(a));
	assert_false(cl_asm_has_content(a));
	assert_false(cl_asm_finished(a));
	assert_int_equal(feed(a, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{"
				 "\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\","
				 "\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}",
			      &code, why, sizeof(why)),
			 0);
	assert_true(cl_asm_has_content(a));
	assert_true(cl_asm_finished(a));
	/* a second choice without its finish_reason: not whole */
	assert_int_equal(feed(a, "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"x\"},"
				 "\"finish_reason\":null}]}",
			      &code, why, sizeof(why)),
			 0);
	assert_false(cl_asm_finished(a));
	cl_asm_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_done_alone_is_no_answer),
		cmocka_unit_test(test_error_dialects),
		cmocka_unit_test(test_content_and_finish),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
