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

/* What an element of data says: its embedding's length and why it is wrong. */
struct item {
	uint32_t dim;
	const char *bad;
};

static int item_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct item *it = ctx;
	if (!KEY_IS(k, "embedding"))
		return parse_value(sc, depth);
	it->bad = NULL;
	return parse_embedding(sc, depth, &it->dim, &it->bad);
}

static int parse_item(struct scan *sc, int depth, struct cl_embedding *out, const char **bad)
{
	struct item it = { 0, NULL };
	int rc = scan_object(sc, depth, item_key, &it);
	if (rc)
		return rc;
	if (!*bad)
		*bad = it.bad;
	if (out->n_data == 1)
		out->dim = it.dim;
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

/* The answer as it is read: the fields, and each top-level key's reason (a repeated key
 * replaces its reason, as in jansson). */
struct doc {
	struct cl_embedding *out;
	bool has_data;
	const char *bad_data, *bad_usage, *bad_error;
};

static int usage_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct doc *d = ctx;
	if (KEY_IS(k, "prompt_tokens"))
		return want_count(sc, depth, &d->out->prompt_tokens, &d->bad_usage, R_PROMPT);
	return parse_value(sc, depth);
}

static void clear_all(struct cl_embedding *out)
{
	memset(out, 0, sizeof(*out));
	out->prompt_tokens = -1;
}

static int top_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct doc *d = ctx;
	struct cl_embedding *out = d->out;
	char c = (char)*sc->p;

	if (KEY_IS(k, "data")) {
		out->n_data = out->dim = 0;
		d->bad_data = NULL;
		d->has_data = c == '[';
		return c == '[' ? parse_data(sc, depth, out, &d->bad_data)
				: skip_other(sc, depth, &d->bad_data, R_DATA);
	}
	if (KEY_IS(k, "usage")) {
		out->has_usage = false;
		out->prompt_tokens = -1;
		d->bad_usage = NULL;
		if (c != '{')
			return skip_other(sc, depth, &d->bad_usage, R_USAGE);
		out->has_usage = true;
		return scan_object(sc, depth, usage_key, d);
	}
	if (KEY_IS(k, "error")) {
		out->is_error = false;
		out->error_code = 0;
		out->error_msg = NULL;
		out->error_msg_len = 0;
		d->bad_error = NULL;
		return c == '{' || c == '"'
			   ? scan_error_value(sc, depth, &out->is_error, &out->error_code,
					      &out->error_msg, &out->error_msg_len)
			   : skip_other(sc, depth, &d->bad_error, R_ERROR);
	}
	return parse_value(sc, depth);
}

static int top(struct scan *sc, void *arg, const char **bad)
{
	struct doc d = { arg, false, NULL, NULL, NULL };
	int rc = scan_object(sc, 1, top_key, &d);
	if (rc)
		return rc;
	*bad = FIRST_BAD(d.bad_data, d.bad_usage, d.bad_error);
	if (!*bad && !d.has_data && !d.out->is_error)
		*bad = R_NOTHING;
	return 0;
}

int cl_embedding_decode(const char *data, size_t len, struct cl_embedding *out)
{
	const char *bad;

	clear_all(out);
	int rc = scan_document(data, len, top, out, R_TOP, &bad);
	if (rc) {
		clear_all(out);
		out->malformed = rc == CL_EPROTO ? bad : NULL;
	}
	return rc;
}
