/* The agent's --allow-target check: a target URL's host and port against the allow-list. */
#include "allow.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

bool cl_agent_target_allowed(const struct cl_agent_opts *o, const char *base_url, char *why,
			     size_t n)
{
	if (!o->n_allow)
		return true;
	const char *p = strstr(base_url, "://");
	p = p ? p + 3 : base_url;
	size_t hostport_len = strcspn(p, "/?#");
	char hostport[512];
	if (hostport_len >= sizeof(hostport))
		hostport_len = sizeof(hostport) - 1;
	memcpy(hostport, p, hostport_len);
	hostport[hostport_len] = '\0';
	char host[512];
	snprintf(host, sizeof(host), "%s", hostport);
	/* Split off the port, minding [v6]:port. */
	char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
	const char *port = NULL;
	if (colon) {
		if (host[0] == '[')
			colon++;
		*colon = '\0';
		port = colon + 1;
	}
	if (!port)
		port = strncmp(base_url, "https", 5) == 0 ? "443" : "80";
	char with_port[600];
	snprintf(with_port, sizeof(with_port), "%s:%s", host, port);
	for (size_t i = 0; i < o->n_allow; i++) {
		if (strcasecmp(o->allow[i], host) == 0 || strcasecmp(o->allow[i], with_port) == 0)
			return true;
	}
	snprintf(why, n, "target '%s' is not in this agent's --allow-target list", with_port);
	return false;
}
