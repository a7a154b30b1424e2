/* Decoding of a request body to chat, completions, responses, embeddings, messages, rerank
 * or score (untrusted JSON, via jansson): the one place chatload-sim reads what a client sent
 * in such a body (chat.c, with content.c and tools.c). */
#ifndef CHATLOAD_SIM_CHAT_H
#define CHATLOAD_SIM_CHAT_H

#include "sim/config.h"

#include "sim/sched/prefix.h"

#include "chatload/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_SIM_STOP_MAX  4   /* stop strings a request may give (OpenAI's limit) */
#define CL_SIM_STOP_LEN  64  /* bytes of one, NUL included */
#define CL_SIM_TOOLS_MAX 128 /* tools a request may offer */
#define CL_SIM_TOOL_NAME 65  /* bytes of a tool's name (OpenAI: 1..64), NUL included */

/* tool_choice (docs/simulator.md, "Tool calls") */
enum cl_sim_tool_choice {
	CL_SIM_TOOL_AUTO,     /* absent or "auto": the rate decides */
	CL_SIM_TOOL_NONE,     /* "none": never a call */
	CL_SIM_TOOL_REQUIRED, /* "required", or a named function: always a call */
};

struct cl_sim_chat_req {
	enum cl_api api;   /* which endpoint the body came to */
	uint32_t inputs;   /* embeddings: inputs ("input": a string is one) */
	uint32_t audio_ms; /* transcription: the uploaded audio's length (audio.c) */
	bool has_model;
	bool model_too_long;
	char model[CL_SIM_MODEL_MAX];
	bool stream;
	bool include_usage;
	bool continuous_usage; /* vLLM's stream_options.continuous_usage_stats */
	uint32_t max_tokens;   /* max_completion_tokens, else max_tokens; 0: not given */
	bool ignore_eos;       /* vLLM, SGLang, llama.cpp: generate until max_tokens */
	bool has_priority;     /* vLLM's "priority": a lower value is scheduled first */
	int64_t priority;
	uint64_t prompt_chars; /* Unicode characters in every message's text content */
	uint64_t prompt_words; /* ... their tokens by the text (cl_sim_text_tokens) */
	uint32_t n_stop;       /* stop strings given ("stop": a string or up to 4) */
	char stop[CL_SIM_STOP_MAX][CL_SIM_STOP_LEN];
	uint32_t images;        /* image content parts (image_url, input_image) in the prompt */
	uint32_t history_turns; /* messages with role "assistant" (a conversation's history) */
	uint64_t history_fnv;   /* FNV-1a 64 of the last one's string content (0: none) */
	struct cl_sim_prefix_key prefix; /* the messages' text in blocks, for the prefix cache */
	uint64_t prompt_fnv; /* FNV-1a 64 of every message's role and text, each ended by 0x1e:
			      * the prompt's identity in the truth log */
	/* tools (chat only): the functions offered, tool_choice, and the role "tool" messages
	 * since the last user message (the rounds of an agentic loop) */
	uint32_t n_tools;
	char tool_names[CL_SIM_TOOLS_MAX][CL_SIM_TOOL_NAME];
	enum cl_sim_tool_choice tool_choice;
	uint32_t tool_named; /* with a named tool_choice: the index of that tool */
	bool tool_choice_named;
	uint32_t tool_results;
	bool no_thinking; /* messages: "thinking": {"type": "disabled"} */
};

/*
 * Decodes body[0..len).  Returns 0 with req filled, or a negative CL_E* code with a human
 * message in msg (size n) and the OpenAI error code (static text) in *code: a 400 answer.
 * Allocates only inside jansson and frees before returning.
 */
int cl_sim_chat_parse(const char *body, size_t len, struct cl_sim_chat_req *req, char *msg,
		      size_t n, const char **code);

/*
 * The same for a body sent to api's endpoint (docs/simulator.md, "APIs"): chat reads
 * "messages"; completions "prompt" (a string or an array of strings) and "max_tokens";
 * responses "input" (a string, or an array of messages or items whose content is a string
 * or text parts) and "max_output_tokens"; messages (Anthropic) reads "messages" as chat
 * does, "system" (a string or text blocks, ahead of them) and "thinking" (a "disabled" type
 * asks for no reasoning); embeddings "input" (a string or an array of
 * strings, each one input) and refuses "stream": true.  Chat reads "tools" and
 * "tool_choice" (a malformed one is a 400 naming the field); the other APIs refuse tools.  stream,
 * stream_options, ignore_eos and stop are read as for chat where the API has them.
 */
int cl_sim_api_parse(enum cl_api api, const char *body, size_t len, struct cl_sim_chat_req *req,
		     char *msg, size_t n, const char **code);

#endif
