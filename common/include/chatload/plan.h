/* What an agent is told to do: the target, pre-rendered request bodies, and per-stage load
 * shares; plus the apportionment that splits a load exactly among agents and workers. */
#ifndef CHATLOAD_PLAN_H
#define CHATLOAD_PLAN_H

#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Largest-remainder apportionment: splits total into n shares proportional to weights
 * (ties go to the lower index), so the shares always sum exactly to total.  All-zero
 * weights are treated as equal weights.  CL_EINVAL when n == 0.
 */
int cl_apportion(uint64_t total, const uint32_t *weights, size_t n, uint64_t *out);
/* Proportional split of a real quantity (a rate); shares sum to total up to rounding. */
int cl_apportion_real(double total, const uint32_t *weights, size_t n, double *out);

enum cl_load_mode { CL_MODE_CONCURRENCY = 0, CL_MODE_RATE = 1 };
enum cl_arrival { CL_ARRIVAL_CONSTANT = 0, CL_ARRIVAL_POISSON = 1, CL_ARRIVAL_GAMMA = 2 };

/* Which OpenAI-compatible API the requests use (scenario workload.api, docs/scenario.md). */
enum cl_api {
	CL_API_CHAT = 0,        /* POST {base}/chat/completions, streamed chunks */
	CL_API_COMPLETIONS = 1, /* POST {base}/completions, streamed choices[].text */
	CL_API_RESPONSES = 2,   /* POST {base}/responses, streamed semantic events */
	CL_API_EMBEDDINGS = 3,  /* POST {base}/embeddings, one JSON answer, not streamed */
	CL_API_MESSAGES = 4,    /* POST {base}/messages (Anthropic), streamed events */
	CL_API_RERANK = 5,      /* POST {base}/rerank: a query and N documents, one JSON answer */
	CL_API_SCORE = 6,       /* POST {base}/score: text_1 against each text_2, one JSON answer */
	CL_API_TRANSCRIPTION = 7, /* POST {base}/audio/transcriptions, multipart upload; one JSON
				   * answer or streamed text deltas (workload.audio.stream) */
	CL_API__COUNT
};

/* "chat", "completions", "responses", "embeddings", "messages", "rerank", "score",
 * "transcription"; NULL when out of range. */
const char *cl_api_name(enum cl_api a);
/* The endpoint after the base URL: "/chat/completions", "/completions", ...; NULL when out
 * of range. */
const char *cl_api_path(enum cl_api a);
/* Whether the API streams its answer by default (every one but embeddings, rerank, score and
 * transcription, whose body says: workload.audio.stream). */
bool cl_api_streams(enum cl_api a);
/* Whether the API scores documents against a query (rerank, score): a request is a query
 * and N documents (workload.documents), its answer one relevance score per document. */
bool cl_api_scores(enum cl_api a);

const char *cl_load_mode_name(enum cl_load_mode m);
const char *cl_arrival_name(enum cl_arrival a);

#define CL_HTTP2_DEFAULT_STREAMS 100u   /* streams per HTTP/2 connection unless set */
#define CL_HTTP2_MAX_STREAMS     10000u /* the most target.http2_streams_per_connection */

/* Several endpoints (target.urls): how the engine picks one for each request
 * (docs/engine.md, "Several endpoints"). */
enum cl_route {
	CL_ROUTE_ROUND_ROBIN = 0,       /* in turn, per agent */
	CL_ROUTE_LEAST_OUTSTANDING = 1, /* the one with the fewest requests in flight, per agent */
	CL_ROUTE_SESSION_HASH = 2,      /* by a hash of the conversation (or request) id */
	CL_ROUTE__COUNT
};
#define CL_ENDPOINTS_MAX 64 /* target.urls holds at most this many */

/* "round_robin", "least_outstanding", "session_hash"; NULL when out of range. */
const char *cl_route_name(enum cl_route r);

/* Where requests go and how they are sent.  Strings are owned (freed by cl_target_plan_free). */
struct cl_target_plan {
	char *base_url;    /* e.g. "http://127.0.0.1:8000/v1" (no trailing slash) */
	char *model;       /* model name put in every request body */
	char *api_key_env; /* env var holding the key on the agent host; NULL: none */
	char **headers;    /* extra "Name: value" headers */
	size_t n_headers;
	bool http2;             /* speak HTTP/2 (docs/engine.md, "HTTP/2") */
	bool http2_fallback;    /* ... but HTTP/1.1 is allowed when the server lacks it */
	uint32_t http2_streams; /* streams per connection; 0 = CL_HTTP2_DEFAULT_STREAMS */
	bool tls_verify;        /* default true */
	char *ca_file;
	int64_t connect_timeout_us;
	enum cl_api api; /* default CL_API_CHAT */
	/* --- several endpoints (target.urls) --- */
	/* Every endpoint's base URL, endpoints[0] == base_url; n_endpoints 0 (one endpoint,
	 * base_url) or 2..CL_ENDPOINTS_MAX.  Each has the same model, key, headers and TLS. */
	char **endpoints;
	size_t n_endpoints;
	enum cl_route route;
	/* --- end of several endpoints --- */
};

/* One load level for one agent (the coordinator's share) or one worker (the agent's). */
/* The most streams one stage (a warmup, a search level, an open-loop cap) may ask for over
 * all its agents: the one bound of a concurrency, which the scenario loader and the wire
 * decoder both hold.  Whether the agents can carry it is another question, asked by the
 * run's setup (their slots and descriptors) and each engine (its workers' slots). */
#define CL_PLAN_CONCURRENCY_MAX 1000000u

struct cl_stage_plan {
	uint32_t index;
	char *name;
	enum cl_load_mode mode;
	uint32_t concurrency; /* closed loop: streams in flight; rate mode: cap, 0 = none */
	double rate_per_s;    /* rate mode only */
	enum cl_arrival arrival;
	double gamma_shape;       /* gamma arrivals: shape k (CV^2 = 1/k); k<1 is burstier */
	int64_t duration_us;      /* measured window; 0 when bounded by requests */
	uint64_t requests;        /* requests to start; 0 when bounded by duration */
	int64_t ramp_us;          /* linear ramp of concurrency (or rate) from ramp_from */
	uint32_t ramp_from;       /* concurrency at the start of the ramp */
	int64_t drain_timeout_us; /* after the window, in-flight requests may finish this long */
	uint64_t seed;            /* arrival RNG seed (per stage and share) */
};

/* A request body rendered once before the stage (no JSON building on the hot path). */
struct cl_request_body {
	char *json;
	size_t len;
	uint32_t prompt_chars;
	uint32_t max_tokens; /* the max_tokens this body asks for (0: it sets none) */
	/* Multi-turn (docs/scenario.md): turn k >= 1 of a conversation whose turns are
	 * consecutive bodies; 0 for a lone request.  json is the turn sent without history;
	 * the engine puts the history (earlier user turns and the answers it received) at byte
	 * hist_at, and json[hist_at, hist_at + user_len) is this turn's user message object,
	 * which the history of the next turns repeats. */
	uint32_t turn;
	uint32_t hist_at;
	uint32_t user_len;
	/* Trace replay: when to start, µs after the stage's start (already divided by the
	 * speedup); only with cl_workload_plan.trace_stride. */
	int64_t at_us;
	/* Embeddings: the inputs this body sends (workload.embedding_batch); rerank and score:
	 * the documents it sends after its query; 0 otherwise. */
	uint32_t inputs;
	/* Transcription, on the agent only (not on the wire): json travels as a description
	 * (chatload/audio.h) and the engine replaces it with the multipart form it renders;
	 * audio_ms is the length of the audio the form uploads, whole says the answer is one
	 * JSON document (stream false), not SSE. */
	uint32_t audio_ms;
	bool whole;
	/* Request classes (workload.classes): the index of this body's class in
	 * cl_workload_plan.classes (0 without classes).  Its model, priority, length and extra
	 * keys are in json already; the agent adds the class's headers and counts it apart. */
	uint32_t cls;
	/* The coordinator's own, never sent: json names a model of its own (its class's), which
	 * the model the readiness gate finds does not replace. */
	bool own_model;
};

/* One request class as an agent needs it: its name (for messages) and the header lines its
 * requests carry. */
#define CL_CLASSES_MAX 16
struct cl_class_plan {
	char *name;
	char **headers; /* "Name: value" */
	size_t n_headers;
};

/*
 * The request bodies an agent sends, in order.  A workload too large for one message travels
 * in parts (docs/protocol.md, BODIES): PREPARE carries bodies [0, n_bodies) and says
 * total_bodies; the rest follow.  The warmup starts at body first_body and every stage goes
 * on where the one before it stopped (per_stage: every stage starts at first_body again),
 * wrapping around.  The coordinator gives agent i of n the bodies [i × total / n, (i + 1) ×
 * total / n): first_body is where that share begins and share its length, so no body is sent
 * twice in a run until an agent has gone through its share (docs/engine.md, "Which body").
 */
struct cl_workload_plan {
	struct cl_request_body *bodies;
	size_t n_bodies;
	int64_t request_timeout_us;
	uint32_t max_tokens;
	size_t total_bodies;   /* bodies in the whole workload; 0 means n_bodies (all here) */
	size_t first_body;     /* index of the body each stage starts with (< the total) */
	int64_t think_time_us; /* multi-turn: pause between an answer and the next turn */
	/* Trace replay: 0 for none; else this agent sends bodies first_body, first_body +
	 * trace_stride, ... once each, each at its at_us (the agents' shares interleave). */
	uint32_t trace_stride;
	/* Bodies in this agent's share, from first_body on; 0 means all of them.  A request
	 * whose body lies past it (or before where the stage began, per_stage) is counted
	 * `repeated`: the run has sent that body already. */
	size_t share;
	bool per_stage; /* workload.order: per_stage, each stage starts again at first_body */
	/* A list of prompts, or synthetic prompts without a pool (no synthetic.count): the run's
	 * salt (chatload/salt.h), which every body carries as "[<salt>] "; a request past the
	 * agent's share sends its body with those digits replaced by a tag of its own (from the
	 * salt, first_body and its index), so no two requests of the run send one prompt.  "" for
	 * none.
	 */
	char retag[16];
	/* The agentic loop (workload.tools with multi_turn; docs/engine.md, "Tool calls"): when
	 * tool_result_tokens is not 0, an answer that is a tool call is followed by a tool
	 * result of about that many tokens and the same question again, up to tool_max_rounds
	 * times in a turn (at most CL_TOOL_MAX_ROUNDS). */
	uint32_t tool_result_tokens;
	uint32_t tool_max_rounds;
	/* Abandoned requests (workload.cancel; docs/engine.md, "Abandoned requests"): the
	 * share of requests, in parts per million (0: none), that the client closes at a point
	 * of their own: cancel_after_tokens tokens received, or a delay after the request was
	 * handed to libcurl, cancel_after_us or, when cancel_after_max_us is above it, drawn
	 * uniformly from [cancel_after_us, cancel_after_max_us].  Which requests, and their
	 * delays, follow from cancel_seed (chatload/cancel.h). */
	uint32_t cancel_ppm;
	uint32_t cancel_after_tokens;
	int64_t cancel_after_us, cancel_after_max_us;
	uint64_t cancel_seed;
	/* Request classes (workload.classes): none (NULL, 0), or 1..CL_CLASSES_MAX; each body's
	 * cls indexes them, and the agent's metrics get one record per class. */
	struct cl_class_plan *classes;
	size_t n_classes;
};

#define CL_CANCEL_PPM_MAX 1000000u

/*
 * Whether a party's k-th request (0-based, in the order it starts them) is one the client
 * abandons (workload.cancel), and if so when: *after_us gets its delay after being handed to
 * libcurl (0 when it is cancelled by tokens, cancel_after_tokens).  The choice apportions
 * exactly: request k is picked when floor((k + 1) x ppm + phase) / 10^6 passes a whole number,
 * the phase drawn from cancel_seed, so any n consecutive requests hold floor or ceil of
 * n x share picked ones, and a run repeated with the seed picks the same ones.  A uniform
 * delay is drawn from the seed and k.  Pure; false without cancel_ppm.
 */
bool cl_cancel_pick(const struct cl_workload_plan *w, uint64_t k, int64_t *after_us);

#define CL_TOOL_MAX_ROUNDS        64
#define CL_TOOL_MAX_RESULT_TOKENS 100000

/* Frees owned strings/arrays; safe on zeroed and partly filled structures. */
void cl_target_plan_free(struct cl_target_plan *t);
void cl_stage_plan_free(struct cl_stage_plan *s);
void cl_workload_plan_free(struct cl_workload_plan *w);

/*
 * Splits one stage among n parties with the given weights (worker counts): concurrency,
 * requests and rate cap apportioned exactly, rate split proportionally, ramp_from too.
 * out[i] gets deep copies (name duplicated); seeds are made distinct per share.
 * A party's share never asks the impossible: in concurrency mode requests and ramp_from
 * follow the concurrency shares (a party with 0 streams gets 0 requests, ramp_from never
 * exceeds a party's concurrency); in rate mode with a cap, a party whose cap share is 0 gets
 * rate 0 (a 0 cap would otherwise read as "no cap").  CL_EINVAL (n == 0, NULL), CL_ENOMEM;
 * on failure out holds nothing to free.
 */
int cl_stage_plan_split(const struct cl_stage_plan *stage, const uint32_t *weights, size_t n,
			struct cl_stage_plan *out);

#endif
