/* Renderers of a results document: terminal table, CSV, Markdown and a self-contained HTML
 * page with SVG charts.  Each reads only the document, so `chatload report results.json`
 * prints exactly what the run printed. */
#ifndef CHATLOAD_REPORT_H
#define CHATLOAD_REPORT_H

#include "chatload/err.h"

#include <jansson.h>
#include <stdio.h>

enum cl_report_format {
	CL_REPORT_TABLE = 0, /* aligned text for a terminal */
	CL_REPORT_CSV = 1,   /* one row per stage, columns in docs/results.md */
	CL_REPORT_MD = 2,    /* report.md */
	CL_REPORT_HTML = 3,  /* report.html: one file, inline CSS and SVG, no scripts */
	CL_REPORT_VLLM = 4,  /* vLLM's benchmark result JSON, a line per stage (cl_report_vllm) */
};

/* "table", "csv", "md" (or "markdown"), "html", "vllm" -> format.  0 or CL_EINVAL. */
int cl_report_parse_format(const char *name, enum cl_report_format *out);

/*
 * Writes doc in format f to out.  doc may come from a file: missing or mistyped fields are
 * shown as "-", never trusted.  Does not close out.  Returns 0, or CL_EIO when writing
 * failed (ferror on out), CL_EINVAL for an unknown format.
 */
int cl_report_render(const json_t *doc, enum cl_report_format f, FILE *out);

/* The individual renderers (cl_report_render dispatches to them). */
int cl_report_table(const json_t *doc, FILE *out);
int cl_report_csv(const json_t *doc, FILE *out);
int cl_report_md(const json_t *doc, FILE *out);
int cl_report_html(const json_t *doc, FILE *out);
/* report.html as the live page serves it (chatload run --web): a "live" badge and a small
 * inline script that fetches the page every 2 s and swaps in the new content. */
int cl_report_html_live(const json_t *doc, FILE *out);

/* What `chatload report --format vllm` writes (docs/results.md, "vLLM's result JSON"). */
struct cl_report_vllm_opts {
	const char *stage;         /* the stage of this name only; NULL: every stage */
	const double *percentiles; /* p<P>_<metric>_ms keys, as vLLM's --metric-percentiles;
				    * NULL or none: 99, vLLM's default */
	size_t n_percentiles;
	/* requests.jsonl to fill the per-request lists from (input_lens, output_lens, ttfts,
	 * latencies, start_times, errors); NULL: no lists */
	const char *requests_path;
};

/*
 * Writes the stages of doc (or the one o->stage names) as vLLM's `vllm bench serve` result
 * JSON, one compact object per line: a single stage is the document `--save-result` writes,
 * several are the lines `--append-result` appends.  Each key holds the chatload figure of
 * the same meaning, null where chatload has none.  A stage whose measured requests that
 * ended are not all in requests.jsonl (records dropped) gets no lists, and a warning is
 * logged.  o may be NULL.  Does not close out.  Returns 0, or CL_ENOTFOUND (no such stage),
 * CL_EIO / CL_EPARSE / CL_ETOOBIG (requests.jsonl), CL_ENOMEM, with err (may be NULL) saying
 * what and where; CL_EIO when writing to out failed.
 */
int cl_report_vllm(const json_t *doc, const struct cl_report_vllm_opts *o, FILE *out,
		   struct cl_err *err);

/* The bit of a format in the `formats` of cl_report_write_files. */
#define CL_REPORT_FILE(f) (1u << (f))

/*
 * Writes the report files of a finished run into dir, each atomically (a temporary file,
 * fsync, rename), as `formats` asks (CL_REPORT_FILE bits): results.csv (CL_REPORT_CSV),
 * report.md (CL_REPORT_MD), report.html (CL_REPORT_HTML); CL_REPORT_TABLE has no file.  The
 * run calls it after cl_results_finish, with the scenario's output.formats; results/ writes
 * results.json only.  Every file asked for is attempted: returns 0, or the first failure
 * (CL_EIO, CL_ENOMEM) with err (may be NULL) saying which file and why.
 */
int cl_report_write_files(const json_t *doc, const char *dir, unsigned formats, struct cl_err *err);

/* The CSV columns, in order (a stable interface: documented in docs/results.md):
 * cl_report_csv_column(i) for i < cl_report_csv_n_columns(), NULL past the end. */
size_t cl_report_csv_n_columns(void);
const char *cl_report_csv_column(size_t i);

#endif
