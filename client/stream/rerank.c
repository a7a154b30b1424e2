/* Zero-allocation decoder of one rerank or score answer (see rerank.h). */
#include "client/stream/rerank.h"

#include <string.h>

#include "chatload/err.h"
#include "client/stream/json_scan.h"

#define R_TOP     "the answer is neither a JSON object nor an array"
#define R_RESULTS "results (or data) is not an array"
#define R_ITEM    "a result is not an object"
#define R_USAGE   "usage is not an object"
#define R_PROMPT  "usage.prompt_tokens is not a non-negative integer"
#define R_TOTAL   "usage.total_tokens is not a non-negative integer"
#define R_ERROR   "error is neither an object nor a string"
#define R_NOTHING "the answer has neither results, data nor error"

/* An array of results (sc->p at '['): each element counted, each one not an object a
 * reason. */
static int parse_results(struct scan *sc, int depth, struct cl_rerank *out, const char **bad)
{
	bool first = true;
	int rc;

	if (depth > CL_CHUNK_MAX_DEPTH)
		return CL_EPARSE;
	sc->p++;
	out->n_results = 0;
	while ((rc = arr_next(sc, &first)) == 1) {
		if (out->n_results < UINT32_MAX)
			out->n_results++;
		bool obj = *sc->p == '{';
		if ((rc = parse_value(sc, depth + 1)))
			return rc;
		if (!obj && !*bad)
			*bad = R_ITEM;
	}
	return rc;
}

static int parse_usage(struct scan *sc, int depth, struct cl_rerank *out, const char **bad)
{
	const char *bad_pt = NULL, *bad_tt = NULL;
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	out->has_usage = true;
	/* A repeated key's last value counts, as in jansson: each reason is its key's last. */
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "prompt_tokens"))
			rc = want_count(sc, depth + 1, &out->prompt_tokens, &bad_pt, R_PROMPT);
		else if (KEY_IS(&k, "total_tokens"))
			rc = want_count(sc, depth + 1, &out->total_tokens, &bad_tt, R_TOTAL);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
	}
	*bad = FIRST_BAD(bad_pt, bad_tt);
	return rc;
}

static int parse_error(struct scan *sc, int depth, struct cl_rerank *out)
{
	return scan_error_value(sc, depth, &out->is_error, &out->error_code, &out->error_msg,
				&out->error_msg_len);
}

static void clear_all(struct cl_rerank *out)
{
	memset(out, 0, sizeof(*out));
	out->prompt_tokens = -1;
	out->total_tokens = -1;
}

static int parse_top(struct scan *sc, struct cl_rerank *out, const char **bad)
{
	const char *bad_results = NULL, *bad_usage = NULL, *bad_error = NULL;
	bool first = true, has_results = false;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, 1)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		char c = (char)*sc->p;
		/* A later key of the same name replaces an earlier one, as in jansson. */
		if (KEY_IS(&k, "results") || KEY_IS(&k, "data")) {
			bad_results = NULL;
			out->n_results = 0;
			has_results = c == '[';
			rc = c == '[' ? parse_results(sc, 2, out, &bad_results)
				      : skip_other(sc, 2, &bad_results, R_RESULTS);
		} else if (KEY_IS(&k, "usage")) {
			out->has_usage = false;
			out->prompt_tokens = out->total_tokens = -1;
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
	*bad = FIRST_BAD(bad_results, bad_usage, bad_error);
	if (!*bad && !has_results && !out->is_error)
		*bad = R_NOTHING;
	return 0;
}

static int top(struct scan *sc, void *out, const char **bad)
{
	return parse_top(sc, out, bad);
}

/* TEI's answer, a bare array of results: scanned here, as scan_document does an object. */
static int scan_array(const char *data, size_t len, struct cl_rerank *out, const char **bad)
{
	struct scan sc = { (const unsigned char *)data, (const unsigned char *)data + len };

	*bad = NULL;
	skip_ws(&sc);
	if (parse_results(&sc, 1, out, bad))
		return CL_EPARSE;
	skip_ws(&sc);
	return sc.p == sc.end ? 0 : CL_EPARSE;
}

int cl_rerank_decode(const char *data, size_t len, struct cl_rerank *out)
{
	const char *bad;
	size_t at = 0;

	clear_all(out);
	while (at < len &&
	       (data[at] == ' ' || data[at] == '\n' || data[at] == '\r' || data[at] == '\t'))
		at++;
	int rc = at < len && data[at] == '[' ? scan_array(data, len, out, &bad)
					     : scan_document(data, len, top, out, R_TOP, &bad);
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
