/* workload.calibrate: the target's characters per token, measured once with /tokenize. */
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

#endif
