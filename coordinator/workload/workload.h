/* Request-body rendering: turns a scenario's workload (inline prompts, a dataset file or
 * synthetic prompts) into pre-rendered chat-completions bodies, once, before any load. */
#ifndef CHATLOAD_WORKLOAD_H
#define CHATLOAD_WORKLOAD_H

#include "chatload/body_json.h"
#include "chatload/err.h"
#include "chatload/plan.h"
#include "chatload/salt.h"
#include "coordinator/scenario/scenario.h"

#include <stddef.h>
#include <stdint.h>

#define CL_WORKLOAD_MAX_FILE_BYTES   (256u << 20)  /* dataset files larger than this are refused */
#define CL_WORKLOAD_MAX_LINE_BYTES   (8u << 20)    /* one dataset record (line) at most */
#define CL_WORKLOAD_MAX_BODIES       1000000u      /* rendered bodies in one plan at most */
#define CL_WORKLOAD_MAX_TOTAL_BYTES  (1024u << 20) /* all rendered bodies together at most */
#define CL_WORKLOAD_MAX_SYNTH_TOKENS (1u << 20)    /* one synthetic prompt at most */
#define CL_WORKLOAD_CHARS_PER_TOKEN  4             /* the token estimate, below */
#define CL_WORKLOAD_MAX_IMAGE_BYTES  (32u << 20)   /* one request's workload.images at most */

/*
 * Tokens estimated without a tokenizer: ceil(characters / 4), characters being Unicode code
 * points of UTF-8 text (the rule of thumb OpenAI gives for English; chatload-sim counts prompt
 * tokens by the same rule, so tests can check lengths).  Synthetic prompts and shared prefixes
 * are built to this rule; dataset lengths (a ShareGPT answer, the length filter) are
 * estimated with it.
 */
uint32_t cl_workload_tokens_estimate(const char *text, size_t len);

/* What rendering did, for `chatload validate` and the results. */
struct cl_workload_stats {
	size_t records;         /* dataset records read (prompts, synthetic prompts: bodies) */
	size_t filtered;        /* ... left out by workload.dataset_filter */
	size_t limited;         /* ... left out by dataset_limit after a shuffle */
	size_t bodies;          /* bodies in the plan */
	size_t own_length;      /* bodies whose max_tokens is the request's own length */
	size_t ignore_eos;      /* bodies that carry "ignore_eos": true (from any key) */
	size_t stop;            /* bodies that carry a stop sequence (target.body.stop) */
	uint64_t requested_sum; /* max_tokens over all bodies */
	uint32_t requested_min, requested_max;
	uint64_t prompt_tokens_sum; /* estimated, prefix included */
	uint64_t prompt_chars_sum;  /* characters of the prompts, prefix included */
	uint32_t prefix_groups;     /* workload.shared_prefix.groups (0: none) */
	uint32_t prefix_tokens;
	uint32_t images;         /* workload.images.count: images each request carries */
	uint64_t body_bytes_sum; /* the bodies' bytes as rendered (images' data URLs included) */
	int64_t trace_span_us;   /* trace replay: the last start's offset (speedup applied) */
	char salt[CL_SALT_TAG_SIZE]; /* the run's tag the bodies open with ("" none) */
	/* workload.calibrate, filled by the run (0 without it): the sample's characters per
	 * token, and the target's count of some prompts as sent against what they were built
	 * to (their characters over the final characters per token) */
	double calib_sample_cpt;
	uint32_t calib_prompts;
	double calib_built_mean, calib_counted_mean;
};

/*
 * Renders the scenario's workload into out->bodies (one per prompt), for `model` (not NULL:
 * the caller resolves "first listed model" before rendering).  Blocks on file I/O; not for the
 * hot path.  On success out owns everything (cl_workload_plan_free); on failure out is freed
 * and zeroed and err names the problem, for datasets as "file:line: what is wrong".
 *
 * Sources (s->workload.kind):
 *  - prompts: one body per inline prompt, with workload.system_prompt as the system message.
 *  - dataset: the file s->workload.dataset, opened as given (the scenario loader has already
 *    resolved it against the scenario's directory).  Formats: JSONL of OpenAI records
 *    {"messages":[...]} (sent as written, minus any trailing non-user turns, which are the
 *    record's reference answers; system_prompt is added only when the record has no system
 *    message), JSONL of ShareGPT records {"conversations":[{"from":"human","value":...}]}
 *    (the system turn or top-level "system" if present, else system_prompt, then the first
 *    human turn), or plain text, one prompt per non-blank line.  CL_DATASET_AUTO decides per
 *    file from its first non-blank line: a JSON object with "messages" is OpenAI, with
 *    "conversations" ShareGPT; a line not starting with '{' means text.  Every record must
 *    then match the format.  dataset_limit (0: all) stops after that many records.  Caps:
 *    CL_WORKLOAD_MAX_FILE_BYTES per file, CL_WORKLOAD_MAX_LINE_BYTES per line (CL_ETOOBIG).
 *  - synthetic: workload.synthetic_count prompts, lengths in tokens drawn from a normal
 *    distribution {mean, stddev} clamped to [min, max], about 4 characters per token, words
 *    from a fixed vocabulary, deterministic for workload.seed; prompt i starts with its own
 *    number so no two prompts share a prefix-cache entry from their first token.
 *
 * Output lengths: a body asks for its own length when it has one (synthetic.output_tokens
 * drawn per prompt from its own seeded sequence; with dataset_output_tokens: record, a ShareGPT
 * record's first answer after the human turn, estimated, or an OpenAI record's
 * "max_completion_tokens"/"max_tokens", else its first reference answer, estimated), else
 * workload.max_tokens.  "ignore_eos": true is added to the bodies with their own length
 * (workload.ignore_eos unset), to every body (true) or none (false).
 * Datasets: dataset_filter drops records by estimated length; dataset_shuffle shuffles the
 * kept records with workload.seed (Fisher-Yates over splitmix64), then dataset_limit keeps the
 * first N; without a shuffle, reading stops after N records.
 * Shared prefixes: body i (in reading order) gets group (i mod groups)'s prefix of about
 * `tokens` tokens, vocabulary words seeded by (seed, group), then "\n\n", before the text of
 * its first user message (as the first text part when content is an array of parts).
 *
 * Each body is {"model", "messages", "max_tokens" (omitted when 0), "ignore_eos"?, "stream":
 * true, "stream_options": {"include_usage": true}} merged with target.body_json by
 * cl_body_json_merge_text's rules (the scenario's keys win; objects merge key by key; a null
 * removes our key), except "stream", which is always true.  Output is compact JSON.
 * prompt_chars is the byte length of all message text (system and prefix included); the
 * body's max_tokens field says what it asks for.
 */
int cl_workload_render(const struct cl_scenario *s, const char *model, struct cl_workload_plan *out,
		       struct cl_err *err);

/*
 * cl_workload_render that also fills stats (NULL: not wanted, and no salt) and salts the
 * bodies with the run's tag (workload.salt), which stats->salt carries out.  The tag is a value
 * of the run, not of the scenario: the first rendering makes it (chatload/salt.h), a rendering
 * again with the same stats keeps the one stats->salt holds (calibration renders again), and
 * it is "" when s wants none (salt: none, or a generate job, which sends its inputs byte for
 * byte as written).  A tag opens the text of every body's first message (whatever its role;
 * of a conversation, its first turn, which the later turns carry in their history) with
 * "[<tag>] ": 11 characters, 3 tokens by the estimate, 9 to 11 in llama's SentencePiece
 * tokenizer, which splits the digits (docs/scenario.md).  The rendering also decides out->retag
 * (plan.h): the tag, when every request of the run should be distinct past the bodies too.
 */
int cl_workload_render_stats(const struct cl_scenario *s, const char *model,
			     struct cl_workload_plan *out, struct cl_workload_stats *stats,
			     struct cl_err *err);

/*
 * Receives one rendered body of a streamed rendering: line is the file line (1-based) of the
 * record it was made from, json its text (len bytes, NUL-terminated), borrowed until the
 * call returns.  0 to go on; anything else stops the rendering, which returns it (err
 * filled by the callee).
 */
typedef int (*cl_workload_body_fn)(void *arg, uint32_t line, const char *json, size_t len,
				   struct cl_err *err);

/*
 * A generate job's input when it is a dataset (generate.input_format openai, sharegpt or
 * text): every record of generate.input rendered as a benchmark's dataset is (model,
 * workload.system_prompt, workload.max_tokens as a cap, target.body), except that no record
 * asks for its own length, no body carries ignore_eos (not even from target.body), and no
 * record is filtered, limited, shuffled or given a shared prefix.  Streams: the file is read
 * a line at a time and each body handed to fn, in file order, as soon as it is rendered,
 * then freed, so memory is bounded by the largest record (CL_WORKLOAD_MAX_LINE_BYTES), not
 * the file, and neither the file cap nor the caps on bodies held apply.  stats (NULL: not
 * wanted) gets the figures of every body.  Blocks on file I/O.  Errors as
 * cl_workload_render (a bad record is "file:line:col: what"), or fn's.
 */
int cl_workload_render_generate(const struct cl_scenario *s, const char *model,
				cl_workload_body_fn fn, void *arg, struct cl_workload_stats *stats,
				struct cl_err *err);

/*
 * One body's text with model in place of old_model, the one it was rendered for (it must
 * begin {"model":<old_model>, as cl_workload_render writes it): what
 * cl_workload_plan_set_model does to every body of a plan, for a body kept elsewhere (a
 * generate job's spool).  *out (malloc'd, NUL-terminated) and *out_len.  0, CL_EINVAL (a
 * body that does not begin so) or CL_ENOMEM, err filled.
 */
int cl_workload_body_set_model(const char *json, size_t len, const char *old_model,
			       const char *model, char **out, size_t *out_len, struct cl_err *err);

/*
 * Puts model in place of the model every body of w was rendered for (old_model), without
 * reading the workload again: `chatload run` renders before anything starts, to find bad
 * input early, and learns the model only from the readiness gate.  Each body must begin
 * {"model":<old_model>, as cl_workload_render writes them.  CL_EINVAL (a body that does
 * not) or CL_ENOMEM; on failure w is unchanged.
 */
int cl_workload_plan_set_model(struct cl_workload_plan *w, const char *old_model, const char *model,
			       struct cl_err *err);

/* Words of the prompt vocabulary, about `tokens` tokens by the estimate, into *out (malloc'd):
 * what calibration asks the target to count.  0 or CL_ENOMEM. */
/*
 * workload.tools as a JSON object text {"tools": [...], "tool_choice": ...} (the keys every
 * body gets, docs/scenario.md "Tool calls"), malloc'd into *json_out; NULL without tools.
 * The readiness gate's probe carries them too, so a server that refuses tools fails the
 * gate, not the run.  0 or CL_ENOMEM with err filled.
 */
int cl_workload_tools_json(const struct cl_scn_workload *w, char **json_out, struct cl_err *err);

int cl_workload_sample_text(uint32_t tokens, char **out);

/*
 * Trace replay: gives the scenario's replay stages the trace's figures from the stats of its
 * rendering: a stage without a duration gets the trace's span (plus 1 ms, so the last start
 * is inside the window), and every replay stage the trace's mean rate (what the results
 * call its rate; the trace, not the rate, decides when requests start).  No-op for other
 * workloads.
 */
void cl_workload_trace_fill_stages(struct cl_scenario *s, const struct cl_workload_stats *st);

#endif
