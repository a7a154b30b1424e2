/* One request body as JSON for each API (chat, completions, responses, embeddings, messages,
 * rerank, score): the shape every body chatload sends shares, rendered in one place for the
 * coordinator's workload and the agent's readiness gate. */
#include "chatload/body_json.h"

#include "chatload/buf.h"
#include "chatload/err.h"

#include <string.h>

int cl_body_json_merge(json_t *target, json_t *patch, bool keep_nulls)
{
	const char *key;
	json_t *val;
	json_object_foreach(patch, key, val)
	{
		if (json_is_null(val) && !keep_nulls) {
			json_object_del(target, key);
			continue;
		}
		json_t *cur = json_object_get(target, key);
		if (json_is_object(val) && (json_is_object(cur) || !keep_nulls)) {
			if (!json_is_object(cur)) {
				cur = json_object();
				if (!cur || json_object_set_new(target, key, cur) != 0)
					return CL_ENOMEM;
			}
			int rc = cl_body_json_merge(cur, val, keep_nulls);
			if (rc)
				return rc;
			continue;
		}
		json_t *copy = json_deep_copy(val);
		if (!copy || json_object_set_new(target, key, copy) != 0)
			return CL_ENOMEM;
	}
	return 0;
}

int cl_body_json_parse_object(const char *text, const char *what, json_t **out, struct cl_err *err)
{
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
	if (!j)
		return cl_err_set(err, CL_EINVAL, "%s is not valid JSON: %s (at column %d)", what,
				  jerr.text, jerr.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return cl_err_set(err, CL_EINVAL, "%s must be a JSON object", what);
	}
	*out = j;
	return 0;
}

int cl_body_json_add_message(json_t *messages, const char *role, json_t *content)
{
	json_t *m = json_object();
	if (!m || !content || json_object_set_new(m, "role", json_string(role)) != 0) {
		json_decref(m);
		json_decref(content);
		return CL_ENOMEM;
	}
	if (json_object_set_new(m, "content", content) != 0) {
		json_decref(m);
		return CL_ENOMEM;
	}
	return json_array_append_new(messages, m) != 0 ? CL_ENOMEM : 0;
}

/* The text of a message's content: a string, or the "text" of each text part, joined. */
static int content_text(json_t *content, struct cl_buf *out)
{
	if (json_is_string(content))
		return cl_buf_append(out, json_string_value(content), json_string_length(content));
	size_t i;
	json_t *part;
	json_array_foreach(content, i, part)
	{
		json_t *text = json_object_get(part, "text");
		if (json_is_string(text) &&
		    cl_buf_append(out, json_string_value(text), json_string_length(text)) != 0)
			return CL_ENOMEM;
	}
	return 0;
}

/* completions: every message's text joined by a blank line, as one prompt string. */
static json_t *prompt_of(json_t *messages)
{
	struct cl_buf b;
	cl_buf_init(&b, 0);
	size_t i;
	json_t *m;
	json_t *out = NULL;
	json_array_foreach(messages, i, m)
	{
		if ((i && cl_buf_append(&b, "\n\n", 2) != 0) ||
		    content_text(json_object_get(m, "content"), &b) != 0)
			goto out;
	}
	out = json_stringn(b.data ? b.data : "", b.len);
out:
	cl_buf_free(&b);
	return out;
}

/* embeddings: one input string per message. */
static json_t *inputs_of(json_t *messages)
{
	json_t *arr = json_array();
	size_t i;
	json_t *m;
	json_array_foreach(messages, i, m)
	{
		struct cl_buf b;
		cl_buf_init(&b, 0);
		json_t *v = NULL;
		if (content_text(json_object_get(m, "content"), &b) == 0)
			v = json_stringn(b.data ? b.data : "", b.len);
		cl_buf_free(&b);
		if (!arr || json_array_append_new(arr, v) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* rerank and score: the first message's text is the query, each later one a document; a
 * lone message (the readiness gate's one prompt) is its own document, so the body is one
 * the server can answer.  Sets body's query key and documents key. */
static int put_scored(json_t *body, json_t *messages, const char *query_key, const char *docs_key)
{
	json_t *texts = inputs_of(messages);
	if (!texts || json_array_size(texts) == 0) {
		json_decref(texts);
		return CL_ENOMEM;
	}
	json_t *query = json_incref(json_array_get(texts, 0));
	if (json_array_size(texts) > 1)
		json_array_remove(texts, 0);
	if (json_object_set_new(body, query_key, query) != 0) {
		json_decref(texts);
		return CL_ENOMEM;
	}
	return json_object_set_new(body, docs_key, texts) != 0 ? CL_ENOMEM : 0;
}

/* messages (Anthropic): the role "system" messages leave the array for the top-level
 * "system" string (Anthropic has no system role), their texts joined by a blank line;
 * *system stays NULL without one.  Non-message elements (a conversation's markers) stay. */
static int split_system(json_t *messages, json_t **system)
{
	struct cl_buf b;
	int rc = 0;
	bool any = false;
	*system = NULL;
	cl_buf_init(&b, 0);
	for (size_t i = 0; i < json_array_size(messages);) {
		json_t *m = json_array_get(messages, i);
		const char *role = json_string_value(json_object_get(m, "role"));
		if (!role || strcmp(role, "system") != 0) {
			i++;
			continue;
		}
		if ((any && cl_buf_append(&b, "\n\n", 2) != 0) ||
		    content_text(json_object_get(m, "content"), &b) != 0 ||
		    json_array_remove(messages, i) != 0) {
			rc = CL_ENOMEM;
			goto out;
		}
		any = true;
	}
	if (any && !(*system = json_stringn(b.data ? b.data : "", b.len)))
		rc = CL_ENOMEM;
out:
	cl_buf_free(&b);
	return rc;
}

int cl_body_json_render(const char *model, json_t *messages /* stolen */, uint32_t max_tokens,
			bool ignore_eos, json_t *extra, char **json_out)
{
	return cl_body_json_render_api(CL_API_CHAT, model, messages, max_tokens, ignore_eos, extra,
				       json_out);
}

int cl_body_json_render_api(enum cl_api api, const char *model, json_t *messages /* stolen */,
			    uint32_t max_tokens, bool ignore_eos, json_t *extra, char **json_out)
{
	int rc = CL_ENOMEM;
	json_t *body = json_object();
	json_t *opts = json_object();
	json_t *what = NULL;
	const char *what_key = "messages", *max_key = "max_tokens";
	bool stream = cl_api_streams(api);
	if (!body || !opts || json_object_set_new(body, "model", json_string(model)) != 0)
		goto out;
	switch (api) {
	case CL_API_COMPLETIONS:
		what = prompt_of(messages), what_key = "prompt";
		break;
	case CL_API_RESPONSES:
		/* A list of {"role", "content"} messages is a valid Responses input. */
		what = messages, messages = NULL, what_key = "input";
		max_key = "max_output_tokens";
		break;
	case CL_API_EMBEDDINGS:
		what = inputs_of(messages), what_key = "input";
		max_tokens = 0; /* no output to bound */
		ignore_eos = false;
		break;
	case CL_API_MESSAGES: {
		json_t *system;
		if (split_system(messages, &system) != 0 ||
		    (system && json_object_set_new(body, "system", system) != 0))
			goto out;
		what = messages, messages = NULL;
		if (!max_tokens)
			max_tokens = CL_BODY_JSON_MESSAGES_MAX_TOKENS;
		break;
	}
	case CL_API_RERANK:
	case CL_API_SCORE:
		/* vLLM's, Cohere's, Jina's and llama.cpp's rerank: {"query", "documents"};
		 * vLLM's score: {"text_1", "text_2"}, text_1 scored against each text_2. */
		if (api == CL_API_RERANK ? put_scored(body, messages, "query", "documents")
					 : put_scored(body, messages, "text_1", "text_2"))
			goto out;
		max_tokens = 0; /* no output to bound */
		ignore_eos = false;
		break;
	default:
		what = messages, messages = NULL;
		break;
	}
	/* Consumes what; rerank and score have put their keys already. */
	int bad = cl_api_scores(api) ? 0 : json_object_set_new(body, what_key, what);
	if (bad)
		goto out;
	/* max_tokens 0 leaves the limit to the server. */
	if ((max_tokens && json_object_set_new(body, max_key, json_integer(max_tokens)) != 0) ||
	    (ignore_eos && json_object_set_new(body, "ignore_eos", json_true()) != 0))
		goto out;
	/* stream_options is the chat and completions APIs' (Responses always ends with usage in
	 * response.completed, Messages with it in message_delta). */
	if (stream && json_object_set_new(body, "stream", json_true()) != 0)
		goto out;
	if (stream && api != CL_API_RESPONSES && api != CL_API_MESSAGES &&
	    (json_object_set_new(opts, "include_usage", json_true()) != 0 ||
	     json_object_set(body, "stream_options", opts) != 0))
		goto out;
	if (extra && cl_body_json_merge(body, extra, false) != 0)
		goto out;
	/* The engine reads an SSE stream (or, for embeddings, one JSON answer); a body that
	 * turned streaming on or off would be unreadable.  Set after the merge so it wins. */
	if (!stream)
		json_object_del(body, "stream"); /* -1 when absent: nothing to do */
	else if (json_object_set_new(body, "stream", json_true()) != 0)
		goto out;
	*json_out = json_dumps(body, CL_BODY_JSON_DUMP_FLAGS);
	if (*json_out)
		rc = 0;
out:
	json_decref(messages);
	json_decref(opts);
	json_decref(body);
	return rc;
}

int cl_body_json_probe(const char *model, const char *prompt, uint32_t max_tokens,
		       const char *extra_body_json, char **json_out, struct cl_err *err)
{
	return cl_body_json_probe_api(CL_API_CHAT, model, prompt, max_tokens, extra_body_json,
				      json_out, err);
}

int cl_body_json_probe_api(enum cl_api api, const char *model, const char *prompt,
			   uint32_t max_tokens, const char *extra_body_json, char **json_out,
			   struct cl_err *err)
{
	json_t *extra = NULL;
	json_t *messages = NULL;
	int rc = 0;
	*json_out = NULL;
	if (!model || !*model || !prompt)
		return cl_err_set(err, CL_EINVAL, "probe body needs a model and a prompt");
	if (api == CL_API_TRANSCRIPTION) {
		/* A transcription has no prompt: one second of synthetic audio, answered whole
		 * (the description chatload/audio.h renders into the form sent). */
		json_t *d = json_pack("{s:s,s:i,s:i,s:s,s:b}", "model", model, "audio_ms", 1000,
				      "seed", 1, "response_format", "json", "stream", 0);
		*json_out = d ? json_dumps(d, CL_BODY_JSON_DUMP_FLAGS) : NULL;
		json_decref(d);
		return *json_out ? 0 : cl_err_set(err, CL_ENOMEM, "out of memory");
	}
	if (extra_body_json &&
	    (rc = cl_body_json_parse_object(extra_body_json, "probe body", &extra, err)))
		return rc;
	json_t *content = json_string(prompt);
	if (!content) {
		rc = cl_err_set(err, CL_EINVAL, "probe prompt is not valid UTF-8");
		goto out;
	}
	messages = json_array();
	if (!messages || cl_body_json_add_message(messages, "user", content) != 0) {
		if (!messages)
			json_decref(content);
		rc = cl_err_set(err, CL_ENOMEM, "out of memory rendering the probe body");
		goto out;
	}
	rc = cl_body_json_render_api(api, model, messages, max_tokens, false, extra, json_out);
	messages = NULL;
	if (rc)
		rc = cl_err_set(err, CL_ENOMEM, "out of memory rendering the probe body");
out:
	json_decref(messages);
	json_decref(extra);
	return rc;
}

int cl_body_json_merge_text(const char *base_json, const char *over_json, char **json_out,
			    struct cl_err *err)
{
	json_t *base = NULL, *over = NULL;
	int rc = 0;
	*json_out = NULL;
	if (!base_json && !over_json)
		return 0;
	if (base_json && (rc = cl_body_json_parse_object(base_json, "base body", &base, err)) != 0)
		goto out;
	if (over_json &&
	    (rc = cl_body_json_parse_object(over_json, "override body", &over, err)) != 0)
		goto out;
	if (!base && !(base = json_object())) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
		goto out;
	}
	if (over && cl_body_json_merge(base, over, true) != 0) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
		goto out;
	}
	*json_out = json_dumps(base, CL_BODY_JSON_DUMP_FLAGS);
	if (!*json_out)
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
out:
	json_decref(base);
	json_decref(over);
	return rc;
}
