/* Zero-allocation chunk decoder: one validating recursive-descent pass reading known fields. */
#include "client/stream/chunk.h"

#include <string.h>

#include "chatload/assert.h"
#include "chatload/err.h"
#include "client/stream/json_scan.h"

/*
 * Why a chunk that is valid JSON is not a chunk (cl_chunk.malformed).  Each read field keeps
 * its own reason, replaced like its value when its key repeats (the last occurrence counts,
 * as in jansson), so `{"usage":{"completion_tokens":"x"},"usage":null}` is fine.
 */
#define R_TOP        "the chunk is not a JSON object"
#define R_CHOICES    "choices is not an array"
#define R_CHOICE     "choices[] holds something that is neither an object nor null"
#define R_DELTA      "choices[].delta is not an object"
#define R_CONTENT    "choices[].delta.content is not a string"
#define R_RCONTENT   "choices[].delta.reasoning_content is not a string"
#define R_REASONING  "choices[].delta.reasoning is not a string"
#define R_ROLE       "choices[].delta.role is not a string"
#define R_FINISH     "choices[].finish_reason is not a string"
#define R_TEXT       "choices[].text is not a string"
#define R_USAGE      "usage is not an object"
#define R_PROMPT     "usage.prompt_tokens is not a non-negative integer"
#define R_CACHED     "usage.prompt_tokens_details.cached_tokens is not a non-negative integer"
#define R_COMPLETION "usage.completion_tokens is not a non-negative integer"
#define R_DETAILS    "usage.completion_tokens_details is not an object"
#define R_RTOKENS    "usage.completion_tokens_details.reasoning_tokens is not a non-negative integer"
#define R_TOOLS      "choices[].delta.tool_calls is not an array"
#define R_TOOL       "choices[].delta.tool_calls[] is not an object"
#define R_TOOL_INDEX "choices[].delta.tool_calls[].index is not a non-negative integer"
#define R_TOOL_ID    "choices[].delta.tool_calls[].id is not a string"
#define R_TOOL_FN    "choices[].delta.tool_calls[].function is not an object"
#define R_TOOL_NAME  "choices[].delta.tool_calls[].function.name is not a string"
#define R_TOOL_ARGS  "choices[].delta.tool_calls[].function.arguments is not a string"

/* Per-choice state: kept apart so a repeated key inside a choice replaces, not adds. */
struct choice {
	long long content_len;           /* -1: absent or null */
	const char *content;             /* its raw (escaped) text when content_len >= 0 */
	long long reasoning_content_len; /* -1: absent or null */
	long long reasoning_len;         /* -1: absent or null */
	bool role;
	bool has_fr;
	struct str fr;
	/* delta.tool_calls: its elements (the first CL_CHUNK_TOOLS_MAX kept) */
	uint32_t n_tools;
	struct cl_chunk_tool tools[CL_CHUNK_TOOLS_MAX];
	bool tool_any;     /* some element carries an id, a name or an arguments fragment */
	size_t tool_bytes; /* raw bytes of every element's name and arguments */
	/* wrong-type reasons, NULL when fine */
	const char *bad_delta, *bad_content, *bad_rcontent, *bad_reasoning, *bad_role, *bad_fr;
	const char *bad_tools;
};

/* ---- delta.tool_calls ---------------------------------------------------------------- */

/* A string piece of a tool call kept as a pointer into the input and its raw length (NULL
 * and 0 when null or of another type, *bad then says why).  0 or CL_EPARSE. */
static int want_piece(struct scan *sc, int depth, const char **s, size_t *len, const char **bad,
		      const char *why)
{
	struct str v;
	int rc = want_string(sc, depth, &v, bad, why);
	if (rc < 0)
		return rc;
	*s = rc == 1 ? v.s : NULL;
	*len = rc == 1 ? v.len : 0;
	return 0;
}

/* A tool call being read: its pieces, and each key's reason (a repeated key replaces). */
struct tool_read {
	struct cl_chunk_tool *t;
	const char *bad_index, *bad_id, *bad_fn;
	const char *bad_name, *bad_args; /* function's own keys */
};

/* tool_calls[].function: name and arguments. */
static int tool_fn_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct tool_read *r = ctx;
	struct cl_chunk_tool *t = r->t;

	if (KEY_IS(k, "name"))
		return want_piece(sc, depth, &t->name, &t->name_len, &r->bad_name, R_TOOL_NAME);
	if (KEY_IS(k, "arguments"))
		return want_piece(sc, depth, &t->args, &t->args_len, &r->bad_args, R_TOOL_ARGS);
	return parse_value(sc, depth);
}

/* One element of tool_calls: index, id, function (type and anything else are skipped). */
static int tool_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct tool_read *r = ctx;
	struct cl_chunk_tool *t = r->t;
	int rc;

	if (KEY_IS(k, "index"))
		return want_count(sc, depth, &t->index, &r->bad_index, R_TOOL_INDEX);
	if (KEY_IS(k, "id"))
		return want_piece(sc, depth, &t->id, &t->id_len, &r->bad_id, R_TOOL_ID);
	if (KEY_IS(k, "function")) {
		t->name = t->args = NULL;
		t->name_len = t->args_len = 0;
		r->bad_fn = NULL;
		if (*sc->p != '{')
			return skip_other(sc, depth, &r->bad_fn, R_TOOL_FN);
		r->bad_name = r->bad_args = NULL;
		rc = scan_object(sc, depth, tool_fn_key, r);
		if (!rc)
			r->bad_fn = FIRST_BAD(r->bad_name, r->bad_args);
		return rc;
	}
	return parse_value(sc, depth);
}

static int parse_tool(struct scan *sc, int depth, struct cl_chunk_tool *t, const char **bad)
{
	struct tool_read r = { .t = t };
	int rc = scan_object(sc, depth, tool_key, &r);
	if (!rc)
		*bad = FIRST_BAD(r.bad_index, r.bad_id, r.bad_fn);
	return rc;
}

/* An element of delta.tool_calls: the first CL_CHUNK_TOOLS_MAX are kept in the choice. */
static int tool_elem(struct scan *sc, int depth, void *ctx)
{
	struct choice *ch = ctx;
	struct cl_chunk_tool scratch,
	    *t = ch->n_tools < CL_CHUNK_TOOLS_MAX ? &ch->tools[ch->n_tools] : &scratch;
	const char *b = NULL;
	int rc;

	memset(t, 0, sizeof(*t));
	t->index = -1;
	if (*sc->p == '{')
		rc = parse_tool(sc, depth, t, &b);
	else
		rc = skip_other(sc, depth, &b, R_TOOL);
	if (rc)
		return rc;
	if (b && !ch->bad_tools)
		ch->bad_tools = b;
	/* A null element is nothing; anything else is one more call's piece. */
	if (b || !(t->id || t->name || t->args || t->index >= 0))
		return 0;
	ch->tool_any |= t->id_len || t->name_len || t->args_len;
	ch->tool_bytes += t->name_len + t->args_len;
	if (ch->n_tools < UINT32_MAX)
		ch->n_tools++;
	return 0;
}

/* Which shape of choice is read: a chat chunk's choices[].delta, or a legacy completion's
 * choices[].text (POST /v1/completions).  Everything else is the same. */
enum shape { SHAPE_CHAT, SHAPE_TEXT };

static int delta_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct choice *ch = ctx;
	long long *slot = NULL;
	const char **bad = NULL, *why = NULL;
	struct str v;
	int rc;

	if (KEY_IS(k, "content"))
		slot = &ch->content_len, bad = &ch->bad_content, why = R_CONTENT;
	else if (KEY_IS(k, "reasoning_content"))
		slot = &ch->reasoning_content_len, bad = &ch->bad_rcontent, why = R_RCONTENT;
	else if (KEY_IS(k, "reasoning"))
		slot = &ch->reasoning_len, bad = &ch->bad_reasoning, why = R_REASONING;
	if (slot) {
		if ((rc = want_string(sc, depth, &v, bad, why)) < 0)
			return rc;
		*slot = rc == 1 ? (long long)v.len : -1;
		if (slot == &ch->content_len)
			ch->content = rc == 1 ? v.s : NULL;
		return 0;
	}
	if (KEY_IS(k, "role")) {
		if ((rc = want_string(sc, depth, &v, &ch->bad_role, R_ROLE)) < 0)
			return rc;
		ch->role = rc == 1;
		return 0;
	}
	if (KEY_IS(k, "tool_calls")) {
		ch->n_tools = 0;
		ch->tool_any = false;
		ch->tool_bytes = 0;
		ch->bad_tools = NULL;
		return *sc->p == '[' ? scan_array(sc, depth, tool_elem, ch)
				     : skip_other(sc, depth, &ch->bad_tools, R_TOOLS);
	}
	return parse_value(sc, depth);
}

/* The choice's tool-call pieces into the chunk's facts. */
static void add_tools(struct cl_chunk *out, const struct choice *ch)
{
	uint32_t kept = ch->n_tools < CL_CHUNK_TOOLS_MAX ? ch->n_tools : CL_CHUNK_TOOLS_MAX;
	for (uint32_t i = 0; i < kept && out->n_tool_calls + i < CL_CHUNK_TOOLS_MAX; i++)
		out->tools[out->n_tool_calls + i] = ch->tools[i];
	uint64_t n = (uint64_t)out->n_tool_calls + ch->n_tools;
	out->n_tool_calls = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	out->has_tool_call |= ch->tool_any;
	out->tool_bytes += ch->tool_bytes;
}

/* A choice being read, and which shape of choice it is. */
struct choice_read {
	struct choice ch;
	enum shape shape;
};

static int choice_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct choice_read *r = ctx;
	struct choice *ch = &r->ch;
	int rc;

	if (r->shape == SHAPE_TEXT && KEY_IS(k, "text")) {
		/* The legacy completion's text is its content; a repeated one replaces. */
		struct str v;
		if ((rc = want_string(sc, depth, &v, &ch->bad_content, R_TEXT)) < 0)
			return rc;
		ch->content_len = rc == 1 ? (long long)v.len : -1;
		ch->content = rc == 1 ? v.s : NULL;
		return 0;
	}
	if (r->shape == SHAPE_CHAT && KEY_IS(k, "delta")) {
		ch->content_len = ch->reasoning_content_len = ch->reasoning_len = -1;
		ch->role = false;
		ch->n_tools = 0;
		ch->tool_any = false;
		ch->tool_bytes = 0;
		ch->bad_delta = ch->bad_content = ch->bad_rcontent = NULL;
		ch->bad_reasoning = ch->bad_role = ch->bad_tools = NULL;
		return *sc->p == '{' ? scan_object(sc, depth, delta_key, ch)
				     : skip_other(sc, depth, &ch->bad_delta, R_DELTA);
	}
	if (KEY_IS(k, "finish_reason")) {
		if ((rc = want_string(sc, depth, &ch->fr, &ch->bad_fr, R_FINISH)) < 0)
			return rc;
		ch->has_fr = rc == 1;
		return 0;
	}
	return parse_value(sc, depth);
}

/* One element of choices; *bad gets the element's wrong-type reason if it has one and *bad
 * has none yet (elements do not replace each other). */
static int parse_choice(struct scan *sc, int depth, struct cl_chunk *out, const char **bad,
			enum shape shape)
{
	struct choice_read r = {
		.ch = { .content_len = -1, .reasoning_content_len = -1, .reasoning_len = -1 },
		.shape = shape,
	};
	const struct choice *ch = &r.ch;
	int rc = scan_object(sc, depth, choice_key, &r);

	if (rc)
		return rc;
	if (!*bad)
		*bad = FIRST_BAD(ch->bad_delta, ch->bad_content, ch->bad_rcontent,
				 ch->bad_reasoning, ch->bad_role, ch->bad_fr, ch->bad_tools);
	add_tools(out, ch);

	if (ch->content_len > 0) {
		if (!out->has_content) {
			out->content = ch->content;
			out->content_len = (size_t)ch->content_len;
		}
		out->has_content = true;
		out->content_bytes += (size_t)ch->content_len;
	}
	/* Servers moving from reasoning_content to reasoning send both with the same text. */
	long long rlen = ch->reasoning_content_len > ch->reasoning_len ? ch->reasoning_content_len
								       : ch->reasoning_len;
	if (rlen > 0) {
		out->has_reasoning = true;
		out->reasoning_bytes += (size_t)rlen;
	}
	out->has_role |= ch->role;
	if (!out->finish_reason[0] && ch->has_fr && ch->fr.len) {
		bool cut;
		size_t n =
		    unescape(&ch->fr, out->finish_reason, sizeof(out->finish_reason) - 1, &cut);
		CL_ASSERT(n < sizeof(out->finish_reason));
		out->finish_reason[n] = '\0';
	}
	return 0;
}

/* The choices being read, and where the first wrong element's reason goes. */
struct choices_read {
	struct cl_chunk *out;
	const char **bad;
	enum shape shape;
};

static int choice_elem(struct scan *sc, int depth, void *ctx)
{
	struct choices_read *r = ctx;
	const char *b = NULL;
	int rc;

	if (r->out->n_choices < UINT32_MAX)
		r->out->n_choices++;
	if (*sc->p == '{')
		return parse_choice(sc, depth, r->out, r->bad, r->shape);
	rc = skip_other(sc, depth, &b, R_CHOICE);
	if (!*r->bad)
		*r->bad = b;
	return rc;
}

/* llama.cpp's timings: cache_n and prompt_n read when they are counts; nothing in them is
 * judged, since they are a server's informational extra, not part of the chunk format. */
static int timings_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct cl_chunk *out = ctx;
	const char *ignored;

	if (KEY_IS(k, "cache_n"))
		return want_count(sc, depth, &out->timings_cache_n, &ignored, NULL);
	if (KEY_IS(k, "prompt_n"))
		return want_count(sc, depth, &out->timings_prompt_n, &ignored, NULL);
	return parse_value(sc, depth);
}

int64_t cl_chunk_cached_prompt(int64_t usage_cached, int64_t usage_prompt, int64_t cache_n,
			       int64_t prompt_n)
{
	if (usage_cached >= 0)
		return usage_cached;
	if (cache_n >= 0)
		return cache_n;
	if (prompt_n >= 0 && usage_prompt >= prompt_n)
		return usage_prompt - prompt_n;
	return -1;
}

/* A usage object being read, and each key's reason (a repeated key replaces). */
struct usage_read {
	struct cl_chunk *out;
	const char *bad_pt, *bad_ct, *bad_details, *bad_cached;
};

static int usage_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct usage_read *r = ctx;
	struct cl_chunk *out = r->out;

	if (KEY_IS(k, "prompt_tokens"))
		return want_count(sc, depth, &out->prompt_tokens, &r->bad_pt, R_PROMPT);
	if (KEY_IS(k, "completion_tokens"))
		return want_count(sc, depth, &out->completion_tokens, &r->bad_ct, R_COMPLETION);
	if (KEY_IS(k, "prompt_tokens_details") && *sc->p == '{') {
		/* A bad cached_tokens is reported (not fatal); it stays until a later
		 * cached_tokens replaces it. */
		out->cached_tokens = -1;
		return scan_one_count(sc, depth, "cached_tokens", &out->cached_tokens,
				      &r->bad_cached, R_CACHED);
	}
	if (KEY_IS(k, "completion_tokens_details")) {
		out->reasoning_tokens = -1;
		r->bad_details = NULL;
		return *sc->p == '{'
			   ? scan_one_count(sc, depth, "reasoning_tokens", &out->reasoning_tokens,
					    &r->bad_details, R_RTOKENS)
			   : skip_other(sc, depth, &r->bad_details, R_DETAILS);
	}
	return parse_value(sc, depth);
}

static int parse_usage(struct scan *sc, int depth, struct cl_chunk *out, const char **bad)
{
	struct usage_read r = { .out = out };

	out->has_usage = true;
	int rc = scan_object(sc, depth, usage_key, &r);
	*bad = FIRST_BAD(r.bad_pt, r.bad_ct, r.bad_details, r.bad_cached);
	return rc;
}

static void clear_choices(struct cl_chunk *out)
{
	out->n_choices = 0;
	out->has_content = out->has_reasoning = out->has_role = false;
	out->content_bytes = out->reasoning_bytes = 0;
	out->content = NULL;
	out->content_len = 0;
	out->finish_reason[0] = '\0';
	out->has_tool_call = false;
	out->n_tool_calls = 0;
	out->tool_bytes = 0;
	memset(out->tools, 0, sizeof(out->tools));
}

static void clear_usage(struct cl_chunk *out)
{
	out->has_usage = false;
	out->prompt_tokens = out->completion_tokens = out->reasoning_tokens = -1;
	out->cached_tokens = -1;
}

static void clear_timings(struct cl_chunk *out)
{
	out->timings_cache_n = out->timings_prompt_n = -1;
}

static void clear_all(struct cl_chunk *out)
{
	memset(out, 0, sizeof(*out));
	clear_usage(out);
	clear_timings(out);
}

/* What the top level says besides the chunk's fields: vLLM's ErrorResponse sent as an event
 * on its own, {"object":"error","message":...,"type":...,"param":null,"code":400}, with no
 * "error" wrapper. */
struct top_error {
	bool object_error; /* "object" is the string "error" */
	int code;          /* "code", an integer that fits an int, else 0 */
	const char *msg;   /* "message" a string, still escaped; NULL when not */
	size_t msg_len;
};

/* The top-level object being read: a repeated top-level key replaces what the earlier one
 * said, its reason included. */
struct top_read {
	struct cl_chunk *out;
	enum shape shape;
	struct top_error te;
	const char *bad_choices, *bad_usage, *bad_error;
};

static int top_key(struct scan *sc, int depth, const struct str *k, void *ctx)
{
	struct top_read *r = ctx;
	struct cl_chunk *out = r->out;
	char c = (char)*sc->p;
	int rc;

	if (KEY_IS(k, "choices")) {
		struct choices_read cr = { out, &r->bad_choices, r->shape };
		clear_choices(out);
		r->bad_choices = NULL;
		return c == '[' ? scan_array(sc, depth, choice_elem, &cr)
				: skip_other(sc, depth, &r->bad_choices, R_CHOICES);
	}
	if (KEY_IS(k, "usage")) {
		clear_usage(out);
		r->bad_usage = NULL;
		return c == '{' ? parse_usage(sc, depth, out, &r->bad_usage)
				: skip_other(sc, depth, &r->bad_usage, R_USAGE);
	}
	if (KEY_IS(k, "timings")) {
		clear_timings(out);
		return c == '{' ? scan_object(sc, depth, timings_key, out) : parse_value(sc, depth);
	}
	if (KEY_IS(k, "error"))
		return read_error_key(sc, depth, &out->is_error, &out->error_code, &out->error_msg,
				      &out->error_msg_len, &r->bad_error);
	if (KEY_IS(k, "object")) {
		const char *ignored;
		struct str v;
		if ((rc = want_string(sc, depth, &v, &ignored, NULL)) < 0)
			return rc;
		r->te.object_error = rc == 1 && KEY_IS(&v, "error");
		return 0;
	}
	rc = read_error_field(sc, depth, k, &r->te.code, &r->te.msg, &r->te.msg_len);
	return rc < 0 ? rc : rc ? 0 : parse_value(sc, depth);
}

static int top(struct scan *sc, void *arg, const char **bad)
{
	struct top_read *r = arg;
	struct cl_chunk *out = r->out;
	int rc = scan_object(sc, 1, top_key, r);

	if (rc)
		return rc;
	/* An "error" key says more than "object":"error" and wins. */
	if (r->te.object_error && !out->is_error) {
		out->is_error = true;
		out->error_code = r->te.code;
		out->error_msg = r->te.msg;
		out->error_msg_len = r->te.msg_len;
	}
	*bad = FIRST_BAD(r->bad_choices, r->bad_usage, r->bad_error);
	return 0;
}

static int decode(const char *data, size_t len, struct cl_chunk *out, enum shape shape)
{
	clear_all(out);
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		out->done = true;
		return 0;
	}
	const char *bad;
	struct top_read r = { .out = out, .shape = shape };
	int rc = scan_document(data, len, top, &r, R_TOP, &bad);
	if (rc) {
		/* Not JSON, or valid JSON but not a chunk (CL_EPROTO, judged only once the
		 * whole text is known to be JSON): nothing half-filled escapes. */
		clear_all(out);
		out->malformed = rc == CL_EPROTO ? bad : NULL;
	}
	return rc;
}

int cl_chunk_decode(const char *data, size_t len, struct cl_chunk *out)
{
	return decode(data, len, out, SHAPE_CHAT);
}

int cl_chunk_decode_text(const char *data, size_t len, struct cl_chunk *out)
{
	return decode(data, len, out, SHAPE_TEXT);
}
