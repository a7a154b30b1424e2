/* JSON values and files as results.json is written and read (the cli_rj_ helpers of
 * results/util.c): text that may not be UTF-8 made a JSON string, numbers rounded as the
 * files keep them, the document's key lists, the dump format and atomic writes.  Shared by
 * results/ and report/ (compare's and history's JSON documents, the report files), the one
 * internal header of results/ that report/ may include (docs/architecture.md names it). */
#ifndef CHATLOAD_RESULTS_JSON_INT_H
#define CHATLOAD_RESULTS_JSON_INT_H

#include "chatload/err.h"

#include <jansson.h>
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

/* The latency metrics stored per stage under latency_ms, in document order. */
extern const char *const cli_rj_lat_keys[];
extern const size_t cli_rj_n_lat_keys;
/* The error classes stored under requests.errors, in document order. */
extern const char *const cli_rj_err_keys[];
extern const size_t cli_rj_n_err_keys;

#endif
