/* One chat-completions request body as JSON: the shape every body chatload sends shares,
 * rendered in one place for the coordinator's workload and the agent's readiness gate. */
#include "chatload/body_json.h"

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

int cl_body_json_render(const char *model, json_t *messages /* stolen */, uint32_t max_tokens,
			bool ignore_eos, json_t *extra, char **json_out)
{
	int rc = CL_ENOMEM;
	json_t *body = json_object();
	json_t *opts = json_object();
	if (!body || !opts || json_object_set_new(body, "model", json_string(model)) != 0)
		goto out;
	int bad = json_object_set_new(body, "messages", messages); /* consumes messages */
	messages = NULL;
	if (bad)
		goto out;
	/* max_tokens 0 leaves the limit to the server. */
	if ((max_tokens &&
	     json_object_set_new(body, "max_tokens", json_integer(max_tokens)) != 0) ||
	    (ignore_eos && json_object_set_new(body, "ignore_eos", json_true()) != 0) ||
	    json_object_set_new(body, "stream", json_true()) != 0 ||
	    json_object_set_new(opts, "include_usage", json_true()) != 0 ||
	    json_object_set(body, "stream_options", opts) != 0)
		goto out;
	if (extra && cl_body_json_merge(body, extra, false) != 0)
		goto out;
	/* The engine reads an SSE stream; a body that turned streaming off would be unreadable. */
	if (json_object_set_new(body, "stream", json_true()) != 0)
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
	json_t *extra = NULL;
	json_t *messages = NULL;
	int rc = 0;
	*json_out = NULL;
	if (!model || !*model || !prompt)
		return cl_err_set(err, CL_EINVAL, "probe body needs a model and a prompt");
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
	rc = cl_body_json_render(model, messages, max_tokens, false, extra, json_out);
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
