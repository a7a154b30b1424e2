/* The scenario loader's target section: its key table, the URL (cli_scn_get_http_url, also
 * read by target.urls and server_metrics), the request body's extra keys, headers (the form
 * classes and server_metrics read too) and http2. Its simulator is read in simulator.c, its
 * server_metrics in server_metrics.c, urls and route in urls.c. */
#include "coordinator/scenario/scenario.h"

#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SEC  1000000LL
#define DAY  (86400LL * SEC)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* An http:// or https:// URL with a host and no spaces, into *out (trailing '/' dropped).
 * 0, or -1 after an error naming the field. */
int cli_scn_get_http_url(struct scn_ctx *c, const struct ynode *v, char **out)
{
	char got[96];
	if (cli_scn_get_str(c, v, true, out) != 0)
		return -1;
	const char *u = *out;
	const char *host = NULL;
	if (strncasecmp(u, "http://", 7) == 0)
		host = u + 7;
	else if (strncasecmp(u, "https://", 8) == 0)
		host = u + 8;
	if (!host) {
		cli_scn_error(c, v, "%s must start with http:// or https://, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (!*host || *host == '/' || *host == ':') {
		cli_scn_error(c, v, "%s has no host, got %s", cli_scn_path(c),
			      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	for (const char *p = u; *p; p++) {
		if (isspace((unsigned char)*p) || (unsigned char)*p < 0x20) {
			cli_scn_error(c, v,
				      "%s must not contain spaces or control characters, got %s",
				      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
			return -1;
		}
	}
	size_t len = strlen(*out);
	while (len > (size_t)(host - u) + 1 && (*out)[len - 1] == '/')
		(*out)[--len] = '\0';
	return 0;
}

static void conv_url(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	cli_scn_get_http_url(c, v, &t->url);
}

/* Where header_pair appends: the headers of the target, its server_metrics or a class. */
struct header_list {
	char ***headers;
	size_t *n_headers;
};

static void header_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v,
			bool merged, void *argp)
{
	const struct header_list *hl = argp;
	char **have = *hl->headers;
	size_t n = *hl->n_headers;
	char got[96];
	if (k->kind != YN_SCALAR || k->len == 0 || strlen(k->str) != k->len) {
		cli_scn_error(c, k, "header names in %s must be strings, got %s", cli_scn_path(c),
			      cli_scn_describe(k, got, sizeof(got)));
		return;
	}
	/* HTTP header names are case-insensitive: a second one is a duplicate, unless merged */
	for (size_t i = 0; i < n; i++) {
		if (strncasecmp(have[i], k->str, k->len) == 0 && have[i][k->len] == ':') {
			if (!merged)
				cli_scn_error(c, k, "duplicate header '%s' in %s", k->str,
					      cli_scn_path(c));
			return;
		}
	}
	for (const char *p = k->str; *p; p++) {
		if (!isalnum((unsigned char)*p) && !strchr("!#$%&'*+-.^_`|~", *p)) {
			cli_scn_error(c, k, "%s: '%s' is not a valid HTTP header name",
				      cli_scn_path(c), k->str);
			return;
		}
	}
	if (n >= SCN_MAX_HEADERS) {
		cli_scn_error(c, k, "%s has more than %d headers", cli_scn_path(c),
			      SCN_MAX_HEADERS);
		return;
	}
	size_t mark = cli_scn_path_key(c, k->str);
	bool ok = cli_scn_scalar(c, v, "a string");
	if (ok && strpbrk(v->str, "\r\n")) {
		cli_scn_error(c, v, "%s must not contain line breaks", cli_scn_path(c));
		ok = false;
	}
	cli_scn_path_pop(c, mark);
	if (!ok)
		return;
	char **h = realloc(have, (n + 1) * sizeof(*h));
	if (!h) {
		c->oom = true;
		return;
	}
	*hl->headers = h;
	if (asprintf(&h[n], "%s: %s", k->str, v->str) < 0) {
		c->oom = true;
		return;
	}
	(*hl->n_headers)++;
}

void cli_scn_read_headers(struct scn_ctx *c, const struct ynode *v, char ***headers, size_t *n)
{
	struct header_list hl = { headers, n };
	char got[96];
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_MAP) {
		cli_scn_error(c, v, "%s must be a mapping of header names to values, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_map_each(c, v, header_pair, &hl);
}
static void conv_headers(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	cli_scn_read_headers(c, v, &t->headers, &t->n_headers);
}

static void conv_target_body(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	cli_scn_get_body(c, v, &t->body_json);
}

/* http2: false, true (= required), required or preferred (HTTP/1.1 allowed). */
static void conv_http2(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "false", "true", "required", "preferred" };
	struct cl_scn_target *t = obj;
	bool b;
	if (v && v->kind == YN_SCALAR && cl_parse_bool(v->str, &b) == 0) {
		t->http2 = b;
		t->http2_fallback = false;
		return;
	}
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) != 0)
		return;
	t->http2 = x != 0;
	t->http2_fallback = x == 3;
}

static const struct scn_field target_fields[TK__COUNT] = {
	[TK_URL] = SCN_CUSTOM("url", conv_url),
	[TK_SIMULATOR] = SCN_CUSTOM("simulator", cli_scn_conv_simulator),
	[TK_MODEL] = SCN_FIELD("model", SCN_F_NESTR, struct cl_scn_target, model),
	[TK_API_KEY_ENV] = SCN_FIELD("api_key_env", SCN_F_ENV, struct cl_scn_target, api_key_env),
	[TK_BODY] = SCN_CUSTOM("body", conv_target_body),
	[TK_HEADERS] = SCN_CUSTOM("headers", conv_headers),
	[TK_HTTP2] = SCN_CUSTOM("http2", conv_http2),
	[TK_TLS_VERIFY] = SCN_FIELD("tls_verify", SCN_F_BOOL, struct cl_scn_target, tls_verify),
	[TK_CA_FILE] = SCN_FIELD("ca_file", SCN_F_NESTR, struct cl_scn_target, ca_file),
	[TK_CONNECT_TIMEOUT] = SCN_RANGE("connect_timeout", SCN_F_DUR, struct cl_scn_target,
					 connect_timeout_us, 1, DAY),
	[TK_H2_STREAMS] = SCN_RANGE("http2_streams_per_connection", SCN_F_U32, struct cl_scn_target,
				    http2_streams, 1, CL_HTTP2_MAX_STREAMS),
	[TK_SERVER_METRICS] = SCN_CUSTOM("server_metrics", cli_scn_conv_server_metrics),
	[TK_URLS] = SCN_CUSTOM("urls", cli_scn_conv_urls),
	[TK_ROUTE] = SCN_CUSTOM("route", cli_scn_conv_route),
};

const struct ynode *cli_scn_target_key(const struct scn_loader *l, const char *key)
{
	for (size_t i = 0; i < N(target_fields) && i < N(l->target); i++)
		if (strcmp(target_fields[i].name, key) == 0)
			return l->target[i];
	return NULL;
}

void cli_scn_conv_target(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	cli_scn_fields(c, v, target_fields, N(target_fields), &l->s->target, l->target,
		       cli_scn_hint_for);
}
