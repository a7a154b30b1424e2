/* A chat request's tools (docs/simulator.md, "Tool calls"): "tools" and "tool_choice", and
 * what each message of the conversation says about tool calls and their results. */
#ifndef CHATLOAD_SIM_TOOLS_H
#define CHATLOAD_SIM_TOOLS_H

#include "chat.h"

#include <jansson.h>
#include <stddef.h>

/* What message m (the i-th, whose role is role) says about tools: an assistant's tool_calls
 * (their arguments count as prompt text, as a chat template renders them) and a tool
 * result's tool_call_id; req->tool_results counts the tool results since the last user
 * message.  0, or CL_EINVAL with msg (size n) and *code set. */
int cli_sim_read_tool_message(json_t *m, json_t *role, size_t i, struct cl_sim_chat_req *req,
			      char *msg, size_t n, const char **code);

/* The request's "tools" (chat only; refused on the other APIs) and "tool_choice" into req's
 * tool fields.  0, or CL_EINVAL with msg (size n) and *code set. */
int cli_sim_read_tools(json_t *root, struct cl_sim_chat_req *req, char *msg, size_t n,
		       const char **code);

#endif
