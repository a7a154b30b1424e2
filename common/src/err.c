/* Error codes and struct cl_err helpers. */
#include "chatload/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cl_strerror(int code)
{
	switch (code) {
	case CL_OK:
		return "success";
	case CL_EINVAL:
		return "invalid argument";
	case CL_ENOMEM:
		return "out of memory";
	case CL_ERANGE:
		return "value out of range";
	case CL_EIO:
		return "input/output error";
	case CL_EPARSE:
		return "malformed input";
	case CL_ETOOBIG:
		return "input too large";
	case CL_EPROTO:
		return "protocol error";
	case CL_ETIMEDOUT:
		return "timed out";
	case CL_ECLOSED:
		return "closed";
	case CL_ESTATE:
		return "invalid state";
	case CL_ENOTFOUND:
		return "not found";
	case CL_EREFUSED:
		return "refused";
	case CL_ESYS:
		return "system call failed";
	case CL_EVERSION:
		return "incompatible version";
	default:
		return "unknown error";
	}
}

void cl_err_clear(struct cl_err *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

static void vset(struct cl_err *err, int code, const char *file, int line, int col, const char *fmt,
		 va_list ap)
{
	err->code = code;
	err->line = line;
	err->col = col;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int cl_err_set(struct cl_err *err, int code, const char *fmt, ...)
{
	if (!err)
		return code;
	va_list ap;
	va_start(ap, fmt);
	vset(err, code, NULL, 0, 0, fmt, ap);
	va_end(ap);
	return code;
}

int cl_err_setpos(struct cl_err *err, int code, const char *file, int line, int col,
		  const char *fmt, ...)
{
	if (!err)
		return code;
	va_list ap;
	va_start(ap, fmt);
	vset(err, code, file, line, col, fmt, ap);
	va_end(ap);
	return code;
}

int cl_err_prefix(struct cl_err *err, const char *fmt, ...)
{
	if (!err)
		return CL_EINVAL;
	char prefix[256];
	char old[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	size_t pl = strnlen(prefix, sizeof(prefix) - 1);
	memcpy(err->msg, prefix, pl);
	memcpy(err->msg + pl, ": ", 2);
	size_t room = sizeof(err->msg) - pl - 3;
	size_t ol = strnlen(old, room);
	memcpy(err->msg + pl + 2, old, ol);
	err->msg[pl + 2 + ol] = '\0';
	return err->code;
}

char *cl_err_format(const struct cl_err *err, char *buf, size_t n)
{
	if (!n)
		return buf;
	if (!err) {
		buf[0] = '\0';
		return buf;
	}
	if (err->file[0] && err->line > 0 && err->col > 0)
		snprintf(buf, n, "%s:%d:%d: %s", err->file, err->line, err->col, err->msg);
	else if (err->file[0] && err->line > 0)
		snprintf(buf, n, "%s:%d: %s", err->file, err->line, err->msg);
	else if (err->file[0])
		snprintf(buf, n, "%s: %s", err->file, err->msg);
	else
		snprintf(buf, n, "%s", err->msg[0] ? err->msg : cl_strerror(err->code));
	return buf;
}

void cl_diags_add(struct cl_diags *d, const struct cl_err *err)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct cl_err *p = realloc(d->items, cap * sizeof(*p));
		if (!p) {
			d->dropped++;
			return;
		}
		d->items = p;
		d->cap = cap;
	}
	d->items[d->n++] = *err;
}

void cl_diags_free(struct cl_diags *d)
{
	if (!d)
		return;
	free(d->items);
	d->items = NULL;
	d->n = d->cap = d->dropped = 0;
}
