/* Private to the workload renderer (the files of workload/): the context that collects rendered
 * bodies, the body builder every source shares, and one entry per source.  Library-internal: cli_.
 */
#ifndef CHATLOAD_WORKLOAD_INT_H
#define CHATLOAD_WORKLOAD_INT_H

#include "chatload/body_json.h"
#include "chatload/buf.h"
#include "coordinator/workload/workload.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The bodies rendered so far, and what every body of one workload shares. */
struct render_ctx {
	const char *model;
	uint32_t max_tokens; /* workload.max_tokens: for bodies without a length of their own */
	int ignore_eos;      /* workload.ignore_eos: -1 with a per-request length only, 0, 1 */
	json_t *extra;       /* the scenario's extra body (object) or NULL; borrowed */
	const char *system_prompt;
	char **prefixes; /* shared_prefix: one text per group, or NULL */
	size_t n_prefixes;
	struct cl_request_body *bodies;
	uint8_t *flags; /* per body: RENDER_OWN_LENGTH, RENDER_IGNORE_EOS, RENDER_STOP */
	size_t n, cap;
	size_t total_bytes;
	struct cl_workload_stats *stats; /* filled as records are read; never NULL */
	bool no_prefix;                  /* the body being pushed gets no shared prefix */
	const char *salt; /* "[<tag>] " (cl_salt_prefix) before the first message's text, or NULL */
	const char *salt_tag; /* the tag itself (a class's own prompts get the same), or NULL */
	bool no_salt;       /* the body being pushed gets no salt (a later turn: its history has) */
	double token_scale; /* workload.chars_per_token / 4: built lengths in estimated tokens */
	enum cl_api api;    /* workload.api: the shape each body is rendered in */
	/* embeddings: inputs per body (workload.embedding_batch); rerank and score: texts per
	 * body (a query and workload.documents documents).  While a batch fills, its messages
	 * wait in pending (one input or text each) */
	uint32_t batch;
	json_t *pending;
	size_t pending_chars;
	/* A generate job's dataset input (cl_workload_render_generate): each body is handed to
	 * sink with the line it was read from (cur_line, its custom_id) as soon as it is
	 * rendered, then freed, so memory holds one record, not the file (and the caps on
	 * bodies held, CL_WORKLOAD_MAX_BODIES and _TOTAL_BYTES, do not apply); bodies stays
	 * empty.  NULL: bodies are kept in `bodies`. */
	cl_workload_body_fn sink;
	void *sink_arg;
	uint32_t cur_line;
	/* workload.images: attached to each body's own user message (NULL or count 0: none),
	 * made from seed and the body's index */
	const struct cl_scn_images *images;
	uint64_t seed;
};

/* ---- workload.c: the rendering --------------------------------------------------------- */

/* Adds body b (its flags RENDER_*) to the figures of st. */
void cli_workload_stats_add(struct cl_workload_stats *st, const struct cl_request_body *b,
			    uint8_t flags);

/* The workload of s rendered into out as c renders its own (c's model, c's salt), without
 * stats: a class's own prompts. */
int cli_workload_render_like(const struct render_ctx *c, const struct cl_scenario *s,
			     struct cl_workload_plan *out, struct cl_err *err);

/* ---- classes.c: workload.classes -------------------------------------------------------- */

/* out[i] (n_bodies entries): the class of body i, apportioned exactly by weights
 * (cl_apportion) and spread so every run of bodies holds each class within one of its share.
 * 0 or CL_EINVAL (no class, too many). */
int cli_workload_class_order(const uint32_t *weights, size_t n_classes, size_t n_bodies,
			     uint32_t *out);
/* n rounded up to a whole number of the classes' rounds (the sum of the weights over their
 * greatest common divisor); n without classes, or when that would pass
 * CL_WORKLOAD_MAX_BODIES. */
uint32_t cli_workload_class_round(const struct cl_scn_workload *w, uint32_t n);
/* Tags c's bodies with their classes and gives each its class's model, priority, length and
 * body keys; out->classes gets the classes' names and headers.  No-op without classes or
 * with a sink.  0, or an error with err filled. */
int cli_workload_apply_classes(struct render_ctx *c, const struct cl_scenario *s,
			       struct cl_workload_plan *out, struct cl_err *err);

/* ---- tools.c: workload.tools ------------------------------------------------------------ */

/* {"tools": [count synthetic function definitions, deterministic from w->seed], "tool_choice":
 * w's} as a new object in *out, or NULL without workload.tools.  0 or CL_ENOMEM (err filled). */
int cli_workload_tools(const struct cl_scn_workload *w, json_t **out, struct cl_err *err);

/* Renders the inputs still waiting for a full embeddings batch as one last, shorter body.
 * 0 when none wait; else as cli_workload_push_body. */
int cli_workload_flush_batch(struct render_ctx *c, struct cl_err *err);

/* tokens (the target's) in estimated tokens, the unit cli_workload_words builds to. */
static inline uint32_t cli_workload_scaled(const struct render_ctx *c, uint32_t tokens)
{
	double t = (double)tokens * c->token_scale + 0.5;
	return t < 1 ? 1 : t > 4294967295.0 ? UINT32_MAX : (uint32_t)t;
}

enum { RENDER_OWN_LENGTH = 1, RENDER_IGNORE_EOS = 2, RENDER_STOP = 4 };

/* ---- body.c: the growing array of bodies ------------------------------------------------- */

/* Appends one rendered body for messages (stolen); prompt_chars counts its text; out_tokens
 * is the request's own output length (0: workload.max_tokens).  With shared prefixes the
 * body's group prefix is put before the text of its first user message first; then the
 * run's salt before the text of its first message, whatever its role.  CL_ETOOBIG
 * past CL_WORKLOAD_MAX_BODIES or CL_WORKLOAD_MAX_TOTAL_BYTES, CL_ENOMEM; err filled. */
int cli_workload_push_body(struct render_ctx *c, json_t *messages, size_t prompt_chars,
			   uint32_t out_tokens, struct cl_err *err);

/* Appends json (a malloc'd, NUL-terminated body, taken: freed on failure) as it is, with the
 * audio it uploads (transcription; 0 otherwise).  Errors as cli_workload_push_body. */
int cli_workload_push_raw(struct render_ctx *c, char *json, uint32_t audio_ms, struct cl_err *err);
/* Pushes [system?, user] for a plain prompt of len bytes.  CL_EINVAL when the prompt or the
 * system prompt is not valid UTF-8; otherwise as cli_workload_push_body. */
int cli_workload_push_prompt(struct render_ctx *c, const char *system, const char *prompt,
			     size_t len, uint32_t out_tokens, struct cl_err *err);

/* Pushes turn `turn` (1..) of a conversation: [system?, user] with the history's place and
 * the user message marked (cl_request_body.turn, hist_at, user_len); the shared prefix goes
 * on turn 1 only.  Errors as cli_workload_push_prompt. */
int cli_workload_push_turn(struct render_ctx *c, const char *system, const char *prompt, size_t len,
			   uint32_t out_tokens, uint32_t turn, struct cl_err *err);

/* ---- workload/image.c: workload.images ------------------------------------------------------ */

/* Appends the PNG (8-bit RGB, one IDAT, Sub filter on every row) of rgb (width*height*3
 * bytes, rows top down) to out.  0 or CL_ENOMEM. */
int cli_image_png(const uint8_t *rgb, uint32_t width, uint32_t height, struct cl_buf *out);

/* Appends the baseline JPEG (quality 85, libjpeg) of rgb to out.  0, CL_ENOMEM, CL_EINVAL. */
int cli_image_jpeg(const uint8_t *rgb, uint32_t width, uint32_t height, struct cl_buf *out);

/* Puts into url (reset first) "data:image/png;base64,..." (or image/jpeg) for image `index`
 * of body `body` in im's size and format, made from seed: the same arguments give the same
 * bytes, any other body or index other pixels.  0 or CL_ENOMEM. */
int cli_image_data_url(const struct cl_scn_images *im, uint64_t seed, uint64_t body, uint32_t index,
		       struct cl_buf *url);

/* Appends c->images' image parts (chat: image_url; responses: input_image) to the last user
 * message of messages, its string content becoming a text part first.  Nothing without
 * images or without a user message.  0, CL_ETOOBIG (the images' data URLs of one request over
 * CL_WORKLOAD_MAX_IMAGE_BYTES) or CL_ENOMEM, err filled; messages stays the caller's. */
int cli_workload_add_images(struct render_ctx *c, json_t *messages, uint64_t body,
			    struct cl_err *err);

/* ---- workload/synth.c: text from the vocabulary ---------------------------------------------- */

/* Appends head, then words drawn with *rng until out holds about `tokens` tokens by the
 * estimation rule (cl_workload_tokens_estimate), trimmed so it does not end in a space.
 * CL_ENOMEM / CL_ETOOBIG (out's cap). */
int cli_workload_words(struct cl_buf *out, const char *head, uint32_t tokens, uint64_t *rng);

/* Makes c->prefixes for workload.shared_prefix (nothing when groups is 0). */
int cli_workload_make_prefixes(struct render_ctx *c, const struct cl_scn_workload *w,
			       struct cl_err *err);

/* ---- workload/lines.c: capped line reading -------------------------------------------------- */

/* Reads a file line by line with a cap on each line and on the whole file. */
struct line_reader {
	FILE *f;
	char chunk[65536];
	size_t pos, n;
	struct cl_buf line;
	uint64_t total;
	/* the file's cap: 0 is CL_WORKLOAD_MAX_FILE_BYTES (what is held whole must be capped; a
	 * file streamed a record at a time needs none, and says UINT64_MAX) */
	uint64_t max_total;
	int lineno;
	bool eof;
};

/* Returns 1 with the next line (without "\n" or "\r\n") in r->line, 0 at EOF, or CL_EIO /
 * CL_ETOOBIG (line or file over its cap; r->lineno is the offending line). */
int cli_workload_lines_next(struct line_reader *r);

/* ---- workload/dataset.c, workload/synth.c: the sources -------------------------------------- */

/* Renders every record of the dataset file w->dataset (formats and caps: cl_workload_render).
 * Errors name "file:line". */
int cli_workload_read_dataset(struct render_ctx *c, const struct cl_scn_workload *w,
			      struct cl_err *err);

/* Renders one body per record of the trace w->trace (Mooncake or Azure JSONL), each with its
 * at_us.  Errors name "file:line:column". */
int cli_workload_read_trace(struct render_ctx *c, const struct cl_scn_workload *w,
			    struct cl_err *err);

/* workload/audio.c: one transcription description per clip of w->audio (chatload/audio.h):
 * synthetic clips of w->audio.seconds, count of them, deterministic for w->seed, or the .wav
 * files of w->audio.dir in name order, each checked and carried in base64.  Errors name the
 * file. */
int cli_workload_audio(struct render_ctx *c, const struct cl_scn_workload *w, struct cl_err *err);
/* Renders w->synthetic_count synthetic prompts, deterministic for w->seed. */
int cli_workload_synthesize(struct render_ctx *c, const struct cl_scn_workload *w,
			    struct cl_err *err);

#endif
