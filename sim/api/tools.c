/* A chat request's tools (see tools.h): the functions offered, tool_choice, and what each
 * message says about tool calls and their results. */
#include "tools.h"

#include "content.h"

#include "chatload/err.h"

#include <stdio.h>
#include <string.h>

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
int cli_sim_read_tool_message(json_t *m, json_t *role, size_t i, struct cl_sim_chat_req *req,
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
		cli_sim_content_chars(args, &req->prompt_chars, &req->prompt_words);
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
int cli_sim_read_tools(json_t *root, struct cl_sim_chat_req *req, char *msg, size_t n,
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
