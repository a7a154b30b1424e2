/* Typed, capped, hostile-safe access to the values of decoded msgpack maps (for table.c and
 * the custom codecs of the tables): the protocol's rules and messages over common's one msgpack
 * field reader (common/src/mpk_read.c). */
#include "chatload/wire.h"

#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* "TYPE: field 'path.name' <why>"; returns code. */
int cli_wire_bad(struct wire_dec *d, int code, const char *name, const char *fmt, ...)
{
	char why[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return cl_err_set(d->err, code, "%s%sfield '%s%s%s' %s", d->what ? d->what : "",
			  d->what ? ": " : "", d->path.s, d->path.len ? "." : "", name, why);
}

int cli_wire_wrong(struct wire_dec *d, const char *name, const char *want, const msgpack_object *o)
{
	return cli_wire_bad(d, CL_EPROTO, name, "must be %s, not %s", want, cli_mpk_type_word(o));
}

int cli_wire_missing(struct wire_dec *d, const char *name)
{
	return cli_wire_bad(d, CL_EPROTO, name, "is missing");
}

int cli_wire_need_map(struct wire_dec *d, const char *name, const msgpack_object *v, bool req)
{
	if (!v)
		return req ? cli_wire_missing(d, name) : 0;
	if (v->type != MSGPACK_OBJECT_MAP)
		return cli_wire_wrong(d, name, "a map", v);
	return 0;
}

int cli_wire_get_u64(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     uint64_t max, uint64_t *out)
{
	if (!v)
		return req ? cli_wire_missing(d, name) : 0;
	uint64_t x;
	if (!cli_mpk_u64(v, &x))
		return cli_wire_wrong(d, name, "an unsigned integer", v);
	if (x > max)
		return cli_wire_bad(d, CL_EPROTO, name, "is out of range (%llu, max %llu)",
				    (unsigned long long)x, (unsigned long long)max);
	*out = x;
	return 0;
}

int cli_wire_get_u32(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     uint32_t *out)
{
	uint64_t x = *out;
	int rc = cli_wire_get_u64(d, name, v, req, UINT32_MAX, &x);
	if (!rc)
		*out = (uint32_t)x;
	return rc;
}

/* Signed integers; min 0 for durations and sizes. */
int cli_wire_get_i64(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     int64_t min, int64_t *out)
{
	if (!v)
		return req ? cli_wire_missing(d, name) : 0;
	int64_t x;
	if (!cli_mpk_i64(v, &x)) {
		/* An integer it cannot hold is out of range; anything else is the wrong type. */
		if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			return cli_wire_bad(d, CL_EPROTO, name, "is out of range (%llu, max %lld)",
					    (unsigned long long)v->via.u64, (long long)INT64_MAX);
		return cli_wire_wrong(d, name, "an integer", v);
	}
	if (x < min)
		return cli_wire_bad(d, CL_EPROTO, name, "is out of range (%lld, min %lld)",
				    (long long)x, (long long)min);
	*out = x;
	return 0;
}

/* A finite number >= 0 (integers are accepted: other encoders pack 2.0 as 2). */
int cli_wire_get_dbl(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     double *out)
{
	if (!v)
		return req ? cli_wire_missing(d, name) : 0;
	double x;
	if (!cli_mpk_f64(v, &x))
		return cli_wire_wrong(d, name, "a number", v);
	if (!isfinite(x) || x < 0)
		return cli_wire_bad(d, CL_EPROTO, name,
				    "must be a finite, non-negative number (%g)", x);
	*out = x;
	return 0;
}

int cli_wire_get_bool(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		      bool *out)
{
	if (!v)
		return req ? cli_wire_missing(d, name) : 0;
	if (!cli_mpk_bool(v, out))
		return cli_wire_wrong(d, name, "a boolean", v);
	return 0;
}

/* Checks a string value against its cap and content rules, without copying. */
int cli_wire_check_str(struct wire_dec *d, const char *name, const msgpack_object *v, size_t cap,
		       enum wire_str kind)
{
	const char *s;
	size_t n;
	if (!cli_mpk_str(v, &s, &n))
		return cli_wire_wrong(d, name, "a string", v);
	if (n > cap)
		return cli_wire_bad(d, CL_ETOOBIG, name, "is too long (%zu bytes, max %zu)", n,
				    cap);
	const char *why = wire_str_problem(s, n, kind);
	if (why)
		return cli_wire_bad(d, CL_EPROTO, name, "%s", why);
	return 0;
}

/* A string copied into a new NUL-terminated allocation (*out stays NULL when absent). */
int cli_wire_get_str(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     size_t cap, enum wire_str kind, char **out, size_t *len_out)
{
	if (!v)
		return req ? cli_wire_missing(d, name) : 0;
	int rc = cli_wire_check_str(d, name, v, cap, kind);
	if (rc)
		return rc;
	size_t n = v->via.str.size;
	char *s = malloc(n + 1);
	if (!s)
		return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding '%s'", name);
	if (n)
		memcpy(s, v->via.str.ptr, n);
	s[n] = '\0';
	*out = s;
	if (len_out)
		*len_out = n;
	return 0;
}

/* A string into a fixed array of size cap + 1. */
int cli_wire_get_fixed_str(struct wire_dec *d, const char *name, const msgpack_object *v, char *dst,
			   size_t size, enum wire_str kind)
{
	if (!v)
		return cli_wire_missing(d, name);
	int rc = cli_wire_check_str(d, name, v, size - 1, kind);
	if (rc)
		return rc;
	memcpy(dst, v->via.str.ptr, v->via.str.size);
	dst[v->via.str.size] = '\0';
	return 0;
}

/* An enum spelled as a string: lookup returns -1 for an unknown spelling. */
int cli_wire_get_enum(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		      int (*lookup)(const char *), int *out)
{
	if (!v)
		return req ? cli_wire_missing(d, name) : 0;
	int rc = cli_wire_check_str(d, name, v, 63, WSTR_NAME);
	if (rc)
		return rc;
	char s[64];
	memcpy(s, v->via.str.ptr, v->via.str.size);
	s[v->via.str.size] = '\0';
	int x = lookup(s);
	if (x < 0)
		return cli_wire_bad(d, CL_EPROTO, name, "has unknown value '%s'", s);
	*out = x;
	return 0;
}

/* An array of strings, each within cap, at most max_n of them. */
int cli_wire_get_str_array(struct wire_dec *d, const char *name, const msgpack_object *v,
			   size_t max_n, size_t cap, enum wire_str kind, char ***out, size_t *n_out)
{
	if (!v)
		return cli_wire_missing(d, name);
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, name, "an array", v);
	size_t n = v->via.array.size;
	if (n > max_n)
		return cli_wire_bad(d, CL_ETOOBIG, name, "has too many entries (%zu, max %zu)", n,
				    max_n);
	if (n == 0)
		return 0;
	char **a = calloc(n, sizeof(*a));
	if (!a)
		return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding '%s'", name);
	*out = a;
	*n_out = n;
	for (size_t i = 0; i < n; i++) {
		char nm[64];
		snprintf(nm, sizeof(nm), "%s[%zu]", name, i);
		int rc =
		    cli_wire_get_str(d, nm, &v->via.array.ptr[i], true, cap, kind, &a[i], NULL);
		if (rc)
			return rc;
	}
	return 0;
}
