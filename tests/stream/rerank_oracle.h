/* The oracle of the rerank and score decoder (client/stream/rerank.c): its JSON verdict
 * against the chat chunk decoder's (the same scanner, proven against jansson by
 * chunk_oracle.h), its fields and its not-an-answer verdict against jansson's tree, by
 * rerank.h's rules.  Shared by rerank_decode_test and fuzz_rerank. */
#ifndef CHATLOAD_TEST_RERANK_ORACLE_H
#define CHATLOAD_TEST_RERANK_ORACLE_H

#include "chunk_oracle.h"
#include "client/stream/rerank.h"

#include <stdint.h>

/* The results array as jansson sees it: each element an object, counted. */
static inline const char *rerank_expect_results(json_t *arr, struct cl_rerank *w)
{
	size_t i;
	json_t *it;
	json_array_foreach(arr, i, it)
	{
		if (!json_is_object(it))
			return "item";
	}
	w->n_results = (uint32_t)json_array_size(arr);
	return NULL;
}

/* What cl_rerank_decode should say of root; NULL when it is an answer (w filled). */
static inline const char *rerank_expect(json_t *root, struct cl_rerank *w)
{
	memset(w, 0, sizeof(*w));
	w->prompt_tokens = w->total_tokens = -1;
	if (json_is_array(root))
		return rerank_expect_results(root, w); /* TEI's bare array */
	if (!json_is_object(root))
		return "top";
	/* jansson keeps the last of a repeated key, as the decoder does; of "results" and
	 * "data" together, the decoder keeps whichever came last in the text, which the tree
	 * cannot tell: such a text is judged on its verdict only (see the caller). */
	json_t *results = json_object_get(root, "results"), *data = json_object_get(root, "data");
	json_t *usage = json_object_get(root, "usage"), *err = json_object_get(root, "error");
	json_t *arr = results ? results : data;
	if (results && data)
		return "both";
	if (ORACLE_WRONG(arr, json_is_array(arr)))
		return "results";
	if (json_is_array(arr)) {
		const char *why = rerank_expect_results(arr, w);
		if (why)
			return why;
	}
	if (ORACLE_WRONG(usage, json_is_object(usage)))
		return "usage";
	if (json_is_object(usage)) {
		w->has_usage = true;
		json_t *pt = json_object_get(usage, "prompt_tokens");
		json_t *tt = json_object_get(usage, "total_tokens");
		if (ORACLE_WRONG(pt, oracle_count_ok(pt)))
			return "prompt_tokens";
		if (ORACLE_WRONG(tt, oracle_count_ok(tt)))
			return "total_tokens";
		w->prompt_tokens = oracle_count(pt);
		w->total_tokens = oracle_count(tt);
	}
	if (ORACLE_WRONG(err, json_is_object(err) || json_is_string(err)))
		return "error";
	if (json_is_object(err) || json_is_string(err)) {
		w->is_error = true;
		json_t *c = json_is_object(err) ? json_object_get(err, "code") : NULL;
		if (json_is_integer(c) && json_integer_value(c) >= INT32_MIN &&
		    json_integer_value(c) <= INT32_MAX)
			w->error_code = (int)json_integer_value(c);
	}
	if (!json_is_array(arr) && !w->is_error)
		return "nothing";
	return NULL;
}

/* Checks one decode (rc, r) of data: NULL, or what disagreed (static or in detail). */
static inline const char *rerank_oracle_check(const char *data, size_t len, int rc,
					      const struct cl_rerank *r, char *detail, size_t n)
{
	struct cl_chunk ref;
	int ref_rc = cl_chunk_decode(data, len, &ref);
	if (rc != 0 && rc != CL_EPARSE && rc != CL_EPROTO)
		return "a return code outside 0, CL_EPARSE, CL_EPROTO";
	/* The chat decoder reads [DONE] as the end of a stream; here it is no JSON. */
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0)
		return rc == CL_EPARSE ? NULL : "[DONE] misread";
	if ((rc == CL_EPARSE) != (ref_rc == CL_EPARSE)) {
		snprintf(detail, n, "JSON verdict %d, the chat decoder's %d", rc, ref_rc);
		return detail;
	}
	if (rc == CL_EPARSE)
		return NULL;
	if (rc == CL_EPROTO && !r->malformed)
		return "CL_EPROTO without a reason";
	json_error_t jerr;
	json_t *root = json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!root)
		return NULL; /* one of the divergences chunk_oracle.h names */
	if (oracle_depth(root) > CL_CHUNK_MAX_DEPTH) {
		json_decref(root);
		return NULL;
	}
	struct cl_rerank w;
	const char *why = rerank_expect(root, &w), *bad = NULL;
	json_decref(root);
	if (why && strcmp(why, "both") == 0)
		return NULL; /* see rerank_expect */
	if (!why && rc == 0) {
		if (r->n_results != w.n_results)
			bad = "result count";
		else if (r->has_usage != w.has_usage || r->prompt_tokens != w.prompt_tokens ||
			 r->total_tokens != w.total_tokens)
			bad = "usage";
		else if (r->is_error != w.is_error || r->error_code != w.error_code)
			bad = "error";
	}
	if (bad) {
		snprintf(detail, n, "accepted with the wrong %s", bad);
		return detail;
	}
	if ((why != NULL) != (rc == CL_EPROTO)) {
		snprintf(detail, n, "rc %d (%s), jansson's tree says %s", rc,
			 r->malformed ? r->malformed : "-", why ? why : "an answer");
		return detail;
	}
	return NULL;
}

/* One fuzz input: pointers inside the input, the oracle agrees.  Aborts on a finding. */
static inline void rerank_fuzz_one(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct cl_rerank r;
	char detail[256];
	int rc = cl_rerank_decode(s, size, &r);
	if (r.error_msg && (r.error_msg < s || r.error_msg + r.error_msg_len > s + size))
		abort();
	const char *bad = rerank_oracle_check(s, size, rc, &r, detail, sizeof(detail));
	if (bad) {
		fprintf(stderr, "oracle: %s\n", bad);
		abort();
	}
}

#endif
