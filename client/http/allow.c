/* The allow-list decision (--allow-target): entries and target URLs are both parsed by
 * libcurl (http/url.c), and compared on the host and port libcurl connects to. */
#include "client/http/allow.h"

#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

int cl_allow_list_add(struct cl_allow_list *l, const char *entry, struct cl_err *err)
{
	if (!entry || !*entry)
		return cl_err_set(err, CL_EINVAL, "--allow-target '': want HOST or HOST:PORT");
	/* Only a host and a port: anything that would make the text more than a URL's
	 * authority (a path, a query, userinfo) or break it is no entry. */
	for (const char *p = entry; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c <= 0x20 || c == 0x7f || c == '/' || c == '@' || c == '?' || c == '#' ||
		    c == '\\')
			return cl_err_set(err, CL_EINVAL,
					  "--allow-target '%.100s': want HOST, HOST:PORT or "
					  "[IPv6]:PORT, without a scheme, user or path",
					  entry);
	}
	size_t n = strlen(entry) + sizeof("http:///");
	char *url = malloc(n);
	if (!url)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	snprintf(url, n, "http://%s/", entry);
	struct cl_allow_entry e = { .port = -1 };
	struct cl_err perr = { 0 };
	int rc = cl_url_where(url, &e.where, &perr);
	free(url);
	if (rc != 0)
		return cl_err_set(err, rc, "--allow-target '%.100s': %s", entry, perr.msg);
	if (e.where.port_given)
		e.port = e.where.port;
	struct cl_allow_entry *v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	l->v = v;
	l->v[l->n++] = e;
	return 0;
}

void cl_allow_list_free(struct cl_allow_list *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static bool same_host(const struct cl_url_where *a, const struct cl_url_where *b)
{
	if (a->is_ip != b->is_ip)
		return false;
	if (a->is_ip)
		return a->af == b->af && memcmp(a->addr, b->addr, a->af == AF_INET ? 4 : 16) == 0 &&
		       strcmp(a->zone, b->zone) == 0;
	return strcmp(a->name, b->name) == 0;
}

bool cl_allow_list_match(const struct cl_allow_list *l, const struct cl_url_where *w)
{
	if (!l || !l->n)
		return true;
	for (size_t i = 0; i < l->n; i++) {
		const struct cl_allow_entry *e = &l->v[i];
		if (same_host(&e->where, w) && (e->port < 0 || e->port == (int)w->port))
			return true;
	}
	return false;
}

/* The list as the operator can read it: "127.0.0.2, [::1]:8000, infer.internal". */
static void describe(const struct cl_allow_list *l, char *out, size_t n)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < l->n && o + 1 < n; i++) {
		const struct cl_allow_entry *e = &l->v[i];
		struct cl_url_where tmp = e->where;
		if (!tmp.is_ip) /* the name as it is compared: lower case, no trailing dot */
			snprintf(tmp.host, sizeof(tmp.host), "%s", tmp.name);
		char one[CL_URL_HOST_MAX + 80];
		if (e->port >= 0) {
			tmp.port = (uint16_t)e->port;
			cl_url_where_str(&tmp, one, sizeof(one));
		} else if (tmp.zone[0]) {
			snprintf(one, sizeof(one), "%.*s%%25%s]", (int)strlen(tmp.host) - 1,
				 tmp.host, tmp.zone);
		} else {
			snprintf(one, sizeof(one), "%s", tmp.host);
		}
		int k = snprintf(out + o, n - o, "%s%s", i ? ", " : "", one);
		if (k < 0 || (size_t)k >= n - o) {
			if (n > 4)
				memcpy(out + n - 4, "...", 4);
			return;
		}
		o += (size_t)k;
	}
}

int cl_allow_check_url(const struct cl_allow_list *l, const char *url, struct cl_err *err)
{
	struct cl_url_where w;
	int rc = cl_url_where(url, &w, err);
	if (rc != 0)
		return rc;
	if (cl_allow_list_match(l, &w))
		return 0;
	char where[CL_URL_HOST_MAX + 80], list[300];
	cl_url_where_str(&w, where, sizeof(where));
	describe(l, list, sizeof(list));
	return cl_err_set(
	    err, CL_EREFUSED, "target '%s' is not in this agent's --allow-target list (%s)%s",
	    where, list,
	    w.has_userinfo ? "; the URL's user@ part is not the host it connects to" : "");
}
