/* chatload-sim's shared state: the server, its connections and the stream each one carries. */
#ifndef CHATLOAD_SIM_SIM_H
#define CHATLOAD_SIM_SIM_H

#include "chatload/buf.h"
#include "config.h"
#include "chatload/plan.h"
#include "sim/truth/metrics.h"
#include "sim/truth/stats.h"
#include "sim/truth/truth.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event;
struct event_base;
struct cl_sim;
struct cl_sim_conn;

enum cl_sim_phase {
	CL_SIM_PHASE_IDLE = 0, /* no request on this connection */
	CL_SIM_PHASE_QUEUED,   /* waiting for a batch slot */
	CL_SIM_PHASE_RUNNING,  /* holding a slot, in the timer heap */
	CL_SIM_PHASE_HANGING,  /* the hang fault: read, never answered, no slot, no timer */
};

/*
 * One chat completion being generated.  Embedded in its connection (HTTP/1.1 carries one
 * response at a time), so a stream costs no allocation.  Times are CLOCK_MONOTONIC µs.
 */
struct cl_sim_stream {
	enum cl_sim_phase phase;
	enum cl_api api;   /* the endpoint: the shape of the answer (render.c) */
	uint32_t inputs;   /* embeddings: vectors to answer; rerank, score: documents to score */
	uint32_t audio_ms; /* transcription: the audio uploaded (from its WAV header) */
	uint32_t events;   /* responses: events sent (their sequence_number) */
	uint64_t seq;      /* 1-based number among accepted chat requests */
	char id[40];       /* the response id, "chatcmpl-sim-<seq>" */
	const char *model;
	int64_t created_s; /* wall-clock seconds for the "created" field */
	bool stream;
	bool include_usage;
	bool continuous_usage;
	bool cache_timings; /* --cache-timings: the cache said in timings.prompt_n only */
	bool has_request_id;
	char request_id[132];
	bool has_conversation; /* X-Chatload-Conversation, for the truth log */
	char conversation[132];
	bool has_class; /* X-Chatload-Class, for the truth log */
	char cls[68];
	enum cl_sim_fault fault;
	uint64_t rng;

	uint32_t prompt_tokens;
	uint32_t cached_tokens;     /* of the prompt, found in the prefix cache */
	uint32_t planned_tokens;    /* completion tokens, reasoning included */
	uint32_t planned_reasoning; /* the first planned_reasoning tokens are reasoning */
	bool finish_length;         /* finish_reason "length": the request's max was reached */
	uint32_t requested_tokens;  /* the request's max_completion_tokens / max_tokens, 0 */
	bool ignore_eos;            /* the request asked for ignore_eos */
	bool has_priority;          /* the request's "priority" (vLLM), 0 when not given */
	int64_t priority;
	uint32_t images;        /* image parts in the prompt (truth log) */
	uint32_t history_turns; /* assistant messages in the request (truth log) */
	uint64_t history_fnv;   /* FNV-1a of the last one's content, 0: none */
	uint64_t prompt_fnv;    /* FNV-1a of the whole prompt (cl_sim_chat_req) */
	/* tool calls: the answer is a streamed call of tool_name (its content tokens are the
	 * arguments); tool_results counts the request's tool messages since its last user
	 * message (truth log) */
	bool tool_call;
	uint32_t tool_results;
	char tool_name[65];
	uint32_t sent_tokens;
	uint32_t chunks;    /* token-bearing chunks sent */
	uint32_t fault_tok; /* the chunk carrying this token is where a mid-stream fault hits */
	uint32_t stall_tok; /* the chunk carrying this token is delayed by --stall-for */
	uint32_t next_n;    /* tokens in the chunk due at deadline_us */
	bool stalled;
	bool failed; /* a failure was said or the answer withheld (the truth log's "failed") */

	int64_t arrival_us;
	int64_t start_us; /* got its batch slot */
	int64_t sched_first_us, act_first_us;
	int64_t sched_last_us, act_last_us; /* of the last chunk sent so far */
	int64_t deadline_us;                /* when the next chunk is due */
	int64_t max_late_us;

	size_t heap_idx; /* position in the timer heap, SIZE_MAX when not in it */
	struct cl_sim_stream *qprev, *qnext; /* batch wait queue */
	struct cl_sim_conn *conn;
};

/* A client connection.  Pooled: freed ones go on a free list and are reused. */
struct cl_sim_conn {
	struct cl_sim *sim;
	int fd;
	uint64_t gen; /* bumped at every reuse: a callee can tell c was closed under it */
	bool in_use;
	bool busy;        /* a response is in progress (the stream or a delayed answer) */
	bool keep_alive;  /* of the current request */
	bool close_after; /* close once the backlog is written */
	bool continue_sent;
	bool close_on_next; /* --close-after-answer: answered; close when the next request came */
	bool held;          /* --hold-after-done: answer sent, body delimited by a close that
			     * never comes; nothing more is read as a request */
	char peer[48];      /* the client's address, as the truth log's "peer" says it */
	struct event *ev_read;
	struct event *ev_write;
	bool write_armed;
	struct cl_buf in;   /* bytes read and not yet consumed, capped */
	struct cl_buf out;  /* bytes the socket did not take yet, capped */
	struct cl_buf body; /* a decoded chunked request body */
	size_t out_off;     /* written prefix of out */
	struct cl_sim_stream st;
	struct cl_sim_conn *prev, *next; /* the list of open connections, or the free list */
};

struct cl_sim {
	const struct cl_sim_config *cfg;
	bool inited;
	struct event_base *base;
	int64_t start_us;     /* process start: readiness phases count from here */
	int64_t start_wall_s; /* the same instant in Unix seconds ("created" of models) */
	int listen_fd;
	int spare_fd; /* held for shedding connections when out of descriptors */
	int port;     /* the bound port */
	struct event *ev_listen;
	struct event *ev_sigterm, *ev_sigint, *ev_sigusr1;
	struct event *ev_grace;
	struct event *ev_flush;  /* truth log flush every 100 ms */
	uint64_t ticks;          /* of ev_flush */
	uint64_t chunks_at_tick; /* stats.chunks at the last debug line */
	bool draining;
	uint32_t n_conns;
	struct cl_sim_conn *conns; /* open connections */
	struct cl_sim_conn *free_conns;

	/* the timer heap of running streams, ordered by deadline_us */
	struct cl_sim_stream **heap;
	size_t heap_len, heap_cap;
	struct event *ev_timer;
	int64_t timer_armed_us; /* deadline the timer is armed for, 0: not armed */
	bool in_timer;          /* inside the timer callback: it re-arms at the end */

	/* the capacity model */
	uint32_t active; /* streams holding a batch slot */
	struct cl_sim_stream *q_head, *q_tail;
	uint32_t queued;

	uint64_t next_seq;
	struct cl_sim_truth truth;
	struct cl_sim_stats stats;
	struct cl_sim_metrics metrics; /* what GET /metrics reports */
	char *scratch;                 /* rendering space for one write, CL_SIM_SCRATCH bytes */
	char *rbuf;                    /* receive space, CL_SIM_SCRATCH bytes */
};

#define CL_SIM_SCRATCH     (64 * 1024)
#define CL_SIM_BACKLOG_MAX (1u << 20) /* unsent bytes per connection before it is cut */

#endif
