/* workload.calibrate: the target's characters per token, measured with /tokenize on a sample
 * and on the prompts to be sent. */
#ifndef CHATLOAD_CALIBRATE_H
#define CHATLOAD_CALIBRATE_H

#include "chatload/err.h"
#include "chatload/plan.h"

/*
 * POSTs {"model", "prompt", "content"} (the text twice: vLLM and SGLang read "prompt",
 * llama.cpp "content"; it is about 1000 estimated tokens of the prompt vocabulary) to the
 * target's /tokenize (beside /v1, CL_HTTP_TOKENIZE) with the target's headers and key,
 * and sets *chars_per_token to the sample's characters over the count the answer gives
 * ("count", else the length of "tokens").  Blocks (30 s at most).  CL_EIO (no answer),
 * CL_EPROTO (not 200, no count, an absurd ratio), CL_ENOMEM, or cl_http_target_init's codes;
 * err says which.
 */
int cl_calibrate_tokens(const struct cl_target_plan *target, const char *model,
			double *chars_per_token, struct cl_err *err);

/* What /tokenize counted of some of the prompts to be sent. */
struct cl_calibrate_check {
	uint32_t prompts; /* prompts counted */
	uint64_t chars;   /* their characters (prompt_chars: system prompt and prefix included) */
	uint64_t tokens;  /* the target's count of their text */
};

/*
 * Counts, with the target's /tokenize as cl_calibrate_tokens does, the text of the messages
 * of up to max_checked bodies of plan, spread evenly over it: the prompts as they will be
 * sent, whose characters per token may differ from the vocabulary sample's (a leading
 * number, a cut word, a prefix).  Blocks (30 s at most per request).  0 with *out filled,
 * or cl_calibrate_tokens's codes (CL_EINVAL: no body had text); err says which.
 */
int cl_calibrate_prompts(const struct cl_target_plan *target, const char *model,
			 const struct cl_workload_plan *plan, uint32_t max_checked,
			 struct cl_calibrate_check *out, struct cl_err *err);

#endif
