/* The validating JSON scanner under the decoders of client/stream/ (chunk.c, responses.c,
 * messages.c, embedding.c, rerank.c, transcription.c, error.c): strings with escapes and UTF-8
 * checked, numbers, literals, key matching; the one walker every decoder reads its objects
 * and arrays with (scan_object, scan_array: the decoder gives a handler per object or array,
 * the walker does the keys, the commas and the skipping); what several decoders read alike
 * (an error's code and message, an "error" key or value, an object of one count); and the
 * driver of one document with its three verdicts (scan_document).  Internal to this folder:
 * the functions are static so that each decoder's hot path stays one translation unit
 * (inlined, as before the split); a decoder that does not use one of them is not warned
 * about it. */
#ifndef CHATLOAD_JSON_SCAN_H
#define CHATLOAD_JSON_SCAN_H

#include "client/stream/chunk.h"

#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The input being scanned.  Every reader checks p against end before looking at *p. */
struct scan {
	const unsigned char *p;
	const unsigned char *end;
};

/* A string token: the raw bytes between the quotes, and whether any escape is among them. */
struct str {
	const char *s;
	size_t len;
	bool esc;
};

static int parse_value(struct scan *sc, int depth);

static inline bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline void skip_ws(struct scan *sc)
{
	while (sc->p < sc->end && is_ws(*sc->p))
		sc->p++;
}

static inline bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static inline int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, no UTF-8-encoded
 * surrogates, nothing past U+10FFFF), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t avail = (size_t)(end - p);
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n;

	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4;
	else
		return 0;
	if (avail < n)
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return n;
}

/* Nonzero when one of the 8 bytes in v ends a plain run inside a string: '"', '\\', a
 * control character or a non-ASCII byte.  The has-less-than tricks are exact as booleans. */
static inline uint64_t swar_special(uint64_t v)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t q = v ^ (ones * '"');
	uint64_t b = v ^ (ones * '\\');
	uint64_t ctl = (v - ones * 0x20) & ~v;
	uint64_t quote = (q - ones) & ~q;
	uint64_t bslash = (b - ones) & ~b;
	return (v | ctl | quote | bslash) & highs;
}

/* Reads the string at sc->p (which is '"'), validating escapes and UTF-8. */
static int parse_string(struct scan *sc, struct str *out)
{
	const unsigned char *p = sc->p + 1, *end = sc->end;
	const unsigned char *start = p;
	bool esc = false;

	for (;;) {
		while (end - p >= 8) {
			uint64_t v;
			memcpy(&v, p, sizeof(v));
			uint64_t m = swar_special(v);
			if (m) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				/* The lowest flagged byte is exact: borrows only run upwards. */
				p += __builtin_ctzll(m) >> 3;
				goto special;
#else
				break;
#endif
			}
			p += 8;
		}
		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
			p++;
		if (p == end)
			return CL_EPARSE;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	special:;
#endif
		unsigned char c = *p;
		if (c == '"')
			break;
		if (c == '\\') {
			esc = true;
			if (end - p < 2)
				return CL_EPARSE;
			switch (p[1]) {
			case '"':
			case '\\':
			case '/':
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't':
				p += 2;
				break;
			case 'u':
				if (end - p < 6 || hexval(p[2]) < 0 || hexval(p[3]) < 0 ||
				    hexval(p[4]) < 0 || hexval(p[5]) < 0)
					return CL_EPARSE;
				p += 6;
				break;
			default:
				return CL_EPARSE;
			}
			continue;
		}
		if (c < 0x20)
			return CL_EPARSE;
		size_t n = utf8_seq(p, end);
		if (!n)
			return CL_EPARSE;
		p += n;
	}
	out->s = (const char *)start;
	out->len = (size_t)(p - start);
	out->esc = esc;
	sc->p = p + 1;
	return 0;
}

/*
 * Reads the number at sc->p.  *is_int: no fraction or exponent and the value fits an
 * int64 (then in *val).  Grammar per RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
 */
static int parse_number(struct scan *sc, bool *is_int, int64_t *val)
{
	const unsigned char *p = sc->p, *end = sc->end;
	bool neg = false, fits = true;
	uint64_t u = 0;

	*is_int = false;
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (p == end || !is_digit(*p))
		return CL_EPARSE;
	if (*p == '0') {
		p++;
	} else {
		while (p < end && is_digit(*p)) {
			unsigned d = *p - '0';
			if (u > (UINT64_MAX - d) / 10)
				fits = false;
			else
				u = u * 10 + d;
			p++;
		}
	}
	bool integral = true;
	if (p < end && *p == '.') {
		p++;
		if (p == end || !is_digit(*p))
			return CL_EPARSE;
		while (p < end && is_digit(*p))
			p++;
		integral = false;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !is_digit(*p))
			return CL_EPARSE;
		while (p < end && is_digit(*p))
			p++;
		integral = false;
	}
	sc->p = p;
	if (!integral || !fits)
		return 0;
	if (neg) {
		if (u > (uint64_t)INT64_MAX + 1)
			return 0;
		*val = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
	} else {
		if (u > (uint64_t)INT64_MAX)
			return 0;
		*val = (int64_t)u;
	}
	*is_int = true;
	return 0;
}

static int parse_literal(struct scan *sc, const char *lit, size_t n)
{
	if ((size_t)(sc->end - sc->p) < n || memcmp(sc->p, lit, n) != 0)
		return CL_EPARSE;
	sc->p += n;
	return 0;
}

/*
 * Object iteration.  obj_open consumes '{' of an object at the given depth; obj_next then
 * returns 1 with the next key and sc->p at its value, 0 after the closing '}', or
 * CL_EPARSE.  *first must be true before the first obj_next.
 */
static int obj_open(struct scan *sc, int depth)
{
	if (depth > CL_CHUNK_MAX_DEPTH)
		return CL_EPARSE;
	sc->p++;
	return 0;
}

/* The step every object and array takes to its next member: white space, then the closing
 * byte close (0, consumed), or a ',' unless this is the first member (*first), then white
 * space again: 1 with sc->p at the member, which is not checked here.  Or CL_EPARSE. */
static inline __attribute__((always_inline)) int next_member(struct scan *sc, bool *first,
							     unsigned char close)
{
	skip_ws(sc);
	if (sc->p == sc->end)
		return CL_EPARSE;
	if (*sc->p == close) {
		sc->p++;
		return 0;
	}
	if (!*first) {
		if (*sc->p != ',')
			return CL_EPARSE;
		sc->p++;
		skip_ws(sc);
		if (sc->p == sc->end)
			return CL_EPARSE;
	}
	*first = false;
	return 1;
}

static int obj_next(struct scan *sc, bool *first, struct str *key)
{
	int rc = next_member(sc, first, '}');
	if (rc != 1)
		return rc;
	/* A '}' right after a ',' fails here: a member of an object starts with its key. */
	if (*sc->p != '"')
		return CL_EPARSE;
	if ((rc = parse_string(sc, key)))
		return rc;
	skip_ws(sc);
	if (sc->p == sc->end || *sc->p != ':')
		return CL_EPARSE;
	sc->p++;
	skip_ws(sc);
	if (sc->p == sc->end)
		return CL_EPARSE;
	return 1;
}

/* Array iteration, as for objects: 1 with sc->p at the next element, 0 after ']'.  "[1,]"
 * fails in the caller: ']' does not start a value. */
static int arr_next(struct scan *sc, bool *first)
{
	return next_member(sc, first, ']');
}

/* Validates and skips any value at sc->p (sc->p < end) at the given depth. */
static int parse_value(struct scan *sc, int depth)
{
	int rc;
	bool first = true;
	struct str s;

	switch (*sc->p) {
	case '{':
		if ((rc = obj_open(sc, depth)))
			return rc;
		while ((rc = obj_next(sc, &first, &s)) == 1)
			if ((rc = parse_value(sc, depth + 1)))
				return rc;
		return rc;
	case '[':
		if (depth > CL_CHUNK_MAX_DEPTH)
			return CL_EPARSE;
		sc->p++;
		while ((rc = arr_next(sc, &first)) == 1)
			if ((rc = parse_value(sc, depth + 1)))
				return rc;
		return rc;
	case '"':
		return parse_string(sc, &s);
	case 't':
		return parse_literal(sc, "true", 4);
	case 'f':
		return parse_literal(sc, "false", 5);
	case 'n':
		return parse_literal(sc, "null", 4);
	default:
		if (*sc->p == '-' || is_digit(*sc->p)) {
			bool is_int;
			int64_t v;
			return parse_number(sc, &is_int, &v);
		}
		return CL_EPARSE;
	}
}

/* Reads a value that is wanted as an integer: 1 with *v if it is one that fits an int64,
 * 0 for anything else, or CL_EPARSE. */
static int want_int(struct scan *sc, int depth, int64_t *v)
{
	unsigned char c = *sc->p;
	if (c != '-' && !is_digit(c)) {
		int rc = parse_value(sc, depth);
		return rc ? rc : 0;
	}
	bool is_int;
	int rc = parse_number(sc, &is_int, v);
	if (rc)
		return rc;
	return is_int ? 1 : 0;
}

/*
 * Unescapes the (already validated) string s into dst, writing at most cap bytes and only
 * whole characters, so the result is cut at a character boundary.  Escaped lone
 * surrogates become U+FFFD.  Returns the bytes written; *cut says something did not fit.
 */
static __attribute__((unused)) size_t unescape(const struct str *s, char *dst, size_t cap,
					       bool *cut)
{
	const unsigned char *p = (const unsigned char *)s->s, *end = p + s->len;
	size_t n = 0;
	*cut = false;

	while (p < end) {
		unsigned char tmp[4];
		size_t k;
		if (*p != '\\') {
			k = *p < 0x80 ? 1 : *p < 0xE0 ? 2 : *p < 0xF0 ? 3 : 4;
			memcpy(tmp, p, k);
			p += k;
		} else {
			unsigned char e = p[1];
			p += 2;
			k = 1;
			switch (e) {
			case 'b':
				tmp[0] = '\b';
				break;
			case 'f':
				tmp[0] = '\f';
				break;
			case 'n':
				tmp[0] = '\n';
				break;
			case 'r':
				tmp[0] = '\r';
				break;
			case 't':
				tmp[0] = '\t';
				break;
			case 'u': {
				uint32_t cp = (uint32_t)(hexval(p[0]) << 12 | hexval(p[1]) << 8 |
							 hexval(p[2]) << 4 | hexval(p[3]));
				p += 4;
				if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' &&
				    p[1] == 'u') {
					uint32_t lo =
					    (uint32_t)(hexval(p[2]) << 12 | hexval(p[3]) << 8 |
						       hexval(p[4]) << 4 | hexval(p[5]));
					if (lo >= 0xDC00 && lo <= 0xDFFF) {
						cp =
						    0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
						p += 6;
					}
				}
				if (cp >= 0xD800 && cp <= 0xDFFF)
					cp = 0xFFFD;
				if (cp < 0x80) {
					tmp[0] = (unsigned char)cp;
				} else if (cp < 0x800) {
					tmp[0] = (unsigned char)(0xC0 | cp >> 6);
					tmp[1] = (unsigned char)(0x80 | (cp & 0x3F));
					k = 2;
				} else if (cp < 0x10000) {
					tmp[0] = (unsigned char)(0xE0 | cp >> 12);
					tmp[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
					tmp[2] = (unsigned char)(0x80 | (cp & 0x3F));
					k = 3;
				} else {
					tmp[0] = (unsigned char)(0xF0 | cp >> 18);
					tmp[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
					tmp[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
					tmp[3] = (unsigned char)(0x80 | (cp & 0x3F));
					k = 4;
				}
				break;
			}
			default: /* '"', '\\', '/' stand for themselves */
				tmp[0] = e;
				break;
			}
		}
		if (k > cap - n) {
			*cut = true;
			break;
		}
		memcpy(dst + n, tmp, k);
		n += k;
	}
	return n;
}

/*
 * The name a string value spells (an event's "type"), unescaped into buf (cap bytes, cap > 0)
 * and NUL-terminated: buf, or NULL when it does not fit or holds a NUL, so an escaped
 * "\u0000" makes another name, never a known one cut short.
 */
static __attribute__((unused)) const char *scan_name(const struct str *v, char *buf, size_t cap)
{
	bool cut;
	size_t n = unescape(v, buf, cap - 1, &cut);
	if (cut || memchr(buf, '\0', n))
		return NULL;
	buf[n] = '\0';
	return buf;
}

/* key_is for a key with escapes: unescaped first ("\u0063ontent" is "content"). */
static bool key_is_escaped(const struct str *s, const char *lit, size_t n)
{
	char buf[32];
	bool cut;
	size_t got = unescape(s, buf, n < sizeof(buf) ? n : sizeof(buf), &cut);
	return !cut && got == n && memcmp(buf, lit, n) == 0;
}

/* Whether key s equals lit.  Inlined so that memcmp sees a constant length and becomes a
 * couple of compares: key matching is a fair share of the decode time. */
static inline __attribute__((always_inline)) bool key_is(const struct str *s, const char *lit,
							 size_t n)
{
	if (__builtin_expect(s->esc, 0))
		return key_is_escaped(s, lit, n);
	return s->len == n && memcmp(s->s, lit, n) == 0;
}

#define KEY_IS(k, lit) key_is((k), (lit), sizeof(lit) - 1)

/* ---- typed reads shared by the decoders: a wrong type is a reason, not a parse error ---- */

/* The first reason that is not NULL among n, or NULL. */
static __attribute__((unused)) const char *first_bad(const char *const *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i])
			return r[i];
	return NULL;
}

#define FIRST_BAD(...)                                                                             \
	first_bad((const char *const[]){ __VA_ARGS__ },                                            \
		  sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))

/* Validates and skips a value that is not of the type wanted: null is absent and fine,
 * anything else sets *bad to why.  0 or CL_EPARSE. */
static __attribute__((unused)) int skip_other(struct scan *sc, int depth, const char **bad,
					      const char *why)
{
	bool null = *sc->p == 'n';
	int rc = parse_value(sc, depth);
	if (!rc && !null)
		*bad = why;
	return rc;
}

/* Reads a value that is wanted as a string: 1 with *s if it is one, 0 if it is null or
 * something else (validated and skipped; *bad set to why unless null), or CL_EPARSE. */
static __attribute__((unused)) int want_string(struct scan *sc, int depth, struct str *s,
					       const char **bad, const char *why)
{
	*bad = NULL;
	if (*sc->p != '"')
		return skip_other(sc, depth, bad, why);
	int rc = parse_string(sc, s);
	return rc ? rc : 1;
}

/* A token count: a non-negative integer that fits an int64, or null (absent: -1).  Anything
 * else, a string, a fraction, an exponent, a negative or too large number, is a wrong type:
 * *bad = why. */
static __attribute__((unused)) int want_count(struct scan *sc, int depth, int64_t *count,
					      const char **bad, const char *why)
{
	int64_t v;
	bool null = *sc->p == 'n';
	*bad = NULL;
	*count = -1;
	int rc = want_int(sc, depth, &v);
	if (rc < 0)
		return rc;
	if (rc == 1 && v >= 0)
		*count = v;
	else if (!null)
		*bad = why;
	return 0;
}

/* ---- the object walker every decoder reads its objects with ---- */

/*
 * A reader's handler of one key of an object: sc->p is at the key's value, depth is the
 * value's depth, ctx the reader's own state.  It reads the value when the key is one it
 * keeps, and validates and skips it (parse_value) when not, so every byte is checked once.
 * Returns 0 or a negative CL_E* code, never a positive value.
 */
typedef int (*scan_key_fn)(struct scan *sc, int depth, const struct str *key, void *ctx);

/*
 * Walks the object at sc->p (its '{', at the given depth), handing each key and its value to
 * on_key in document order: a repeated key is handed again, so its last value counts when
 * on_key replaces what it kept.  0 after the closing '}', or a negative CL_E* code (the first
 * one on_key returns stops the walk).  Inlined, so a constant on_key is a direct call the
 * compiler can inline: the walker costs the per-chunk path nothing over a hand-written loop.
 */
static inline __attribute__((always_inline)) int scan_object(struct scan *sc, int depth,
							     scan_key_fn on_key, void *ctx)
{
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1)
		if ((rc = on_key(sc, depth + 1, &k, ctx)))
			return rc;
	return rc;
}

/* A reader's handler of one element of an array: sc->p is at the element, depth is its
 * depth, ctx the reader's own state.  It reads or skips (parse_value) the element.  Returns 0
 * or a negative CL_E* code, never a positive value. */
typedef int (*scan_elem_fn)(struct scan *sc, int depth, void *ctx);

/* Walks the array at sc->p (its '[', at the given depth), handing each element to on_elem in
 * order.  0 after the closing ']', or a negative CL_E* code.  Inlined, as scan_object. */
static inline __attribute__((always_inline)) int scan_array(struct scan *sc, int depth,
							    scan_elem_fn on_elem, void *ctx)
{
	bool first = true;
	int rc;

	if (depth > CL_CHUNK_MAX_DEPTH)
		return CL_EPARSE;
	sc->p++;
	while ((rc = arr_next(sc, &first)) == 1)
		if ((rc = on_elem(sc, depth + 1, ctx)))
			return rc;
	return rc;
}

/* ---- what several decoders read the same way ---- */

/*
 * Key k of an error object (or of an error event's top level) when it is "code" or
 * "message": code an integer that fits an int, else 0 (*code); message a string, else none
 * (*msg NULL, *msg_len 0), pointing into the input, still escaped.  Neither is judged: an
 * error is an error whatever the shape of its details.  1 when k was one of them (its value
 * read), 0 when not (nothing read), or CL_EPARSE.  Inlined: every unknown top-level key of a
 * chunk is matched against these two.
 */
static inline __attribute__((always_inline)) int read_error_field(struct scan *sc, int depth,
								  const struct str *k, int *code,
								  const char **msg, size_t *msg_len)
{
	int rc;

	if (KEY_IS(k, "code")) {
		int64_t c;
		if ((rc = want_int(sc, depth, &c)) < 0)
			return rc;
		*code = rc == 1 && c >= INT32_MIN && c <= INT32_MAX ? (int)c : 0;
		return 1;
	}
	if (KEY_IS(k, "message")) {
		const char *ignored;
		struct str v;
		if ((rc = want_string(sc, depth, &v, &ignored, NULL)) < 0)
			return rc;
		*msg = rc == 1 ? v.s : NULL;
		*msg_len = rc == 1 ? v.len : 0;
		return 1;
	}
	return 0;
}

/* Where scan_error_value puts what it reads. */
struct scan_error_out {
	bool *is_error;
	int *code;
	const char **msg;
	size_t *msg_len;
};

static __attribute__((unused)) int error_value_key(struct scan *sc, int depth, const struct str *k,
						   void *ctx)
{
	struct scan_error_out *o = ctx;
	int rc = read_error_field(sc, depth, k, o->code, o->msg, o->msg_len);
	return rc < 0 ? rc : rc ? 0 : parse_value(sc, depth);
}

/*
 * An "error" value of a chunk or of a one-document answer (embeddings, rerank, score,
 * transcription): a string (its text the message) or an object read by read_error_field,
 * any other key skipped.  Either way *is_error is set; what the value does not say is left
 * as it was.  0 or CL_EPARSE.
 */
static __attribute__((unused)) int scan_error_value(struct scan *sc, int depth, bool *is_error,
						    int *code, const char **msg, size_t *msg_len)
{
	struct scan_error_out o = { is_error, code, msg, msg_len };
	struct str v;
	int rc;

	*is_error = true;
	if (*sc->p != '"')
		return scan_object(sc, depth, error_value_key, &o);
	if ((rc = parse_string(sc, &v)))
		return rc;
	*msg = v.s;
	*msg_len = v.len;
	return 0;
}

/* Why an "error" value is wrong, in every decoder that reads one. */
#define SCAN_R_ERROR "error is neither an object nor a string"

/*
 * The top-level "error" key of a chat chunk, an embeddings or a rerank answer: it replaces
 * what an earlier "error" said (*is_error, *code, *msg, *msg_len cleared, *bad NULL), then
 * an object or a string is read by scan_error_value, null is absent, and anything else sets
 * *bad to SCAN_R_ERROR.  0 or CL_EPARSE.
 */
static __attribute__((unused)) int read_error_key(struct scan *sc, int depth, bool *is_error,
						  int *code, const char **msg, size_t *msg_len,
						  const char **bad)
{
	*is_error = false;
	*code = 0;
	*msg = NULL;
	*msg_len = 0;
	*bad = NULL;
	if (*sc->p == '{' || *sc->p == '"')
		return scan_error_value(sc, depth, is_error, code, msg, msg_len);
	return skip_other(sc, depth, bad, SCAN_R_ERROR);
}

/* What scan_one_count reads: key name (name_len bytes), its count and its reason. */
struct one_count {
	const char *name;
	size_t name_len;
	int64_t *count;
	const char **bad;
	const char *why;
};

static __attribute__((unused)) int one_count_key(struct scan *sc, int depth, const struct str *k,
						 void *ctx)
{
	struct one_count *c = ctx;
	if (key_is(k, c->name, c->name_len))
		return want_count(sc, depth, c->count, c->bad, c->why);
	return parse_value(sc, depth);
}

/*
 * An object holding one count of interest (a usage's token details): key name's value read
 * by want_count into *count and its wrong type into *bad (a repeated key replaces both), any
 * other key skipped.  Nothing is cleared first: the caller clears what a repeated object
 * replaces.  0 or CL_EPARSE.
 */
static __attribute__((unused)) int scan_one_count(struct scan *sc, int depth, const char *name,
						  int64_t *count, const char **bad, const char *why)
{
	struct one_count c = { name, strlen(name), count, bad, why };
	return scan_object(sc, depth, one_count_key, &c);
}

/* ---- the document driver every decoder shares ---- */

/* Reads one document's top-level object into the decoder's own state (arg), and says in *bad
 * why the document is not what the decoder wants (NULL when it is).  0 or CL_EPARSE. */
typedef int (*scan_top_fn)(struct scan *sc, void *arg, const char **bad);

/*
 * The one JSON document of data (len bytes), white space around it allowed: an object is
 * handed to top, any other valid value is not_object.  Returns 0 when data is one JSON value
 * and nothing else and top found it the document wanted; CL_EPROTO with *bad the reason
 * when it is JSON of another shape; CL_EPARSE when it is not JSON, even when top found a
 * wrong shape first (the shape is judged only once the whole text is known to be JSON).  On
 * either failure the caller clears what top wrote, so nothing half-filled escapes.  Inlined,
 * so each decoder calls its own top directly on its per-chunk path.
 */
static inline __attribute__((always_inline)) int scan_document(const char *data, size_t len,
							       scan_top_fn top, void *arg,
							       const char *not_object,
							       const char **bad)
{
	struct scan sc = { (const unsigned char *)data, (const unsigned char *)data + len };
	int rc;

	*bad = NULL;
	skip_ws(&sc);
	if (sc.p == sc.end)
		return CL_EPARSE;
	if (*sc.p == '{') {
		rc = top(&sc, arg, bad);
	} else {
		rc = parse_value(&sc, 1);
		*bad = not_object;
	}
	if (rc)
		return CL_EPARSE;
	skip_ws(&sc);
	if (sc.p != sc.end)
		return CL_EPARSE;
	return *bad ? CL_EPROTO : 0;
}

#endif
