/* Zero-allocation decoder of one /v1/embeddings answer (see embedding.h). */
#include "client/stream/embedding.h"

#include <string.h>

#include "chatload/err.h"
#include "client/stream/json_scan.h"

#define R_TOP       "the answer is not a JSON object"
#define R_DATA      "data is not an array"
#define R_ITEM      "data[] holds something that is not an object"
#define R_EMBEDDING "data[].embedding is neither an array of numbers nor a string"
#define R_USAGE     "usage is not an object"
#define R_PROMPT    "usage.prompt_tokens is not a non-negative integer"
#define R_ERROR     "error is neither an object nor a string"
#define R_NOTHING   "the answer has neither data nor error"

/* An embedding: an array of numbers (their count into *dim) or a base64 string. */
static int parse_embedding(struct scan *sc, int depth, uint32_t *dim, const char **bad)
{
	bool first = true;
	int rc;

	*dim = 0;
	if (*sc->p == '"') {
		struct str s;
		return parse_string(sc, &s);
	}
	if (*sc->p != '[')
		return skip_other(sc, depth, bad, R_EMBEDDING);
	if (depth > CL_CHUNK_MAX_DEPTH)
		return CL_EPARSE;
	sc->p++;
	while ((rc = arr_next(sc, &first)) == 1) {
		unsigned char c = *sc->p;
		if (c != '-' && !is_digit(c)) {
			if ((rc = parse_value(sc, depth + 1)))
				return rc;
			*bad = R_EMBEDDING;
			continue;
		}
		bool is_int;
		int64_t v;
		if ((rc = parse_number(sc, &is_int, &v)))
			return rc;
		if (*dim < UINT32_MAX)
			(*dim)++;
	}
	return rc;
}

static int parse_item(struct scan *sc, int depth, struct cl_embedding *out, const char **bad)
{
	bool first = true;
	struct str k;
	uint32_t dim = 0;
	const char *b = NULL;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "embedding")) {
			b = NULL;
			rc = parse_embedding(sc, depth + 1, &dim, &b);
		} else {
			rc = parse_value(sc, depth + 1);
		}
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	if (!*bad)
		*bad = b;
	if (out->n_data == 1)
		out->dim = dim;
	return 0;
}

static int parse_data(struct scan *sc, int depth, struct cl_embedding *out, const char **bad)
{
	bool first = true;
	int rc;

	if (depth > CL_CHUNK_MAX_DEPTH)
		return CL_EPARSE;
	sc->p++;
	while ((rc = arr_next(sc, &first)) == 1) {
		if (out->n_data < UINT32_MAX)
			out->n_data++;
		if (*sc->p == '{') {
			rc = parse_item(sc, depth + 1, out, bad);
		} else {
			rc = parse_value(sc, depth + 1);
			if (!*bad)
				*bad = R_ITEM;
		}
		if (rc)
			return rc;
	}
	return rc;
}

static int parse_usage(struct scan *sc, int depth, struct cl_embedding *out, const char **bad)
{
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	out->has_usage = true;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "prompt_tokens"))
			rc = want_count(sc, depth + 1, &out->prompt_tokens, bad, R_PROMPT);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
	}
	return rc;
}

static int parse_error(struct scan *sc, int depth, struct cl_embedding *out)
{
	return scan_error_value(sc, depth, &out->is_error, &out->error_code, &out->error_msg,
				&out->error_msg_len);
}

static void clear_all(struct cl_embedding *out)
{
	memset(out, 0, sizeof(*out));
	out->prompt_tokens = -1;
}

static int parse_top(struct scan *sc, struct cl_embedding *out, const char **bad)
{
	const char *bad_data = NULL, *bad_usage = NULL, *bad_error = NULL;
	bool first = true, has_data = false;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, 1)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		char c = (char)*sc->p;
		if (KEY_IS(&k, "data")) {
			out->n_data = out->dim = 0;
			bad_data = NULL;
			has_data = c == '[';
			rc = c == '[' ? parse_data(sc, 2, out, &bad_data)
				      : skip_other(sc, 2, &bad_data, R_DATA);
		} else if (KEY_IS(&k, "usage")) {
			out->has_usage = false;
			out->prompt_tokens = -1;
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
	*bad = FIRST_BAD(bad_data, bad_usage, bad_error);
	if (!*bad && !has_data && !out->is_error)
		*bad = R_NOTHING;
	return 0;
}

static int top(struct scan *sc, void *out, const char **bad)
{
	return parse_top(sc, out, bad);
}

int cl_embedding_decode(const char *data, size_t len, struct cl_embedding *out)
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
