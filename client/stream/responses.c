/* Zero-allocation decoder of one streamed Responses API event: one validating pass that keeps
 * the fields read, then decides by the event's type what they mean (see responses.h). */
#include "client/stream/responses.h"

#include <string.h>

#include "chatload/err.h"
#include "client/stream/json_scan.h"

#define R_TOP      "the event is not a JSON object"
#define R_TYPE     "type is not a string"
#define R_NOTYPE   "the event has no type"
#define R_DELTA    "delta is not a string"
#define R_RESPONSE "response is not an object"
#define R_USAGE    "response.usage is not an object"
#define R_IN       "response.usage.input_tokens is not a non-negative integer"
#define R_OUT      "response.usage.output_tokens is not a non-negative integer"
#define R_IN_DET   "response.usage.input_tokens_details is not an object"
#define R_OUT_DET  "response.usage.output_tokens_details is not an object"
#define R_CACHED   "response.usage.input_tokens_details.cached_tokens is not a non-negative integer"
#define R_RTOKENS                                                                                  \
	"response.usage.output_tokens_details.reasoning_tokens is not a non-negative integer"

/* The event types that mean something to a load generator. */
enum type {
	T_NONE, /* no "type" key (yet) */
	T_OTHER,
	T_TEXT,      /* response.output_text.delta */
	T_REASONING, /* response.reasoning_text.delta, response.reasoning_summary_text.delta */
	T_COMPLETED, /* response.completed */
	T_INCOMPLETE,
	T_FAILED,
	T_ERROR, /* "error" */
};

/* What the event said, kept until its type is known. */
struct ev {
	enum type type;
	bool has_delta;
	struct str delta;
	bool has_usage;
	int64_t in, out, rtokens, cached;
	bool max_output; /* response.incomplete_details.reason == "max_output_tokens" */
	bool has_err;    /* response.error an object */
	int code;
	const char *msg; /* a string, still escaped; NULL when none */
	size_t msg_len;
	/* wrong-type reasons, NULL when fine */
	const char *bad_type, *bad_delta, *bad_response, *bad_usage, *bad_in, *bad_out;
	const char *bad_in_det, *bad_out_det, *bad_cached, *bad_rtokens;
};

static enum type classify(const struct str *v)
{
	char buf[48];
	if (!scan_name(v, buf, sizeof(buf))) /* "response.failed\u0000" is another type */
		return T_OTHER;
	if (strcmp(buf, "response.output_text.delta") == 0)
		return T_TEXT;
	if (strcmp(buf, "response.reasoning_text.delta") == 0 ||
	    strcmp(buf, "response.reasoning_summary_text.delta") == 0)
		return T_REASONING;
	if (strcmp(buf, "response.completed") == 0)
		return T_COMPLETED;
	if (strcmp(buf, "response.incomplete") == 0)
		return T_INCOMPLETE;
	if (strcmp(buf, "response.failed") == 0)
		return T_FAILED;
	if (strcmp(buf, "error") == 0)
		return T_ERROR;
	return T_OTHER;
}

static int usage_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct ev *e = ctx;
	char c = (char)*sc->p;

	if (KEY_IS(k, "input_tokens"))
		return want_count(sc, depth, &e->in, &e->bad_in, R_IN);
	if (KEY_IS(k, "output_tokens"))
		return want_count(sc, depth, &e->out, &e->bad_out, R_OUT);
	if (KEY_IS(k, "input_tokens_details")) {
		e->cached = -1;
		e->bad_cached = e->bad_in_det = NULL;
		return c == '{' ? scan_one_count(sc, depth, "cached_tokens", &e->cached,
						 &e->bad_cached, R_CACHED)
				: skip_other(sc, depth, &e->bad_in_det, R_IN_DET);
	}
	if (KEY_IS(k, "output_tokens_details")) {
		e->rtokens = -1;
		e->bad_rtokens = e->bad_out_det = NULL;
		return c == '{' ? scan_one_count(sc, depth, "reasoning_tokens", &e->rtokens,
						 &e->bad_rtokens, R_RTOKENS)
				: skip_other(sc, depth, &e->bad_out_det, R_OUT_DET);
	}
	return parse_value(sc, depth);
}

/* response.error or the "error" event's top level: code and message (read_error_field). */
static int error_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct ev *e = ctx;
	int rc = read_error_field(sc, depth, k, &e->code, &e->msg, &e->msg_len);
	return rc < 0 ? rc : rc ? 0 : parse_value(sc, depth);
}

static int incomplete_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct ev *e = ctx;
	struct str v;
	int rc;

	if (!KEY_IS(k, "reason") || *sc->p != '"')
		return parse_value(sc, depth);
	if ((rc = parse_string(sc, &v)))
		return rc;
	e->max_output = KEY_IS(&v, "max_output_tokens");
	return 0;
}

/* The "response" object of response.* events: usage, error, incomplete_details. */
static int response_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct ev *e = ctx;
	char c = (char)*sc->p;

	if (KEY_IS(k, "usage")) {
		e->has_usage = false;
		e->in = e->out = e->rtokens = e->cached = -1;
		e->bad_usage = e->bad_in = e->bad_out = NULL;
		e->bad_in_det = e->bad_out_det = e->bad_cached = e->bad_rtokens = NULL;
		if (c != '{')
			return skip_other(sc, depth, &e->bad_usage, R_USAGE);
		e->has_usage = true;
		return scan_object(sc, depth, usage_key, e);
	}
	if (KEY_IS(k, "error") && c == '{') {
		e->has_err = true;
		e->code = 0;
		e->msg = NULL;
		e->msg_len = 0;
		return scan_object(sc, depth, error_key, e);
	}
	if (KEY_IS(k, "incomplete_details") && c == '{') {
		e->max_output = false;
		return scan_object(sc, depth, incomplete_key, e);
	}
	return parse_value(sc, depth);
}

/* The event as it is read: its fields, and the error event's own code and message beside
 * them (they sit at the top level). */
struct doc {
	struct ev e, top_err;
	struct cl_chunk *out;
};

static int top_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct doc *d = ctx;
	struct ev *e = &d->e;
	struct str v;
	int rc;

	if (KEY_IS(k, "type")) {
		e->bad_type = NULL;
		if ((rc = want_string(sc, depth, &v, &e->bad_type, R_TYPE)) < 0)
			return rc;
		e->type = rc == 1 ? classify(&v) : T_NONE;
		return 0;
	}
	if (KEY_IS(k, "delta")) {
		if ((rc = want_string(sc, depth, &e->delta, &e->bad_delta, R_DELTA)) < 0)
			return rc;
		e->has_delta = rc == 1;
		return 0;
	}
	if (KEY_IS(k, "response")) {
		/* A repeated "response" replaces the first wholly. */
		e->has_usage = e->has_err = e->max_output = false;
		e->in = e->out = e->rtokens = e->cached = -1;
		e->bad_response = e->bad_usage = e->bad_in = e->bad_out = NULL;
		e->bad_in_det = e->bad_out_det = e->bad_cached = e->bad_rtokens = NULL;
		return *sc->p == '{' ? scan_object(sc, depth, response_key, e)
				     : skip_other(sc, depth, &e->bad_response, R_RESPONSE);
	}
	return error_key(sc, depth, k, &d->top_err);
}

static void clear_all(struct cl_chunk *out)
{
	memset(out, 0, sizeof(*out));
	out->prompt_tokens = out->completion_tokens = out->reasoning_tokens = -1;
	out->cached_tokens = -1;
}

/* The event's facts, now that its type is known.  *bad: why it is not an event. */
static const char *apply(const struct ev *e, const struct ev *top_err, struct cl_chunk *out)
{
	const char *bad = e->bad_type;
	if (!bad && e->type == T_NONE)
		bad = R_NOTYPE;
	if (bad)
		return bad;
	switch (e->type) {
	case T_TEXT:
	case T_REASONING:
		if (e->bad_delta)
			return e->bad_delta;
		if (!e->has_delta || e->delta.len == 0)
			return NULL;
		if (e->type == T_TEXT) {
			out->has_content = true;
			out->content_bytes = e->delta.len;
			out->content = e->delta.s;
			out->content_len = e->delta.len;
		} else {
			out->has_reasoning = true;
			out->reasoning_bytes = e->delta.len;
		}
		return NULL;
	case T_COMPLETED:
	case T_INCOMPLETE:
		bad = FIRST_BAD(e->bad_response, e->bad_usage, e->bad_in, e->bad_out, e->bad_in_det,
				e->bad_out_det, e->bad_cached, e->bad_rtokens);
		if (bad)
			return bad;
		out->done = true;
		strcpy(out->finish_reason, e->type == T_COMPLETED ? "stop"
					   : e->max_output        ? "length"
								  : "other");
		if (e->has_usage) {
			out->has_usage = true;
			out->prompt_tokens = e->in;
			out->completion_tokens = e->out;
			out->reasoning_tokens = e->rtokens;
			out->cached_tokens = e->cached;
		}
		return NULL;
	case T_FAILED:
		if (e->bad_response)
			return e->bad_response;
		out->is_error = true;
		out->error_code = e->has_err ? e->code : 0;
		if (e->has_err && e->msg) {
			out->error_msg = e->msg;
			out->error_msg_len = e->msg_len;
		}
		return NULL;
	case T_ERROR:
		out->is_error = true;
		out->error_code = top_err->code;
		if (top_err->msg) {
			out->error_msg = top_err->msg;
			out->error_msg_len = top_err->msg_len;
		}
		return NULL;
	default:
		return NULL;
	}
}

/* The event's top-level object, then its meaning (an event's shape is judged only once the
 * whole object is read: its type may come last). */
static int top(struct scan *sc, void *arg, const char **bad)
{
	struct doc *d = arg;
	int rc = scan_object(sc, 1, top_key, d);
	if (rc)
		return rc;
	*bad = apply(&d->e, &d->top_err, d->out);
	return 0;
}

int cl_responses_decode(const char *data, size_t len, struct cl_chunk *out)
{
	struct doc d = { .e = { .in = -1, .out = -1, .rtokens = -1, .cached = -1 }, .out = out };
	const char *bad;

	clear_all(out);
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		out->done = true;
		return 0;
	}
	int rc = scan_document(data, len, top, &d, R_TOP, &bad);
	if (rc) {
		clear_all(out);
		out->malformed = rc == CL_EPROTO ? bad : NULL;
	}
	return rc;
}
