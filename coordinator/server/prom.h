/* The Prometheus text exposition format (0.0.4, and the OpenMetrics subset servers emit),
 * decoded: the one place chatload reads a /metrics page. */
#ifndef CHATLOAD_SERVER_PROM_H
#define CHATLOAD_SERVER_PROM_H

#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_PROM_MAX_PAGE   (8u << 20) /* bytes of one page; larger pages are refused */
#define CL_PROM_MAX_SERIES 50000u     /* samples kept from one page; the rest are dropped */
#define CL_PROM_MAX_LINE   65536u     /* a longer line is malformed */

enum cl_prom_type {
	CL_PROM_UNTYPED = 0,
	CL_PROM_COUNTER,
	CL_PROM_GAUGE,
	CL_PROM_HISTOGRAM,
	CL_PROM_SUMMARY,
};

/*
 * One sample line.  name is the sample's own name (`x_bucket` of histogram `x`); family is
 * the name of the TYPE line it belongs to ("" when none); labels are the pairs other than
 * `le`, each `k="v"` with v escaped again as in the exposition format, joined by ',' in the
 * order the page gave them, so samples of one series compare equal as strings.  le is the
 * `le` label's value (+Inf allowed), NAN when absent.
 */
struct cl_prom_sample {
	char *name;
	char *family;
	char *labels;
	double le;
	double value;
	int64_t ts_ms;
	bool has_ts;
	enum cl_prom_type type;
};

struct cl_prom_page {
	struct cl_prom_sample *s;
	size_t n, cap;
	size_t bad_lines;   /* lines that were not a comment or a well-formed sample (skipped) */
	size_t dropped;     /* samples past CL_PROM_MAX_SERIES */
	char first_bad[96]; /* the first bad line's problem, for the one warning */
};

/*
 * Decodes len bytes of text (need not be NUL-terminated) into page, which must be zeroed or
 * freed before.  A malformed line is skipped and counted (bad_lines), never fatal.  Returns 0;
 * CL_ETOOBIG (len > CL_PROM_MAX_PAGE, nothing parsed); CL_ENOMEM.  On failure page is left
 * valid to free.  Never blocks; linear in len.
 */
CL_MUST_CHECK int cl_prom_parse(const char *text, size_t len, struct cl_prom_page *page,
				struct cl_err *err);

/* Frees what cl_prom_parse stored; page is then empty.  Accepts a zeroed page. */
void cl_prom_page_free(struct cl_prom_page *page);

/* The type's name as in a TYPE line ("untyped" for CL_PROM_UNTYPED). */
const char *cl_prom_type_name(enum cl_prom_type t);

#endif
