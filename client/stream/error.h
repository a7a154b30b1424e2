/* The one reader of "the server said this request failed", in every server's dialect. */
#ifndef CHATLOAD_STREAM_ERROR_H
#define CHATLOAD_STREAM_ERROR_H

#include <stdbool.h>
#include <stddef.h>

/*
 * What a failure's text says.  Strings point into the input: raw (still JSON-escaped,
 * without the quotes) when read from JSON, the text itself when message_raw.  NULL with
 * length 0 when absent.
 */
struct cl_stream_error {
	bool is_json;  /* the text is exactly one JSON value */
	bool is_error; /* it has one of the shapes of an error (below) */
	int code;      /* the status the server gave (an integer, or a string of digits,
			* that fits an int), 0 when none */
	const char *message;
	size_t message_len;
	bool message_raw; /* not JSON: message is the whole text, surrounding whitespace
			   * trimmed (llama.cpp's `error:` field could carry anything) */
	const char *type; /* the server's name for the kind of failure */
	size_t type_len;
};

/*
 * Reads data (len bytes, need not be NUL-terminated) as a failure, whatever the server:
 *
 *   {"error": {"message", "type", "code", ...}}      OpenAI, vLLM and SGLang in a stream,
 *                                                   llama.cpp since PR 16109, Ollama's
 *                                                   /v1, LiteLLM ("code" a string), and
 *                                                   Anthropic's {"type":"error","error":...}
 *   {"error": "text", "error_type": "..."}          TGI, Ollama's native API
 *   {"object": "error", "message", "type", "code"}  vLLM's ErrorResponse without a wrapper
 *   {"type": "error", "message", "code"}            OpenAI's Responses `error` event
 *   {"type": "response.failed",
 *    "response": {"error": {"message", "code"}}}    OpenAI's Responses failure
 *   {"message", "type", "code"}                     llama.cpp's `error:` field (b4748); an
 *                                                   error only because the field said so,
 *                                                   so is_error stays false here
 *   {"detail": "text"}                              FastAPI's own errors (a message only)
 *
 * is_error is set for the first five.  What is read: message from error.message (or the
 * error string), else response.error.message, else the top-level message, else detail;
 * code from error.code, else response.error.code, else the top-level code; type from
 * error.type, else error_type, else response.error.type, else the top-level type.  A field
 * of another type than wanted is not judged, only not read.  A repeated key: the last
 * counts.
 *
 * Text that is not exactly one JSON value (RFC 8259, as cl_chunk_decode validates it) is
 * read as a message in itself: is_json false, message the trimmed text, message_raw.
 * Never allocates; returns nothing: every text is something a server said.
 */
void cl_stream_error_read(const char *data, size_t len, struct cl_stream_error *out);

#endif
