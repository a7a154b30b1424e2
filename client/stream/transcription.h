/* Zero-allocation decoder of a transcription answer (POST /v1/audio/transcriptions): the one
 * JSON document of a non-streamed answer, and OpenAI's streamed events (transcript.text.delta,
 * transcript.text.done); vLLM's streamed chunks are chat-shaped and go to chunk.c. */
#ifndef CHATLOAD_TRANSCRIPTION_H
#define CHATLOAD_TRANSCRIPTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chatload/err.h"
#include "client/stream/chunk.h"

/* The kind of a streamed event, by its "type". */
enum cl_transcription_type {
	CL_TRANSCRIPTION_NONE,  /* no "type" (a whole answer) */
	CL_TRANSCRIPTION_DELTA, /* "transcript.text.delta" */
	CL_TRANSCRIPTION_DONE,  /* "transcript.text.done" */
	CL_TRANSCRIPTION_OTHER  /* any other type (ignored, as OpenAI says to) */
};

/* What one answer or event says.  Strings point into the input, still JSON-escaped. */
struct cl_transcription {
	const char *malformed; /* CL_EPROTO: why this valid JSON is not an answer (static text) */
	enum cl_transcription_type type;
	bool is_error; /* a top-level "error" (an object or a string) */
	int error_code;
	const char *error_msg;
	size_t error_msg_len;
	bool has_text; /* "text" a string (the whole answer's, or transcript.text.done's) */
	const char *text;
	size_t text_len;
	bool has_delta; /* "delta" a string */
	const char *delta;
	size_t delta_len;
	bool has_usage;
	/* usage: input_tokens / prompt_tokens, output_tokens / completion_tokens (-1 when
	 * absent); seconds of audio ("type": "duration"), -1 when absent */
	int64_t input_tokens, output_tokens;
	double seconds;
};

/*
 * Decodes one document (len bytes, need not be NUL-terminated), the same validation as
 * cl_chunk_decode.  Returns 0, CL_EPARSE (not one JSON value), or CL_EPROTO with
 * out->malformed naming the first wrong field: the top level not an object, text, delta or
 * type not a string, usage not an object or a count in it not a non-negative integer, error
 * neither an object nor a string, a delta event without its delta, or (whole) neither text
 * nor error present.  whole: the answer of a non-streamed request; else a streamed event.
 */
CL_MUST_CHECK int cl_transcription_decode(const char *data, size_t len, bool whole,
					  struct cl_transcription *out);

/*
 * A streamed transcription event as the facts every consumer reads (chunk.h): vLLM's
 * chat-shaped chunks ("transcription.chunk": choices[].delta.content, usage, [DONE]) through
 * cl_chunk_decode, and OpenAI's events, a delta as content, done as the end with its usage.
 * Returns as cl_chunk_decode.
 */
CL_MUST_CHECK int cl_transcription_event_decode(const char *data, size_t len, struct cl_chunk *out);

#endif
