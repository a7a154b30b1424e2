/* chatload-sim's truth log: one JSON line per chat request with the true timings, so tests
 * can compare what a client measured with what the server really did. */
#ifndef CHATLOAD_SIM_TRUTH_H
#define CHATLOAD_SIM_TRUTH_H

#include "chatload/buf.h"
#include "chatload/err.h"

#include <stdbool.h>
#include <stdint.h>

struct cl_sim_truth {
	bool enabled;
	int fd;
	struct cl_buf buf;
	uint64_t lines;
};

/* What one line says.  Times are CLOCK_MONOTONIC µs; 0 means "did not happen" (null). */
struct cl_sim_truth_rec {
	const char *api;          /* "chat", "completions", "responses", "embeddings", ... */
	uint32_t inputs;          /* embeddings: inputs answered; rerank, score: documents */
	uint32_t documents;       /* rerank, score: documents scored (0 otherwise) */
	uint32_t audio_ms;        /* transcription: milliseconds of audio uploaded (0 otherwise) */
	const char *id;           /* response id, NULL for rejected requests */
	uint64_t seq;             /* 0 for rejected requests */
	const char *request_id;   /* X-Request-Id, NULL when absent */
	const char *conversation; /* X-Chatload-Conversation, NULL when absent */
	const char *cls;          /* X-Chatload-Class, NULL when absent */
	const char *model;        /* NULL for rejected requests */
	bool has_priority;        /* the request's "priority" (vLLM's): null when not given */
	int64_t priority;
	bool stream;
	int http_status;
	const char *outcome; /* NULL: the status is http_status; else "client_gone" or "cut" */
	const char *fault;   /* NULL: none */
	bool failed;         /* the request failed: an error status, or a failure said in or
			      * instead of its stream, a drop, an empty answer, none at all */
	int64_t arrival_us;
	int64_t queued_us;
	int64_t sched_first_us, act_first_us;
	int64_t sched_last_us, act_last_us;
	int64_t max_late_us;
	uint32_t prompt_tokens, planned_tokens, output_tokens, reasoning_tokens, chunks;
	uint32_t max_tokens; /* what the request asked for (0: nothing) */
	bool ignore_eos;
	uint32_t images;        /* image content parts the prompt carried */
	uint32_t history_turns; /* assistant messages the request carried */
	uint64_t history_fnv;   /* FNV-1a 64 of the last one's content (0: none) */
	uint64_t answer_fnv;    /* FNV-1a 64 of the content text sent */
	uint64_t prompt_fnv;    /* FNV-1a 64 of the whole prompt: every message's role and text */
	uint32_t cached_tokens; /* prompt tokens found in the prefix cache */
	const char *peer;       /* the client's address, NULL or "" when unknown */
	uint32_t process;       /* --processes: which process served it (0-based) */
	bool tool_call;         /* the answer was a streamed tool call */
	uint32_t tool_call_tokens; /* of output_tokens, those of the call's arguments */
	uint32_t tool_results;     /* tool messages since the request's last user message */
};

/* Opens (truncates) path; path NULL: a disabled log whose calls do nothing.  CL_EIO. */
int cl_sim_truth_open(struct cl_sim_truth *t, const char *path, struct cl_err *err);

/* Appends one line to the in-memory buffer (flushing first when it is full).  Never fails
 * visibly: a line that cannot be written is counted in the log's last words. */
void cl_sim_truth_record(struct cl_sim_truth *t, const struct cl_sim_truth_rec *r);

/* Writes the buffered lines to the file.  Blocks on the (regular) file. 0 or CL_EIO. */
int cl_sim_truth_flush(struct cl_sim_truth *t);

/* Flushes and closes; safe on a zeroed or disabled log. */
void cl_sim_truth_close(struct cl_sim_truth *t);

#endif
