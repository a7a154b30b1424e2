/* Oracle of the Anthropic Messages decoder (client/stream/messages.c): what an event says by
 * messages.h's rules, read from jansson's tree.  Included by api_oracle.h. */
#ifndef CHATLOAD_TEST_MESSAGES_ORACLE_H
#define CHATLOAD_TEST_MESSAGES_ORACLE_H

#include "chunk_oracle.h"

#include <stdint.h>

struct api_msg_want {
	bool done, is_error, has_usage, has_msg;
	long long content, reasoning; /* unescaped lengths */
	const char *finish;
	int64_t prompt, completion, cached;
	uint32_t n_tool_calls;
	bool has_tool_call;
	int64_t tool_index;
};

static inline bool api_msg_is(json_t *v, const char *s)
{
	return json_is_string(v) && json_string_length(v) == strlen(s) &&
	       memcmp(json_string_value(v), s, strlen(s)) == 0;
}

static inline int64_t api_msg_add(int64_t a, int64_t b)
{
	return b > INT64_MAX - a ? INT64_MAX : a + b;
}

/* A usage object: its counts judged, its facts into w (output_tokens when output). */
static inline const char *api_msg_usage(json_t *u, bool output, struct api_msg_want *w)
{
	if (ORACLE_WRONG(u, json_is_object(u)))
		return "usage";
	if (!json_is_object(u))
		return NULL;
	json_t *in = json_object_get(u, "input_tokens"), *out = json_object_get(u, "output_tokens");
	json_t *cr = json_object_get(u, "cache_read_input_tokens");
	json_t *cc = json_object_get(u, "cache_creation_input_tokens");
	if (ORACLE_WRONG(in, oracle_count_ok(in)) || ORACLE_WRONG(out, oracle_count_ok(out)) ||
	    ORACLE_WRONG(cr, oracle_count_ok(cr)) || ORACLE_WRONG(cc, oracle_count_ok(cc)))
		return "usage count";
	w->has_usage = true;
	if (output)
		w->completion = oracle_count(out);
	w->cached = oracle_count(cr);
	if (oracle_count(in) >= 0) {
		int64_t r = oracle_count(cr), c = oracle_count(cc);
		w->prompt =
		    api_msg_add(api_msg_add(oracle_count(in), r > 0 ? r : 0), c > 0 ? c : 0);
	}
	return NULL;
}

/* A text the event's type reads: judged a string, its length into *len when not empty. */
static inline const char *api_msg_text(json_t *obj, const char *key, long long *len)
{
	json_t *t = json_object_get(obj, key);
	if (ORACLE_WRONG(t, json_is_string(t)))
		return key;
	if (oracle_strlen(t) > 0)
		*len = oracle_strlen(t);
	return NULL;
}

static inline const char *api_msg_block(json_t *b, int64_t index, struct api_msg_want *w)
{
	if (ORACLE_WRONG(b, json_is_object(b)))
		return "content_block";
	json_t *type = json_object_get(b, "type");
	if (ORACLE_WRONG(type, json_is_string(type)))
		return "content_block.type";
	if (api_msg_is(type, "text"))
		return api_msg_text(b, "text", &w->content);
	if (api_msg_is(type, "thinking"))
		return api_msg_text(b, "thinking", &w->reasoning);
	if (api_msg_is(type, "tool_use")) {
		long long id = 0, name = 0;
		const char *bad = api_msg_text(b, "id", &id);
		bad = bad ? bad : api_msg_text(b, "name", &name);
		if (bad)
			return bad;
		w->n_tool_calls = 1;
		w->tool_index = index;
		w->has_tool_call = id > 0 || name > 0;
	}
	return NULL;
}

static inline const char *api_msg_delta(json_t *d, int64_t index, struct api_msg_want *w)
{
	if (ORACLE_WRONG(d, json_is_object(d)))
		return "delta";
	json_t *type = json_object_get(d, "type");
	if (ORACLE_WRONG(type, json_is_string(type)))
		return "delta.type";
	if (api_msg_is(type, "text_delta"))
		return api_msg_text(d, "text", &w->content);
	if (api_msg_is(type, "thinking_delta"))
		return api_msg_text(d, "thinking", &w->reasoning);
	if (api_msg_is(type, "input_json_delta")) {
		long long args = 0;
		const char *bad = api_msg_text(d, "partial_json", &args);
		if (bad)
			return bad;
		w->n_tool_calls = 1;
		w->tool_index = index;
		w->has_tool_call = args > 0;
	}
	return NULL;
}

/* The event as jansson sees it; NULL when it is one, else what is wrong. */
static inline const char *api_msg_expect(json_t *root, struct api_msg_want *w)
{
	memset(w, 0, sizeof(*w));
	w->prompt = w->completion = w->cached = -1;
	w->tool_index = -1;
	w->finish = "";
	if (!json_is_object(root))
		return "top";
	json_t *type = json_object_get(root, "type"), *index = json_object_get(root, "index");
	if (ORACLE_WRONG(type, json_is_string(type)))
		return "type";
	if (!json_is_string(type))
		return "no type";
	if (ORACLE_WRONG(index, oracle_count_ok(index)))
		return "index";
	int64_t idx = oracle_count(index);
	json_t *delta = json_object_get(root, "delta");
	if (api_msg_is(type, "message_start")) {
		json_t *m = json_object_get(root, "message");
		if (ORACLE_WRONG(m, json_is_object(m)))
			return "message";
		return json_is_object(m) ? api_msg_usage(json_object_get(m, "usage"), false, w)
					 : NULL;
	}
	if (api_msg_is(type, "content_block_start"))
		return api_msg_block(json_object_get(root, "content_block"), idx, w);
	if (api_msg_is(type, "content_block_delta"))
		return api_msg_delta(delta, idx, w);
	if (api_msg_is(type, "message_delta")) {
		if (ORACLE_WRONG(delta, json_is_object(delta)))
			return "delta";
		json_t *stop = json_object_get(delta, "stop_reason");
		if (ORACLE_WRONG(stop, json_is_string(stop)))
			return "stop_reason";
		const char *bad = api_msg_usage(json_object_get(root, "usage"), true, w);
		if (bad)
			return bad;
		if (json_is_string(stop))
			w->finish =
			    api_msg_is(stop, "end_turn") || api_msg_is(stop, "stop_sequence")
				? "stop"
			    : api_msg_is(stop, "max_tokens") ? "length"
			    : api_msg_is(stop, "tool_use")   ? "tool_calls"
							     : "other";
		return NULL;
	}
	if (api_msg_is(type, "message_stop")) {
		w->done = true;
		return NULL;
	}
	if (api_msg_is(type, "error")) {
		w->is_error = true;
		json_t *e = json_object_get(root, "error");
		w->has_msg = json_is_object(e) && json_is_string(json_object_get(e, "message"));
	}
	return NULL;
}

/* The decoder's facts c (rc 0) against w: NULL, or which disagreed. */
static inline const char *api_msg_compare(const struct cl_chunk *c, const struct api_msg_want *w,
					  bool no_esc)
{
	if (c->done != w->done || c->is_error != w->is_error || c->has_usage != w->has_usage)
		return "done, error or usage";
	if (c->has_content != (w->content > 0) || (long long)c->content_bytes < w->content ||
	    (no_esc && (long long)c->content_bytes != w->content))
		return "content bytes";
	if (c->has_reasoning != (w->reasoning > 0) ||
	    (no_esc && (long long)c->reasoning_bytes != w->reasoning))
		return "reasoning bytes";
	if (strcmp(c->finish_reason, w->finish) != 0)
		return "finish";
	if (c->prompt_tokens != w->prompt || c->completion_tokens != w->completion ||
	    c->cached_tokens != w->cached || c->reasoning_tokens != -1)
		return "usage counts";
	if (c->n_tool_calls != w->n_tool_calls || c->has_tool_call != w->has_tool_call ||
	    (w->n_tool_calls && c->tools[0].index != w->tool_index))
		return "tool call";
	if ((c->error_msg != NULL) != w->has_msg)
		return "error message";
	return NULL;
}

#endif
