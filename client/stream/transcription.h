/* Zero-allocation decoder of one non-streamed transcription answer (POST
 * /v1/audio/transcriptions, response_format json or verbose_json). */
#ifndef CHATLOAD_TRANSCRIPTION_H
#define CHATLOAD_TRANSCRIPTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chatload/err.h"

/* What one transcription answer says.  "Absent" covers a field that is missing or null. */
struct cl_transcription {
	const char *malformed; /* CL_EPROTO: why this valid JSON is not an answer (static
				* text), NULL otherwise */
	bool is_error;         /* a top-level "error" (an object or a string) */
	int error_code;        /* error.code if an integer that fits an int, else 0 */
	const char *error_msg; /* error.message (or the string): into the input, escaped */
	size_t error_msg_len;
	bool has_text;         /* a "text" string (the transcript) */
	size_t text_bytes;     /* its bytes as sent (escapes counted as written) */
	int64_t usage_seconds; /* usage.seconds (OpenAI's {"type": "duration"}), -1 absent */
};

/*
 * Decodes a whole transcription response body (len bytes, need not be NUL-terminated):
 * {"text": "...", "usage": {"type": "duration", "seconds": N}?, ...} as OpenAI and vLLM
 * answer (verbose_json's segments and words are validated and skipped), or {"error": ...}.
 * Never allocates.  Returns 0, CL_EPARSE (not exactly one JSON value), or CL_EPROTO with
 * out->malformed naming the first wrong field: the top level not an object, text not a
 * string, usage not an object, usage.seconds not a non-negative integer, error neither an
 * object nor a string, or neither text nor error present.
 */
CL_MUST_CHECK int cl_transcription_decode(const char *data, size_t len,
					  struct cl_transcription *out);

#endif
