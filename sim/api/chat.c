/* The reader of a request body (see chat.h): which fields each API reads, its messages or
 * input, its rerank or score texts, and the options every API shares (model, stream, lengths,
 * stop, stream_options).  What text counts for is content.c's, tools are tools.c's. */
#include "chat.h"

#include "content.h"
#include "tools.h"

#include "chatload/err.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define MAX_MESSAGES 100000

static int get_bool(json_t *obj, const char *key, bool *out, char *msg, size_t n, const char **code)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(msg, n, "'%s' must be a boolean", key);
		*code = "invalid_type";
		return CL_EINVAL;
	}
	*out = json_is_true(v);
	return 0;
}

/* vLLM's "priority": any integer, a lower one served first when the batch is full. */
static int get_priority(json_t *root, struct cl_sim_chat_req *req, char *msg, size_t n,
			const char **code)
{
	json_t *v = json_object_get(root, "priority");
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v)) {
		snprintf(msg, n, "'priority' must be an integer");
		*code = "invalid_type";
		return CL_EINVAL;
	}
	req->has_priority = true;
	req->priority = json_integer_value(v);
	return 0;
}

static int get_max(json_t *root, const char *key, uint32_t *out, char *msg, size_t n,
		   const char **code)
{
	json_t *v = json_object_get(root, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > CL_SIM_MAX_OUTPUT) {
		snprintf(msg, n, "'%s' must be an integer from 1 to %d", key, CL_SIM_MAX_OUTPUT);
		*code = "invalid_value";
		return CL_EINVAL;
	}
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* "stop": null, a string, or an array of up to 4 strings (empty ones are ignored). */
static int get_stop(json_t *root, struct cl_sim_chat_req *req, char *msg, size_t n,
		    const char **code)
{
	json_t *v = json_object_get(root, "stop");
	if (!v || json_is_null(v))
		return 0;
	json_t *one = json_is_string(v) ? v : NULL;
	size_t count = one ? 1 : json_is_array(v) ? json_array_size(v) : 0;
	if ((!one && !json_is_array(v)) || count > CL_SIM_STOP_MAX) {
		snprintf(msg, n, "'stop' must be a string or an array of up to %d strings",
			 CL_SIM_STOP_MAX);
		*code = "invalid_type";
		return CL_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		json_t *s = one ? one : json_array_get(v, i);
		if (!json_is_string(s) || json_string_length(s) >= CL_SIM_STOP_LEN) {
			snprintf(msg, n, "'stop' strings must be strings of under %d bytes",
				 CL_SIM_STOP_LEN);
			*code = "invalid_value";
			return CL_EINVAL;
		}
		if (json_string_length(s) == 0 || strlen(json_string_value(s)) == 0)
			continue;
		snprintf(req->stop[req->n_stop++], CL_SIM_STOP_LEN, "%s", json_string_value(s));
	}
	return 0;
}

/* A message of a conversation's history (role "assistant"): counted, and the last one's
 * string content named by its hash, for the truth log. */
static void note_history(struct cl_sim_chat_req *req, json_t *role, json_t *content)
{
	if (!json_is_string(role) || strcmp(json_string_value(role), "assistant") != 0)
		return;
	req->history_turns++;
	req->history_fnv = json_is_string(content) ? cli_sim_fnv1a(json_string_value(content),
								   json_string_length(content))
						   : 0;
}

/* messages' (Anthropic's) "system": a string or an array of text blocks, read as chat's
 * system message would be, ahead of the messages.  0, or CL_EINVAL. */
static int read_system(json_t *root, struct cl_sim_chat_req *req, char *msg, size_t n,
		       const char **code)
{
	json_t *system = json_object_get(root, "system");
	if (!system || json_is_null(system))
		return 0;
	if ((!json_is_string(system) && !json_is_array(system)) ||
	    cli_sim_content_chars(system, &req->prompt_chars, &req->prompt_words) != 0) {
		snprintf(msg, n, "'system' must be a string or an array of text blocks");
		*code = "invalid_type";
		return CL_EINVAL;
	}
	json_t *role = json_string("system");
	if (!role) {
		snprintf(msg, n, "out of memory");
		return CL_ENOMEM;
	}
	cli_sim_feed_prefix(&req->prefix, system);
	req->prompt_fnv = cli_sim_fnv_message(req->prompt_fnv, role, system);
	json_decref(role);
	return 0;
}

/* messages' "thinking": absent, or {"type": "enabled" | "adaptive" | "disabled", ...};
 * "disabled" asks for an answer without reasoning. */
static int read_thinking(json_t *root, struct cl_sim_chat_req *req, char *msg, size_t n,
			 const char **code)
{
	json_t *t = json_object_get(root, "thinking");
	if (!t || json_is_null(t))
		return 0;
	const char *type = json_string_value(json_object_get(t, "type"));
	if (!json_is_object(t) || !type ||
	    (strcmp(type, "enabled") != 0 && strcmp(type, "adaptive") != 0 &&
	     strcmp(type, "disabled") != 0)) {
		snprintf(msg, n,
			 "'thinking' must be an object whose type is \"enabled\", \"adaptive\" "
			 "or \"disabled\"");
		*code = "invalid_value";
		return CL_EINVAL;
	}
	req->no_thinking = strcmp(type, "disabled") == 0;
	return 0;
}

/* chat's "messages": text, prefix blocks, the history's turns.  0, or CL_EINVAL. */
static int read_messages(json_t *root, struct cl_sim_chat_req *req, char *msg, size_t n,
			 const char **code)
{
	json_t *messages = json_object_get(root, "messages");
	if (!messages) {
		snprintf(msg, n, "'messages' is a required property");
		*code = "missing_required_parameter";
		return CL_EINVAL;
	}
	if (!json_is_array(messages) || json_array_size(messages) == 0 ||
	    json_array_size(messages) > MAX_MESSAGES) {
		snprintf(msg, n, "'messages' must be a non-empty array of messages");
		*code = "invalid_type";
		return CL_EINVAL;
	}
	size_t i;
	json_t *m;
	req->prompt_fnv = 0xcbf29ce484222325ULL;
	if (req->api == CL_API_MESSAGES &&
	    (read_system(root, req, msg, n, code) || read_thinking(root, req, msg, n, code)))
		return CL_EINVAL;
	json_array_foreach(messages, i, m)
	{
		if (!json_is_object(m) ||
		    cli_sim_content_chars(json_object_get(m, "content"), &req->prompt_chars,
					  &req->prompt_words) != 0) {
			snprintf(msg, n,
				 "messages[%zu] must be an object with string or text-part "
				 "content",
				 i);
			*code = "invalid_type";
			return CL_EINVAL;
		}
		json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
		if (cli_sim_count_images(content, &req->images, msg, n) != 0) {
			*code = "invalid_image_url";
			return CL_EINVAL;
		}
		if (cli_sim_read_tool_message(m, role, i, req, msg, n, code))
			return CL_EINVAL;
		cli_sim_feed_prefix(&req->prefix, content);
		req->prompt_fnv = cli_sim_fnv_message(req->prompt_fnv, role, content);
		note_history(req, role, content);
	}
	return 0;
}

int cl_sim_chat_parse(const char *body, size_t len, struct cl_sim_chat_req *req, char *msg,
		      size_t n, const char **code)
{
	return cl_sim_api_parse(CL_API_CHAT, body, len, req, msg, n, code);
}

/* completions' "prompt", responses' and embeddings' "input": a string, or an array of
 * strings (embeddings, completions) or of messages/items (responses).  Counts characters,
 * text tokens and inputs, and feeds the prefix cache.  0, or CL_EINVAL with msg set. */
static int read_input(enum cl_api api, json_t *v, const char *key, struct cl_sim_chat_req *req,
		      char *msg, size_t n, const char **code)
{
	if (!v) {
		snprintf(msg, n, "'%s' is a required property", key);
		*code = "missing_required_parameter";
		return CL_EINVAL;
	}
	/* The truth log's prompt_fnv: each input (a string, or a message's role and text). */
	req->prompt_fnv = 0xcbf29ce484222325ULL;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
		{
			req->prompt_fnv =
			    json_is_object(e)
				? cli_sim_fnv_message(req->prompt_fnv, json_object_get(e, "role"),
						      json_object_get(e, "content"))
				: cli_sim_fnv_message(req->prompt_fnv, NULL, e);
		}
	} else {
		req->prompt_fnv = cli_sim_fnv_message(req->prompt_fnv, NULL, v);
	}
	if (json_is_string(v)) {
		cli_sim_content_chars(v, &req->prompt_chars, &req->prompt_words);
		cli_sim_feed_prefix(&req->prefix, v);
		req->inputs = 1;
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > MAX_MESSAGES)
		goto bad;
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		json_t *content = e;
		if (api == CL_API_RESPONSES && json_is_object(e))
			content = json_object_get(e, "content");
		else if (!json_is_string(e))
			goto bad;
		if (cli_sim_content_chars(content, &req->prompt_chars, &req->prompt_words) != 0)
			goto bad;
		if (api == CL_API_RESPONSES &&
		    cli_sim_count_images(content, &req->images, msg, n) != 0) {
			*code = "invalid_image_url";
			return CL_EINVAL;
		}
		/* A Responses conversation's history: its assistant items, as chat's. */
		if (api == CL_API_RESPONSES)
			note_history(req, json_object_get(e, "role"), content);
		cli_sim_feed_prefix(&req->prefix, content);
		req->inputs++;
	}
	return 0;
bad:
	snprintf(msg, n,
		 api == CL_API_RESPONSES ? "'%s' must be a string or a non-empty array of messages"
					 : "'%s' must be a string or a non-empty array of strings",
		 key);
	*code = "invalid_type";
	return CL_EINVAL;
}

/* The text of a rerank document: a string, or an object whose "text" is one (Cohere's and
 * Jina's {"text": ...}).  NULL otherwise. */
static json_t *doc_text(json_t *d)
{
	if (json_is_object(d))
		d = json_object_get(d, "text");
	return json_is_string(d) ? d : NULL;
}

/* The documents of a rerank or score request against the query q: each a pair read. */
static int read_scored_docs(json_t *q, json_t *docs, const char *dkey, struct cl_sim_chat_req *req,
			    char *msg, size_t n, const char **code)
{
	if (!json_is_array(docs) || json_array_size(docs) == 0 ||
	    json_array_size(docs) > MAX_MESSAGES) {
		snprintf(msg, n, "'%s' must be a non-empty array of strings", dkey);
		*code = "invalid_type";
		return CL_EINVAL;
	}
	uint64_t qchars = 0, qwords = 0;
	cli_sim_content_chars(q, &qchars, &qwords);
	req->prompt_fnv = cli_sim_fnv_message(0xcbf29ce484222325ULL, NULL, q);
	size_t i;
	json_t *d;
	json_array_foreach(docs, i, d)
	{
		json_t *text = doc_text(d);
		if (!text) {
			snprintf(msg, n,
				 "'%s[%zu]' must be a string or an object with a 'text' string",
				 dkey, i);
			*code = "invalid_type";
			return CL_EINVAL;
		}
		req->prompt_chars += qchars;
		req->prompt_words += qwords;
		cli_sim_content_chars(text, &req->prompt_chars, &req->prompt_words);
		req->prompt_fnv = cli_sim_fnv_message(req->prompt_fnv, NULL, text);
		req->inputs++;
	}
	return 0;
}

/* rerank's "query" and "documents" (TEI: "texts"), score's "text_1" and "text_2": the query
 * scored against each document, so the tokens read are each pair's, the query's counted once
 * per document as a server tokenizes it (docs/simulator.md, "Rerank and score").  inputs is
 * the documents.  0, or CL_EINVAL with msg set. */
static int read_scored(enum cl_api api, json_t *root, struct cl_sim_chat_req *req, char *msg,
		       size_t n, const char **code)
{
	bool rerank = api == CL_API_RERANK;
	const char *qkey = rerank ? "query" : "text_1", *dkey = rerank ? "documents" : "text_2";
	json_t *q = json_object_get(root, qkey);
	json_t *docs = json_object_get(root, dkey);
	if (rerank && !docs && json_object_get(root, "texts"))
		docs = json_object_get(root, dkey = "texts"); /* TEI's name */
	/* score's text_1 may be a list of one (vLLM takes 1:N as text_1 of one string). */
	if (!rerank && json_is_array(q) && json_array_size(q) == 1)
		q = json_array_get(q, 0);
	if (!q || !docs) {
		snprintf(msg, n, "'%s' is a required property", q ? dkey : qkey);
		*code = "missing_required_parameter";
		return CL_EINVAL;
	}
	if (!json_is_string(q)) {
		snprintf(msg, n, "'%s' must be a string", qkey);
		*code = "invalid_type";
		return CL_EINVAL;
	}
	if (!rerank && json_is_string(docs)) {
		json_t *one = json_pack("[O]", docs);
		int rc = one ? read_scored_docs(q, one, dkey, req, msg, n, code) : CL_ENOMEM;
		json_decref(one);
		return rc;
	}
	return read_scored_docs(q, docs, dkey, req, msg, n, code);
}

int cl_sim_api_parse(enum cl_api api, const char *body, size_t len, struct cl_sim_chat_req *req,
		     char *msg, size_t n, const char **code)
{
	json_error_t jerr;
	json_t *root = NULL;
	int rc = CL_EINVAL;
	uint32_t max_tokens = 0, max_completion = 0;

	memset(req, 0, sizeof(*req));
	*code = "invalid_request";
	root = json_loadb(body, len, 0, &jerr);
	if (!root) {
		snprintf(msg, n, "invalid JSON body: %s (line %d, column %d)", jerr.text, jerr.line,
			 jerr.column);
		*code = "invalid_json";
		return CL_EPARSE;
	}
	if (!json_is_object(root)) {
		snprintf(msg, n, "the request body must be a JSON object");
		goto out;
	}
	req->api = api;
	if (cl_api_scores(api)) {
		if (read_scored(api, root, req, msg, n, code))
			goto out;
	} else if (api == CL_API_COMPLETIONS) {
		if (read_input(api, json_object_get(root, "prompt"), "prompt", req, msg, n, code))
			goto out;
	} else if (api != CL_API_CHAT && api != CL_API_MESSAGES) {
		if (read_input(api, json_object_get(root, "input"), "input", req, msg, n, code))
			goto out;
	} else if (read_messages(root, req, msg, n, code)) {
		goto out;
	}
	json_t *model = json_object_get(root, "model");
	if (model && !json_is_null(model)) {
		if (!json_is_string(model)) {
			snprintf(msg, n, "'model' must be a string");
			*code = "invalid_type";
			goto out;
		}
		req->has_model = true;
		req->model_too_long = json_string_length(model) >= sizeof(req->model);
		snprintf(req->model, sizeof(req->model), "%s", json_string_value(model));
	}
	if (get_bool(root, "stream", &req->stream, msg, n, code) ||
	    get_bool(root, "ignore_eos", &req->ignore_eos, msg, n, code) ||
	    get_priority(root, req, msg, n, code) ||
	    get_max(root, api == CL_API_RESPONSES ? "max_output_tokens" : "max_tokens", &max_tokens,
		    msg, n, code) ||
	    (api == CL_API_CHAT &&
	     get_max(root, "max_completion_tokens", &max_completion, msg, n, code)))
		goto out;
	if (!cl_api_streams(api) && req->stream) {
		snprintf(msg, n, "%s answers are not streamed: 'stream' must be false or absent",
			 cl_api_name(api));
		*code = "invalid_value";
		goto out;
	}
	if (!cl_api_streams(api))
		req->max_tokens = 0, max_tokens = 0, req->ignore_eos = false;
	req->max_tokens = max_completion ? max_completion : max_tokens;
	if (get_stop(root, req, msg, n, code) || cli_sim_read_tools(root, req, msg, n, code))
		goto out;
	json_t *so = json_object_get(root, "stream_options");
	if (so && !json_is_null(so)) {
		if (!json_is_object(so)) {
			snprintf(msg, n, "'stream_options' must be an object");
			*code = "invalid_type";
			goto out;
		}
		if (get_bool(so, "include_usage", &req->include_usage, msg, n, code) ||
		    get_bool(so, "continuous_usage_stats", &req->continuous_usage, msg, n, code))
			goto out;
	}
	/* As vLLM: per-chunk usage only when usage was asked for at all. */
	req->continuous_usage = req->continuous_usage && req->include_usage;
	rc = 0;
out:
	json_decref(root);
	return rc;
}
