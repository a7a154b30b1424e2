/* Helpers shared by the files of results/ and report/; not an interface for
 * other modules (results/results.h, report/report.h and report/compare.h are), hence the internal
 * prefix cli_ (cli_rj_: JSON and files, cli_rs_: building the document, cli_rp_: rendering). */
#ifndef CHATLOAD_RESULTS_INTERNAL_H
#define CHATLOAD_RESULTS_INTERNAL_H

#include "coordinator/results/results.h"

#include "chatload/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Dump flags for one-line JSON (intervals.jsonl): keys in insertion order, 15 significant
 * digits (enough for every value we store, without 0.1000000000000001). */
#define RJ_LINE_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* Writes j as results.json is written: indented, but with each histogram's buckets, each
 * interval, each latency summary and every short value on one line.  0, CL_EIO, CL_ENOMEM. */
int cli_rj_dump(const json_t *j, FILE *f);

/* A JSON string from C text that may not be valid UTF-8 (error bodies, host names): bad
 * bytes become U+FFFD.  NULL text gives JSON null.  NULL only when out of memory. */
json_t *cli_rj_str(const char *s);
json_t *cli_rj_strn(const char *s, size_t len);
/* A JSON number, or null when x is not finite (jansson refuses NaN and infinities). */
json_t *cli_rj_real(double x);
/* An unsigned count as a JSON integer (clamped to INT64_MAX). */
json_t *cli_rj_uint(uint64_t v);
/* Sets key in obj to v, taking ownership of v (NULL v is an allocation failure: returns
 * CL_ENOMEM).  Returns 0 or CL_ENOMEM. */
int cli_rj_set(json_t *obj, const char *key, json_t *v);
/* Appends v (owned) to arr.  0 or CL_ENOMEM. */
int cli_rj_append(json_t *arr, json_t *v);

/* Rounds x to `digits` significant digits (values stay readable in the files); non-finite
 * values pass through. */
double cli_rj_sig(double x, int digits);
/* Rounds x to `decimals` decimal places. */
double cli_rj_round(double x, int decimals);

/* Writes dir/name atomically: a temporary file in dir, fill(), fflush, fsync, rename, and
 * an fsync of the directory.  fill returns 0 or a negative code.  On failure the temporary
 * file is removed and err says which file and why. */
CL_MUST_CHECK int cli_rj_write_atomic(const char *dir, const char *name,
				      int (*fill)(FILE *f, void *ctx), void *ctx,
				      struct cl_err *err);

/* mkdir -p with mode 0755.  0, or CL_EIO with err naming the directory. */
int cli_rj_mkdirs(const char *path, struct cl_err *err);

/* dir + "/" + name, malloc'd; NULL when out of memory. */
char *cli_rj_path(const char *dir, const char *name);

/* Output helpers for the renderers: escape text for XML / HTML, Markdown table cells
 * and CSV fields. */
void cli_rj_put_xml(FILE *f, const char *s);
void cli_rj_put_md(FILE *f, const char *s);
void cli_rj_put_csv(FILE *f, const char *s);

/* Formats x with `decimals` places into buf, or "-" when x is NaN.  Returns buf. */
char *cli_rj_fmt(char *buf, size_t n, double x, int decimals);
/* Formats a count (JSON integer or real) or "-". */
char *cli_rj_fmt_count(char *buf, size_t n, double x);

/* The latency metrics stored per stage under latency_ms, in document order. */
extern const char *const cli_rj_lat_keys[];
extern const size_t cli_rj_n_lat_keys;
/* The error classes stored under requests.errors, in document order. */
extern const char *const cli_rj_err_keys[];
extern const size_t cli_rj_n_err_keys;

/* The load level of a stage as people read it: "c=8", "20/s", "20/s (max 64)". */
char *cli_rj_stage_load(const json_t *stage, char *buf, size_t n);

/* -- building the document (results/stage.c) -- */
struct cl_metrics;
struct cl_scn_stage;
struct cl_readiness_result;

/* What results/results.c accumulates from a stage's intervals for its client-health verdict. */
struct cli_rs_client {
	double cpu_max_pct;
	double cpu_capacity_pct;
	uint32_t cpu_bound_intervals;
	json_t *stalls;              /* the listed stalls (cl_results_add_stalls), NULL none */
	uint64_t stalls_unlisted;    /* stalls seen but not listed */
	uint32_t stalls_agent;       /* stalls seen by agents, listed or not */
	uint32_t stalls_coordinator; /* silences seen by the coordinator */
	/* the agents' CPU and streams in flight, averaged over the measured window */
	bool load_known;
	double agents_cpu_pct_mean; /* summed over the agents, 100 = one core */
	double streams_mean;
	uint32_t stalls_own; /* the coordinator's own stalls */
	json_t *unaccounted; /* lost agents' blind windows, NULL none */
};

/* The stage object of the document, without intervals (results/results.c adds them).  NULL when
 * out of memory. */
json_t *cli_rs_stage_json(size_t index, const struct cl_scn_stage *st, const struct cl_metrics *m,
			  double window_s, enum cl_stage_status status, const char *reason,
			  const struct cli_rs_client *client, enum cl_api api);
/* results/endpoints.c: the stage's "endpoints" array from m's endpoint records (urls: the
 * scenario's target.urls, a JSON array, read by index).  NULL when out of memory. */
json_t *cli_rs_endpoints_json(const struct cl_metrics *m, const json_t *urls, double window_s);
/* One interval's summary (rates over interval_s).  NULL when out of memory. */
json_t *cli_rs_interval_json(double t_s, double interval_s, const struct cl_metrics *m);
/* results/turns.c: the stage's "turns" array (multi-turn: one entry per turn index that had
 * completed requests; empty without conversations), NULL on out of memory. */
json_t *cli_rs_turns_json(const struct cl_metrics *m);

/* images.c: a stage's `images` object from the document's workload (its `images` and
 * `prompt_tokens_estimated_mean`) and the stage's `tokens.prompt_per_request`: per_request,
 * prompt_tokens_mean (measured, null without usage), text_prompt_tokens_estimated_mean,
 * prompt_tokens_per_image = (measured - estimate) / per_request.  NULL (and nothing to add)
 * when the workload sends no images, or out of memory. */
json_t *cli_rs_images_json(const json_t *workload, const json_t *stage);
/* The warmup and readiness objects. */
json_t *cli_rs_warmup_json(const struct cl_metrics *m);
json_t *cli_rs_readiness_json(const struct cl_readiness_result *rr);

/* -- shared by the renderers (report/common.c) -- */

/* The summary table every renderer shows: one row per stage, the same cells everywhere. */
enum {
	RP_STAGE,
	RP_LOAD,
	RP_STATUS,
	RP_RPS,
	RP_OTPS,
	RP_TTFT50,
	RP_TTFT99,
	RP_ITL50,
	RP_ITL99,
	RP_TPOT50,
	RP_E2E50,
	RP_ERRORS,
	RP_NOCONTENT, /* shown only when some stage has requests without content */
	/* shown only when some stage saw reasoning (a thinking model): */
	RP_TTFC50, /* time to first content token */
	RP_TTFC99,
	RP_CONTENT_TPS, /* content (answer) tokens per second: output without reasoning */
	/* shown only when the server said some prompt tokens came from its cache: */
	RP_CACHED, /* tokens.cached_prompt_ratio, beside TTFT, which it makes read better */
	/* embeddings (every stage has an "embeddings" object): these replace the token and
	 * chunk columns, which an embeddings run leaves empty */
	RP_INPUTS_PS,   /* inputs (vectors) per second */
	RP_INTOK_PS,    /* input (prompt) tokens per second */
	RP_E2E99,
	RP_TOOL_CALLS, /* answers that were tool calls: shown only when some stage had one */
	RP__COLS
};
#define RP_CELL_MAX 96
struct cli_rp_row {
	char cell[RP__COLS][RP_CELL_MAX];
};
/* Column headings (with units) and whether a column holds numbers (right-aligned). */
extern const char *const cli_rp_col_names[RP__COLS];
extern const bool cli_rp_col_numeric[RP__COLS];
/* Fills row from a stage object of the document. */
void cli_rp_stage_row(const json_t *stage, struct cli_rp_row *row);
/* The columns to show for these stages, in order, into cols[RP__COLS]; returns how many.
 * Columns that only matter sometimes (no content; TTFC and the content rate, which matter
 * only for a thinking model) are left out when no stage needs them. */
size_t cli_rp_columns(const json_t *stages, int cols[RP__COLS]);
/* Whether any of these stages saw reasoning tokens (a thinking model). */
bool cli_rp_thinking(const json_t *stages);
/* Whether these stages are an embeddings run (every one has "embeddings"): no output, so no
 * token columns or charts. */
bool cli_rp_embeddings(const json_t *stages);
/* Whether a stage's numbers are not a normal measurement: its status is not ok, or it was
 * client-bound.  Such stages are marked in every table and never drawn as normal points. */
bool cli_rp_stage_marked(const json_t *stage);

/* The detail tables every format shows (report/sections.c): each a heading, a sentence
 * saying how to read it, and rows of cells; rows of marked stages carry `marked`. */
#define RP_TBL_COLS 11
struct cli_rp_table {
	const char *title;
	const char *note; /* NULL: none */
	size_t n_cols;
	const char *col[RP_TBL_COLS];
	bool numeric[RP_TBL_COLS];
	size_t n_rows, cap;
	char (*cell)[RP_TBL_COLS][RP_CELL_MAX];
	bool *marked;
};
enum cli_rp_table_kind {
	RP_TBL_LATENCY,  /* stage x metric: mean, p50, p90, p95, p99, max */
	RP_TBL_THINKING, /* TTFT vs TTFC, reasoning vs content tokens (thinking models) */
	RP_TBL_TOKENS,   /* prompt, requested and received output tokens per request */
	RP_TBL_ERRORS,   /* errors by class per stage */
	RP_TBL_CLIENT,   /* client health per stage and why it was flagged */
	RP_TBL_EPISODES, /* per agent: its stalls, partitions and loss */
	RP_TBL_ENDPOINTS, /* several endpoints (target.urls): stage x endpoint */
	RP_TBL_HOSTS,     /* several agent processes on one host: the agents grouped by host */
	RP__TBL
};
/* Builds table `kind` of doc into t (zeroed first).  A table with no row is not worth a
 * section (the renderers skip it).  0, or CL_ENOMEM. */
int cli_rp_table_build(const json_t *doc, enum cli_rp_table_kind kind, struct cli_rp_table *t);
void cli_rp_table_free(struct cli_rp_table *t);
/* The probes table of a capacity search (capacity.probes[]): column names, alignment, and
 * one probe's cells. */
#define RP_PROBE_COLS 8
extern const char *const cli_rp_probe_cols[RP_PROBE_COLS];
extern const bool cli_rp_probe_numeric[RP_PROBE_COLS];
void cli_rp_probe_row(const json_t *probe, char cell[RP_PROBE_COLS][RP_CELL_MAX]);
/* The "Server" section: one row per stage that has stages[].server (what the server's own
 * /metrics said); false when the stage has none. */
#define RP_SERVER_COLS 10
extern const char *const cli_rp_server_cols[RP_SERVER_COLS];
extern const bool cli_rp_server_numeric[RP_SERVER_COLS];
bool cli_rp_server_row(const json_t *stage, char cell[RP_SERVER_COLS][RP_CELL_MAX]);
/* The notes under the Server table, each one line of plain text handed to emit: a page
 * that could not be read, every server restart (stage and time), the extra series kept per
 * stage and the names that matched nothing.  Nothing for files without them. */
void cli_rp_server_notes(const json_t *doc, void (*emit)(void *arg, const char *line), void *arg);
/* A share of a whole in percent as people read it: "100%", "45%", "2.5%", "0.12%". */
char *cli_rp_fmt_pct(char *buf, size_t n, double pct);

/* Milliseconds and rates with precision that suits their size; "-" for NaN. */
char *cli_rp_fmt_ms(char *buf, size_t n, double ms);
char *cli_rp_fmt_rate(char *buf, size_t n, double v);
/* report/common.c: each stage's image cost in words (its `images` object), e.g. "stage 'c2':
 * 2 images per request, 1234.0 prompt tokens per request with them against 1064.0 for the
 * text alone (estimated): 85.0 per image", handed to emit (NULL: only counted), in order.
 * Returns how many stages have one. */
size_t cli_rp_images_lines(const json_t *stages, void (*emit)(void *arg, const char *line),
			   void *arg);
/* A check's measured value and limit in its unit ("2345.0 ms", "1.20%", "12.5/s"). */
char *cli_rp_fmt_slo_value(char *buf, size_t n, double v, const char *unit);
/* Large counts as people read them: 51200000 -> "51.2M". */
char *cli_rp_fmt_big(char *buf, size_t n, double v);
/* The verdict in one word: "PASS", "FAIL" or "NO SLO" (no checks). */
const char *cli_rp_verdict_word(const json_t *doc);
/* "complete" / "incomplete", and the exit code with its meaning ("99 (SLO breached)"). */
char *cli_rp_exit_text(char *buf, size_t n, const json_t *doc);

/* -- SVG line charts for report.html (report/svg.c) -- */
struct cli_rp_series {
	const char *name;
	const char *color;
	const double *x;
	const double *y; /* NaN: no value (the line breaks there) */
	size_t n;
	bool dashed;
	/* NULL, or per point: NULL for a normal point, else why it is not one ("failed",
	 * "client-bound"): such points are left out of the line and drawn as a red cross. */
	const char *const *mark;
	const char *const *point_name; /* NULL, or per point: named in its tooltip */
	/* NULL, or per point: half the width of its 95 % interval (NaN: none), drawn as an
	 * error bar y - err .. y + err and named in the tooltip */
	const double *err;
	/* NULL, or per point: a band from band_lo to band_hi (NaN: none there), filled faintly
	 * in the series' colour under every line (chatload history's expected range) */
	const double *band_lo, *band_hi;
};
struct cli_rp_chart {
	const char *title;
	const char *x_label;     /* with unit, e.g. "concurrency (streams)" */
	const char *y_label;     /* with unit, e.g. "output tokens/s" */
	const char *point_label; /* tooltip prefix for x values ("c=", "t=") */
	const struct cli_rp_series *series;
	size_t n_series;
	int width, height;
	bool integer_y; /* counts: tick steps of at least 1 */
	/* Reference lines: horizontal (an SLO's limit) and vertical (a stage boundary), each
	 * with a label; NULL/0 for none. */
	const double *hline;
	const char *const *hline_label;
	size_t n_hlines;
	const double *vline;
	const char *const *vline_label;
	size_t n_vlines;
	bool y_percent; /* y is a share in % (a CDF): the axis ends at 100 */
};
/* Writes one self-contained <svg> element (axes from 0, ticks, grid, legend, points with
 * <title> tooltips) to out. */
void cli_rp_svg_chart(FILE *out, const struct cli_rp_chart *c);

/* report.html's chart sections (report/html_charts.c), each a <section> or nothing. */
/* Throughput and latency against load for one mode's stages, and the trade-off chart. */
void cli_rp_html_load_charts(const json_t *doc, bool rate_mode, FILE *out);
/* Cumulative distributions from the stored histograms (latencies, tokens per request). */
void cli_rp_html_distributions(const json_t *doc, FILE *out);
/* Every stage's intervals on one time axis, client health included, and under the client's
 * throughput and TTFT the server's own signals (stages[].server.timeline) with its restarts. */
void cli_rp_html_timeline(const json_t *doc, FILE *out);

/* -- the results object, shared by results/results.c, results/summary.c, results/soak.c and
 * results/probe.c -- */
struct cli_rs_drift;
struct cli_rs_ci_reps;
/* The file beside results.json that gets a line per interval as it comes (intervals.c). */
#define CLI_RS_INTERVALS_JSONL "intervals.jsonl"
/* Keeps the run's first error for cl_results_last_error (results.c). */
void cli_rs_remember_error(struct cl_results *r, const struct cl_err *e);

struct stage_state {
	char *name;     /* planned name */
	json_t *server; /* what the server's /metrics said (cl_results_set_server), NULL none */
	bool finished;
	json_t *intervals; /* kept summaries (every stride-th) */
	uint64_t stride;
	uint64_t seen;
	struct cli_rs_client client;
	json_t *checks; /* this stage's SLO checks, once finished */
	/* a capacity search's probe: judged by the search's SLOs, not the run's */
	bool probe;
	char *probe_search;
	double probe_level;
	struct cl_scn_slo *probe_slos;
	size_t n_probe_slos;
	/* slo.abort_on_breach window: breached intervals in a row, and the latest's SLO */
	uint32_t breach_streak;
	char breach_why[200];
	/* drift (results/soak.c): made at the first interval, freed when the stage finishes */
	struct cli_rs_drift *drift;
	double ramp_s, duration_s; /* the scenario stage's: which intervals are measured */
	/* stages[].ci95's batches (results/ci.c): made at the first interval, freed at the end
	 * (of each repeat) */
	struct cli_rs_ci *ci;
	/* `repeat`: the runs planned, done, their objects, and the pooled metrics so far */
	uint32_t repeat_n, repeats_done;
	json_t *repeats;
	struct cl_metrics *pooled;
	struct cli_rs_ci_reps *reps; /* each repeat's histograms (results/ci.c) */
	double pooled_window_s;
	enum cl_stage_status pooled_status;
	char *pooled_reason;
};

struct cl_results {
	json_t *doc;
	char *dir;
	FILE *intervals_fp;
	struct stage_state *stages;
	size_t n_stages;
	struct cl_scn_slo *slos;
	size_t n_slos;
	uint64_t *samples;
	size_t n_samples;
	char *from_stage;
	unsigned formats;
	bool client_bound_warn;    /* scenario `client_bound: warn`: a client-bound stage passes */
	enum cl_api api;           /* workload.api: an embeddings stage gets `embeddings` */
	uint32_t abort_intervals;  /* slo.abort_on_breach: { intervals } (0: off) */
	struct cl_scn_drift drift; /* slo.max_drift */
	double report_interval_s;
	int64_t started_wall_us;
	bool finished;
	size_t breaches;
	char last_error[sizeof(((struct cl_err *)0)->msg)];
};

/* Rebuilds verdict, estimates and warnings from the finished stages, and counts breaches.
 * 0 or CL_ENOMEM. */
int cli_rs_summarise(struct cl_results *r);

/* results/soak.c: drift of one stage.  new: NULL when out of memory (or interval_s <= 0);
 * duration_s 0 for a request-bound stage.  add: one interval (ramp and drain intervals are
 * left out).  json: the stage's `drift` object (null when there is no interval, a note when
 * the stage is too short for two windows), appending max_drift checks to checks when cfg
 * sets limits; NULL when out of memory. */
struct cli_rs_drift *cli_rs_drift_new(const struct cl_scn_drift *cfg, double ramp_s,
				      double duration_s, double interval_s);
void cli_rs_drift_add(struct cli_rs_drift *d, double t_s, double interval_s,
		      const struct cl_metrics *m);
json_t *cli_rs_drift_json(struct cli_rs_drift *d, const struct cl_scn_drift *cfg, const char *stage,
			  json_t *checks);
void cli_rs_drift_free(struct cli_rs_drift *d);
/* results/ci.c: the 95 % intervals of a stage's headline figures (docs/results.md, "ci95").
 * new: NULL when out of memory; duration_s 0 for a request-bound stage.  add: one interval
 * (ramp and drain left out).  json: the stage's ci95 object, the point estimates read from
 * the finished stage object, cumulative its pooled metrics (the percentiles' quantiles); null when
 * there are fewer than 5 whole batches.  NULL when out of memory.  repeats_json: ci95 across n
 * repeats' stage objects (t interval over their figures; for the percentiles, with reps holding
 * the same n repeats and pooled their merged metrics, the interval of the distribution function
 * at the pooled percentile across them), around the pooled stage's estimates; null for n < 2. */
struct cli_rs_ci *cli_rs_ci_new(double ramp_s, double duration_s);
void cli_rs_ci_add(struct cli_rs_ci *c, double t_s, double interval_s, const struct cl_metrics *m);
json_t *cli_rs_ci_json(const struct cli_rs_ci *c, const json_t *stage,
		       const struct cl_metrics *cumulative);
json_t *cli_rs_ci_repeats_json(const json_t *stage, const json_t *const *repeats, size_t n,
			       const struct cli_rs_ci_reps *reps, const struct cl_metrics *pooled);
/* The repeats' histograms the percentiles' interval across repeats needs (cdf_repeats): new
 * (NULL when out of memory), add one finished repeat's metrics (0 or CL_ENOMEM), free. */
struct cli_rs_ci_reps *cli_rs_ci_reps_new(void);
int cli_rs_ci_reps_add(struct cli_rs_ci_reps *r, double window_s, const struct cl_metrics *m);
void cli_rs_ci_reps_free(struct cli_rs_ci_reps *r);
void cli_rs_ci_free(struct cli_rs_ci *c);
/* Half the width of the 95 % t interval of the mean of the finite values of v[0..n); NaN
 * with fewer than two. */
double cli_rs_ci_half(const double *v, size_t n);
/* Student's t quantiles of 97.5 % and 99.5 % with df >= 1 degrees of freedom (tabled to 30,
 * then rounded up to the next tabled 40, 60, 120, infinity): the 95 % and 99 % two-sided
 * multipliers. */
double cli_rs_t975(size_t df);
double cli_rs_t995(size_t df);

/* results/soak.c: judges one interval of a stage (ending t_s into it) against the SLOs that
 * apply to it, for the abort window (ss->breach_streak, ss->breach_why); ramp and drain
 * intervals are skipped. */
void cli_rs_interval_breach(const struct cl_results *r, struct stage_state *ss, double t_s,
			    const struct cl_metrics *m, double interval_s);

/* results/results.c: rebuilds the summary and rewrites results.json atomically.  0, or the error
 * (remembered for cl_results_last_error). */
CL_MUST_CHECK int cli_rs_write(struct cl_results *r);

/* Holds the finished stages' kept intervals to CL_RESULTS_MAX_FINISHED_INTERVALS rows in
 * all: while they hold more, the one that holds the most is halved (its stride doubles;
 * intervals.c).  0, or CL_ENOMEM. */
int cli_rs_fit_finished_intervals(struct cl_results *r);

/* results/probe.c: frees what a stage state owns (not the array slot). */
void cli_rs_stage_state_free(struct stage_state *ss);
/* results/probe.c: a probe's SLO checks on its cumulative metrics, in the stage's `probe`
 * object: {search, level, pass, checks}.  NULL when out of memory. */
json_t *cli_rs_probe_json(const struct stage_state *ss, const struct cl_metrics *m,
			  double window_s);
/* results/results.c: evaluates slos[0..n) that apply to the stage called name.  NULL: no memory. */
json_t *cli_rs_checks(const struct cl_scn_slo *slos, size_t n, const char *name,
		      const struct cl_metrics *m, double window_s);

/* -- faults (results/faults.c) -- */
/* Each agent's episodes (stalls, silences, loss) gathered from the stages' records into
 * the document's agents[].episodes.  0 or CL_ENOMEM. */
int cli_rs_agent_episodes(json_t *doc);
/* Appends the warnings the stages' faults call for (a lost agent's unaccounted load, the
 * coordinator's own stalls) to w.  0 or CL_ENOMEM. */
int cli_rs_fault_warnings(json_t *w, const json_t *stage);

/* -- stages too short for their requests (results/short.c) -- */
/* Whether a duration-bounded stage was too short for its requests: fewer than 10 completed,
 * or a window shorter than two typical lifetimes (E2E p50). Requests-bounded stages: never. */
bool cli_rs_too_short(const struct cl_scn_stage *st, const struct cl_metrics *m, double window_s);
/* Appends the warning for stage s (a results.json stage) when it is marked too_short.  0 or
 * CL_ENOMEM. */
int cli_rs_short_warning(json_t *w, const json_t *s);

/* results/repeat.c: appends the warning about requests that re-sent a body the run had
 * sent already (warmup and stages of doc), if any did.  0 or CL_ENOMEM. */
int cli_rs_repeat_warning(json_t *w, const json_t *doc);

/* results/util.c: appends the formatted warning (at most 1023 bytes) to arr.  0 or
 * CL_ENOMEM. */
int cli_rs_warn(json_t *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* results/util.c: inserts stage object o (taken, even on failure; NULL is CL_ENOMEM) into the
 * document's stages array before the first stage with a higher "index", keeping scenario
 * order whatever order stages finish in.  0 or CL_ENOMEM. */
int cli_rs_insert_stage(json_t *stages, size_t index, json_t *o);

/* results/summary.c: whether stage s's client-bound flag fails the run (every reason but
 * loop_lag and dispatch_lag, which only warn). */
bool cli_rs_client_bound_gates(const json_t *s);

#endif
