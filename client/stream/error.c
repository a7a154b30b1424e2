/* The reader of a server's failure text in every dialect: one validating pass keeping the
 * fields any of them uses, then what they mean (see error.h). */
#include "client/stream/error.h"

#include <string.h>

#include "chatload/err.h"
#include "client/stream/json_scan.h"

/* The fields of an error object ("error", "response.error") or of the top level. */
struct fields {
	bool has_msg, has_type, has_etype, has_detail, has_code;
	struct str msg, type, etype, detail;
	int code;
};

/* A code: an integer, or a string of 1 to 9 digits (LiteLLM's "400"); 1 when it is one. */
static int want_code(struct scan *sc, int depth, int *code)
{
	if (*sc->p == '"') {
		struct str v;
		int rc = parse_string(sc, &v);
		if (rc)
			return rc;
		if (v.esc || v.len == 0 || v.len > 9)
			return 0;
		int c = 0;
		for (size_t i = 0; i < v.len; i++) {
			if (!is_digit((unsigned char)v.s[i]))
				return 0;
			c = c * 10 + (v.s[i] - '0');
		}
		*code = c;
		return 1;
	}
	int64_t v;
	int rc = want_int(sc, depth, &v);
	if (rc < 0)
		return rc;
	if (rc == 1 && v >= INT32_MIN && v <= INT32_MAX) {
		*code = (int)v;
		return 1;
	}
	return 0;
}

/* Reads key k's value into f when it is one of the fields kept; *matched says so. */
static int read_field(struct scan *sc, int depth, const struct str *k, struct fields *f,
		      bool *matched)
{
	const char *ignored;
	struct str *dst = NULL;
	bool *has = NULL;
	int rc;

	*matched = true;
	if (KEY_IS(k, "message"))
		dst = &f->msg, has = &f->has_msg;
	else if (KEY_IS(k, "type"))
		dst = &f->type, has = &f->has_type;
	else if (KEY_IS(k, "error_type"))
		dst = &f->etype, has = &f->has_etype;
	else if (KEY_IS(k, "detail"))
		dst = &f->detail, has = &f->has_detail;
	if (dst) {
		if ((rc = want_string(sc, depth, dst, &ignored, NULL)) < 0)
			return rc;
		*has = rc == 1;
		return 0;
	}
	if (KEY_IS(k, "code")) {
		f->code = 0;
		if ((rc = want_code(sc, depth, &f->code)) < 0)
			return rc;
		f->has_code = rc == 1;
		return 0;
	}
	*matched = false;
	return 0;
}

static int fields_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	bool matched;
	int rc = read_field(sc, depth, k, ctx, &matched);
	return rc || matched ? rc : parse_value(sc, depth);
}

/* An object of error fields ("error", "response.error"): message, type, code. */
static int parse_fields(struct scan *sc, int depth, struct fields *f)
{
	memset(f, 0, sizeof(*f));
	return scan_object(sc, depth, fields_key, f);
}

/* Everything the top level says. */
struct top {
	struct fields own;     /* the top level's own message, type, code, ... */
	struct fields err;     /* "error" when an object */
	struct fields resp;    /* response.error */
	bool err_obj, err_str; /* "error" an object, a string */
	struct str err_text;
	bool resp_err;     /* response.error an object */
	bool object_error; /* "object": "error" */
};

/* "response" of response.failed: its "error" object. */
static int response_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct top *t = ctx;

	if (!KEY_IS(k, "error"))
		return parse_value(sc, depth);
	t->resp_err = *sc->p == '{';
	return t->resp_err ? parse_fields(sc, depth, &t->resp) : parse_value(sc, depth);
}

static int top_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct top *t = ctx;
	char c = (char)*sc->p;
	struct str v;
	int rc;

	if (KEY_IS(k, "error")) {
		t->err_obj = c == '{';
		t->err_str = c == '"';
		return t->err_obj   ? parse_fields(sc, depth, &t->err)
		       : t->err_str ? parse_string(sc, &t->err_text)
				    : parse_value(sc, depth);
	}
	if (KEY_IS(k, "response")) {
		t->resp_err = false;
		return c == '{' ? scan_object(sc, depth, response_key, t) : parse_value(sc, depth);
	}
	if (KEY_IS(k, "object")) {
		t->object_error = false;
		if (c != '"')
			return parse_value(sc, depth);
		if ((rc = parse_string(sc, &v)) == 0)
			t->object_error = KEY_IS(&v, "error");
		return rc;
	}
	return fields_key(sc, depth, k, &t->own);
}

static int top(struct scan *sc, void *arg, const char **bad)
{
	(void)bad; /* any object is read: what it means is apply's */
	return scan_object(sc, 1, top_key, arg);
}

static void set_str(const char **s, size_t *len, const struct str *v)
{
	*s = v->s;
	*len = v->len;
}

/* What the fields mean, by the priorities of error.h. */
static void apply(const struct top *t, struct cl_stream_error *out)
{
	const struct fields *e = t->err_obj ? &t->err : NULL;
	const struct fields *r = t->resp_err ? &t->resp : NULL;
	const struct fields *o = &t->own;
	bool type_error = o->has_type && KEY_IS(&o->type, "error");
	bool type_failed = o->has_type && KEY_IS(&o->type, "response.failed");

	out->is_error = t->err_obj || t->err_str || t->object_error || type_error || type_failed;
	if (t->err_str)
		set_str(&out->message, &out->message_len, &t->err_text);
	else if (e && e->has_msg)
		set_str(&out->message, &out->message_len, &e->msg);
	else if (r && r->has_msg)
		set_str(&out->message, &out->message_len, &r->msg);
	else if (o->has_msg)
		set_str(&out->message, &out->message_len, &o->msg);
	else if (o->has_detail)
		set_str(&out->message, &out->message_len, &o->detail);

	out->code = e && e->has_code   ? e->code
		    : r && r->has_code ? r->code
		    : o->has_code      ? o->code
				       : 0;

	if (e && e->has_type)
		set_str(&out->type, &out->type_len, &e->type);
	else if (o->has_etype)
		set_str(&out->type, &out->type_len, &o->etype);
	else if (r && r->has_type)
		set_str(&out->type, &out->type_len, &r->type);
	else if (o->has_type)
		set_str(&out->type, &out->type_len, &o->type);
}

/* The text itself is the message: trimmed of surrounding whitespace. */
static void raw(const char *data, size_t len, struct cl_stream_error *out)
{
	memset(out, 0, sizeof(*out));
	while (len && is_ws((unsigned char)*data))
		data++, len--;
	while (len && is_ws((unsigned char)data[len - 1]))
		len--;
	out->message = len ? data : NULL;
	out->message_len = len;
	out->message_raw = len != 0;
}

void cl_stream_error_read(const char *data, size_t len, struct cl_stream_error *out)
{
	struct top t;
	const char *not_object;

	memset(out, 0, sizeof(*out));
	memset(&t, 0, sizeof(t));
	/* A JSON value that is not an object is JSON all the same, with no error's shape. */
	int rc = scan_document(data, len, top, &t, "", &not_object);
	if (rc == CL_EPARSE) {
		raw(data, len, out);
		return;
	}
	out->is_json = true;
	if (rc == 0)
		apply(&t, out);
}
