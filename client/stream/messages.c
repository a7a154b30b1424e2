/* Zero-allocation decoder of one streamed Anthropic Messages event: one validating pass that
 * keeps the fields read, then decides by the event's type what they mean (see messages.h). */
#include "client/stream/messages.h"

#include <string.h>

#include "chatload/err.h"
#include "client/stream/json_scan.h"

#define M_TOP     "the event is not a JSON object"
#define M_TYPE    "type is not a string"
#define M_NOTYPE  "the event has no type"
#define M_INDEX   "index is not a non-negative integer"
#define M_MESSAGE "message is not an object"
#define M_BLOCK   "content_block is not an object"
#define M_DELTA   "delta is not an object"

/* The wrong-type reasons of one usage object, by where it sits. */
struct usage_why {
	const char *obj, *in, *out, *cread, *ccreate;
};

static const struct usage_why msg_usage_why = {
	"message.usage is not an object",
	"message.usage.input_tokens is not a non-negative integer",
	"message.usage.output_tokens is not a non-negative integer",
	"message.usage.cache_read_input_tokens is not a non-negative integer",
	"message.usage.cache_creation_input_tokens is not a non-negative integer",
};

static const struct usage_why top_usage_why = {
	"usage is not an object",
	"usage.input_tokens is not a non-negative integer",
	"usage.output_tokens is not a non-negative integer",
	"usage.cache_read_input_tokens is not a non-negative integer",
	"usage.cache_creation_input_tokens is not a non-negative integer",
};

/* The string fields of a content_block or a delta, by name. */
enum sf { SF_TYPE, SF_TEXT, SF_THINKING, SF_JSON, SF_ID, SF_NAME, SF_STOP, SF__COUNT };

static const char *const sf_key[SF__COUNT] = { "type", "text", "thinking",   "partial_json",
					       "id",   "name", "stop_reason" };

static const char *const block_why[SF__COUNT] = {
	"content_block.type is not a string",        "content_block.text is not a string",
	"content_block.thinking is not a string",    "content_block.partial_json is not a string",
	"content_block.id is not a string",          "content_block.name is not a string",
	"content_block.stop_reason is not a string",
};

static const char *const delta_why[SF__COUNT] = {
	"delta.type is not a string",        "delta.text is not a string",
	"delta.thinking is not a string",    "delta.partial_json is not a string",
	"delta.id is not a string",          "delta.name is not a string",
	"delta.stop_reason is not a string",
};

struct sfield {
	bool has; /* a string (possibly empty) */
	struct str v;
	const char *bad;
};

/* A content_block or a delta: an object of string fields. */
struct obj {
	bool present;
	const char *bad; /* not an object */
	struct sfield f[SF__COUNT];
};

struct usage {
	bool present;
	const char *bad;
	int64_t in, out, cread, ccreate;
	const char *bad_in, *bad_out, *bad_cread, *bad_ccreate;
};

/* The event types that mean something to a load generator. */
enum type {
	T_NONE, /* no "type" key (yet) */
	T_OTHER,
	T_START,       /* message_start */
	T_BLOCK_START, /* content_block_start */
	T_BLOCK_DELTA, /* content_block_delta */
	T_MSG_DELTA,   /* message_delta */
	T_STOP,        /* message_stop */
	T_ERROR,       /* error */
};

/* What the event said, kept until its type is known. */
struct ev {
	enum type type;
	const char *bad_type;
	int64_t index;
	const char *bad_index;
	bool has_message;
	const char *bad_message;
	struct usage musage, usage; /* message.usage, the top-level usage */
	struct obj block, delta;
	const char *msg; /* error.message a string, still escaped; NULL when not */
	size_t msg_len;
};

static enum type classify(const struct str *v)
{
	char buf[32];
	if (!scan_name(v, buf, sizeof(buf))) /* "message_stop\u0000" is another type */
		return T_OTHER;
	if (strcmp(buf, "message_start") == 0)
		return T_START;
	if (strcmp(buf, "content_block_start") == 0)
		return T_BLOCK_START;
	if (strcmp(buf, "content_block_delta") == 0)
		return T_BLOCK_DELTA;
	if (strcmp(buf, "message_delta") == 0)
		return T_MSG_DELTA;
	if (strcmp(buf, "message_stop") == 0)
		return T_STOP;
	if (strcmp(buf, "error") == 0)
		return T_ERROR;
	return T_OTHER;
}

/* Whether string field f of o is exactly lit (escapes honoured). */
static bool field_is(const struct obj *o, enum sf f, const char *lit)
{
	return o->f[f].has && key_is(&o->f[f].v, lit, strlen(lit));
}

static void usage_reset(struct usage *u)
{
	memset(u, 0, sizeof(*u));
	u->in = u->out = u->cread = u->ccreate = -1;
}

/* A usage object being read, and the reasons of its place. */
struct usage_read {
	struct usage *u;
	const struct usage_why *why;
};

static int usage_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct usage_read *r = ctx;
	struct usage *u = r->u;

	if (KEY_IS(k, "input_tokens"))
		return want_count(sc, depth, &u->in, &u->bad_in, r->why->in);
	if (KEY_IS(k, "output_tokens"))
		return want_count(sc, depth, &u->out, &u->bad_out, r->why->out);
	if (KEY_IS(k, "cache_read_input_tokens"))
		return want_count(sc, depth, &u->cread, &u->bad_cread, r->why->cread);
	if (KEY_IS(k, "cache_creation_input_tokens"))
		return want_count(sc, depth, &u->ccreate, &u->bad_ccreate, r->why->ccreate);
	return parse_value(sc, depth);
}

/* A usage value at its key: an object, or a wrong type remembered (null: absent). */
static int read_usage(struct scan *sc, int depth, struct usage *u, const struct usage_why *why)
{
	struct usage_read r = { u, why };

	usage_reset(u); /* a repeated key replaces the first wholly */
	if (*sc->p != '{')
		return skip_other(sc, depth, &u->bad, why->obj);
	u->present = true;
	return scan_object(sc, depth, usage_key, &r);
}

/* A content_block or delta being read, and the reasons of its place. */
struct obj_read {
	struct obj *o;
	const char *const *why;
};

static int obj_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct obj_read *r = ctx;
	int f = 0;

	while (f < SF__COUNT && !key_is(k, sf_key[f], strlen(sf_key[f])))
		f++;
	if (f == SF__COUNT)
		return parse_value(sc, depth);
	struct sfield *s = &r->o->f[f];
	int rc = want_string(sc, depth, &s->v, &s->bad, r->why[f]);
	s->has = rc == 1;
	return rc < 0 ? rc : 0;
}

/* A content_block or delta value at its key. */
static int read_obj(struct scan *sc, int depth, struct obj *o, const char *not_obj,
		    const char *const why[SF__COUNT])
{
	struct obj_read r = { o, why };

	memset(o, 0, sizeof(*o));
	if (*sc->p != '{')
		return skip_other(sc, depth, &o->bad, not_obj);
	o->present = true;
	return scan_object(sc, depth, obj_key, &r);
}

/* message_start's "message": its usage. */
static int message_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct ev *e = ctx;
	if (KEY_IS(k, "usage"))
		return read_usage(sc, depth, &e->musage, &msg_usage_why);
	return parse_value(sc, depth);
}

/* The error event's "error": its message (never judged: an error is an error; its code,
 * when it has one, is the error reader's, error.c). */
static int error_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct ev *e = ctx;
	int code;
	int rc =
	    KEY_IS(k, "message") ? read_error_field(sc, depth, k, &code, &e->msg, &e->msg_len) : 0;
	return rc < 0 ? rc : rc ? 0 : parse_value(sc, depth);
}

static int top_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct ev *e = ctx;
	struct str v;
	int rc;

	if (KEY_IS(k, "type")) {
		if ((rc = want_string(sc, depth, &v, &e->bad_type, M_TYPE)) < 0)
			return rc;
		e->type = rc == 1 ? classify(&v) : T_NONE;
		return 0;
	}
	if (KEY_IS(k, "index"))
		return want_count(sc, depth, &e->index, &e->bad_index, M_INDEX);
	if (KEY_IS(k, "message")) {
		e->has_message = false;
		e->bad_message = NULL;
		usage_reset(&e->musage);
		if (*sc->p != '{')
			return skip_other(sc, depth, &e->bad_message, M_MESSAGE);
		e->has_message = true;
		return scan_object(sc, depth, message_key, e);
	}
	if (KEY_IS(k, "usage"))
		return read_usage(sc, depth, &e->usage, &top_usage_why);
	if (KEY_IS(k, "content_block"))
		return read_obj(sc, depth, &e->block, M_BLOCK, block_why);
	if (KEY_IS(k, "delta"))
		return read_obj(sc, depth, &e->delta, M_DELTA, delta_why);
	if (KEY_IS(k, "error")) {
		e->msg = NULL;
		e->msg_len = 0;
		return *sc->p == '{' ? scan_object(sc, depth, error_key, e)
				     : parse_value(sc, depth);
	}
	return parse_value(sc, depth);
}

static void clear_all(struct cl_chunk *out)
{
	memset(out, 0, sizeof(*out));
	out->prompt_tokens = out->completion_tokens = out->reasoning_tokens = -1;
	out->cached_tokens = -1;
	out->timings_cache_n = out->timings_prompt_n = -1;
}

static const char *usage_bad(const struct usage *u)
{
	return FIRST_BAD(u->bad, u->bad_in, u->bad_out, u->bad_cread, u->bad_ccreate);
}

static int64_t add_sat(int64_t a, int64_t b)
{
	return b > INT64_MAX - a ? INT64_MAX : a + b;
}

/* A usage object's counts into out; output_tokens only where it is the answer's. */
static void apply_usage(const struct usage *u, bool output, struct cl_chunk *out)
{
	if (!u->present)
		return;
	out->has_usage = true;
	if (output)
		out->completion_tokens = u->out;
	out->cached_tokens = u->cread;
	if (u->in >= 0)
		out->prompt_tokens = add_sat(add_sat(u->in, u->cread > 0 ? u->cread : 0),
					     u->ccreate > 0 ? u->ccreate : 0);
}

static void set_text(struct cl_chunk *out, const struct sfield *s, bool reasoning)
{
	if (!s->has || s->v.len == 0)
		return;
	if (reasoning) {
		out->has_reasoning = true;
		out->reasoning_bytes = s->v.len;
		return;
	}
	out->has_content = true;
	out->content_bytes = s->v.len;
	out->content = s->v.s;
	out->content_len = s->v.len;
}

/* A tool call's piece: tools[0] from the block's id and name, or the delta's arguments. */
static void set_tool(struct cl_chunk *out, int64_t index, const struct sfield *id,
		     const struct sfield *name, const struct sfield *args)
{
	struct cl_chunk_tool *t = &out->tools[0];
	out->n_tool_calls = 1;
	t->index = index;
	if (id && id->has)
		t->id = id->v.s, t->id_len = id->v.len;
	if (name && name->has)
		t->name = name->v.s, t->name_len = name->v.len;
	if (args && args->has)
		t->args = args->v.s, t->args_len = args->v.len;
	out->tool_bytes = t->name_len + t->args_len;
	out->has_tool_call = t->id_len || t->name_len || t->args_len;
}

static const char *apply_block_start(const struct ev *e, struct cl_chunk *out)
{
	const struct obj *b = &e->block;
	if (b->bad)
		return b->bad;
	if (b->f[SF_TYPE].bad)
		return b->f[SF_TYPE].bad;
	if (field_is(b, SF_TYPE, "text")) {
		if (b->f[SF_TEXT].bad)
			return b->f[SF_TEXT].bad;
		set_text(out, &b->f[SF_TEXT], false);
	} else if (field_is(b, SF_TYPE, "thinking")) {
		if (b->f[SF_THINKING].bad)
			return b->f[SF_THINKING].bad;
		set_text(out, &b->f[SF_THINKING], true);
	} else if (field_is(b, SF_TYPE, "tool_use")) {
		const char *bad = FIRST_BAD(b->f[SF_ID].bad, b->f[SF_NAME].bad);
		if (bad)
			return bad;
		set_tool(out, e->index, &b->f[SF_ID], &b->f[SF_NAME], NULL);
	}
	return NULL;
}

static const char *apply_block_delta(const struct ev *e, struct cl_chunk *out)
{
	const struct obj *d = &e->delta;
	if (d->bad)
		return d->bad;
	if (d->f[SF_TYPE].bad)
		return d->f[SF_TYPE].bad;
	if (field_is(d, SF_TYPE, "text_delta")) {
		if (d->f[SF_TEXT].bad)
			return d->f[SF_TEXT].bad;
		set_text(out, &d->f[SF_TEXT], false);
	} else if (field_is(d, SF_TYPE, "thinking_delta")) {
		if (d->f[SF_THINKING].bad)
			return d->f[SF_THINKING].bad;
		set_text(out, &d->f[SF_THINKING], true);
	} else if (field_is(d, SF_TYPE, "input_json_delta")) {
		if (d->f[SF_JSON].bad)
			return d->f[SF_JSON].bad;
		set_tool(out, e->index, NULL, NULL, &d->f[SF_JSON]);
	}
	return NULL;
}

static const char *apply_msg_delta(const struct ev *e, struct cl_chunk *out)
{
	const struct obj *d = &e->delta;
	const char *bad = FIRST_BAD(d->bad, d->f[SF_STOP].bad, usage_bad(&e->usage));
	if (bad)
		return bad;
	apply_usage(&e->usage, true, out);
	if (d->f[SF_STOP].has) {
		const char *f =
		    field_is(d, SF_STOP, "end_turn") || field_is(d, SF_STOP, "stop_sequence")
			? "stop"
		    : field_is(d, SF_STOP, "max_tokens") ? "length"
		    : field_is(d, SF_STOP, "tool_use")   ? "tool_calls"
							 : "other";
		strcpy(out->finish_reason, f);
	}
	return NULL;
}

/* The event's facts, now that its type is known.  Returns why it is not an event, or NULL. */
static const char *apply(const struct ev *e, struct cl_chunk *out)
{
	const char *bad = e->bad_type;
	if (!bad && e->type == T_NONE)
		bad = M_NOTYPE;
	if (!bad)
		bad = e->bad_index;
	if (bad)
		return bad;
	switch (e->type) {
	case T_START:
		bad = FIRST_BAD(e->bad_message, usage_bad(&e->musage));
		if (bad)
			return bad;
		apply_usage(&e->musage, false, out);
		return NULL;
	case T_BLOCK_START:
		return apply_block_start(e, out);
	case T_BLOCK_DELTA:
		return apply_block_delta(e, out);
	case T_MSG_DELTA:
		return apply_msg_delta(e, out);
	case T_STOP:
		out->done = true;
		return NULL;
	case T_ERROR:
		out->is_error = true;
		if (e->msg) {
			out->error_msg = e->msg;
			out->error_msg_len = e->msg_len;
		}
		return NULL;
	default:
		return NULL;
	}
}

/* What the decoder reads into: the event, and the chunk its meaning goes to. */
struct doc {
	struct ev e;
	struct cl_chunk *out;
};

/* The event's top-level object, then its meaning (judged only once the whole object is
 * read: its type may come last). */
static int top(struct scan *sc, void *arg, const char **bad)
{
	struct doc *d = arg;
	int rc = scan_object(sc, 1, top_key, &d->e);
	if (rc)
		return rc;
	*bad = apply(&d->e, d->out);
	return 0;
}

int cl_messages_decode(const char *data, size_t len, struct cl_chunk *out)
{
	struct doc d;
	const char *bad;

	memset(&d.e, 0, sizeof(d.e));
	d.e.index = -1;
	usage_reset(&d.e.musage);
	usage_reset(&d.e.usage);
	d.out = out;
	clear_all(out);
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		out->done = true;
		return 0;
	}
	int rc = scan_document(data, len, top, &d, M_TOP, &bad);
	if (rc) {
		clear_all(out);
		out->malformed = rc == CL_EPROTO ? bad : NULL;
	}
	return rc;
}
