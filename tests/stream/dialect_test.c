/* Every server's way of saying "this request failed" (docs/stream-decoding.md, "When the server
 * says it failed"): one fixture per row of the table, read as the engine reads it, is never a
 * completed answer and gives the server's own message; the reader and cl_event_decode against
 * their rules on mutants (api_oracle.h). */
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
#include "sse_ref.h"
#include "client/stream/error.h"
#include "client/stream/event.h"
#include "client/stream/sse.h"

/* One row of the table: its fixture, the API it answers, what the server said. */
static const struct row {
	const char *file;
	enum cl_api api;
	const char *message; /* a piece of the server's message; NULL: none (an empty answer) */
	int code;            /* the code it gave, 0 when none */
} rows[] = {
	{ "llama.cpp-b4748-error-in-stream.http", CL_API_CHAT,
	  "the request exceeds the available context size", 400 },
	{ "llama.cpp-b4748-bad-request.http", CL_API_CHAT, "Failed to parse messages", 500 },
	{ "llama.cpp-after-16109-error-in-stream.http", CL_API_CHAT,
	  "exceeds the available context size (128 tokens)", 400 },
	{ "vllm-0.9-error-in-stream.http", CL_API_CHAT, "maximum context length is 2048 tokens",
	  400 },
	{ "vllm-0.9-error-body.http", CL_API_CHAT, "maximum context length is 2048 tokens", 400 },
	{ "vllm-0.10-error-in-stream.http", CL_API_CHAT, "EngineCore encountered an issue", 500 },
	{ "vllm-errorresponse-unwrapped-event.http", CL_API_CHAT, "does not exist", 404 },
	{ "vllm-errorresponse-unwrapped-event.http", CL_API_COMPLETIONS, "does not exist", 404 },
	{ "vllm-errorresponse-unwrapped-event.http", CL_API_RESPONSES, "does not exist", 404 },
	{ "sglang-error-in-stream.http", CL_API_CHAT, "longer than the model", 400 },
	{ "tgi-error-in-stream.http", CL_API_CHAT, "Input validation error", 0 },
	{ "tgi-error-in-stream.http", CL_API_RESPONSES, "Input validation error", 0 },
	{ "tgi-error-body.http", CL_API_CHAT, "Input validation error", 0 },
	{ "ollama-v1-error-body.http", CL_API_CHAT, "not found, try pulling it first", 0 },
	{ "litellm-proxy-error-in-stream.http", CL_API_CHAT, "Rate limit reached", 429 },
	{ "openai-chat-error-in-stream.http", CL_API_CHAT, "The server had an error", 0 },
	{ "openai-responses-error-event.http", CL_API_RESPONSES, "Something went wrong", 0 },
	{ "openai-responses-error-event.http", CL_API_CHAT, "Something went wrong", 0 },
	{ "openai-responses-failed.http", CL_API_RESPONSES, "failed to generate a response", 0 },
	{ "anthropic-error-event.http", CL_API_CHAT, "Overloaded", 0 },
	{ "anthropic-error-event.http", CL_API_RESPONSES, "Overloaded", 0 },
	{ "gateway-json-error-200.http", CL_API_CHAT, "context length exceeded", 400 },
	{ "gateway-json-error-200.http", CL_API_COMPLETIONS, "context length exceeded", 400 },
	{ "vllm-errorresponse-200.http", CL_API_CHAT, "input is too long", 400 },
	{ "empty-answer-done-only.http", CL_API_CHAT, NULL, 0 },
};

static void read_fixture(const char *name, struct cl_buf *b)
{
	const char *dir = getenv("CHATLOAD_TEST_DATA");
	char path[1024];
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/streams/%s", dir, name);
	cl_buf_init(b, 1 << 20);
	int rc = cl_buf_read_file(b, path);
	if (rc)
		fail_msg("cannot read '%s': %s", path, cl_strerror(rc));
}

/* An .http fixture's status and body (after the first blank line). */
static int split_http(const struct cl_buf *b, const char **body, size_t *len)
{
	int status = 0;
	assert_true(b->len > 12 && memcmp(b->data, "HTTP/1.1 ", 9) == 0);
	status = atoi(b->data + 9);
	const char *end = b->data + b->len;
	for (const char *p = b->data; p + 1 < end; p++) {
		size_t k = p[0] == '\n' && p[1] == '\n'                   ? 2
			   : p + 3 < end && memcmp(p, "\r\n\r\n", 4) == 0 ? 4
									  : 0;
		if (k) {
			*body = p + k;
			*len = (size_t)(end - p - k);
			return status;
		}
	}
	fail_msg("no blank line after the headers");
	return 0;
}

/* What the events of one answer came to, read as the engine reads them: events in order
 * until the first error; after [DONE] nothing counts. */
struct answer {
	enum cl_api api;
	bool error, done, token, finish, usage;
	int code;
	char message[512];
	int bad_rc; /* a decode that was neither 0 nor an error */
};

static int on_event(void *ctx, const char *data, size_t len, unsigned flags)
{
	struct answer *a = ctx;
	struct cl_chunk c;
	if (a->done || a->error)
		return 0;
	int rc = cl_event_decode(a->api, data, len, flags, &c);
	char detail[160];
	const char *bad = api_event_check(a->api, data, len, flags, rc, &c);
	(void)detail;
	if (bad)
		fail_msg("oracle: %s on '%.*s' (flags %u)", bad, (int)len, data, flags);
	if (rc) {
		a->bad_rc = rc;
		return 0;
	}
	if (c.is_error) {
		a->error = true;
		a->code = c.error_code;
		snprintf(a->message, sizeof(a->message), "%.*s", (int)c.error_msg_len,
			 c.error_msg ? c.error_msg : "");
		return 0;
	}
	a->done |= c.done;
	a->token |= c.has_content || c.has_reasoning || c.has_tool_call;
	a->finish |= c.finish_reason[0] != '\0';
	a->usage |= c.has_usage;
	return 0;
}

/* Feeds body in pieces of `step` bytes (0: whole), then ends it. */
static void read_answer(const char *body, size_t len, size_t step, struct answer *a)
{
	struct cl_sse_parser p;
	assert_int_equal(cl_sse_init(&p, 0), 0);
	for (size_t i = 0; i < len;) {
		size_t k = step && step < len - i ? step : len - i;
		char *piece = malloc(k);
		assert_non_null(piece);
		memcpy(piece, body + i, k);
		assert_int_equal(cl_sse_feed(&p, piece, k, on_event, a), 0);
		free(piece);
		i += k;
	}
	assert_int_equal(cl_sse_finish(&p, on_event, a), 0);
	assert_false(cl_sse_pending(&p));
	cl_sse_destroy(&p);
}

/* Each row: never a completed answer; the server's message and code kept. */
static void test_rows(void **state)
{
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct cl_buf b;
		const char *body;
		size_t len;
		read_fixture(rows[r].file, &b);
		int status = split_http(&b, &body, &len);
		if (status < 200 || status > 299) {
			/* Outside a stream: the body of an HTTP error, read by the one reader. */
			struct cl_stream_error e;
			cl_stream_error_read(body, len, &e);
			if (!e.is_error || !e.message ||
			    !memmem(e.message, e.message_len, rows[r].message,
				    strlen(rows[r].message)) ||
			    e.code != rows[r].code)
				fail_msg("%s: error %d code %d message '%.*s'", rows[r].file,
					 e.is_error, e.code, (int)e.message_len,
					 e.message ? e.message : "");
			cl_buf_free(&b);
			continue;
		}
		for (size_t step = 0; step <= 7; step += 7) {
			struct answer a = { .api = rows[r].api };
			read_answer(body, len, step == 7 ? 1 : 0, &a);
			if (!rows[r].message) {
				/* [DONE] alone: no token, finish or usage: the engine's empty
				 * answer, never a completed one (tests/engine). */
				assert_false(a.error);
				assert_true(a.done);
				assert_false(a.token || a.finish || a.usage);
				continue;
			}
			if (!a.error || !strstr(a.message, rows[r].message) ||
			    a.code != rows[r].code)
				fail_msg("%s as %s: error %d code %d message '%s' (want '%s', %d)",
					 rows[r].file, cl_api_name(rows[r].api), a.error, a.code,
					 a.message, rows[r].message, rows[r].code);
		}
		cl_buf_free(&b);
	}
}

static void read_str(const char *s, struct cl_stream_error *e)
{
	cl_stream_error_read(s, strlen(s), e);
	const char *bad = api_error_read_check(s, strlen(s), e);
	if (bad)
		fail_msg("oracle: %s on '%s'", bad, s);
}

static void assert_msg(const struct cl_stream_error *e, const char *want)
{
	if (!want) {
		assert_null(e->message);
		return;
	}
	assert_non_null(e->message);
	assert_int_equal(e->message_len, strlen(want));
	assert_memory_equal(e->message, want, strlen(want));
}

/* The reader's priorities and forms, by hand. */
static void test_reader(void **state)
{
	struct cl_stream_error e;
	read_str("{\"code\":400,\"message\":\"m\",\"type\":\"invalid_request_error\"}", &e);
	assert_true(e.is_json);
	assert_false(e.is_error); /* an error only because the field said so */
	assert_int_equal(e.code, 400);
	assert_msg(&e, "m");
	assert_int_equal(e.type_len, 21);

	read_str("{\"error\":{\"message\":\"inner\",\"code\":\"503\"},\"message\":\"outer\"}", &e);
	assert_true(e.is_error);
	assert_int_equal(e.code, 503);
	assert_msg(&e, "inner");

	read_str("{\"error\":\"text\",\"error_type\":\"validation\"}", &e);
	assert_true(e.is_error);
	assert_msg(&e, "text");
	assert_int_equal(e.type_len, 10);
	assert_memory_equal(e.type, "validation", 10);

	read_str("{\"error\":{\"code\":\"server_error\",\"message\":\"x\"}}", &e);
	assert_int_equal(e.code, 0); /* a code that is no number is not a status */

	read_str("{\"error\":{\"code\":\"1234567890\"}}", &e);
	assert_int_equal(e.code, 0);

	read_str("{\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":7,\"message\":"
		 "\"f\"}}}",
		 &e);
	assert_true(e.is_error);
	assert_int_equal(e.code, 7);
	assert_msg(&e, "f");

	read_str("{\"detail\":\"Not Found\"}", &e);
	assert_false(e.is_error);
	assert_msg(&e, "Not Found");

	read_str("{\"object\":\"chat.completion.chunk\",\"choices\":[]}", &e);
	assert_false(e.is_error);
	assert_msg(&e, NULL);

	read_str("  upstream timed out \r\n", &e);
	assert_false(e.is_json);
	assert_true(e.message_raw);
	assert_msg(&e, "upstream timed out");

	read_str("", &e);
	assert_false(e.is_json);
	assert_msg(&e, NULL);

	read_str("{\"error\":{\"message\":\"a\"},\"error\":null}", &e);
	assert_false(e.is_error); /* the last key counts */
}

/* cl_event_decode's own rule, by hand: flags decide before the text. */
static void test_event_rule(void **state)
{
	struct cl_chunk c;
	const char content[] =
	    "{\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}";
	assert_int_equal(
	    cl_event_decode(CL_API_CHAT, content, sizeof(content) - 1, CL_SSE_ERROR_EVENT, &c), 0);
	assert_true(c.is_error);
	assert_false(c.has_content);
	assert_int_equal(cl_event_decode(CL_API_CHAT, "[DONE]", 6, CL_SSE_ERROR_FIELD, &c), 0);
	assert_true(c.is_error);
	assert_false(c.done);
	assert_non_null(c.error_msg);

	assert_int_equal(
	    cl_event_decode(CL_API_CHAT, content, sizeof(content) - 1, CL_SSE_DOCUMENT, &c),
	    CL_EPROTO);
	assert_string_equal(c.malformed, CL_EVENT_NOT_A_STREAM);
	assert_int_equal(cl_event_decode(CL_API_CHAT, "{\"a\":", 5, CL_SSE_DOCUMENT, &c),
			 CL_EPARSE);

	/* Without a flag, the API's decoder; "says nothing" then checked for an error's shape. */
	assert_int_equal(cl_event_decode(CL_API_CHAT, content, sizeof(content) - 1, 0, &c), 0);
	assert_true(c.has_content);
	assert_false(c.is_error);
	const char oai[] = "{\"type\":\"error\",\"message\":\"boom\",\"code\":\"E1\"}";
	assert_int_equal(cl_event_decode(CL_API_CHAT, oai, sizeof(oai) - 1, 0, &c), 0);
	assert_true(c.is_error);
	assert_int_equal(c.error_msg_len, 4);
	/* A Responses event with a type that is not a failure stays what its type says. */
	const char created[] = "{\"type\":\"response.created\",\"message\":\"x\",\"error\":null}";
	assert_int_equal(cl_event_decode(CL_API_RESPONSES, created, sizeof(created) - 1, 0, &c), 0);
	assert_false(c.is_error);
}

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
	static const char alphabet[] = "{}[]\",:0123456789 \\untrlfaxyz";
	static const char *const words[] = { "\"error\"",           "\"object\"", "\"type\"",
					     "\"message\"",         "\"code\"",   "\"detail\"",
					     "\"response.failed\"", "null",       "\"400\"" };
	int k = 1 + (int)(rnd() % 3);
	while (k--) {
		size_t at = *n ? rnd() % *n : 0;
		switch (rnd() % 5) {
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
		case 3: {
			const char *w = words[rnd() % (sizeof(words) / sizeof(words[0]))];
			size_t wl = strlen(w);
			if (*n + wl < cap) {
				memmove(s + at + wl, s + at, *n - at);
				memcpy(s + at, w, wl);
				*n += wl;
			}
			break;
		}
		default:
			*n = at;
			break;
		}
	}
}

/* Mutants of every row's event texts, under every API and flag, against the rule. */
static void test_mutants(void **state)
{
	struct ev_list seeds = { 0 };
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct cl_buf b;
		const char *body;
		size_t len;
		read_fixture(rows[r].file, &b);
		split_http(&b, &body, &len);
		struct cl_sse_parser p;
		assert_int_equal(cl_sse_init(&p, 0), 0);
		assert_int_equal(cl_sse_feed(&p, body, len, ev_list_cb, &seeds), 0);
		assert_int_equal(cl_sse_finish(&p, ev_list_cb, &seeds), 0);
		cl_sse_destroy(&p);
		cl_buf_free(&b);
	}
	static const unsigned flag_sets[] = { 0, CL_SSE_ERROR_FIELD, CL_SSE_ERROR_EVENT,
					      CL_SSE_DOCUMENT };
	char buf[4096];
	size_t n_checked = 0, n_errors = 0;
	for (size_t round = 0; round < 30000; round++) {
		size_t i = round % seeds.n;
		size_t n = seeds.len[i] < sizeof(buf) ? seeds.len[i] : sizeof(buf) - 1;
		memcpy(buf, seeds.arena + seeds.off[i], n);
		if (round >= seeds.n)
			mutate(buf, &n, sizeof(buf));
		char *copy = malloc(n ? n : 1);
		assert_non_null(copy);
		memcpy(copy, buf, n);
		for (int api = CL_API_CHAT; api <= CL_API_RESPONSES; api++) {
			for (size_t f = 0; f < sizeof(flag_sets) / sizeof(flag_sets[0]); f++) {
				struct cl_chunk c;
				int rc =
				    cl_event_decode((enum cl_api)api, copy, n, flag_sets[f], &c);
				const char *bad = api_event_check((enum cl_api)api, copy, n,
								  flag_sets[f], rc, &c);
				if (bad)
					fail_msg("round %zu api %d flags %u: %s on '%.*s'", round,
						 api, flag_sets[f], bad, (int)n, buf);
				n_checked++;
				n_errors += rc == 0 && c.is_error;
			}
		}
		free(copy);
	}
	/* The mutants must keep enough of an error's shape for the checks to mean something. */
	assert_true(n_errors > n_checked / 4);
	printf("dialect mutants: %zu decodes checked, %zu errors\n", n_checked, n_errors);
	ev_list_free(&seeds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_reader),
		cmocka_unit_test(test_event_rule),
		cmocka_unit_test(test_mutants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
