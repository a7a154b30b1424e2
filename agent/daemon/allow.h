/* The agent's --allow-target check: whether this agent may send load to a target URL. */
#ifndef CHATLOAD_AGENT_DAEMON_ALLOW_H
#define CHATLOAD_AGENT_DAEMON_ALLOW_H

#include "agent/daemon/control.h"

#include "chatload/plan.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * True when opts->allow allows load on the host and port libcurl would connect to for
 * base_url (always, for a URL libcurl can use, when the list is empty).  Fills why (size n)
 * when not: the refused host and port, or why the URL cannot be used.  The engine and the
 * readiness gate check again, on the exact URLs they hand libcurl.
 */
bool cl_agent_target_allowed(const struct cl_agent_opts *opts, const char *base_url, char *why,
			     size_t n);

/* cl_agent_target_allowed for the plan's base URL and each of its endpoints (target.urls):
 * the first one refused fills why. */
bool cl_agent_plan_allowed(const struct cl_agent_opts *opts, const struct cl_target_plan *t,
			   char *why, size_t n);

#endif
