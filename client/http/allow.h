/* An agent's allow-list of targets (--allow-target): entries parsed once, and the decision
 * on the host and port libcurl will really connect to for a URL. */
#ifndef CHATLOAD_HTTP_ALLOW_H
#define CHATLOAD_HTTP_ALLOW_H

#include "client/http/url.h"

#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>

/* One entry: a host (name or IP literal) and a port, or any port. */
struct cl_allow_entry {
	struct cl_url_where where; /* host as a URL would have it; where.port unused */
	int port;                  /* -1: any port */
};

/* The list; zeroed is empty (which allows every target). */
struct cl_allow_list {
	struct cl_allow_entry *v;
	size_t n;
};

/*
 * Adds entry ("host", "host:port", "[v6]", "[v6]:port", "[fe80::1%eth0]:port") to l,
 * parsed by libcurl as the host part of a URL, so it is normalised like a target's host
 * (127.1 is 127.0.0.1, names are lower-cased, one trailing dot dropped).  CL_EINVAL with
 * err naming the entry when it is not a host[:port] (a path, userinfo, a query, another
 * scheme), CL_ENOMEM.
 */
int cl_allow_list_add(struct cl_allow_list *l, const char *entry, struct cl_err *err);

/* Frees the entries; l is empty afterwards.  Safe on a zeroed list. */
void cl_allow_list_free(struct cl_allow_list *l);

/*
 * Whether l allows where: an entry naming the same host and the same port (or any).  An IP
 * entry matches the same address only (any spelling libcurl accepts, never a name that
 * resolves to it); a name entry matches the same name only (never resolved: DNS decides
 * where a name goes, for this check as for any client); a zone id must be the same.  An
 * empty or NULL list allows everything.
 */
bool cl_allow_list_match(const struct cl_allow_list *l, const struct cl_url_where *where);

/*
 * The whole decision for a target URL: parsed by libcurl (cl_url_where), then matched.  0
 * when allowed; CL_EREFUSED with err saying which host and port were refused (and, when the
 * URL has a user@ part, that it is not the host), or the parse error (CL_EINVAL).  With an
 * empty or NULL list only the parse is checked.
 */
int cl_allow_check_url(const struct cl_allow_list *l, const char *url, struct cl_err *err);

#endif
