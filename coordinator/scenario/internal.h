/* Private to the scenario loader (the files of scenario/): the YAML node tree, the
 * conversion context with its error reporting, and the derived-defaults hook of
 * scenario/scenario.c.  Its functions are library-internal and carry the cli_ prefix. */
#ifndef CHATLOAD_SCENARIO_INT_H
#define CHATLOAD_SCENARIO_INT_H

#include "coordinator/scenario/scenario.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hard caps beyond the two in scenario.h.  A scenario is a small hand-written file, so
 * these are far above any real one and only stop hostile or runaway input. */
#define SCN_MAX_NODES          200000u    /* YAML nodes after alias expansion */
#define SCN_MAX_EXPANDED_BYTES (8u << 20) /* scalar text after alias expansion */
#define SCN_MAX_ANCHORS        256u
#define SCN_MAX_MERGE_DEPTH    8     /* '<<' merges inside merged mappings */
#define SCN_MAX_ERRORS         100   /* diagnostics kept; the rest are counted in diags->dropped */
#define SCN_MAX_STAGES         1000  /* stages after sweep expansion */
#define SCN_MAX_LIST           10000 /* entries of any list (samples, sweep values) but prompts */
#define SCN_MAX_HEADERS        64
#define SCN_MAX_SLOS           256

enum ynode_kind { YN_SCALAR, YN_MAP, YN_SEQ };

/*
 * One YAML node.  Aliases share nodes (the tree is a DAG), so `refs` counts the parents
 * pointing at a node and an override copies a shared node before changing it.  All nodes
 * of a tree are on the `next_alloc` list and freed together.
 */
struct ynode {
	struct ynode *next_alloc;
	enum ynode_kind kind;
	bool quoted; /* scalar quoted, block, or tagged !!str: a string, never a number */
	int line;    /* 1-based position in the file; 0 for nodes made by an override */
	int col;
	const char *origin; /* the --set text that made this node; NULL when from the file */
	uint32_t refs;
	char *str; /* scalar text, NUL-terminated */
	size_t len;
	struct ynode **kids; /* mapping: key, value, key, value...; sequence: items */
	size_t n;            /* pointers in kids (a mapping has n / 2 pairs) */
	size_t cap;
	uint64_t exp_nodes; /* nodes in this subtree with aliases expanded */
	uint64_t exp_bytes; /* scalar bytes likewise */
};

struct ytree {
	struct ynode *root;
	struct ynode *all;    /* every allocated node */
	uint64_t total_nodes; /* expanded nodes so far, against SCN_MAX_NODES */
	uint64_t total_bytes; /* expanded scalar bytes so far */
};

/* What the loader carries while converting: where errors go and the current field path. */
struct scn_ctx {
	const char *file; /* as shown in messages */
	const char *dir;  /* directory relative paths are resolved against ("" = cwd) */
	struct cl_diags *diags;
	size_t n_errors;
	bool oom;
	char path[512]; /* "stages[1].concurrency" */
	size_t path_len;
};

/* Adds "file:line:col: message" for node at (NULL: no position).  A node made by an
 * override is reported as "file: --set k=v: message". */
void cli_scn_error(struct scn_ctx *c, const struct ynode *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds an error at an explicit position (line 0: none). */
void cli_scn_error_pos(struct scn_ctx *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* scenario/tree.c: parses text into t (nodes tagged with origin), returning its root (NULL
 * for an empty document) in *root.  Errors go to c; returns 0, CL_EPARSE, CL_ETOOBIG or
 * CL_ENOMEM. */
int cli_ytree_parse(struct scn_ctx *c, struct ytree *t, const char *text, size_t len,
		    const char *origin, struct ynode **root);
/* Applies one "a.b.c=value" override to t->root (a mapping).  Errors go to c. */
int cli_ytree_override(struct scn_ctx *c, struct ytree *t, const char *override);
void cli_ytree_free(struct ytree *t);
/* A null scalar: plain "", "~" or "null" (any case spelling YAML allows). */
bool cli_ynode_is_null(const struct ynode *n);

/* ---- scenario/conv.c: typed reading of nodes, with the field path in every message ---- */

/* Field path: push returns a mark to pop back to ("stages" + "[1]" + ".ramp"). */
size_t cli_scn_path_key(struct scn_ctx *c, const char *key);
size_t cli_scn_path_index(struct scn_ctx *c, size_t i);
void cli_scn_path_pop(struct scn_ctx *c, size_t mark);
/* The current path, or "the scenario" at the top. */
const char *cli_scn_path(const struct scn_ctx *c);
/* "'-4'" (quoted, escaped, shortened), "a mapping", "a list" or "nothing". */
const char *cli_scn_describe(const struct ynode *v, char *buf, size_t n);

/*
 * Calls fn for every key/value of map: its own pairs first, then those merged in with
 * '<<: *alias' (merged = true), so a consumer that skips keys it has already seen gets
 * YAML's precedence (explicit keys win, then merges in order).
 */
typedef void (*scn_pair_fn)(struct scn_ctx *c, const struct ynode *key, const struct ynode *val,
			    bool merged, void *arg);
void cli_scn_map_each(struct scn_ctx *c, const struct ynode *map, scn_pair_fn fn, void *arg);

/* The best match for word among names by edit distance, NULL when none is close. */
const char *cli_scn_suggest(const char *word, const char *const *names, size_t n);
/* Reports "unknown key 'k' <where> (did you mean 'x'?)" or lists the valid names. */
void cli_scn_unknown_key(struct scn_ctx *c, const struct ynode *key, const char *const *names,
			 size_t n, const char *hint);

enum scn_ftype {
	SCN_F_STR,   /* optional string; null leaves the default */
	SCN_F_NESTR, /* non-empty string */
	SCN_F_ENV,   /* environment variable name */
	SCN_F_BOOL,
	SCN_F_U32, /* integer in [min, max] */
	SCN_F_U64,
	SCN_F_DUR,    /* duration in µs in [min, max] */
	SCN_F_DBL,    /* real in [dmin, dmax] */
	SCN_F_JSON,   /* mapping rendered as JSON object text */
	SCN_F_CUSTOM, /* fn(c, value, obj + off) */
};

struct scn_field {
	const char *name;
	enum scn_ftype type;
	size_t off; /* into obj */
	int64_t min, max;
	double dmin, dmax;
	void (*fn)(struct scn_ctx *c, const struct ynode *v, void *obj);
};

/* Table rows: a field at member m of struct st, optionally with a range or a handler. */
#define SCN_FIELD(n, t, st, m)                                                                     \
	{                                                                                          \
		.name = (n), .type = (t), .off = offsetof(st, m)                                   \
	}
#define SCN_RANGE(n, t, st, m, lo, hi)                                                             \
	{                                                                                          \
		.name = (n), .type = (t), .off = offsetof(st, m), .min = (lo), .max = (hi)         \
	}
#define SCN_DRANGE(n, st, m, lo, hi)                                                               \
	{                                                                                          \
		.name = (n), .type = SCN_F_DBL, .off = offsetof(st, m), .dmin = (lo), .dmax = (hi) \
	}
#define SCN_CUSTOM(n, f)                                                                           \
	{                                                                                          \
		.name = (n), .type = SCN_F_CUSTOM, .fn = (f)                                       \
	}
#define SCN_CUSTOM_AT(n, st, m, f)                                                                 \
	{                                                                                          \
		.name = (n), .type = SCN_F_CUSTOM, .off = offsetof(st, m), .fn = (f)               \
	}

/*
 * Reads a mapping whose keys are the given fields into obj.  Unknown keys and duplicates
 * are reported; seen[i] (nf entries, zeroed by the caller) gets the key node of each field
 * given.  A null map (a section written with nothing after it) leaves the defaults.
 * hint(key) may name where a misplaced key belongs (NULL: no hint).
 */
void cli_scn_fields(struct scn_ctx *c, const struct ynode *map, const struct scn_field *f,
		    size_t nf, void *obj, const struct ynode **seen,
		    const char *(*hint)(const char *key));

/* Typed readers: 0 on success, 1 when v is null and null is allowed (optional strings),
 * -1 after reporting an error naming cli_scn_path(c). */
int cli_scn_get_str(struct scn_ctx *c, const struct ynode *v, bool nonempty, char **out);
int cli_scn_get_bool(struct scn_ctx *c, const struct ynode *v, bool *out);
int cli_scn_get_u64(struct scn_ctx *c, const struct ynode *v, uint64_t min, uint64_t max,
		    uint64_t *out);
int cli_scn_get_u32(struct scn_ctx *c, const struct ynode *v, uint32_t min, uint32_t max,
		    uint32_t *out);
int cli_scn_get_dur(struct scn_ctx *c, const struct ynode *v, int64_t min_us, int64_t max_us,
		    int64_t *out);
int cli_scn_get_double(struct scn_ctx *c, const struct ynode *v, double min, double max,
		       double *out);
int cli_scn_get_percent(struct scn_ctx *c, const struct ynode *v, double *out);
int cli_scn_get_rate(struct scn_ctx *c, const struct ynode *v, double *out);
int cli_scn_get_enum(struct scn_ctx *c, const struct ynode *v, const char *const *names, size_t n,
		     int *out);
/* scenario/target.c: a mapping of HTTP header names to values appended to *headers as
 * "Name: value" lines (names checked, duplicates refused). */
void cli_scn_read_headers(struct scn_ctx *c, const struct ynode *v, char ***headers, size_t *n);
/* scenario/classes.c: workload.classes, a list of classes (docs/scenario.md). */
void cli_scn_conv_classes(struct scn_ctx *c, const struct ynode *v, void *obj);
/* scenario/workload.c: *path resolved against the scenario's directory (an absolute one
 * kept) and checked readable, what naming it in the error at `at`. */
void cli_scn_resolve_file(struct scn_ctx *c, char **path, const char *what, const struct ynode *at);
/* Frees one class's strings and SLOs; safe on a zeroed one. */
void cli_scn_class_free(struct cl_scn_class *k);
/* scenario/json.c: a mapping as compact JSON object text (types kept: quoted scalars stay
 * strings); 1 when v is null. */
int cli_scn_get_json(struct scn_ctx *c, const struct ynode *v, char **out);
/* A request body's extra keys (target.body, readiness.body, warmup.body): cli_scn_get_json,
 * after an error for each key chatload writes itself (model, messages, stream, ...). */
int cli_scn_get_body(struct scn_ctx *c, const struct ynode *v, char **out);
/* A scalar that is a string (any plain or quoted text) without NUL bytes. */
bool cli_scn_scalar(struct scn_ctx *c, const struct ynode *v, const char *what);

/* scenario/cancel.c: workload.cancel into the struct cl_scn_workload obj. */
void cli_scn_conv_cancel(struct scn_ctx *c, const struct ynode *v, void *obj);

/* Which fields the file set, for the defaults that depend on other fields. */
struct scn_given {
	bool agents_local;
	bool warmup_max_tokens;
	bool warmup_request_timeout;
	bool synthetic_min;
	bool synthetic_max;
	bool output_min; /* synthetic.output_tokens */
	bool output_max;
	bool workload_source; /* prompts, dataset or synthetic */
	bool turns_min;       /* multi_turn.turns */
	bool turns_max;
};

/* target's keys, by their place in its field table (target.c) */
enum scn_target_key {
	TK_URL,
	TK_SIMULATOR,
	TK_MODEL,
	TK_API_KEY_ENV,
	TK_BODY,
	TK_HEADERS,
	TK_HTTP2,
	TK_TLS_VERIFY,
	TK_CA_FILE,
	TK_CONNECT_TIMEOUT,
	TK_H2_STREAMS,
	TK_SERVER_METRICS,
	TK_URLS,
	TK_ROUTE,
	TK__COUNT
};

/* The whole loader's state; scn_ctx first, so a struct scn_ctx * is a struct scn_loader *. */
struct scn_loader {
	struct scn_ctx c;
	struct cl_scenario *s;
	struct scn_given given;
	const struct ynode *root;
	const struct ynode *stage_nodes[SCN_MAX_STAGES]; /* each expanded stage's entry (or name) */
	size_t cap_stages;
	size_t cap_slos;
	const struct ynode **slo_stage_nodes; /* per slo: where its stage: was written, or NULL */
	const struct ynode *from_stage;
	const struct ynode *sim_model; /* target.simulator.model's value node */
	/* key nodes of the fields given, per section, for checks across fields */
	const struct ynode *top[16];
	const struct ynode *target[TK__COUNT];
	const struct ynode *agents[16];
	const struct ynode *warmup[16];
	const struct ynode *workload[28];
	/* workload.tools: the node of its max_rounds or result_tokens (the agentic loop's
	 * keys, which need multi_turn), and that key's name */
	const struct ynode *tools_loop;
	const char *tools_loop_key;
};

/* The keys of the agents section, in its field table's order (agents.c): l->agents[AGF_*]
 * is the key node of each one given. */
enum scn_agents_field {
	AGF_LOCAL,
	AGF_LISTEN,
	AGF_EXPECT,
	AGF_JOIN_TIMEOUT,
	AGF_ON_LOSS,
	AGF_WORKERS,
	AGF_TOKEN_ENV,
	AGF_TOKEN_FILE,
	AGF_TLS,
	AGF_REPORT_INTERVAL,
	AGF_SOURCE_ADDRESSES,
	AGF__COUNT
};

/* One section each (target.c, agents.c, readiness.c: readiness and warmup); obj is unused
 * (they write l->s). */
void cli_scn_conv_target(struct scn_ctx *c, const struct ynode *v, void *obj);
void cli_scn_conv_agents(struct scn_ctx *c, const struct ynode *v, void *obj);
void cli_scn_conv_readiness(struct scn_ctx *c, const struct ynode *v, void *obj);
void cli_scn_conv_warmup(struct scn_ctx *c, const struct ynode *v, void *obj);
/* target.simulator (simulator.c) and target.server_metrics (server_metrics.c); obj: the
 * struct cl_scn_target. */
void cli_scn_conv_simulator(struct scn_ctx *c, const struct ynode *v, void *obj);
void cli_scn_conv_server_metrics(struct scn_ctx *c, const struct ynode *v, void *obj);
void cli_scn_conv_workload(struct scn_ctx *c, const struct ynode *v, void *obj);
/* workload.audio into a struct cl_scn_audio (audio.c). */
void cli_scn_conv_audio(struct scn_ctx *c, const struct ynode *v, void *obj);
/* scenario/workload.c: replay stages need workload.trace, and a trace needs replay stages. */
void cli_scn_check_replay(struct scn_ctx *c);
void cli_scn_conv_stages(struct scn_ctx *c, const struct ynode *v, void *obj);
/* simulator.c: appends key = value to target.simulator's settings (copies of both); out of
 * memory sets c->oom. */
void cli_scn_sim_append(struct scn_ctx *c, struct cl_scn_target *t, const char *key,
			const char *value);
/* An http:// or https:// URL with a host and no spaces, into *out (trailing '/' dropped).
 * 0, or -1 after an error naming the field (target.c). */
int cli_scn_get_http_url(struct scn_ctx *c, const struct ynode *v, char **out);
/* scenario/urls.c: target.urls (several endpoints) and target.route (obj: the target) */
void cli_scn_conv_urls(struct scn_ctx *c, const struct ynode *v, void *obj);
void cli_scn_conv_route(struct scn_ctx *c, const struct ynode *v, void *obj);
/* The key node of target.<key> when the scenario gave it, else NULL (target.c). */
const struct ynode *cli_scn_target_key(const struct scn_loader *l, const char *key);
/* The section a key belongs to when it is written in the wrong one, or NULL (conv.c). */
const char *cli_scn_hint_for(const char *key);

/* scenario/generate.c: the top-level `generate:` job (obj is unused), and the checks across
 * sections once everything is read: exactly one of generate and stages; a generate job's
 * agents.on_loss defaults to continue. */
void cli_scn_conv_generate(struct scn_ctx *c, const struct ynode *v, void *obj);
void cli_scn_check_generate(struct scn_ctx *c, const struct ynode *generate_at,
			    const struct ynode *stages_at);

/* scenario/jobs.c: the capacity search stage, plan, and the soak guards of slo. */
/* Whether a stage entry is a search (it has a `search` key). */
bool cli_scn_is_search_entry(struct scn_ctx *c, const struct ynode *entry);
/* Converts a search stage entry ({ name, search: {...} }) and appends it to the stages. */
void cli_scn_conv_search_stage(struct scn_ctx *c, const struct ynode *entry);
/* Checks across sections once everything is read: one search, its SLOs (search.slo, else a
 * copy of the top-level SLOs for every stage), probe names, references to it; plan_at (the
 * `plan` key, NULL when absent) needs a search. */
void cli_scn_check_search(struct scn_ctx *c, const struct ynode *plan_at);
/* The top-level `plan` mapping (obj is the scenario). */
void cli_scn_conv_plan(struct scn_ctx *c, const struct ynode *v, void *obj);
void cli_scn_conv_cost(struct scn_ctx *c, const struct ynode *v, void *obj);
/* slo.abort_on_breach: a boolean, or { intervals: N }. */
void cli_scn_conv_abort(struct scn_ctx *c, const struct ynode *v);
/* slo.max_drift: a percentage, or { window, ttft_p99, itl_p99, output_tokens_per_s,
 * error_rate }. */
void cli_scn_conv_drift(struct scn_ctx *c, const struct ynode *v);
/* scenario/slo.c: the top-level `slo` (a mapping, or a list of mappings each naming its
 * stage; obj is unused). */
void cli_scn_conv_slo(struct scn_ctx *c, const struct ynode *v, void *obj);
/* scenario/slo.c: reads one mapping of SLOs (no stage:, abort_on_breach or max_drift) into
 * a new array *out of *n entries, for search.slo. */
void cli_scn_take_slos(struct scn_ctx *c, const struct ynode *v, struct cl_scn_slo **out,
		       size_t *n);

/* scenario/scenario.c: defaults that depend on other fields (agents.local from agents.listen, the
 * warmup's limits from the workload's, the name from the file, the built-in prompts).
 * Returns 0 or CL_ENOMEM. */
int cli_scenario_derive_defaults(struct cl_scenario *s, const struct scn_given *given,
				 const char *file);
/* scenario/scenario.c: the defaults of one stage entry before its keys are read. */
void cli_scenario_stage_defaults(struct cl_scn_stage *st);

/* The loader behind a section's context (the context is its first member). */
static inline struct scn_loader *L(struct scn_ctx *c)
{
	return (struct scn_loader *)c;
}

#endif
