/* The scenario model: a YAML run description, loaded and validated with source positions,
 * every default filled in one place (scenario/scenario.c), stages already expanded. */
#ifndef CHATLOAD_SCENARIO_H
#define CHATLOAD_SCENARIO_H

#include "chatload/err.h"
#include "chatload/plan.h"
#include "chatload/srcaddr.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_SCENARIO_MAX_BYTES (4u << 20) /* documents larger than this are refused */
#define CL_SCENARIO_MAX_DEPTH 32         /* nesting deeper than this is refused */
#define CL_SCN_MAX_TURNS      1000       /* workload.multi_turn.turns at most */
#define CL_SCN_MAX_AGENTS     1024       /* agents.local + agents.expect at most */

/* A simulator setting: name in flag form ("output-tokens"), value as written. */
struct cl_sim_kv {
	char *key;
	char *value;
};

/* target.server_metrics: where the server's own /metrics is read (docs/scenario.md). */
enum cl_scn_srv_mode {
	CL_SCN_SRV_AUTO = 0, /* the target URL's scheme://host:port/metrics, noted when absent */
	CL_SCN_SRV_OFF,      /* false: not scraped */
	CL_SCN_SRV_URL,      /* a URL given: warned about when it cannot be read */
};

#define CL_SCN_SRV_MAX_SERIES 32 /* names in server_metrics.series */
#define CL_SCN_SRV_MAX_EXTRA  8  /* exporter URLs in server_metrics.extra */

struct cl_scn_server_metrics {
	enum cl_scn_srv_mode mode;
	char *url;           /* CL_SCN_SRV_URL: the page */
	int64_t interval_us; /* default 1 s */
	char **headers;      /* "Name: value", sent with each scrape */
	size_t n_headers;
	char **series; /* series names kept first; a trailing '*' matches every name it begins */
	size_t n_series;
	char **extra; /* more exporters' pages (dcgm-exporter, node exporter): http(s) URLs */
	size_t n_extra;
};

struct cl_scn_target {
	char *url;         /* base URL ending in /v1 (NULL when simulator) */
	char *model;       /* NULL: the first model /v1/models lists */
	char *api_key_env; /* NULL: no Authorization header */
	char *body_json;   /* extra request fields as JSON object text, or NULL */
	char **headers;    /* "Name: value" */
	size_t n_headers;
	bool http2;             /* true, required or preferred: speak HTTP/2 */
	bool http2_fallback;    /* preferred: HTTP/1.1 is allowed when the server lacks h2 */
	uint32_t http2_streams; /* http2_streams_per_connection; 0 = default (100) */
	bool tls_verify;
	char *ca_file;
	int64_t connect_timeout_us; /* default 10s */
	bool simulator;             /* target.simulator given: the run starts chatload-sim */
	struct cl_sim_kv *sim;
	size_t n_sim;
	struct cl_scn_server_metrics server_metrics;
	/* several endpoints (target.urls): 2..CL_ENDPOINTS_MAX distinct base URLs, url is then
	 * NULL; route how requests are spread (route_given: the scenario said it) */
	char **urls;
	size_t n_urls;
	enum cl_route route;
	bool route_given;
};

enum cl_on_loss { CL_ON_LOSS_FAIL = 0, CL_ON_LOSS_CONTINUE = 1 };
/* What a client-bound stage does to the run: fail it (exit 1) or only warn. */
enum cl_client_bound_policy { CL_CLIENT_BOUND_FAIL = 0, CL_CLIENT_BOUND_WARN = 1 };

struct cl_scn_agents {
	uint32_t local;          /* agents spawned on this machine (default 2 unless listen) */
	bool local_auto;         /* `local: auto`: the run sets local from its largest stage */
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
	/* agents.source_addresses, expanded (NULL: none): each local agent binds its load's
	 * connections to these addresses in turn (chatload-agent --source-address) */
	struct cl_srcaddr_pool *source;
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

enum cl_workload_kind {
	CL_WORKLOAD_PROMPTS,
	CL_WORKLOAD_DATASET,
	CL_WORKLOAD_SYNTHETIC,
	CL_WORKLOAD_TRACE /* replayed at its own timing (docs/scenario.md, "Trace replay") */
};

/* workload.trace.format: the JSONL shapes a trace may have (auto: decided per record). */
enum cl_trace_format { CL_TRACE_AUTO, CL_TRACE_MOONCAKE, CL_TRACE_AZURE };
enum cl_dataset_format { CL_DATASET_AUTO, CL_DATASET_OPENAI, CL_DATASET_SHAREGPT, CL_DATASET_TEXT };

struct cl_len_dist {
	double mean;
	double stddev; /* 0: fixed */
	uint32_t min;
	uint32_t max;
};

/* Where a dataset request's max_tokens comes from. */
enum cl_dataset_output {
	CL_DATASET_OUTPUT_RECORD,    /* the record's own length when it has one, else max_tokens */
	CL_DATASET_OUTPUT_MAX_TOKENS /* workload.max_tokens for every record */
};

/* ---- workload.images (docs/scenario.md, "Images") ---- */
enum cl_image_format { CL_IMAGE_PNG, CL_IMAGE_JPEG };
/* The detail an image part asks for; NONE sends no "detail" (the server's default). */
enum cl_image_detail {
	CL_IMAGE_DETAIL_NONE,
	CL_IMAGE_DETAIL_AUTO,
	CL_IMAGE_DETAIL_LOW,
	CL_IMAGE_DETAIL_HIGH
};
#define CL_SCN_MAX_IMAGES        16   /* images per request at most */
#define CL_SCN_MAX_DOCUMENTS     1000 /* workload.documents at most (rerank, score) */
#define CL_SCN_DEFAULT_DOCUMENTS 4    /* workload.documents unless set */
#define CL_SCN_MAX_IMAGE_SIDE    4096 /* pixels, either side */

/* Images generated from the seed, attached to every request's own user message. */
struct cl_scn_images {
	uint32_t count; /* per request; 0: no images */
	uint32_t width, height;
	enum cl_image_format format;
	enum cl_image_detail detail;
};

/* ---- workload.audio (docs/scenario.md, "Audio"): what transcription requests upload ---- */
#define CL_SCN_MAX_AUDIO_CLIPS 4096 /* distinct clips made or read at most */
struct cl_scn_audio {
	/* synthetic clips: seconds each (mean, and a normal spread cut at min and max; stddev 0:
	 * all mean), count distinct ones made from the seed */
	double seconds_mean, seconds_stddev, seconds_min, seconds_max;
	uint32_t count; /* default 16 */
	char *dir;      /* else the .wav files of this folder (resolved like dataset) */
	char *language; /* the form's language field; NULL: none sent */
	bool stream;    /* the form's stream field (default false: one JSON answer) */
};

/* Dataset records kept by estimated length (tokens; 0: no bound). */
struct cl_dataset_filter {
	uint32_t min_input, max_input;   /* the prompt's estimated tokens, system included */
	uint32_t min_output, max_output; /* the record's own output length; records without one
					  * are not judged by these */
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
	bool synthetic_count_given; /* a pool: without it every request is distinct (retag) */
	uint64_t seed;              /* default 1 */
	uint32_t max_tokens;        /* default 256 */
	int64_t request_timeout_us; /* default 10m */
	int64_t drain_timeout_us;   /* default 30s */
	/* output lengths (docs/scenario.md, "Output lengths") */
	struct cl_len_dist synthetic_output; /* per-request max_tokens; mean 0: not given */
	int ignore_eos; /* -1 (default): only on bodies with a per-request length; 0 never; 1 all */
	enum cl_dataset_output dataset_output; /* default record */
	/* datasets at scale */
	bool dataset_shuffle; /* seeded by seed */
	/* workload.order: false (run, the default): the warmup and every stage take the next
	 * bodies; true (per_stage): every stage starts again at the agent's first body. */
	bool order_per_stage;
	/* workload.salt: false (run, the default): the run's tag opens every request's first
	 * message; true (none): the text exactly as written.  The tag itself is the run's, not
	 * the scenario's (cl_workload_render_stats, chatload/salt.h). */
	bool salt_none;
	struct cl_dataset_filter dataset_filter;
	/* shared prefixes: request i starts with group (i mod groups)'s prefix of tokens */
	uint32_t shared_prefix_groups; /* 0: none */
	uint32_t shared_prefix_tokens;
	/* multi-turn conversations (docs/scenario.md, "Multi-turn conversations") */
	bool multi_turn;
	struct cl_len_dist turns; /* turns per conversation; mean 0: every user turn a dataset
				   * record has */
	int64_t think_time_us;    /* pause between an answer and the next turn */
	/* trace replay: the file (resolved like dataset), its shape, how much faster */
	char *trace;
	enum cl_trace_format trace_format;
	double trace_speedup; /* default 1 */
	/* token lengths: calibrate asks the target's /tokenize once (chatload run); the answer,
	 * characters per token, goes to chars_per_token (0: the estimate of 4), by which
	 * synthetic prompts, shared prefixes and trace prompts are then built */
	bool calibrate;
	double chars_per_token;
	/* which API the requests use (docs/scenario.md, "APIs"); embeddings send
	 * embedding_batch inputs per request (default 1) */
	enum cl_api api;
	uint32_t embedding_batch;
	/* rerank and score: documents per request, each request a query and this many
	 * documents, all taken from the workload's prompts in turn (default 4) */
	uint32_t documents;
	struct cl_scn_images images; /* workload.images */
	struct cl_scn_audio audio;   /* workload.audio (api transcription) */
	/* workload.tools (docs/scenario.md, "Tool calls"): tools_count synthetic functions
	 * offered with tool_choice; with multi_turn an answer that is a tool call is followed,
	 * up to tools_max_rounds times, by a tool result of tools_result_tokens and the same
	 * question again.  tools_count 0: no tools. */
	uint32_t tools_count;
	enum cl_tool_choice {
		CL_TOOL_CHOICE_AUTO,
		CL_TOOL_CHOICE_NONE,
		CL_TOOL_CHOICE_REQUIRED
	} tools_choice;
	uint32_t tools_result_tokens; /* default 64 */
	uint32_t tools_max_rounds;    /* default 1 */
	/* workload.cancel (docs/scenario.md, "Abandoned requests"): the share of requests the
	 * client closes (0: none), after cancel_after_tokens tokens, or after a delay:
	 * cancel_after_us, or drawn from [cancel_after_us, cancel_after_max_us] when the
	 * latter is not 0. */
	double cancel_share;
	uint32_t cancel_after_tokens;
	int64_t cancel_after_us, cancel_after_max_us;
	/* workload.classes: none (NULL, 0), or 1..CL_SCN_MAX_CLASSES */
	struct cl_scn_class *classes;
	size_t n_classes;
};

/* A class of requests (workload.classes, docs/scenario.md "Request classes"): a share of the
 * run's requests sent with its own model, priority, output length, extra body keys and
 * headers, counted and judged apart.  Strings owned. */
#define CL_SCN_MAX_CLASSES 16 /* = CL_METRICS_CLASSES_MAX */
struct cl_scn_class {
	char *name;
	uint32_t weight; /* default 1 */
	char *model;     /* NULL: the run's model */
	int64_t priority;
	bool priority_set;      /* sent as "priority" (vLLM) only when given */
	uint32_t max_tokens;    /* 0: the body's own */
	uint32_t output_tokens; /* 0: none; else max_tokens this and ignore_eos: true */
	char *body_json;        /* extra body keys, a JSON object text; NULL: none */
	/* its own prompts instead of the workload's: inline ones, or synthetic ones of
	 * input_tokens tokens (exclusive; neither: the workload's bodies) */
	char **prompts;
	size_t n_prompts;
	uint32_t input_tokens;
	char *dataset;  /* its own dataset file (resolved like workload.dataset, format auto) */
	char **headers; /* "Name: value", sent with this class's requests */
	size_t n_headers;
	struct cl_scn_slo *slos; /* judged on this class's requests alone */
	size_t n_slos;
	int line;
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
	/* A capacity search (`search:`), NULL for an ordinary stage: the run replaces this
	 * entry with the probes it decides on (mode is the search's `over`, duration_us and
	 * ramp_us each probe's; concurrency and rate_per_s are 0). */
	struct cl_scn_search *search;
	/* A probe of a search (borrowed from the search's entry; NULL otherwise): it runs at
	 * least probe_min_us of its duration_us (then max_probe_duration), and ends as soon as
	 * its search's SLOs have the samples they need. */
	const struct cl_scn_search *probe_of;
	int64_t probe_min_us;
	/* `replay: true`: the workload's trace at its own timing (a rate stage whose arrivals
	 * are the trace's; rate_per_s is the trace's mean, set once it is read, and
	 * duration_us its span when not given) */
	bool replay;
	/* `repeat: N` (or `chatload run --repeat N`): the stage runs N times (1 = once, the
	 * default), its figures pooled with each repeat's own beside them; never on a search or
	 * a replay stage.  At most CL_SCN_MAX_REPEAT. */
	uint32_t repeat;
};
#define CL_SCN_MAX_REPEAT 100

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

/* A capacity search: probes of one load kind, doubling from `from` until one breaks its SLOs
 * (or `max` passes), then bisecting until the highest level that meets them is bracketed
 * within `tolerance` (docs/scenario.md, "Capacity search"). */
struct cl_scn_search {
	enum cl_load_mode over;  /* concurrency (streams) or rate (requests per second) */
	double from;             /* first level probed */
	double max;              /* highest level probed */
	double tolerance;        /* absolute, in over's unit; a fraction when relative */
	bool tolerance_relative; /* tolerance is a share of the upper bracket */
	int64_t probe_duration_us;
	/* a probe whose SLO percentiles lack samples (cl_verdict_samples_needed) runs on until
	 * it has them, up to this long; default 4 × probe_duration */
	int64_t max_probe_duration_us;
	int64_t ramp_us;
	enum cl_arrival arrival; /* rate probes */
	double gamma_shape;
	uint32_t max_concurrency; /* rate probes: cap on streams in flight, 0 none */
	struct cl_scn_slo *slos;  /* what a probe must meet: search.slo, else the top-level SLOs
				   * that apply to every stage (copied) */
	size_t n_slos;
};

/* Capacity planning from a search's answer: the load to plan for (0: not asked). */
struct cl_scn_plan {
	double requests_per_s;
	double output_tokens_per_s;
};

/* Top-level `cost:` (docs/scenario.md): what the target costs, which turns a stage's
 * throughput into money per million tokens and a capacity plan into money per hour.
 * per_hour 0: no cost given. */
struct cl_scn_cost {
	double per_hour;  /* price of one GPU-hour with gpus, else of one server-hour */
	uint32_t gpus;    /* GPUs per server (0: per_hour is a server's) */
	uint32_t servers; /* servers behind the target (0: 1) */
	char *currency;   /* a label for the figures, e.g. "USD" (NULL: none) */
};

/* slo.max_drift: how far the last window of a stage may move from its first.  Relative
 * limits are fractions of the first window's value; the error rate's is absolute.  NAN: not
 * checked. */
struct cl_scn_drift {
	int64_t window_us;          /* 0: a quarter of each stage's measured window */
	double ttft_p99;            /* rise of TTFT p99 */
	double itl_p99;             /* rise of ITL p99 */
	double output_tokens_per_s; /* fall of output tokens/s */
	double error_rate;          /* rise of the error rate, absolute (0.01 = 1 point) */
	bool set;                   /* max_drift was given */
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
	bool requests;    /* requests.jsonl: every request of every benchmark stage, collected
			   * from the agents as the run goes */
};

/* generate.input_format: an OpenAI Batch file, or a dataset as workload.dataset reads
 * them (each record's custom_id its line number). */
enum cl_gen_input_format {
	CL_GEN_INPUT_BATCH,
	CL_GEN_INPUT_OPENAI,
	CL_GEN_INPUT_SHAREGPT,
	CL_GEN_INPUT_TEXT,
};

/* A generate job (`generate:`, instead of `stages:`): every request of an OpenAI Batch input
 * file sent once, its answer appended to output (docs/scenario.md, "Generate jobs"). */
struct cl_scn_generate {
	bool set;    /* the scenario is a generate job */
	char *input; /* OpenAI Batch lines, resolved like workload.dataset */
	enum cl_gen_input_format input_format; /* default batch */
	char *output;          /* Batch output lines, appended (resumed when present) */
	char *errors;          /* lines failed for good; default: output with .errors.jsonl */
	uint32_t concurrency;  /* streams in flight over all agents, default 64 (with a rate: their
				  cap) */
	double rate_per_s;     /* `rate`: tries started per second over all agents, 0: none */
	uint32_t max_attempts; /* tries per request (retryable failures), default 4 */
	bool skip_invalid;     /* bad input lines go to errors instead of stopping */
	int64_t backoff_initial_us; /* default 1s, doubled per try */
	int64_t backoff_max_us;     /* default 30s */
	char *estimate_from; /* a benchmark's results.json (or its directory) whose estimate the
			      * job is checked against; NULL: none */
	int line;            /* where `generate:` is, for messages */
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
	/* slo.abort_on_breach: { intervals: N }: stop at once when N consecutive report
	 * intervals of a stage breach an SLO (0: no window; slo_abort_on_breach is `true`,
	 * stop after a breached stage) */
	uint32_t slo_abort_intervals;
	struct cl_scn_drift drift;       /* slo.max_drift */
	struct cl_scn_plan plan;         /* top-level `plan:` (needs a search stage) */
	struct cl_scn_cost cost;         /* top-level `cost:` */
	struct cl_scn_generate generate; /* top-level `generate:` (then n_stages is 0) */
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

/* Fills every default (scenario/scenario.c is the one place defaults live).  Loader calls it. */
void cl_scenario_defaults(struct cl_scenario *s);

/* The model request bodies are rendered for before the target has been asked: target.model,
 * else the built-in simulator's `model` setting (or its default), else a stand-in that
 * `chatload run` replaces with the model the readiness gate finds
 * (cl_workload_plan_set_model).  Never NULL. */
const char *cl_scenario_render_model(const struct cl_scenario *s);

/* Whether the warmup sends a body of its own (warmup.body given, or a warmup.max_tokens other
 * than the workload's): the first inline prompt, or the readiness prompt, with those settings.
 * Otherwise it sends the workload's own bodies as they are, each with its own max_tokens
 * (docs/architecture.md, "Warmup uses its own body"). */
bool cl_scenario_warmup_own_body(const struct cl_scenario *s);

/* What the target costs an hour by `cost:`: per_hour x gpus x servers (an unset count is 1);
 * NAN without a cost. */
double cl_scenario_cost_per_hour(const struct cl_scn_cost *c);

/* Frees everything; safe on zeroed and partly loaded scenarios. */
void cl_scenario_free(struct cl_scenario *s);

/* Inserts a copy of st at position at (0..n_stages), shifting later stages; the copy takes
 * ownership of st->name and st->search (the caller must not free them).  0 or CL_ENOMEM (st
 * untouched, nothing owned).  Pointers into s->stages are invalid afterwards. */
int cl_scenario_insert_stage(struct cl_scenario *s, size_t at, const struct cl_scn_stage *st);
/* Removes and frees the stage at position at (a search entry the run has expanded). */
void cl_scenario_remove_stage(struct cl_scenario *s, size_t at);
/* Frees a search (and its SLOs); accepts NULL. */
void cl_scenario_search_free(struct cl_scn_search *q);

#endif
