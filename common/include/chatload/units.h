/* Parsing and formatting of the quantities users type: durations, rates, percentages, sizes,
 * and the checked string-to-number conversions everything else uses (no bare strtol). */
#ifndef CHATLOAD_UNITS_H
#define CHATLOAD_UNITS_H

#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Durations: one or more <number><unit> parts, units us, ms, s, m, h (and d), e.g. "250ms",
 * "90s", "2m", "1h30m", "1.5s".  A bare "0" is zero.  Rejects empty strings, missing or
 * unknown units, negatives, overflow (> 100 days).  On error fills err (message names the
 * text) and returns CL_EINVAL; *out_us untouched.
 */
int cl_parse_duration_us(const char *text, int64_t *out_us, struct cl_err *err);

/* Rates: "<number>/s", "/m" or "/h" (e.g. "20/s", "1200/m"), result per second, > 0. */
int cl_parse_rate(const char *text, double *out_per_s, struct cl_err *err);

/* Percentages: "1%", "0.5%" -> fraction 0.01, 0.005; range 0..100%. */
int cl_parse_percent(const char *text, double *out_fraction, struct cl_err *err);

/* Sizes: "512", "64KiB", "4MiB", "1GiB", "10kB", "5MB" -> bytes. */
int cl_parse_size(const char *text, uint64_t *out_bytes, struct cl_err *err);

/* Whole-string integer/float conversions: no leading/trailing junk, no overflow.
 * Return 0 or CL_EINVAL (not a number) / CL_ERANGE (out of [min, max]). */
int cl_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out);
int cl_parse_u64(const char *text, uint64_t max, uint64_t *out);
int cl_parse_double(const char *text, double *out);
/* "true/false/yes/no/on/off/1/0", case-insensitive. */
int cl_parse_bool(const char *text, bool *out);

/*
 * How a duration is written for people.  Two readers want different things: a configured
 * value or a measured latency wants its precision, a wait someone watches wants a steady
 * "6.2s" that never jumps between units.  Each style's output is pinned by tests and docs.
 */
enum cl_duration_style {
	/* As precise as the magnitude deserves: "850us", "12.3ms", "4.20s", "2m05s", "1h30m"
	 * (minutes and hours truncated, the smaller part always shown). */
	CL_DURATION_PRECISE = 0,
	/* Elapsed time in tenths of a second, whole seconds (rounded) past a minute, a zero
	 * smaller part left out: "0.0s", "6.2s", "59.9s", "2m05s", "15m", "1h30m", "2h". */
	CL_DURATION_TENTHS,
	/* One request's latency: whole milliseconds (rounded) below a second, "101ms"; from a
	 * second on as CL_DURATION_TENTHS. */
	CL_DURATION_MILLIS,
};

/* Formats us (negative taken as 0) in style into buf (size n, NUL-terminated when n > 0,
 * truncated to fit); returns buf, so a call can be a printf argument. */
char *cl_format_duration_us(int64_t us, enum cl_duration_style style, char *buf, size_t n);

#endif
