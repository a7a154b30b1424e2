/* The scenario model: a YAML run description, loaded and validated with source positions,
 * every default filled in one place (scenario.c), stages already expanded. */
#ifndef CHATLOAD_SCENARIO_H
#define CHATLOAD_SCENARIO_H

#include "chatload/err.h"
#include "chatload/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_SCENARIO_MAX_BYTES (4u << 20) /* documents larger than this are refused */
#define CL_SCENARIO_MAX_DEPTH 32         /* nesting deeper than this is refused */

/* A simulator setting: name in flag form ("output-tokens"), value as written. */
struct cl_sim_kv {
	char *key;
	char *value;
};

struct cl_scn_target {
	char *url;         /* base URL ending in /v1 (NULL when simulator) */
	char *model;       /* NULL: the first model /v1/models lists */
	char *api_key_env; /* NULL: no Authorization header */
	char *body_json;   /* extra request fields as JSON object text, or NULL */
	char **headers;    /* "Name: value" */
	size_t n_headers;
	bool http2;
	bool tls_verify;
	char *ca_file;
	int64_t connect_timeout_us; /* default 10s */
	bool simulator;             /* target.simulator given: the run starts chatload-sim */
	struct cl_sim_kv *sim;
	size_t n_sim;
};

enum cl_on_loss { CL_ON_LOSS_FAIL = 0, CL_ON_LOSS_CONTINUE = 1 };
/* What a client-bound stage does to the run: fail it (exit 1) or only warn. */
enum cl_client_bound_policy { CL_CLIENT_BOUND_FAIL = 0, CL_CLIENT_BOUND_WARN = 1 };

struct cl_scn_agents {
	uint32_t local;          /* agents spawned on this machine (default 2 unless listen) */
	char *listen;            /* URL remote agents dial, e.g. tls+tcp://0.0.0.0:7700 */
	uint32_t expect;         /* remote agents to wait for */
	int64_t join_timeout_us; /* default 60s */
	enum cl_on_loss on_loss;
	uint32_t workers; /* worker threads per local agent, 0 = the host's cores */
	char *token_env;  /* shared token from this env var ... */
	char *token_file; /* ... or this file */
	char *tls_cert;
	char *tls_key;
	char *tls_ca;
	int64_t report_interval_us; /* default 1s */
};

struct cl_scn_readiness {
	bool enabled;               /* default true */
	int64_t timeout_us;         /* default 15m */
	char *prompt;               /* default asks for a one-word answer (filled by the loader) */
	uint32_t max_tokens;        /* default 16 */
	int64_t request_timeout_us; /* default 5m */
	uint32_t consecutive;       /* default 2 */
	char *body_json;            /* extra fields for the probe requests */
	int64_t backoff_initial_us; /* default 1s */
	int64_t backoff_max_us;     /* default 30s */
};

struct cl_scn_warmup {
	uint32_t requests;          /* default 0 */
	int64_t duration_us;        /* default 0 */
	uint32_t concurrency;       /* default 1 */
	uint32_t max_tokens;        /* default: workload.max_tokens */
	int64_t request_timeout_us; /* default: workload.request_timeout */
	char *body_json;
	bool fail_on_error; /* default true */
};

enum cl_workload_kind { CL_WORKLOAD_PROMPTS, CL_WORKLOAD_DATASET, CL_WORKLOAD_SYNTHETIC };
enum cl_dataset_format { CL_DATASET_AUTO, CL_DATASET_OPENAI, CL_DATASET_SHAREGPT, CL_DATASET_TEXT };

struct cl_len_dist {
	double mean;
	double stddev; /* 0: fixed */
	uint32_t min;
	uint32_t max;
};

struct cl_scn_workload {
	enum cl_workload_kind kind;
	char **prompts;
	size_t n_prompts;
	char *system_prompt;
	char *dataset; /* path, resolved relative to the scenario file's directory */
	enum cl_dataset_format dataset_format;
	uint32_t dataset_limit;             /* 0: all */
	struct cl_len_dist synthetic_input; /* synthetic prompt length in tokens */
	uint32_t synthetic_count;           /* distinct synthetic prompts, default 64 */
	uint64_t seed;                      /* default 1 */
	uint32_t max_tokens;                /* default 256 */
	int64_t request_timeout_us;         /* default 10m */
	int64_t drain_timeout_us;           /* default 30s */
};

/* One load level after expansion (a sweep becomes one stage per value). */
struct cl_scn_stage {
	char *name; /* given, or generated: "c8", "r20" (per second); a named sweep "x-c8" */
	enum cl_load_mode mode;
	uint32_t concurrency; /* concurrency mode; in rate mode an optional cap (0 = none) */
	double rate_per_s;
	enum cl_arrival arrival; /* rate mode; default poisson */
	double gamma_shape;      /* default 1 (= poisson) */
	int64_t duration_us;
	uint64_t requests;
	int64_t ramp_us;
	int line; /* source line of the stage entry, for later diagnostics */
};

enum cl_slo_kind {
	CL_SLO_LATENCY,         /* metric + percentile (or mean) <= limit_us */
	CL_SLO_ERROR_RATE,      /* errors / (completed + errors) <= limit */
	CL_SLO_MIN_OUTPUT_TPS,  /* output tokens/s >= limit */
	CL_SLO_MIN_REQUEST_RATE /* completed requests/s >= limit */
};

struct cl_scn_slo {
	char *key; /* as written: "ttft_p99", "error_rate" */
	enum cl_slo_kind kind;
	int lat;           /* enum cl_lat for CL_SLO_LATENCY */
	double percentile; /* 0..100; -1 means mean */
	double limit;      /* µs for latency; fraction for error rate; per second otherwise */
	char *stage;       /* NULL: every stage; a number in the file is resolved to a stage name */
	int line;
};

struct cl_scn_estimate {
	uint64_t *samples;
	size_t n_samples;
	char *from_stage; /* stage name (a concurrency written as a number, "32", is resolved to
			     that stage's name by the loader); NULL: the last stage */
};

enum cl_output_format { CL_FMT_JSON = 1, CL_FMT_CSV = 2, CL_FMT_MD = 4, CL_FMT_HTML = 8 };

struct cl_scn_output {
	char *dir;        /* NULL: results/<name>-<UTC stamp>/ */
	unsigned formats; /* bitmask of cl_output_format; JSON always included */
};

struct cl_scenario {
	char *name;
	char *description;
	char *file; /* path it was loaded from */
	struct cl_scn_target target;
	struct cl_scn_agents agents;
	struct cl_scn_readiness readiness;
	struct cl_scn_warmup warmup;
	struct cl_scn_workload workload;
	struct cl_scn_stage *stages;
	size_t n_stages;
	struct cl_scn_slo *slos;
	size_t n_slos;
	bool slo_abort_on_breach;
	struct cl_scn_estimate estimate;
	struct cl_scn_output output;
	enum cl_client_bound_policy client_bound; /* top-level `client_bound:` */
};

/*
 * Loads path, applies overrides ("key.path=value" strings, e.g. "stages.0.duration=30s",
 * "target.model=foo"; NULL-terminated, may be NULL) and validates.  Every problem found is
 * added to diags as "file:line:col: message" with the field named; returns 0 when there
 * were none, else CL_EINVAL (or CL_EIO / CL_ETOOBIG / CL_ENOMEM).  On failure out is
 * freed and zeroed.
 */
int cl_scenario_load_file(const char *path, const char *const *overrides, struct cl_scenario *out,
			  struct cl_diags *diags);
/* Same from memory; name is used as the file in messages. */
int cl_scenario_load_string(const char *text, size_t len, const char *name,
			    const char *const *overrides, struct cl_scenario *out,
			    struct cl_diags *diags);

/* Fills every default (scenario.c is the one place defaults live).  Loader calls it. */
void cl_scenario_defaults(struct cl_scenario *s);

/* Frees everything; safe on zeroed and partly loaded scenarios. */
void cl_scenario_free(struct cl_scenario *s);

#endif
