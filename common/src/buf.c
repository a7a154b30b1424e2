/* Capped growable buffer. */
#include "chatload/buf.h"

#include "chatload/assert.h"
#include "chatload/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cl_buf_init(struct cl_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

static int reserve(struct cl_buf *b, size_t extra)
{
	if (b->max && (extra > b->max || b->len > b->max - extra))
		return CL_ETOOBIG;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	char *p = realloc(b->data, cap);
	if (!p)
		return CL_ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int cl_buf_append(struct cl_buf *b, const void *p, size_t n)
{
	int rc = reserve(b, n);
	if (rc)
		return rc;
	CL_ASSERT(b->len + n < b->cap); /* reserve() left room for the bytes and the NUL */
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int cl_buf_puts(struct cl_buf *b, const char *s)
{
	return cl_buf_append(b, s, strlen(s));
}

int cl_buf_vprintf(struct cl_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return CL_EINVAL;
	int rc = reserve(b, (size_t)n);
	if (rc)
		return rc;
	CL_ASSERT(b->len + (size_t)n < b->cap);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int cl_buf_printf(struct cl_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = cl_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void cl_buf_reset(struct cl_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *cl_buf_steal(struct cl_buf *b)
{
	char *p = b->data;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void cl_buf_free(struct cl_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int cl_buf_read_file(struct cl_buf *b, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return CL_EIO;
	char chunk[16384];
	int rc = 0;
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		rc = cl_buf_append(b, chunk, n);
		if (rc)
			break;
	}
	if (!rc && ferror(f))
		rc = CL_EIO;
	int saved = errno;
	fclose(f);
	errno = saved;
	if (!rc && !b->data)
		rc = cl_buf_append(b, "", 0); /* an empty file is an empty string, not NULL */
	return rc;
}
