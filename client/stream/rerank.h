/* Zero-allocation decoder of one non-streamed rerank or score answer (POST /v1/rerank,
 * /v1/score). */
#ifndef CHATLOAD_RERANK_H
#define CHATLOAD_RERANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chatload/err.h"

/* What one rerank or score answer says.  "Absent" covers a field that is missing or null. */
struct cl_rerank {
	const char *malformed; /* CL_EPROTO: why this valid JSON is not an answer (static
				* text), NULL otherwise */
	bool is_error;         /* a top-level "error" (an object or a string) */
	int error_code;        /* error.code if an integer that fits an int, else 0 */
	const char *error_msg; /* error.message (or the string): into the input, escaped */
	size_t error_msg_len;
	uint32_t n_results;    /* the documents scored: elements of "results" (rerank), of
				* "data" (score) or of the top-level array (TEI's /rerank) */
	bool has_usage;        /* a non-null "usage" object */
	int64_t prompt_tokens; /* usage.prompt_tokens, -1 when absent */
	int64_t total_tokens;  /* usage.total_tokens, -1 when absent */
};

/*
 * Decodes a whole rerank or score response body (len bytes, need not be NUL-terminated), in
 * any of the shapes servers give (docs/stream-decoding.md, "Rerank and score"):
 * {"results": [...], "usage": {...}} (vLLM, Jina, llama.cpp and Cohere's /rerank),
 * {"data": [...], "usage": {...}} (vLLM's /score), or a bare array of {"index", "score"}
 * (TEI's /rerank, which has no usage).  Read: the elements of results, data or the array
 * (counted; each must be an object), usage.prompt_tokens and usage.total_tokens, error (an
 * object: .code, .message; or a string).  Everything else is validated and skipped.  Never
 * allocates.
 *
 * Returns 0, CL_EPARSE (not exactly one JSON value), or CL_EPROTO with out->malformed
 * naming the first wrong field: the top level neither an object nor an array, results or
 * data not an array, an element not an object, usage not an object, a token count not a
 * non-negative integer, error neither an object nor a string, or none of results, data and
 * error present.
 */
CL_MUST_CHECK int cl_rerank_decode(const char *data, size_t len, struct cl_rerank *out);

#endif
