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
#define R_ERROR      "error is neither an object nor a string"
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

/* tool_calls[].function: name and arguments (a repeated key replaces). */
static int parse_tool_fn(struct scan *sc, int depth, struct cl_chunk_tool *t, const char **bad)
{
	const char *bad_name = NULL, *bad_args = NULL;
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "name"))
			rc = want_piece(sc, depth + 1, &t->name, &t->name_len, &bad_name,
					R_TOOL_NAME);
		else if (KEY_IS(&k, "arguments"))
			rc = want_piece(sc, depth + 1, &t->args, &t->args_len, &bad_args,
					R_TOOL_ARGS);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
	}
	if (!rc)
		*bad = FIRST_BAD(bad_name, bad_args);
	return rc;
}

/* One element of tool_calls: index, id, function (type and anything else are skipped). */
static int parse_tool(struct scan *sc, int depth, struct cl_chunk_tool *t, const char **bad)
{
	const char *bad_index = NULL, *bad_id = NULL, *bad_fn = NULL;
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "index")) {
			rc = want_count(sc, depth + 1, &t->index, &bad_index, R_TOOL_INDEX);
		} else if (KEY_IS(&k, "id")) {
			rc = want_piece(sc, depth + 1, &t->id, &t->id_len, &bad_id, R_TOOL_ID);
		} else if (KEY_IS(&k, "function")) {
			t->name = t->args = NULL;
			t->name_len = t->args_len = 0;
			bad_fn = NULL;
			rc = *sc->p == '{' ? parse_tool_fn(sc, depth + 1, t, &bad_fn)
					   : skip_other(sc, depth + 1, &bad_fn, R_TOOL_FN);
		} else {
			rc = parse_value(sc, depth + 1);
		}
		if (rc)
			return rc;
	}
	if (!rc)
		*bad = FIRST_BAD(bad_index, bad_id, bad_fn);
	return rc;
}

/* delta.tool_calls: an array of elements; the first CL_CHUNK_TOOLS_MAX are kept in ch. */
static int parse_tools(struct scan *sc, int depth, struct choice *ch)
{
	bool first = true;
	int rc;

	if (depth > CL_CHUNK_MAX_DEPTH)
		return CL_EPARSE;
	sc->p++;
	while ((rc = arr_next(sc, &first)) == 1) {
		struct cl_chunk_tool scratch,
		    *t = ch->n_tools < CL_CHUNK_TOOLS_MAX ? &ch->tools[ch->n_tools] : &scratch;
		const char *b = NULL;
		memset(t, 0, sizeof(*t));
		t->index = -1;
		if (*sc->p == '{')
			rc = parse_tool(sc, depth + 1, t, &b);
		else
			rc = skip_other(sc, depth + 1, &b, R_TOOL);
		if (rc)
			return rc;
		if (b && !ch->bad_tools)
			ch->bad_tools = b;
		/* A null element is nothing; anything else is one more call's piece. */
		if (b || !(t->id || t->name || t->args || t->index >= 0))
			continue;
		ch->tool_any |= t->id_len || t->name_len || t->args_len;
		ch->tool_bytes += t->name_len + t->args_len;
		if (ch->n_tools < UINT32_MAX)
			ch->n_tools++;
	}
	return rc;
}

/* Which shape of choice is read: a chat chunk's choices[].delta, or a legacy completion's
 * choices[].text (POST /v1/completions).  Everything else is the same. */
enum shape { SHAPE_CHAT, SHAPE_TEXT };

static int parse_delta(struct scan *sc, int depth, struct choice *ch)
{
	bool first = true;
	struct str k, v;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		long long *slot = NULL;
		const char **bad = NULL, *why = NULL;
		if (KEY_IS(&k, "content"))
			slot = &ch->content_len, bad = &ch->bad_content, why = R_CONTENT;
		else if (KEY_IS(&k, "reasoning_content"))
			slot = &ch->reasoning_content_len, bad = &ch->bad_rcontent,
			why = R_RCONTENT;
		else if (KEY_IS(&k, "reasoning"))
			slot = &ch->reasoning_len, bad = &ch->bad_reasoning, why = R_REASONING;
		if (slot) {
			if ((rc = want_string(sc, depth + 1, &v, bad, why)) < 0)
				return rc;
			*slot = rc == 1 ? (long long)v.len : -1;
			if (slot == &ch->content_len)
				ch->content = rc == 1 ? v.s : NULL;
		} else if (KEY_IS(&k, "role")) {
			if ((rc = want_string(sc, depth + 1, &v, &ch->bad_role, R_ROLE)) < 0)
				return rc;
			ch->role = rc == 1;
		} else if (KEY_IS(&k, "tool_calls")) {
			ch->n_tools = 0;
			ch->tool_any = false;
			ch->tool_bytes = 0;
			ch->bad_tools = NULL;
			rc = *sc->p == '[' ? parse_tools(sc, depth + 1, ch)
					   : skip_other(sc, depth + 1, &ch->bad_tools, R_TOOLS);
			if (rc)
				return rc;
		} else if ((rc = parse_value(sc, depth + 1))) {
			return rc;
		}
	}
	return rc;
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

/* One element of choices; *bad gets the element's wrong-type reason if it has one and *bad
 * has none yet (elements do not replace each other). */
static int parse_choice(struct scan *sc, int depth, struct cl_chunk *out, const char **bad,
			enum shape shape)
{
	struct choice ch = { .content_len = -1, .reasoning_content_len = -1, .reasoning_len = -1 };
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (shape == SHAPE_TEXT && KEY_IS(&k, "text")) {
			/* The legacy completion's text is its content; a repeated one replaces. */
			struct str v;
			if ((rc = want_string(sc, depth + 1, &v, &ch.bad_content, R_TEXT)) < 0)
				return rc;
			ch.content_len = rc == 1 ? (long long)v.len : -1;
			ch.content = rc == 1 ? v.s : NULL;
		} else if (shape == SHAPE_CHAT && KEY_IS(&k, "delta")) {
			ch.content_len = ch.reasoning_content_len = ch.reasoning_len = -1;
			ch.role = false;
			ch.n_tools = 0;
			ch.tool_any = false;
			ch.tool_bytes = 0;
			ch.bad_delta = ch.bad_content = ch.bad_rcontent = NULL;
			ch.bad_reasoning = ch.bad_role = ch.bad_tools = NULL;
			rc = *sc->p == '{' ? parse_delta(sc, depth + 1, &ch)
					   : skip_other(sc, depth + 1, &ch.bad_delta, R_DELTA);
			if (rc)
				return rc;
		} else if (KEY_IS(&k, "finish_reason")) {
			if ((rc = want_string(sc, depth + 1, &ch.fr, &ch.bad_fr, R_FINISH)) < 0)
				return rc;
			ch.has_fr = rc == 1;
		} else if ((rc = parse_value(sc, depth + 1))) {
			return rc;
		}
	}
	if (rc)
		return rc;
	if (!*bad)
		*bad = FIRST_BAD(ch.bad_delta, ch.bad_content, ch.bad_rcontent, ch.bad_reasoning,
				 ch.bad_role, ch.bad_fr, ch.bad_tools);
	add_tools(out, &ch);

	if (ch.content_len > 0) {
		if (!out->has_content) {
			out->content = ch.content;
			out->content_len = (size_t)ch.content_len;
		}
		out->has_content = true;
		out->content_bytes += (size_t)ch.content_len;
	}
	/* Servers moving from reasoning_content to reasoning send both with the same text. */
	long long r = ch.reasoning_content_len > ch.reasoning_len ? ch.reasoning_content_len
								  : ch.reasoning_len;
	if (r > 0) {
		out->has_reasoning = true;
		out->reasoning_bytes += (size_t)r;
	}
	out->has_role |= ch.role;
	if (!out->finish_reason[0] && ch.has_fr && ch.fr.len) {
		bool cut;
		size_t n =
		    unescape(&ch.fr, out->finish_reason, sizeof(out->finish_reason) - 1, &cut);
		CL_ASSERT(n < sizeof(out->finish_reason));
		out->finish_reason[n] = '\0';
	}
	return 0;
}

static int parse_choices(struct scan *sc, int depth, struct cl_chunk *out, const char **bad,
			 enum shape shape)
{
	bool first = true;
	int rc;

	if (depth > CL_CHUNK_MAX_DEPTH)
		return CL_EPARSE;
	sc->p++;
	while ((rc = arr_next(sc, &first)) == 1) {
		if (out->n_choices < UINT32_MAX)
			out->n_choices++;
		if (*sc->p == '{') {
			rc = parse_choice(sc, depth + 1, out, bad, shape);
		} else {
			const char *b = NULL;
			rc = skip_other(sc, depth + 1, &b, R_CHOICE);
			if (!*bad)
				*bad = b;
		}
		if (rc)
			return rc;
	}
	return rc;
}

static int parse_details(struct scan *sc, int depth, struct cl_chunk *out, const char **bad)
{
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "reasoning_tokens"))
			rc = want_count(sc, depth + 1, &out->reasoning_tokens, bad, R_RTOKENS);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
	}
	return rc;
}

/* usage.prompt_tokens_details: cached_tokens is read; a bad one is reported (not fatal). */
static int parse_prompt_details(struct scan *sc, int depth, struct cl_chunk *out, const char **bad)
{
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "cached_tokens"))
			rc = want_count(sc, depth + 1, &out->cached_tokens, bad, R_CACHED);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
	}
	return rc;
}

/* llama.cpp's timings: cache_n and prompt_n read when they are counts; nothing in them is
 * judged, since they are a server's informational extra, not part of the chunk format. */
static int parse_timings(struct scan *sc, int depth, struct cl_chunk *out)
{
	bool first = true;
	const char *ignored;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "cache_n"))
			rc = want_count(sc, depth + 1, &out->timings_cache_n, &ignored, NULL);
		else if (KEY_IS(&k, "prompt_n"))
			rc = want_count(sc, depth + 1, &out->timings_prompt_n, &ignored, NULL);
		else
			rc = parse_value(sc, depth + 1);
		if (rc)
			return rc;
	}
	return rc;
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

static int parse_usage(struct scan *sc, int depth, struct cl_chunk *out, const char **bad)
{
	const char *bad_pt = NULL, *bad_ct = NULL, *bad_details = NULL, *bad_cached = NULL;
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	out->has_usage = true;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "prompt_tokens")) {
			rc = want_count(sc, depth + 1, &out->prompt_tokens, &bad_pt, R_PROMPT);
		} else if (KEY_IS(&k, "completion_tokens")) {
			rc = want_count(sc, depth + 1, &out->completion_tokens, &bad_ct,
					R_COMPLETION);
		} else if (KEY_IS(&k, "prompt_tokens_details") && *sc->p == '{') {
			out->cached_tokens = -1;
			rc = parse_prompt_details(sc, depth + 1, out, &bad_cached);
		} else if (KEY_IS(&k, "completion_tokens_details")) {
			out->reasoning_tokens = -1;
			bad_details = NULL;
			rc = *sc->p == '{' ? parse_details(sc, depth + 1, out, &bad_details)
					   : skip_other(sc, depth + 1, &bad_details, R_DETAILS);
		} else {
			rc = parse_value(sc, depth + 1);
		}
		if (rc)
			return rc;
	}
	*bad = FIRST_BAD(bad_pt, bad_ct, bad_details, bad_cached);
	return rc;
}

static int parse_error(struct scan *sc, int depth, struct cl_chunk *out)
{
	bool first = true;
	struct str k, v;
	int rc;

	if ((rc = obj_open(sc, depth)))
		return rc;
	out->is_error = true;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		if (KEY_IS(&k, "code")) {
			int64_t code;
			if ((rc = want_int(sc, depth + 1, &code)) < 0)
				return rc;
			out->error_code =
			    rc == 1 && code >= INT32_MIN && code <= INT32_MAX ? (int)code : 0;
		} else if (KEY_IS(&k, "message")) {
			/* An error is an error whatever its message's type: not judged. */
			const char *ignored;
			if ((rc = want_string(sc, depth + 1, &v, &ignored, NULL)) < 0)
				return rc;
			out->error_msg = rc == 1 ? v.s : NULL;
			out->error_msg_len = rc == 1 ? v.len : 0;
		} else if ((rc = parse_value(sc, depth + 1))) {
			return rc;
		}
	}
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

static void clear_error(struct cl_chunk *out)
{
	out->is_error = false;
	out->error_code = 0;
	out->error_msg = NULL;
	out->error_msg_len = 0;
}

static void clear_all(struct cl_chunk *out)
{
	memset(out, 0, sizeof(*out));
	clear_usage(out);
	clear_timings(out);
}

/* A top-level "error" that is a string: an error all the same, its text the message. */
static int parse_error_string(struct scan *sc, struct cl_chunk *out)
{
	struct str v;
	int rc = parse_string(sc, &v);
	if (rc)
		return rc;
	out->is_error = true;
	out->error_msg = v.s;
	out->error_msg_len = v.len;
	return 0;
}

/* The top-level object: a repeated top-level key replaces what the earlier one said.  *bad
 * gets the reason the object is not a chunk, if it is not. */
/* What the top level says besides the chunk's fields: vLLM's ErrorResponse sent as an event
 * on its own, {"object":"error","message":...,"type":...,"param":null,"code":400}, with no
 * "error" wrapper. */
struct top_error {
	bool object_error; /* "object" is the string "error" */
	int code;          /* "code", an integer that fits an int, else 0 */
	bool has_msg;      /* "message" a string */
	struct str msg;
};

/* Reads one top-level key of that shape ("object", "message", "code"): 1 when k was one of
 * them (its value read), 0 when not (nothing read), or CL_EPARSE. */
static int read_top_error(struct scan *sc, const struct str *k, struct top_error *te)
{
	const char *ignored;
	struct str v;
	int64_t code;
	int rc;
	if (KEY_IS(k, "object")) {
		if ((rc = want_string(sc, 2, &v, &ignored, NULL)) < 0)
			return rc;
		te->object_error = rc == 1 && KEY_IS(&v, "error");
	} else if (KEY_IS(k, "message")) {
		if ((rc = want_string(sc, 2, &te->msg, &ignored, NULL)) < 0)
			return rc;
		te->has_msg = rc == 1;
	} else if (KEY_IS(k, "code")) {
		if ((rc = want_int(sc, 2, &code)) < 0)
			return rc;
		te->code = rc == 1 && code >= INT32_MIN && code <= INT32_MAX ? (int)code : 0;
	} else {
		return 0;
	}
	return 1;
}

static int parse_top(struct scan *sc, struct cl_chunk *out, const char **bad, enum shape shape)
{
	const char *bad_choices = NULL, *bad_usage = NULL, *bad_error = NULL;
	struct top_error te = { 0 };
	bool first = true;
	struct str k;
	int rc;

	if ((rc = obj_open(sc, 1)))
		return rc;
	while ((rc = obj_next(sc, &first, &k)) == 1) {
		char c = (char)*sc->p;
		if (KEY_IS(&k, "choices")) {
			clear_choices(out);
			bad_choices = NULL;
			rc = c == '[' ? parse_choices(sc, 2, out, &bad_choices, shape)
				      : skip_other(sc, 2, &bad_choices, R_CHOICES);
		} else if (KEY_IS(&k, "usage")) {
			clear_usage(out);
			bad_usage = NULL;
			rc = c == '{' ? parse_usage(sc, 2, out, &bad_usage)
				      : skip_other(sc, 2, &bad_usage, R_USAGE);
		} else if (KEY_IS(&k, "timings")) {
			clear_timings(out);
			rc = c == '{' ? parse_timings(sc, 2, out) : parse_value(sc, 2);
		} else if (KEY_IS(&k, "error")) {
			clear_error(out);
			bad_error = NULL;
			rc = c == '{'   ? parse_error(sc, 2, out)
			     : c == '"' ? parse_error_string(sc, out)
					: skip_other(sc, 2, &bad_error, R_ERROR);
		} else if ((rc = read_top_error(sc, &k, &te)) == 0) {
			rc = parse_value(sc, 2);
		} else if (rc == 1) {
			rc = 0;
		}
		if (rc)
			return rc;
	}
	/* An "error" key says more than "object":"error" and wins. */
	if (!rc && te.object_error && !out->is_error) {
		out->is_error = true;
		out->error_code = te.code;
		out->error_msg = te.has_msg ? te.msg.s : NULL;
		out->error_msg_len = te.has_msg ? te.msg.len : 0;
	}
	*bad = FIRST_BAD(bad_choices, bad_usage, bad_error);
	return rc;
}

/* What parse_top needs besides the scanner, for the shared driver (scan_document). */
struct top_arg {
	struct cl_chunk *out;
	enum shape shape;
};

static int top(struct scan *sc, void *arg, const char **bad)
{
	struct top_arg *t = arg;
	return parse_top(sc, t->out, bad, t->shape);
}

static int decode(const char *data, size_t len, struct cl_chunk *out, enum shape shape)
{
	clear_all(out);
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		out->done = true;
		return 0;
	}
	const char *bad;
	struct top_arg t = { out, shape };
	int rc = scan_document(data, len, top, &t, R_TOP, &bad);
	if (rc) {
		clear_all(out);
		rc = CL_EPARSE;
	} else if (bad) {
		/* Valid JSON, but not a chunk: judged only once the whole text is known to be
		 * JSON, so a text that is both is reported as not JSON. */
		clear_all(out);
		out->malformed = bad;
		rc = CL_EPROTO;
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
