/* Zero-allocation decoder of one non-streamed embeddings answer (POST /v1/embeddings). */
#ifndef CHATLOAD_EMBEDDING_H
#define CHATLOAD_EMBEDDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chatload/err.h"

/* What one /v1/embeddings answer says.  "Absent" covers a field that is missing or null. */
struct cl_embedding {
	const char *malformed; /* CL_EPROTO: why this valid JSON is not an answer (static
				* text), NULL otherwise */
	bool is_error;         /* a top-level "error" (an object or a string) */
	int error_code;        /* error.code if an integer that fits an int, else 0 */
	const char *error_msg; /* error.message (or the string): into the input, escaped */
	size_t error_msg_len;
	uint32_t n_data;       /* elements of "data": one vector per input */
	uint32_t dim;          /* numbers in data[0].embedding (0: none, or base64) */
	bool has_usage;        /* a non-null "usage" object */
	int64_t prompt_tokens; /* usage.prompt_tokens, -1 when absent */
};

/*
 * Decodes a whole /v1/embeddings response body (len bytes, need not be NUL-terminated).
 * Read: data[] (counted), data[].embedding (an array of numbers, or a base64 string as
 * encoding_format "base64" gives), usage.prompt_tokens, error (an object: .code, .message;
 * or a string).  Everything else is validated and skipped.  Never allocates.
 *
 * Returns 0, CL_EPARSE (not exactly one JSON value: the same validation as
 * cl_chunk_decode), or CL_EPROTO with out->malformed naming the first wrong field: the top
 * level not an object, data not an array, an element of data not an object, an embedding
 * neither an array of numbers nor a string, usage not an object, prompt_tokens not a
 * non-negative integer, error neither an object nor a string, or neither data nor error
 * present.
 */
CL_MUST_CHECK int cl_embedding_decode(const char *data, size_t len, struct cl_embedding *out);

#endif
