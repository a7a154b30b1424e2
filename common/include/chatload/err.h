/* Error codes and the caller-supplied error record every fallible chatload call fills. */
#ifndef CHATLOAD_ERR_H
#define CHATLOAD_ERR_H

#include <stddef.h>

/* Fallible functions return 0 or one of these negative codes. */
enum cl_errcode {
	CL_OK = 0,
	CL_EINVAL = -1,     /* bad argument or bad input value */
	CL_ENOMEM = -2,     /* allocation failed */
	CL_ERANGE = -3,     /* value outside the permitted range */
	CL_EIO = -4,        /* read/write failure; errno-style detail in the message */
	CL_EPARSE = -5,     /* input is not well-formed (YAML, msgpack, SSE, JSON) */
	CL_ETOOBIG = -6,    /* input exceeds a hard cap */
	CL_EPROTO = -7,     /* peer broke the wire protocol */
	CL_ETIMEDOUT = -8,  /* deadline passed */
	CL_ECLOSED = -9,    /* object or peer already closed */
	CL_ESTATE = -10,    /* call not valid in the current state */
	CL_ENOTFOUND = -11, /* named thing does not exist */
	CL_EREFUSED = -12,  /* peer refused (version, token, allow-list) */
	CL_ESYS = -13,      /* a system call failed; see the message */
	CL_EVERSION = -14,  /* incompatible protocol or format version */
};

/*
 * CL_MUST_CHECK marks a function whose result the caller must look at: a buffer append that
 * can fail at its cap, an init or allocation that can leave nothing behind, an encoder or
 * decoder, a file write.  Dropping such a result is a compile warning (as curl marks
 * dynbuf's appends with WARN_UNUSED_RESULT), and the build is warning-free.
 *
 * When ignoring one is right, say why in a comment and write CL_IGNORE(call): gcc does not
 * let a plain (void) cast silence warn_unused_result, so the `!` makes it a used value.
 */
#if defined(__GNUC__) || defined(__clang__)
#define CL_MUST_CHECK __attribute__((warn_unused_result))
#else
#define CL_MUST_CHECK
#endif
#define CL_IGNORE(call) ((void)!(call))

/* Returns a static, lower-case description of an error code ("invalid argument"). */
const char *cl_strerror(int code);

/*
 * A human-readable error: what failed and, for input files, where.  file may be empty;
 * line and col are 1-based and 0 when unknown.  Zero-initialised is "no error".
 */
struct cl_err {
	int code;
	int line;
	int col;
	char file[256];
	char msg[512];
};

/* Resets err to "no error".  Accepts NULL. */
void cl_err_clear(struct cl_err *err);

/*
 * Records code and a printf-style message (no position).  Returns code so callers can
 * write `return cl_err_set(err, CL_EINVAL, "...")`.  err may be NULL (then only returns).
 */
int cl_err_set(struct cl_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* As cl_err_set, with a file position (file may be NULL; line/col 0 when unknown). */
int cl_err_setpos(struct cl_err *err, int code, const char *file, int line, int col,
		  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/*
 * Prefixes the existing message with "prefix: " (e.g. the peer or field name), keeping
 * code and position.  Returns err->code.
 */
int cl_err_prefix(struct cl_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Formats err as "file:line:col: msg" (omitting the parts that are unknown) into buf of
 * size n, always NUL-terminated.  Returns buf.
 */
char *cl_err_format(const struct cl_err *err, char *buf, size_t n);

/*
 * A list of errors, for loaders that report every problem they find rather than the first.
 * Zero-initialised is empty.  cl_diags_add copies err; on allocation failure the error is
 * dropped but `dropped` counts it, so "and N more" can still be said.
 */
struct cl_diags {
	struct cl_err *items;
	size_t n;
	size_t cap;
	size_t dropped;
};

void cl_diags_add(struct cl_diags *d, const struct cl_err *err);
void cl_diags_free(struct cl_diags *d);

#endif
