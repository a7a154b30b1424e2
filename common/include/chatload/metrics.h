/* The measurement record: every histogram and counter one agent worker fills for one stage
 * (or one interval of it), mergeable exactly and carried on the wire as a delta (its msgpack form
 * is in chatload/metrics_wire.h). */
#ifndef CHATLOAD_METRICS_H
#define CHATLOAD_METRICS_H

#include "chatload/err.h"
#include "chatload/hist.h"

#include <stddef.h>
#include <stdint.h>

/* Latency histograms, values in microseconds (DESIGN §4 defines each). */
enum cl_lat {
	CL_LAT_QUEUE,     /* intended start -> handed to libcurl (dispatch lag) */
	CL_LAT_TTFB,      /* sent -> response headers */
	CL_LAT_TTFT,      /* sent -> first token-bearing chunk (reasoning or content) */
	CL_LAT_TTFC,      /* sent -> first content-bearing chunk */
	CL_LAT_ITL,       /* gap between consecutive token-bearing chunks (per chunk) */
	CL_LAT_TPOT,      /* (e2e - ttft) / (output_tokens - 1), per request */
	CL_LAT_E2E,       /* sent -> last token chunk */
	CL_LAT_E2E_SCHED, /* intended start -> last token chunk */
	CL_LAT_LOOP_LAG,  /* event-loop lag: timer due -> timer handled (client health) */
	/* Where the time to the first byte went, from libcurl's own timers (docs/engine.md,
	 * "Where the time went"); a reused connection spends none on the first three. */
	CL_LAT_DNS,     /* name lookup (CURLINFO_NAMELOOKUP_TIME_T) */
	CL_LAT_CONNECT, /* lookup done -> TCP connected (CONNECT_TIME_T - NAMELOOKUP_TIME_T) */
	CL_LAT_TLS,     /* connected -> TLS handshake done (APPCONNECT_TIME_T - CONNECT_TIME_T) */
	CL_LAT_SEND,    /* connection ready -> request written (PRETRANSFER_TIME_T - the last) */
	/* TTFT split in three on the engine's clock, adding up to it: the client's connection
	 * time (handed to libcurl -> libcurl about to send the request: its start, lookup,
	 * connect, TLS), the server's wait (-> the answer's status line) and first byte ->
	 * first token */
	CL_LAT_TTFT_CONNECTION,
	CL_LAT_TTFT_SERVER_WAIT,
	CL_LAT_TTFT_AFTER_FIRST_BYTE,
	/* TTFT by a multi-turn conversation's turn index: turn 1 .. CL_TURNS_MAX, the last one
	 * collecting every later turn too (2 significant digits: they are many) */
	CL_LAT_TTFT_TURN1,
	CL_LAT_TTFT_TURN_LAST = CL_LAT_TTFT_TURN1 + 7,
	CL_LAT__COUNT
};

/* Count histograms (tokens), values are plain counts. */
enum cl_cnt {
	CL_CNT_TOKENS_PER_CHUNK, /* tokens carried by each token-bearing chunk */
	CL_CNT_OUTPUT_TOKENS,    /* output tokens per completed request */
	CL_CNT_REASONING_TOKENS, /* reasoning tokens per completed request */
	CL_CNT_PROMPT_TOKENS,    /* prompt tokens per completed request (from usage) */
	CL_CNT_REQUESTED_TOKENS, /* max_tokens each completed request asked for */
	CL_CNT_RTF_MILLI,        /* transcription: each completed request's real-time factor,
				  * its e2e over its audio's length, in thousandths */
	CL_CNT__COUNT
};

/* Counters.  Errors are by class (DESIGN §4); tokens are counted as received. */
enum cl_ctr {
	CL_CTR_STARTED,   /* requests handed to libcurl */
	CL_CTR_COMPLETED, /* ended with [DONE] (or clean end) and no error */
	CL_CTR_CUT,       /* cancelled at the end of the stage after drain (not errors) */
	CL_CTR_ERR_CONNECT,
	CL_CTR_ERR_TLS,
	CL_CTR_ERR_HTTP_4XX, /* 4xx other than 429 */
	CL_CTR_ERR_HTTP_429,
	CL_CTR_ERR_HTTP_5XX,
	CL_CTR_ERR_TIMEOUT,
	CL_CTR_ERR_STREAM_MALFORMED,
	CL_CTR_ERR_STREAM_INCOMPLETE, /* ended without [DONE] */
	CL_CTR_ERR_STREAM_ERROR,      /* the server said the request failed, in any dialect */
	CL_CTR_ERR_EMPTY_ANSWER,      /* a 2xx stream that ended carrying no token of any kind,
				       * no finish_reason and no usage */
	CL_CTR_ERR_OTHER,
	CL_CTR_OUTPUT_TOKENS,    /* output tokens received (usage-corrected at request end) */
	CL_CTR_REASONING_TOKENS, /* of which reasoning */
	CL_CTR_PROMPT_TOKENS,
	CL_CTR_CHUNKS,              /* token-bearing chunks received */
	CL_CTR_BYTES,               /* response body bytes received */
	CL_CTR_USAGE_FROM_SERVER,   /* completed requests whose counts came from `usage` */
	CL_CTR_USAGE_FROM_CHUNKS,   /* completed requests whose counts came from counting chunks */
	CL_CTR_GOOD,                /* completed requests meeting every per-request SLO (goodput) */
	CL_CTR_COMPLETED_IN_WINDOW, /* requests (any start) that completed inside the window: the
				     * throughput numerator, like the tokens received in it */
	CL_CTR_REQUESTED_TOKENS,    /* max_tokens asked for, summed over completed requests */
	CL_CTR_REQUESTED_RECEIVED,  /* output tokens those same requests received: the ratio of
				     * the two shows a server that stops before max_tokens */
	CL_CTR_SHORT_OUTPUT,        /* completed requests that received fewer than they asked */
	CL_CTR_COMPLETED_H1,        /* completed requests answered over HTTP/1.x (libcurl's
				     * CURLINFO_HTTP_VERSION of the transfer) */
	CL_CTR_COMPLETED_H2,        /* ... over HTTP/2 */
	CL_CTR_CONNECTIONS_OPENED,  /* connections the requests opened (CURLINFO_NUM_CONNECTS);
				     * reused ones count nothing */
	CL_CTR_NO_CONTENT,          /* completed requests that carried no content token (e.g. a
				     * thinking model cut by max_tokens inside its reasoning) */
	CL_CTR_REPEATED, /* measured requests whose body (conversation) the run had sent before */
	CL_CTR_WINDOW_SHARE_MILLI,  /* completed requests (any start), each counted in milli-
				     * requests by the share of its tokens inside the window:
				     * the request rate's numerator (docs/results.md) */
	CL_CTR_RESENT,              /* requests sent a second time, on a fresh connection, after
				     * the reused one was found closed (the server's earlier close) */
	CL_CTR_SHORT_FINISH_STOP,   /* short outputs (CL_CTR_SHORT_OUTPUT) whose finish_reason
				     * was "stop" (an end of sequence or a stop string) */
	CL_CTR_SHORT_FINISH_LENGTH, /* ... "length" (a cap of the server's below max_tokens) */
	CL_CTR_SHORT_FINISH_OTHER,  /* ... any other value; none given is the rest */
	/* multi-turn, per turn index as CL_LAT_TTFT_TURN1..: completed requests and their
	 * prompt tokens (from usage) */
	CL_CTR_TURN1_COMPLETED,
	CL_CTR_TURN_LAST_COMPLETED = CL_CTR_TURN1_COMPLETED + 7,
	CL_CTR_TURN1_PROMPT_TOKENS,
	CL_CTR_TURN_LAST_PROMPT_TOKENS = CL_CTR_TURN1_PROMPT_TOKENS + 7,
	CL_CTR_CACHED_PROMPT_TOKENS, /* usage.prompt_tokens_details.cached_tokens of completed
				      * requests: the prompt the server's prefix cache served */
	CL_CTR_EMBEDDING_INPUTS,     /* embeddings: inputs (vectors answered) of completed
				      * requests */
	CL_CTR_TOOL_CALLS, /* completed requests whose answer was a tool call (a tool_calls delta)
			    */
	CL_CTR_CANCELLED,  /* abandoned by the client at the point workload.cancel chose (not
			    * completed, not errors, not cut) */
	CL_CTR_DOCUMENTS,  /* rerank, score: documents sent by completed requests (each scored) */
	CL_CTR_AUDIO_MS,   /* transcription: milliseconds of audio uploaded by completed requests */
	CL_CTR__COUNT
};

#define CL_TURNS_MAX 8 /* turn indexes told apart in the metrics; later turns count as the last */
_Static_assert(CL_LAT_TTFT_TURN_LAST - CL_LAT_TTFT_TURN1 + 1 == CL_TURNS_MAX, "turn histograms");
_Static_assert(CL_CTR_TURN_LAST_COMPLETED - CL_CTR_TURN1_COMPLETED + 1 == CL_TURNS_MAX, "turns");

#define CL_CTR_FIRST_ERROR     CL_CTR_ERR_CONNECT
#define CL_CTR_LAST_ERROR      CL_CTR_ERR_OTHER
#define CL_ERR_SAMPLES_MAX     4
#define CL_ERR_SAMPLE_BODY_MAX 256

/* One kept error: its class (an enum cl_ctr error value), HTTP status (0 if none) and the
 * first bytes of the body or message, NUL-terminated. */
struct cl_err_sample {
	int32_t ctr;
	int32_t http_status;
	char body[CL_ERR_SAMPLE_BODY_MAX];
};

/*
 * Client health gauges for one interval, per agent.  Merging takes the max of each
 * (the worst agent decides whether a stage was client-bound).
 */
struct cl_health {
	double cpu_pct;          /* process CPU over the interval, 100 = one core */
	double cpu_pct_capacity; /* cores the agent may use * 100 */
	int64_t rss_bytes;
	int64_t inflight; /* streams in flight at the end of the interval (summed on merge) */
};

/* One endpoint's share of a record, with several endpoints (target.urls): the counters of
 * cl_ctr (every one recorded for the whole record is recorded here too for the endpoint the
 * request went to) and two latency histograms. */
enum cl_ep_lat { CL_EP_LAT_TTFT, CL_EP_LAT_ITL, CL_EP_LAT__COUNT };
#define CL_METRICS_EPS_MAX 64 /* endpoints a record holds at most (= CL_ENDPOINTS_MAX) */
struct cl_ep_metrics {
	struct cl_hist lat[CL_EP_LAT__COUNT];
	uint64_t ctr[CL_CTR__COUNT];
};

#define CL_METRICS_CLASSES_MAX 16 /* request classes a record holds at most (CL_CLASSES_MAX) */

struct cl_metrics {
	struct cl_hist lat[CL_LAT__COUNT];
	struct cl_hist cnt[CL_CNT__COUNT];
	uint64_t ctr[CL_CTR__COUNT];
	struct cl_health health;
	uint32_t n_err_samples;
	struct cl_err_sample err_samples[CL_ERR_SAMPLES_MAX];
	/* Per endpoint (target.urls): none (NULL, 0) with one endpoint.  Allocated by
	 * cl_metrics_eps_init, or grown by a merge or decode that brings more; kept by reset. */
	struct cl_ep_metrics *eps;
	uint32_t n_eps;
	/* Per request class (workload.classes): none (NULL, 0) without classes.  Each is a whole
	 * record of its own (with neither endpoints nor classes), so a class has every figure a
	 * stage has, merged and carried the way the record is.  Allocated by
	 * cl_metrics_cls_init, or grown by a merge or decode that brings more; kept by reset. */
	struct cl_metrics *cls;
	uint32_t n_cls;
};

/* Stable snake_case names used on the wire and in results ("ttft", "tokens_per_chunk",
 * "err_http_5xx"...).  Index out of range -> NULL. */
const char *cl_lat_name(int i);
const char *cl_cnt_name(int i);
const char *cl_ctr_name(int i);
/* Reverse lookups; -1 when unknown. */
int cl_lat_from_name(const char *name);
int cl_cnt_from_name(const char *name);
int cl_ctr_from_name(const char *name);

/* Histogram configuration of each kind: latencies 1 us .. 1 h, counts 1 .. 10^7; 3 digits. */
const struct cl_hist_cfg *cl_metrics_lat_cfg(void);
const struct cl_hist_cfg *cl_metrics_cnt_cfg(void);

/* Allocates every histogram (fixed memory, a few MiB).  On failure leaves m destroyable. */
CL_MUST_CHECK int cl_metrics_init(struct cl_metrics *m);
/* Frees; safe on zeroed and partly initialised records. */
void cl_metrics_destroy(struct cl_metrics *m);
/* Zeroes all values, keeping memory (O(size of the histograms)). */
void cl_metrics_reset(struct cl_metrics *m);
/* cl_metrics_reset, and every histogram's pages given back (cl_hist_trim): for a record
 * reused for hours, now and then, so rare values do not keep their pages resident. */
void cl_metrics_trim(struct cl_metrics *m);
/* dst += src exactly: histograms merged, counters added, health maxed (inflight summed),
 * error samples appended up to the cap. */
CL_MUST_CHECK int cl_metrics_merge(struct cl_metrics *dst, const struct cl_metrics *src);
/* Makes m hold at least n endpoint records (n <= CL_METRICS_EPS_MAX); those it had keep their
 * values.  0, CL_EINVAL (n too large), CL_ENOMEM (m unchanged). */
CL_MUST_CHECK int cl_metrics_eps_init(struct cl_metrics *m, uint32_t n);
/* Makes m hold at least n class records (n <= CL_METRICS_CLASSES_MAX); those it had keep their
 * values.  0, CL_EINVAL (n too large, or m is itself a class record), CL_ENOMEM (m unchanged). */
CL_MUST_CHECK int cl_metrics_cls_init(struct cl_metrics *m, uint32_t n);
/* Name of an endpoint histogram: "ttft", "itl"; NULL out of range. */
const char *cl_ep_lat_name(int i);
/* Keeps an error sample if fewer than CL_ERR_SAMPLES_MAX are kept (truncates body). */
void cl_metrics_add_err_sample(struct cl_metrics *m, int ctr, int http_status, const char *body,
			       size_t body_len);

#endif
