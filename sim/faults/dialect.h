/* How chatload-sim says "this request failed" in each real server's dialect (--error-dialect):
 * the in-stream event(s) an error-chunk fault sends, and the JSON body of the same failure
 * when no stream carries it (docs/simulator.md, "Error dialects"). */
#ifndef CHATLOAD_SIM_DIALECT_H
#define CHATLOAD_SIM_DIALECT_H

#include "sim/config.h"
#include "sim/wbuf.h"

#include <stdbool.h>

/*
 * Appends the events of an in-stream failure in cfg's dialect, with cfg->error_code and
 * cfg->error_message, and the `data: [DONE]` after them where that server sends one.
 * Never allocates.  json-200 has no in-stream form: it renders as vllm (the caller answers
 * a json-200 failure before any stream begins).
 */
void cl_sim_dialect_event(struct cl_sim_w *w, const struct cl_sim_config *cfg);

/* Appends the JSON error object of the same failure as that server puts it in a body
 * (a non-streamed answer, or json-200's body instead of a stream).  Never allocates. */
void cl_sim_dialect_body(struct cl_sim_w *w, const struct cl_sim_config *cfg);

/* Anthropic's error type for an HTTP status (invalid_request_error for 400, ...,
 * overloaded_error for 529 and the other 5xx but 500's api_error): static text. */
const char *cl_sim_dialect_anthropic_type(uint32_t status);

/* The HTTP status a body-borne failure goes with: 200 for json-200, else --error-code. */
int cl_sim_dialect_status(const struct cl_sim_config *cfg);

#endif
