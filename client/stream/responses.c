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
	bool has_msg;
	struct str msg;
	/* wrong-type reasons, NULL when fine */
	const char *bad_type, *bad_delta, *bad_response, *bad_usage, *bad_in, *bad_out;
	const char *bad_in_det, *bad_out_det, *bad_cached, *bad_rtokens;
};

static enum type classify(const struct str *v)
{
	char buf[48];
	bool cut;
	size_t n = unescape(v, buf, sizeof(buf) - 1, &cut);
	if (cut)
		return T_OTHER;
	buf[n] = '\0';
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

/* An object of token details: the one count named `name` into *count. */
static int parse_details(struct scan *sc, int depth, const char *name, int64_t *count,
			 const char **bad, const char *why)
{
	bool first = true;
	struct str k;
	int rc;

	*count = -1;
	*bad = NULL;
	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (key_is(&k, name, strlen(name)))
			rc = want_count(sc, depth + 1, count, bad, why);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
	}
	return rc;
}

static int parse_usage(struct scan *sc, int depth, struct ev *e)
{
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	e->has_usage = true;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		char c = (char)*sc->p;
		if (KEY_IS(&k, "input_tokens")) {
			rc = want_count(sc, depth + 1, &e->in, &e->bad_in, R_IN);
		} else if (KEY_IS(&k, "output_tokens")) {
			rc = want_count(sc, depth + 1, &e->out, &e->bad_out, R_OUT);
		} else if (KEY_IS(&k, "input_tokens_details")) {
			e->cached = -1;
			e->bad_cached = e->bad_in_det = NULL;
			rc = c == '{' ? parse_details(sc, depth + 1, "cached_tokens", &e->cached,
						      &e->bad_cached, R_CACHED)
				      : skip_other(sc, depth + 1, &e->bad_in_det, R_IN_DET);
		} else if (KEY_IS(&k, "output_tokens_details")) {
			e->rtokens = -1;
			e->bad_rtokens = e->bad_out_det = NULL;
			rc = c == '{' ? parse_details(sc, depth + 1, "reasoning_tokens",
						      &e->rtokens, &e->bad_rtokens, R_RTOKENS)
				      : skip_other(sc, depth + 1, &e->bad_out_det, R_OUT_DET);
		} else {
			rc = parse_value(sc, depth + 1);
		}
		if (rc)
			return rc;
	}
	return rc;
}

/* response.error or the "error" event's own fields: code (an int, else 0), message (a
 * string, else absent).  Neither is judged: an error is an error whatever its details. */
static int read_code_or_message(struct scan *sc, int depth, const struct str *k, struct ev *e,
				bool *matched)
{
	int rc;
	*matched = true;
	if (KEY_IS(k, "code")) {
		int64_t code;
		if ((rc = want_int(sc, depth, &code)) < 0)
			return rc;
		e->code = rc == 1 && code >= INT32_MIN && code <= INT32_MAX ? (int)code : 0;
		return 0;
	}
	if (KEY_IS(k, "message")) {
		const char *ignored;
		if ((rc = want_string(sc, depth, &e->msg, &ignored, NULL)) < 0)
			return rc;
		e->has_msg = rc == 1;
		return 0;
	}
	*matched = false;
	return 0;
}

static int parse_error_obj(struct scan *sc, int depth, struct ev *e)
{
	bool first = true, matched;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	e->has_err = true;
	e->code = 0;
	e->has_msg = false;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if ((rc = read_code_or_message(sc, depth + 1, &k, e, &matched)))
			return rc;
		if (!matched && (rc = parse_value(sc, depth + 1)))
			return rc;
	}
	return rc;
}

static int parse_incomplete(struct scan *sc, int depth, struct ev *e)
{
	bool first = true;
	struct str k, v;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "reason") && *sc->p == '"') {
			if ((rc = parse_string(sc, &v)))
				return rc;
			e->max_output = KEY_IS(&v, "max_output_tokens");
		} else if ((rc = parse_value(sc, depth + 1))) {
			return rc;
		}
	}
	return rc;
}

/* The "response" object of response.* events: usage, error, incomplete_details. */
static int parse_response(struct scan *sc, int depth, struct ev *e)
{
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		char c = (char)*sc->p;
		if (KEY_IS(&k, "usage")) {
			e->has_usage = false;
			e->in = e->out = e->rtokens = e->cached = -1;
			e->bad_usage = e->bad_in = e->bad_out = NULL;
			e->bad_in_det = e->bad_out_det = e->bad_cached = e->bad_rtokens = NULL;
			rc = c == '{' ? parse_usage(sc, depth + 1, e)
				      : skip_other(sc, depth + 1, &e->bad_usage, R_USAGE);
		} else if (KEY_IS(&k, "error") && c == '{') {
			rc = parse_error_obj(sc, depth + 1, e);
		} else if (KEY_IS(&k, "incomplete_details") && c == '{') {
			e->max_output = false;
			rc = parse_incomplete(sc, depth + 1, e);
		} else {
			rc = parse_value(sc, depth + 1);
		}
		if (rc)
			return rc;
	}
	return rc;
}

static int parse_top(struct scan *sc, struct ev *e, struct ev *top_err)
{
	bool first = true, matched;
	struct str k, v;
	int rc;

	if ((rc = obj_open(sc, 1)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		char c = (char)*sc->p;
		if (KEY_IS(&k, "type")) {
			e->bad_type = NULL;
			if ((rc = want_string(sc, 2, &v, &e->bad_type, R_TYPE)) < 0)
				return rc;
			e->type = rc == 1 ? classify(&v) : T_NONE;
			rc = 0;
		} else if (KEY_IS(&k, "delta")) {
			if ((rc = want_string(sc, 2, &e->delta, &e->bad_delta, R_DELTA)) < 0)
				return rc;
			e->has_delta = rc == 1;
			rc = 0;
		} else if (KEY_IS(&k, "response")) {
			/* A repeated "response" replaces the first wholly. */
			e->has_usage = e->has_err = e->max_output = false;
			e->in = e->out = e->rtokens = e->cached = -1;
			e->bad_response = e->bad_usage = e->bad_in = e->bad_out = NULL;
			e->bad_in_det = e->bad_out_det = e->bad_cached = e->bad_rtokens = NULL;
			rc = c == '{' ? parse_response(sc, 2, e)
				      : skip_other(sc, 2, &e->bad_response, R_RESPONSE);
		} else {
			/* The "error" event carries code and message at the top level. */
			if ((rc = read_code_or_message(sc, 2, &k, top_err, &matched)))
				return rc;
			if (!matched)
				rc = parse_value(sc, 2);
		}
		if (rc)
			return rc;
	}
	return rc;
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
		if (e->has_err && e->has_msg) {
			out->error_msg = e->msg.s;
			out->error_msg_len = e->msg.len;
		}
		return NULL;
	case T_ERROR:
		out->is_error = true;
		out->error_code = top_err->code;
		if (top_err->has_msg) {
			out->error_msg = top_err->msg.s;
			out->error_msg_len = top_err->msg.len;
		}
		return NULL;
	default:
		return NULL;
	}
}

/* The events' top-level object and the error beside it, for the shared driver. */
struct top_arg {
	struct ev *e, *top_err;
};

static int top(struct scan *sc, void *arg, const char **bad)
{
	struct top_arg *t = arg;
	(void)bad; /* an event's shape is judged after the whole text (apply) */
	return parse_top(sc, t->e, t->top_err);
}

int cl_responses_decode(const char *data, size_t len, struct cl_chunk *out)
{
	struct ev e = { .in = -1, .out = -1, .rtokens = -1, .cached = -1 };
	struct ev top_err = { 0 };
	struct top_arg t = { &e, &top_err };
	const char *bad;

	clear_all(out);
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		out->done = true;
		return 0;
	}
	int rc = scan_document(data, len, top, &t, R_TOP, &bad);
	if (!rc && !bad)
		bad = apply(&e, &top_err, out);
	if (rc) {
		clear_all(out);
		rc = CL_EPARSE;
	} else if (bad) {
		clear_all(out);
		out->malformed = bad;
		rc = CL_EPROTO;
	}
	return rc;
}
