/* What the renderers of report/ share (cli_rp_): number and text formatting, the summary row
 * and the detail tables every format shows, the SVG charts and report.html's chart sections.
 * Not an interface for other folders: report/report.h, report/compare.h and report/history.h
 * are.  The dispatcher (report/report.c) calls the renderers; the renderers call these
 * helpers, which call no renderer. */
#ifndef CHATLOAD_REPORT_INTERNAL_H
#define CHATLOAD_REPORT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* -- how a number or a text is written (report/format.c) -- */

/* Formats x with `decimals` places into buf, or "-" when x is NaN.  Returns buf. */
char *cli_rp_fmt(char *buf, size_t n, double x, int decimals);
/* Formats a count (JSON integer or real) or "-". */
char *cli_rp_fmt_count(char *buf, size_t n, double x);
/* A share of a whole in percent as people read it: "100%", "45%", "2.5%", "0.12%". */
char *cli_rp_fmt_pct(char *buf, size_t n, double pct);
/* Milliseconds and rates with precision that suits their size; "-" for NaN. */
char *cli_rp_fmt_ms(char *buf, size_t n, double ms);
char *cli_rp_fmt_rate(char *buf, size_t n, double v);
/* A check's measured value and limit in its unit ("2345.0 ms", "1.20%", "12.5/s"). */
char *cli_rp_fmt_slo_value(char *buf, size_t n, double v, const char *unit);
/* Large counts as people read them: 51200000 -> "51.2M". */
char *cli_rp_fmt_big(char *buf, size_t n, double v);
/* Text escaped for XML / HTML, a Markdown table cell and a CSV field. */
void cli_rp_put_xml(FILE *f, const char *s);
void cli_rp_put_md(FILE *f, const char *s);
void cli_rp_put_csv(FILE *f, const char *s);

/* -- the cells every format shares (report/common.c) -- */

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
	RP_INPUTS_PS, /* inputs (vectors) per second */
	RP_INTOK_PS,  /* input (prompt) tokens per second */
	RP_E2E99,
	RP_TOOL_CALLS, /* answers that were tool calls: shown only when some stage had one */
	RP_DOCS_PS,    /* rerank and score (every stage has "rerank"): documents per second */
	RP_CANCELLED,  /* abandoned by the client (workload.cancel): shown only when some were */
	RP_AUDIO_PS,   /* transcription: audio seconds transcribed per second */
	RP_RTF50,      /* transcription: the real-time factor, p50 and p99 */
	RP_RTF99,
	RP__COLS
};
#define RP_CELL_MAX 96
struct cli_rp_row {
	char cell[RP__COLS][RP_CELL_MAX];
};
/* Column headings (with units) and whether a column holds numbers (right-aligned). */
extern const char *const cli_rp_col_names[RP__COLS];
extern const bool cli_rp_col_numeric[RP__COLS];
/* The load level of a stage as people read it: "c=8", "20/s", "20/s (max 64)". */
char *cli_rp_stage_load(const json_t *stage, char *buf, size_t n);
/* Fills row from a stage object of the document. */
void cli_rp_stage_row(const json_t *stage, struct cli_rp_row *row);
/* The columns to show for these stages, in order, into cols[RP__COLS]; returns how many.
 * Columns that only matter sometimes (no content; TTFC and the content rate, which matter
 * only for a thinking model) are left out when no stage needs them. */
size_t cli_rp_columns(const json_t *stages, int cols[RP__COLS]);
/* Whether any of these stages saw reasoning tokens (a thinking model). */
bool cli_rp_thinking(const json_t *stages);
/* Whether these stages are a run without output: every one has "embeddings", or every one
 * has "rerank" (rerank and score): no token columns or charts. */
bool cli_rp_embeddings(const json_t *stages);
/* Whether every stage is a transcription stage (has `audio`). */
bool cli_rp_audio(const json_t *stages);
/* Whether a stage's numbers are not a normal measurement: its status is not ok, or it was
 * client-bound.  Such stages are marked in every table and never drawn as normal points. */
bool cli_rp_stage_marked(const json_t *stage);
/* Why a stage is not a normal point ("failed", "client-bound"), or NULL when it is one. */
const char *cli_rp_stage_mark(const json_t *stage);

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
	RP_TBL_LATENCY,   /* stage x metric: mean, p50, p90, p95, p99, max */
	RP_TBL_TIMING,    /* where the time went: connection stages and the TTFT split */
	RP_TBL_ENERGY,    /* joules and money per token (stages[].energy, stages[].cost) */
	RP_TBL_THINKING,  /* TTFT vs TTFC, reasoning vs content tokens (thinking models) */
	RP_TBL_TOKENS,    /* prompt, requested and received output tokens per request */
	RP_TBL_ERRORS,    /* errors by class per stage */
	RP_TBL_CLIENT,    /* client health per stage and why it was flagged */
	RP_TBL_EPISODES,  /* per agent: its stalls, partitions and loss */
	RP_TBL_ENDPOINTS, /* several endpoints (target.urls): stage x endpoint */
	RP_TBL_HOSTS,     /* several agent processes on one host: the agents grouped by host */
	RP_TBL_CLASSES,   /* request classes (workload.classes): stage x class */
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
#define RP_SERVER_COLS 11
extern const char *const cli_rp_server_cols[RP_SERVER_COLS];
extern const bool cli_rp_server_numeric[RP_SERVER_COLS];
bool cli_rp_server_row(const json_t *stage, char cell[RP_SERVER_COLS][RP_CELL_MAX]);
/* The notes under the Server table, each one line of plain text handed to emit: a page
 * that could not be read, every server restart (stage and time), the extra series kept per
 * stage and the names that matched nothing.  Nothing for files without them. */
void cli_rp_server_notes(const json_t *doc, void (*emit)(void *arg, const char *line), void *arg);

/* Each stage's image cost in words (its `images` object), e.g. "stage 'c2':
 * 2 images per request, 1234.0 prompt tokens per request with them against 1064.0 for the
 * text alone (estimated): 85.0 per image", handed to emit (NULL: only counted), in order.
 * Returns how many stages have one. */
size_t cli_rp_images_lines(const json_t *stages, void (*emit)(void *arg, const char *line),
			   void *arg);
/* The verdict in one word: "PASS", "FAIL" or "NO SLO" (no checks). */
const char *cli_rp_verdict_word(const json_t *doc);
/* An SLO check's name as the verdict tables show it: its key, and for a request class's own
 * SLO the class ("ttft_p50 (class batch)"), in buf. */
const char *cli_rp_check_name(const json_t *check, char *buf, size_t n);
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
/* A series and a chart as full initialisers: the fields given, every optional one zero (the
 * structs grow optional fields; report/svg.c). */
struct cli_rp_series cli_rp_series_of(const char *name, const char *color, const double *x,
				      const double *y, size_t n, bool dashed,
				      const char *const *mark, const char *const *point_name);
struct cli_rp_chart cli_rp_chart_of(const char *title, const char *xl, const char *yl,
				    const char *pl, const struct cli_rp_series *se, size_t n, int w,
				    int h, bool integer_y);
/* The colours of report.html's charts (and of chatload history's page). */
#define CLI_RP_BLUE   "#2563eb"
#define CLI_RP_RED    "#dc2626"
#define CLI_RP_GREEN  "#16a34a"
#define CLI_RP_PURPLE "#7c3aed"
#define CLI_RP_ORANGE "#ea580c"
#define CLI_RP_GREY   "#6b7280"
/* The colours of a chart's several lines (stages, agents, error classes), in order (svg.c). */
#define CLI_RP_PALETTE_N 8
extern const char *const cli_rp_palette[CLI_RP_PALETTE_N];

/* report.html's chart sections, each a <section> or nothing. */
/* Throughput and latency against load for one mode's stages, and the trade-off chart
 * (report/html_charts_load.c). */
void cli_rp_html_load_charts(const json_t *doc, bool rate_mode, FILE *out);
/* Cumulative distributions from the stored histograms (latencies, tokens per request;
 * report/html_charts_dist.c). */
void cli_rp_html_distributions(const json_t *doc, FILE *out);
/* Every stage's intervals on one time axis, client health included, and under the client's
 * throughput and TTFT the server's own signals (stages[].server.timeline) with its restarts
 * (report/html_charts_timeline.c). */
void cli_rp_html_timeline(const json_t *doc, FILE *out);

#endif
