/* Zero-allocation decoder of one transcription answer (see transcription.h). */
#include "client/stream/transcription.h"

#include <string.h>

#include "chatload/err.h"
#include "client/stream/json_scan.h"

#define R_TOP     "the answer is not a JSON object"
#define R_TEXT    "text is not a string"
#define R_USAGE   "usage is not an object"
#define R_SECONDS "usage.seconds is not a non-negative integer"
#define R_ERROR   "error is neither an object nor a string"
#define R_NOTHING "the answer has neither text nor error"

static int parse_usage(struct scan *sc, int depth, struct cl_transcription *out, const char **bad)
{
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	*bad = NULL;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "seconds"))
			rc = want_count(sc, depth + 1, &out->usage_seconds, bad, R_SECONDS);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
	}
	return rc;
}

static int parse_error(struct scan *sc, int depth, struct cl_transcription *out)
{
	bool first = true;
	struct str k, v;
	int rc;

	if (*sc->p == '"') {
		if ((rc = parse_string(sc, &v)))
			return rc;
		out->is_error = true;
		out->error_msg = v.s;
		out->error_msg_len = v.len;
		return 0;
	}
	if ((rc = obj_open(sc, depth)))
		return rc;
	out->is_error = true;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "code")) {
			int64_t code;
			if ((rc = want_int(sc, depth + 1, &code)) < 0)
				return rc;
			out->error_code =
			    rc == 1 && code >= INT32_MIN && code <= INT32_MAX ? (int)code : 0;
			rc = 0;
		} else if (KEY_IS(&k, "message")) {
			const char *ignored;
			if ((rc = want_string(sc, depth + 1, &v, &ignored, NULL)) < 0)
				return rc;
			out->error_msg = rc == 1 ? v.s : NULL;
			out->error_msg_len = rc == 1 ? v.len : 0;
			rc = 0;
		} else {
			rc = parse_value(sc, depth + 1);
		}
		if (rc)
			return rc;
	}
	return rc;
}

static void clear_all(struct cl_transcription *out)
{
	memset(out, 0, sizeof(*out));
	out->usage_seconds = -1;
}

static int parse_top(struct scan *sc, struct cl_transcription *out, const char **bad)
{
	const char *bad_text = NULL, *bad_usage = NULL, *bad_error = NULL;
	bool first = true;
	struct str k, v;
	int rc;

	if ((rc = obj_open(sc, 1)))
		return rc;
	/* A repeated key's last value counts, as in jansson. */
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		char c = (char)*sc->p;
		if (KEY_IS(&k, "text")) {
			out->has_text = false;
			out->text_bytes = 0;
			rc = want_string(sc, 2, &v, &bad_text, R_TEXT);
			if (rc == 1) {
				out->has_text = true;
				out->text_bytes = v.len;
			}
			rc = rc < 0 ? rc : 0;
		} else if (KEY_IS(&k, "usage")) {
			out->usage_seconds = -1;
			bad_usage = NULL;
			rc = c == '{' ? parse_usage(sc, 2, out, &bad_usage)
				      : skip_other(sc, 2, &bad_usage, R_USAGE);
		} else if (KEY_IS(&k, "error")) {
			out->is_error = false;
			out->error_code = 0;
			out->error_msg = NULL;
			out->error_msg_len = 0;
			bad_error = NULL;
			rc = c == '{' || c == '"' ? parse_error(sc, 2, out)
						  : skip_other(sc, 2, &bad_error, R_ERROR);
		} else {
			rc = parse_value(sc, 2);
		}
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	*bad = FIRST_BAD(bad_text, bad_usage, bad_error);
	if (!*bad && !out->has_text && !out->is_error)
		*bad = R_NOTHING;
	return 0;
}

static int top(struct scan *sc, void *out, const char **bad)
{
	return parse_top(sc, out, bad);
}

int cl_transcription_decode(const char *data, size_t len, struct cl_transcription *out)
{
	const char *bad;

	clear_all(out);
	int rc = scan_document(data, len, top, out, R_TOP, &bad);
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
