/* The readiness gate's outcome (DESIGN §5): when each phase passed, attempts, last error.
 * Produced by the gate (client/probe), carried on the wire, written into results, and put
 * into words here. */
#ifndef CHATLOAD_READINESS_H
#define CHATLOAD_READINESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cl_ready_phase {
	CL_READY_CONNECT = 0,    /* TCP connect to the target works */
	CL_READY_MODELS = 1,     /* GET /v1/models lists the model */
	CL_READY_GENERATION = 2, /* `consecutive` streamed generations succeeded */
	CL_READY__PHASES
};

enum cl_ready_status {
	CL_READY_PENDING = 0, /* still waiting */
	CL_READY_PASSED = 1,
	CL_READY_TIMED_OUT = 2, /* deadline passed */
	CL_READY_FATAL = 3,     /* configuration error: 401/403, unknown model; no point waiting */
	CL_READY_CANCELLED = 4,
};

struct cl_readiness_result {
	int32_t status;                            /* enum cl_ready_status */
	int32_t phase;                             /* phase reached (enum cl_ready_phase) */
	int64_t phase_passed_us[CL_READY__PHASES]; /* since the gate started; -1: not passed */
	uint32_t attempts;                         /* generation attempts made */
	int64_t probe_ttft_us;                     /* of the last successful generation; -1: none */
	int64_t probe_total_us;
	int64_t elapsed_us;       /* total time in the gate */
	char model[128];          /* model found/used */
	char last_error[512];     /* e.g. HTTP 503 "Loading model" */
	int64_t failing_since_us; /* when the current run of failures began; -1 */
};

/* "connect", "/v1/models", "generation" (or "?"): phase is an enum cl_ready_phase. */
const char *cl_readiness_phase_name(int phase);

/*
 * Formats r as the one-line verdict into buf (size n, always NUL-terminated, truncated to
 * fit; nothing written when n is 0), e.g.
 *   ready after 6.2s (connect 0.0s, models 2.1s, generation 6.2s; 3 attempts; probe ttft 101ms)
 *   target not ready after 15m: /v1/models ok at 4.0s; generation failing since 12.0s:
 *     HTTP 503 "Loading model"
 *   target not ready after 0.1s (configuration error, not retried): connect ok at 0.0s;
 *     /v1/models: model 'x' is not listed; the server lists 'y'
 */
void cl_readiness_describe(const struct cl_readiness_result *r, char *buf, size_t n);

#endif
