/* The agent's --allow-target check: whether this agent may send load to a target URL. */
#ifndef CHATLOAD_AGENT_ALLOW_H
#define CHATLOAD_AGENT_ALLOW_H

#include "control.h"

#include <stdbool.h>
#include <stddef.h>

/* True when opts allows load on base_url's host and port (always when no allow-list).
 * Fills why (size n) when not. */
bool cl_agent_target_allowed(const struct cl_agent_opts *opts, const char *base_url, char *why,
			     size_t n);

#endif
