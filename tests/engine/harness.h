/* Test harness for the engine tests: runs the real chatload-sim as a child process on an
 * ephemeral loopback port, builds an engine aimed at it, and reads the request and truth logs
 * so a test can join them per request. */
#ifndef CHATLOAD_TEST_ENGINE_HARNESS_H
#define CHATLOAD_TEST_ENGINE_HARNESS_H

#include "agent/engine/engine.h"

#include "chatload/metrics.h"
#include "chatload/plan.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Sanitizer builds (ASan+UBSan, both here and in the simulator) run the same code 2-3x
 * slower: latency bounds on medians scale by this; bounds on the tail do not. */
#if defined(__SANITIZE_ADDRESS__)
#define H_SLOW 3
#else
#define H_SLOW 1
#endif

struct h_sim {
	pid_t pid;
	int port;
	char dir[256];
	char truth_path[320];
	char port_path[320];
};

/*
 * Starts chatload-sim (path from $CHATLOAD_SIM_BIN) with --listen 127.0.0.1:0, --port-file
 * and --truth-log in a fresh temp dir, plus args (NULL-terminated).  Waits (<= 5 s) for
 * the port.  Returns 0 or -1 (message printed).  The child dies with the test (PDEATHSIG).
 */
int h_sim_start(struct h_sim *s, const char *const *args);
/* SIGTERM, wait up to 3 s (then SIGKILL).  The truth log is complete afterwards.  Idempotent. */
void h_sim_stop(struct h_sim *s);
/* Removes the temp dir and its files. */
void h_sim_cleanup(struct h_sim *s);

/* A JSONL file loaded as an array of objects. */
struct h_jsonl {
	json_t **rows;
	size_t n;
};
int h_jsonl_load(struct h_jsonl *l, const char *path);
void h_jsonl_free(struct h_jsonl *l);
/* The row whose string field key equals value, or NULL. */
json_t *h_jsonl_find(const struct h_jsonl *l, const char *key, const char *value);
/* Integer field (null or missing -> def). */
int64_t h_int(json_t *o, const char *key, int64_t def);
const char *h_str(json_t *o, const char *key);

/* An engine aimed at a sim; owns its plans. */
struct h_engine {
	struct cl_engine *e;
	struct cl_target_plan target;
	struct cl_workload_plan workload;
	char log_path[320];
};

struct h_engine_opts {
	uint32_t workers;           /* default 1 */
	uint32_t max_streams;       /* default 256 */
	uint32_t max_tokens;        /* in the body; default 16 */
	bool continuous_usage;      /* stream_options.continuous_usage_stats */
	bool no_usage;              /* leave include_usage out */
	int64_t request_timeout_us; /* default 10 s */
	int64_t good_ttft_us, good_tpot_us, good_e2e_us;
	int port_override;       /* aim here instead of the sim (0: the sim) */
	bool https;              /* https:// (the sim speaks plain HTTP: a TLS failure) */
	const char *prefix;      /* request id prefix, default "t" */
	const char *api_key_env; /* target.api_key_env */
	bool http2;              /* target.http2 (prior knowledge on http://) */
	enum cl_api api;         /* target.api (default chat) */
	uint32_t inputs;         /* the body's embeddings inputs (cl_request_body.inputs) */
};

/* cmocka group setup and teardown of every engine test program: libcurl initialised once
 * around the tests, as a program's main() does (the engine never initialises it). */
int h_group_setup(void **state);
int h_group_teardown(void **state);

/* Creates the engine; the request log goes to <sim dir>/requests.jsonl.  0 or -1. */
int h_engine_create(struct h_engine *he, const struct h_sim *sim, const struct h_engine_opts *o);
void h_engine_destroy(struct h_engine *he);

/* A stage plan with the usual defaults (drain 5 s, seed 42). */
struct cl_stage_plan h_closed(uint32_t concurrency, uint64_t requests, int64_t duration_us);
struct cl_stage_plan h_open(double rate, enum cl_arrival arrival, uint64_t requests,
			    int64_t duration_us);

/* Starts the stage now + lead_us, waits for DONE (<= timeout), collects into m (which it
 * initialises).  0 or -1. */
int h_run(struct h_engine *he, const struct cl_stage_plan *p, int64_t lead_us, int64_t timeout_us,
	  struct cl_metrics *m);

/*
 * A misbehaving server on a thread: each of n connections (taken one after the other) gets
 * one streamed answer, chunked, with a content chunk and [DONE] but neither the terminating
 * chunk nor a close (a server that holds the stream open after [DONE]).
 */
struct h_held_server {
	int lfd, port, n;
	int fds[8];
	pthread_t thread;
	bool started;
};
/* Listens on 127.0.0.1:0 (port in hs->port) and serves n (<= 8) connections.  0 or -1. */
int h_held_server_start(struct h_held_server *hs, int n);
/* Stops taking connections, joins the thread and closes everything. */
void h_held_server_stop(struct h_held_server *hs);

/* Sorting helper. */
int h_cmp_i64(const void *a, const void *b);
int h_cmp_double(const void *a, const void *b);

#endif
