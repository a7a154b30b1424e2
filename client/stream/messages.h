/* Zero-allocation decoder of one streamed Anthropic Messages API event (POST /v1/messages). */
#ifndef CHATLOAD_MESSAGES_H
#define CHATLOAD_MESSAGES_H

#include "chatload/err.h"
#include "client/stream/chunk.h"

#include <stddef.h>

/*
 * Decodes one event's data of a streamed /v1/messages answer (Anthropic's events, as
 * Anthropic, llama.cpp's server and LiteLLM send them) into the facts the engine reads from
 * a chat chunk, so that TTFT, TTFC, ITL and reasoning keep their meaning:
 *
 *   type "message_start"        message.usage -> usage (prompt and cached tokens only: its
 *                               output_tokens is a placeholder, 0 or 1, never the answer's)
 *   type "content_block_start"  content_block.type "text" with a non-empty text -> content;
 *                               "thinking" with a non-empty thinking -> reasoning;
 *                               "tool_use" -> a tool call (tools[0]: index, id, name)
 *   type "content_block_delta"  delta.type "text_delta": delta.text -> content;
 *                               "thinking_delta": delta.thinking -> reasoning;
 *                               "input_json_delta": delta.partial_json -> tool call arguments
 *                               (tools[0].args); any other delta type (signature_delta,
 *                               citations_delta) nothing
 *   type "message_delta"        delta.stop_reason -> finish ("end_turn", "stop_sequence" ->
 *                               "stop"; "max_tokens" -> "length"; "tool_use" ->
 *                               "tool_calls"; any other -> "other"); usage -> usage
 *   type "message_stop"         done
 *   type "error"                is_error; error.message as the message
 *   any other type (ping, content_block_stop, ...)  nothing
 *
 * A usage object (message.usage, or message_delta's usage) maps output_tokens ->
 * completion_tokens (message_delta only), cache_read_input_tokens -> cached_tokens, and
 * input_tokens + cache_read_input_tokens + cache_creation_input_tokens -> prompt_tokens
 * (Anthropic's input_tokens leaves the cached part out; llama.cpp follows it), saturating;
 * prompt_tokens stays -1 without input_tokens.  A tool call's index is the event's "index":
 * the content block's place among all blocks, not among the tool calls.  The key order is
 * free, so what a field means is decided once the whole event is read.  "[DONE]" gives done
 * (some proxies add it).
 *
 * Returns 0, CL_EPARSE (not exactly one JSON value, as cl_chunk_decode), or CL_EPROTO with
 * out->malformed naming the first wrong field: the top level not an object, "type" missing
 * or not a string, "index" not a non-negative integer, and for the event's type: message,
 * message.usage, usage, content_block or delta not an object, a token count not a
 * non-negative integer, content_block.type or delta.type not a string, the text, thinking,
 * partial_json, id or name its type reads not a string, stop_reason not a string.  Null
 * stands for absent; unknown fields are validated and never judged.  Never allocates.
 */
CL_MUST_CHECK int cl_messages_decode(const char *data, size_t len, struct cl_chunk *out);

#endif
