/* libFuzzer target: target URLs and --allow-target entries through libcurl's parser
 * (client/http), with the properties the allow-list relies on: an endpoint URL built from
 * a base goes where the base goes, an entry made from a URL's host allows that URL, and a
 * target handle built from a URL holds URLs that go there too. */
#include "client/http/allow.h"
#include "client/http/handle.h"
#include "client/http/url.h"

#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : 1;
}

static void die(const char *what, const char *url)
{
	fprintf(stderr, "fuzz_url: %s: '%s'\n", what, url);
	abort();
}

static bool same(const struct cl_url_where *a, const struct cl_url_where *b)
{
	return a->https == b->https && a->port == b->port && a->is_ip == b->is_ip &&
	       strcmp(a->host, b->host) == 0 && strcmp(a->zone, b->zone) == 0 &&
	       strcmp(a->name, b->name) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096 || memchr(data, '\0', size))
		return 0; /* a C string is what arrives */
	char *url = malloc(size + 1);
	if (!url)
		abort();
	memcpy(url, data, size);
	url[size] = '\0';

	/* As an entry: parsed or refused with a reason, never half-added. */
	struct cl_allow_list l = { 0 };
	struct cl_err err = { 0 };
	int rc = cl_allow_list_add(&l, url, &err);
	if ((rc == 0) != (l.n == 1) || (rc && !err.msg[0]))
		die("entry added and refused", url);
	cl_allow_list_free(&l);

	struct cl_url_where w, w2;
	if (cl_url_where(url, &w, &err) != 0) {
		if (!err.msg[0])
			die("refused without a reason", url);
		if (cl_allow_check_url(NULL, url, &err) == 0)
			die("an unusable URL allowed", url);
		free(url);
		return 0;
	}
	if (w.port == 0 || !w.host[0] || (!w.is_ip && !w.name[0]))
		die("parsed without a host or port", url);

	char *ep = NULL;
	if (cl_url_endpoint(url, "/chat/completions", &ep, &err) == 0) {
		if (cl_url_where(ep, &w2, &err) != 0 || !same(&w, &w2))
			die("the endpoint URL goes elsewhere", url);
		free(ep);
	}

	/* An entry for exactly this host and port allows it; one for another port does not. */
	char entry[CL_URL_HOST_MAX + 80];
	cl_url_where_str(&w, entry, sizeof(entry));
	if (cl_allow_list_add(&l, entry, &err) == 0) {
		if (cl_allow_check_url(&l, url, &err) != 0)
			die("its own host:port refused", url);
		l.v[0].port = w.port == 65535 ? 1 : w.port + 1;
		if (cl_allow_check_url(&l, url, &err) != CL_EREFUSED)
			die("another port allowed", url);
	} else if (w.is_ip || strchr(w.host, '.')) {
		die("its host:port is no entry", entry);
	}
	cl_allow_list_free(&l);

	struct cl_target_plan p = { .base_url = url, .tls_verify = true };
	struct cl_http_target t;
	if (cl_http_target_init(&t, &p, NULL, &err) == 0) {
		for (int e = 0; e < CL_HTTP__ENDPOINTS; e++) {
			if (cl_url_where(t.url[e], &w2, &err) != 0 || !same(&w, &w2))
				die("a handle URL goes elsewhere", url);
		}
	}
	cl_http_target_free(&t);
	free(url);
	return 0;
}
