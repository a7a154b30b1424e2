/* Tests of the SSE parser: fixtures under every split, line ends, fields, caps, stop, reset. */
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
#include "client/stream/sse.h"
#include "sse_ref.h"

static const struct {
	const char *file;
	size_t events;    /* counted by hand in the file */
	bool pending;     /* the file ends inside an event (a cut) */
	bool single_line; /* every event is one "data: " line */
} fixtures[] = {
	{ "crlf-comment-error-midstream.sse", 4, false, true },
	{ "llama.cpp-b4748-chat-stream.sse", 14, false, true },
	{ "openai-style-multitoken-chunks.sse", 6, false, true },
	{ "openai-style-reasoning-field.sse", 5, false, true },
	{ "openai-style-reasoning.sse", 7, false, true },
	{ "vllm-style-continuous-usage.sse", 6, false, true },
	{ "synthetic-cr-multiline-cut.sse", 2, true, false },
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

/* Feeds s in pieces whose sizes come from `sizes` (cycled; 0 means all the rest). */
static void parse_split(const char *s, size_t n, size_t max, const size_t *sizes, size_t nsizes,
			struct ev_list *out)
{
	struct cl_sse_parser p;
	assert_int_equal(cl_sse_init(&p, max), 0);
	size_t i = 0, k = 0;
	out->rc = 0;
	while (i < n) {
		size_t step = nsizes ? sizes[k++ % nsizes] : 0;
		if (step == 0 || step > n - i)
			step = n - i;
		/* Each piece in its own exact-size heap block, so ASan sees any read past it and
		 * a zero-copy pointer kept past the call would be a use-after-free. */
		char *piece = malloc(step);
		assert_non_null(piece);
		memcpy(piece, s + i, step);
		int rc = cl_sse_feed(&p, piece, step, ev_list_cb, out);
		free(piece);
		i += step;
		if (rc) {
			out->rc = rc;
			break;
		}
	}
	out->pending = cl_sse_pending(&p);
	/* The end of the body: a document is given now (the reference lists it last). */
	if (!out->rc)
		out->rc = cl_sse_finish(&p, ev_list_cb, out);
	assert_int_equal(cl_sse_finish(&p, ev_list_cb, out), out->rc); /* gives nothing twice */
	assert_true(p.cap <= p.max);
	cl_sse_destroy(&p);
}

static void parse_whole(const char *s, size_t n, size_t max, struct ev_list *out)
{
	parse_split(s, n, max, NULL, 0, out);
}

static void assert_same(const struct ev_list *want, const struct ev_list *got, const char *what)
{
	long d = ev_list_diff(want, got);
	if (d >= 0)
		fail_msg("%s: event %ld differs (want %zu events, got %zu)", what, d, want->n,
			 got->n);
	assert_int_equal(want->rc, got->rc);
	if (!want->rc)
		assert_int_equal(want->pending, got->pending);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Every fixture gives the same events whole, in 1-byte pieces, split at every point into
 * two, and in random pieces, and those events are what the reference parser and (for
 * one-line events) the files' "data: " lines say. */
static void test_fixture_splits(void **state)
{
	for (size_t f = 0; f < sizeof(fixtures) / sizeof(fixtures[0]); f++) {
		struct cl_buf b;
		struct ev_list whole = { 0 }, ref = { 0 }, lines = { 0 };
		read_fixture(fixtures[f].file, &b);

		parse_whole(b.data, b.len, 0, &whole);
		assert_int_equal(whole.rc, 0);
		assert_int_equal(whole.n, fixtures[f].events);
		assert_int_equal(whole.pending, fixtures[f].pending);

		sse_ref_parse(b.data, b.len, CL_SSE_DEFAULT_MAX_EVENT_BYTES, &ref);
		assert_same(&ref, &whole, fixtures[f].file);
		if (fixtures[f].single_line) {
			for (size_t i = 0; i < b.len;) {
				size_t j = i;
				while (j < b.len && b.data[j] != '\n' && b.data[j] != '\r')
					j++;
				if (j - i > 6 && memcmp(b.data + i, "data: ", 6) == 0)
					ev_list_add(&lines, b.data + i + 6, j - i - 6, 0);
				i = j + 1;
			}
			lines.pending = whole.pending;
			assert_same(&lines, &whole, fixtures[f].file);
		}

		size_t one = 1;
		struct ev_list bytes = { 0 };
		parse_split(b.data, b.len, 0, &one, 1, &bytes);
		assert_same(&whole, &bytes, "1-byte pieces");
		ev_list_free(&bytes);

		for (size_t cut = 1; cut < b.len; cut++) {
			size_t sizes[2] = { cut, 0 };
			struct ev_list two = { 0 };
			parse_split(b.data, b.len, 0, sizes, 2, &two);
			char what[96];
			snprintf(what, sizeof(what), "%s split at %zu", fixtures[f].file, cut);
			assert_same(&whole, &two, what);
			ev_list_free(&two);
		}

		for (int r = 0; r < 200; r++) {
			size_t sizes[64];
			for (size_t k = 0; k < 64; k++)
				sizes[k] = 1 + rng() % (r % 2 ? 7 : 300);
			struct ev_list rnd = { 0 };
			parse_split(b.data, b.len, 0, sizes, 64, &rnd);
			assert_same(&whole, &rnd, "random pieces");
			ev_list_free(&rnd);
		}
		ev_list_free(&whole);
		ev_list_free(&ref);
		ev_list_free(&lines);
		cl_buf_free(&b);
	}
}

/* Parses a literal whole and in 1-byte pieces (they must agree) and checks the events. */
static void expect_events(const char *s, size_t n, size_t max, int want_rc, bool want_pending,
			  size_t nwant, const char *const *want)
{
	struct ev_list whole = { 0 }, bytes = { 0 }, ref = { 0 };
	size_t one = 1;

	parse_whole(s, n, max, &whole);
	parse_split(s, n, max, &one, 1, &bytes);
	sse_ref_parse(s, n, max ? max : CL_SSE_DEFAULT_MAX_EVENT_BYTES, &ref);
	assert_same(&whole, &bytes, "whole vs 1-byte");
	assert_same(&ref, &whole, "reference vs parser");
	assert_int_equal(whole.rc, want_rc);
	if (!want_rc)
		assert_int_equal(whole.pending, want_pending);
	assert_int_equal(whole.n, nwant);
	for (size_t i = 0; i < nwant; i++) {
		size_t wl = strlen(want[i]);
		assert_int_equal(whole.len[i], wl);
		assert_memory_equal(whole.arena + whole.off[i], want[i], wl);
	}
	ev_list_free(&whole);
	ev_list_free(&bytes);
	ev_list_free(&ref);
}

#define EXPECT(str, ...)                                                                           \
	do {                                                                                       \
		const char *const want_[] = { __VA_ARGS__ };                                       \
		expect_events((str), sizeof(str) - 1, 0, 0, false,                                 \
			      sizeof(want_) / sizeof(want_[0]), want_);                            \
	} while (0)

static void test_line_ends(void **state)
{
	EXPECT("data: a\r\n\r\ndata: b\r\n\r\n", "a", "b");
	EXPECT("data: a\r\rdata: b\r\r", "a", "b");
	EXPECT("data: a\n\ndata: b\n\n", "a", "b");
	EXPECT("data: a\r\n\rdata: b\n\r\n", "a", "b");
	/* CR LF is one line end, CR CR two, LF CR two. */
	EXPECT("data: a\r\ndata: b\r\n\r\n", "a\nb");
	EXPECT("data: a\n\rdata: b\r\r", "a", "b");
	/* Blank lines with no data dispatch nothing. */
	EXPECT("\n\n\r\n\rdata: a\n\n\n\n\r\n", "a");
}

/* A CR LF whose halves arrive in different feeds is still one line end. */
static void test_crlf_split_across_feeds(void **state)
{
	const char *s = "data: a\r\ndata: b\r\n\r\n";
	size_t sizes[] = { 8, 0 }; /* cut between the first CR and its LF */
	struct ev_list l = { 0 };
	parse_split(s, strlen(s), 0, sizes, 2, &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.len[0], 3);
	assert_memory_equal(l.arena, "a\nb", 3);
	ev_list_free(&l);
}

static void test_comments_and_fields(void **state)
{
	EXPECT(": keep-alive\n\ndata: x\n\n", "x");
	EXPECT(":\n:\r\n: \rdata: x\n\n", "x");
	EXPECT("data: a\n: in between\ndata: b\n\n", "a\nb");
	EXPECT("event: message\nid: 7\nretry: 100\ndata: x\n\n", "x");
	EXPECT("event: ping\n\nid: 1\n\nretry: 5\n\n: c\n\n");
	/* Unknown and near-miss names are ignored; names are case-sensitive. */
	EXPECT("foo: bar\ndat: 1\ndatas: 2\nData: 3\nDATA: 4\n data: 5\ndata: ok\n\n", "ok");
	EXPECT("event\nid\ndata: x\n\n", "x");
}

static void test_data_forms(void **state)
{
	EXPECT("data: a\ndata: b\ndata: c\n\n", "a\nb\nc");
	EXPECT("data: a\ndata:\ndata: c\n\n", "a\n\nc");
	EXPECT("data:x\n\n", "x");
	EXPECT("data:  x\n\n", " x"); /* only one space is dropped */
	EXPECT("data\n\n", "");       /* a data field with no colon has an empty value */
	EXPECT("data:\n\n", "");
	EXPECT("data: \n\n", "");
	EXPECT("data\ndata\n\n", "\n");
	EXPECT("data: a:b: c\n\n", "a:b: c");
	EXPECT("data: [DONE]\n\n", "[DONE]");
}

static void test_nul_bytes_kept(void **state)
{
	const char s[] = "data: a\0b\n\n";
	struct ev_list l = { 0 };
	parse_whole(s, sizeof(s) - 1, 0, &l);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.len[0], 3);
	assert_memory_equal(l.arena, "a\0b", 3);
	ev_list_free(&l);
}

static void test_pending(void **state)
{
	struct cl_sse_parser p;
	struct ev_list l = { 0 };

	assert_int_equal(cl_sse_init(&p, 0), 0);
	assert_false(cl_sse_pending(&p));
	/* The final event without its blank line is not dispatched, but is pending. */
	assert_int_equal(cl_sse_feed(&p, "data: x\n", 8, ev_list_cb, &l), 0);
	assert_int_equal(l.n, 0);
	assert_true(cl_sse_pending(&p));
	assert_int_equal(cl_sse_feed(&p, "\n", 1, ev_list_cb, &l), 0);
	assert_int_equal(l.n, 1);
	assert_false(cl_sse_pending(&p));
	/* Cut in the middle of a line, with no data yet. */
	assert_int_equal(cl_sse_feed(&p, "dat", 3, ev_list_cb, &l), 0);
	assert_true(cl_sse_pending(&p));
	assert_int_equal(cl_sse_feed(&p, "a: y\r", 5, ev_list_cb, &l), 0);
	assert_true(cl_sse_pending(&p));
	assert_int_equal(cl_sse_feed(&p, "\r", 1, ev_list_cb, &l), 0);
	assert_int_equal(l.n, 2);
	assert_false(cl_sse_pending(&p));
	/* Whole comment lines and field lines without data are not an unfinished event. */
	assert_int_equal(cl_sse_feed(&p, ": ping\nevent: x\n", 16, ev_list_cb, &l), 0);
	assert_false(cl_sse_pending(&p));
	assert_int_equal(cl_sse_feed(&p, ": pi", 4, ev_list_cb, &l), 0);
	assert_true(cl_sse_pending(&p));
	cl_sse_destroy(&p);
	ev_list_free(&l);

	const char *const none[] = { NULL };
	expect_events("data: a\n\ndata: b", 16, 0, 0, true, 1, (const char *const[]){ "a" });
	expect_events("data: a\n\ndata: b\n", 17, 0, 0, true, 1, (const char *const[]){ "a" });
	expect_events("data: a\n\n: c\n", 13, 0, 0, false, 1, (const char *const[]){ "a" });
	expect_events("data: a\r", 8, 0, 0, true, 0, none);
}

static void test_too_big(void **state)
{
	const char *const none[] = { NULL };
	const char *const sixteen[] = { "0123456789abcdef" };
	/* Exactly at the cap passes; one byte more fails, whole or split. */
	expect_events("data: 0123456789abcdef\n\n", 24, 16, 0, false, 1, sixteen);
	expect_events("data: 0123456789abcdefg\n\n", 25, 16, CL_ETOOBIG, false, 0, none);
	/* The '\n' joining data lines counts. */
	expect_events("data: 01234567\ndata: 0123456\n\n", 30, 16, 0, false, 1,
		      (const char *const[]){ "01234567\n0123456" });
	expect_events("data: 01234567\ndata: 01234567\n\n", 31, 16, CL_ETOOBIG, false, 0, none);
	/* Events before the big one are delivered; the cap is per event. */
	expect_events("data: a\n\ndata: 0123456789abcdefXYZ\n\ndata: b\n\n", 45, 16, CL_ETOOBIG,
		      false, 1, (const char *const[]){ "a" });
	/* Comment and unknown-field lines are skipped, not buffered: no cap applies. */
	char big[5000];
	memset(big, 'x', sizeof(big));
	big[0] = ':';
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\n';
	expect_events(big, sizeof(big), 16, 0, false, 0, none);
	memcpy(big, "event", 5);
	big[5] = ':';
	expect_events(big, sizeof(big), 16, 0, false, 0, none);

	/* Sticky until reset. */
	struct cl_sse_parser p;
	struct ev_list l = { 0 };
	assert_int_equal(cl_sse_init(&p, 4), 0);
	assert_int_equal(cl_sse_feed(&p, "data: 12345", 11, ev_list_cb, &l), CL_ETOOBIG);
	assert_int_equal(cl_sse_feed(&p, "\n\ndata: a\n\n", 11, ev_list_cb, &l), CL_ETOOBIG);
	assert_int_equal(l.n, 0);
	cl_sse_reset(&p);
	assert_int_equal(cl_sse_feed(&p, "data: 1234\n\n", 12, ev_list_cb, &l), 0);
	assert_int_equal(l.n, 1);
	assert_true(p.cap <= 4);
	cl_sse_destroy(&p);
	ev_list_free(&l);
}

/* An event much larger than the first buffer, fed a byte at a time, grows it to fit, never
 * past the cap. */
static void test_growth(void **state)
{
	size_t vlen = 50000;
	char *s = malloc(vlen + 16);
	assert_non_null(s);
	memcpy(s, "data: ", 6);
	for (size_t i = 0; i < vlen; i++)
		s[6 + i] = (char)('a' + i % 26);
	memcpy(s + 6 + vlen, "\n\n", 2);
	size_t n = vlen + 8, one = 1;

	struct ev_list l = { 0 };
	parse_split(s, n, 50000, &one, 1, &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.len[0], vlen);
	assert_memory_equal(l.arena, s + 6, vlen);
	ev_list_free(&l);

	parse_split(s, n, 49999, &one, 1, &l);
	assert_int_equal(l.rc, CL_ETOOBIG);
	ev_list_free(&l);
	free(s);
}

static int stop_on_second(void *ctx, const char *data, size_t len, unsigned flags)
{
	int *count = ctx;
	return ++*count == 2 ? 42 : 0;
}

static void test_cb_stop(void **state)
{
	struct cl_sse_parser p;
	int count = 0;
	const char *s = "data: 1\n\ndata: 2\n\ndata: 3\n\n";

	assert_int_equal(cl_sse_init(&p, 0), 0);
	assert_int_equal(cl_sse_feed(&p, s, strlen(s), stop_on_second, &count), 42);
	assert_int_equal(count, 2); /* the third event was not looked at */
	/* The parser sits between events and goes on with what it is given next. */
	assert_false(cl_sse_pending(&p));
	struct ev_list l = { 0 };
	assert_int_equal(cl_sse_feed(&p, "data: 4\n\n", 9, ev_list_cb, &l), 0);
	assert_int_equal(l.n, 1);
	assert_memory_equal(l.arena, "4", 1);
	ev_list_free(&l);
	cl_sse_destroy(&p);
}

static void test_reset(void **state)
{
	struct cl_sse_parser p;
	struct ev_list l = { 0 };

	assert_int_equal(cl_sse_init(&p, 0), 0);
	/* Half an event, a half CRLF and a half field name are all forgotten. */
	assert_int_equal(cl_sse_feed(&p, "data: partial\ndata: more\r", 25, ev_list_cb, &l), 0);
	char *mem = p.buf;
	cl_sse_reset(&p);
	assert_ptr_equal(p.buf, mem); /* keeps its memory */
	assert_false(cl_sse_pending(&p));
	assert_int_equal(cl_sse_feed(&p, "\ndata: x\n\n", 10, ev_list_cb, &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.len[0], 1);
	assert_memory_equal(l.arena, "x", 1);
	cl_sse_reset(&p);
	assert_int_equal(cl_sse_feed(&p, "da", 2, ev_list_cb, &l), 0);
	cl_sse_reset(&p);
	assert_int_equal(cl_sse_feed(&p, "ta: y\n\n", 7, ev_list_cb, &l), 0);
	assert_int_equal(l.n, 1); /* "ta" is an unknown field */
	cl_sse_destroy(&p);
	ev_list_free(&l);
}

struct where {
	const char *lo, *hi;
	int inside, outside;
};

static int where_cb(void *ctx, const char *data, size_t len, unsigned flags)
{
	struct where *w = ctx;
	if (data >= w->lo && data + len <= w->hi)
		w->inside++;
	else
		w->outside++;
	return 0;
}

/* A whole event inside the caller's bytes is handed over without a copy; one split across
 * feeds comes from the parser's buffer. */
static void test_zero_copy(void **state)
{
	struct cl_sse_parser p;
	const char *s = "data: {\"a\":1}\n\nevent: x\ndata: b\n\n";
	struct where w = { s, s + strlen(s), 0, 0 };

	assert_int_equal(cl_sse_init(&p, 0), 0);
	assert_int_equal(cl_sse_feed(&p, s, strlen(s), where_cb, &w), 0);
	assert_int_equal(w.inside, 2);
	assert_int_equal(w.outside, 0);

	w = (struct where){ s, s + 10, 0, 0 };
	assert_int_equal(cl_sse_feed(&p, s, 10, where_cb, &w), 0);
	w.lo = s + 10;
	w.hi = s + strlen(s);
	assert_int_equal(cl_sse_feed(&p, s + 10, strlen(s) - 10, where_cb, &w), 0);
	assert_int_equal(w.inside, 1);
	assert_int_equal(w.outside, 1);
	cl_sse_destroy(&p);
}

static void test_destroy_zeroed(void **state)
{
	struct cl_sse_parser p;
	memset(&p, 0, sizeof(p));
	cl_sse_destroy(&p);
	cl_sse_destroy(&p);
	cl_sse_destroy(NULL);
	assert_int_equal(cl_sse_init(&p, 0), 0);
	assert_int_equal(p.max, CL_SSE_DEFAULT_MAX_EVENT_BYTES);
	cl_sse_destroy(&p);
	assert_null(p.buf);
	cl_sse_destroy(&p);
}

/* Parses s whole and in 1-byte pieces (they must agree, and agree with the reference) and
 * returns the whole parse in *l. */
static void parse_checked(const char *s, size_t n, size_t max, struct ev_list *l)
{
	struct ev_list bytes = { 0 }, ref = { 0 };
	size_t one = 1;
	parse_whole(s, n, max, l);
	parse_split(s, n, max, &one, 1, &bytes);
	sse_ref_parse(s, n, max ? max : CL_SSE_DEFAULT_MAX_EVENT_BYTES, &ref);
	assert_same(l, &bytes, "whole vs 1-byte");
	assert_same(&ref, l, "reference vs parser");
	ev_list_free(&bytes);
	ev_list_free(&ref);
}

static void assert_event(const struct ev_list *l, size_t i, const char *text, unsigned flags)
{
	assert_true(i < l->n);
	assert_int_equal(l->len[i], strlen(text));
	assert_memory_equal(l->arena + l->off[i], text, strlen(text));
	assert_int_equal(l->flags[i], flags);
}

/* llama.cpp's `error:` field (before its PR 16109): its value is the event's text, flagged;
 * joined with data lines as data lines are; the flag lasts one event. */
static void test_error_field(void **state)
{
	struct ev_list l = { 0 };
	const char llama[] = "error: {\"code\":400,\"message\":\"too big\"}\n\ndata: [DONE]\n\n";
	parse_checked(llama, sizeof(llama) - 1, 0, &l);
	assert_int_equal(l.n, 2);
	assert_event(&l, 0, "{\"code\":400,\"message\":\"too big\"}", CL_SSE_ERROR_FIELD);
	assert_event(&l, 1, "[DONE]", 0);
	ev_list_free(&l);

	const char mixed[] = "data: a\nerror:b\n\nerror\n\nerrors: x\nerro: y\n\n";
	parse_checked(mixed, sizeof(mixed) - 1, 0, &l);
	assert_int_equal(l.n, 2);
	assert_event(&l, 0, "a\nb", CL_SSE_ERROR_FIELD);
	assert_event(&l, 1, "", CL_SSE_ERROR_FIELD);
	ev_list_free(&l);
}

/* `event: error` flags its event; the type is forgotten at every blank line; other names
 * are not errors; the last `event` line counts. */
static void test_error_event(void **state)
{
	struct ev_list l = { 0 };
	const char s[] = "event: error\ndata: {\"type\":\"error\"}\n\n"
			 "data: plain\n\n"
			 "event: error\n\ndata: after-blank\n\n"
			 "event: error\nevent: message\ndata: last-wins\n\n"
			 "event: message\nevent:error\ndata: x\n\n"
			 "event: errors\ndata: y\n\nevent: erro\ndata: z\n\nevent: Error\ndata: w\n\n";
	parse_checked(s, sizeof(s) - 1, 0, &l);
	assert_int_equal(l.n, 8);
	assert_event(&l, 0, "{\"type\":\"error\"}", CL_SSE_ERROR_EVENT);
	assert_event(&l, 1, "plain", 0);
	assert_event(&l, 2, "after-blank", 0);
	assert_event(&l, 3, "last-wins", 0);
	assert_event(&l, 4, "x", CL_SSE_ERROR_EVENT);
	assert_event(&l, 5, "y", 0);
	assert_event(&l, 6, "z", 0);
	assert_event(&l, 7, "w", 0);
	ev_list_free(&l);

	const char both[] = "event: error\nerror: boom\n\n";
	parse_checked(both, sizeof(both) - 1, 0, &l);
	assert_int_equal(l.n, 1);
	assert_event(&l, 0, "boom", CL_SSE_ERROR_EVENT | CL_SSE_ERROR_FIELD);
	ev_list_free(&l);
}

/* A body that is one JSON document: kept whole, given once by cl_sse_finish, flagged; its
 * leading whitespace dropped; the cap applies; pending until given. */
static void test_document(void **state)
{
	struct ev_list l = { 0 };
	const char doc[] = " \r\n\t{\"error\":{\"message\":\"no\"}}\n\ndata: not-an-event\n\n";
	parse_checked(doc, sizeof(doc) - 1, 0, &l);
	assert_int_equal(l.rc, 0);
	assert_true(l.pending);
	assert_int_equal(l.n, 1);
	assert_event(&l, 0, "{\"error\":{\"message\":\"no\"}}\n\ndata: not-an-event\n\n",
		     CL_SSE_DOCUMENT);
	ev_list_free(&l);

	const char arr[] = "[1,2]";
	parse_checked(arr, sizeof(arr) - 1, 0, &l);
	assert_int_equal(l.n, 1);
	assert_event(&l, 0, "[1,2]", CL_SSE_DOCUMENT);
	ev_list_free(&l);

	/* Every split point gives the same document. */
	for (size_t cut = 1; cut < sizeof(doc) - 1; cut++) {
		size_t sizes[2] = { cut, 0 };
		struct ev_list two = { 0 }, whole = { 0 };
		parse_whole(doc, sizeof(doc) - 1, 0, &whole);
		parse_split(doc, sizeof(doc) - 1, 0, sizes, 2, &two);
		assert_same(&whole, &two, "document split");
		ev_list_free(&two);
		ev_list_free(&whole);
	}

	/* The cap: at it passes, past it fails (sticky, also from cl_sse_finish). */
	parse_checked("{\"a\":12}", 8, 8, &l);
	assert_int_equal(l.rc, 0);
	assert_int_equal(l.n, 1);
	ev_list_free(&l);
	parse_checked("{\"a\":123}", 9, 8, &l);
	assert_int_equal(l.rc, CL_ETOOBIG);
	assert_int_equal(l.n, 0);
	ev_list_free(&l);

	/* A stream (first byte 'd', or ':' or a BOM) is never a document, and an empty or
	 * all-whitespace body gives nothing. */
	parse_checked("data: {}\n\n{\"x\":1}", 18, 0, &l);
	assert_int_equal(l.n, 1);
	assert_event(&l, 0, "{}", 0);
	ev_list_free(&l);
	parse_checked(" \n\n", 3, 0, &l);
	assert_int_equal(l.n, 0);
	assert_false(l.pending);
	ev_list_free(&l);

	/* Reset forgets a document; the next body is judged afresh. */
	struct cl_sse_parser p;
	assert_int_equal(cl_sse_init(&p, 0), 0);
	assert_int_equal(cl_sse_feed(&p, "{\"half\":", 8, ev_list_cb, &l), 0);
	assert_true(cl_sse_pending(&p));
	cl_sse_reset(&p);
	assert_false(cl_sse_pending(&p));
	assert_int_equal(cl_sse_feed(&p, "data: x\n\n", 9, ev_list_cb, &l), 0);
	assert_int_equal(cl_sse_finish(&p, ev_list_cb, &l), 0);
	assert_int_equal(l.n, 1);
	assert_event(&l, 0, "x", 0);
	cl_sse_destroy(&p);
	ev_list_free(&l);
}

/* Random streams over the SSE alphabet: the parser under random splits matches the
 * whole-buffer reference implementation, events, cap errors and pending alike. */
static void test_random_vs_reference(void **state)
{
	static const char *const atoms[] = { "data", "data:", "data: ", "event: m", ":",
					     " ",    "\n",    "\r",     "\r\n",     "x",
					     "{}",   "id:",   "dat",    "a",        "error",
					     "error:", "err", "event: error", "event:", "event",
					     "{",    "[",     "\t",     "errors" };
	char s[256];
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = 0;
		size_t natoms = rng() % 40;
		for (size_t k = 0; k < natoms; k++) {
			const char *a = atoms[rng() % (sizeof(atoms) / sizeof(atoms[0]))];
			size_t al = strlen(a);
			if (n + al > sizeof(s))
				break;
			memcpy(s + n, a, al);
			n += al;
		}
		size_t max = iter % 3 ? 1 + rng() % 12 : 0;
		struct ev_list ref = { 0 }, got = { 0 };
		sse_ref_parse(s, n, max ? max : CL_SSE_DEFAULT_MAX_EVENT_BYTES, &ref);
		size_t sizes[16];
		for (size_t k = 0; k < 16; k++)
			sizes[k] = 1 + rng() % 9;
		parse_split(s, n, max, sizes, iter % 4 ? 16 : 0, &got);
		if (ev_list_diff(&ref, &got) >= 0 || ref.rc != got.rc ||
		    (!ref.rc && ref.pending != got.pending))
			fail_msg(
			    "iteration %d: '%.*s' (max %zu): reference %zu events rc %d pending "
			    "%d, parser %zu events rc %d pending %d",
			    iter, (int)n, s, max, ref.n, ref.rc, ref.pending, got.n, got.rc,
			    got.pending);
		ev_list_free(&ref);
		ev_list_free(&got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_splits),
		cmocka_unit_test(test_line_ends),
		cmocka_unit_test(test_crlf_split_across_feeds),
		cmocka_unit_test(test_comments_and_fields),
		cmocka_unit_test(test_data_forms),
		cmocka_unit_test(test_nul_bytes_kept),
		cmocka_unit_test(test_pending),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_cb_stop),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_zero_copy),
		cmocka_unit_test(test_destroy_zeroed),
		cmocka_unit_test(test_error_field),
		cmocka_unit_test(test_error_event),
		cmocka_unit_test(test_document),
		cmocka_unit_test(test_random_vs_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
