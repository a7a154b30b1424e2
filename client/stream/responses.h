/* Zero-allocation decoder of one streamed Responses API event (POST /v1/responses). */
#ifndef CHATLOAD_RESPONSES_H
#define CHATLOAD_RESPONSES_H

#include "chatload/err.h"
#include "client/stream/chunk.h"

#include <stddef.h>

/*
 * Decodes one event's data of a streamed /v1/responses answer (OpenAI's semantic events, as
 * vLLM and OpenAI send them) into the facts the engine reads from a chat chunk, so that
 * TTFT, TTFC, ITL and reasoning keep their meaning:
 *
 *   type "response.output_text.delta"            delta (string) -> content
 *   type "response.reasoning_text.delta",
 *        "response.reasoning_summary_text.delta"  delta (string) -> reasoning
 *   type "response.completed"                     done; response.usage -> usage; finish
 *                                                 "stop"
 *   type "response.incomplete"                    done; usage as above; finish "length"
 *                                                 when response.incomplete_details.reason
 *                                                 is "max_output_tokens", else "other"
 *   type "response.failed"                        is_error; response.error.{code, message}
 *   type "error"                                  is_error; code, message at the top level
 *   any other type (response.created, .in_progress, .output_item.added, ...)  nothing
 *
 * response.usage maps input_tokens -> prompt_tokens, output_tokens -> completion_tokens,
 * output_tokens_details.reasoning_tokens -> reasoning_tokens,
 * input_tokens_details.cached_tokens -> cached_tokens.  The key order is free (OpenAI's own
 * serialisation puts "type" last), so what a field means is decided once the whole event is
 * read.  n_choices and has_role stay 0.  "[DONE]" gives done, as in a chat stream (some
 * proxies add it).
 *
 * Returns 0, CL_EPARSE (not exactly one JSON value, as cl_chunk_decode), or CL_EPROTO with
 * out->malformed naming the first wrong field: the top level not an object, "type" missing
 * or not a string, a delta event's delta not a string, "response", "usage",
 * "*_tokens_details" not objects, a token count not a non-negative integer.  Null stands
 * for absent; unknown fields are validated and never judged.  Never allocates.
 */
CL_MUST_CHECK int cl_responses_decode(const char *data, size_t len, struct cl_chunk *out);

#endif
