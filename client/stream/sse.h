/* Incremental server-sent-events parser: any split of the stream, no per-event allocation. */
#ifndef CHATLOAD_SSE_H
#define CHATLOAD_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "chatload/err.h"

/* Cap used when cl_sse_init is given 0. */
#define CL_SSE_DEFAULT_MAX_EVENT_BYTES (64u * 1024u)

/*
 * What an event's flags say about where its text came from (cl_sse_event_cb's flags, 0 for a
 * plain `data:` event):
 *   CL_SSE_ERROR_FIELD  some of the text came from `error:` lines: llama.cpp's server before
 *                       its PR 16109 (September 2025) told a failure after `200 OK` as the
 *                       non-standard field `error: {...}` followed by `data: [DONE]`.  Its
 *                       values are joined with the `data` values exactly as data lines are.
 *   CL_SSE_ERROR_EVENT  the event's type was `error` (`event: error`: OpenAI's Responses
 *                       stream, Anthropic's Messages stream).
 *   CL_SSE_DOCUMENT     the body was not an event stream: its first byte other than
 *                       whitespace was `{` or `[` (a JSON body, such as an error object sent
 *                       with 200 to a request that asked for a stream).  The text is the
 *                       whole body from that byte, given once by cl_sse_finish.
 */
#define CL_SSE_ERROR_FIELD 0x1u
#define CL_SSE_ERROR_EVENT 0x2u
#define CL_SSE_DOCUMENT    0x4u

/*
 * Called once per complete event with its data: the `data:` (and `error:`) lines joined by
 * '\n', without the final newline, and its flags (CL_SSE_*).  data is NOT NUL-terminated and
 * is valid only until the callback returns.  Return 0 to go on; any other value stops
 * cl_sse_feed (or cl_sse_finish), which returns it.  The callback must not call back into
 * the same parser.
 */
typedef int (*cl_sse_event_cb)(void *ctx, const char *data, size_t len, unsigned flags);

/*
 * One parser per response stream; embed it in per-stream state.  Zeroed is "not
 * initialised" (cl_sse_destroy is safe on it, cl_sse_feed is not).  Fields other than buf,
 * len and cap are private.
 */
struct cl_sse_parser {
	char *buf;  /* data of the event being assembled, when it had to be copied */
	size_t len; /* bytes used in buf */
	size_t cap; /* bytes allocated in buf (grows by doubling, never past max) */

	/* private */
	size_t max;              /* cap on one event's data, bytes */
	size_t data_len;         /* logical length of the event's data so far */
	const char *span;        /* zero-copy: the event's data so far, inside the caller's bytes */
	unsigned char state;     /* where in a line we are (enum in sse.c) */
	unsigned char mode;      /* body not judged yet, an event stream, or a document */
	unsigned char name_len;  /* bytes of the field name read so far (saturates) */
	unsigned char name_can;  /* which known names ("data", "error", "event") the name so
				  * far is a prefix of (bits in sse.c) */
	unsigned char field;     /* the current line's field: data, error, event, other */
	unsigned char value_len; /* an `event` line: bytes of its value so far (saturates) */
	bool value_is_error;     /* an `event` line: its value so far is a prefix of "error" */
	bool type_error;         /* the event's type (the last `event` line) is "error" */
	unsigned flags;          /* CL_SSE_ERROR_FIELD when an `error` line joined the event */
	bool after_cr;           /* the last byte was a CR: a following LF belongs to it */
	bool has_data;           /* a data line was seen since the last dispatch */
	int failed;              /* sticky error (CL_ETOOBIG, CL_ENOMEM) until reset */
};

/*
 * Prepares p (which may be zeroed or garbage) for a stream whose events carry at most
 * max_event_bytes of data (0: CL_SSE_DEFAULT_MAX_EVENT_BYTES).  Allocates a small event
 * buffer now; it grows by doubling up to the cap when an event must be copied (an event
 * split across feeds, or multi-line data), so in steady state nothing is allocated.
 * Returns 0 or CL_ENOMEM (p is then safe to destroy).
 */
CL_MUST_CHECK int cl_sse_init(struct cl_sse_parser *p, size_t max_event_bytes);

/* Makes p ready for a new response, forgetting any partial event and a sticky error.
 * Keeps the memory.  Does not allocate. */
void cl_sse_reset(struct cl_sse_parser *p);

/* Frees the buffer; p is then zeroed.  Safe on a zeroed or half-initialised parser. */
void cl_sse_destroy(struct cl_sse_parser *p);

/*
 * Feeds n bytes of the response body, calling cb (synchronously, from this call) once per
 * event completed by them, in order.  The SSE rules followed (WHATWG HTML, "event stream
 * interpretation"): lines end with CRLF, LF or CR, including a CRLF split across two feeds;
 * a line starting with ':' is a comment; `field:value` with one optional space after the
 * colon, a line without a colon is a field with an empty value; `data` appends value + '\n'
 * to the event; `error` does the same and flags the event CL_SSE_ERROR_FIELD (llama.cpp's
 * own field, see above); `event` sets the event's type, of which only "error" is told
 * (CL_SSE_ERROR_EVENT); `id`, `retry` and unknown fields are ignored; a blank line
 * dispatches the event if it had a data (or error) line (an empty `data:` line gives an
 * event of length 0) and forgets its type in any case.  A leading byte-order mark is not
 * stripped.
 *
 * A body whose first byte other than space, tab, CR and LF is '{' or '[' is not an event
 * stream but one JSON document: from that byte on it is kept whole (the cap below applies
 * to it) and given to cb by cl_sse_finish, flagged CL_SSE_DOCUMENT.
 *
 * Zero-copy: when an event's single data line lies wholly inside `bytes`, the callback's
 * data points into `bytes`; otherwise into p->buf.
 *
 * Returns 0; CL_ETOOBIG when an event's data would exceed the cap, or CL_ENOMEM when the
 * buffer cannot grow (both sticky: every later feed returns them until cl_sse_reset); or
 * the first nonzero value cb returned, in which case the bytes after that event are not
 * looked at (the parser stays usable and sits between events).
 */
int cl_sse_feed(struct cl_sse_parser *p, const char *bytes, size_t n, cl_sse_event_cb cb,
		void *ctx);

/*
 * The end of the response body: a document body (see cl_sse_feed) is given to cb now, once,
 * flagged CL_SSE_DOCUMENT; returns cb's value.  An event stream has nothing left to give (an
 * event the body cut before its blank line is not an event): returns 0.  Returns the sticky
 * error when there is one.  A second call gives nothing.  Allocates nothing.
 */
int cl_sse_finish(struct cl_sse_parser *p, cl_sse_event_cb cb, void *ctx);

/*
 * True when the stream so far ends inside an event: a data line was seen and no blank line
 * followed yet, or a line (of any kind, comments included) is unfinished; or the body is a
 * document that cl_sse_finish has not given yet.  At the end of a response (after
 * cl_sse_finish) this tells a clean end from a cut.
 */
bool cl_sse_pending(const struct cl_sse_parser *p);

#endif
