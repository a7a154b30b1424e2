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
#define R_ERROR   "error is neither an object nor a string"
#define R_NODELTA "a transcript.text.delta event has no delta"
#define R_NOTHING "the answer has neither text nor error"

static enum cl_transcription_type classify(const struct str *v)
{
	char buf[32];
	bool cut;
	size_t n = unescape(v, buf, sizeof(buf) - 1, &cut);
	if (cut)
		return CL_TRANSCRIPTION_OTHER;
	buf[n] = '\0';
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

static int parse_usage(struct scan *sc, int depth, struct cl_transcription *out, const char **bad)
{
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	out->has_usage = true;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		const char *b = NULL;
		if (KEY_IS(&k, "input_tokens") || KEY_IS(&k, "prompt_tokens"))
			rc = want_count(sc, depth + 1, &out->input_tokens, &b, R_IN);
		else if (KEY_IS(&k, "output_tokens") || KEY_IS(&k, "completion_tokens"))
			rc = want_count(sc, depth + 1, &out->output_tokens, &b, R_OUT);
		else if (KEY_IS(&k, "seconds"))
			rc = want_seconds(sc, depth + 1, &out->seconds, &b);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
		if (b && !*bad)
			*bad = b;
	}
	return rc;
}

static int parse_error(struct scan *sc, int depth, struct cl_transcription *out)
{
	return scan_error_value(sc, depth, &out->is_error, &out->error_code, &out->error_msg,
				&out->error_msg_len);
}

/* A string field into (*s, *n), flagging *has; a wrong type is a reason. */
static int read_str(struct scan *sc, bool *has, const char **s, size_t *n, const char **bad,
		    const char *why)
{
	struct str v;
	const char *b = NULL;
	int rc = want_string(sc, 2, &v, &b, why);
	if (rc < 0)
		return rc;
	*has = rc == 1;
	*s = rc == 1 ? v.s : NULL;
	*n = rc == 1 ? v.len : 0;
	if (b && !*bad)
		*bad = b;
	return 0;
}

struct top_arg {
	struct cl_transcription *out;
	bool whole;
};

static int parse_top(struct scan *sc, void *arg, const char **bad)
{
	struct top_arg *a = arg;
	struct cl_transcription *out = a->out;
	const char *b = NULL;
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, 1)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		char c = (char)*sc->p;
		if (KEY_IS(&k, "text")) {
			rc = read_str(sc, &out->has_text, &out->text, &out->text_len, &b, R_TEXT);
		} else if (KEY_IS(&k, "delta")) {
			rc = read_str(sc, &out->has_delta, &out->delta, &out->delta_len, &b,
				      R_DELTA);
		} else if (KEY_IS(&k, "type")) {
			struct str v;
			const char *tb = NULL;
			rc = want_string(sc, 2, &v, &tb, R_TYPE);
			if (rc == 1)
				out->type = classify(&v);
			if (tb && !b)
				b = tb;
			rc = rc < 0 ? rc : 0;
		} else if (KEY_IS(&k, "usage")) {
			rc =
			    c == '{' ? parse_usage(sc, 2, out, &b) : skip_other(sc, 2, &b, R_USAGE);
		} else if (KEY_IS(&k, "error")) {
			rc = c == '{' || c == '"' ? parse_error(sc, 2, out)
						  : skip_other(sc, 2, &b, R_ERROR);
		} else {
			rc = parse_value(sc, 2);
		}
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	if (!b && out->type == CL_TRANSCRIPTION_DELTA && !out->has_delta)
		b = R_NODELTA;
	if (!b && a->whole && !out->has_text && !out->is_error)
		b = R_NOTHING;
	*bad = b;
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
		rc = CL_EPARSE;
	} else if (bad) {
		clear_all(out);
		out->malformed = bad;
		rc = CL_EPROTO;
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
