/* chatload-sim's response text: chat.completion.chunk events in the OpenAI/vLLM shape, the
 * non-streamed chat.completion, the model list and OpenAI-style error bodies. */
#ifndef CHATLOAD_SIM_RENDER_H
#define CHATLOAD_SIM_RENDER_H

#include "chatload/buf.h"
#include "sim/config.h"
#include "sim/sim.h"
#include "sim/wbuf.h"

#include <stdbool.h>
#include <stdint.h>

/* One chat.completion.chunk event. */
struct cl_sim_chunk {
	bool role;            /* the opening chunk: delta {"role":"assistant","content":""} */
	uint32_t first_token; /* index of its first token in the output */
	uint32_t n_tokens;    /* tokens it carries (reasoning first, then content) */
	const char *finish;   /* finish_reason, NULL: null */
};

/*
 * Appends `data: {chunk}\n\n` to w.  Usage: none without include_usage; `"usage":null`
 * with it; the cumulative usage (tokens up to and including this chunk) with
 * continuous_usage.  Never allocates.
 */
void cl_sim_render_chunk(struct cl_sim_w *w, const struct cl_sim_config *cfg,
			 const struct cl_sim_stream *st, const struct cl_sim_chunk *ch);

/* Appends the usage-only final event (`"choices":[]`) counting st->sent_tokens. */
void cl_sim_render_usage(struct cl_sim_w *w, const struct cl_sim_stream *st);

/* The answer's finish_reason: "tool_calls" for a tool call (whatever its length), else
 * "length" when the request's max ended it, else "stop". */
const char *cl_sim_render_finish(const struct cl_sim_stream *st);

/* Appends `data: [DONE]\n\n`. */
void cl_sim_render_done(struct cl_sim_w *w);

/* Appends an event whose JSON is cut short (a fault mid-stream). */
void cl_sim_render_malformed(struct cl_sim_w *w, const struct cl_sim_stream *st);

/* Appends valid JSON events whose fields have the wrong types (a fault mid-stream):
 * shape says which (CL_SIM_WRONG_ROTATE picks by the request number). */
void cl_sim_render_wrong_type(struct cl_sim_w *w, const struct cl_sim_stream *st,
			      enum cl_sim_wrong_shape shape);

/* OpenAI's streamed transcription events (--transcription-stream openai): a delta carrying
 * tokens [first, first + n) of the text, and the done event with the text (its first
 * CL_SIM_TRANSCRIPT_DONE_MAX tokens) and, with_usage, {"type": "tokens", input_tokens,
 * output_tokens, total_tokens}. */
#define CL_SIM_TRANSCRIPT_DONE_MAX 4096
void cl_sim_render_transcript_delta(struct cl_sim_w *w, const struct cl_sim_stream *st,
				    uint32_t first, uint32_t n);
void cl_sim_render_transcript_done(struct cl_sim_w *w, const struct cl_sim_stream *st,
				   bool with_usage);

/* The answer of a transcription not streamed: {"text", "usage": {"type": "duration",
 * "seconds"}} (vLLM's TranscriptionResponse), the text the planned tokens' words.  0 or out's
 * error. */
int cl_sim_render_transcription(struct cl_buf *out, const struct cl_sim_stream *st,
				bool with_usage);

/* Renders the whole non-streamed chat.completion for st's planned output into out
 * (allocates; not a hot path).  0 or CL_ENOMEM / CL_ETOOBIG. */
int cl_sim_render_completion(struct cl_buf *out, const struct cl_sim_config *cfg,
			     const struct cl_sim_stream *st, bool with_usage);

/* The /v1/models list (all served models), or one model object when id is not NULL. */
int cl_sim_render_models(struct cl_buf *out, const struct cl_sim_config *cfg, const char *id,
			 int64_t created_s);

/* `{"error":{"message":...,"type":...,"param":null,"code":...}}` with a string code, or an
 * integer code when code is NULL (llama.cpp's shape, used for 503 "Loading model"). */
int cl_sim_render_error(struct cl_buf *out, const char *message, const char *type, const char *code,
			int status);

/* FNV-1a 64 of the content text of tokens [0, n) of request seq: the truth log's
 * answer_fnv, which a multi-turn client's next turn must repeat as its history. */
/* The content token (of n) in which the first match of one of the stop strings in the text
 * of request seq's answer begins: the answer ends before it, as servers end at a stop string
 * (0: at the first token, an empty answer); n when none appears. */
uint32_t cl_sim_render_stop_at(uint64_t seq, uint32_t n, const char (*stop)[64], uint32_t n_stop);

uint64_t cl_sim_render_content_fnv(uint64_t seq, uint32_t n);

/* The text of reasoning or content tokens [first, first + n) of request seq (indices count
 * within their kind; each kind has its own vocabulary), appended to w without quotes;
 * JSON-safe by construction. */
void cl_sim_render_tokens(struct cl_sim_w *w, uint64_t seq, uint32_t first, uint32_t n,
			  bool reasoning);

/* The same appended to out, a batch at a time (not a hot path).  0, CL_ENOMEM, CL_ETOOBIG. */
int cl_sim_render_append_tokens(struct cl_buf *out, uint64_t seq, uint32_t first, uint32_t n,
				bool reasoning);

/* ---- the other APIs (render_api.c, render_messages.c) ---- */

/* Responses: appends `event: response.created` (the stream's opening, no tokens).  The
 * responses renderers number their events in st->events (sequence_number). */
void cl_sim_render_resp_created(struct cl_sim_w *w, struct cl_sim_stream *st);

/* Responses: the delta events of tokens [ch->first_token, + n_tokens): a
 * response.reasoning_text.delta for the reasoning among them, then a
 * response.output_text.delta for the content.  Never allocates. */
void cl_sim_render_resp_delta(struct cl_sim_w *w, struct cl_sim_stream *st,
			      const struct cl_sim_chunk *ch);

/* Responses: the last event, response.completed (status "completed") or, when the request's
 * max_output_tokens ended it, response.incomplete with incomplete_details.reason
 * "max_output_tokens"; response.usage counts st->sent_tokens (null without with_usage). */
void cl_sim_render_resp_end(struct cl_sim_w *w, struct cl_sim_stream *st, bool with_usage);

/* Responses: an `event: error` saying message (a fault mid-stream). */
void cl_sim_render_resp_error(struct cl_sim_w *w, struct cl_sim_stream *st, const char *message);

/* Messages (Anthropic): `event: message_start`, the stream's opening (no tokens); its
 * message.usage (input_tokens without the cached part, cache_read_input_tokens,
 * cache_creation_input_tokens 0, output_tokens 0) unless !with_usage. */
void cl_sim_render_msg_start(struct cl_sim_w *w, const struct cl_sim_stream *st, bool with_usage);

/* Messages: the events of tokens [ch->first_token, + n_tokens): the thinking block (index
 * 0) opened before the first reasoning token, its thinking_delta; at the first content
 * token the thinking block's content_block_stop and the text block's content_block_start
 * (index 1 after thinking, else 0); the text_delta.  Never allocates. */
void cl_sim_render_msg_delta(struct cl_sim_w *w, const struct cl_sim_stream *st,
			     const struct cl_sim_chunk *ch);

/* Messages: the end of an answer of st->sent_tokens: the open block's content_block_stop,
 * message_delta (stop_reason "max_tokens" when the request's max ended it, else
 * "end_turn"; usage.output_tokens unless !with_usage), then message_stop unless !with_stop. */
void cl_sim_render_msg_end(struct cl_sim_w *w, const struct cl_sim_stream *st, bool with_usage,
			   bool with_stop);

/* Messages: the whole non-streamed message for st's planned output (a thinking block, a text
 * block, stop_reason, usage unless !with_usage).  Allocates; 0, CL_ENOMEM, CL_ETOOBIG. */
int cl_sim_render_msg_whole(struct cl_buf *out, const struct cl_sim_stream *st, bool with_usage);

/* Embeddings: the whole /v1/embeddings answer for st (st->inputs vectors of
 * cfg->embedding_dim numbers, deterministic from the request number), usage
 * {prompt_tokens, total_tokens} unless !with_usage.  Allocates; 0, CL_ENOMEM, CL_ETOOBIG. */
int cl_sim_render_embeddings(struct cl_buf *out, const struct cl_sim_config *cfg,
			     const struct cl_sim_stream *st, bool with_usage);

/* Rerank and score: the whole answer for st, one score per document (st->inputs, in [0, 1),
 * deterministic from the request number): rerank in vLLM's and Jina's shape ("results" of
 * {index, relevance_score}, in the documents' order), score in vLLM's ("data" of {index, object,
 * score}); usage {prompt_tokens, total_tokens} unless !with_usage.  0, CL_ENOMEM, CL_ETOOBIG. */
int cl_sim_render_scores(struct cl_buf *out, const struct cl_sim_stream *st, bool with_usage);

#endif
