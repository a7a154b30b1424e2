/* The engine's private structures: the engine, its workers, their stream slots and stage
 * state, shared by engine.c (control), worker.c (event loop), stage.c (a stage's phases), the
 * load models (load/), request.c and the rest of the engine's files. */
#ifndef CHATLOAD_ENGINE_INTERNAL_H
#define CHATLOAD_ENGINE_INTERNAL_H

#include "chatload/err.h"
#include "arrival.h"
#include "backoff.h"
#include "engine.h"

#include "client/http/handle.h"
#include "client/stream/sse.h"

#include "chatload/buf.h"
#include "chatload/clock.h"
#include "chatload/metrics.h"
#include "chatload/plan.h"
#include "chatload/stall.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define CL_ENGINE_MAX_EVENT_BYTES (64u * 1024u)  /* one SSE event larger is stream_malformed */
#define CL_ENGINE_LOG_BUF         (64u * 1024u)  /* per-worker request log buffer */
#define CL_ENGINE_PROBE_US        10000          /* loop-lag probe period */
#define CL_ENGINE_SLOT_IDLE_US    (15 * 1000000) /* a free slot unused this long is shed */
#define CL_ENGINE_EPOLL_BATCH     256
#define CL_ENGINE_REQID_MAX       128
#define CL_ENGINE_SHARD_SLOTS     256 /* HTTP/1.1 streams per libcurl multi handle */
#define CL_ENGINE_DONE_GRACE_US                                                                    \
	100000 /* a framed body still open this long after [DONE]                                  \
		* is ended by the engine (see request.c) */
#define CL_NO_SLOT UINT32_MAX
#define CL_ENGINE_MAX_HISTORY                                                                      \
	(16u << 20) /* a conversation's history at most (a turn's body: its own                    \
		     * JSON, at most 16 MiB on the wire, plus the history) */
#define CL_ENGINE_MAX_ANSWER (4u << 20)  /* one answer kept for the history at most */
#define CL_ENGINE_MAX_WHOLE  (64u << 20) /* one embeddings answer (not streamed) at most */
#define CL_ENGINE_TOOL_CALLS 4           /* tool calls of one answer kept for the agentic loop */
#define CL_ENGINE_MAX_TOOL_ARGS                                                                    \
	(64u << 10) /* one tool call's arguments kept at most; more ends the conversation */

/* One tool call of an answer as it streams (docs/engine.md, "Tool calls"): id and function
 * name raw (still JSON-escaped, as received), arguments assembled from their fragments. */
struct cli_tool_call {
	char id[96];
	char name[96];
	struct cl_buf args;
};

struct cl_worker;
struct cl_chunk;
struct cli_load_model;

/*
 * One libcurl multi handle with its own connection cache.  A worker spreads its slots over
 * several: libcurl 7.88 walks every cached connection to the host each time a request
 * starts (ConnectionExists), so one cache of thousands of connections costs O(N) per
 * request; shards of CL_ENGINE_SHARD_SLOTS keep that walk short.  All shards share the
 * worker's epoll fd and curl timerfd.  With HTTP/2 a shard holds a whole number of
 * connections' streams (cl_httpver_shard_slots), so its connections fill up.
 */
struct cl_shard {
	struct cl_worker *w;
	CURLM *multi;
	uint32_t index;
	int64_t due_us; /* when curl wants socket_action(TIMEOUT); INT64_MAX none */
	bool kick;      /* curl asked for a timeout "now" */
	bool dirty;     /* curl ran on it this turn: look for finished transfers */
};

/* One stream slot: everything a request needs, prepared once and reused. */
struct cl_slot {
	CURL *easy; /* NULL until first used (prepared lazily, kept while in use: idle.c) */
	struct cl_worker *w;
	struct cl_shard *shard;
	uint32_t index;
	bool busy;
	bool in_window;     /* intended start inside the measured window: its latencies count */
	uint32_t requested; /* max_tokens its body asks for (0: none) */
	bool parked;        /* waiting out the no-answer backoff (not in curl, not free) */
	uint32_t no_answer_streak; /* consecutive requests of this slot that got no answer */
	int64_t freed_us;          /* when it last went back to the free stack (idle.c) */

	/* one request's record (reset when the slot is taken) */
	uint64_t seq;
	int64_t intended_us;      /* when the load model wanted it to start */
	int64_t handed_us;        /* curl_multi_add_handle: "sent" for every latency */
	int64_t sent_us;          /* libcurl about to write it on a connected socket (the end of
				   * TTFT's connection part) */
	int64_t headers_us;       /* the final response's status line arrived */
	int64_t first_us;         /* first token-bearing chunk */
	int64_t first_content_us; /* first content chunk */
	int64_t last_us;          /* latest token-bearing chunk */
	struct cl_conn_times ct;  /* libcurl's timers of the transfer, read at its end */
	long connects;            /* connections it opened (CURLINFO_NUM_CONNECTS), at its end */
	int http_status;
	bool framed;               /* the body can end by itself: chunked, Content-Length or h2
				    * (false: an HTTP/1 body delimited by the connection's close) */
	bool done_seen;            /* data: [DONE] */
	bool closed_at_done;       /* the engine ended the transfer at [DONE], dropping the
				    * connection (close-delimited body, or the grace passed) */
	int64_t done_us;           /* when [DONE] arrived */
	uint32_t ad_prev, ad_next; /* links in the worker's after-[DONE] list */
	bool in_after_done;
	uint32_t attempts; /* times libcurl was about to send it (PREREQFUNCTION); more
			    * than one: re-sent on a fresh connection */
	bool fresh_resent; /* the engine itself re-sent it on a fresh connection */
	uint8_t finish;    /* the finish_reason seen: enum cli_finish */
	bool reset_easy;   /* reset the easy handle before its next request */
	const struct cl_request_body *body;
	bool h1_refused;         /* answered over HTTP/1.x while HTTP/2 is required: aborted */
	int err_ctr;             /* class decided while streaming (malformed, stream error), 0 */
	int err_code;            /* the code a stream_error's server gave, 0 when none */
	uint32_t n_tok_chunks;   /* token-bearing chunks */
	uint32_t n_prov_chunks;  /* ... whose token count was not told by usage (counted 1) */
	int64_t tok_exact;       /* tokens of the other chunks, from cumulative usage deltas */
	int64_t last_ct;         /* last cumulative completion_tokens seen on a token chunk */
	int64_t tok_counted;     /* tokens added to CL_CTR_OUTPUT_TOKENS-style running count */
	int64_t tok_counted_win; /* ... of which received inside the window */
	int64_t rtok_counted, rtok_counted_win;    /* the same for reasoning tokens */
	int64_t usage_ct, usage_rt, usage_pt;      /* last usage seen, -1 absent */
	bool usage_seen;                           /* a usage object came, whatever it held */
	int64_t usage_cached;                      /* its prompt_tokens_details.cached_tokens */
	int64_t timings_cache_n, timings_prompt_n; /* llama.cpp's timings (-1: not said) */
	uint64_t bytes;
	size_t sample_len;
	char sample[CL_ERR_SAMPLE_BODY_MAX]; /* first bytes of an error body / bad event */

	struct cl_sse_parser sse;
	/* Embeddings: the answer is one JSON document, kept whole until the transfer ends and
	 * then decoded once (cli_request_whole_end).  Grows to the largest answer, then reused. */
	struct cl_buf whole;
	uint32_t embed_inputs;   /* vectors the answer held */
	uint32_t documents;      /* rerank, score: documents the answered request sent */
	struct curl_slist *hdrs; /* header nodes owned by the slot, data shared (see request.c) */
	char reqid[CL_ENGINE_REQID_MAX]; /* "X-Request-Id: <prefix>-<worker>-<seq>" */
	uint32_t src; /* the source address its connections bind to (engine's src_iface) */
	char errbuf[CURL_ERROR_SIZE];

	/* What libcurl sends: body->json, or for a conversation's turn the body with its
	 * history spliced in (conv_req) */
	const char *post;
	size_t post_len;
	/* Multi-turn (docs/engine.md, "Conversations"): the conversation this slot carries.
	 * Buffers grow to the longest conversation and are then reused. */
	size_t conv_body;        /* index of the turn being sent */
	bool conv_next;          /* parked for the think time: the next turn follows */
	bool repeated;           /* its body (its conversation) was sent before in this run */
	bool answer_cut;         /* this turn's answer outgrew conv_answer: the conversation ends */
	bool conv_live;          /* its conversation's later turns count in w->conv_owed */
	struct cl_buf conv_hist; /* earlier turns: message objects, each followed by ',' */
	struct cl_buf conv_answer; /* this turn's answer text, still JSON-escaped */
	struct cl_buf conv_req;    /* the body sent */
	/* The agentic loop (tools.c): whether the answer is a tool call, its calls by index,
	 * the rounds of tool results in the current turn, whether the turn's user message is
	 * in the history already, and the request's 1-based place in its conversation. */
	bool tool_answer;
	bool tool_next; /* parked: the same turn again, after the tool results */
	bool user_in_hist;
	uint32_t n_tool_calls; /* calls seen (highest index + 1) */
	uint32_t tool_rounds;
	uint32_t conv_req_no;
	struct cli_tool_call tool[CL_ENGINE_TOOL_CALLS];

	/* --- several endpoints (target.urls) and conversation ids --- */
	uint32_t ep;                 /* the endpoint its request went to (0 with one) */
	uint32_t cls;                /* the request class of its body (0 without classes) */
	struct curl_slist *hdr_tail; /* the last of hdrs' nodes: a class's lines follow it */
	uint64_t conv_seq; /* seq of its conversation's first turn (the conversation's id) */
	char convid[CL_ENGINE_REQID_MAX]; /* "X-Chatload-Conversation: <prefix>-<w>-<seq>" */
	struct curl_slist conv_node;      /* the line above, linked after X-Request-Id */

	/* --- abandoned requests (cancel.c): when this request is closed by the client --- */
	int64_t cancel_at_us;   /* at this time (0: not by time) */
	uint32_t cancel_tokens; /* once this many tokens came (0: not by tokens) */
	bool cancelled;         /* it was: its class is CL_CTR_CANCELLED */
};

/* The part of one stage a worker runs (worker-thread state only). */
struct cl_stage_run {
	bool active;
	struct cl_stage_plan plan; /* this worker's share; name not kept */
	int64_t start_us, win_start_us, win_end_us, drain_deadline_us;
	bool by_requests;                   /* bounded by requests (else by duration) */
	uint64_t to_start;                  /* by_requests: measured requests still to start */
	bool stopping;                      /* stop() or window over: start nothing more */
	const struct cli_load_model *model; /* what starts requests (load/load_int.h) */
	/* the closed loop's (load/closed.c) */
	uint32_t users; /* virtual users begun (ramp levels reached) */
	/* the open loop's (load/open.c, rate.c, trace.c) */
	struct cl_arrivals arr;
	bool arrivals_over; /* no arrival will be started any more */
	uint64_t trace_k;   /* trace replay: this worker's next request */
	uint32_t cap;       /* in-flight cap (slots or the plan's cap) */
	int64_t retry_us;   /* a start failed: no start attempt before this */
	int64_t probe_due_us;
	/* Measured requests in flight: started inside the window (CL_CTR_STARTED), not yet
	 * ended as completed, an error class or cut.  Zero when the stage is done, which is
	 * started == completed + errors + cut + cancelled for this worker's share (asserted). */
	uint64_t win_open;
};

/* Commands from the control thread (bits in cl_worker.cmd). */
enum { CL_CMD_START = 1u, CL_CMD_STOP = 2u, CL_CMD_CUT = 4u, CL_CMD_QUIT = 8u };

struct cl_worker {
	struct cl_engine *e;
	uint32_t index;
	pthread_t thread;
	bool thread_started;
	int epfd, cmdfd, pacefd, curlfd, cancelfd;
	int64_t cancel_armed_us; /* what cancelfd is armed for; INT64_MAX disarmed */
	struct cl_shard *shards;
	uint32_t nshards;
	uint32_t shard_slots; /* slots per shard: slot i is in shard i / shard_slots */

	struct cl_slot *slots;
	uint32_t nslots;
	uint32_t *free_stack; /* indices of free slots, LIFO so warm handles are reused */
	uint32_t nfree;
	int64_t shed_due_us;        /* next look for slots idle long enough to shed (idle.c) */
	int64_t trim_again_us;      /* when to give back the pages of a shed burst's connections */
	struct cl_park_heap parked; /* slots waiting out the no-answer backoff (closed loop) */
	uint64_t backoff_rng;       /* splitmix64 state of the backoff jitter */

	struct cl_metrics mrec[2];
	struct cl_metrics *active; /* filled by the worker */
	struct cl_metrics *spare;  /* handed to the collector at a swap */

	/* control-thread handoff, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool sync_init;
	atomic_uint cmd;
	struct cl_stage_plan next_plan;
	int64_t next_start_us;
	double next_phase, next_r0;
	uint64_t collect_req; /* written by the collector, under mu */
	uint64_t collect_ack; /* written by the worker after a swap, under mu */
	atomic_bool collect_wanted;
	int64_t swap_cpu_us, swap_mono_us; /* the worker's clocks at the last swap */
	struct cl_stall_list stalls;       /* stalls of this worker's loop not yet taken */
	/* collector-side */
	bool collect_outstanding;
	int64_t prev_cpu_us, prev_mono_us;
	uint64_t collects; /* records taken: every so often the one taken is trimmed */

	atomic_int phase; /* enum cl_engine_state */
	atomic_int_fast64_t inflight;
	atomic_uint_fast64_t unsent_backlog, ramp_started, ramp_finished;
	atomic_uint_fast64_t loop_turns, socket_events;  /* epoll_wait returns, socket events */
	atomic_uint_fast64_t reconnects, closed_at_done; /* see cl_engine_stats */

	/* worker-thread state */
	struct cl_stage_run st;
	int64_t now_us;        /* when epoll_wait returned (loop bookkeeping, not data times) */
	int64_t recv_us;       /* receive time of the bytes being decoded (cli_on_body) */
	int64_t last_end_us;   /* when the latest request ended (closed-loop next start) */
	bool tick;             /* the stage logic has something to look at (a request ended, the
				* pace timer fired): run it this turn */
	int64_t curl_armed_us; /* what curlfd is armed for; INT64_MAX disarmed */
	bool curl_kick;        /* some shard asked for a timeout "now" */
	int64_t pace_armed_us;
	uint32_t ad_head, ad_tail; /* slots past [DONE] whose framed body has not ended yet,
				    * oldest first (CL_NO_SLOT: none) */
	uint64_t seq;
	/* Turns the conversations this worker carries have still to start after the ones they
	 * sent: a stage bounded by requests keeps that many of its budget for them, so a new
	 * conversation never takes the request a conversation in progress needs (conv.c). */
	uint64_t conv_owed;
	const struct cl_request_body *pick; /* trace replay: the body the next start sends */
	char *log_buf;
	size_t log_len;
};

struct cl_engine {
	uint32_t nworkers;
	uint32_t slots_per_worker;
	struct cl_worker *workers;

	struct cl_target_plan target;
	struct cl_workload_plan workload;
	/* Bodies handed out in the run, over all workers (per_stage: since the stage started):
	 * the k-th request the agent starts sends body (first_body + k) mod n, whichever worker
	 * starts it, so the warmup and the stages take the next bodies and no body is sent twice
	 * until the agent has gone through its share (docs/engine.md, "Which body"). */
	atomic_uint_fast64_t next_body;
	/* The most bodies handed out by any earlier stage (set when a stage starts): with
	 * per_stage, a k below it sends a body the run has sent already. */
	uint64_t taken_before;
	/* Multi-turn: where each conversation starts (bodies with turn 1), in order; the k-th
	 * conversation the agent starts is conv_starts[(first_conv + k) % n_convs]; conv_share
	 * of them start inside the agent's share of the bodies. */
	size_t *conv_starts;
	size_t n_convs, first_conv, conv_share;
	char *tool_result; /* the agentic loop's tool result text, JSON-safe (tools.c) */
	size_t tool_result_len;
	char prefix[CL_ENGINE_MAX_PREFIX + 1];
	/* Source addresses: CURLOPT_INTERFACE strings "host!ADDR", the connections opened from
	 * each, and the next one a slot takes (slots are prepared lazily, so they take them
	 * round-robin in the order they are first used). */
	size_t n_src;
	char (*src_iface)[CL_SRCADDR_TEXTMAX + 8];
	atomic_uint_fast64_t *src_conns;
	atomic_uint_fast32_t next_src;
	struct cl_http_target http; /* URL, header lines (key wiped at destroy), TLS, version:
				     * applied to every slot, read-only once built */
	int64_t good_ttft_us, good_tpot_us, good_e2e_us;
	/* --- several endpoints (target.urls): none (0) with one --- */
	uint32_t n_eps;
	struct cl_http_target *ep_http;      /* each endpoint's, built like http */
	atomic_int_fast64_t *ep_outstanding; /* requests in flight per endpoint */
	atomic_uint_fast64_t ep_turn;        /* requests routed so far */
	/* --- request classes (workload.classes): none (0) without them --- */
	uint32_t n_cls;
	struct curl_slist *cls_hdrs[CL_CLASSES_MAX]; /* each class's header nodes, or NULL */
	int log_fd;                                  /* -1: no request log */
	atomic_bool log_failed;
	/* output.requests (records.c): a ring of finished requests' records, NULL when not
	 * asked; rec_on while a stage (not a warmup) runs */
	struct cl_req_record *rec_ring;
	uint32_t rec_cap, rec_head, rec_len;
	uint64_t rec_dropped;
	pthread_mutex_t rec_mu;
	atomic_bool rec_on;
	/* workload.cancel: on while a stage (not a warmup) runs; the measured requests started
	 * so far, over all workers, numbering the draws of cl_cancel_pick */
	atomic_bool cancel_on;
	atomic_uint_fast64_t cancel_k;

	pthread_mutex_t mu; /* guards done_workers; cv signalled when a worker is DONE */
	pthread_cond_t cv;
	bool sync_init;
	uint32_t done_workers;
	bool started; /* a stage has been started at least once */
	pthread_mutex_t collect_mu;
	bool collect_mu_init;
};

/* worker.c */
/* Sets up w (fds, multi, slots, metrics); on failure w is left destroyable. */
CL_MUST_CHECK int cli_worker_init(struct cl_worker *w, struct cl_engine *e, uint32_t index,
				  uint32_t nslots, struct cl_err *err);
/* Frees what cli_worker_init made; the thread must have been joined.  Safe on zeroed. */
void cli_worker_destroy(struct cl_worker *w);
void *cli_worker_main(void *arg);
/* Wakes the worker for a command already posted in w->cmd / collect_req. */
void cli_worker_poke(struct cl_worker *w);
/* Cuts every request in flight (CL_CTR_CUT) and frees every parked slot. */
void cli_worker_cut_all(struct cl_worker *w);
/* Arms the pace timer for due_us (INT64_MAX: disarmed), unless it is armed for that already. */
void cli_worker_pace(struct cl_worker *w, int64_t due_us);

/* stage.c: one worker's part of a stage (worker thread) */
/* Begins the stage p (this worker's share) starting at start_us; phase_frac and r0 go to its
 * load model.  A worker with nothing to start is done at once. */
void cli_stage_begin(struct cl_worker *w, const struct cl_stage_plan *p, int64_t start_us,
		     double phase_frac, double r0);
/* Moves the stage on as of now: its phase, the model's starts, its end; re-arms the pace
 * timer for when it must look again. */
void cli_stage_tick(struct cl_worker *w);
/* Closes the window now and drains, or cuts at once with cut_now. */
void cli_stage_stop(struct cl_worker *w, bool cut_now);

/* park.c */
/* Takes back a slot whose request ended: parks it for the no-answer backoff when no_answer
 * and the closed loop runs, else frees it. */
void cli_worker_release(struct cl_worker *w, struct cl_slot *s, bool no_answer);
/* Puts s back on the free stack (its no-answer streak forgotten). */
void cli_slot_free(struct cl_worker *w, struct cl_slot *s);
/* Gives back the memory of slots idle for CL_ENGINE_SLOT_IDLE_US (idle.c); the worker's
 * thread calls it at a safe point. Returns how many slots it shed. */
uint32_t cli_worker_shed_idle(struct cl_worker *w, int64_t now_us);
/* Frees every parked slot: their users are over (window closed, stage cut or done). */
void cli_park_release_all(struct cl_worker *w);
/* The parked slot whose backoff ended first if by now_us (its wake time in *due_us), taken
 * off the heap; NULL when none is due.  The caller launches or frees it. */
struct cl_slot *cli_park_take_due(struct cl_worker *w, int64_t now_us, int64_t *due_us);
/* Sends the parked slots whose wait (a backoff, a think time) is over by now_us their next
 * request, intended at its wake; a slot that may not start any more is freed. */
void cli_park_wake_due(struct cl_worker *w, int64_t now_us);

/* request.c */
/* Prepares the slot's easy handle, header nodes and SSE parser once.  0 or CL_ENOMEM. */
int cli_slot_prepare(struct cl_slot *s);
void cli_slot_destroy(struct cl_slot *s);
/* Takes a free slot and hands a request to libcurl.  false when no slot could be used. */
bool cli_request_start(struct cl_worker *w, int64_t intended_us);
/* Hands an already taken slot (s->w set) a new request intended at intended_us.  false when
 * libcurl refused it (the caller still owns the slot). */
bool cli_request_launch(struct cl_worker *w, struct cl_slot *s, int64_t intended_us);
/* Takes the slot's transfer out of libcurl and counts what its connection did (re-sends on a
 * fresh connection, an end at [DONE]); a handle whose options changed is reset before reuse. */
void cli_request_detach(struct cl_worker *w, struct cl_slot *s);
/*
 * A transfer that libcurl ended with res: when nothing of an answer came back and the
 * request went out on a reused connection that had died (libcurl gave up re-sending it),
 * hands it to libcurl once more on a fresh connection and returns true (the slot stays
 * busy).  Otherwise false: the caller finishes the request.
 */
bool cli_request_resend(struct cl_worker *w, struct cl_slot *s, CURLcode res);
/* Completes the requests whose framed body is still open CL_ENGINE_DONE_GRACE_US after
 * their [DONE] (as of now_us); returns when the next one is due (INT64_MAX: none). */
int64_t cli_request_expire_done(struct cl_worker *w, int64_t now_us);

/* Times slot s's request was re-sent on a fresh connection. */
/* A stream's finish_reason, as far as telling why an answer was short needs. */
enum cli_finish { CLI_FINISH_NONE, CLI_FINISH_STOP, CLI_FINISH_LENGTH, CLI_FINISH_OTHER };

static inline uint32_t cl_slot_reconnects(const struct cl_slot *s)
{
	return s->attempts > 1 ? s->attempts - 1 : 0;
}
/* Appends the first bytes of an error body or a bad event to the slot's error sample (up to
 * its size; the rest is dropped). */
void cli_slot_keep_sample(struct cl_slot *s, const char *p, size_t n);

/* curl callbacks */
size_t cli_on_header(char *p, size_t size, size_t n, void *ud);
size_t cli_on_body(char *p, size_t size, size_t n, void *ud);
/* An answer that is one JSON document (embeddings, rerank, score; a transcription not
 * streamed) rather than an event stream. */
static inline bool cli_slot_whole(const struct cl_slot *s)
{
	enum cl_api api = s->w->e->http.api;
	return api == CL_API_EMBEDDINGS || cl_api_scores(api) ||
	       (api == CL_API_TRANSCRIPTION && s->body && s->body->whole);
}

/* Embeddings, rerank, score, a transcription not streamed (whole.c): decodes the whole
 * answer of a transfer that ended well (2xx, CURLE_OK): sets done_seen, the usage and
 * embed_inputs (or documents), or err_ctr and the sample when it is not an answer.  Called
 * once, by cli_request_finish, before the request is classified. */
void cli_request_whole_end(struct cl_slot *s);

/*
 * A streamed answer's transfer ended well (2xx, no class decided yet): ends the SSE parser
 * (cl_sse_finish), so a body that was one JSON document is judged now: an error in it is
 * stream_error with the server's message, anything else stream_malformed ("the server sent
 * one JSON document, not an event stream").
 */
void cli_request_stream_end(struct cl_slot *s);

/* finish.c */
/* Ends the slot's request: cut (CL_CTR_CUT) when cut, else classified from res; records it.
 * The slot then goes back to the free stack, is parked by cli_worker_release, or waits for its
 * conversation's next turn (cli_conv_follow). */
void cli_request_finish(struct cl_worker *w, struct cl_slot *s, CURLcode res, bool cut);

/* cancel.c */
/* Decides whether the request just handed to libcurl on s is one the client abandons
 * (workload.cancel) and arms its point: a time (the worker's cancel timer) or tokens. */
void cli_cancel_arm(struct cl_worker *w, struct cl_slot *s);
/* The cancel timer fired (or was due) at now_us: closes the requests whose time came, as
 * CL_CTR_CANCELLED, and re-arms the timer for the next one. */
void cli_cancel_expire(struct cl_worker *w, int64_t now_us);

/* records.c */
/* Allocates the ring of cap records.  0, CL_ENOMEM or CL_ESYS. */
CL_MUST_CHECK int cli_records_init(struct cl_engine *e, uint32_t cap);
/* Frees it (a no-op when never made). */
void cli_records_destroy(struct cl_engine *e);
/* Files slot s's finished request while recording is on; counts it dropped when the ring
 * is full.  Takes a short lock; allocates nothing. */
void cli_records_push(struct cl_worker *w, const struct cl_slot *s, const char *status,
		      int64_t end_us, int64_t tokens, int64_t rtokens, const char *msg,
		      size_t msg_len);

/* reqlog.c */
/* Writes the buffered request log lines. */
void cli_reqlog_flush(struct cl_worker *w);
/* Appends the request log line of slot s's finished request (reqlog.c); a no-op without a
 * request log.  msg (msg_len bytes) is the error sample, NULL for none. */
void cli_reqlog_write(struct cl_worker *w, const struct cl_slot *s, const char *status,
		      int64_t end_us, int64_t tokens, int64_t rtokens, bool from_usage,
		      long connects, int http_major, const char *msg, size_t msg_len);

/* audio.c */
/* Transcription: replaces every body's description with the multipart form it asks for,
 * setting its audio_ms and whole.  0, or an error naming the body (err filled). */
int cli_audio_forms(struct cl_engine *e, struct cl_err *err);

/* conv.c: which body a request sends (in order, a conversation's next turn, a trace's) */
/* Fills e->conv_starts from the workload's bodies (none: no conversations).  0, CL_ENOMEM. */
int cli_conv_index(struct cl_engine *e);
/* The body slot s sends next: its conversation's next turn when it is parked for one, else
 * the next conversation's first turn (or the next body without conversations); sets s->post
 * to what is sent (the body with the history spliced in).  NULL when the history does not
 * fit (CL_ENGINE_MAX_HISTORY) or memory ran out. */
const struct cl_request_body *cli_conv_pick(struct cl_worker *w, struct cl_slot *s);
/* Keeps a content chunk's text (len bytes, JSON-escaped) for the conversation's history. */
void cli_conv_on_content(struct cl_slot *s, const char *text, size_t len);
/* At the end of a turn: when it completed and its conversation goes on (and the stage
 * does), adds the turn and its answer to the history, parks s for the think time (woken
 * like a backoff, then cli_request_launch sends the next turn) and returns true.  false:
 * the caller releases the slot. */
bool cli_conv_follow(struct cl_worker *w, struct cl_slot *s, bool completed, int64_t now_us);
/* Ends the conversation slot s carries, if any: its turns not started leave conv_owed.  Called
 * when a turn is not followed and when the slot is freed. */
void cli_conv_end(struct cl_worker *w, struct cl_slot *s);
/* Whether a request intended at t_us may begin a new conversation: in a stage bounded by
 * requests, only while its budget holds more than the turns the conversations in progress
 * still owe (conv_owed); else a new conversation would take a turn they need, and the stage
 * would end with one of them cut short and an extra one begun (a prompt sent again). */
bool cli_conv_may_begin(const struct cl_worker *w, int64_t t_us);
/* Records a completed measured turn's TTFT and prompt tokens by its turn index. */
void cli_conv_record(struct cl_metrics *m, const struct cl_slot *s, int64_t prompt_tokens);

/* tools.c: tool calls and the agentic loop (docs/engine.md, "Tool calls") */
/* Makes e->tool_result, the synthetic tool result text (workload.tool_result_tokens words);
 * nothing without the loop.  0 or CL_ENOMEM. */
CL_MUST_CHECK int cli_tools_init(struct cl_engine *e);
/* Sets up and frees a slot's tool-call buffers. */
void cli_tools_slot_init(struct cl_slot *s);
void cli_tools_slot_free(struct cl_slot *s);
/* Forgets the answer's tool calls (a new request starts). */
void cli_tools_reset_answer(struct cl_slot *s);
/* Keeps a chunk's tool-call pieces for the loop (when it runs); marks the answer a tool
 * call.  A piece that does not fit ends the conversation (answer_cut). */
void cli_tools_on_chunk(struct cl_slot *s, const struct cl_chunk *c);
/* Appends the answer's assistant message with its tool_calls, then one role "tool" message
 * per call with the synthetic result, each followed by ','.  0 or CL_ENOMEM/CL_ETOOBIG
 * (the history is then as before). */
int cli_tools_add_history(struct cl_slot *s);

/* error_text.c */
/* Writes a failed request's error sample into out[n] (NUL-terminated): what happened in words
 * a user acts on, what to check, then the detail (body, event, libcurl's message).  cls is its
 * error class, res libcurl's result.  Returns the length. */
size_t cli_error_text(const struct cl_slot *s, int cls, CURLcode res, char *out, size_t n);

/*
 * The receive time of bytes libcurl hands a callback: the clock read on the spot (a vDSO
 * call, ~20 ns per read).  It is never earlier than the bytes' arrival, so measured times
 * err late only (by the wakeup and whatever the loop handled first), never early — an
 * earlier design stamped a whole epoll batch with its wakeup time, which is usually closer
 * but gives bytes that arrive while the batch is handled a time before they existed.
 */
static inline int64_t cl_stamp(const struct cl_worker *w)
{
	(void)w;
	return cl_mono_us();
}

/* The endpoint record of slot s's request in the worker's active record, NULL with one
 * endpoint. */
static inline struct cl_ep_metrics *cl_slot_ep(const struct cl_worker *w, const struct cl_slot *s)
{
	return s->ep < w->active->n_eps ? &w->active->eps[s->ep] : NULL;
}

/* The class record of slot s's request in the worker's active record, NULL without classes. */
static inline struct cl_metrics *cl_slot_cls(const struct cl_worker *w, const struct cl_slot *s)
{
	return s->cls < w->active->n_cls ? &w->active->cls[s->cls] : NULL;
}

/* Whether t is inside the worker's measured window. */
static inline bool cl_in_window(const struct cl_worker *w, int64_t t_us)
{
	return w->st.active && t_us >= w->st.win_start_us && t_us < w->st.win_end_us;
}

/* Whether the stage may still start a request intended at t_us: not once it stops or its
 * window has closed, nor a measured one when a stage bounded by requests has started them
 * all. */
static inline bool cl_stage_may_start(const struct cl_stage_run *st, int64_t t_us)
{
	if (st->stopping || t_us >= st->win_end_us)
		return false;
	if (st->by_requests && t_us >= st->win_start_us && st->to_start == 0)
		return false;
	return true;
}

/* Requests of this worker in flight (read on its own thread). */
static inline int64_t cl_inflight(const struct cl_worker *w)
{
	return atomic_load_explicit(&w->inflight, memory_order_relaxed);
}

#endif
