/* A simple whole-buffer SSE reference parser (the spec, line by line) to test against. */
#ifndef CHATLOAD_TEST_SSE_REF_H
#define CHATLOAD_TEST_SSE_REF_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "chatload/err.h"
#include "client/stream/sse.h"

/* One list of events: data copied into one arena, offsets and flags (CL_SSE_*) per event. */
struct ev_list {
	char *arena;
	size_t arena_len, arena_cap;
	size_t *off, *len;
	unsigned *flags;
	size_t n, cap;
	int rc;       /* what the parse returned in the end (0, CL_ETOOBIG, a cb value) */
	bool pending; /* cl_sse_pending at the end (not meaningful after an error) */
};

static inline void ev_list_free(struct ev_list *l)
{
	free(l->arena);
	free(l->off);
	free(l->len);
	free(l->flags);
	memset(l, 0, sizeof(*l));
}

static inline void ev_list_add(struct ev_list *l, const char *data, size_t len, unsigned flags)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->off = realloc(l->off, l->cap * sizeof(*l->off));
		l->len = realloc(l->len, l->cap * sizeof(*l->len));
		l->flags = realloc(l->flags, l->cap * sizeof(*l->flags));
		if (!l->off || !l->len || !l->flags)
			abort();
	}
	if (l->arena_len + len + 1 > l->arena_cap) {
		while (l->arena_len + len + 1 > l->arena_cap)
			l->arena_cap = l->arena_cap ? l->arena_cap * 2 : 1024;
		l->arena = realloc(l->arena, l->arena_cap);
		if (!l->arena)
			abort();
	}
	if (len)
		memcpy(l->arena + l->arena_len, data, len);
	l->off[l->n] = l->arena_len;
	l->len[l->n] = len;
	l->flags[l->n] = flags;
	l->arena_len += len;
	l->n++;
}

/* cl_sse_event_cb that appends to a struct ev_list. */
static inline int ev_list_cb(void *ctx, const char *data, size_t len, unsigned flags)
{
	ev_list_add(ctx, data, len, flags);
	return 0;
}

/* Index of the first difference between two lists, or -1 when they are identical. */
static inline long ev_list_diff(const struct ev_list *a, const struct ev_list *b)
{
	size_t n = a->n < b->n ? a->n : b->n;
	for (size_t i = 0; i < n; i++)
		if (a->len[i] != b->len[i] || a->flags[i] != b->flags[i] ||
		    memcmp(a->arena + a->off[i], b->arena + b->off[i], a->len[i]) != 0)
			return (long)i;
	return a->n == b->n ? -1 : (long)n;
}

/*
 * The event stream interpretation of the WHATWG HTML spec over a whole buffer: split into
 * lines, act per line.  The cap (max bytes of an event's data, '\n' joins included) is
 * checked as the incremental parser does, i.e. also against a final unfinished data line.
 * chatload's additions (stream/sse.h): `error` lines are data lines that flag the event
 * CL_SSE_ERROR_FIELD; an event whose type (last `event` line) is "error" is flagged
 * CL_SSE_ERROR_EVENT; a body whose first non-whitespace byte is '{' or '[' is one document,
 * given (as cl_sse_finish would, flagged CL_SSE_DOCUMENT) as the last event, `pending`
 * saying what cl_sse_pending says before that finish.
 */
static inline void sse_ref_parse(const char *s, size_t n, size_t max, struct ev_list *out)
{
	size_t i = 0;

	out->rc = 0;
	out->pending = false;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	if (i < n && (s[i] == '{' || s[i] == '[')) {
		if (n - i > max) {
			out->rc = CL_ETOOBIG;
			return;
		}
		out->pending = true;
		ev_list_add(out, s + i, n - i, CL_SSE_DOCUMENT);
		return;
	}

	char *data = malloc(n + 1);
	size_t dlen = 0;
	bool has_data = false, type_error = false;
	unsigned flags = 0;

	if (!data)
		abort();
	i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && s[j] != '\r' && s[j] != '\n')
			j++;
		bool complete = j < n;
		const char *line = s + i;
		size_t ll = j - i;
		const char *colon = memchr(line, ':', ll);
		size_t nl = colon ? (size_t)(colon - line) : ll;
		bool is_data = (nl == 4 && memcmp(line, "data", 4) == 0) ||
			       (nl == 5 && memcmp(line, "error", 5) == 0);
		const char *v = colon ? colon + 1 : line + ll;
		size_t vl = colon ? ll - nl - 1 : 0;
		if (vl && *v == ' ') {
			v++;
			vl--;
		}

		if (!complete) {
			/* An unfinished last line: only a data value already counts (for the cap).
			 */
			out->pending = true;
			if (colon && is_data && line[0] != ':' &&
			    dlen + (has_data ? 1 : 0) + vl > max)
				out->rc = CL_ETOOBIG;
			break;
		}
		i = j + 1;
		if (s[j] == '\r' && i < n && s[i] == '\n')
			i++;

		if (ll == 0) {
			if (has_data)
				ev_list_add(out, data, dlen,
					    flags | (type_error ? CL_SSE_ERROR_EVENT : 0));
			has_data = false;
			type_error = false;
			flags = 0;
			dlen = 0;
			continue;
		}
		if (line[0] == ':')
			continue;
		if (nl == 5 && memcmp(line, "event", 5) == 0) {
			type_error = vl == 5 && memcmp(v, "error", 5) == 0;
			continue;
		}
		if (!is_data)
			continue;
		if (nl == 5)
			flags |= CL_SSE_ERROR_FIELD;
		size_t add = (has_data ? 1 : 0) + vl;
		if (dlen + add > max) {
			out->rc = CL_ETOOBIG;
			break;
		}
		if (has_data)
			data[dlen++] = '\n';
		memcpy(data + dlen, v, vl);
		dlen += vl;
		has_data = true;
	}
	if (has_data)
		out->pending = true;
	free(data);
}

#endif
