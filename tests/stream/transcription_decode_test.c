/* Tests of the transcription decoder (client/stream/transcription.c): whole answers as vLLM
 * and OpenAI send them, OpenAI's streamed events and vLLM's chat-shaped chunks through
 * cl_event_decode, errors in any dialect, wrong shapes naming the field, and every
 * truncation and one-byte change of the fixtures against jansson's verdict on the JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "chatload/plan.h"
#include "client/stream/event.h"
#include "client/stream/transcription.h"

/* Decodes from an exact-size heap copy so that ASan sees any read past the end. */
static int whole(const char *s, size_t n, struct cl_transcription *t)
{
	char *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	memcpy(copy, s, n);
	int rc = cl_transcription_decode(copy, n, true, t);
	/* what the decoder keeps points into its input */
	if (t->text)
		assert_true(t->text >= copy && t->text + t->text_len <= copy + n);
	t->text = t->text ? s + (t->text - copy) : NULL;
	t->error_msg = t->error_msg ? s + (t->error_msg - copy) : NULL;
	free(copy);
	return rc;
}

static int event(const char *s, struct cl_chunk *c)
{
	size_t n = strlen(s);
	char *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	memcpy(copy, s, n);
	int rc = cl_event_decode(CL_API_TRANSCRIPTION, copy, n, 0, c);
	c->content = c->content ? s + (c->content - copy) : NULL;
	c->error_msg = c->error_msg ? s + (c->error_msg - copy) : NULL;
	free(copy);
	return rc;
}

static const char *const fixtures[] = {
	"{\"text\":\"And so, my fellow Americans\",\"usage\":{\"type\":\"duration\",\"seconds\":9}}",
	"{\"text\":\"Hi\",\"usage\":{\"type\":\"tokens\",\"input_tokens\":14,\"input_token_details\":"
	"{\"text_tokens\":0,\"audio_tokens\":14},\"output_tokens\":45,\"total_tokens\":59}}",
	"{\"text\":\"caf\\u00e9\",\"language\":\"french\",\"duration\":3.25,\"segments\":[]}",
	"{\"error\":{\"message\":\"Invalid file format.\",\"type\":\"invalid_request_error\","
	"\"code\":400}}",
	"{\"type\":\"transcript.text.delta\",\"delta\":\"The\",\"logprobs\":[]}",
	"{\"type\":\"transcript.text.done\",\"text\":\"The end\",\"usage\":{\"input_tokens\":3,"
	"\"output_tokens\":2,\"total_tokens\":5}}",
};

static void test_whole(void **state)
{
	(void)state;
	struct cl_transcription t;
	assert_int_equal(whole(fixtures[0], strlen(fixtures[0]), &t), 0);
	assert_true(t.has_text);
	assert_int_equal(t.text_len, 27);
	assert_memory_equal(t.text, "And so, my fellow Americans", 27);
	assert_true(t.has_usage);
	assert_true(t.seconds == 9.0);
	assert_int_equal(t.output_tokens, -1);
	assert_int_equal(whole(fixtures[1], strlen(fixtures[1]), &t), 0);
	assert_int_equal(t.input_tokens, 14);
	assert_int_equal(t.output_tokens, 45);
	assert_int_equal(whole(fixtures[2], strlen(fixtures[2]), &t), 0);
	assert_false(t.has_usage);
	assert_int_equal(whole(fixtures[3], strlen(fixtures[3]), &t), 0);
	assert_true(t.is_error);
	assert_int_equal(t.error_code, 400);
	assert_memory_equal(t.error_msg, "Invalid file format.", 20);

	static const struct {
		const char *s, *why;
	} bad[] = {
		{ "[]", "the answer is not a JSON object" },
		{ "{\"text\":5}", "text is not a string" },
		{ "{\"usage\":{}}", "the answer has neither text nor error" },
		{ "{\"text\":\"\",\"usage\":[]}", "usage is not an object" },
		{ "{\"text\":\"\",\"usage\":{\"output_tokens\":-1}}",
		  "usage.output_tokens is not a non-negative integer" },
		{ "{\"text\":\"\",\"usage\":{\"seconds\":\"9\"}}",
		  "usage.seconds is not a non-negative number" },
		{ "{\"text\":\"\",\"error\":5}", "error is neither an object nor a string" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = whole(bad[i].s, strlen(bad[i].s), &t);
		assert_int_equal(rc, CL_EPROTO);
		assert_string_equal(t.malformed, bad[i].why);
	}
	assert_int_equal(whole("{\"text\":\"x\"", 11, &t), CL_EPARSE);
	assert_int_equal(whole("", 0, &t), CL_EPARSE);
}

static void test_events(void **state)
{
	(void)state;
	struct cl_chunk c;
	/* OpenAI's */
	assert_int_equal(event(fixtures[4], &c), 0);
	assert_true(c.has_content);
	assert_int_equal(c.content_len, 3);
	assert_memory_equal(c.content, "The", 3);
	assert_false(c.done);
	assert_int_equal(event(fixtures[5], &c), 0);
	assert_true(c.done);
	assert_true(c.has_usage);
	assert_int_equal(c.completion_tokens, 2);
	assert_int_equal(c.prompt_tokens, 3);
	assert_int_equal(event("{\"type\":\"transcript.text.delta\"}", &c), CL_EPROTO);
	assert_string_equal(c.malformed, "a transcript.text.delta event has no delta");
	/* a type it does not know carries nothing and is no error */
	assert_int_equal(event("{\"type\":\"transcript.text.segment\",\"x\":1}", &c), 0);
	assert_false(c.has_content || c.done || c.is_error);
	/* a type with a NUL inside is another type, not one cut short */
	assert_int_equal(event("{\"type\":\"transcript.text.done\\u0000\"}", &c), 0);
	assert_false(c.has_content || c.done || c.is_error);
	/* vLLM's */
	assert_int_equal(event("{\"id\":\"trsc-1\",\"object\":\"transcription.chunk\",\"created\":1,"
			       "\"model\":\"w\",\"choices\":[{\"delta\":{\"content\":\" fellow\"},"
			       "\"finish_reason\":null,\"stop_reason\":null}]}",
			       &c),
			 0);
	assert_true(c.has_content);
	assert_memory_equal(c.content, " fellow", 7);
	assert_int_equal(event("{\"id\":\"trsc-1\",\"object\":\"transcription.chunk\",\"choices\":[],"
			       "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":6,"
			       "\"total_tokens\":7}}",
			       &c),
			 0);
	assert_true(c.has_usage);
	assert_int_equal(c.completion_tokens, 6);
	assert_int_equal(event("[DONE]", &c), 0);
	assert_true(c.done);
	/* failures, in OpenAI's and vLLM's words */
	assert_int_equal(event("{\"type\":\"error\",\"error\":{\"message\":\"boom\",\"code\":5}}", &c),
			 0);
	assert_true(c.is_error);
	assert_int_equal(event("{\"object\":\"error\",\"message\":\"bad audio\",\"type\":"
			       "\"BadRequestError\",\"code\":400}",
			       &c),
			 0);
	assert_true(c.is_error);
	assert_int_equal(c.error_code, 400);
}

/* jansson's verdict on whether s is one JSON document (lone surrogates aside, which the
 * decoder accepts and jansson does not: such inputs are skipped). */
static int json_ok(const char *s, size_t n)
{
	if (memmem(s, n, "\\u", 2))
		return -1;
	json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	json_decref(j);
	return j != NULL;
}

static void test_mutations(void **state)
{
	(void)state;
	size_t checked = 0;
	for (size_t f = 0; f < sizeof(fixtures) / sizeof(fixtures[0]); f++) {
		size_t n = strlen(fixtures[f]);
		char *m = malloc(n);
		static const char subs[] = { '"', '{', '}', ',', ':', 'x', '1', '[', '\\', ' ' };
		for (size_t cut = 0; cut <= n; cut++) {
			struct cl_transcription t;
			int rc = whole(fixtures[f], cut, &t);
			int ok = json_ok(fixtures[f], cut);
			if (ok >= 0) {
				assert_int_equal(rc == CL_EPARSE, !ok);
				checked++;
			}
		}
		for (size_t i = 0; i < n; i++) {
			for (size_t k = 0; k < sizeof(subs); k++) {
				memcpy(m, fixtures[f], n);
				m[i] = subs[k];
				struct cl_transcription t;
				int rc = whole(m, n, &t);
				int ok = json_ok(m, n);
				if (ok < 0)
					continue;
				if ((rc == CL_EPARSE) != !ok)
					fail_msg("'%.*s': decoder %d, jansson %s", (int)n, m, rc,
						 ok ? "parses" : "refuses");
				struct cl_chunk c;
				char *copy = malloc(n);
				memcpy(copy, m, n);
				if (cl_event_decode(CL_API_TRANSCRIPTION, copy, n, 0, &c) == 0 &&
				    c.content)
					assert_true(c.content >= copy &&
						    c.content + c.content_len <= copy + n);
				free(copy);
				checked++;
			}
		}
		free(m);
	}
	assert_true(checked > 2000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
