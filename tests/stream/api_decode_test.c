/* Tests of the other APIs' decoders (completions text chunks, Responses events, embeddings
 * answers): real-shaped fixtures against hand-read values, wrong shapes, every truncation,
 * and a differential run of mutated fixtures against api_oracle.h. */
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


/* Decodes from an exact-size heap copy so that ASan sees any read past the end. */
static int dec(enum api_kind k, const char *s, size_t n, struct cl_chunk *c,
	       struct cl_embedding *e)
{
	char *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	memcpy(copy, s, n);
	int rc = api_decode(k, copy, n, c, e);
	char detail[256];
	const char *bad = api_oracle_check(k, copy, n, rc, c, e, detail, sizeof(detail));
	if (bad)
		fail_msg("oracle: %s on '%.*s'", bad, (int)n, s);
	c->error_msg = c->error_msg ? s + (c->error_msg - copy) : NULL;
	c->content = c->content ? s + (c->content - copy) : NULL;
	e->error_msg = e->error_msg ? s + (e->error_msg - copy) : NULL;
	free(copy);
	return rc;
}

static int dec_str(enum api_kind k, const char *s, struct cl_chunk *c)
{
	struct cl_embedding e;
	return dec(k, s, strlen(s), c, &e);
}

static int emb_str(const char *s, struct cl_embedding *e)
{
	struct cl_chunk c;
	return dec(API_EMBEDDINGS, s, strlen(s), &c, e);
}

/* The events of a fixture file, each decoded by kind: collected for the checks. */
struct events {
	enum api_kind kind;
	struct cl_chunk c[32];
	int rc[32];
	size_t n;
	char *data[32];
	size_t len[32];
};

static int on_event(void *ctx, const char *data, size_t len, unsigned flags)
{
	struct events *ev = ctx;
	assert_true(ev->n < 32);
	struct cl_embedding e;
	ev->data[ev->n] = malloc(len ? len : 1);
	memcpy(ev->data[ev->n], data, len);
	ev->len[ev->n] = len;
	ev->rc[ev->n] = dec(ev->kind, data, len, &ev->c[ev->n], &e);
	ev->n++;
	return 0;
}

static void read_fixture(const char *name, struct cl_buf *b)
{
	char path[512];
	const char *dir = getenv("CHATLOAD_TEST_DATA");
	if (!dir)
		fail_msg("CHATLOAD_TEST_DATA is not set: run through ctest");
	snprintf(path, sizeof(path), "%s/streams/%s", dir, name);
	cl_buf_init(b, 1 << 20);
	assert_int_equal(cl_buf_read_file(b, path), 0);
}

static void feed_fixture(const char *name, struct events *ev)
{
	struct cl_buf b;
	struct cl_sse_parser p;
	read_fixture(name, &b);
	assert_int_equal(cl_sse_init(&p, 0), 0);
	assert_int_equal(cl_sse_feed(&p, b.data, b.len, on_event, ev), 0);
	assert_false(cl_sse_pending(&p));
	cl_sse_destroy(&p);
	cl_buf_free(&b);
}

static void free_events(struct events *ev)
{
	for (size_t i = 0; i < ev->n; i++)
		free(ev->data[i]);
}

/* llama.cpp b4748's streamed /v1/completions, read by hand. */
static void test_completions_fixture(void **state)
{
	(void)state;
	struct events ev = { .kind = API_TEXT };
	feed_fixture("llama.cpp-b4748-completions-stream.sse", &ev);
	assert_int_equal(ev.n, 6);
	static const size_t bytes[] = { 4, 3, 3, 11 };
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(ev.rc[i], 0);
		assert_true(ev.c[i].has_content);
		assert_int_equal(ev.c[i].content_bytes, bytes[i]);
		assert_false(ev.c[i].has_usage);
		assert_string_equal(ev.c[i].finish_reason, "");
	}
	/* the last chunk: empty text, finish length, usage and llama.cpp's timings */
	assert_int_equal(ev.rc[4], 0);
	assert_false(ev.c[4].has_content);
	assert_string_equal(ev.c[4].finish_reason, "length");
	assert_true(ev.c[4].has_usage);
	assert_int_equal(ev.c[4].completion_tokens, 4);
	assert_int_equal(ev.c[4].prompt_tokens, 3);
	assert_true(ev.c[5].done);
	/* The chat decoder reads no content from the same events: the shapes differ. */
	struct cl_chunk chat;
	assert_int_equal(cl_chunk_decode(ev.data[0], ev.len[0], &chat), 0);
	assert_false(chat.has_content);
	free_events(&ev);
}

static void test_completions_shapes(void **state)
{
	(void)state;
	struct cl_chunk c;
	assert_int_equal(dec_str(API_TEXT, "{\"choices\":[{\"text\":5}]}", &c), CL_EPROTO);
	assert_string_equal(c.malformed, "choices[].text is not a string");
	assert_int_equal(dec_str(API_TEXT, "{\"choices\":[{\"text\":null,\"finish_reason\":"
					   "\"stop\"}]}",
				 &c),
			 0);
	assert_false(c.has_content);
	assert_string_equal(c.finish_reason, "stop");
	/* a delta is an unknown field here, whatever it holds */
	assert_int_equal(dec_str(API_TEXT, "{\"choices\":[{\"delta\":7,\"text\":\"a\\nb\"}]}", &c),
			 0);
	assert_int_equal(c.content_bytes, 4);
	assert_memory_equal(c.content, "a\\nb", 4);
	/* two choices: bytes summed, the first one's text kept */
	assert_int_equal(dec_str(API_TEXT, "{\"choices\":[{\"text\":\"ab\"},{\"text\":\"cde\"}]}",
				 &c),
			 0);
	assert_int_equal(c.n_choices, 2);
	assert_int_equal(c.content_bytes, 5);
	assert_int_equal(c.content_len, 2);
	/* a repeated text replaces */
	assert_int_equal(dec_str(API_TEXT, "{\"choices\":[{\"text\":\"abc\",\"text\":\"\"}]}", &c),
			 0);
	assert_false(c.has_content);
	assert_int_equal(dec_str(API_TEXT, "{\"error\":{\"code\":400,\"message\":\"no\"}}", &c), 0);
	assert_true(c.is_error);
	assert_int_equal(c.error_code, 400);
}

/* The documented Responses stream, read by hand: type last, event: lines, no [DONE]. */
static void test_responses_fixture(void **state)
{
	(void)state;
	struct events ev = { .kind = API_RESPONSES };
	feed_fixture("openai-style-responses.sse", &ev);
	assert_int_equal(ev.n, 11);
	for (size_t i = 0; i < ev.n; i++)
		assert_int_equal(ev.rc[i], 0);
	static const int reasoning[] = { 3, 4 }, text[] = { 7, 8 };
	for (size_t i = 0; i < 2; i++) {
		assert_true(ev.c[reasoning[i]].has_reasoning);
		assert_false(ev.c[reasoning[i]].has_content);
		assert_true(ev.c[text[i]].has_content);
		assert_false(ev.c[text[i]].has_reasoning);
	}
	assert_int_equal(ev.c[3].reasoning_bytes, 15);
	assert_int_equal(ev.c[8].content_bytes, 9); /* " there!\n" escaped */
	assert_memory_equal(ev.c[8].content, " there!\\n", 9);
	for (size_t i = 0; i < ev.n; i++) {
		if (i == 3 || i == 4 || i == 7 || i == 8 || i == 10)
			continue;
		assert_false(ev.c[i].has_content || ev.c[i].has_reasoning || ev.c[i].done);
	}
	const struct cl_chunk *end = &ev.c[10];
	assert_true(end->done);
	assert_string_equal(end->finish_reason, "stop");
	assert_true(end->has_usage);
	assert_int_equal(end->prompt_tokens, 12);
	assert_int_equal(end->completion_tokens, 7);
	assert_int_equal(end->reasoning_tokens, 4);
	assert_int_equal(end->cached_tokens, 4);
	free_events(&ev);
}

static void test_responses_shapes(void **state)
{
	(void)state;
	struct cl_chunk c;
	/* incomplete: done, length, its usage */
	assert_int_equal(
	    dec_str(API_RESPONSES,
		    "{\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":"
		    "\"max_output_tokens\"},\"usage\":{\"input_tokens\":3,\"output_tokens\":16}},"
		    "\"type\":\"response.incomplete\"}",
		    &c),
	    0);
	assert_true(c.done);
	assert_string_equal(c.finish_reason, "length");
	assert_int_equal(c.completion_tokens, 16);
	assert_int_equal(c.reasoning_tokens, -1);
	/* failed: an error with the response's message */
	assert_int_equal(dec_str(API_RESPONSES,
				 "{\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":"
				 "\"server_error\",\"message\":\"boom\"}}}",
				 &c),
			 0);
	assert_true(c.is_error);
	assert_int_equal(c.error_code, 0);
	assert_memory_equal(c.error_msg, "boom", 4);
	/* the error event */
	assert_int_equal(dec_str(API_RESPONSES,
				 "{\"type\":\"error\",\"code\":429,\"message\":\"slow down\"}", &c),
			 0);
	assert_true(c.is_error);
	assert_int_equal(c.error_code, 429);
	/* escaped type, and a summary delta is reasoning */
	assert_int_equal(dec_str(API_RESPONSES,
				 "{\"delta\":\"x\",\"type\":\"response.reasoning_summary_text\\u002e"
				 "delta\"}",
				 &c),
			 0);
	assert_true(c.has_reasoning);
	/* the usage of a response.created is not read (it is null there anyway) */
	assert_int_equal(dec_str(API_RESPONSES,
				 "{\"type\":\"response.created\",\"response\":{\"usage\":{"
				 "\"input_tokens\":\"x\"}}}",
				 &c),
			 0);
	assert_false(c.has_usage);
	/* a type with a NUL inside is another type, not one cut short (found by fuzz_responses:
	 * jansson's tree says the type is not response.failed) */
	assert_int_equal(dec_str(API_RESPONSES,
				 "{\"type\":\"response.failed\\u0000\",\"response\":{\"error\":{"
				 "\"message\":\"boom\"}}}",
				 &c),
			 0);
	assert_false(c.is_error || c.done);
	/* not events */
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "[1]", "the event is not a JSON object" },
		{ "{}", "the event has no type" },
		{ "{\"type\":null}", "the event has no type" },
		{ "{\"type\":7}", "type is not a string" },
		{ "{\"type\":\"response.output_text.delta\",\"delta\":{\"content\":\"x\"}}",
		  "delta is not a string" },
		{ "{\"type\":\"response.completed\",\"response\":[]}", "response is not an object" },
		{ "{\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":-1}}}",
		  "response.usage.output_tokens is not a non-negative integer" },
		{ "{\"type\":\"response.completed\",\"response\":{\"usage\":{"
		  "\"output_tokens_details\":{\"reasoning_tokens\":1.5}}}}",
		  "response.usage.output_tokens_details.reasoning_tokens is not a non-negative "
		  "integer" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dec_str(API_RESPONSES, bad[i].text, &c), CL_EPROTO);
		assert_string_equal(c.malformed, bad[i].why);
		assert_false(c.done || c.has_content || c.has_usage);
	}
	assert_int_equal(dec_str(API_RESPONSES, "[DONE]", &c), 0);
	assert_true(c.done);
}

/* llama.cpp b4748's /v1/embeddings answer, read by hand: two vectors of n_embd 64. */
static void test_embeddings_fixture(void **state)
{
	(void)state;
	struct cl_buf b;
	struct cl_embedding e;
	read_fixture("llama.cpp-b4748-embeddings.json", &b);
	struct cl_chunk c;
	assert_int_equal(dec(API_EMBEDDINGS, b.data, b.len, &c, &e), 0);
	assert_int_equal(e.n_data, 2);
	assert_int_equal(e.dim, 64);
	assert_true(e.has_usage);
	assert_int_equal(e.prompt_tokens, 5);
	assert_false(e.is_error);
	/* Every strict prefix is cut JSON (the trailing newline aside). */
	size_t body = b.len;
	while (body && (b.data[body - 1] == '\n' || b.data[body - 1] == ' '))
		body--;
	for (size_t n = 0; n < body; n++)
		assert_int_equal(dec(API_EMBEDDINGS, b.data, n, &c, &e), CL_EPARSE);
	cl_buf_free(&b);
}

static void test_embeddings_shapes(void **state)
{
	(void)state;
	struct cl_embedding e;
	assert_int_equal(emb_str("{\"data\":[{\"embedding\":\"AAAAPw==\"}],\"usage\":{"
				 "\"prompt_tokens\":2}}",
				 &e),
			 0);
	assert_int_equal(e.n_data, 1);
	assert_int_equal(e.dim, 0);
	assert_int_equal(emb_str("{\"error\":{\"code\":501,\"message\":\"This server does not "
				 "support embeddings\"}}",
				 &e),
			 0);
	assert_true(e.is_error);
	assert_int_equal(e.error_code, 501);
	assert_int_equal(emb_str("{\"data\":[],\"usage\":null}", &e), 0);
	assert_int_equal(e.n_data, 0);
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "\"x\"", "the answer is not a JSON object" },
		{ "{}", "the answer has neither data nor error" },
		{ "{\"data\":{}}", "data is not an array" },
		{ "{\"data\":[1]}", "data[] holds something that is not an object" },
		{ "{\"data\":[{\"embedding\":[0.5,\"x\"]}]}",
		  "data[].embedding is neither an array of numbers nor a string" },
		{ "{\"data\":[{\"embedding\":{}}]}",
		  "data[].embedding is neither an array of numbers nor a string" },
		{ "{\"data\":[],\"usage\":{\"prompt_tokens\":\"5\"}}",
		  "usage.prompt_tokens is not a non-negative integer" },
		{ "{\"data\":[],\"error\":5}", "error is neither an object nor a string" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(emb_str(bad[i].text, &e), CL_EPROTO);
		assert_string_equal(e.malformed, bad[i].why);
		assert_int_equal(e.n_data, 0);
	}
	assert_int_equal(emb_str("[DONE]", &e), CL_EPARSE);
	assert_int_equal(emb_str("", &e), CL_EPARSE);
}

/* Mutations of real-shaped texts (flips, insertions of JSON punctuation, deletions,
 * truncations, duplicated keys) through every decoder, each checked by api_oracle_check:
 * the JSON verdict is the chat decoder's, and the fields jansson's tree's. */
static uint64_t rng_s = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng_s ^= rng_s << 13;
	rng_s ^= rng_s >> 7;
	rng_s ^= rng_s << 17;
	return rng_s;
}

static void mutate(char *s, size_t *n, size_t cap)
{
	static const char alphabet[] = "{}[]\",:0123456789.-eE \\untrlfa\"xyz";
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

static void run_mutations(enum api_kind k, const char *const *seeds, size_t n_seeds,
			  size_t rounds)
{
	char buf[8192];
	size_t checked = 0, accepted = 0;
	for (size_t r = 0; r < rounds; r++) {
		const char *seed = seeds[r % n_seeds];
		size_t n = strlen(seed);
		if (n >= sizeof(buf))
			n = sizeof(buf) - 1;
		memcpy(buf, seed, n);
		if (r >= n_seeds)
			mutate(buf, &n, sizeof(buf));
		struct cl_chunk c;
		struct cl_embedding e;
		int rc = dec(k, buf, n, &c, &e); /* fails the test on a disagreement */
		checked++;
		accepted += rc != CL_EPARSE;
	}
	/* The mutations must leave enough valid JSON for the field checks to mean something. */
	assert_true(accepted * 10 > checked);
}

static void test_differential(void **state)
{
	(void)state;
	static const char *const text_seeds[] = {
		"{\"choices\":[{\"text\":\" Lic\",\"index\":0,\"logprobs\":null,\"finish_reason\":"
		"null}],\"object\":\"text_completion\"}",
		"{\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{"
		"\"completion_tokens\":4,\"prompt_tokens\":3}}",
		"{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5,"
		"\"completion_tokens_details\":{\"reasoning_tokens\":0}}}",
	};
	static const char *const resp_seeds[] = {
		"{\"content_index\":0,\"delta\":\"Hi\",\"item_id\":\"m\",\"type\":"
		"\"response.output_text.delta\"}",
		"{\"type\":\"response.reasoning_text.delta\",\"delta\":\" me.\"}",
		"{\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{"
		"\"input_tokens\":12,\"input_tokens_details\":{\"cached_tokens\":4},"
		"\"output_tokens\":7,\"output_tokens_details\":{\"reasoning_tokens\":4}}}}",
		"{\"type\":\"response.incomplete\",\"response\":{\"incomplete_details\":{\"reason\":"
		"\"max_output_tokens\"},\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}}",
		"{\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":5,\"message\":"
		"\"x\"}}}",
		"{\"type\":\"error\",\"code\":500,\"message\":\"boom\"}",
	};
	static const char *const emb_seeds[] = {
		"{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,\"embedding\":"
		"[0.1,-0.2,3e-4]},{\"index\":1,\"embedding\":[1,2,3]}],\"usage\":{"
		"\"prompt_tokens\":7,\"total_tokens\":7}}",
		"{\"data\":[{\"embedding\":\"AAAAPw==\"}],\"usage\":{\"prompt_tokens\":2}}",
		"{\"error\":{\"code\":501,\"message\":\"no\"}}",
	};
	run_mutations(API_TEXT, text_seeds, 3, 20000);
	run_mutations(API_RESPONSES, resp_seeds, 6, 20000);
	run_mutations(API_EMBEDDINGS, emb_seeds, 3, 20000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_completions_fixture), cmocka_unit_test(test_completions_shapes),
		cmocka_unit_test(test_responses_fixture),   cmocka_unit_test(test_responses_shapes),
		cmocka_unit_test(test_embeddings_fixture),  cmocka_unit_test(test_embeddings_shapes),
		cmocka_unit_test(test_differential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
