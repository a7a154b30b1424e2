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
#define R_NOTHING   "the answer has neither data nor error"

/* An embedding being read: its length and why it is wrong. */
struct item {
	uint32_t dim;
	const char *bad;
};

/* An element of an embedding array: a number counts, anything else is a reason. */
static int number_elem(struct scan *sc, int depth, void *ctx)
{
	struct item *it = ctx;
	unsigned char c = *sc->p;
	bool is_int;
	int64_t v;
	int rc;

	if (c != '-' && !is_digit(c)) {
		if ((rc = parse_value(sc, depth)))
			return rc;
		it->bad = R_EMBEDDING;
		return 0;
	}
	if ((rc = parse_number(sc, &is_int, &v)))
		return rc;
	if (it->dim < UINT32_MAX)
		it->dim++;
	return 0;
}

/* An embedding: an array of numbers (their count into it->dim) or a base64 string. */
static int parse_embedding(struct scan *sc, int depth, struct item *it)
{
	it->dim = 0;
	if (*sc->p == '"') {
		struct str s;
		return parse_string(sc, &s);
	}
	if (*sc->p != '[')
		return skip_other(sc, depth, &it->bad, R_EMBEDDING);
	return scan_array(sc, depth, number_elem, it);
}

static int item_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct item *it = ctx;
	if (!KEY_IS(k, "embedding"))
		return parse_value(sc, depth);
	it->bad = NULL;
	return parse_embedding(sc, depth, it);
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

/* The answer as it is read: the fields, and each top-level key's reason (a repeated key
 * replaces its reason, as in jansson). */
struct doc {
	struct cl_embedding *out;
	bool has_data;
	const char *bad_data, *bad_usage, *bad_error;
};

/* An element of data: counted, an object read, anything else a reason (the first one). */
static int data_elem(struct scan *sc, int depth, void *ctx)
{
	struct doc *d = ctx;
	struct cl_embedding *out = d->out;
	int rc;

	if (out->n_data < UINT32_MAX)
		out->n_data++;
	if (*sc->p == '{')
		return parse_item(sc, depth, out, &d->bad_data);
	rc = parse_value(sc, depth);
	if (!d->bad_data)
		d->bad_data = R_ITEM;
	return rc;
}

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
		return c == '[' ? scan_array(sc, depth, data_elem, d)
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
	if (KEY_IS(k, "error"))
		return read_error_key(sc, depth, &out->is_error, &out->error_code, &out->error_msg,
				      &out->error_msg_len, &d->bad_error);
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
