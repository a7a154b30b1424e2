/* A growable byte buffer with a hard cap: every buffer filled from outside has one. */
#ifndef CHATLOAD_BUF_H
#define CHATLOAD_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "chatload/err.h"

/*
 * data is always NUL-terminated (when non-NULL) so text can be used as a C string.
 * Zero-initialised plus a max is a valid empty buffer: `struct cl_buf b = { .max = 1<<20 };`
 * max == 0 means "no cap" and is only for trusted, internal data.
 */
struct cl_buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
};

/* Initialises an empty buffer with a cap of max bytes (0: none). Does not allocate. */
void cl_buf_init(struct cl_buf *b, size_t max);

/* Appends n bytes.  Returns 0, CL_ETOOBIG past the cap (buffer unchanged), CL_ENOMEM. */
CL_MUST_CHECK int cl_buf_append(struct cl_buf *b, const void *p, size_t n);
CL_MUST_CHECK int cl_buf_puts(struct cl_buf *b, const char *s);
CL_MUST_CHECK int cl_buf_printf(struct cl_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
CL_MUST_CHECK int cl_buf_vprintf(struct cl_buf *b, const char *fmt, va_list ap);

/* Empties the buffer, keeping its memory. */
void cl_buf_reset(struct cl_buf *b);

/* Hands the data to the caller (who frees it) and leaves b empty; NULL when empty. */
char *cl_buf_steal(struct cl_buf *b);

/* Frees the memory; b is then empty with the same cap.  Accepts zeroed buffers. */
void cl_buf_free(struct cl_buf *b);

/* Reads a whole file into b, up to b->max bytes (CL_ETOOBIG beyond).  CL_EIO on failure,
 * with errno preserved. */
CL_MUST_CHECK int cl_buf_read_file(struct cl_buf *b, const char *path);

#endif
