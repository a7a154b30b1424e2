/* Tests of the Anthropic Messages decoder (client/stream/messages.c): the source-derived
 * fixtures of Anthropic's and llama.cpp's streams read by hand, the error event through
 * cl_event_decode, wrong shapes, and a differential run of mutated events against jansson's
 * tree (messages_oracle.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api_oracle.h"
#include "chatload/buf.h"
#include "chatload/err.h"
#include "client/stream/sse.h"

/* Decodes from an exact-size heap copy (ASan sees a read past the end), checks the oracle,
 * and maps the pointers back into s. */
static int dec(const char *s, size_t n, struct cl_chunk *c)
{
	char *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	memcpy(copy, s, n);
	struct cl_embedding e;
	int rc = api_decode(API_MESSAGES, copy, n, c, &e);
	char detail[256];
	const char *bad =
	    api_oracle_check(API_MESSAGES, copy, n, rc, c, &e, detail, sizeof(detail));
	if (bad)
		fail_msg("oracle: %s on '%.*s'", bad, (int)n, s);
	c->error_msg = c->error_msg ? s + (c->error_msg - copy) : NULL;
	c->content = c->content ? s + (c->content - copy) : NULL;
	for (uint32_t i = 0; i < c->n_tool_calls && i < CL_CHUNK_TOOLS_MAX; i++) {
		struct cl_chunk_tool *t = &c->tools[i];
		t->id = t->id ? s + (t->id - copy) : NULL;
		t->name = t->name ? s + (t->name - copy) : NULL;
		t->args = t->args ? s + (t->args - copy) : NULL;
	}
	free(copy);
	return rc;
}

static int dec_str(const char *s, struct cl_chunk *c)
{
	return dec(s, strlen(s), c);
}

/* The events of a fixture, each kept and decoded. */
struct events {
	struct cl_chunk c[32];
	int rc[32];
	char *data[32];
	size_t len[32];
	unsigned flags[32];
	size_t n;
};

static int on_event(void *ctx, const char *data, size_t len, unsigned flags)
{
	struct events *ev = ctx;
	assert_true(ev->n < 32);
	char *keep = malloc(len ? len : 1);
	assert_non_null(keep);
	memcpy(keep, data, len);
	ev->data[ev->n] = keep;
	ev->len[ev->n] = len;
	ev->flags[ev->n] = flags;
	ev->rc[ev->n] = dec(keep, len, &ev->c[ev->n]);
	ev->n++;
	return 0;
}

/* A fixture's body (after the status line and headers of a .http file) through the SSE
 * parser. */
static void feed_fixture(const char *name, struct events *ev)
{
	char path[512];
	struct cl_buf b;
	struct cl_sse_parser p;
	const char *dir = getenv("CHATLOAD_TEST_DATA");
	if (!dir)
		fail_msg("CHATLOAD_TEST_DATA is not set: run through ctest");
	snprintf(path, sizeof(path), "%s/streams/%s", dir, name);
	cl_buf_init(&b, 1 << 20);
	assert_int_equal(cl_buf_read_file(&b, path), 0);
	const char *body = b.data;
	if (strncmp(body, "HTTP/", 5) == 0) {
		body = strstr(b.data, "\n\n");
		assert_non_null(body);
		body += 2;
	}
	assert_int_equal(cl_sse_init(&p, 0), 0);
	assert_int_equal(cl_sse_feed(&p, body, b.len - (size_t)(body - b.data), on_event, ev), 0);
	assert_false(cl_sse_pending(&p));
	cl_sse_destroy(&p);
	cl_buf_free(&b);
}

static void free_events(struct events *ev)
{
	for (size_t i = 0; i < ev->n; i++)
		free(ev->data[i]);
}

/* Whether event i carried none of an answer's facts. */
static bool says_nothing(const struct cl_chunk *c)
{
	return !c->done && !c->is_error && !c->has_usage && !c->has_content && !c->has_reasoning &&
	       !c->has_tool_call && !c->n_tool_calls && !c->finish_reason[0];
}

/* Anthropic's documented stream: thinking, text, a tool call, read by hand. */
static void test_anthropic_fixture(void **state)
{
	(void)state;
	struct events ev = { 0 };
	feed_fixture("anthropic-style-messages.sse", &ev);
	assert_int_equal(ev.n, 18);
	for (size_t i = 0; i < ev.n; i++)
		assert_int_equal(ev.rc[i], 0);
	/* message_start: the prompt is input + cache read + cache creation; its output_tokens
	 * (2) is a placeholder and not read */
	assert_true(ev.c[0].has_usage);
	assert_int_equal(ev.c[0].prompt_tokens, 472 + 2048);
	assert_int_equal(ev.c[0].cached_tokens, 2048);
	assert_int_equal(ev.c[0].completion_tokens, -1);
	assert_int_equal(ev.c[0].reasoning_tokens, -1);
	/* content_block_start (empty thinking), ping: nothing */
	assert_true(says_nothing(&ev.c[1]));
	assert_true(says_nothing(&ev.c[2]));
	/* thinking deltas are reasoning, raw bytes (the escaped quotes count as sent) */
	assert_true(ev.c[3].has_reasoning && !ev.c[3].has_content);
	assert_int_equal(ev.c[3].reasoning_bytes, strlen("The user greets me."));
	assert_int_equal(ev.c[4].reasoning_bytes, strlen(" A short \\\"hello\\\" back."));
	/* signature_delta, content_block_stop, the text block's start: nothing */
	for (size_t i = 5; i <= 7; i++)
		assert_true(says_nothing(&ev.c[i]));
	assert_true(ev.c[8].has_content && !ev.c[8].has_reasoning);
	assert_int_equal(ev.c[8].content_len, 5);
	assert_memory_equal(ev.c[8].content, "Hello", 5);
	assert_int_equal(ev.c[9].content_bytes, strlen("! How can I help?"));
	assert_true(says_nothing(&ev.c[10]));
	/* the tool_use block: its id and name, at block index 2 */
	const struct cl_chunk *t = &ev.c[11];
	assert_true(t->has_tool_call);
	assert_int_equal(t->n_tool_calls, 1);
	assert_int_equal(t->tools[0].index, 2);
	assert_memory_equal(t->tools[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", t->tools[0].id_len);
	assert_memory_equal(t->tools[0].name, "get_weather", 11);
	assert_false(t->has_content);
	/* an empty fragment is a piece of the call but carries nothing */
	assert_int_equal(ev.c[12].n_tool_calls, 1);
	assert_false(ev.c[12].has_tool_call);
	assert_true(ev.c[13].has_tool_call);
	assert_memory_equal(ev.c[13].tools[0].args, "{\\\"location\\\": \\\"Par",
			    ev.c[13].tools[0].args_len);
	assert_int_equal(ev.c[13].tool_bytes, ev.c[13].tools[0].args_len);
	assert_true(says_nothing(&ev.c[15]));
	/* message_delta: the finish and the answer's cumulative output tokens */
	const struct cl_chunk *d = &ev.c[16];
	assert_string_equal(d->finish_reason, "tool_calls");
	assert_true(d->has_usage);
	assert_int_equal(d->completion_tokens, 89);
	assert_int_equal(d->prompt_tokens, -1); /* not said again here */
	assert_false(d->done);
	assert_true(ev.c[17].done);
	/* no event is an error, and only message_stop ends the answer */
	for (size_t i = 0; i < ev.n; i++) {
		assert_false(ev.c[i].is_error);
		assert_int_equal(ev.c[i].done, i == 17);
	}
	free_events(&ev);
}

/* llama.cpp's server: input_tokens without the cached part, ended by max_tokens. */
static void test_llamacpp_fixture(void **state)
{
	(void)state;
	struct events ev = { 0 };
	feed_fixture("llama.cpp-style-messages.sse", &ev);
	assert_int_equal(ev.n, 11);
	size_t reasoning = 0, content = 0;
	for (size_t i = 0; i < ev.n; i++) {
		assert_int_equal(ev.rc[i], 0);
		reasoning += ev.c[i].has_reasoning;
		content += ev.c[i].has_content;
	}
	assert_int_equal(reasoning, 2);
	assert_int_equal(content, 2);
	assert_int_equal(ev.c[0].prompt_tokens, 17);
	assert_int_equal(ev.c[0].cached_tokens, 0);
	assert_memory_equal(ev.c[7].content, " there\\n", 8);
	assert_string_equal(ev.c[9].finish_reason, "length");
	assert_int_equal(ev.c[9].completion_tokens, 4);
	assert_true(ev.c[10].done);
	free_events(&ev);
}

/* Anthropic's error event, with its event: line and without: a stream error with its
 * message and type, whichever way it came. */
static void test_error_event(void **state)
{
	(void)state;
	struct events ev = { 0 };
	feed_fixture("anthropic-error-event.http", &ev);
	assert_int_equal(ev.n, 2);
	assert_true(ev.flags[1] & CL_SSE_ERROR_EVENT);
	for (int pass = 0; pass < 2; pass++) {
		struct cl_chunk c;
		unsigned flags = pass ? 0 : ev.flags[1];
		assert_int_equal(cl_event_decode(CL_API_MESSAGES, ev.data[1], ev.len[1], flags, &c),
				 0);
		assert_true(c.is_error);
		assert_int_equal(c.error_msg_len, 10);
		assert_memory_equal(c.error_msg, "Overloaded", 10);
		assert_int_equal(c.error_type_len, strlen("overloaded_error"));
		assert_memory_equal(c.error_type, "overloaded_error", c.error_type_len);
	}
	/* the decoder alone: an error with its message */
	assert_true(ev.c[1].is_error);
	assert_memory_equal(ev.c[1].error_msg, "Overloaded", 10);
	/* the event before it is the message's start, not a failure */
	struct cl_chunk c;
	assert_int_equal(cl_event_decode(CL_API_MESSAGES, ev.data[0], ev.len[0], 0, &c), 0);
	assert_false(c.is_error);
	assert_int_equal(c.prompt_tokens, 10);
	free_events(&ev);
}

static void test_shapes(void **state)
{
	(void)state;
	struct cl_chunk c;
	static const struct {
		const char *stop, *finish;
	} stops[] = {
		{ "end_turn", "stop" },     { "stop_sequence", "stop" },
		{ "max_tokens", "length" }, { "tool_use", "tool_calls" },
		{ "refusal", "other" },     { "pause_turn", "other" },
	};
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		char text[160];
		snprintf(text, sizeof(text),
			 "{\"delta\":{\"stop_reason\":\"%s\"},\"type\":\"message_delta\"}",
			 stops[i].stop);
		assert_int_equal(dec_str(text, &c), 0);
		assert_string_equal(c.finish_reason, stops[i].finish);
		assert_false(c.has_usage);
	}
	/* a newer message_delta says the input again: the prompt with its cached part */
	assert_int_equal(dec_str("{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null},"
				 "\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":7,"
				 "\"cache_creation_input_tokens\":3,\"output_tokens\":9}}",
				 &c),
			 0);
	assert_int_equal(c.prompt_tokens, 15);
	assert_int_equal(c.cached_tokens, 7);
	assert_int_equal(c.completion_tokens, 9);
	assert_string_equal(c.finish_reason, "");
	/* a sum past int64 saturates */
	assert_int_equal(dec_str("{\"type\":\"message_start\",\"message\":{\"usage\":{"
				 "\"input_tokens\":9223372036854775807,"
				 "\"cache_read_input_tokens\":1}}}",
				 &c),
			 0);
	assert_int_equal(c.prompt_tokens, INT64_MAX);
	/* type last, escaped */
	assert_int_equal(
	    dec_str("{\"index\":0,\"delta\":{\"text\":\"x\",\"type\":\"text_d\\u0065lta\"},"
		    "\"type\":\"content_block_delt\\u0061\"}",
		    &c),
	    0);
	assert_true(c.has_content);
	/* a type with a NUL inside is another type */
	assert_int_equal(dec_str("{\"type\":\"message_stop\\u0000\"}", &c), 0);
	assert_false(c.done);
	/* [DONE] from a proxy ends the answer */
	assert_int_equal(dec_str("[DONE]", &c), 0);
	assert_true(c.done);
	/* the last of repeated keys counts */
	assert_int_equal(
	    dec_str("{\"type\":\"error\",\"error\":{\"message\":\"a\"},\"error\":\"b\"}", &c), 0);
	assert_true(c.is_error);
	assert_null(c.error_msg);
	/* wrong shapes name the field */
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "[]", "the event is not a JSON object" },
		{ "{\"index\":0}", "the event has no type" },
		{ "{\"type\":1}", "type is not a string" },
		{ "{\"type\":\"ping\",\"index\":-1}", "index is not a non-negative integer" },
		{ "{\"type\":\"message_start\",\"message\":[]}", "message is not an object" },
		{ "{\"type\":\"message_start\",\"message\":{\"usage\":1}}",
		  "message.usage is not an object" },
		{ "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":\"3\"}}}",
		  "message.usage.input_tokens is not a non-negative integer" },
		{ "{\"type\":\"content_block_start\",\"content_block\":\"text\"}",
		  "content_block is not an object" },
		{ "{\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\","
		  "\"text\":5}}",
		  "content_block.text is not a string" },
		{ "{\"type\":\"content_block_start\",\"content_block\":{\"type\":\"tool_use\","
		  "\"name\":{}}}",
		  "content_block.name is not a string" },
		{ "{\"type\":\"content_block_delta\",\"delta\":{\"type\":7}}",
		  "delta.type is not a string" },
		{ "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\","
		  "\"thinking\":[]}}",
		  "delta.thinking is not a string" },
		{ "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\","
		  "\"partial_json\":{}}}",
		  "delta.partial_json is not a string" },
		{ "{\"type\":\"content_block_delta\",\"delta\":true}", "delta is not an object" },
		{ "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":1}}",
		  "delta.stop_reason is not a string" },
		{ "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1.5}}",
		  "usage.output_tokens is not a non-negative integer" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dec_str(bad[i].text, &c), CL_EPROTO);
		assert_string_equal(c.malformed, bad[i].why);
		assert_false(c.has_content || c.has_usage || c.done);
	}
	/* what another type carries is not judged: a ping with a stray delta */
	assert_int_equal(dec_str("{\"type\":\"ping\",\"delta\":3,\"usage\":\"x\"}", &c), 0);
	assert_int_equal(dec_str("{\"type\":\"message_stop\"", &c), CL_EPARSE);
	assert_int_equal(dec_str("", &c), CL_EPARSE);
}

/* Mutations of real-shaped events through the decoder, each checked by the oracle. */
static uint64_t rng_s = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
	rng_s ^= rng_s << 13;
	rng_s ^= rng_s >> 7;
	rng_s ^= rng_s << 17;
	return rng_s;
}

static void mutate(char *s, size_t *n, size_t cap)
{
	static const char alphabet[] = "{}[]\",:0123456789.-eE \\untrlfa\"xyz_";
	int k = 1 + (int)(rnd() % 3);
	while (k--) {
		size_t at = *n ? rnd() % *n : 0;
		switch (rnd() % 4) {
		case 0:
			if (*n)
				s[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
			break;
		case 1:
			if (*n + 1 < cap) {
				memmove(s + at + 1, s + at, *n - at);
				s[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
				(*n)++;
			}
			break;
		case 2:
			if (*n) {
				memmove(s + at, s + at + 1, *n - at - 1);
				(*n)--;
			}
			break;
		default:
			*n = at;
			break;
		}
	}
}

static void test_differential(void **state)
{
	(void)state;
	static const char *const seeds[] = {
		"{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":"
		"4,"
		"\"cache_read_input_tokens\":2,\"cache_creation_input_tokens\":1,"
		"\"output_tokens\":1}}}",
		"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
		"\"thinking\",\"thinking\":\"\"}}",
		"{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":"
		"\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}}",
		"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\","
		"\"text\":\"Hi \\\"x\\\"\"}}",
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
		"\"thinking_delta\",\"thinking\":\"hm\"}}",
		"{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
		"\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}",
		"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
		"\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}",
		"{\"type\":\"message_stop\"}",
		"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"O\"}}",
		"{\"type\":\"ping\"}",
	};
	size_t n_seeds = sizeof(seeds) / sizeof(seeds[0]);
	char buf[4096];
	size_t checked = 0, accepted = 0, proto = 0;
	for (size_t r = 0; r < 40000; r++) {
		const char *seed = seeds[r % n_seeds];
		size_t n = strlen(seed);
		memcpy(buf, seed, n);
		if (r >= n_seeds)
			mutate(buf, &n, sizeof(buf));
		struct cl_chunk c;
		int rc = dec(buf, n, &c); /* fails the test on a disagreement */
		struct cl_chunk ev;
		static const unsigned flag_sets[] = { 0, CL_SSE_ERROR_FIELD, CL_SSE_ERROR_EVENT,
						      CL_SSE_DOCUMENT };
		for (size_t f = 0; f < 4; f++) {
			int erc = cl_event_decode(CL_API_MESSAGES, buf, n, flag_sets[f], &ev);
			const char *bad =
			    api_event_check(CL_API_MESSAGES, buf, n, flag_sets[f], erc, &ev);
			if (bad)
				fail_msg("event oracle (flags %u): %s on '%.*s'", flag_sets[f], bad,
					 (int)n, buf);
		}
		checked++;
		accepted += rc != CL_EPARSE;
		proto += rc == CL_EPROTO;
	}
	/* The mutations must leave enough valid JSON, and wrong shapes, for the checks to mean
	 * something. */
	assert_true(accepted * 10 > checked);
	assert_true(proto > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_anthropic_fixture), cmocka_unit_test(test_llamacpp_fixture),
		cmocka_unit_test(test_error_event),       cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_differential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
