/* The agent's --allow-target check: a target URL's host and port, as libcurl parses them,
 * against the allow-list (client/http/allow.c holds the rule). */
#include "agent/daemon/allow.h"

#include "client/http/allow.h"

#include <stdio.h>

bool cl_agent_target_allowed(const struct cl_agent_opts *o, const char *base_url, char *why,
			     size_t n)
{
	struct cl_err err = { 0 };
	if (cl_allow_check_url(o->allow, base_url, &err) == 0)
		return true;
	snprintf(why, n, "%s", err.msg);
	return false;
}

bool cl_agent_plan_allowed(const struct cl_agent_opts *o, const struct cl_target_plan *t, char *why,
			   size_t n)
{
	if (!cl_agent_target_allowed(o, t->base_url, why, n))
		return false;
	for (size_t i = 0; i < t->n_endpoints; i++)
		if (!cl_agent_target_allowed(o, t->endpoints[i], why, n))
			return false;
	return true;
}
