/* A streamed chat completion put back together: every chunk's JSON folded into one
 * `chat.completion` object (content and reasoning_content apart, tool calls by index,
 * finish_reason, usage), as a generate job writes it to its output. */
#ifndef CHATLOAD_GENERATE_ASSEMBLE_H
#define CHATLOAD_GENERATE_ASSEMBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_ASM_MAX_CHOICES 16          /* choices[].index at most 15 (n > 16 is refused) */
#define CL_ASM_MAX_BYTES   (16u << 20) /* text kept for one answer; more is an error */

struct cl_asm;

/* A new, empty assembly; NULL when out of memory. */
struct cl_asm *cl_asm_new(void);
/* Forgets everything (for the next try of a request). */
void cl_asm_reset(struct cl_asm *a);
void cl_asm_free(struct cl_asm *a);

/*
 * Folds one SSE event's data (not NUL-terminated) in.  Returns 0 (a chunk, or `[DONE]`, which
 * sets done), or -1 with why[n] filled: the data is not a JSON object, carries an `error`
 * (an object or a string: the server failed mid-stream; why quotes its message, *error_code
 * gets its code when it is a number, else 0, and cl_asm_error_seen turns true), a field has
 * the wrong type, or the answer passed CL_ASM_MAX_BYTES.  Every failure means the answer is
 * incomplete.
 */
int cl_asm_feed(struct cl_asm *a, const char *data, size_t len, int *error_code, char *why,
		size_t n);

bool cl_asm_done(const struct cl_asm *a);        /* `[DONE]` seen */
bool cl_asm_has_token(const struct cl_asm *a);   /* any content, reasoning or tool call yet */
bool cl_asm_has_content(const struct cl_asm *a); /* content, a refusal or a tool call yet */
bool cl_asm_has_choice(const struct cl_asm *a);  /* any chunk carried a choice */
bool cl_asm_error_seen(const struct cl_asm *a);  /* an error object arrived (feed failed) */
/* Every choice seen has a finish_reason, and one was seen at least: the answer is whole. */
bool cl_asm_finished(const struct cl_asm *a);
uint32_t cl_asm_output_tokens(const struct cl_asm *a); /* usage.completion_tokens, 0: none */
uint32_t cl_asm_prompt_tokens(const struct cl_asm *a); /* usage.prompt_tokens, 0: none */
const char *cl_asm_id(const struct cl_asm *a);         /* the chunks' id, NULL when none came */

/* The chat.completion as compact JSON text (malloc'd; the caller frees), NULL when out of
 * memory. */
char *cl_asm_result(const struct cl_asm *a);

#endif
