/* Tests of the chunk decoder: fixture events against hand-read values, shapes, mangled input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chatload/buf.h"
#include "chatload/err.h"
#include "client/stream/chunk.h"
#include "client/stream/sse.h"
#include "sse_ref.h"

/* Decodes from an exact-size heap copy, so ASan catches any read past the end (the input
 * is not NUL-terminated). */
static int decode(const char *s, size_t n, struct cl_chunk *c)
{
	char *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	memcpy(copy, s, n);
	int rc = cl_chunk_decode(copy, n, c);
	/* error_msg points into the input: move it to the caller's string before freeing. */
	if (c->error_msg)
		c->error_msg = s + (c->error_msg - copy);
	free(copy);
	return rc;
}

static int decode_str(const char *s, struct cl_chunk *c)
{
	return decode(s, strlen(s), c);
}

/* What one event should decode to; fields not listed are absent. */
struct want {
	bool done, is_error, has_role, has_usage;
	int error_code;
	const char *error_msg;
	uint32_t n_choices;
	size_t content_bytes, reasoning_bytes;
	const char *finish_reason;
	int64_t prompt_tokens, completion_tokens, reasoning_tokens;
};

/* Shorthands for the common shapes; token counts are -1 unless said. */
#define NOUSAGE .prompt_tokens = -1, .completion_tokens = -1, .reasoning_tokens = -1
#define CONTENT(n)                                                                                 \
	{                                                                                          \
		.n_choices = 1, .content_bytes = (n), NOUSAGE                                      \
	}
#define REASON(n)                                                                                  \
	{                                                                                          \
		.n_choices = 1, .reasoning_bytes = (n), NOUSAGE                                    \
	}
#define DONE                                                                                       \
	{                                                                                          \
		.done = true, NOUSAGE                                                              \
	}

static void check(const struct cl_chunk *c, const struct want *w, const char *what)
{
	if (c->done != w->done || c->is_error != w->is_error || c->has_role != w->has_role ||
	    c->has_usage != w->has_usage || c->n_choices != w->n_choices ||
	    c->has_content != (w->content_bytes > 0) ||
	    c->has_reasoning != (w->reasoning_bytes > 0))
		fail_msg("%s: done %d/%d error %d/%d role %d/%d usage %d/%d choices %u/%u content "
			 "%d/%d reasoning %d/%d (got/want)",
			 what, c->done, w->done, c->is_error, w->is_error, c->has_role, w->has_role,
			 c->has_usage, w->has_usage, c->n_choices, w->n_choices, c->has_content,
			 w->content_bytes > 0, c->has_reasoning, w->reasoning_bytes > 0);
	assert_int_equal(c->content_bytes, w->content_bytes);
	assert_int_equal(c->reasoning_bytes, w->reasoning_bytes);
	assert_string_equal(c->finish_reason, w->finish_reason ? w->finish_reason : "");
	assert_int_equal(c->prompt_tokens, w->prompt_tokens);
	assert_int_equal(c->completion_tokens, w->completion_tokens);
	assert_int_equal(c->reasoning_tokens, w->reasoning_tokens);
	assert_int_equal(c->error_code, w->error_code);
	if (w->error_msg) {
		assert_non_null(c->error_msg);
		assert_int_equal(c->error_msg_len, strlen(w->error_msg));
		assert_memory_equal(c->error_msg, w->error_msg, c->error_msg_len);
	} else {
		assert_null(c->error_msg);
		assert_int_equal(c->error_msg_len, 0);
	}
}

/* Read off the fixture files by hand (content bytes are the escaped bytes between quotes). */
static const struct want crlf_want[] = {
	{ .n_choices = 1, .has_role = true, NOUSAGE }, /* role + content "" */
	CONTENT(3),                                    /* "Hel" */
	CONTENT(2),                                    /* "lo" */
	{ .is_error = true,
	  .error_code = 500,
	  .error_msg = "CUDA out of memory. Tried to allocate 2.00 GiB",
	  NOUSAGE },
};
static const struct want llama_want[] = {
	CONTENT(8),  /* " Externe" */
	CONTENT(3),  /* " EP" */
	CONTENT(4),  /* "trim" */
	CONTENT(9),  /* " " + four 2-byte Cyrillic letters */
	CONTENT(12), /* " instantiate" */
	CONTENT(8),  /* "entlicht" */
	CONTENT(3),  /* one 3-byte CJK character */
	CONTENT(3),  /* "ola" */
	CONTENT(4),  /* "camp" */
	CONTENT(3),  /* " Ri" */
	CONTENT(3),  /* "spe" */
	CONTENT(5),  /* " bean" */
	/* no role chunk at all; usage and timings on the last chunk, no details */
	{ .n_choices = 1,
	  .finish_reason = "length",
	  .has_usage = true,
	  .prompt_tokens = 32,
	  .completion_tokens = 12,
	  .reasoning_tokens = -1 },
	DONE,
};
/* The same server answering a prompt it had just answered: usage counts the whole prompt,
 * timings.prompt_n the one token it evaluated (checked in test_llama_timings). */
static const struct want llama_cached_want[] = {
	CONTENT(6), /* " Watch" */
	CONTENT(4), /* "agli" */
	CONTENT(6), /* " trade" */
	{ .n_choices = 1,
	  .finish_reason = "length",
	  .has_usage = true,
	  .prompt_tokens = 138,
	  .completion_tokens = 3,
	  .reasoning_tokens = -1 },
	DONE,
};
static const struct want multitoken_want[] = {
	{ .n_choices = 1, .has_role = true, NOUSAGE },
	CONTENT(17), /* "def quicksort(arr" */
	CONTENT(24), /* "):\n    if len(arr) <= 1", \n being two bytes */
	{ .n_choices = 1, .content_bytes = 21, .finish_reason = "length", NOUSAGE },
	{ .n_choices = 0,
	  .has_usage = true,
	  .prompt_tokens = 12,
	  .completion_tokens = 16,
	  .reasoning_tokens = -1 },
	DONE,
};
static const struct want reasoning_field_want[] = {
	{ .n_choices = 1, .has_role = true, .reasoning_bytes = 8, NOUSAGE }, /* "reasoning" */
	CONTENT(2),
	{ .n_choices = 1, .finish_reason = "stop", NOUSAGE }, /* "usage": null */
	{ .has_usage = true, .prompt_tokens = 3, .completion_tokens = 2, .reasoning_tokens = -1 },
	DONE,
};
static const struct want reasoning_want[] = {
	{ .n_choices = 1, .has_role = true, NOUSAGE },
	REASON(14),                                           /* "The user wants" */
	REASON(18),                                           /* " a one-word reply." */
	CONTENT(2),                                           /* "OK" */
	{ .n_choices = 1, .finish_reason = "stop", NOUSAGE }, /* content "" */
	{ .has_usage = true, .prompt_tokens = 9, .completion_tokens = 10, .reasoning_tokens = 9 },
	DONE,
};

static const struct want vllm_want[] = {
	/* continuous_usage_stats: cumulative usage on every chunk */
	{ .n_choices = 1,
	  .has_role = true,
	  .has_usage = true,
	  .prompt_tokens = 7,
	  .completion_tokens = 0,
	  .reasoning_tokens = -1 },
	/* both reasoning_content and reasoning with the same text: counted once */
	{ .n_choices = 1,
	  .reasoning_bytes = 12,
	  .has_usage = true,
	  .prompt_tokens = 7,
	  .completion_tokens = 2,
	  .reasoning_tokens = -1 },
	/* "Yes \u2014 \"42\"." is 18 escaped bytes */
	{ .n_choices = 1,
	  .content_bytes = 18,
	  .has_usage = true,
	  .prompt_tokens = 7,
	  .completion_tokens = 5,
	  .reasoning_tokens = -1 },
	{ .n_choices = 1,
	  .finish_reason = "stop",
	  .has_usage = true,
	  .prompt_tokens = 7,
	  .completion_tokens = 5,
	  .reasoning_tokens = -1 },
	{ .has_usage = true, .prompt_tokens = 7, .completion_tokens = 5, .reasoning_tokens = 2 },
	DONE,
};
static const struct want cut_want[] = {
	CONTENT(1), /* data split over two lines, joined by '\n' (JSON whitespace) */
	CONTENT(2),
	/* the third event is cut off: never dispatched */
};

static const struct {
	const char *file;
	const struct want *want;
	size_t n;
} fixtures[] = {
	{ "crlf-comment-error-midstream.sse", crlf_want, 4 },
	{ "llama.cpp-b4748-chat-stream.sse", llama_want, 14 },
	{ "llama.cpp-b4748-chat-stream-cached.sse", llama_cached_want, 5 },
	{ "openai-style-multitoken-chunks.sse", multitoken_want, 6 },
	{ "openai-style-reasoning-field.sse", reasoning_field_want, 5 },
	{ "openai-style-reasoning.sse", reasoning_want, 7 },
	{ "vllm-style-continuous-usage.sse", vllm_want, 6 },
	{ "synthetic-cr-multiline-cut.sse", cut_want, 2 },
};

static void read_events(const char *name, struct ev_list *ev)
{
	const char *dir = getenv("CHATLOAD_TEST_DATA");
	char path[1024];
	struct cl_buf b;
	struct cl_sse_parser p;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/streams/%s", dir, name);
	cl_buf_init(&b, 1 << 20);
	int rc = cl_buf_read_file(&b, path);
	if (rc)
		fail_msg("cannot read '%s': %s", path, cl_strerror(rc));
	assert_int_equal(cl_sse_init(&p, 0), 0);
	assert_int_equal(cl_sse_feed(&p, b.data, b.len, ev_list_cb, ev), 0);
	cl_sse_destroy(&p);
	cl_buf_free(&b);
}

static void test_fixtures(void **state)
{
	for (size_t f = 0; f < sizeof(fixtures) / sizeof(fixtures[0]); f++) {
		struct ev_list ev = { 0 };
		read_events(fixtures[f].file, &ev);
		assert_int_equal(ev.n, fixtures[f].n);
		for (size_t i = 0; i < ev.n; i++) {
			struct cl_chunk c;
			char what[128];
			snprintf(what, sizeof(what), "%s event %zu", fixtures[f].file, i);
			int rc = decode(ev.arena + ev.off[i], ev.len[i], &c);
			if (rc)
				fail_msg("%s: %s", what, cl_strerror(rc));
			check(&c, &fixtures[f].want[i], what);
		}
		ev_list_free(&ev);
	}
}

/* Every proper prefix of every fixture event is rejected (they are all objects, or
 * "[DONE]"), and rejection leaves *out empty. */
static void test_truncations(void **state)
{
	const struct want empty = { NOUSAGE };
	for (size_t f = 0; f < sizeof(fixtures) / sizeof(fixtures[0]); f++) {
		struct ev_list ev = { 0 };
		read_events(fixtures[f].file, &ev);
		for (size_t i = 0; i < ev.n; i++) {
			for (size_t cut = 0; cut < ev.len[i]; cut++) {
				struct cl_chunk c;
				int rc = decode(ev.arena + ev.off[i], cut, &c);
				if (rc != CL_EPARSE)
					fail_msg("%s event %zu cut at %zu: rc %d, want %d",
						 fixtures[f].file, i, cut, rc, CL_EPARSE);
				check(&c, &empty, "rejected");
			}
		}
		ev_list_free(&ev);
	}
}

static void test_done(void **state)
{
	struct cl_chunk c;
	const struct want done = DONE;
	assert_int_equal(decode_str("[DONE]", &c), 0);
	check(&c, &done, "[DONE]");
	assert_int_equal(decode_str("[DONE] ", &c), CL_EPARSE);
	assert_int_equal(decode_str(" [DONE]", &c), CL_EPARSE);
	assert_int_equal(decode_str("[done]", &c), CL_EPARSE);
	assert_int_equal(decode_str("[DONE", &c), CL_EPARSE);
	assert_int_equal(decode_str("\"[DONE]\"", &c), CL_EPROTO); /* a JSON string, no chunk */
	assert_false(c.done);
}

/* The content text a multi-turn history repeats: the first choice with content, raw. */
static void test_content_text(void **state)
{
	struct cl_chunk c;
	const char *in = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}},"
			 "{\"index\":1,\"delta\":{\"reasoning_content\":\"r\",\"content\":"
			 "\"say \\\"hi\\\"\\n\"}},{\"index\":2,\"delta\":{\"content\":\"x\"}}]}";
	assert_int_equal(decode_str(in, &c), 0);
	assert_non_null(c.content);
	assert_int_equal(c.content_len, strlen("say \\\"hi\\\"\\n"));
	assert_memory_equal(c.content, "say \\\"hi\\\"\\n", c.content_len);
	assert_int_equal(decode_str("{\"choices\":[{\"delta\":{\"reasoning\":\"r\"}}]}", &c), 0);
	assert_null(c.content);
	assert_int_equal(c.content_len, 0);
}

static void test_shapes(void **state)
{
	struct cl_chunk c;

	/* Two choices: content summed, the first non-empty finish_reason wins. */
	assert_int_equal(
	    decode_str("{\"choices\":[{\"delta\":{\"content\":\"ab\"},\"finish_reason\":"
		       "null},{\"delta\":{\"content\":\"cde\",\"role\":\"assistant\"},"
		       "\"finish_reason\":\"stop\"},{\"finish_reason\":\"length\"}]}",
		       &c),
	    0);
	check(&c,
	      &(struct want){ .n_choices = 3,
			      .content_bytes = 5,
			      .has_role = true,
			      .finish_reason = "stop",
			      NOUSAGE },
	      "two choices");

	/* Both reasoning fields in one choice carry the same text: counted once. */
	assert_int_equal(decode_str("{\"choices\":[{\"delta\":{\"reasoning_content\":\"abc\","
				    "\"reasoning\":\"abc\"}}]}",
				    &c),
			 0);
	check(&c, &(struct want){ .n_choices = 1, .reasoning_bytes = 3, NOUSAGE },
	      "both reasoning");
	assert_int_equal(
	    decode_str("{\"choices\":[{\"delta\":{\"reasoning\":\"\","
		       "\"reasoning_content\":\"xy\"}},{\"delta\":{\"reasoning\":\"z\"}}]}",
		       &c),
	    0);
	check(&c, &(struct want){ .n_choices = 2, .reasoning_bytes = 3, NOUSAGE }, "reasoning sum");

	/* Content and reasoning in the same chunk. */
	assert_int_equal(decode_str("{\"choices\":[{\"delta\":{\"reasoning_content\":\"r\","
				    "\"content\":\"cc\"}}]}",
				    &c),
			 0);
	check(&c,
	      &(struct want){ .n_choices = 1, .content_bytes = 2, .reasoning_bytes = 1, NOUSAGE },
	      "content and reasoning");

	/* Nulls count as absent and are not errors; neither are fields we do not read. */
	assert_int_equal(decode_str("{\"choices\":[{\"delta\":{\"content\":null,\"role\":null,"
				    "\"reasoning\":null,\"tool_calls\":null,\"audio\":5},\"finish_reason\":null,"
				    "\"logprobs\":\"x\"},null],"
				    "\"usage\":{\"prompt_tokens\":null,\"total_tokens\":\"12\","
				    "\"completion_tokens_details\":{\"reasoning_tokens\":null}},"
				    "\"error\":null,\"timings\":[]}",
				    &c),
			 0);
	check(&c, &(struct want){ .n_choices = 2, .has_usage = true, NOUSAGE }, "nulls");
	/* A string error is an error, its text the message. */
	assert_int_equal(decode_str("{\"error\":\"boom\"}", &c), 0);
	check(&c, &(struct want){ .is_error = true, .error_msg = "boom", NOUSAGE }, "string error");

	/* Other wrong types make the chunk malformed, naming the field. */
	static const struct {
		const char *chunk, *why;
	} wrong[] = {
		{ "{\"choices\":[{\"delta\":{\"content\":5}}]}",
		  "choices[].delta.content is not a string" },
		{ "{\"choices\":\"nope\"}", "choices is not an array" },
		{ "{\"usage\":{\"completion_tokens\":\"many\"}}",
		  "usage.completion_tokens is not a non-negative integer" },
		{ "[1,2,3]", "the chunk is not a JSON object" },
		{ "{\"choices\":[3]}",
		  "choices[] holds something that is neither an object nor null" },
		{ "{\"choices\":[{\"delta\":\"content\"}]}", "choices[].delta is not an object" },
		{ "{\"choices\":[{\"delta\":{\"reasoning\":5}}]}",
		  "choices[].delta.reasoning is not a string" },
		{ "{\"choices\":[{\"delta\":{\"reasoning_content\":[]}}]}",
		  "choices[].delta.reasoning_content is not a string" },
		{ "{\"choices\":[{\"delta\":{\"role\":true}}]}",
		  "choices[].delta.role is not a string" },
		{ "{\"choices\":[{\"finish_reason\":7}]}",
		  "choices[].finish_reason is not a string" },
		{ "{\"usage\":[1]}", "usage is not an object" },
		{ "{\"usage\":{\"prompt_tokens\":1.5}}",
		  "usage.prompt_tokens is not a non-negative integer" },
		{ "{\"usage\":{\"prompt_tokens\":1e2}}",
		  "usage.prompt_tokens is not a non-negative integer" },
		{ "{\"usage\":{\"completion_tokens\":99999999999999999999}}",
		  "usage.completion_tokens is not a non-negative integer" },
		{ "{\"usage\":{\"completion_tokens_details\":5}}",
		  "usage.completion_tokens_details is not an object" },
		{ "{\"usage\":{\"completion_tokens_details\":{\"reasoning_tokens\":-3}}}",
		  "usage.completion_tokens_details.reasoning_tokens is not a non-negative "
		  "integer" },
		{ "{\"error\":5}", "error is neither an object nor a string" },
		/* the first wrong field in a fixed order: choices, usage, error */
		{ "{\"error\":5,\"usage\":7,\"choices\":[{\"finish_reason\":1}]}",
		  "choices[].finish_reason is not a string" },
	};
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		int rc = decode_str(wrong[i].chunk, &c);
		if (rc != CL_EPROTO || !c.malformed || strcmp(c.malformed, wrong[i].why) != 0)
			fail_msg("'%s': rc %d '%s', want %d '%s'", wrong[i].chunk, rc,
				 c.malformed ? c.malformed : "", CL_EPROTO, wrong[i].why);
		check(&c, &(struct want){ NOUSAGE }, "wrong-shaped input leaves nothing");
	}

	/* Numbers: 0 and the largest int64 are fine counts. */
	assert_int_equal(decode_str("{\"usage\":{\"completion_tokens_details\":{"
				    "\"reasoning_tokens\":9223372036854775807}}}",
				    &c),
			 0);
	check(&c,
	      &(struct want){ .has_usage = true,
			      .prompt_tokens = -1,
			      .completion_tokens = -1,
			      .reasoning_tokens = INT64_MAX },
	      "big numbers");
	assert_int_equal(
	    decode_str("{\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":-0}}", &c), 0);
	check(&c,
	      &(struct want){ .has_usage = true,
			      .prompt_tokens = 0,
			      .completion_tokens = 0,
			      .reasoning_tokens = -1 },
	      "zeros");
	assert_int_equal(decode_str("{\"usage\":{}}", &c), 0);
	check(&c, &(struct want){ .has_usage = true, NOUSAGE }, "empty usage");

	/* Error objects: message kept escaped; code only when an int. */
	assert_int_equal(decode_str("{\"error\":{\"message\":\"bad \\\"x\\\"\\n\",\"code\":"
				    "\"rate_limit_exceeded\",\"type\":\"t\"}}",
				    &c),
			 0);
	check(&c, &(struct want){ .is_error = true, .error_msg = "bad \\\"x\\\"\\n", NOUSAGE },
	      "string code");
	assert_int_equal(decode_str("{\"error\":{\"code\":4294967296,\"message\":7}}", &c), 0);
	check(&c, &(struct want){ .is_error = true, NOUSAGE }, "code too big, message a number");
	assert_int_equal(decode_str("{\"error\":{\"code\":-1,\"message\":\"\"}}", &c), 0);
	check(&c, &(struct want){ .is_error = true, .error_code = -1, .error_msg = "", NOUSAGE },
	      "negative code, empty message");
	assert_int_equal(decode_str("{\"error\":{}}", &c), 0);
	check(&c, &(struct want){ .is_error = true, NOUSAGE }, "empty error");

	/* A repeated key: the last one counts, wholly. */
	assert_int_equal(
	    decode_str("{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2},"
		       "\"usage\":{\"completion_tokens\":3},"
		       "\"choices\":[{\"delta\":{\"content\":\"aaaa\"}}],"
		       "\"choices\":[{\"delta\":{\"content\":\"b\",\"content\":\"cc\"},"
		       "\"finish_reason\":\"stop\",\"finish_reason\":null}],"
		       "\"error\":{\"code\":1},\"error\":null}",
		       &c),
	    0);
	check(&c,
	      &(struct want){ .n_choices = 1,
			      .content_bytes = 2,
			      .has_usage = true,
			      .prompt_tokens = -1,
			      .completion_tokens = 3,
			      .reasoning_tokens = -1 },
	      "repeated keys");
	assert_int_equal(decode_str("{\"choices\":[{\"delta\":{\"content\":\"aaaa\"},"
				    "\"delta\":{\"role\":\"user\"}}]}",
				    &c),
			 0);
	check(&c, &(struct want){ .n_choices = 1, .has_role = true, NOUSAGE }, "repeated delta");

	/* Keys are compared unescaped. */
	assert_int_equal(decode_str("{\"ch\\u006fices\":[{\"d\\u0065lta\":{\"\\u0063ontent\":"
				    "\"xyz\"}}],\"u\\/sage\":{}}",
				    &c),
			 0);
	check(&c, &(struct want){ .n_choices = 1, .content_bytes = 3, NOUSAGE }, "escaped keys");

	/* Top-level values other than objects are valid JSON but no chunk. */
	const char *const scalars[] = { "1",     "-2.5e3", "[]",   "[{}]",
					"\"x\"", "null",   "true", "false" };
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
		assert_int_equal(decode_str(scalars[i], &c), CL_EPROTO);
		check(&c, &(struct want){ NOUSAGE }, scalars[i]);
	}
	const char *const empties[] = { " {} ", "\t\r\n{\"choices\":[]}\n" };
	for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		assert_int_equal(decode_str(empties[i], &c), 0);
		check(&c, &(struct want){ .n_choices = 0, NOUSAGE }, empties[i]);
	}
	/* Whitespace everywhere it may go. */
	assert_int_equal(decode_str(" { \"choices\" : [ { \"delta\" : { \"content\" : \"a\" } , "
				    "\"finish_reason\" : \"stop\" } ] , \"usage\" : { "
				    "\"prompt_tokens\" : 4 } } ",
				    &c),
			 0);
	check(&c,
	      &(struct want){ .n_choices = 1,
			      .content_bytes = 1,
			      .finish_reason = "stop",
			      .has_usage = true,
			      .prompt_tokens = 4,
			      .completion_tokens = -1,
			      .reasoning_tokens = -1 },
	      "spaces");
}

static void test_finish_reason_forms(void **state)
{
	struct cl_chunk c;
	assert_int_equal(decode_str("{\"choices\":[{\"finish_reason\":\"st\\u006fp\"}]}", &c), 0);
	assert_string_equal(c.finish_reason, "stop");
	assert_int_equal(decode_str("{\"choices\":[{\"finish_reason\":"
				    "\"a_very_long_finish_reason_value_here\"}]}",
				    &c),
			 0);
	assert_string_equal(c.finish_reason, "a_very_long_finish_reas"); /* 23 bytes */
	/* Cut at a character boundary: 13 two-byte letters, 11 fit. */
	assert_int_equal(
	    decode_str("{\"choices\":[{\"finish_reason\":"
		       "\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}]}",
		       &c),
	    0);
	assert_int_equal(strlen(c.finish_reason), 22);
	/* Escapes that make 4-byte characters, and an escaped lone surrogate (U+FFFD). */
	assert_int_equal(
	    decode_str("{\"choices\":[{\"finish_reason\":\"\\ud83d\\ude00\\ud800x\"}]}", &c), 0);
	assert_string_equal(c.finish_reason, "\xf0\x9f\x98\x80\xef\xbf\xbdx");
	assert_int_equal(decode_str("{\"choices\":[{\"finish_reason\":\"\"},{\"finish_reason\":"
				    "\"length\"}]}",
				    &c),
			 0);
	assert_string_equal(c.finish_reason, "length");
}

static void expect_parse_error(const char *s, size_t n)
{
	struct cl_chunk c;
	int rc = decode(s, n, &c);
	if (rc != CL_EPARSE)
		fail_msg("'%.*s': rc %d, want %d", (int)n, s, rc, CL_EPARSE);
	check(&c, &(struct want){ NOUSAGE }, "rejected input leaves nothing");
}

/* s is valid JSON: accepted, or (not being a chunk-shaped object) CL_EPROTO. */
static void expect_ok(const char *s)
{
	struct cl_chunk c;
	int rc = decode_str(s, &c);
	if (rc != 0 && rc != CL_EPROTO)
		fail_msg("'%s': rc %d, want 0 or %d", s, rc, CL_EPROTO);
}

#define BAD(lit) expect_parse_error((lit), sizeof(lit) - 1)

static void test_mangled(void **state)
{
	/* Empty and blank. */
	BAD("");
	BAD(" \n\t");
	/* Bad escapes. */
	BAD("\"\\x\"");
	BAD("\"\\u12G4\"");
	BAD("\"\\u12\"");
	BAD("\"\\u\"");
	BAD("\"abc\\\"");
	BAD("\"\\");
	BAD("\"\\U0041\"");
	BAD("\"\\'\"");
	/* Raw control characters in strings (outside strings tab/CR/LF are whitespace). */
	BAD("\"a\x01\"");
	BAD("\"a\tb\"");
	BAD("\"a\nb\"");
	BAD("\"a\x1f\"");
	BAD("\"a\0b\"");
	BAD("{\"choices\":[{\"delta\":{\"content\":\"a\x7f\x01\"}}]}");
	expect_ok("\"a\x7f\"");
	/* Invalid UTF-8: a stray continuation, overlongs, UTF-8 surrogates, past U+10FFFF,
	 * truncated sequences. */
	BAD("\"\x80\"");
	BAD("\"\xc0\xaf\"");
	BAD("\"\xc1\xbf\"");
	BAD("\"\xe0\x80\xaf\"");
	BAD("\"\xed\xa0\x80\"");
	BAD("\"\xf4\x90\x80\x80\"");
	BAD("\"\xf5\x80\x80\x80\"");
	BAD("\"\xff\"");
	BAD("\"\xe6\x8c\"");
	BAD("\"\xe6\x8c");
	expect_ok("\"\xf0\x9f\x98\x80\xe6\x8c\x87\xd0\xb6\xef\xbf\xbf\xf4\x8f\xbf\xbf\"");
	/* Lone surrogates written as escapes are fine. */
	expect_ok("\"\\ud800\"");
	expect_ok("\"\\udc00\"");
	expect_ok("\"\\ud800\\ud800\"");
	expect_ok("\"\\ud83d\\ude00\"");
	expect_ok("\"\\u0000\\u00e9\\/\\b\\f\\n\\r\\t\\\\\\\"\"");
	/* Trailing garbage. */
	BAD("{}x");
	BAD("{} {}");
	BAD("{}]");
	BAD("{}}");
	BAD("[DONE]x");
	BAD("1 2");
	BAD("{\"a\":1}\0");
	/* Numbers. */
	BAD("01");
	BAD("-01");
	BAD("1.");
	BAD("1.e5");
	BAD(".5");
	BAD("-");
	BAD("+1");
	BAD("1e");
	BAD("1e+");
	BAD("1E-");
	BAD("0x1");
	BAD("NaN");
	BAD("Infinity");
	BAD("-Infinity");
	BAD("{\"usage\":{\"prompt_tokens\":01}}");
	BAD("{\"usage\":{\"prompt_tokens\":-}}");
	BAD("{\"usage\":{\"prompt_tokens\":1.}}");
	expect_ok("0");
	expect_ok("-0");
	expect_ok("-0.0");
	expect_ok("1.5e-3");
	expect_ok("1E+9");
	expect_ok("123456789012345678901234567890");
	expect_ok("1e999");
	/* Literals. */
	BAD("tru");
	BAD("nul");
	BAD("True");
	BAD("falsey");
	BAD("{\"a\":nulll}");
	/* Structure. */
	BAD("{\"a\" 1}");
	BAD("{\"a\":1 \"b\":2}");
	BAD("{\"a\":1,}");
	BAD("{,\"a\":1}");
	BAD("[1,]");
	BAD("[,1]");
	BAD("[1 2]");
	BAD("{a:1}");
	BAD("{'a':1}");
	BAD("{\"a\":}");
	BAD("{\"a\"}");
	BAD("{1:2}");
	BAD("[");
	BAD("{");
	BAD("]");
	BAD("}");
	BAD("{\"choices\":[{\"delta\":{\"content\":\"x\"}]}");
	BAD("{\"choices\":[{\"delta\":{\"content\":\"x\"}}}");
	BAD("{\"choices\":[{\"delta\":{\"content\":\"x\",}}]}");
	BAD("{\"choices\":[{\"delta\":{\"content\":\"x\"}},]}");
	BAD("{\"usage\":{\"prompt_tokens\":1,}}");
	BAD("{\"error\":{\"message\":\"m\",}}");
	BAD("\xef\xbb\xbf{}"); /* a BOM is not JSON whitespace */
}

/* Nests n arrays (or objects) around v, optionally inside the chunk path. */
static size_t nest(char *buf, size_t cap, int n, bool objects, const char *prefix,
		   const char *suffix)
{
	size_t len = 0;
	len += (size_t)snprintf(buf + len, cap - len, "%s", prefix);
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s", objects ? "{\"k\":" : "[");
	len += (size_t)snprintf(buf + len, cap - len, "1");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s", objects ? "}" : "]");
	len += (size_t)snprintf(buf + len, cap - len, "%s", suffix);
	assert_true(len < cap);
	return len;
}

/* The last event of a fixture, decoded. */
static void last_event(const char *file, size_t back, struct cl_chunk *c)
{
	struct ev_list ev = { 0 };
	read_events(file, &ev);
	assert_true(ev.n > back);
	size_t i = ev.n - 1 - back;
	assert_int_equal(decode(ev.arena + ev.off[i], ev.len[i], c), 0);
	ev_list_free(&ev);
}

/* What the cache saw, as llama.cpp says it: timings.prompt_n (evaluated) against
 * usage.prompt_tokens, or timings.cache_n in builds that send it; usage's cached_tokens,
 * where a server gives it, first. */
static void test_llama_timings(void **state)
{
	(void)state;
	struct cl_chunk c;
	/* A first request: the whole prompt evaluated, nothing from the cache. */
	last_event("llama.cpp-b4748-chat-stream.sse", 1, &c);
	assert_int_equal(c.timings_prompt_n, 32);
	assert_int_equal(c.timings_cache_n, -1);
	assert_int_equal(cl_chunk_cached_prompt(c.cached_tokens, c.prompt_tokens,
						c.timings_cache_n, c.timings_prompt_n),
			 0);
	/* The same prompt again: 1 token evaluated of 138, so 137 came from the cache. */
	last_event("llama.cpp-b4748-chat-stream-cached.sse", 1, &c);
	assert_int_equal(c.timings_prompt_n, 1);
	assert_int_equal(c.cached_tokens, -1);
	assert_int_equal(cl_chunk_cached_prompt(c.cached_tokens, c.prompt_tokens,
						c.timings_cache_n, c.timings_prompt_n),
			 137);
	/* Newer builds say cache_n outright (and may put it before usage). */
	assert_int_equal(decode_str("{\"timings\":{\"cache_n\":120,\"prompt_n\":18,"
				    "\"prompt_ms\":2.5},\"usage\":{\"prompt_tokens\":138}}",
				    &c),
			 0);
	assert_int_equal(c.timings_cache_n, 120);
	assert_int_equal(c.timings_prompt_n, 18);
	assert_int_equal(cl_chunk_cached_prompt(c.cached_tokens, c.prompt_tokens,
						c.timings_cache_n, c.timings_prompt_n),
			 120);
	/* usage.prompt_tokens_details.cached_tokens wins: one field for both. */
	assert_int_equal(cl_chunk_cached_prompt(64, 138, 120, 18), 64);
	/* Nothing said, or figures that disagree: unknown. */
	assert_int_equal(cl_chunk_cached_prompt(-1, 138, -1, -1), -1);
	assert_int_equal(cl_chunk_cached_prompt(-1, -1, -1, 18), -1);
	assert_int_equal(cl_chunk_cached_prompt(-1, 10, -1, 18), -1);
	/* timings is a server's extra: a shape of its own is skipped, never malformed. */
	assert_int_equal(decode_str("{\"timings\":\"fast\"}", &c), 0);
	assert_null(c.malformed);
	assert_int_equal(c.timings_prompt_n, -1);
	assert_int_equal(decode_str("{\"timings\":{\"prompt_n\":-3,\"cache_n\":1.5}}", &c), 0);
	assert_null(c.malformed);
	assert_int_equal(c.timings_prompt_n, -1);
	assert_int_equal(c.timings_cache_n, -1);
	/* A repeated timings replaces the earlier one. */
	assert_int_equal(
	    decode_str("{\"timings\":{\"prompt_n\":5},\"timings\":{\"cache_n\":2}}", &c), 0);
	assert_int_equal(c.timings_prompt_n, -1);
	assert_int_equal(c.timings_cache_n, 2);
	/* Still validated: bad JSON inside it is bad JSON. */
	assert_int_equal(decode_str("{\"timings\":{\"prompt_n\":01}}", &c), CL_EPARSE);
	assert_int_equal(c.timings_prompt_n, -1);
}

/* Tool calls: the fixtures' pieces assembled by index give each call's id, name and
 * arguments; the chunks that carry them are tool-call chunks, the others are not. */
struct tool_asm {
	char id[64], name[64], args[256];
	size_t args_len;
};

static void assemble_tools(const char *file, struct tool_asm *calls, size_t n_calls,
			   size_t *tool_chunks, char *finish, size_t finish_cap)
{
	struct ev_list ev = { 0 };
	read_events(file, &ev);
	*tool_chunks = 0;
	finish[0] = '\0';
	for (size_t i = 0; i < ev.n; i++) {
		struct cl_chunk c;
		/* The pieces point into the input: decode the list's own copy. */
		int rc = cl_chunk_decode(ev.arena + ev.off[i], ev.len[i], &c);
		if (rc)
			fail_msg("%s event %zu: %s", file, i, cl_strerror(rc));
		assert_false(c.has_content);
		*tool_chunks += c.has_tool_call;
		if (c.finish_reason[0])
			snprintf(finish, finish_cap, "%s", c.finish_reason);
		for (uint32_t k = 0; k < c.n_tool_calls && k < CL_CHUNK_TOOLS_MAX; k++) {
			const struct cl_chunk_tool *t = &c.tools[k];
			assert_true(t->index >= 0 && (size_t)t->index < n_calls);
			struct tool_asm *a = &calls[t->index];
			if (t->id)
				snprintf(a->id, sizeof(a->id), "%.*s", (int)t->id_len, t->id);
			if (t->name)
				snprintf(a->name, sizeof(a->name), "%.*s", (int)t->name_len,
					 t->name);
			assert_true(a->args_len + t->args_len < sizeof(a->args));
			memcpy(a->args + a->args_len, t->args ? t->args : "", t->args_len);
			a->args_len += t->args_len;
			a->args[a->args_len] = '\0';
		}
	}
	ev_list_free(&ev);
}

static void test_tool_calls(void **state)
{
	(void)state;
	struct tool_asm v[2] = { 0 }, l[1] = { 0 };
	size_t n;
	char fr[24];
	assemble_tools("vllm-style-tool-calls.sse", v, 2, &n, fr, sizeof(fr));
	assert_int_equal(n, 6); /* two first deltas, four argument fragments */
	assert_string_equal(fr, "tool_calls");
	assert_string_equal(v[0].id, "chatcmpl-tool-a1b2");
	assert_string_equal(v[0].name, "get_weather");
	/* raw: still JSON-escaped, as a history's string wants it */
	assert_string_equal(v[0].args, "{\\\"city\\\": \\\"Paris\\\", \\\"unit\\\": \\\"c\\\"}");
	assert_string_equal(v[1].id, "chatcmpl-tool-c3d4");
	assert_string_equal(v[1].name, "get_time");
	assert_string_equal(v[1].args, "{\\\"tz\\\": \\\"CET\\\"}");
	assemble_tools("llama.cpp-style-tool-calls.sse", l, 1, &n, fr, sizeof(fr));
	assert_int_equal(n, 7);
	assert_string_equal(fr, "tool_calls");
	assert_string_equal(l[0].id, "QVbXtY2Kl");
	assert_string_equal(l[0].name, "search");
	assert_string_equal(l[0].args, "{\\\"query\\\":\\\"tool calls\\\\n\\\"}");

	/* Hand-made shapes: counts, replacement, nulls, and every wrong type named. */
	struct cl_chunk c;
	static const char two[] =
	    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ab\"}},"
	    "null,{\"index\":1,\"id\":\"x\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}";
	assert_int_equal(cl_chunk_decode(two, sizeof(two) - 1, &c), 0);
	assert_int_equal(c.n_tool_calls, 2);
	assert_true(c.has_tool_call);
	assert_int_equal(c.tool_bytes, 3);
	assert_int_equal(c.tools[1].index, 1);
	assert_int_equal(c.tools[1].id_len, 1);
	/* a repeated tool_calls replaces; empty pieces are no tool call */
	static const char rep[] = "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,"
				  "\"function\":{\"arguments\":\"ab\"}}],\"tool_calls\":[{\"index\":0,"
				  "\"function\":{\"arguments\":\"\"}}]}}]}";
	assert_int_equal(cl_chunk_decode(rep, sizeof(rep) - 1, &c), 0);
	assert_int_equal(c.n_tool_calls, 1);
	assert_false(c.has_tool_call);
	assert_int_equal(c.tool_bytes, 0);
	static const char many[] =
	    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0},{\"index\":1},{\"index\":2},"
	    "{\"index\":3},{\"index\":4,\"function\":{\"arguments\":\"z\"}}]}}]}";
	assert_int_equal(cl_chunk_decode(many, sizeof(many) - 1, &c), 0);
	assert_int_equal(c.n_tool_calls, 5); /* counted past the kept four */
	assert_true(c.has_tool_call);
	assert_int_equal(c.tool_bytes, 1);
	static const struct {
		const char *json, *why;
	} bad[] = {
		{ "{\"choices\":[{\"delta\":{\"tool_calls\":{}}}]}",
		  "choices[].delta.tool_calls is not an array" },
		{ "{\"choices\":[{\"delta\":{\"tool_calls\":[1]}}]}",
		  "choices[].delta.tool_calls[] is not an object" },
		{ "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}",
		  "choices[].delta.tool_calls[].index is not a non-negative integer" },
		{ "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":7}]}}]}",
		  "choices[].delta.tool_calls[].id is not a string" },
		{ "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":\"f\"}]}}]}",
		  "choices[].delta.tool_calls[].function is not an object" },
		{ "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":[]}}]}}]}",
		  "choices[].delta.tool_calls[].function.name is not a string" },
		{ "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":{}}}]}}]}",
		  "choices[].delta.tool_calls[].function.arguments is not a string" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cl_chunk_decode(bad[i].json, strlen(bad[i].json), &c), CL_EPROTO);
		assert_string_equal(c.malformed, bad[i].why);
		assert_int_equal(c.n_tool_calls, 0);
	}
	static const char nulls[] = "{\"choices\":[{\"delta\":{\"tool_calls\":null}},{\"delta\":"
				    "{\"tool_calls\":[{\"id\":null,\"function\":null}]}}]}";
	assert_int_equal(cl_chunk_decode(nulls, sizeof(nulls) - 1, &c), 0);
	assert_int_equal(c.n_tool_calls, 0);
	assert_false(c.has_tool_call);
}

static void test_depth(void **state)
{
	char buf[2048];
	struct cl_chunk c;
	for (int objects = 0; objects < 2; objects++) {
		/* Valid JSON up to the cap; nested arrays are no chunk, nested objects are an
		 * empty one. */
		int fine = objects ? 0 : CL_EPROTO;
		size_t n = nest(buf, sizeof(buf), 64, objects, "", "");
		assert_int_equal(decode(buf, n, &c), fine);
		n = nest(buf, sizeof(buf), 65, objects, "", "");
		assert_int_equal(decode(buf, n, &c), CL_EPARSE);
		n = nest(buf, sizeof(buf), 100, objects, "", "");
		assert_int_equal(decode(buf, n, &c), CL_EPARSE);
		/* Under choices[].delta.content (depth 4 objects/arrays before the value). */
		const char *pre = "{\"choices\":[{\"delta\":{\"content\":";
		n = nest(buf, sizeof(buf), 60, objects, pre, "}}]}");
		assert_int_equal(decode(buf, n, &c), CL_EPROTO); /* content not a string */
		assert_false(c.has_content);
		n = nest(buf, sizeof(buf), 61, objects, pre, "}}]}");
		assert_int_equal(decode(buf, n, &c), CL_EPARSE);
		const char *pre2 = "{\"usage\":{\"completion_tokens_details\":";
		n = nest(buf, sizeof(buf), 62, objects, pre2, "}}");
		assert_int_equal(decode(buf, n, &c), fine);
		n = nest(buf, sizeof(buf), 63, objects, pre2, "}}");
		assert_int_equal(decode(buf, n, &c), CL_EPARSE);
	}
	/* Deep nesting far past the cap does not blow the stack. */
	static char deep[200000];
	memset(deep, '[', sizeof(deep));
	assert_int_equal(decode(deep, sizeof(deep), &c), CL_EPARSE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures), cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_done),     cmocka_unit_test(test_content_text),
		cmocka_unit_test(test_shapes),   cmocka_unit_test(test_finish_reason_forms),
		cmocka_unit_test(test_mangled),  cmocka_unit_test(test_depth),
		cmocka_unit_test(test_llama_timings), cmocka_unit_test(test_tool_calls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
