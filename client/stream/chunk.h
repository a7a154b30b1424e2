/* Zero-allocation decoder of one OpenAI-style chat.completion.chunk (one SSE event's data). */
#ifndef CHATLOAD_CHUNK_H
#define CHATLOAD_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chatload/err.h"

/* Deepest nesting of arrays/objects accepted (the top-level value is depth 1). */
#define CL_CHUNK_MAX_DEPTH 64

/* Tool-call elements of one chunk whose fields are kept (tool_calls[]); more are counted
 * (n_tool_calls) but not kept.  Streaming servers send one element per delta. */
#define CL_CHUNK_TOOLS_MAX 4

/*
 * One element of choices[].delta.tool_calls: the streamed pieces of a function call
 * (vLLM, SGLang, llama.cpp, OpenAI).  The first delta of a call carries its id, type and
 * function.name, later ones fragments of function.arguments; `index` says which call of the
 * answer a fragment belongs to.  Strings point into the input, raw (still JSON-escaped,
 * validated, without the quotes); NULL with length 0 when absent or null.
 */
struct cl_chunk_tool {
	int64_t index; /* tool_calls[].index, -1 when absent */
	const char *id;
	size_t id_len;
	const char *name; /* function.name */
	size_t name_len;
	const char *args; /* function.arguments: this delta's fragment */
	size_t args_len;
};

/*
 * What one chunk says.  "Absent" covers a field that is missing or null.  A field we read
 * that has another wrong type (a number for content, a string for choices or a token
 * count...) makes the chunk malformed instead (CL_EPROTO).  When a key is repeated, the
 * last occurrence counts (as in jansson and most JSON libraries).
 */
struct cl_chunk {
	const char *malformed; /* CL_EPROTO: why this valid JSON is not a chunk, naming the
				* field ("choices is not an array"); static text.  NULL
				* otherwise */
	bool done;             /* data was exactly "[DONE]" */
	bool is_error;         /* top-level "error" object or string present (mid-stream
				* error), or "object":"error" (vLLM's ErrorResponse unwrapped) */
	int error_code;        /* error.code (or the top-level code of "object":"error") if an
				* integer that fits an int, else 0 */
	const char *error_msg; /* error.message (the error string; the top-level message of
				* "object":"error"): points into the input (still JSON-escaped,
				* without the quotes), NULL if none or not a string */
	size_t error_msg_len;
	const char *error_type; /* the server's kind of failure (error.type, TGI's error_type),
				 * into the input, escaped; set by cl_event_decode only */
	size_t error_type_len;
	uint32_t n_choices;     /* elements in "choices" (of any type) */
	bool has_content;       /* some choice has a non-empty delta.content string */
	bool has_reasoning;     /* some choice has non-empty delta.reasoning_content or
				 * delta.reasoning */
	bool has_role;          /* some choice has a string delta.role */
	size_t content_bytes;   /* raw (escaped) bytes of content text, summed over choices */
	size_t reasoning_bytes; /* the same for reasoning; a choice carrying both
				 * reasoning_content and reasoning counts the longer once */
	char finish_reason[24]; /* "" if null/absent, else the first choice's non-empty
				 * finish_reason, unescaped, NUL-terminated, truncated to 23
				 * bytes at a UTF-8 character boundary */
	bool has_usage;         /* a non-null "usage" object */
	int64_t prompt_tokens, completion_tokens, reasoning_tokens; /* -1 when absent */
	int64_t cached_tokens; /* usage.prompt_tokens_details.cached_tokens, -1 when absent */
	/* llama.cpp's "timings" object (its final chunk): prompt tokens taken from its cache
	 * (cache_n, newer builds) and evaluated (prompt_n); -1 when absent or not a count */
	int64_t timings_cache_n, timings_prompt_n;
	const char *content; /* the first choice with content: its text, raw (still JSON-escaped,
			      * validated, without the quotes), pointing into the input; NULL
			      * without content */
	size_t content_len;
	/* Tool calls (choices[].delta.tool_calls): has_tool_call when some element carries an
	 * id, a function name or an arguments fragment that is not empty; n_tool_calls counts
	 * the elements of every choice, the first CL_CHUNK_TOOLS_MAX of which are in tools[];
	 * tool_bytes sums the raw bytes of their names and arguments fragments. */
	bool has_tool_call;
	uint32_t n_tool_calls;
	size_t tool_bytes;
	struct cl_chunk_tool tools[CL_CHUNK_TOOLS_MAX];
};

/*
 * Decodes one chunk's data (an event's data, `len` bytes, need not be NUL-terminated).
 * Never allocates; stack use is bounded (recursion no deeper than CL_CHUNK_MAX_DEPTH).
 *
 * Returns 0, or CL_EPARSE for anything that is not exactly one valid JSON value (RFC 8259:
 * objects, arrays, strings with their escapes and UTF-8 checked, numbers, true, false,
 * null; surrounding whitespace allowed; nesting over CL_CHUNK_MAX_DEPTH and trailing
 * garbage rejected): the whole text is validated, not only the fields read.  Escaped lone
 * surrogates ("\ud800") are accepted.  "[DONE]" is not JSON but gives 0 with done set.
 *
 * Read: choices[].delta.{content, reasoning_content, reasoning, role},
 * choices[].delta.tool_calls[].{index, id, function.name, function.arguments},
 * choices[].finish_reason, usage.{prompt_tokens, completion_tokens,
 * completion_tokens_details.reasoning_tokens, prompt_tokens_details.cached_tokens}, error (an
 * object: .code, .message; or a string: the message), llama.cpp's timings.{cache_n, prompt_n}
 * (never judged: a timings of another shape or a count that is not one is skipped); and, when
 * the top-level "object" is the string "error" and no "error" key says otherwise, the
 * top-level code and message as an error's (vLLM's ErrorResponse without its wrapper; never
 * judged either).
 * Everything else (ids, logprobs...) is validated and skipped.
 *
 * CL_EPROTO when the text is valid JSON but not a chunk: the top level is not an object, or
 * a field read has a wrong type (choices not an array, a choice neither an object nor
 * null, delta not an object, content/reasoning/role/finish_reason not a string, usage or
 * completion_tokens_details not an object, a token count not a non-negative integer, error
 * neither an object nor a string, tool_calls not an array, one of its elements not an
 * object, its function not an object, its id, function.name or function.arguments not a
 * string, its index not a non-negative integer).  Null stands for absent everywhere, and unknown
 * fields are never judged.  out->malformed then names the first wrong field
 * (docs/stream-decoding.md).  On CL_EPARSE and CL_EPROTO *out is otherwise left as for an
 * empty chunk (nothing present), never half-filled.
 */
CL_MUST_CHECK int cl_chunk_decode(const char *data, size_t len, struct cl_chunk *out);

/*
 * The prompt tokens a server says it took from its cache, from what its stream said (each
 * -1 when not said): usage.prompt_tokens_details.cached_tokens (vLLM, SGLang, OpenAI) first;
 * else llama.cpp's timings.cache_n; else usage.prompt_tokens − timings.prompt_n (llama.cpp
 * builds before cache_n: prompt_n is what it evaluated, the rest came from its cache).
 * -1 when nothing says, or the figures disagree (prompt_n above prompt_tokens).  Pure.
 */
int64_t cl_chunk_cached_prompt(int64_t usage_cached, int64_t usage_prompt, int64_t cache_n,
			       int64_t prompt_n);

/*
 * The same for one event of a streamed legacy completion (POST /v1/completions, object
 * "text_completion"): choices[].text is read as the content (has_content, content_bytes,
 * content), and delta is not read (an unknown field); finish_reason, usage, error and
 * [DONE] as above.  No reasoning or role: the legacy API has neither.  A text that is not
 * a string is CL_EPROTO, "choices[].text is not a string".
 */
CL_MUST_CHECK int cl_chunk_decode_text(const char *data, size_t len, struct cl_chunk *out);

#endif
