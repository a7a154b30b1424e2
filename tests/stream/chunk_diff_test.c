/* Differential test of the chunk decoder against jansson: fixture, generated, mutated chunks. */
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
#include "chunk_oracle.h"
#include "client/stream/sse.h"
#include "sse_ref.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}
static size_t pick(size_t n)
{
	return (size_t)(rng() % n);
}

/* A bounded text being generated. */
struct gen {
	char buf[16384]; /* room for the largest generated chunk (tool calls nest deep) */
	size_t len;
};

static void put(struct gen *g, const char *s)
{
	size_t n = strlen(s);
	if (g->len + n < sizeof(g->buf)) {
		memcpy(g->buf + g->len, s, n);
		g->len += n;
	}
}

static void ws(struct gen *g)
{
	static const char *const w[] = { " ", "\n", "\t", "\r\n ", "  " };
	if (pick(8) == 0)
		put(g, w[pick(5)]);
}

static void gen_string_body(struct gen *g)
{
	static const char *const atoms[] = {
		"a",
		"Hello",
		" ",
		"the",
		"\\n",
		"\\\"",
		"\\\\",
		"\\/",
		"\\t",
		"\\u00e9",
		"\\u4e2d",
		"\\ud83d\\ude00",
		"\\u0000",
		"\xc3\xa9",
		"\xe6\x8c\x87",
		"\xf0\x9f\x98\x80",
		"{",
		"}",
		"[",
		":",
		",",
		"0",
		"\\b\\f\\r",
		"stop",
		"length",
		"data: ",
	};
	size_t n = pick(4) == 0 ? 0 : pick(12);
	for (size_t i = 0; i < n; i++)
		put(g, atoms[pick(sizeof(atoms) / sizeof(atoms[0]))]);
}

static void gen_string(struct gen *g)
{
	put(g, "\"");
	gen_string_body(g);
	put(g, "\"");
}

static void gen_number(struct gen *g)
{
	static const char *const nums[] = {
		"0",
		"1",
		"12",
		"32",
		"-1",
		"-0",
		"1.5",
		"2e3",
		"1E+2",
		"-7.25e-3",
		"500",
		"429",
		"1e308",
		"9223372036854775807",
		"-9223372036854775808",
		"2147483648",
		"-2147483649",
	};
	/* Past int64: valid JSON that jansson rejects, so rare, or little else gets compared. */
	static const char *const rare[] = { "9223372036854775808", "18446744073709551616",
					    "-9223372036854775809" };
	if (pick(300) == 0)
		put(g, rare[pick(sizeof(rare) / sizeof(rare[0]))]);
	else
		put(g, nums[pick(sizeof(nums) / sizeof(nums[0]))]);
}

static void gen_any(struct gen *g, int depth);

static void gen_scalar(struct gen *g)
{
	switch (pick(6)) {
	case 0:
		put(g, "null");
		break;
	case 1:
		put(g, pick(2) ? "true" : "false");
		break;
	case 2:
	case 3:
		gen_number(g);
		break;
	default:
		gen_string(g);
		break;
	}
}

static void gen_any(struct gen *g, int depth)
{
	if (depth > 3 || pick(3)) {
		gen_scalar(g);
		return;
	}
	bool obj = pick(2);
	size_t n = pick(4);
	put(g, obj ? "{" : "[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			put(g, ",");
		ws(g);
		if (obj) {
			/* Keys: mostly plain (jansson refuses \u0000 in keys). */
			if (pick(10) == 0)
				gen_string(g);
			else
				put(g, pick(2) ? "\"k\"" : "\"content\"");
			put(g, ":");
		}
		gen_any(g, depth + 1);
	}
	put(g, obj ? "}" : "]");
}

/* A key, sometimes written with an escape, which must still match. */
static void gen_key(struct gen *g, const char *k)
{
	char b[64];
	ws(g);
	if (pick(10) == 0)
		snprintf(b, sizeof(b), "\"\\u%04x%s\"", (unsigned char)k[0], k + 1);
	else
		snprintf(b, sizeof(b), "\"%s\"", k);
	put(g, b);
	ws(g);
	put(g, ":");
	ws(g);
}

/* A value for a field: mostly the expected type, sometimes anything. */
static void gen_field(struct gen *g, void (*typed)(struct gen *))
{
	if (pick(6) == 0)
		gen_any(g, 2);
	else
		typed(g);
}

/* Writes the members of an object, in random order, some repeated. */
struct member {
	const char *key;
	void (*value)(struct gen *);
};

static void gen_members(struct gen *g, const struct member *m, size_t n)
{
	bool first = true;
	put(g, "{");
	size_t count = pick(n + 2);
	for (size_t i = 0; i < count; i++) {
		const struct member *x = &m[pick(n)];
		if (!first)
			put(g, ",");
		first = false;
		gen_key(g, x->key);
		x->value(g);
		ws(g);
	}
	put(g, "}");
}

static void v_string(struct gen *g)
{
	gen_field(g, gen_string);
}
static void v_number(struct gen *g)
{
	gen_field(g, gen_number);
}
static void v_any(struct gen *g)
{
	gen_any(g, 2);
}
static void v_fr(struct gen *g)
{
	static const char *const fr[] = {
		"null", "\"stop\"", "\"length\"", "\"\"", "\"tool_calls\"",
		"\"content_filter_and_much_longer\"",
		/* twelve 2-byte letters: cut at 23 bytes on a character boundary */
		("\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
		 "\\u00e9\\u00e9\\u00e9\\u00e9\"")
	};
	if (pick(5) == 0)
		gen_field(g, gen_string);
	else
		put(g, fr[pick(sizeof(fr) / sizeof(fr[0]))]);
}
/* delta.tool_calls: an array of call pieces (index, id, type, function.{name, arguments}),
 * their values mostly of the right type. */
static void v_tool_fn(struct gen *g)
{
	static const struct member m[] = { { "name", v_string }, { "arguments", v_string } };
	if (pick(6) == 0)
		gen_any(g, 2);
	else
		gen_members(g, m, sizeof(m) / sizeof(m[0]));
}
static void v_tool_index(struct gen *g)
{
	static const char *const idx[] = { "0", "1", "3", "4", "7", "-1", "1.5", "null" };
	if (pick(6) == 0)
		gen_any(g, 2);
	else
		put(g, idx[pick(sizeof(idx) / sizeof(idx[0]))]);
}
static void v_tool(struct gen *g)
{
	static const struct member m[] = { { "index", v_tool_index },
					   { "id", v_string },
					   { "type", v_string },
					   { "function", v_tool_fn } };
	if (pick(8) == 0)
		gen_any(g, 2);
	else
		gen_members(g, m, sizeof(m) / sizeof(m[0]));
}
static void v_tool_calls(struct gen *g)
{
	if (pick(8) == 0) {
		gen_any(g, 2);
		return;
	}
	put(g, "[");
	size_t n = pick(6); /* up to five: past the decoder's four kept pieces */
	for (size_t i = 0; i < n; i++) {
		if (i)
			put(g, ",");
		v_tool(g);
	}
	put(g, "]");
}
static void v_delta(struct gen *g)
{
	static const struct member m[] = {
		{ "role", v_string },
		{ "content", v_string },
		{ "reasoning_content", v_string },
		{ "reasoning", v_string },
		{ "tool_calls", v_tool_calls },
	};
	if (pick(8) == 0)
		gen_any(g, 2);
	else
		gen_members(g, m, sizeof(m) / sizeof(m[0]));
}
static void gen_choice(struct gen *g)
{
	static const struct member m[] = {
		{ "index", v_number }, { "delta", v_delta },     { "finish_reason", v_fr },
		{ "logprobs", v_any }, { "stop_reason", v_any },
	};
	gen_members(g, m, sizeof(m) / sizeof(m[0]));
}
static void v_choices(struct gen *g)
{
	if (pick(8) == 0) {
		gen_any(g, 2);
		return;
	}
	size_t n = pick(4);
	put(g, "[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			put(g, ",");
		ws(g);
		if (pick(10) == 0)
			gen_scalar(g);
		else
			gen_choice(g);
	}
	put(g, "]");
}
static void v_details(struct gen *g)
{
	static const struct member m[] = { { "reasoning_tokens", v_number },
					   { "accepted_prediction_tokens", v_number } };
	if (pick(6) == 0)
		gen_any(g, 2);
	else
		gen_members(g, m, 2);
}
static void v_usage(struct gen *g)
{
	static const struct member m[] = {
		{ "prompt_tokens", v_number },
		{ "completion_tokens", v_number },
		{ "total_tokens", v_number },
		{ "completion_tokens_details", v_details },
	};
	if (pick(5) == 0)
		put(g, "null");
	else if (pick(8) == 0)
		gen_any(g, 2);
	else
		gen_members(g, m, sizeof(m) / sizeof(m[0]));
}
static void v_timings(struct gen *g)
{
	static const struct member m[] = { { "prompt_n", v_number },
					   { "cache_n", v_number },
					   { "prompt_ms", v_number },
					   { "predicted_n", v_number } };
	if (pick(6) == 0)
		gen_any(g, 2);
	else
		gen_members(g, m, sizeof(m) / sizeof(m[0]));
}
static void v_error(struct gen *g)
{
	static const struct member m[] = { { "message", v_string },
					   { "code", v_number },
					   { "type", v_string },
					   { "param", v_any } };
	if (pick(6) == 0)
		gen_any(g, 2);
	else
		gen_members(g, m, sizeof(m) / sizeof(m[0]));
}
static void v_id(struct gen *g)
{
	put(g, "\"chatcmpl-");
	gen_string_body(g);
	put(g, "\"");
}

static void gen_chunk(struct gen *g)
{
	static const struct member m[] = {
		{ "id", v_id },        { "object", v_string },   { "created", v_number },
		{ "model", v_string }, { "choices", v_choices }, { "choices", v_choices },
		{ "usage", v_usage },  { "error", v_error },     { "timings", v_timings },
	};
	g->len = 0;
	ws(g);
	gen_members(g, m, sizeof(m) / sizeof(m[0]));
	ws(g);
}

/* The corpus being built: fixture chunks and generated ones, each then mutated. */
struct corpus {
	char **item;
	size_t *len;
	size_t n, cap;
};

static void corpus_add(struct corpus *c, const char *s, size_t n)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->item = realloc(c->item, c->cap * sizeof(*c->item));
		c->len = realloc(c->len, c->cap * sizeof(*c->len));
		assert_non_null(c->item);
		assert_non_null(c->len);
	}
	c->item[c->n] = malloc(n ? n : 1);
	assert_non_null(c->item[c->n]);
	memcpy(c->item[c->n], s, n);
	c->len[c->n++] = n;
}

static void corpus_free(struct corpus *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->item[i]);
	free(c->item);
	free(c->len);
}

static void load_seeds(struct corpus *c)
{
	static const char *const sse_files[] = {
		"crlf-comment-error-midstream.sse",   "llama.cpp-b4748-chat-stream.sse",
		"openai-style-multitoken-chunks.sse", "openai-style-reasoning-field.sse",
		"openai-style-reasoning.sse",         "vllm-style-continuous-usage.sse",
		"synthetic-cr-multiline-cut.sse",     "vllm-style-tool-calls.sse",
		"llama.cpp-style-tool-calls.sse",
	};
	static const char *const json_files[] = { "llama.cpp-b4748-chat-nonstream.json",
						  "llama.cpp-b4748-models.json" };
	const char *dir = getenv("CHATLOAD_TEST_DATA");
	char path[1024];
	assert_non_null(dir);

	for (size_t f = 0; f < sizeof(sse_files) / sizeof(sse_files[0]); f++) {
		struct cl_buf b;
		struct ev_list ev = { 0 };
		struct cl_sse_parser p;
		snprintf(path, sizeof(path), "%s/streams/%s", dir, sse_files[f]);
		cl_buf_init(&b, 1 << 20);
		assert_int_equal(cl_buf_read_file(&b, path), 0);
		assert_int_equal(cl_sse_init(&p, 0), 0);
		assert_int_equal(cl_sse_feed(&p, b.data, b.len, ev_list_cb, &ev), 0);
		for (size_t i = 0; i < ev.n; i++)
			corpus_add(c, ev.arena + ev.off[i], ev.len[i]);
		cl_sse_destroy(&p);
		ev_list_free(&ev);
		cl_buf_free(&b);
	}
	for (size_t f = 0; f < sizeof(json_files) / sizeof(json_files[0]); f++) {
		struct cl_buf b;
		snprintf(path, sizeof(path), "%s/streams/%s", dir, json_files[f]);
		cl_buf_init(&b, 1 << 20);
		assert_int_equal(cl_buf_read_file(&b, path), 0);
		corpus_add(c, b.data, b.len);
		cl_buf_free(&b);
	}
	/* The error body of the bad-request capture (after the blank line of the headers). */
	struct cl_buf b;
	snprintf(path, sizeof(path), "%s/streams/llama.cpp-b4748-bad-request.http", dir);
	cl_buf_init(&b, 1 << 20);
	assert_int_equal(cl_buf_read_file(&b, path), 0);
	const char *body = strstr(b.data, "\r\n\r\n");
	if (body)
		corpus_add(c, body + 4, b.len - (size_t)(body + 4 - b.data));
	cl_buf_free(&b);
}

/* One random edit of s (length *n, room for cap bytes). */
static void mutate(char *s, size_t *n, size_t cap)
{
	static const char interesting[] =
	    "{}[]\",:\\0123456789-+.eE \t\n\rtrufalsn\x00\x80\xc3\xff";
	static const char *const tokens[] = {
		"\\u",
		"\\ud800",
		"\\udc00",
		"\\u0000",
		"\\ud83d\\ude00",
		"null",
		"[",
		"{",
		"]",
		"}",
		"\"",
		",",
		":",
		"1e5",
		"-",
		"0",
		"01",
		"\\",
		"\xc3\xa9",
		"\xe6\x8c",
		"99999999999999999999",
		" ",
		"1e999",
		"\"usage\":{\"prompt_tokens\":5},",
		"\"content\":\"x\",",
		"\x01",
		"{\"a\":[1,{\"b\":null}]}",
	};
	size_t len = *n;
	size_t pos = len ? pick(len) : 0;

	switch (pick(8)) {
	case 0: /* flip a bit */
		if (len)
			s[pos] ^= (char)(1u << pick(8));
		break;
	case 1: /* any byte */
		if (len)
			s[pos] = (char)pick(256);
		break;
	case 2: /* a JSON-significant byte */
		if (len)
			s[pos] = interesting[pick(sizeof(interesting) - 1)];
		break;
	case 3: /* truncate */
		*n = pos;
		break;
	case 4: { /* insert a token */
		const char *t = tokens[pick(sizeof(tokens) / sizeof(tokens[0]))];
		size_t tl = strlen(t);
		if (len + tl <= cap) {
			memmove(s + pos + tl, s + pos, len - pos);
			memcpy(s + pos, t, tl);
			*n = len + tl;
		}
		break;
	}
	case 5: { /* delete a range */
		size_t k = 1 + pick(8);
		if (pos + k > len)
			k = len - pos;
		memmove(s + pos, s + pos + k, len - pos - k);
		*n = len - k;
		break;
	}
	case 6: { /* duplicate a range */
		size_t k = 1 + pick(16);
		if (pos + k > len)
			k = len - pos;
		if (len + k <= cap) {
			memmove(s + pos + k, s + pos, len - pos);
			*n = len + k;
		}
		break;
	}
	default: /* swap two bytes */
		if (len) {
			size_t q = pick(len);
			char t = s[pos];
			s[pos] = s[q];
			s[q] = t;
		}
		break;
	}
}

struct tally {
	size_t n, accept, reject, done, shape, div[DIV_COUNT], mismatch;
	size_t not_json; /* inputs we called not JSON (CL_EPARSE) */
};

static void print_escaped(const char *s, size_t n)
{
	for (size_t i = 0; i < n && i < 600; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
	putchar('\n');
}

/* Decodes s from an exact-size heap copy (ASan sees overreads) and checks with jansson. */
static void run_one(const char *s, size_t n, struct tally *t)
{
	char *copy = malloc(n ? n : 1);
	struct cl_chunk c;
	struct oracle_result r;

	assert_non_null(copy);
	memcpy(copy, s, n);
	int rc = cl_chunk_decode(copy, n, &c);
	assert_true(rc == 0 || rc == CL_EPARSE || rc == CL_EPROTO);
	assert_true(memchr(c.finish_reason, '\0', sizeof(c.finish_reason)) != NULL);
	oracle_check(copy, n, rc, &c, &r);
	t->n++;
	t->not_json += rc == CL_EPARSE;
	switch (r.verdict) {
	case ORACLE_BOTH_ACCEPT:
		t->accept++;
		break;
	case ORACLE_BOTH_REJECT:
		t->reject++;
		break;
	case ORACLE_DONE:
		t->done++;
		break;
	case ORACLE_WRONG_SHAPE:
		t->shape++;
		break;
	case ORACLE_DIVERGENCE:
		t->div[r.divergence]++;
		break;
	case ORACLE_MISMATCH:
		if (t->mismatch++ < 10) {
			printf("mismatch: %s\ninput (%zu bytes): ", r.detail, n);
			print_escaped(s, n);
		}
		break;
	}
	free(copy);
}

static void report(const char *what, const struct tally *t)
{
	printf("%s: %zu inputs: %zu both accept, %zu both reject, %zu [DONE], %zu valid JSON "
	       "but no chunk (both agree), %zu mismatches\n",
	       what, t->n, t->accept, t->reject, t->done, t->shape, t->mismatch);
	for (int d = 0; d < DIV_COUNT; d++)
		if (t->div[d])
			printf("  divergence: %zu x %s\n", t->div[d], oracle_divergence_names[d]);
}

/* The seeds themselves, then thousands of mutants of them. */
static void test_fixture_mutants(void **state)
{
	struct corpus c = { 0 };
	struct tally t = { 0 };
	static char work[32768];

	load_seeds(&c);
	assert_true(c.n >= 30);
	for (size_t i = 0; i < c.n; i++)
		run_one(c.item[i], c.len[i], &t);
	assert_int_equal(t.accept + t.done, c.n); /* every seed is valid */

	for (int iter = 0; iter < 60000; iter++) {
		size_t k = pick(c.n), n = c.len[k];
		if (n > sizeof(work) / 2)
			n = sizeof(work) / 2;
		memcpy(work, c.item[k], n);
		size_t edits = 1 + pick(pick(4) == 0 ? 8 : 2);
		for (size_t e = 0; e < edits; e++)
			mutate(work, &n, sizeof(work));
		run_one(work, n, &t);
	}
	report("fixture mutants", &t);
	assert_int_equal(t.mismatch, 0);
	/* The corpus must exercise both sides, or the agreement says little. */
	assert_true(t.accept > t.n / 20);
	assert_true(t.reject > t.n / 4);
	corpus_free(&c);
}

/* Generated chunk-shaped JSON (random types, repeats, escapes, whitespace), as is and
 * mutated. */
static void test_generated(void **state)
{
	struct tally plain = { 0 }, mutated = { 0 };
	static struct gen g;
	static char work[32768];

	for (int iter = 0; iter < 40000; iter++) {
		gen_chunk(&g);
		run_one(g.buf, g.len, &plain);
		size_t n = g.len;
		memcpy(work, g.buf, n);
		size_t edits = 1 + pick(2);
		for (size_t e = 0; e < edits; e++)
			mutate(work, &n, sizeof(work));
		run_one(work, n, &mutated);
	}
	report("generated", &plain);
	report("generated mutants", &mutated);
	assert_int_equal(plain.mismatch, 0);
	assert_int_equal(mutated.mismatch, 0);
	/* Generated text is valid JSON: we never call it anything else (jansson rejects some
	 * for its limits, e.g. a huge token count that we reject as no chunk). */
	assert_int_equal(plain.not_json, 0);
	assert_true(plain.accept > plain.n / 5);
	assert_true(plain.shape > plain.n / 10); /* the type rules are exercised too */
	assert_true(mutated.accept > mutated.n / 20);
}

/* Valid JSON of the wrong shape: we and jansson's tree agree it is no chunk; nulls and
 * unknown fields are fine. */
static void test_wrong_shapes(void **state)
{
	static const char *const wrong[] = {
		"[1,2,3]",
		"\"x\"",
		"null",
		"{\"choices\":\"nope\"}",
		"{\"choices\":{}}",
		"{\"choices\":[1]}",
		"{\"choices\":[{\"delta\":[]}]}",
		"{\"choices\":[{\"delta\":{\"content\":5}}]}",
		"{\"choices\":[{\"delta\":{\"reasoning_content\":true}}]}",
		"{\"choices\":[{\"delta\":{\"reasoning\":{}}}]}",
		"{\"choices\":[{\"delta\":{\"role\":1}}]}",
		"{\"choices\":[{\"finish_reason\":0}]}",
		"{\"usage\":7}",
		"{\"usage\":{\"completion_tokens\":\"many\"}}",
		"{\"usage\":{\"prompt_tokens\":-1}}",
		"{\"usage\":{\"prompt_tokens\":1.0}}",
		"{\"usage\":{\"completion_tokens\":1e2}}",
		"{\"usage\":{\"completion_tokens_details\":[]}}",
		"{\"usage\":{\"completion_tokens_details\":{\"reasoning_tokens\":\"3\"}}}",
		"{\"error\":5}",
		"{\"choices\":[{\"delta\":{\"content\":\"ok\"}},{\"delta\":{\"content\":5}}]}",
		"{\"usage\":null,\"usage\":[]}",
		"{\"choices\":[{\"delta\":{\"tool_calls\":7}}]}",
		"{\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":{}}}]}}]}",
	};
	static const char *const fine[] = {
		"{}",
		"{\"choices\":null,\"usage\":null,\"error\":null}",
		"{\"choices\":[null,{\"delta\":null,\"finish_reason\":null}]}",
		"{\"choices\":[{\"delta\":{\"content\":null,\"role\":null,\"reasoning\":null}}]}",
		"{\"usage\":{\"prompt_tokens\":null,\"completion_tokens\":0,"
		"\"completion_tokens_details\":null,\"total_tokens\":\"x\"}}",
		"{\"choices\":[{\"delta\":{\"content\":\"a\",\"audio\":7},\"logprobs\":5}],"
		"\"timings\":\"x\"}",
		"{\"choices\":[{\"delta\":{\"tool_calls\":[null,{\"type\":5,\"function\":null}]}}]}",
		"{\"error\":\"overloaded\"}",
		"{\"error\":{\"code\":\"x\",\"message\":7}}",
		"{\"usage\":{\"completion_tokens\":\"many\"},\"usage\":{\"completion_tokens\":3}}",
		"{\"choices\":[{\"delta\":{\"content\":5,\"content\":\"x\"}}]}",
	};
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		struct tally t = { 0 };
		run_one(wrong[i], strlen(wrong[i]), &t);
		if (t.shape != 1)
			fail_msg("'%s' is not judged wrong-shaped by both", wrong[i]);
	}
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		struct tally t = { 0 };
		run_one(fine[i], strlen(fine[i]), &t);
		if (t.accept != 1)
			fail_msg("'%s' is not accepted by both", fine[i]);
	}
}

/* Inputs chosen to hit every documented divergence: each must be classified, not failed. */
static void test_known_divergences(void **state)
{
	static const char *const cases[] = {
		"{\"usage\":{\"total_tokens\":99999999999999999999}}",
		"{\"x\":[-99999999999999999999]}",
		"{\"x\":1e999}",
		"{\"x\":[1.5E+400]}",
		"{\"choices\":[{\"delta\":{\"content\":\"\\ud800\"}}]}",
		"{\"x\":\"\\udc00x\"}",
		"{\"a\\u0000b\":1}",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tally t = { 0 };
		run_one(cases[i], strlen(cases[i]), &t);
		if (t.mismatch)
			fail_msg("'%s' not classified", cases[i]);
		size_t d = 0;
		for (int k = 0; k < DIV_COUNT; k++)
			d += t.div[k];
		assert_int_equal(d, 1);
	}
	/* Depth 65 < 2048: jansson accepts, we reject. */
	char deep[200];
	memset(deep, '[', 65);
	memset(deep + 65, ']', 65);
	struct tally t = { 0 };
	run_one(deep, 130, &t);
	assert_int_equal(t.div[DIV_DEPTH], 1);
	/* A raw NUL after a number: invalid JSON that jansson lets through. */
	memset(&t, 0, sizeof(t));
	run_one("{\"usage\":{\"prompt_tokens\":5\0}}", 30, &t);
	assert_int_equal(t.div[DIV_RAW_NUL], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_divergences),
		cmocka_unit_test(test_wrong_shapes),
		cmocka_unit_test(test_fixture_mutants),
		cmocka_unit_test(test_generated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
