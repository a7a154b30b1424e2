/* The engine of the field tables: one walk of a table encodes a struct as a msgpack map, one
 * decodes a map into the struct, so each field is named, typed and bounded once (internal.h,
 * "The field tables"). */
#include "chatload/assert.h"
#include "chatload/wire.h"

#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define AT(st, f)  ((char *)(st) + (f)->off)
#define CAT(st, f) ((const char *)(st) + (f)->off)

/* ---- Encoding ---------------------------------------------------------------------------- */

int cli_wire_enc_fail(struct enc *e, int code, const char *name, const char *fmt, ...)
{
	if (e->rc)
		return e->rc;
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	e->rc = cl_err_set(e->err, code, "cannot encode %s: field '%s%s%s' %s", e->what, e->path.s,
			   e->path.len ? "." : "", name, why);
	return e->rc;
}

void cli_wire_enc_chk(struct enc *e, int pack_rc)
{
	if (pack_rc && !e->rc)
		e->rc = cl_err_set(e->err, CL_ENOMEM, "cannot encode %s: out of memory", e->what);
}

void cli_wire_enc_key(struct enc *e, const char *k)
{
	if (e->rc)
		return;
	size_t n = strlen(k);
	cli_wire_enc_chk(e, msgpack_pack_str(&e->pk, n));
	cli_wire_enc_chk(e, msgpack_pack_str_body(&e->pk, k, n));
}

void cli_wire_enc_map(struct enc *e, size_t n)
{
	if (!e->rc)
		cli_wire_enc_chk(e, msgpack_pack_map(&e->pk, n));
}

void cli_wire_enc_array(struct enc *e, size_t n)
{
	if (!e->rc)
		cli_wire_enc_chk(e, msgpack_pack_array(&e->pk, n));
}

void cli_wire_enc_str_val(struct enc *e, const char *name, const char *s, size_t n, size_t cap,
			  enum wire_str kind)
{
	if (e->rc)
		return;
	if (n > cap) {
		cli_wire_enc_fail(e, CL_ETOOBIG, name, "is too long (%zu bytes, max %zu)", n, cap);
		return;
	}
	const char *bad = wire_str_problem(s, n, kind);
	if (bad) {
		cli_wire_enc_fail(e, CL_EINVAL, name, "%s", bad);
		return;
	}
	cli_wire_enc_chk(e, msgpack_pack_str(&e->pk, n));
	cli_wire_enc_chk(e, msgpack_pack_str_body(&e->pk, n ? s : "", n));
}

/* True when any of the member's bytes is not zero (a number, a bool, a pointer). */
static bool bytes_set(const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return true;
	return false;
}

static bool sends(const struct wire_field *f, const void *st)
{
	switch (f->send) {
	case SEND_ALWAYS:
		return true;
	case SEND_IF:
		return f->send_if(st);
	case SEND_NONNEG: {
		int64_t v;
		memcpy(&v, CAT(st, f), sizeof(v));
		return v >= 0;
	}
	case SEND_NONZERO:
		if (f->kind == WF_FSTR)
			return CAT(st, f)[0] != '\0';
		if (f->kind == WF_STRS || f->kind == WF_ARRAY)
			return *(const size_t *)((const char *)st + f->n_off) != 0;
		return bytes_set(CAT(st, f), f->size);
	}
	return false;
}

size_t cli_wire_enc_count(const struct wire_table *t, const void *st)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		n += sends(&t->f[i], st);
	return n;
}

static void enc_int(struct enc *e, const struct wire_field *f, int64_t v)
{
	if (v < f->min) {
		if (f->min == 0)
			cli_wire_enc_fail(e, CL_EINVAL, f->name, "must not be negative (%lld)",
					  (long long)v);
		else if (f->min == 1)
			cli_wire_enc_fail(e, CL_EINVAL, f->name, "must be positive (%lld)",
					  (long long)v);
		else
			cli_wire_enc_fail(e, CL_EINVAL, f->name, "must be at least %lld (%lld)",
					  (long long)f->min, (long long)v);
	}
	if (!e->rc)
		cli_wire_enc_chk(e, msgpack_pack_int64(&e->pk, v));
}

static void enc_strs(struct enc *e, const struct wire_field *f, const void *st)
{
	char *const *a = *(char *const *const *)CAT(st, f);
	size_t n = *(const size_t *)((const char *)st + f->n_off);
	if (n > f->max_n)
		cli_wire_enc_fail(e, CL_ETOOBIG, f->name, "has too many entries (%zu, max %zu)", n,
				  f->max_n);
	if (n && !a)
		cli_wire_enc_fail(e, CL_EINVAL, f->name, "is NULL with %zu entries", n);
	cli_wire_enc_array(e, n);
	for (size_t i = 0; i < n && !e->rc; i++) {
		char nm[64];
		snprintf(nm, sizeof(nm), "%s[%zu]", f->name, i);
		const char *s = a[i] ? a[i] : "";
		cli_wire_enc_str_val(e, nm, s, strlen(s), f->cap, f->text);
	}
}

/* The most an unsigned field may hold: its entry's max, else its type's.  The encoder and the
 * decoder both read it here, so the encoder never sends what the decoder would refuse. */
static uint64_t uint_max(const struct wire_field *f)
{
	if (f->max)
		return f->max;
	return f->kind == WF_U32 ? UINT32_MAX : f->kind == WF_SIZE ? SIZE_MAX : UINT64_MAX;
}

/* An unsigned value within the entry's bounds, in the decoder's words. */
static void enc_uint(struct enc *e, const struct wire_field *f, uint64_t v)
{
	if (v < f->umin)
		cli_wire_enc_fail(e, CL_EINVAL, f->name, "must be at least %llu",
				  (unsigned long long)f->umin);
	else if (v > uint_max(f))
		cli_wire_enc_fail(e, CL_EINVAL, f->name, "is out of range (%llu, max %llu)",
				  (unsigned long long)v, (unsigned long long)uint_max(f));
	if (!e->rc)
		cli_wire_enc_chk(e, msgpack_pack_uint64(&e->pk, v));
}

static void enc_value(struct enc *e, const struct wire_field *f, const void *st)
{
	const char *p = CAT(st, f);
	switch (f->kind) {
	case WF_U32:
		enc_uint(e, f, *(const uint32_t *)p);
		break;
	case WF_U64:
		enc_uint(e, f, *(const uint64_t *)p);
		break;
	case WF_SIZE:
		enc_uint(e, f, *(const size_t *)p);
		break;
	case WF_I64:
		enc_int(e, f, *(const int64_t *)p);
		break;
	case WF_DBL: {
		double v = *(const double *)p;
		if (!isfinite(v) || v < 0)
			cli_wire_enc_fail(e, CL_EINVAL, f->name,
					  "must be a finite, non-negative number (%g)", v);
		if (!e->rc)
			cli_wire_enc_chk(e, msgpack_pack_double(&e->pk, v));
		break;
	}
	case WF_BOOL:
		if (!e->rc)
			cli_wire_enc_chk(e, *(const bool *)p ? msgpack_pack_true(&e->pk)
							     : msgpack_pack_false(&e->pk));
		break;
	case WF_ENUM: {
		int32_t v = *(const int32_t *)p;
		const char *s = f->names(v);
		if (!s)
			cli_wire_enc_fail(e, CL_EINVAL, f->name, "has an unknown value (%d)",
					  (int)v);
		cli_wire_enc_str_val(e, f->name, s ? s : "", s ? strlen(s) : 0, 64, WSTR_NAME);
		break;
	}
	case WF_STR: {
		const char *s = *(const char *const *)p;
		cli_wire_enc_str_val(e, f->name, s ? s : "", s ? strlen(s) : 0, f->cap, f->text);
		break;
	}
	case WF_FSTR:
		/* Never read past the array, even if it is not terminated. */
		cli_wire_enc_str_val(e, f->name, p, strnlen(p, f->size - 1), f->size - 1, f->text);
		break;
	case WF_STRS:
		enc_strs(e, f, st);
		break;
	case WF_MAP: {
		size_t old = wire_path_push(&e->path, f->name);
		cli_wire_enc_table(e, f->sub, f->ptr ? *(const void *const *)p : p);
		wire_path_pop(&e->path, old);
		break;
	}
	case WF_ARRAY:
		cli_wire_enc_array_of(e, f->name, f->sub, *(const void *const *)p, f->elem,
				      *(const size_t *)((const char *)st + f->n_off), f->max_n);
		break;
	case WF_CUSTOM:
		f->enc(e, f, st);
		break;
	}
}

void cli_wire_enc_fields(struct enc *e, const struct wire_table *t, const void *st)
{
	for (size_t i = 0; i < t->n && !e->rc; i++) {
		if (!sends(&t->f[i], st))
			continue;
		cli_wire_enc_key(e, t->f[i].name);
		enc_value(e, &t->f[i], st);
	}
}

void cli_wire_enc_table(struct enc *e, const struct wire_table *t, const void *st)
{
	if (t->check_enc)
		t->check_enc(e, st);
	cli_wire_enc_map(e, cli_wire_enc_count(t, st));
	cli_wire_enc_fields(e, t, st);
}

void cli_wire_enc_array_of(struct enc *e, const char *name, const struct wire_table *t,
			   const void *base, size_t elem, size_t n, size_t max_n)
{
	if (n > max_n)
		cli_wire_enc_fail(e, CL_ETOOBIG, name, "has too many entries (%zu, max %zu)", n,
				  max_n);
	if (n && !base)
		cli_wire_enc_fail(e, CL_EINVAL, name, "is NULL with %zu entries", n);
	size_t old = wire_path_push(&e->path, name);
	cli_wire_enc_array(e, n);
	for (size_t i = 0; i < n && !e->rc; i++) {
		size_t o2 = wire_path_index(&e->path, i);
		cli_wire_enc_table(e, t, (const char *)base + i * elem);
		wire_path_pop(&e->path, o2);
	}
	wire_path_pop(&e->path, old);
}

/* ---- Decoding ---------------------------------------------------------------------------- */

/* Finds the value of every field of t in the map obj in one pass. */
static int lookup(struct wire_dec *d, const struct wire_table *t, const msgpack_object *obj,
		  const msgpack_object **v)
{
	const msgpack_object_map *m = &obj->via.map;
	for (uint32_t k = 0; k < m->size; k++) {
		const msgpack_object *key = &m->ptr[k].key;
		if (key->type != MSGPACK_OBJECT_STR)
			return cl_err_set(d->err, CL_EPROTO, "%s%smap '%s' has a key that is %s",
					  d->what ? d->what : "", d->what ? ": " : "",
					  d->path.len ? d->path.s : "(top)",
					  cli_mpk_type_word(key));
		for (size_t i = 0; i < t->n; i++) {
			if (!cli_mpk_str_is(key, t->f[i].name))
				continue;
			/* Which of two values would win is the ambiguity an attacker uses. */
			if (v[i])
				return cli_wire_bad(d, CL_EPROTO, t->f[i].name, "is given twice");
			v[i] = &m->ptr[k].val;
			break;
		}
	}
	return 0;
}

static int dec_uint(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		    bool req, void *p)
{
	uint64_t x = 0;
	if (!v)
		return req ? cli_wire_missing(d, f->name) : 0;
	int rc = cli_wire_get_u64(d, f->name, v, true, uint_max(f), &x);
	if (rc)
		return rc;
	if (x < f->umin)
		return cli_wire_bad(d, CL_EPROTO, f->name, "must be at least %llu",
				    (unsigned long long)f->umin);
	if (f->kind == WF_U32)
		*(uint32_t *)p = (uint32_t)x;
	else if (f->kind == WF_SIZE)
		*(size_t *)p = (size_t)x;
	else
		*(uint64_t *)p = x;
	return 0;
}

static int dec_ptr_map(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		       bool req, void **p)
{
	int rc = cli_wire_need_map(d, f->name, v, req);
	if (rc || !v)
		return rc;
	if (!(*p = calloc(1, f->elem)))
		return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding %s", f->name);
	return cli_wire_dec_map(d, f->name, f->sub, v, true, *p);
}

static int dec_value(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		     void *st)
{
	bool req = f->req || (f->req_if && f->req_if(st));
	char *p = AT(st, f);
	switch (f->kind) {
	case WF_U32:
	case WF_U64:
	case WF_SIZE:
		return dec_uint(d, f, v, req, p);
	case WF_I64:
		if (f->absent_neg1)
			*(int64_t *)p = -1;
		return cli_wire_get_i64(d, f->name, v, req, f->min, (int64_t *)p);
	case WF_DBL:
		return cli_wire_get_dbl(d, f->name, v, req, (double *)p);
	case WF_BOOL:
		return cli_wire_get_bool(d, f->name, v, req, (bool *)p);
	case WF_ENUM: {
		int x = *(int32_t *)p;
		int rc = cli_wire_get_enum(d, f->name, v, req, f->lookup, &x);
		if (!rc)
			*(int32_t *)p = (int32_t)x;
		return rc;
	}
	case WF_STR:
		return cli_wire_get_str(d, f->name, v, req, f->cap, f->text, (char **)p,
					f->has_len ? (size_t *)((char *)st + f->len_off) : NULL);
	case WF_FSTR:
		if (!v)
			return req ? cli_wire_missing(d, f->name) : 0;
		return cli_wire_get_fixed_str(d, f->name, v, p, f->size, f->text);
	case WF_STRS:
		if (!v)
			return req ? cli_wire_missing(d, f->name) : 0;
		return cli_wire_get_str_array(d, f->name, v, f->max_n, f->cap, f->text, (char ***)p,
					      (size_t *)((char *)st + f->n_off));
	case WF_MAP:
		if (f->ptr)
			return dec_ptr_map(d, f, v, req, (void **)p);
		return cli_wire_dec_map(d, f->name, f->sub, v, req, p);
	case WF_ARRAY:
		if (!v && !req)
			return 0;
		return cli_wire_dec_array_of(d, f->name, f->sub, v, f->max_n, f->elem, (void **)p,
					     (size_t *)((char *)st + f->n_off));
	case WF_CUSTOM:
		return f->dec(d, f, v, st);
	}
	return cl_err_set(d->err, CL_EINVAL, "field '%s' has no decoder", f->name);
}

int cli_wire_dec_table(struct wire_dec *d, const struct wire_table *t, const msgpack_object *obj,
		       void *st)
{
	CL_ASSERT(t->n <= WIRE_MAX_FIELDS);
	const msgpack_object *v[WIRE_MAX_FIELDS] = { 0 };
	int rc = lookup(d, t, obj, v);
	for (size_t i = 0; i < t->n && !rc; i++)
		rc = dec_value(d, &t->f[i], v[i], st);
	if (!rc && t->check_dec)
		rc = t->check_dec(d, t, v, st);
	return rc;
}

int cli_wire_dec_map(struct wire_dec *d, const char *name, const struct wire_table *t,
		     const msgpack_object *v, bool req, void *st)
{
	int rc = cli_wire_need_map(d, name, v, req);
	if (rc || !v)
		return rc;
	size_t old = wire_path_push(&d->path, name);
	rc = cli_wire_dec_table(d, t, v, st);
	wire_path_pop(&d->path, old);
	return rc;
}

const msgpack_object *cli_wire_present(const struct wire_table *t, const msgpack_object *const *v,
				       const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->f[i].name, name) == 0)
			return v[i];
	CL_ASSERT(!"cli_wire_present: no such field in the table");
	return NULL;
}

int cli_wire_dec_array_of(struct wire_dec *d, const char *name, const struct wire_table *t,
			  const msgpack_object *v, size_t max_n, size_t elem, void **out,
			  size_t *n_out)
{
	if (!v)
		return cli_wire_missing(d, name);
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, name, "an array", v);
	size_t n = v->via.array.size;
	if (n > max_n)
		return cli_wire_bad(d, CL_ETOOBIG, name, "has too many entries (%zu, max %zu)", n,
				    max_n);
	/* n was proven against the message size before msgpack-c allocated its n objects, so
	 * this array is no larger than a small multiple of the input. */
	if (n && !(*out = calloc(n, elem)))
		return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding %s", name);
	*n_out = n;
	for (size_t i = 0; i < n; i++) {
		char nm[48];
		snprintf(nm, sizeof(nm), "%s[%zu]", name, i);
		int rc =
		    cli_wire_dec_map(d, nm, t, &v->via.array.ptr[i], true, (char *)*out + i * elem);
		if (rc)
			return rc;
	}
	return 0;
}
