/* The chat-completions request body as JSON: the one place its shape is put together
 * ({"model", "messages", "max_tokens"?, "ignore_eos"?, "stream": true, "stream_options":
 * {"include_usage": true}} merged with the scenario's extra body), used by the coordinator's
 * workload renderer and by the readiness gate in every agent. */
#ifndef CHATLOAD_BODY_JSON_H
#define CHATLOAD_BODY_JSON_H

#include "chatload/err.h"
#include "chatload/plan.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Reals are printed with 15 significant digits: every decimal a person writes in a scenario
 * ("temperature: 0.6") survives, where jansson's default of 17 would send 0.59999999999999998.
 */
/* The max_tokens of a messages body whose workload leaves the length to the server:
 * Anthropic's API refuses a body without one. */
#define CL_BODY_JSON_MESSAGES_MAX_TOKENS 4096u

#define CL_BODY_JSON_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

/*
 * Merges patch (an object, borrowed) into target (an object we own), RFC 7386 style.  With
 * keep_nulls a null is stored rather than applied, so the result can itself be merged later
 * (composing two patches); without it a null deletes the key.
 */
int cl_body_json_merge(json_t *target, json_t *patch, bool keep_nulls);

/* Parses text as a JSON object into *out (owned by the caller); what names the argument in
 * the error.  CL_EINVAL when text is not JSON or not an object. */
int cl_body_json_parse_object(const char *text, const char *what, json_t **out, struct cl_err *err);

/* Adds a {"role", "content"} message to the array messages; always consumes content. */
int cl_body_json_add_message(json_t *messages, const char *role, json_t *content);

/* Renders {"model", messages, "max_tokens", "ignore_eos"?, ...} + extra into a new, compact,
 * malloc'd string; "model" is always the first key (cl_workload_plan_set_model relies on it).
 * Always consumes messages.  CL_ENOMEM on failure. */
int cl_body_json_render(const char *model, json_t *messages, uint32_t max_tokens, bool ignore_eos,
			json_t *extra, char **json_out);

/*
 * The same for any API, from the same messages (docs/scenario.md, "APIs"):
 * - chat: {"model", "messages", "max_tokens"?, "ignore_eos"?, "stream": true,
 *   "stream_options": {"include_usage": true}}, as cl_body_json_render;
 * - completions: "prompt" = the messages' text joined by a blank line, "max_tokens",
 *   "ignore_eos", "stream", "stream_options" as chat;
 * - responses: "input" = the messages, "max_output_tokens", "ignore_eos" (a vLLM
 *   extension, sent only when asked), "stream": true, no stream_options;
 * - embeddings: "input" = one string per message (the batch), no length, no ignore_eos, and
 *   no "stream" at all (the key is removed even when extra sets it);
 * - messages (Anthropic): "system" = the text of the role "system" messages (joined by a
 *   blank line; absent without one), "messages" = the others, "max_tokens" (required by
 *   Anthropic: CL_BODY_JSON_MESSAGES_MAX_TOKENS when max_tokens is 0), "ignore_eos" when
 *   asked, "stream": true, no stream_options.
 * extra is merged last (chatload's "stream" wins).  Consumes messages.  CL_ENOMEM.
 */
int cl_body_json_render_api(enum cl_api api, const char *model, json_t *messages,
			    uint32_t max_tokens, bool ignore_eos, json_t *extra, char **json_out);

/*
 * Renders one probe body (readiness or warmup): {"model", "messages": [{"role": "user",
 * "content": prompt}], "max_tokens", "stream": true, "stream_options": {"include_usage":
 * true}} merged with extra_body_json (NULL or a JSON object text; for readiness this is
 * readiness.body merged over target.body, see cl_body_json_merge_text) with the same rules as
 * cl_workload_render (coordinator/workload/workload.h).  *json_out is malloc'd, owned by the
 * caller.  CL_EINVAL (bad argument or extra body not a JSON object) / CL_ENOMEM with err filled.
 */
int cl_body_json_probe(const char *model, const char *prompt, uint32_t max_tokens,
		       const char *extra_body_json, char **json_out, struct cl_err *err);

/* cl_body_json_probe for any API (cl_body_json_render_api's shapes); the prompt is the one
 * message (embeddings: the one input). */
int cl_body_json_probe_api(enum cl_api api, const char *model, const char *prompt,
			   uint32_t max_tokens, const char *extra_body_json, char **json_out,
			   struct cl_err *err);

/*
 * Merges the JSON object text over_json over base_json (either may be NULL: then the other
 * is copied; both NULL gives NULL) in the manner of RFC 7386 JSON merge patch: a key in over
 * replaces the one in base, two objects merge key by key recursively, and a null in over
 * removes the key.  *json_out is malloc'd compact JSON or NULL.  CL_EINVAL with err naming
 * which argument is not a JSON object.  Used to put readiness.body / warmup.body over
 * target.body.
 */
int cl_body_json_merge_text(const char *base_json, const char *over_json, char **json_out,
			    struct cl_err *err);

#endif
