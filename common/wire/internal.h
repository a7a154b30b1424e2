/* Private to the wire codec (common/wire/): the field tables both sides are driven by, so a
 * field is written once and the encoder never emits what the decoder would refuse, and the
 * decoder's typed field access. */
#ifndef CHATLOAD_WIRE_IMPL_H
#define CHATLOAD_WIRE_IMPL_H

#include "chatload/err.h"
#include "chatload/readiness.h"

#include "common/src/mpk_read.h"

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

/* ---- Decoder field access (fields.c, on top of common/src/mpk_read.h) ------------------ */

/* Decoding context: where errors go and the path of the field being decoded. */
struct wire_dec {
	struct cl_err *err;
	const char *what; /* message type name once known, for messages */
	struct wire_path path;
};

#define WIRE_N(a) (sizeof(a) / sizeof((a)[0]))

/* Fails with "TYPE: field 'path.name' <why>"; returns code. */
int cli_wire_bad(struct wire_dec *d, int code, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "must be <want>, not <what it is>" (CL_EPROTO). */
int cli_wire_wrong(struct wire_dec *d, const char *name, const char *want, const msgpack_object *o);
/* "is missing" (CL_EPROTO). */
int cli_wire_missing(struct wire_dec *d, const char *name);
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
/* An array of at most max_n strings, each within cap (allocated only after the count check). */
int cli_wire_get_str_array(struct wire_dec *d, const char *name, const msgpack_object *v,
			   size_t max_n, size_t cap, enum wire_str kind, char ***out,
			   size_t *n_out);

/* ---- The field tables (table.c runs them; plans.c, commands.c and messages.c hold one per map)
 * ------- */

/*
 * One table per map on the wire: each entry is one field, written once, and the encoder,
 * the decoder and their checks all read it.  An entry says the field's name, its kind, where
 * its value lives in the C struct the table describes (offsetof), its bounds, whether the
 * decoder requires it and when the encoder sends it.  Parts that are not one value of a
 * kind below (histograms, the readiness phases, a REPORT's stamped time) are WF_CUSTOM: a
 * small hand-written codec called from the entry, as the scenario loader's SCN_CUSTOM.
 * Entries are coded in table order, which is the order of the keys on the wire.
 */
enum wf_kind {
	WF_U32,    /* uint32_t, packed as an unsigned integer */
	WF_U64,    /* uint64_t */
	WF_SIZE,   /* size_t, on the wire as an unsigned integer */
	WF_I64,    /* int64_t, packed as a signed integer; min bounds both sides */
	WF_DBL,    /* double: finite and >= 0 */
	WF_BOOL,   /* bool */
	WF_ENUM,   /* an enum (4 bytes) spelled by names()/lookup() */
	WF_STR,    /* char *, NULL sent as ""; len_off: its length (decoder) */
	WF_FSTR,   /* char[size] held in the struct: at most size - 1 bytes */
	WF_STRS,   /* char ** with its size_t count at n_off, at most max_n */
	WF_MAP,    /* a struct described by sub, held in the struct (or pointed at: ptr) */
	WF_ARRAY,  /* a pointer to elem-sized structs described by sub, count (size_t) at n_off */
	WF_CUSTOM, /* enc/dec below */
};

/* When the encoder puts a field on the wire. */
enum wf_send {
	SEND_ALWAYS = 0,
	SEND_NONZERO, /* the value is not 0 / false / NULL / "" */
	SEND_NONNEG,  /* an int64 that is >= 0 (an optional duration: -1 means unknown) */
	SEND_IF,      /* send_if(the struct) */
};

struct enc;
struct wire_dec;
struct wire_field;

/* A custom field's codec.  enc writes the value (table.c has written the key); dec gets
 * the value (NULL when absent) and the struct the table describes. */
typedef void (*wire_enc_fn)(struct enc *e, const struct wire_field *f, const void *st);
typedef int (*wire_dec_fn)(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
			   void *st);

struct wire_table;

struct wire_field {
	const char *name;
	enum wf_kind kind;
	size_t off;  /* offsetof the value */
	size_t size; /* sizeof the member (WF_FSTR: its array; checked for the others) */
	bool req;    /* the decoder refuses a message without it */
	bool (*req_if)(const void *st); /* ... or when this holds of the fields before it */
	enum wf_send send;
	bool (*send_if)(const void *st);
	int64_t min;      /* WF_I64: the least value (0 durations and sizes, 1 a positive value) */
	uint64_t umin;    /* WF_U32: the least value ("must be at least") */
	uint64_t max;     /* WF_U32/U64/SIZE: the decoder's bound; 0: the type's */
	bool absent_neg1; /* WF_I64: absent reads as -1 (an optional duration) */
	size_t cap;       /* WF_STR/STRS: bytes of one string */
	enum wire_str text;
	bool has_len; /* WF_STR: len_off holds its length (size_t) */
	size_t len_off;
	size_t n_off; /* WF_STRS/ARRAY: offsetof the count (size_t) */
	size_t max_n; /* WF_STRS/ARRAY: most entries */
	size_t elem;  /* WF_ARRAY: sizeof one entry */
	bool ptr;     /* WF_MAP: the struct is pointed at (NULL: absent), allocated on decode */
	const struct wire_table *sub; /* WF_MAP/ARRAY */
	const char *(*names)(int);    /* WF_ENUM */
	int (*lookup)(const char *);  /* WF_ENUM */
	wire_enc_fn enc;              /* WF_CUSTOM */
	wire_dec_fn dec;              /* WF_CUSTOM */
};

/* The fields of one map, and the rules that tie several of them together: check_enc runs
 * before the map is encoded (fails with cli_wire_enc_fail), check_dec after every field was
 * decoded (given the values found, for cli_wire_present). */
struct wire_table {
	const struct wire_field *f;
	size_t n;
	void (*check_enc)(struct enc *e, const void *st);
	int (*check_dec)(struct wire_dec *d, const struct wire_table *t,
			 const msgpack_object *const *v, void *st);
};

#define WIRE_TABLE(fields, ce, cd)                                                                 \
	{                                                                                          \
		.f = (fields), .n = WIRE_N(fields), .check_enc = (ce), .check_dec = (cd)           \
	}
/* Most fields a table may have (table.c keeps one value slot per field on its stack). */
#define WIRE_MAX_FIELDS 24

/* The encoder's state (table.c, encode.c and the custom codecs of the tables). */
struct enc {
	msgpack_packer pk;
	struct cl_err *err;
	const char *what; /* message type name, for messages */
	struct wire_path path;
	int rc; /* first failure; once set every helper is a no-op */
	/* cl_wire_encode_report: REPORT's t_send_us at a fixed width, its offset from start */
	bool stamp;
	msgpack_sbuffer *out;
	size_t start, t_send_at;
};

/* Records the first failure as "cannot encode TYPE: field 'path.name' ..."; returns it. */
int cli_wire_enc_fail(struct enc *e, int code, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* msgpack-c's sbuffer write fails only when realloc does. */
void cli_wire_enc_chk(struct enc *e, int pack_rc);
void cli_wire_enc_key(struct enc *e, const char *k);
void cli_wire_enc_map(struct enc *e, size_t n);
void cli_wire_enc_array(struct enc *e, size_t n);
/* A string value with its cap and content rules (no key). */
void cli_wire_enc_str_val(struct enc *e, const char *name, const char *s, size_t n, size_t cap,
			  enum wire_str kind);

/* The fields of t that st sends: how many, then each as key and value (no map header). */
size_t cli_wire_enc_count(const struct wire_table *t, const void *st);
void cli_wire_enc_fields(struct enc *e, const struct wire_table *t, const void *st);
/* A whole map: check_enc, the header, the fields. */
void cli_wire_enc_table(struct enc *e, const struct wire_table *t, const void *st);
/* The value of an array of n maps of t (entries elem bytes apart), at most max_n, each named
 * "name[i]" in messages. */
void cli_wire_enc_array_of(struct enc *e, const char *name, const struct wire_table *t,
			   const void *base, size_t elem, size_t n, size_t max_n);

/* Decodes the fields of t from the map obj (checked a map by the caller) into st: keys must
 * be strings, a known key twice is refused, unknown keys are ignored; then check_dec. */
int cli_wire_dec_table(struct wire_dec *d, const struct wire_table *t, const msgpack_object *obj,
		       void *st);
/* v as a map of t named name (pushed on the path): absent is an error when req. */
int cli_wire_dec_map(struct wire_dec *d, const char *name, const struct wire_table *t,
		     const msgpack_object *v, bool req, void *st);
/* For check_dec: the value found for the field called name (NULL when absent). */
const msgpack_object *cli_wire_present(const struct wire_table *t, const msgpack_object *const *v,
				       const char *name);
/* An array v of at most max_n maps: allocates *out (n entries of elem bytes) only after the
 * count is checked, then decodes each with t, named "name[i]". */
int cli_wire_dec_array_of(struct wire_dec *d, const char *name, const struct wire_table *t,
			  const msgpack_object *v, size_t max_n, size_t elem, void **out,
			  size_t *n_out);

/* An entry: the wire name n, the kind k, the member m of the struct T, then its rules. */
#define FLD(k, T, n, m, ...)                                                                       \
	{                                                                                          \
		.name = (n), .kind = (k), .off = offsetof(T, m), .size = sizeof(((T *)0)->m),      \
		__VA_ARGS__                                                                        \
	}
/* ... when the wire name is the member's name. */
#define FL(k, T, m, ...) FLD(k, T, #m, m, __VA_ARGS__)

/* The tables: plans (plans.c), command arguments (commands.c), messages (messages.c). */
extern const struct wire_table cli_wire_target_table;
extern const struct wire_table cli_wire_stage_table;
extern const struct wire_table cli_wire_workload_table;
extern const struct wire_table cli_wire_readiness_table;
/* A command's arguments; NULL for those without (NOOP, ABORT, QUIT). */
const struct wire_table *cli_wire_args_table(enum cl_cmd c);
extern const struct wire_table cli_wire_envelope;
/* The table of a message type's own fields (after the envelope); NULL: none (ACK). */
const struct wire_table *cli_wire_msg_table(enum cl_msg_type type);
/* A workload's "bodies" value (cl_wire_pack_bodies). */
extern const struct wire_table cli_wire_body_table;
#endif
