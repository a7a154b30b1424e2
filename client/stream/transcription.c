/* Zero-allocation decoder of a transcription answer or streamed event (see transcription.h). */
#include "client/stream/transcription.h"

#include <stdlib.h>
#include <string.h>

#include "chatload/err.h"
#include "client/stream/json_scan.h"

#define R_TOP     "the answer is not a JSON object"
#define R_TEXT    "text is not a string"
#define R_DELTA   "delta is not a string"
#define R_TYPE    "type is not a string"
#define R_USAGE   "usage is not an object"
#define R_IN      "usage.input_tokens is not a non-negative integer"
#define R_OUT     "usage.output_tokens is not a non-negative integer"
#define R_SECONDS "usage.seconds is not a non-negative number"
#define R_NODELTA "a transcript.text.delta event has no delta"
#define R_NOTHING "the answer has neither text nor error"

static enum cl_transcription_type classify(const struct str *v)
{
	char buf[32];
	if (!scan_name(v, buf, sizeof(buf))) /* "transcript.text.done\u0000" is another type */
		return CL_TRANSCRIPTION_OTHER;
	if (strcmp(buf, "transcript.text.delta") == 0)
		return CL_TRANSCRIPTION_DELTA;
	if (strcmp(buf, "transcript.text.done") == 0)
		return CL_TRANSCRIPTION_DONE;
	return CL_TRANSCRIPTION_OTHER;
}

/* A non-negative number, integral or not (seconds of audio) into *v; null leaves -1. */
static int want_seconds(struct scan *sc, int depth, double *v, const char **bad)
{
	unsigned char c = *sc->p;
	*v = -1;
	if (!is_digit(c))
		return skip_other(sc, depth, bad, R_SECONDS);
	const unsigned char *start = sc->p;
	bool is_int;
	int64_t iv;
	int rc = parse_number(sc, &is_int, &iv);
	if (rc)
		return rc;
	char num[40];
	size_t n = (size_t)(sc->p - start);
	if (n >= sizeof(num)) {
		*bad = R_SECONDS;
		return 0;
	}
	memcpy(num, start, n);
	num[n] = '\0';
	*v = strtod(num, NULL);
	return 0;
}

/* The answer as it is read.  Unlike the other one-document answers, a reason here is the
 * first one met and stays, a repeated key's included. */
struct doc {
	struct cl_transcription *out;
	const char *bad;
};

/* Keeps reason b unless an earlier one is kept. */
static void keep_first(struct doc *d, const char *b)
{
	if (b && !d->bad)
		d->bad = b;
}

static int usage_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct doc *d = ctx;
	struct cl_transcription *out = d->out;
	const char *b = NULL;
	int rc;

	if (KEY_IS(k, "input_tokens") || KEY_IS(k, "prompt_tokens"))
		rc = want_count(sc, depth, &out->input_tokens, &b, R_IN);
	else if (KEY_IS(k, "output_tokens") || KEY_IS(k, "completion_tokens"))
		rc = want_count(sc, depth, &out->output_tokens, &b, R_OUT);
	else if (KEY_IS(k, "seconds"))
		rc = want_seconds(sc, depth, &out->seconds, &b);
	else
		rc = parse_value(sc, depth);
	if (!rc)
		keep_first(d, b);
	return rc;
}

/* A string field into (*s, *n), flagging *has; a wrong type is a reason. */
static int read_str(struct scan *sc, int depth, struct doc *d, bool *has, const char **s, size_t *n,
		    const char *why)
{
	struct str v;
	const char *b = NULL;
	int rc = want_string(sc, depth, &v, &b, why);
	if (rc < 0)
		return rc;
	*has = rc == 1;
	*s = rc == 1 ? v.s : NULL;
	*n = rc == 1 ? v.len : 0;
	keep_first(d, b);
	return 0;
}

static int top_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct doc *d = ctx;
	struct cl_transcription *out = d->out;
	char c = (char)*sc->p;

	if (KEY_IS(k, "text"))
		return read_str(sc, depth, d, &out->has_text, &out->text, &out->text_len, R_TEXT);
	if (KEY_IS(k, "delta"))
		return read_str(sc, depth, d, &out->has_delta, &out->delta, &out->delta_len,
				R_DELTA);
	if (KEY_IS(k, "type")) {
		struct str v;
		const char *tb = NULL;
		int rc = want_string(sc, depth, &v, &tb, R_TYPE);
		if (rc < 0)
			return rc;
		if (rc == 1)
			out->type = classify(&v);
		keep_first(d, tb);
		return 0;
	}
	if (KEY_IS(k, "usage")) {
		if (c != '{')
			return skip_other(sc, depth, &d->bad, R_USAGE);
		out->has_usage = true;
		return scan_object(sc, depth, usage_key, d);
	}
	if (KEY_IS(k, "error"))
		return c == '{' || c == '"'
			   ? scan_error_value(sc, depth, &out->is_error, &out->error_code,
					      &out->error_msg, &out->error_msg_len)
			   : skip_other(sc, depth, &d->bad, SCAN_R_ERROR);
	return parse_value(sc, depth);
}

struct top_arg {
	struct cl_transcription *out;
	bool whole;
};

static int parse_top(struct scan *sc, void *arg, const char **bad)
{
	struct top_arg *a = arg;
	struct cl_transcription *out = a->out;
	struct doc d = { out, NULL };
	int rc = scan_object(sc, 1, top_key, &d);
	if (rc)
		return rc;
	if (!d.bad && out->type == CL_TRANSCRIPTION_DELTA && !out->has_delta)
		d.bad = R_NODELTA;
	if (!d.bad && a->whole && !out->has_text && !out->is_error)
		d.bad = R_NOTHING;
	*bad = d.bad;
	return 0;
}

static void clear_all(struct cl_transcription *out)
{
	memset(out, 0, sizeof(*out));
	out->input_tokens = out->output_tokens = -1;
	out->seconds = -1;
}

int cl_transcription_decode(const char *data, size_t len, bool whole, struct cl_transcription *out)
{
	const char *bad;
	struct top_arg a = { out, whole };

	clear_all(out);
	int rc = scan_document(data, len, parse_top, &a, R_TOP, &bad);
	if (rc) {
		clear_all(out);
		out->malformed = rc == CL_EPROTO ? bad : NULL;
	}
	return rc;
}

int cl_transcription_event_decode(const char *data, size_t len, struct cl_chunk *out)
{
	int rc = cl_chunk_decode(data, len, out);
	/* vLLM's chunks (and [DONE], and errors) are chat's; an event without choices is read
	 * again as OpenAI's, whose delta and done say what it is (vLLM's last chunk, "choices":
	 * [] with usage, has no type and keeps what chat's decoder read). */
	if (rc != 0 || out->done || out->is_error || out->n_choices)
		return rc;
	struct cl_transcription t;
	rc = cl_transcription_decode(data, len, false, &t);
	if (rc == CL_EPROTO) {
		out->malformed = t.malformed;
		return rc;
	}
	if (rc)
		return rc;
	if (t.type == CL_TRANSCRIPTION_DELTA && t.delta_len) {
		out->has_content = true;
		out->content = t.delta;
		out->content_len = out->content_bytes = t.delta_len;
	} else if (t.type == CL_TRANSCRIPTION_DONE) {
		out->done = true;
		if (t.has_usage) {
			out->has_usage = true;
			out->prompt_tokens = t.input_tokens;
			out->completion_tokens = t.output_tokens;
		}
	}
	return 0;
}
