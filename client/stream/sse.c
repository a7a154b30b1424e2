/* Incremental server-sent-events parser: a byte-level line state machine, any split. */
#include "client/stream/sse.h"

#include <stdlib.h>
#include <string.h>

#include "chatload/assert.h"
#include "chatload/err.h"

/* Where the parser is inside the current line. */
enum {
	ST_LINE_START = 0, /* nothing of this line read yet */
	ST_FIELD,          /* reading the field name (up to ':' or the line end) */
	ST_VALUE_START,    /* just after ':'; one space here is dropped */
	ST_VALUE,          /* reading the value (kept for `data`, else skipped), or a comment */
};

/* What the body is: not judged yet (only whitespace so far), an event stream, a JSON
 * document being kept, or a document already given by cl_sse_finish. */
enum { MODE_UNJUDGED = 0, MODE_STREAM, MODE_DOCUMENT, MODE_GIVEN };

/* The field names told apart (bits of name_can), and the current line's field. */
enum { CAN_DATA = 1u, CAN_ERROR = 2u, CAN_EVENT = 4u, CAN_ALL = 7u };
enum { F_OTHER = 0, F_DATA, F_ERROR, F_EVENT };

/* The first buffer; most events are a few hundred bytes, so it rarely grows. */
#define INITIAL_CAP 1024u

int cl_sse_init(struct cl_sse_parser *p, size_t max_event_bytes)
{
	memset(p, 0, sizeof(*p));
	p->max = max_event_bytes ? max_event_bytes : CL_SSE_DEFAULT_MAX_EVENT_BYTES;
	p->cap = p->max < INITIAL_CAP ? p->max : INITIAL_CAP;
	p->buf = malloc(p->cap);
	if (!p->buf) {
		p->cap = 0;
		return CL_ENOMEM;
	}
	return 0;
}

void cl_sse_reset(struct cl_sse_parser *p)
{
	p->len = 0;
	p->data_len = 0;
	p->span = NULL;
	p->state = ST_LINE_START;
	p->mode = MODE_UNJUDGED;
	p->name_len = 0;
	p->name_can = 0;
	p->field = F_OTHER;
	p->value_len = 0;
	p->value_is_error = false;
	p->type_error = false;
	p->flags = 0;
	p->after_cr = false;
	p->has_data = false;
	p->failed = 0;
}

void cl_sse_destroy(struct cl_sse_parser *p)
{
	if (!p)
		return;
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

bool cl_sse_pending(const struct cl_sse_parser *p)
{
	if (p->mode == MODE_DOCUMENT)
		return true;
	if (p->mode == MODE_GIVEN)
		return false;
	return p->has_data || p->state != ST_LINE_START;
}

static int fail(struct cl_sse_parser *p, int code)
{
	p->failed = code;
	return code;
}

/* Makes room for need bytes in buf, doubling, never past the cap (checked by the caller). */
static int reserve(struct cl_sse_parser *p, size_t need)
{
	CL_ASSERT(need <= p->max); /* past it the doubling below would never end */
	if (need <= p->cap)
		return 0;
	size_t cap = p->cap ? p->cap : (p->max < INITIAL_CAP ? p->max : INITIAL_CAP);
	while (cap < need)
		cap = cap > p->max / 2 ? p->max : cap * 2;
	char *nb = realloc(p->buf, cap);
	if (!nb)
		return fail(p, CL_ENOMEM);
	p->buf = nb;
	p->cap = cap;
	return 0;
}

/* Copies the zero-copy span (which points into the caller's bytes) into buf. */
static int materialize(struct cl_sse_parser *p)
{
	if (!p->span)
		return 0;
	int rc = reserve(p, p->data_len);
	if (rc)
		return rc;
	memcpy(p->buf, p->span, p->data_len);
	p->len = p->data_len;
	p->span = NULL;
	return 0;
}

/*
 * Adds n bytes to the event's data.  in_input says src lies in the bytes of the current
 * feed, so the first piece of an event can be referenced instead of copied.
 */
static int data_append(struct cl_sse_parser *p, const char *src, size_t n, bool in_input)
{
	if (n == 0)
		return 0;
	if (n > p->max - p->data_len)
		return fail(p, CL_ETOOBIG);
	if (in_input && p->data_len == 0) {
		p->span = src;
		p->data_len = n;
		return 0;
	}
	int rc = materialize(p);
	if (rc)
		return rc;
	rc = reserve(p, p->len + n);
	if (rc)
		return rc;
	CL_ASSERT(p->len + n <= p->cap);
	memcpy(p->buf + p->len, src, n);
	p->len += n;
	p->data_len = p->len;
	return 0;
}

/* A `data` field starts: lines after the first are joined with '\n'. */
static int data_line_start(struct cl_sse_parser *p)
{
	if (p->has_data) {
		int rc = data_append(p, "\n", 1, false);
		if (rc)
			return rc;
	}
	p->has_data = true;
	return 0;
}

/* Which of the known names a field name can still be, given its byte c at index i. */
static inline unsigned name_match(unsigned i, char c)
{
	unsigned can = 0;
	if (i < 4 && c == "data"[i])
		can |= CAN_DATA;
	if (i < 5 && c == "error"[i])
		can |= CAN_ERROR;
	if (i < 5 && c == "event"[i])
		can |= CAN_EVENT;
	return can;
}

/* The field name is read: which field the line is, and what it starts. */
static int field_start(struct cl_sse_parser *p)
{
	unsigned can = p->name_can, n = p->name_len;
	p->field = (can & CAN_DATA) && n == 4    ? F_DATA
		   : (can & CAN_ERROR) && n == 5 ? F_ERROR
		   : (can & CAN_EVENT) && n == 5 ? F_EVENT
						 : F_OTHER;
	if (p->field == F_EVENT) {
		p->value_len = 0;
		p->value_is_error = true;
		return 0;
	}
	if (p->field == F_OTHER)
		return 0;
	if (p->field == F_ERROR)
		p->flags |= CL_SSE_ERROR_FIELD;
	return data_line_start(p);
}

/* Bytes [s, e) of an `event` line's value: is it still "error" so far?  Not buffered. */
static void event_value(struct cl_sse_parser *p, const char *s, const char *e)
{
	for (; s < e && p->value_is_error; s++) {
		if (p->value_len >= 5 || *s != "error"[p->value_len])
			p->value_is_error = false;
		else
			p->value_len++;
	}
}

/* First line end in [s, end): the nearer of the next LF and the next CR, or end.  lf and cr
 * cache the last search so a long buffer of short lines is scanned once, not once a line. */
static inline const char *find_eol(const char *s, const char *end, const char **lf, const char **cr)
{
	if (!*lf || *lf < s) {
		*lf = memchr(s, '\n', (size_t)(end - s));
		if (!*lf)
			*lf = end;
	}
	if (!*cr || *cr < s) {
		*cr = memchr(s, '\r', (size_t)(end - s));
		if (!*cr)
			*cr = end;
	}
	return *lf < *cr ? *lf : *cr;
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Until the body's first byte other than whitespace, the body could be either; that byte
 * decides.  Whitespace before it also goes through the stream machine (where it can only
 * make blank lines or start an ignored field), so a stream loses nothing to the wait. */
static void judge(struct cl_sse_parser *p, const char *bytes, size_t n, size_t *doc_at)
{
	size_t k = 0;
	while (k < n && is_ws(bytes[k]))
		k++;
	*doc_at = n;
	if (k == n)
		return;
	if (bytes[k] == '{' || bytes[k] == '[') {
		p->mode = MODE_DOCUMENT;
		*doc_at = k;
	} else {
		p->mode = MODE_STREAM;
	}
}

/* A document's bytes are kept whole, under the event cap. */
static int document_feed(struct cl_sse_parser *p, const char *bytes, size_t n)
{
	int rc = data_append(p, bytes, n, true);
	return rc ? rc : materialize(p);
}

int cl_sse_finish(struct cl_sse_parser *p, cl_sse_event_cb cb, void *ctx)
{
	if (p->failed)
		return p->failed;
	if (p->mode != MODE_DOCUMENT)
		return 0;
	p->mode = MODE_GIVEN;
	CL_ASSERT(!p->span); /* every feed materialises before it returns */
	const char *d = p->buf ? p->buf : "";
	size_t dl = p->data_len;
	p->len = 0;
	p->data_len = 0;
	return cb(ctx, d, dl, CL_SSE_DOCUMENT);
}

int cl_sse_feed(struct cl_sse_parser *p, const char *bytes, size_t n, cl_sse_event_cb cb, void *ctx)
{
	if (p->failed)
		return p->failed;
	if (n == 0)
		return 0;
	if (p->mode == MODE_UNJUDGED) {
		size_t doc_at;
		judge(p, bytes, n, &doc_at);
		if (p->mode == MODE_DOCUMENT)
			return document_feed(p, bytes + doc_at, n - doc_at);
	} else if (p->mode == MODE_DOCUMENT) {
		return document_feed(p, bytes, n);
	} else if (p->mode == MODE_GIVEN) {
		return 0; /* bytes after the end: nothing of the answer */
	}

	const char *s = bytes, *end = bytes + n;
	const char *lf = NULL, *cr = NULL;
	int rc = 0;

	while (s < end) {
		switch (p->state) {
		case ST_LINE_START: {
			char c = *s;
			if (p->after_cr) {
				p->after_cr = false;
				if (c == '\n') { /* the LF of a CRLF */
					s++;
					continue;
				}
			}
			if (c == '\n' || c == '\r') {
				/* A blank line: dispatch; forget the event's type either way. */
				p->after_cr = c == '\r';
				s++;
				unsigned flags = p->flags;
				if (p->type_error)
					flags |= CL_SSE_ERROR_EVENT;
				p->flags = 0;
				p->type_error = false;
				if (!p->has_data)
					continue;
				const char *d = p->span ? p->span : (p->buf ? p->buf : "");
				size_t dl = p->data_len;
				p->span = NULL;
				p->len = 0;
				p->data_len = 0;
				p->has_data = false;
				rc = cb(ctx, d, dl, flags);
				if (rc)
					return rc;
				continue;
			}
			if (c == ':') { /* a comment: skip like an ignored field's value */
				p->field = F_OTHER;
				p->state = ST_VALUE;
				s++;
				continue;
			}
			p->state = ST_FIELD;
			p->name_len = 0;
			p->name_can = CAN_ALL;
			break;
		}
		case ST_FIELD:
			while (s < end) {
				char c = *s;
				if (c == ':' || c == '\n' || c == '\r')
					break;
				if (p->name_can)
					p->name_can &= name_match(p->name_len, c);
				if (p->name_len < 255)
					p->name_len++;
				s++;
			}
			if (s == end)
				break;
			if ((rc = field_start(p)))
				return rc;
			if (*s == ':') {
				p->state = ST_VALUE_START;
				s++;
			} else {
				/* No colon: the whole line is the name, the value is empty. */
				p->state = ST_VALUE;
			}
			break;
		case ST_VALUE_START:
			if (*s == ' ')
				s++;
			p->state = ST_VALUE;
			break;
		case ST_VALUE: {
			const char *e = find_eol(s, end, &lf, &cr);
			if ((p->field == F_DATA || p->field == F_ERROR) &&
			    (rc = data_append(p, s, (size_t)(e - s), true)))
				return rc;
			if (p->field == F_EVENT)
				event_value(p, s, e);
			s = e;
			if (s == end)
				break;
			if (p->field == F_EVENT)
				p->type_error = p->value_is_error && p->value_len == 5;
			p->after_cr = *s == '\r';
			p->state = ST_LINE_START;
			s++;
			break;
		}
		}
	}
	/* The caller's bytes go away now: keep what is referenced. */
	return materialize(p);
}
