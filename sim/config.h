/* chatload-sim's typed configuration, parsed from argv through the shared option table. */
#ifndef CHATLOAD_SIM_CONFIG_H
#define CHATLOAD_SIM_CONFIG_H

#include "chatload/err.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CL_SIM_MAX_MODELS    8
#define CL_SIM_MODEL_MAX     128     /* bytes of one model name */
#define CL_SIM_MAX_SCHEDULE  256     /* entries of --fault-schedule */
#define CL_SIM_MAX_OUTPUT    1000000 /* output tokens one request may ask for */
#define CL_SIM_MAX_TPC       256     /* --tokens-per-chunk */
#define CL_SIM_MAX_PROCESSES 64      /* --processes (CL_PROCS_MAX) */

/* How output length is chosen (--output-tokens). */
enum cl_sim_len_kind {
	CL_SIM_LEN_REQUEST, /* the request's max_completion_tokens / max_tokens, else 128 */
	CL_SIM_LEN_FIXED,
	CL_SIM_LEN_UNIFORM, /* integer uniform in [a, b] */
	CL_SIM_LEN_NORMAL,  /* rounded normal(mean, sd), at least 1 */
};

/* The injectable faults; the order is the order of the probability intervals. */
enum cl_sim_fault {
	CL_SIM_FAULT_NONE = 0,
	CL_SIM_FAULT_500,
	CL_SIM_FAULT_429,
	CL_SIM_FAULT_DROP,
	CL_SIM_FAULT_MALFORMED,
	CL_SIM_FAULT_ERROR_CHUNK,
	CL_SIM_FAULT_NO_USAGE,
	CL_SIM_FAULT_NO_DONE,
	CL_SIM_FAULT_STALL,
	CL_SIM_FAULT_WRONG_TYPE, /* valid JSON chunks whose fields have the wrong types */
	CL_SIM_FAULT_EMPTY,      /* a 200 stream that carries nothing: data: [DONE] alone */
	CL_SIM_FAULT_HANG,       /* the request is read and never answered, not even headers */
	CL_SIM_FAULT_COUNT
};

/* The wrong-typed chunks a wrong-type fault sends (--wrong-type-shape). */
enum cl_sim_wrong_shape {
	CL_SIM_WRONG_CONTENT, /* {"choices":[{"delta":{"content":5}}]} */
	CL_SIM_WRONG_CHOICES, /* {"choices":"nope"} */
	CL_SIM_WRONG_USAGE,   /* "usage":{"completion_tokens":"many"} */
	CL_SIM_WRONG_ARRAY,   /* [1,2,3] */
	CL_SIM_WRONG_ALL,     /* the four above, in that order */
	CL_SIM_WRONG_ROTATE,  /* request N: shape (N - 1) mod 4 */
};

/* How the error-chunk fault says "this request failed" (--error-dialect): one per real
 * server's way, docs/simulator.md "Error dialects". */
enum cl_sim_dialect {
	CL_SIM_DIALECT_VLLM,        /* data: {"error":{"object":"error",...,"code":N}}, [DONE] */
	CL_SIM_DIALECT_VLLM_LEGACY, /* data: {"object":"error",...,"code":N} (no wrapper) */
	CL_SIM_DIALECT_LLAMACPP,    /* error: {"code":N,...} then data: [DONE] (b4748) */
	CL_SIM_DIALECT_TGI,         /* data: {"error":"...","error_type":"..."}, [DONE] */
	CL_SIM_DIALECT_TGI_OPENAI,  /* data: {"error":{"message":...,"http_status_code":N}} */
	CL_SIM_DIALECT_OPENAI,      /* event: error + data: {"error":{...}} */
	CL_SIM_DIALECT_ANTHROPIC,   /* event: error + data: {"type":"error","error":{...}} */
	CL_SIM_DIALECT_JSON_200,    /* status 200, application/json error body, no stream */
	CL_SIM_DIALECT_COUNT
};

/* The dialect's name as --error-dialect takes it ("llama.cpp-field"). */
const char *cl_sim_dialect_name(enum cl_sim_dialect d);

/* The fault's name as written in --fault-schedule and the truth log ("drop"); NULL for none. */
const char *cl_sim_fault_name(enum cl_sim_fault f);

struct cl_sim_sched_entry {
	uint64_t seq; /* 1-based number of the accepted chat request */
	enum cl_sim_fault fault;
};

struct cl_sim_config {
	/* process */
	char listen_host[256];
	char listen_port[16];
	bool allow_remote;
	const char *port_file;  /* NULL: none */
	const char *truth_log;  /* NULL: none */
	const char *stats_file; /* NULL: none */
	uint64_t max_body;
	uint32_t max_connections;
	int64_t grace_us;
	/* --processes (procs.c): N > 1 forks N servers on one port.  A child's config says
	 * which it is: process_index 0..N-1 and reuse_port, with its own truth and stats file
	 * names and seed filled in by the supervisor. */
	uint32_t processes;
	uint32_t process_index;
	bool reuse_port;
	/* model and protocol */
	char models[CL_SIM_MAX_MODELS][CL_SIM_MODEL_MAX];
	size_t n_models;
	const char *api_key; /* NULL: no authentication */
	const char *reasoning_field;
	/* timing */
	int64_t ttft_us;
	int64_t itl_us;
	int64_t prefill_per_token_us;
	uint32_t embedding_dim;         /* numbers per embeddings vector */
	int64_t embedding_per_token_us; /* an embeddings answer's time per input token */
	int64_t rerank_per_token_us;    /* a rerank or score answer's time per pair token */
	int64_t audio_per_second_us;    /* a transcription's time to first text per audio second */
	bool transcription_openai;      /* --transcription-stream openai: OpenAI's events */
	enum cl_sim_len_kind len_kind;
	uint32_t len_a, len_b; /* fixed: a; uniform: [a, b] */
	double len_mean, len_sd;
	uint32_t reasoning_tokens;
	uint32_t tokens_per_chunk;
	double jitter;
	uint64_t seed;
	/* capacity */
	uint32_t max_batch;       /* 0: unlimited */
	bool priority_sched;      /* --scheduling-policy priority: the queue by "priority" */
	uint32_t kv_cache_tokens; /* 0: unlimited */
	bool prefix_cache;        /* off with --no-prefix-cache */
	bool cache_timings;       /* --cache-timings: llama.cpp's timings, not cached_tokens */
	double ttft_buckets[40];  /* --ttft-buckets, seconds, ascending */
	size_t n_ttft_buckets;    /* 0: vLLM's */
	enum cl_sim_names {
		CL_SIM_NAMES_VLLM,
		CL_SIM_NAMES_SGLANG,
		CL_SIM_NAMES_LLAMACPP
	} metrics_names;
	int64_t itl_per_active_us;
	int64_t itl_growth_us;    /* added to itl per second of uptime (--itl-growth) */
	bool no_ignore_eos;       /* --no-ignore-eos: a server that does not honour ignore_eos */
	uint32_t chars_per_token; /* --chars-per-token: prompt tokens = ceil(chars / it) */
	bool no_tokenize;         /* --no-tokenize: /tokenize is not found */
	bool word_tokens; /* --word-tokens: prompt tokens by the text (cl_sim_text_tokens) */
	uint32_t template_tokens; /* --template-tokens: added to usage.prompt_tokens */
	uint32_t image_tokens;    /* --image-tokens: prompt tokens of each image part */
	/* readiness */
	int64_t loading_for_us;
	int64_t chat_ready_after_us;
	/* faults */
	double fault_p[CL_SIM_FAULT_COUNT];
	uint32_t retry_after_s;
	bool retry_after_date; /* --retry-after-date: Retry-After as an HTTP date */
	int64_t stall_for_us;
	uint32_t stall_at;
	int64_t fault_at; /* tokens before a mid-stream fault; -1: half the output */
	struct cl_sim_sched_entry schedule[CL_SIM_MAX_SCHEDULE];
	size_t n_schedule;
	enum cl_sim_wrong_shape wrong_shape;
	enum cl_sim_dialect error_dialect; /* --error-dialect */
	uint32_t error_code;               /* --error-code: the failure's status/code */
	const char *error_message;         /* --error-message: its words */
	/* connection behaviour */
	bool close_after_answer; /* keep-alive advertised, closed once the next request came */
	bool hold_after_done;    /* streamed bodies delimited by close, never closed */
	/* tool calls */
	double tool_call_rate; /* --tool-call-rate: P of a tool call when tools are offered */
	bool no_tools;         /* --no-tools: a request offering tools is refused (400) */
};

/*
 * Fills cfg from the option table's defaults and then argv (argv[0] skipped).  Flags are
 * `--name VALUE`, `--name=VALUE`, and for booleans `--name` alone.  Returns 0, 1 when
 * --help or --version was given (the text is already printed on stdout; exit 0), or a
 * negative CL_E* code with a message in err.  String fields point into argv or static
 * storage, so argv must outlive cfg.
 */
int cl_sim_config_parse(struct cl_sim_config *cfg, int argc, char **argv, struct cl_err *err);

/* Prints the usage text, generated from the option table, to f. */
void cl_sim_config_help(FILE *f);

#endif
