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
#define R_NOTHING "the answer has neither results, data nor error"

/* An array of results being read, and where its first reason goes. */
struct results_read {
	struct cl_rerank *out;
	const char **bad;
};

/* An element of results: counted, and one that is not an object a reason (the first). */
static int result_elem(struct scan *sc, int depth, void *ctx)
{
	struct results_read *r = ctx;
	bool obj = *sc->p == '{';
	int rc;

	if (r->out->n_results < UINT32_MAX)
		r->out->n_results++;
	if ((rc = parse_value(sc, depth)))
		return rc;
	if (!obj && !*r->bad)
		*r->bad = R_ITEM;
	return 0;
}

/* An array of results (sc->p at '['), counted anew. */
static int parse_results(struct scan *sc, int depth, struct cl_rerank *out, const char **bad)
{
	struct results_read r = { out, bad };

	out->n_results = 0;
	return scan_array(sc, depth, result_elem, &r);
}

/* The answer as it is read: the fields, and each top-level key's reason (a repeated key
 * replaces its reason and its value, as in jansson). */
struct doc {
	struct cl_rerank *out;
	bool has_results;
	const char *bad_results, *bad_usage, *bad_error;
	const char *bad_pt, *bad_tt; /* usage's own keys */
};

static int usage_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct doc *d = ctx;
	if (KEY_IS(k, "prompt_tokens"))
		return want_count(sc, depth, &d->out->prompt_tokens, &d->bad_pt, R_PROMPT);
	if (KEY_IS(k, "total_tokens"))
		return want_count(sc, depth, &d->out->total_tokens, &d->bad_tt, R_TOTAL);
	return parse_value(sc, depth);
}

static void clear_all(struct cl_rerank *out)
{
	memset(out, 0, sizeof(*out));
	out->prompt_tokens = -1;
	out->total_tokens = -1;
}

static int top_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct doc *d = ctx;
	struct cl_rerank *out = d->out;
	char c = (char)*sc->p;
	int rc;

	if (KEY_IS(k, "results") || KEY_IS(k, "data")) {
		d->bad_results = NULL;
		out->n_results = 0;
		d->has_results = c == '[';
		return c == '[' ? parse_results(sc, depth, out, &d->bad_results)
				: skip_other(sc, depth, &d->bad_results, R_RESULTS);
	}
	if (KEY_IS(k, "usage")) {
		out->has_usage = false;
		out->prompt_tokens = out->total_tokens = -1;
		d->bad_usage = NULL;
		if (c != '{')
			return skip_other(sc, depth, &d->bad_usage, R_USAGE);
		out->has_usage = true;
		d->bad_pt = d->bad_tt = NULL;
		rc = scan_object(sc, depth, usage_key, d);
		d->bad_usage = FIRST_BAD(d->bad_pt, d->bad_tt);
		return rc;
	}
	if (KEY_IS(k, "error"))
		return read_error_key(sc, depth, &out->is_error, &out->error_code, &out->error_msg,
				      &out->error_msg_len, &d->bad_error);
	return parse_value(sc, depth);
}

static int top(struct scan *sc, void *arg, const char **bad)
{
	struct doc d = { .out = arg };
	int rc = scan_object(sc, 1, top_key, &d);
	if (rc)
		return rc;
	*bad = FIRST_BAD(d.bad_results, d.bad_usage, d.bad_error);
	if (!*bad && !d.has_results && !d.out->is_error)
		*bad = R_NOTHING;
	return 0;
}

/* TEI's answer, a bare array of results: scanned here, with scan_document's verdicts. */
static int decode_bare_array(const char *data, size_t len, struct cl_rerank *out, const char **bad)
{
	struct scan sc = { (const unsigned char *)data, (const unsigned char *)data + len };

	*bad = NULL;
	skip_ws(&sc);
	if (parse_results(&sc, 1, out, bad))
		return CL_EPARSE;
	skip_ws(&sc);
	if (sc.p != sc.end)
		return CL_EPARSE;
	return *bad ? CL_EPROTO : 0;
}

int cl_rerank_decode(const char *data, size_t len, struct cl_rerank *out)
{
	const char *bad;
	size_t at = 0;

	clear_all(out);
	while (at < len &&
	       (data[at] == ' ' || data[at] == '\n' || data[at] == '\r' || data[at] == '\t'))
		at++;
	int rc = at < len && data[at] == '[' ? decode_bare_array(data, len, out, &bad)
					     : scan_document(data, len, top, out, R_TOP, &bad);
	if (rc) {
		clear_all(out);
		out->malformed = rc == CL_EPROTO ? bad : NULL;
	}
	return rc;
}
