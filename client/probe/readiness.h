/* The readiness gate (DESIGN §5): connect, /v1/models, then real streamed generations in a
 * row, with capped exponential backoff, until it passes, fails for good, or runs out of time. */
#ifndef CHATLOAD_PROBE_READINESS_H
#define CHATLOAD_PROBE_READINESS_H

#include "client/http/allow.h"

#include "chatload/plan.h"
#include "chatload/readiness.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CL_PROBE_DEFAULT_TIMEOUT_US         (15LL * 60 * 1000000)
#define CL_PROBE_DEFAULT_REQUEST_TIMEOUT_US (5LL * 60 * 1000000)
#define CL_PROBE_DEFAULT_CONSECUTIVE        2u
#define CL_PROBE_DEFAULT_BACKOFF_INITIAL_US 1000000LL
#define CL_PROBE_DEFAULT_BACKOFF_MAX_US     30000000LL
#define CL_PROBE_DEFAULT_CONNECT_TIMEOUT_US 10000000LL /* when target->connect_timeout_us is 0 */
#define CL_PROBE_EARLY_BACKOFF_MAX_US       1000000LL  /* the cap of connect and /models waits */
#define CL_PROBE_DEFAULT_PROMPT             "Reply with just the word OK." /* as scenario/scenario.c */
#define CL_PROBE_DEFAULT_MAX_TOKENS         16u

/* What the gate is told.  Zero (or NULL) fields take the defaults above. */
struct cl_probe_cfg {
	const struct cl_target_plan *target; /* base_url, model (NULL: any listed model; the
						first is then used), api_key_env, headers, tls */
	int64_t timeout_us;                  /* overall deadline (default 15m) */
	int64_t request_timeout_us;          /* per generation attempt (default 5m) */
	uint32_t consecutive;  /* successful generations in a row needed (default 2) */
	const char *body_json; /* rendered probe body (cl_body_json_probe); if NULL the
				  gate renders one for the model it found */
	const char *prompt;    /* used when body_json is NULL */
	uint32_t max_tokens;
	const char *extra_body_json;
	int64_t backoff_initial_us, backoff_max_us; /* exponential with full jitter, capped */
	uint64_t seed;                              /* jitter; 0: from the clock */
	const struct cl_allow_list *allow; /* targets allowed (an agent's --allow-target); NULL:
					      any.  A refused target is a fatal error */
};

/* Called after every attempt (of any phase) with the result so far and the wait before the
 * next attempt (0: at once; -1: there is none: the gate has finished, or only waits out its
 * deadline).  Runs on the gate's thread. */
typedef void (*cl_probe_progress_cb)(void *ctx, const struct cl_readiness_result *now,
				     int64_t next_attempt_in_us);

/*
 * Runs the gate, blocking, until it passes, a fatal error, the deadline, or *cancel becomes
 * nonzero (cancel may be NULL; it is checked at least once a second during a request and
 * every 50ms while waiting).  Phases, in order, each passed once: TCP connect to the URL's
 * host and port; GET {base}/models answering 200 with the model listed (or, with no model
 * named, any: the first is used); then cfg->consecutive streamed chat completions in a row,
 * each HTTP 200 with at least one token-bearing chunk (content or reasoning) and [DONE] (or
 * a finish_reason and a clean end) within request_timeout.  A failure of the generation
 * phase resets the count of successes in a row, but never an earlier phase's pass time.
 *
 * Not yet (retried with backoff): connection refused, timeouts, 5xx (503 "Loading model"),
 * 429, an empty or cut stream, an empty model list.  Fatal (stop at once): 400, 401, 403,
 * 404, 405, 413, 422 or a redirect on either request, a model list that does not name the
 * model (the error says which models it lists), a /models answer that is not a model list, a
 * 200 answer to the generation that is not an event stream, a TLS certificate failure, an
 * api_key_env that is not set, a URL curl cannot use or cfg->allow refuses, a bad header.
 *
 * Returns 0 when passed, CL_ETIMEDOUT, CL_EREFUSED (fatal), CL_ECLOSED (cancelled).  out is
 * always filled (phase times since the gate started, -1 for phases not passed; last_error
 * keeps the last failure seen even after a pass).  The program must have called
 * curl_global_init (once, in main, before any thread starts); the gate never does.
 */
int cl_probe_run(const struct cl_probe_cfg *cfg, cl_probe_progress_cb cb, void *ctx,
		 const atomic_int *cancel, struct cl_readiness_result *out);

#endif
