/* The wire pre-validator: one allocation-free walk over raw msgpack bytes before msgpack-c sees
 * them. */
#include "chatload/wire.h"

#include <stdbool.h>
#include <string.h>

static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * What one format byte announces: a big-endian length or count of `len_bytes` after the format
 * byte, then for scalars a payload of that length (str, bin, ext) plus `extra` fixed bytes
 * (numbers; the type byte of ext and fixext), or for containers that many elements (pairs
 * for maps).
 */
struct fmt {
	int len_bytes;
	int extra;
	int container;    /* 0 scalar, 1 array, 2 map */
	uint32_t fixed_n; /* fixstr length, fixarray / fixmap count */
	bool bad;
};

/* Format bytes 0xc0..0xdf; len_bytes -1 marks 0xc1, which msgpack never uses. */
static const signed char fmt_table[32][3] = {
	/* len_bytes, extra, container */
	[0x00] = { 0, 0, 0 },  /* c0 nil */
	[0x01] = { -1, 0, 0 }, /* c1 never used */
	[0x02] = { 0, 0, 0 },  /* c2 false */
	[0x03] = { 0, 0, 0 },  /* c3 true */
	[0x04] = { 1, 0, 0 },  /* c4 bin 8 */
	[0x05] = { 2, 0, 0 },  /* c5 bin 16 */
	[0x06] = { 4, 0, 0 },  /* c6 bin 32 */
	[0x07] = { 1, 1, 0 },  /* c7 ext 8 (length, type, data) */
	[0x08] = { 2, 1, 0 },  /* c8 ext 16 */
	[0x09] = { 4, 1, 0 },  /* c9 ext 32 */
	[0x0a] = { 0, 4, 0 },  /* ca float 32 */
	[0x0b] = { 0, 8, 0 },  /* cb float 64 */
	[0x0c] = { 0, 1, 0 },  /* cc uint 8 */
	[0x0d] = { 0, 2, 0 },  /* cd uint 16 */
	[0x0e] = { 0, 4, 0 },  /* ce uint 32 */
	[0x0f] = { 0, 8, 0 },  /* cf uint 64 */
	[0x10] = { 0, 1, 0 },  /* d0 int 8 */
	[0x11] = { 0, 2, 0 },  /* d1 int 16 */
	[0x12] = { 0, 4, 0 },  /* d2 int 32 */
	[0x13] = { 0, 8, 0 },  /* d3 int 64 */
	[0x14] = { 0, 2, 0 },  /* d4 fixext 1 (type, data) */
	[0x15] = { 0, 3, 0 },  /* d5 fixext 2 */
	[0x16] = { 0, 5, 0 },  /* d6 fixext 4 */
	[0x17] = { 0, 9, 0 },  /* d7 fixext 8 */
	[0x18] = { 0, 17, 0 }, /* d8 fixext 16 */
	[0x19] = { 1, 0, 0 },  /* d9 str 8 */
	[0x1a] = { 2, 0, 0 },  /* da str 16 */
	[0x1b] = { 4, 0, 0 },  /* db str 32 */
	[0x1c] = { 2, 0, 1 },  /* dc array 16 */
	[0x1d] = { 4, 0, 1 },  /* dd array 32 */
	[0x1e] = { 2, 0, 2 },  /* de map 16 */
	[0x1f] = { 4, 0, 2 },  /* df map 32 */
};

static struct fmt classify(unsigned char b)
{
	struct fmt f = { 0 };
	if (b <= 0x7f || b >= 0xe0)
		return f; /* positive and negative fixint */
	if (b <= 0x9f) {
		f.container = b <= 0x8f ? 2 : 1; /* fixmap, fixarray */
		f.fixed_n = b & 0x0f;
		return f;
	}
	if (b <= 0xbf) {
		f.extra = b & 0x1f; /* fixstr */
		return f;
	}
	const signed char *t = fmt_table[b - 0xc0];
	f.bad = t[0] < 0;
	f.len_bytes = t[0] < 0 ? 0 : t[0];
	f.extra = t[1];
	f.container = t[2];
	return f;
}

int cl_wire_check(const void *buf, size_t len, struct cl_wire_stats *st, struct cl_err *err)
{
	const unsigned char *p = buf;
	if (st)
		memset(st, 0, sizeof(*st));
	if (len > CL_WIRE_MAX_MSG)
		return cl_err_set(err, CL_ETOOBIG,
				  "message of %zu bytes is larger than the %u allowed", len,
				  CL_WIRE_MAX_MSG);
	if (len == 0)
		return cl_err_set(err, CL_EPARSE, "empty message");
	if (!p)
		return cl_err_set(err, CL_EINVAL, "no buffer");

	/*
	 * left[d] is how many elements the container at depth d still has to yield; depth 0 is
	 * a virtual container holding the one top-level object.  Each object read takes one
	 * from the innermost open container, and a non-empty container opens a new level.
	 * Every object consumes at least its format byte, so the walk is O(len) and a count is
	 * believable only if it is no larger than the bytes left.
	 */
	uint64_t left[CL_WIRE_MAX_DEPTH + 1];
	uint32_t depth = 0, max_depth = 0;
	uint64_t objects = 0;
	size_t pos = 0;
	left[0] = 1;
	for (;;) {
		while (left[depth] == 0) {
			if (depth == 0)
				goto done;
			depth--;
		}
		if (pos >= len)
			return cl_err_set(err, CL_EPARSE,
					  "truncated message: %zu bytes end inside an object", len);
		size_t at = pos;
		unsigned char b = p[pos++];
		struct fmt f = classify(b);
		if (f.bad)
			return cl_err_set(err, CL_EPARSE, "invalid msgpack byte 0x%02x at byte %zu",
					  b, at);
		if ((size_t)f.len_bytes > len - pos)
			return cl_err_set(
			    err, CL_EPARSE,
			    "truncated message: header at byte %zu needs %d more bytes", at,
			    f.len_bytes);
		uint64_t n = f.len_bytes ? be(p + pos, f.len_bytes) : f.fixed_n;
		pos += (size_t)f.len_bytes;
		left[depth]--;
		if (++objects > CL_WIRE_MAX_OBJECTS)
			return cl_err_set(err, CL_ETOOBIG, "message has more than %u objects",
					  CL_WIRE_MAX_OBJECTS);
		if (!f.container) {
			/* A payload: str/bin/ext length from the header plus fixed bytes. */
			uint64_t payload = (f.len_bytes ? n : 0) + (uint64_t)f.extra;
			if (payload > len - pos)
				return cl_err_set(
				    err, CL_EPARSE,
				    "truncated message: object at byte %zu claims %llu "
				    "bytes but only %zu remain",
				    at, (unsigned long long)payload, len - pos);
			pos += (size_t)payload;
			continue;
		}
		uint64_t elems = f.container == 2 ? 2 * n : n;
		if (depth + 1 > CL_WIRE_MAX_DEPTH)
			return cl_err_set(err, CL_EPARSE, "nesting deeper than %d at byte %zu",
					  CL_WIRE_MAX_DEPTH, at);
		if (elems > len - pos)
			return cl_err_set(
			    err, CL_EPARSE,
			    "%s at byte %zu claims %llu elements but only %zu bytes remain",
			    f.container == 2 ? "map" : "array", at, (unsigned long long)elems,
			    len - pos);
		if (depth + 1 > max_depth)
			max_depth = depth + 1;
		if (elems > 0)
			left[++depth] = elems;
	}
done:
	if (pos != len)
		return cl_err_set(err, CL_EPARSE,
				  "%zu trailing bytes after the message at byte %zu", len - pos,
				  pos);
	if (st) {
		st->objects = objects;
		st->max_depth = max_depth;
	}
	return 0;
}
