/* target.urls (several endpoints of one service, requests spread over them) and
 * target.route (how): docs/scenario.md, "Several endpoints". */
#include "internal.h"

#include "chatload/plan.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * The form two URLs are compared in: scheme and host lower-cased, the scheme's default port
 * dropped (http://H:80/v1 is http://h/v1), the path kept as written (a path is case
 * sensitive).  The trailing '/' was dropped already (cli_scn_get_http_url).  NULL: no memory.
 */
static char *normal_form(const char *u)
{
	size_t skip = strncasecmp(u, "https://", 8) == 0 ? 8 : 7;
	const char *def = skip == 8 ? ":443" : ":80";
	const char *host_end = u + skip + strcspn(u + skip, "/?#");
	char *o = malloc(strlen(u) + 1);
	if (!o)
		return NULL;
	size_t k = 0;
	for (const char *p = u; p < host_end; p++)
		o[k++] = (char)tolower((unsigned char)*p);
	o[k] = '\0';
	/* ":80" ending the authority is a port: an IPv6 literal ends with ']' */
	size_t dl = strlen(def);
	if (k > skip + dl && strcmp(o + k - dl, def) == 0)
		k -= dl;
	strcpy(o + k, host_end);
	return o;
}

void cli_scn_conv_urls(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	char got[96];
	if (!v || v->kind != YN_SEQ) {
		cli_scn_error(c, v,
			      "%s must be a list of base URLs (e.g. [http://10.0.0.1:8000/v1, "
			      "http://10.0.0.2:8000/v1]), got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (v->n < 2) {
		cli_scn_error(c, v,
			      "%s needs at least 2 URLs, got %zu (give one endpoint as target.url)",
			      cli_scn_path(c), v->n);
		return;
	}
	if (v->n > CL_ENDPOINTS_MAX) {
		cli_scn_error(c, v, "%s has %zu URLs; at most %d endpoints are supported",
			      cli_scn_path(c), v->n, CL_ENDPOINTS_MAX);
		return;
	}
	char **norm = calloc(v->n, sizeof(*norm));
	t->urls = calloc(v->n, sizeof(*t->urls));
	if (!norm || !t->urls) {
		c->oom = true;
		goto out;
	}
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *x = v->kids[i];
		size_t mark = cli_scn_path_index(c, i);
		char *url = NULL;
		if (cli_scn_get_http_url(c, x, &url) == 0) {
			char *n = normal_form(url);
			if (!n) {
				c->oom = true;
				free(url);
				cli_scn_path_pop(c, mark);
				goto out;
			}
			size_t dup = SIZE_MAX;
			for (size_t k = 0; k < t->n_urls && dup == SIZE_MAX; k++)
				if (strcmp(norm[k], n) == 0)
					dup = k;
			if (dup != SIZE_MAX) {
				cli_scn_error(c, x,
					      "%s repeats the endpoint '%s' (target.urls[%zu] is "
					      "'%s'): give each endpoint once",
					      cli_scn_path(c), url, dup, t->urls[dup]);
				free(url);
				free(n);
			} else {
				norm[t->n_urls] = n;
				t->urls[t->n_urls++] = url;
			}
		} else {
			free(url);
		}
		cli_scn_path_pop(c, mark);
	}
out:
	for (size_t i = 0; norm && i < v->n; i++)
		free(norm[i]);
	free(norm);
}

void cli_scn_conv_route(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[CL_ROUTE__COUNT] = { "round_robin", "least_outstanding",
							    "session_hash" };
	struct cl_scn_target *t = obj;
	int x;
	if (cli_scn_get_enum(c, v, names, CL_ROUTE__COUNT, &x) != 0)
		return;
	t->route = (enum cl_route)x;
	t->route_given = true;
}
