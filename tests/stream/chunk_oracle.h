/* jansson as an oracle for the chunk decoder (verdict, fields, named divergences). */
#ifndef CHATLOAD_TEST_CHUNK_ORACLE_H
#define CHATLOAD_TEST_CHUNK_ORACLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatload/err.h"
#include "client/stream/chunk.h"

enum oracle_verdict {
	ORACLE_BOTH_ACCEPT,
	ORACLE_BOTH_REJECT,
	ORACLE_DONE,        /* "[DONE]": ours by definition, not JSON */
	ORACLE_WRONG_SHAPE, /* valid JSON, and both we and jansson's tree say not a chunk */
	ORACLE_DIVERGENCE,  /* a documented difference between jansson and RFC 8259 or our caps */
	ORACLE_MISMATCH,    /* a bug on one side: detail says what */
};

/* The documented divergences, indexed by the `divergence` field. */
enum oracle_divergence {
	DIV_BIG_INTEGER,    /* jansson: integer past int64 is an error; RFC 8259: valid */
	DIV_REAL_OVERFLOW,  /* jansson: 1e999 is an error; RFC 8259: valid */
	DIV_LONE_SURROGATE, /* jansson: "\ud800" is an error; we accept escaped lone surrogates */
	DIV_NUL_IN_KEY,     /* jansson: "\u0000" in a key is unsupported; valid JSON */
	DIV_DEPTH,          /* we cap nesting at 64, jansson at 2048 */
	DIV_RAW_NUL,        /* jansson skips a raw NUL byte read just after a number ("[1\0]") */
	DIV_COUNT,
};

static const char *const oracle_divergence_names[DIV_COUNT] = {
	"integer beyond int64 (jansson rejects)",
	"real number overflow (jansson rejects)",
	"escaped lone surrogate (jansson rejects)",
	"\\u0000 in an object key (jansson rejects)",
	"nesting deeper than 64 (we reject)",
	"raw NUL byte after a number (jansson skips it, we reject)",
};

struct oracle_result {
	enum oracle_verdict verdict;
	enum oracle_divergence divergence;
	char detail[256];
};

static inline int oracle_depth(json_t *v)
{
	int d = 0;
	if (json_is_object(v)) {
		const char *k;
		json_t *c;
		json_object_foreach(v, k, c)
		{
			int cd = oracle_depth(c);
			d = cd > d ? cd : d;
		}
		return d + 1;
	}
	if (json_is_array(v)) {
		size_t i;
		json_t *c;
		json_array_foreach(v, i, c)
		{
			int cd = oracle_depth(c);
			d = cd > d ? cd : d;
		}
		return d + 1;
	}
	return 0;
}

/* Unescaped length of a string value, or -1 when v is not a string. */
static inline long long oracle_strlen(json_t *v)
{
	return json_is_string(v) ? (long long)json_string_length(v) : -1;
}

/* A token count as we define it: a non-negative integer, else -1. */
static inline int64_t oracle_count(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v)
								: -1;
}

/* Whether v, present in its parent, is of the wrong type: not null and not accepted. */
#define ORACLE_WRONG(v, ok) ((v) && !json_is_null(v) && !(ok))

static inline bool oracle_count_ok(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0;
}

/* delta.tool_calls: an array of objects (or nulls) whose index is a count, id a string,
 * function an object whose name and arguments are strings; null is absent throughout. */
static inline const char *oracle_tools_shape(json_t *tools)
{
	if (ORACLE_WRONG(tools, json_is_array(tools)))
		return "tool_calls";
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
	{
		if (json_is_null(t))
			continue;
		if (!json_is_object(t))
			return "tool_calls[]";
		json_t *idx = json_object_get(t, "index"), *id = json_object_get(t, "id");
		json_t *fn = json_object_get(t, "function");
		if (ORACLE_WRONG(idx, oracle_count_ok(idx)))
			return "tool_calls[].index";
		if (ORACLE_WRONG(id, json_is_string(id)))
			return "tool_calls[].id";
		if (ORACLE_WRONG(fn, json_is_object(fn)))
			return "tool_calls[].function";
		json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
		if (ORACLE_WRONG(name, json_is_string(name)))
			return "tool_calls[].function.name";
		if (ORACLE_WRONG(args, json_is_string(args)))
			return "tool_calls[].function.arguments";
	}
	return NULL;
}

/*
 * Why the tree jansson built is not a chunk, by our rules (docs/stream-decoding.md): the
 * top level must be an object; choices an array of objects (or nulls); delta an object;
 * content, reasoning_content, reasoning, role and finish_reason strings; usage and
 * completion_tokens_details objects; token counts non-negative integers; error an object or
 * a string.  Null counts as absent everywhere; other keys are not judged.  NULL when fine.
 */
static inline const char *oracle_shape(json_t *root)
{
	if (!json_is_object(root))
		return "top level";
	json_t *choices = json_object_get(root, "choices");
	if (ORACLE_WRONG(choices, json_is_array(choices)))
		return "choices";
	size_t i;
	json_t *ch;
	json_array_foreach(choices, i, ch)
	{
		if (json_is_null(ch))
			continue;
		if (!json_is_object(ch))
			return "choice";
		json_t *delta = json_object_get(ch, "delta");
		if (ORACLE_WRONG(delta, json_is_object(delta)))
			return "delta";
		static const char *const strs[] = { "content", "reasoning_content", "reasoning",
						    "role" };
		for (size_t k = 0; json_is_object(delta) && k < 4; k++) {
			json_t *v = json_object_get(delta, strs[k]);
			if (ORACLE_WRONG(v, json_is_string(v)))
				return strs[k];
		}
		json_t *fr = json_object_get(ch, "finish_reason");
		if (ORACLE_WRONG(fr, json_is_string(fr)))
			return "finish_reason";
		const char *tools = oracle_tools_shape(json_object_get(delta, "tool_calls"));
		if (tools)
			return tools;
	}
	json_t *usage = json_object_get(root, "usage");
	if (ORACLE_WRONG(usage, json_is_object(usage)))
		return "usage";
	if (json_is_object(usage)) {
		json_t *pt = json_object_get(usage, "prompt_tokens");
		json_t *ct = json_object_get(usage, "completion_tokens");
		json_t *det = json_object_get(usage, "completion_tokens_details");
		if (ORACLE_WRONG(pt, oracle_count_ok(pt)) || ORACLE_WRONG(ct, oracle_count_ok(ct)))
			return "token count";
		if (ORACLE_WRONG(det, json_is_object(det)))
			return "completion_tokens_details";
		json_t *rt = json_object_get(det, "reasoning_tokens");
		if (ORACLE_WRONG(rt, oracle_count_ok(rt)))
			return "reasoning_tokens";
	}
	json_t *err = json_object_get(root, "error");
	if (ORACLE_WRONG(err, json_is_object(err) || json_is_string(err)))
		return "error";
	return NULL;
}

/* Copies whole UTF-8 characters of s (n bytes) into dst while they fit in 23 bytes. */
static inline void oracle_truncate(const char *s, size_t n, char dst[24])
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
		if (i + k > 23)
			break;
		memcpy(dst + i, s + i, k);
		i += k;
	}
	dst[i] = '\0';
}

/*
 * Rewrites (what we accepted as) valid JSON so that jansson's own limits no longer apply:
 * every escaped surrogate and \u0000 becomes \u0041, an integer part longer than 15 digits
 * becomes 1, an exponent becomes e0.  Then jansson must accept it: that confirms the only
 * reason it rejected the original was one of those limits.  Returns true when it does.
 */
static inline bool oracle_repaired_accepts(const char *data, size_t len)
{
	char *o = malloc(len + 1);
	size_t n = 0, i = 0;
	bool ok;

	if (!o)
		abort();
	while (i < len) {
		char c = data[i];
		if (c == '"') {
			o[n++] = data[i++];
			while (i < len && data[i] != '"') {
				if (data[i] == '\\' && i + 5 < len && data[i + 1] == 'u') {
					unsigned v = 0;
					for (int k = 2; k < 6; k++) {
						char h = data[i + k];
						v = v * 16 +
						    (unsigned)(h <= '9' ? h - '0'
									: (h | 0x20) - 'a' + 10);
					}
					memcpy(o + n,
					       (v >= 0xD800 && v <= 0xDFFF) || v == 0 ? "\\u0041"
										      : data + i,
					       6);
					n += 6;
					i += 6;
				} else if (data[i] == '\\' && i + 1 < len) {
					o[n++] = data[i++];
					o[n++] = data[i++];
				} else {
					o[n++] = data[i++];
				}
			}
			if (i < len)
				o[n++] = data[i++];
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			if (c == '-')
				o[n++] = data[i++];
			size_t d = i;
			while (d < len && data[d] >= '0' && data[d] <= '9')
				d++;
			if (d - i > 15) {
				o[n++] = '1';
			} else {
				memcpy(o + n, data + i, d - i);
				n += d - i;
			}
			i = d;
			if (i < len && data[i] == '.') {
				o[n++] = data[i++];
				while (i < len && data[i] >= '0' && data[i] <= '9')
					o[n++] = data[i++];
			}
			if (i < len && (data[i] == 'e' || data[i] == 'E')) {
				i++;
				if (i < len && (data[i] == '+' || data[i] == '-'))
					i++;
				while (i < len && data[i] >= '0' && data[i] <= '9')
					i++;
				memcpy(o + n, "e0", 2);
				n += 2;
			}
		} else {
			o[n++] = data[i++];
		}
	}
	json_error_t jerr;
	json_t *root = json_loadb(o, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	ok = root != NULL;
	json_decref(root);
	free(o);
	return ok;
}

/* Whether jansson still accepts data once its raw NUL bytes become 0x01, which is
 * invalid everywhere in JSON just as NUL is, but which jansson does not skip. */
static inline bool oracle_nul_visible_accepts(const char *data, size_t len)
{
	char *o = malloc(len ? len : 1);
	if (!o)
		abort();
	for (size_t i = 0; i < len; i++)
		o[i] = data[i] ? data[i] : '\x01';
	json_error_t jerr;
	json_t *root = json_loadb(o, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	bool ok = root != NULL;
	json_decref(root);
	free(o);
	return ok;
}

#define ORACLE_FAIL(r, ...)                                                                        \
	do {                                                                                       \
		(r)->verdict = ORACLE_MISMATCH;                                                    \
		snprintf((r)->detail, sizeof((r)->detail), __VA_ARGS__);                           \
		goto out;                                                                          \
	} while (0)

/*
 * Checks a decoded chunk (ours: rc, c) against the tree jansson builds from the same
 * bytes.  Escaped lengths cannot be recomputed from jansson's unescaped strings, so
 * content_bytes, reasoning_bytes and error_msg_len must be at least the unescaped length,
 * zero exactly when it is zero, and equal when the input holds no backslash.
 */
static inline void oracle_check(const char *data, size_t len, int rc, const struct cl_chunk *c,
				struct oracle_result *r)
{
	json_error_t jerr;
	json_t *root = NULL;
	bool no_escapes = memchr(data, '\\', len) == NULL;

	memset(r, 0, sizeof(*r));
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		r->verdict = ORACLE_DONE;
		if (rc != 0 || !c->done)
			ORACLE_FAIL(r, "[DONE] not recognised (rc %d)", rc);
		return;
	}
	root = json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!root) {
		if (rc != 0) {
			r->verdict = ORACLE_BOTH_REJECT;
			goto out;
		}
		r->verdict = ORACLE_DIVERGENCE;
		if (strstr(jerr.text, "too big"))
			r->divergence = DIV_BIG_INTEGER;
		else if (strstr(jerr.text, "real number overflow"))
			r->divergence = DIV_REAL_OVERFLOW;
		else if (strstr(jerr.text, "invalid Unicode"))
			r->divergence = DIV_LONE_SURROGATE;
		else if (strstr(jerr.text, "NUL byte in object key"))
			r->divergence = DIV_NUL_IN_KEY;
		else
			ORACLE_FAIL(r, "we accept, jansson rejects: %s (at byte %d)", jerr.text,
				    jerr.position);
		if (!oracle_repaired_accepts(data, len))
			ORACLE_FAIL(r,
				    "we accept, jansson rejects (%s) even with its limits "
				    "worked around",
				    jerr.text);
		goto out;
	}
	const char *shape = oracle_shape(root);
	if (rc == CL_EPROTO) {
		if (!shape)
			ORACLE_FAIL(r, "we call it no chunk (%s), jansson's tree is one",
				    c->malformed ? c->malformed : "no reason");
		if (!c->malformed || c->n_choices || c->has_usage || c->is_error || c->done)
			ORACLE_FAIL(r, "wrong-shaped chunk without a reason or not left empty");
		r->verdict = ORACLE_WRONG_SHAPE;
		goto out;
	}
	if (rc != 0) {
		r->verdict = ORACLE_DIVERGENCE;
		if (oracle_depth(root) > CL_CHUNK_MAX_DEPTH) {
			r->divergence = DIV_DEPTH;
			goto out;
		}
		if (memchr(data, '\0', len) && !oracle_nul_visible_accepts(data, len)) {
			r->divergence = DIV_RAW_NUL;
			goto out;
		}
		ORACLE_FAIL(r, "we reject (rc %d), jansson accepts", rc);
	}
	if (shape)
		ORACLE_FAIL(r, "we accept it, but jansson's tree is no chunk: %s", shape);
	if (c->malformed)
		ORACLE_FAIL(r, "accepted with a malformed reason set");
	r->verdict = ORACLE_BOTH_ACCEPT;

	/* What the fields should be, read from jansson's tree. */
	uint32_t n_choices = 0;
	bool role = false;
	long long content = 0, reasoning = 0;
	char fr[24] = "";
	bool is_error = false, has_usage = false;
	int code = 0;
	long long msg_len = -1;
	int64_t pt = -1, ct = -1, rt = -1, tc = -1, tp = -1;
	uint32_t n_tools = 0;
	bool tool_any = false;
	long long tool_bytes = 0;

	if (json_is_object(root)) {
		json_t *choices = json_object_get(root, "choices");
		if (json_is_array(choices)) {
			size_t i;
			json_t *ch;
			n_choices = (uint32_t)json_array_size(choices);
			json_array_foreach(choices, i, ch)
			{
				if (!json_is_object(ch))
					continue;
				json_t *delta = json_object_get(ch, "delta");
				if (json_is_object(delta)) {
					long long cl =
					    oracle_strlen(json_object_get(delta, "content"));
					long long a = oracle_strlen(
					    json_object_get(delta, "reasoning_content"));
					long long b =
					    oracle_strlen(json_object_get(delta, "reasoning"));
					content += cl > 0 ? cl : 0;
					long long rl = a > b ? a : b;
					reasoning += rl > 0 ? rl : 0;
					role |= json_is_string(json_object_get(delta, "role"));
					size_t k;
					json_t *t;
					json_array_foreach(json_object_get(delta, "tool_calls"), k,
							   t)
					{
						json_t *fn = json_object_get(t, "function");
						json_t *id = json_object_get(t, "id");
						json_t *nm = json_object_get(fn, "name");
						json_t *ar = json_object_get(fn, "arguments");
						if (!json_is_object(t) ||
						    !(json_is_string(id) || json_is_string(nm) ||
						      json_is_string(ar) ||
						      json_is_integer(json_object_get(t, "index"))))
							continue;
						n_tools++;
						long long il = oracle_strlen(id),
							  nl = oracle_strlen(nm),
							  al = oracle_strlen(ar);
						tool_any |= il > 0 || nl > 0 || al > 0;
						tool_bytes += (nl > 0 ? nl : 0) + (al > 0 ? al : 0);
					}
				}
				json_t *f = json_object_get(ch, "finish_reason");
				if (!fr[0] && json_is_string(f) && json_string_value(f)[0])
					oracle_truncate(json_string_value(f), json_string_length(f),
							fr);
			}
		}
		json_t *usage = json_object_get(root, "usage");
		if (json_is_object(usage)) {
			has_usage = true;
			pt = oracle_count(json_object_get(usage, "prompt_tokens"));
			ct = oracle_count(json_object_get(usage, "completion_tokens"));
			json_t *det = json_object_get(usage, "completion_tokens_details");
			if (json_is_object(det))
				rt = oracle_count(json_object_get(det, "reasoning_tokens"));
		}
		json_t *tim = json_object_get(root, "timings"); /* llama.cpp's; never judged */
		if (json_is_object(tim)) {
			tc = oracle_count(json_object_get(tim, "cache_n"));
			tp = oracle_count(json_object_get(tim, "prompt_n"));
		}
		json_t *err = json_object_get(root, "error");
		if (json_is_object(err)) {
			is_error = true;
			json_t *jc = json_object_get(err, "code");
			if (json_is_integer(jc) && json_integer_value(jc) >= INT32_MIN &&
			    json_integer_value(jc) <= INT32_MAX)
				code = (int)json_integer_value(jc);
			msg_len = oracle_strlen(json_object_get(err, "message"));
		} else if (json_is_string(err)) {
			is_error = true; /* a string error is its own message */
			msg_len = oracle_strlen(err);
		}
		/* vLLM's ErrorResponse unwrapped: "object":"error", code and message on top. */
		json_t *obj = json_object_get(root, "object");
		if (!is_error && json_is_string(obj) && strcmp(json_string_value(obj), "error") == 0 &&
		    strlen(json_string_value(obj)) == json_string_length(obj)) {
			is_error = true;
			json_t *jc = json_object_get(root, "code");
			if (json_is_integer(jc) && json_integer_value(jc) >= INT32_MIN &&
			    json_integer_value(jc) <= INT32_MAX)
				code = (int)json_integer_value(jc);
			msg_len = oracle_strlen(json_object_get(root, "message"));
		}
	}

	if (c->done)
		ORACLE_FAIL(r, "done set on a JSON value");
	if (c->n_choices != n_choices)
		ORACLE_FAIL(r, "n_choices %u, jansson %u", c->n_choices, n_choices);
	if (c->has_role != role)
		ORACLE_FAIL(r, "has_role %d, jansson %d", c->has_role, role);
	if (c->has_content != (content > 0) || (long long)c->content_bytes < content ||
	    (no_escapes && (long long)c->content_bytes != content))
		ORACLE_FAIL(r, "content %d/%zu bytes, jansson %lld unescaped", c->has_content,
			    c->content_bytes, content);
	if (c->has_reasoning != (reasoning > 0) || (long long)c->reasoning_bytes < reasoning ||
	    (no_escapes && (long long)c->reasoning_bytes != reasoning))
		ORACLE_FAIL(r, "reasoning %d/%zu bytes, jansson %lld unescaped", c->has_reasoning,
			    c->reasoning_bytes, reasoning);
	if (c->n_tool_calls != n_tools || c->has_tool_call != tool_any ||
	    (long long)c->tool_bytes < tool_bytes ||
	    (no_escapes && (long long)c->tool_bytes != tool_bytes))
		ORACLE_FAIL(r, "tool calls %u any %d %zu bytes, jansson %u any %d %lld unescaped",
			    c->n_tool_calls, c->has_tool_call, c->tool_bytes, n_tools, tool_any,
			    tool_bytes);
	if (strcmp(c->finish_reason, fr) != 0)
		ORACLE_FAIL(r, "finish_reason '%s', jansson '%s'", c->finish_reason, fr);
	if (c->has_usage != has_usage || c->prompt_tokens != pt || c->completion_tokens != ct ||
	    c->reasoning_tokens != rt)
		ORACLE_FAIL(r, "usage %d %lld %lld %lld, jansson %d %lld %lld %lld", c->has_usage,
			    (long long)c->prompt_tokens, (long long)c->completion_tokens,
			    (long long)c->reasoning_tokens, has_usage, (long long)pt, (long long)ct,
			    (long long)rt);
	if (c->timings_cache_n != tc || c->timings_prompt_n != tp)
		ORACLE_FAIL(r, "timings cache_n %lld prompt_n %lld, jansson %lld %lld",
			    (long long)c->timings_cache_n, (long long)c->timings_prompt_n,
			    (long long)tc, (long long)tp);
	if (c->is_error != is_error || c->error_code != code)
		ORACLE_FAIL(r, "error %d code %d, jansson %d code %d", c->is_error, c->error_code,
			    is_error, code);
	if ((c->error_msg != NULL) != (msg_len >= 0))
		ORACLE_FAIL(r, "error message %s, jansson %s", c->error_msg ? "present" : "absent",
			    msg_len >= 0 ? "present" : "absent");
	if (c->error_msg) {
		if (c->error_msg < data || c->error_msg + c->error_msg_len > data + len)
			ORACLE_FAIL(r, "error message outside the input");
		if ((long long)c->error_msg_len < msg_len ||
		    (c->error_msg_len == 0) != (msg_len == 0) ||
		    (no_escapes && (long long)c->error_msg_len != msg_len))
			ORACLE_FAIL(r, "error message %zu bytes, jansson %lld unescaped",
				    c->error_msg_len, msg_len);
	}
out:
	json_decref(root);
}

#endif
