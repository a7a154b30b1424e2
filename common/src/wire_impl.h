/* Private to the wire codec (wire_encode.c, wire_decode.c, wire_fields.c): the rules both
 * sides share, so the encoder never emits what the decoder would refuse, and the decoder's
 * typed field access. */
#ifndef CHATLOAD_WIRE_IMPL_H
#define CHATLOAD_WIRE_IMPL_H

#include "chatload/err.h"
#include "chatload/readiness.h"

#include "mpk_read.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* What a string field may contain. */
enum wire_str {
	WSTR_TEXT,   /* anything but NUL: reasons, errors, JSON bodies, the token */
	WSTR_NAME,   /* no control characters (< 0x20, 0x7f): ids, host names, URLs, paths */
	WSTR_HEADER, /* as NAME but tab allowed: a CR or LF would split an HTTP header */
};

/* NULL when s[0..n) is acceptable as kind, else what is wrong with it. */
static inline const char *wire_str_problem(const char *s, size_t n, enum wire_str kind)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0)
			return "contains a NUL byte";
		if (kind != WSTR_TEXT && (c < 0x20 || c == 0x7f) &&
		    !(kind == WSTR_HEADER && c == '\t'))
			return "contains a control character";
	}
	return NULL;
}

/*
 * The dotted path of the field being coded ("args.target.headers[2]"), for messages.
 * Pushing returns the previous length; popping restores it.  Truncates silently: the path
 * only decorates a message.
 */
struct wire_path {
	char s[192];
	size_t len;
};

static inline size_t wire_path_push(struct wire_path *p, const char *name)
{
	size_t old = p->len;
	int n = snprintf(p->s + p->len, sizeof(p->s) - p->len, "%s%s", p->len ? "." : "", name);
	if (n > 0)
		p->len = p->len + (size_t)n < sizeof(p->s) ? p->len + (size_t)n : sizeof(p->s) - 1;
	return old;
}

static inline size_t wire_path_index(struct wire_path *p, size_t i)
{
	size_t old = p->len;
	int n = snprintf(p->s + p->len, sizeof(p->s) - p->len, "[%zu]", i);
	if (n > 0)
		p->len = p->len + (size_t)n < sizeof(p->s) ? p->len + (size_t)n : sizeof(p->s) - 1;
	return old;
}

static inline void wire_path_pop(struct wire_path *p, size_t old)
{
	p->len = old;
	p->s[old] = '\0';
}

/* Wire spellings of the plan and readiness enums (the protocol's own, independent of how
 * other modules print them). */
static const char *const wire_mode_names[] = { "concurrency", "rate" };
static const char *const wire_arrival_names[] = { "constant", "poisson", "gamma" };
static const char *const wire_ready_status_names[] = { "pending", "passed", "timed_out", "fatal",
						       "cancelled" };
static const char *const wire_ready_phase_names[CL_READY__PHASES] = { "connect", "models",
								      "generation" };

/* ---- Decoder field access (wire_fields.c, on top of mpk_read.h) ----------------------- */

/* Decoding context: where errors go and the path of the field being decoded. */
struct wire_dec {
	struct cl_err *err;
	const char *what; /* message type name once known, for messages */
	struct wire_path path;
};

/* A field looked up in a map: name in, value out (NULL when absent). */
struct wire_fld {
	const char *name;
	const msgpack_object *v;
};

#define FLD(n)                                                                                     \
	{                                                                                          \
		.name = (n), .v = NULL                                                             \
	}
#define WIRE_N(a) (sizeof(a) / sizeof((a)[0]))

/* Fails with "TYPE: field 'path.name' <why>"; returns code. */
int cli_wire_bad(struct wire_dec *d, int code, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "must be <want>, not <what it is>" (CL_EPROTO). */
int cli_wire_wrong(struct wire_dec *d, const char *name, const char *want, const msgpack_object *o);
/* "is missing" (CL_EPROTO). */
int cli_wire_missing(struct wire_dec *d, const char *name);
/* Looks up f[0..n) in the map obj in one pass: keys must be strings, a known key twice is
 * refused, unknown keys are ignored.  f[i].v is NULL for an absent field. */
int cli_wire_fields(struct wire_dec *d, const msgpack_object *obj, struct wire_fld *f, size_t n);
/* The value found for name in f (NULL when absent). */
const msgpack_object *cli_wire_fv(const struct wire_fld *f, size_t n, const char *name);
/* v must be a map (or absent when !req). */
int cli_wire_need_map(struct wire_dec *d, const char *name, const msgpack_object *v, bool req);
/* Typed getters: v NULL means absent (an error when req, else *out untouched).  Integers are
 * range-checked, numbers finite and >= 0, strings checked against cap and kind and copied
 * into new NUL-terminated allocations. */
int cli_wire_get_u64(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     uint64_t max, uint64_t *out);
int cli_wire_get_u32(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     uint32_t *out);
int cli_wire_get_i64(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     int64_t min, int64_t *out);
int cli_wire_get_dbl(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     double *out);
int cli_wire_get_bool(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		      bool *out);
int cli_wire_check_str(struct wire_dec *d, const char *name, const msgpack_object *v, size_t cap,
		       enum wire_str kind);
int cli_wire_get_str(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		     size_t cap, enum wire_str kind, char **out, size_t *len_out);
int cli_wire_get_fixed_str(struct wire_dec *d, const char *name, const msgpack_object *v, char *dst,
			   size_t size, enum wire_str kind);
int cli_wire_get_enum(struct wire_dec *d, const char *name, const msgpack_object *v, bool req,
		      int (*lookup)(const char *), int *out);
/* Wire spellings of the plan and readiness enums -> index, -1 when unknown. */
int cli_wire_mode_lookup(const char *s);
int cli_wire_arrival_lookup(const char *s);
int cli_wire_status_lookup(const char *s);
int cli_wire_phase_lookup(const char *s);
/* An array of at most max_n strings, each within cap (allocated only after the count check). */
int cli_wire_get_str_array(struct wire_dec *d, const char *name, const msgpack_object *v,
			   size_t max_n, size_t cap, enum wire_str kind, char ***out,
			   size_t *n_out);

/* Plans (wire_decode_plan.c): each decodes the field `name` of a command into its plan. */
int cli_wire_dec_target(struct wire_dec *d, const char *name, const msgpack_object *v,
			struct cl_target_plan *t);
int cli_wire_dec_bodies(struct wire_dec *d, const msgpack_object *b, struct cl_request_body **out,
			size_t *n_out);
int cli_wire_dec_workload(struct wire_dec *d, const char *name, const msgpack_object *v,
			  struct cl_workload_plan *w);
int cli_wire_dec_stage(struct wire_dec *d, const char *name, const msgpack_object *v,
		       struct cl_stage_plan *s);
int cli_wire_dec_readiness(struct wire_dec *d, const char *name, const msgpack_object *v,
			   struct cl_readiness_result *r);

#endif
