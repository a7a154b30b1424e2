/* Chat completions request decoding for chatload-sim (see chat.h). */
#include "chat.h"

#include "chatload/err.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define MAX_MESSAGES 100000

static uint64_t utf8_chars(const char *s, size_t n)
{
	uint64_t chars = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			chars++;
	return chars;
}

uint64_t cl_sim_text_tokens(const char *s, size_t n)
{
	uint64_t tokens = 0, run = 0;
	for (size_t i = 0; i <= n; i++) {
		unsigned char ch = i < n ? (unsigned char)s[i] : ' ';
		bool letter = (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z';
		if (ch >= 0x80) {
			letter = true;
			if ((ch & 0xc0) == 0x80)
				continue; /* a continuation byte is part of its character */
		}
		if (letter) {
			run++;
			continue;
		}
		tokens += (run + 5) / 6;
		run = 0;
		if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
			tokens++;
	}
	return tokens;
}

/* Characters of a message's content (a string, or an array of parts with "text"), and its
 * tokens by the text. */
static int content_chars(json_t *content, uint64_t *chars, uint64_t *words)
{
	if (!content || json_is_null(content))
		return 0;
	if (json_is_string(content)) {
		*chars += utf8_chars(json_string_value(content), json_string_length(content));
		*words +=
		    cl_sim_text_tokens(json_string_value(content), json_string_length(content));
		return 0;
	}
	if (!json_is_array(content))
		return CL_EINVAL;
	size_t i;
	json_t *part;
	json_array_foreach(content, i, part)
	{
		if (!json_is_object(part))
			return CL_EINVAL;
		json_t *text = json_object_get(part, "text");
		if (json_is_string(text)) {
			*chars += utf8_chars(json_string_value(text), json_string_length(text));
			*words +=
			    cl_sim_text_tokens(json_string_value(text), json_string_length(text));
		}
	}
	return 0;
}

/* ---- image parts (--image-tokens) ---- */

/* Whether url is an http(s) URL or a data URL "data:image/<type>;base64,<base64>", checked
 * without decoding: the base64 alphabet, a length that is a multiple of 4, at most two
 * '=' at the end. */
static bool image_url_ok(const char *url, size_t len)
{
	if ((len > 7 && strncmp(url, "http://", 7) == 0) ||
	    (len > 8 && strncmp(url, "https://", 8) == 0))
		return true;
	static const char head[] = "data:image/";
	if (len < sizeof(head) || strncmp(url, head, sizeof(head) - 1) != 0)
		return false;
	const char *comma = memchr(url, ',', len);
	static const char b64[] = ";base64";
	if (!comma || (size_t)(comma - url) < sizeof(head) - 1 + sizeof(b64) ||
	    strncmp(comma - (sizeof(b64) - 1), b64, sizeof(b64) - 1) != 0)
		return false;
	const char *d = comma + 1;
	size_t n = len - (size_t)(d - url), pad = 0;
	if (n == 0 || n % 4)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)d[i];
		bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			     (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
		if (ch == '=' && i + 2 >= n)
			pad++;
		else if (!alpha || pad)
			return false;
	}
	return true;
}

/*
 * Counts the image parts of a message's content into *images: chat's {"type": "image_url",
 * "image_url": {"url": U} or U} and Responses' {"type": "input_image", "image_url": U} (or
 * a "file_id", counted as it is).  CL_EINVAL, msg filled, for a part whose URL is missing or
 * malformed: a server refuses such a request with 400 before it runs.
 */
static int count_images(json_t *content, uint32_t *images, char *msg, size_t n)
{
	size_t i;
	json_t *part;
	if (!json_is_array(content))
		return 0;
	json_array_foreach(content, i, part)
	{
		json_t *type = json_object_get(part, "type");
		if (!json_is_string(type))
			continue;
		const char *t = json_string_value(type);
		bool chat = strcmp(t, "image_url") == 0, resp = strcmp(t, "input_image") == 0;
		if (!chat && !resp)
			continue;
		json_t *u = json_object_get(part, "image_url");
		if (chat && json_is_object(u))
			u = json_object_get(u, "url");
		if (resp && !u && json_is_string(json_object_get(part, "file_id"))) {
			(*images)++;
			continue;
		}
		if (!json_is_string(u) ||
		    !image_url_ok(json_string_value(u), json_string_length(u))) {
			snprintf(msg, n,
				 "content part %zu: image_url must be an http(s) URL or a data URL "
				 "'data:image/<type>;base64,<data>' with valid base64",
				 i);
			return CL_EINVAL;
		}
		(*images)++;
	}
	return 0;
}

/* The message's text into the prefix cache's blocks (prefix.h), a separator after it. */
static void feed_prefix(struct cl_sim_prefix_key *k, json_t *content)
{
	if (json_is_string(content)) {
		cl_sim_prefix_feed(k, json_string_value(content), json_string_length(content));
	} else if (json_is_array(content)) {
		size_t i;
		json_t *part;
		json_array_foreach(content, i, part)
		{
			json_t *text = json_object_get(part, "text");
			if (json_is_string(text))
				cl_sim_prefix_feed(k, json_string_value(text),
						   json_string_length(text));
		}
	}
	cl_sim_prefix_feed(k, "\x1e", 1);
}

/* FNV-1a, 64 bits, from h on: how the truth log names texts without carrying them. */
static uint64_t fnv1a_from(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	return fnv1a_from(0xcbf29ce484222325ULL, s, n);
}

/* The message's role and text into the prompt's hash, each ended by a separator. */
static uint64_t fnv_message(uint64_t h, json_t *role, json_t *content)
{
	if (json_is_string(role))
		h = fnv1a_from(h, json_string_value(role), json_string_length(role));
	h = fnv1a_from(h, "\x1e", 1);
	if (json_is_string(content)) {
		h = fnv1a_from(h, json_string_value(content), json_string_length(content));
	} else if (json_is_array(content)) {
		size_t i;
		json_t *part;
		json_array_foreach(content, i, part)
		{
			json_t *text = json_object_get(part, "text");
			if (json_is_string(text))
				h = fnv1a_from(h, json_string_value(text),
					       json_string_length(text));
		}
	}
	return fnv1a_from(h, "\x1e", 1);
}

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
	req->history_fnv = json_is_string(content)
			       ? fnv1a(json_string_value(content), json_string_length(content))
			       : 0;
}

/* ---- tools (docs/simulator.md, "Tool calls") ------------------------------------------ */

/* A tool's name as OpenAI allows it: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'. */
static bool tool_name_ok(json_t *name)
{
	if (!json_is_string(name))
		return false;
	size_t len = json_string_length(name);
	const char *s = json_string_value(name);
	if (len < 1 || len >= CL_SIM_TOOL_NAME)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* What a message says about tools: an assistant's tool_calls (their arguments are prompt
 * text, as a chat template renders them) and a tool result's tool_call_id; the count of
 * tool results since the last user message.  0, or CL_EINVAL with msg set. */
static int read_tool_message(json_t *m, json_t *role, size_t i, struct cl_sim_chat_req *req,
			     char *msg, size_t n, const char **code)
{
	const char *r = json_is_string(role) ? json_string_value(role) : "";
	if (strcmp(r, "user") == 0) {
		req->tool_results = 0;
		return 0;
	}
	if (strcmp(r, "tool") == 0) {
		if (!json_is_string(json_object_get(m, "tool_call_id"))) {
			snprintf(msg, n,
				 "messages[%zu]: a tool message needs a string tool_call_id", i);
			*code = "invalid_type";
			return CL_EINVAL;
		}
		req->tool_results++;
		return 0;
	}
	json_t *calls = json_object_get(m, "tool_calls");
	if (strcmp(r, "assistant") != 0 || !calls || json_is_null(calls))
		return 0;
	size_t k;
	json_t *c;
	if (!json_is_array(calls))
		goto bad;
	json_array_foreach(calls, k, c)
	{
		json_t *fn = json_object_get(c, "function");
		json_t *args = json_object_get(fn, "arguments");
		if (!json_is_string(json_object_get(c, "id")) ||
		    !tool_name_ok(json_object_get(fn, "name")) || !json_is_string(args))
			goto bad;
		content_chars(args, &req->prompt_chars, &req->prompt_words);
	}
	return 0;
bad:
	snprintf(msg, n,
		 "messages[%zu].tool_calls must be an array of {id, type, function: {name, "
		 "arguments}}",
		 i);
	*code = "invalid_type";
	return CL_EINVAL;
}

/* "tools" and "tool_choice" of a chat request.  0, or CL_EINVAL with msg set. */
static int read_tools(json_t *root, struct cl_sim_chat_req *req, char *msg, size_t n,
		      const char **code)
{
	json_t *tools = json_object_get(root, "tools");
	json_t *choice = json_object_get(root, "tool_choice");
	*code = "invalid_type";
	if (tools && !json_is_null(tools)) {
		if (req->api != CL_API_CHAT) {
			/* Anthropic's tool definitions have their own shape: not served. */
			snprintf(msg, n, "'tools' is supported on /v1/chat/completions only");
			*code = "invalid_request";
			return CL_EINVAL;
		}
		if (!json_is_array(tools) || json_array_size(tools) == 0 ||
		    json_array_size(tools) > CL_SIM_TOOLS_MAX) {
			snprintf(msg, n, "'tools' must be a non-empty array of at most %d tools",
				 CL_SIM_TOOLS_MAX);
			return CL_EINVAL;
		}
		size_t i;
		json_t *t;
		json_array_foreach(tools, i, t)
		{
			json_t *type = json_object_get(t, "type");
			json_t *fn = json_object_get(t, "function");
			json_t *name = json_object_get(fn, "name");
			json_t *params = json_object_get(fn, "parameters");
			if (!json_is_string(type) ||
			    strcmp(json_string_value(type), "function") != 0) {
				snprintf(msg, n, "tools[%zu].type must be \"function\"", i);
				return CL_EINVAL;
			}
			if (!json_is_object(fn) || !tool_name_ok(name)) {
				snprintf(
				    msg, n,
				    "tools[%zu].function.name must be 1 to 64 letters, digits, "
				    "'_' or '-'",
				    i);
				return CL_EINVAL;
			}
			if (params && !json_is_null(params) && !json_is_object(params)) {
				snprintf(
				    msg, n,
				    "tools[%zu].function.parameters must be a JSON schema object",
				    i);
				return CL_EINVAL;
			}
			snprintf(req->tool_names[i], CL_SIM_TOOL_NAME, "%s",
				 json_string_value(name));
		}
		req->n_tools = (uint32_t)json_array_size(tools);
	}
	if (!choice || json_is_null(choice))
		return 0;
	if (json_is_string(choice)) {
		const char *c = json_string_value(choice);
		if (strcmp(c, "auto") == 0)
			req->tool_choice = CL_SIM_TOOL_AUTO;
		else if (strcmp(c, "none") == 0)
			req->tool_choice = CL_SIM_TOOL_NONE;
		else if (strcmp(c, "required") == 0)
			req->tool_choice = CL_SIM_TOOL_REQUIRED;
		else
			goto bad_choice;
		if (req->tool_choice == CL_SIM_TOOL_REQUIRED && !req->n_tools) {
			snprintf(msg, n, "tool_choice 'required' needs 'tools'");
			*code = "invalid_request";
			return CL_EINVAL;
		}
		return 0;
	}
	const char *name =
	    json_string_value(json_object_get(json_object_get(choice, "function"), "name"));
	for (uint32_t i = 0; name && i < req->n_tools; i++) {
		if (strcmp(req->tool_names[i], name) == 0) {
			req->tool_choice = CL_SIM_TOOL_REQUIRED;
			req->tool_choice_named = true;
			req->tool_named = i;
			return 0;
		}
	}
bad_choice:
	snprintf(msg, n,
		 "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": "
		 "\"function\", \"function\": {\"name\": <one of tools>}}");
	*code = "invalid_value";
	return CL_EINVAL;
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
	    content_chars(system, &req->prompt_chars, &req->prompt_words) != 0) {
		snprintf(msg, n, "'system' must be a string or an array of text blocks");
		*code = "invalid_type";
		return CL_EINVAL;
	}
	json_t *role = json_string("system");
	if (!role) {
		snprintf(msg, n, "out of memory");
		return CL_ENOMEM;
	}
	feed_prefix(&req->prefix, system);
	req->prompt_fnv = fnv_message(req->prompt_fnv, role, system);
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
		    content_chars(json_object_get(m, "content"), &req->prompt_chars,
				  &req->prompt_words) != 0) {
			snprintf(msg, n,
				 "messages[%zu] must be an object with string or text-part "
				 "content",
				 i);
			*code = "invalid_type";
			return CL_EINVAL;
		}
		json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
		if (count_images(content, &req->images, msg, n) != 0) {
			*code = "invalid_image_url";
			return CL_EINVAL;
		}
		if (read_tool_message(m, role, i, req, msg, n, code))
			return CL_EINVAL;
		feed_prefix(&req->prefix, content);
		req->prompt_fnv = fnv_message(req->prompt_fnv, role, content);
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
				? fnv_message(req->prompt_fnv, json_object_get(e, "role"),
					      json_object_get(e, "content"))
				: fnv_message(req->prompt_fnv, NULL, e);
		}
	} else {
		req->prompt_fnv = fnv_message(req->prompt_fnv, NULL, v);
	}
	if (json_is_string(v)) {
		content_chars(v, &req->prompt_chars, &req->prompt_words);
		feed_prefix(&req->prefix, v);
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
		if (content_chars(content, &req->prompt_chars, &req->prompt_words) != 0)
			goto bad;
		if (api == CL_API_RESPONSES && count_images(content, &req->images, msg, n) != 0) {
			*code = "invalid_image_url";
			return CL_EINVAL;
		}
		/* A Responses conversation's history: its assistant items, as chat's. */
		if (api == CL_API_RESPONSES)
			note_history(req, json_object_get(e, "role"), content);
		feed_prefix(&req->prefix, content);
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
	if (api == CL_API_COMPLETIONS) {
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
	if (api == CL_API_EMBEDDINGS && req->stream) {
		snprintf(msg, n, "embeddings are not streamed: 'stream' must be false or absent");
		*code = "invalid_value";
		goto out;
	}
	if (api == CL_API_EMBEDDINGS)
		req->max_tokens = 0, max_tokens = 0, req->ignore_eos = false;
	req->max_tokens = max_completion ? max_completion : max_tokens;
	if (get_stop(root, req, msg, n, code) || read_tools(root, req, msg, n, code))
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

int cl_sim_tokenize_parse(const char *body, size_t len, uint64_t *chars, uint64_t *words, char *msg,
			  size_t n)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, 0, &jerr);
	int rc = CL_EINVAL;
	*chars = *words = 0;
	if (!root) {
		snprintf(msg, n, "invalid JSON body: %s (line %d, column %d)", jerr.text, jerr.line,
			 jerr.column);
		return CL_EPARSE;
	}
	json_t *text = json_object_get(root, "prompt");
	if (!text)
		text = json_object_get(root, "content"); /* llama.cpp's name */
	json_t *messages = json_object_get(root, "messages");
	if (json_is_string(text)) {
		*chars = utf8_chars(json_string_value(text), json_string_length(text));
		*words = cl_sim_text_tokens(json_string_value(text), json_string_length(text));
		rc = 0;
	} else if (!text && json_is_array(messages)) {
		size_t i;
		json_t *m;
		rc = 0;
		json_array_foreach(messages, i, m)
		{
			if (!json_is_object(m) ||
			    content_chars(json_object_get(m, "content"), chars, words) != 0) {
				rc = CL_EINVAL;
				break;
			}
		}
	}
	if (rc)
		snprintf(msg, n,
			 "the body must be an object with 'prompt' (or 'content') text or "
			 "'messages'");
	json_decref(root);
	return rc;
}

uint32_t cl_sim_chat_prompt_tokens(uint64_t chars, uint32_t chars_per_token)
{
	uint64_t cpt = chars_per_token ? chars_per_token : 4;
	uint64_t t = (chars + cpt - 1) / cpt;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}
