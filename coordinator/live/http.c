/* The live HTTP listener on nng's HTTP server (see live/http.h). */
#include "coordinator/live/http.h"

#include <arpa/inet.h>
#include <nng/nng.h>
#include <nng/supplemental/http/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAGES     8
#define MAX_PAGE_BODY (16u << 20) /* a page larger than this is a bug: the client gets 500 */

struct page {
	cl_http_live_page_fn fn;
	void *ctx;
};

struct cl_http_live {
	nng_url *url;
	nng_http_server *srv;
	bool started;
	struct page pages[MAX_PAGES];
	size_t n_pages;
};

/* Splits "HOST:PORT" / "[V6]:PORT" into host and port. */
static int split_addr(const char *addr, char *host, size_t hn, char *port, size_t pn)
{
	const char *colon;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return -1;
		if ((size_t)(close - addr - 1) >= hn)
			return -1;
		snprintf(host, hn, "%.*s", (int)(close - addr - 1), addr + 1);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= hn || strchr(addr, ':') != colon)
			return -1;
		snprintf(host, hn, "%.*s", (int)(colon - addr), addr);
	}
	if (!colon[1] || strlen(colon + 1) >= pn ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -1;
	snprintf(port, pn, "%s", colon + 1);
	return atoi(port) <= 65535 ? 0 : -1;
}

static bool is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return false;
}

int cl_http_live_open(const char *addr, const char *flag, const char *remote_flag,
		      bool allow_remote, struct cl_http_live **out, struct cl_err *err)
{
	*out = NULL;
	char host[256], port[8], url[300];
	if (!addr || split_addr(addr, host, sizeof(host), port, sizeof(port)) != 0 || !host[0])
		return cl_err_set(err, CL_EINVAL,
				  "%s '%s': expected HOST:PORT, e.g. 127.0.0.1:9464 "
				  "or [::1]:9464",
				  flag, addr ? addr : "");
	if (!allow_remote && !is_loopback(host))
		return cl_err_set(err, CL_EINVAL,
				  "%s '%s': '%s' is not a loopback address; the "
				  "pages describe the run to anyone who can reach them, so serving "
				  "them off this machine needs %s",
				  flag, addr, host, remote_flag);
	struct cl_http_live *h = calloc(1, sizeof(*h));
	if (!h)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	snprintf(url, sizeof(url), strchr(host, ':') ? "http://[%s]:%s" : "http://%s:%s", host,
		 port);
	int rc = nng_url_parse(&h->url, url);
	if (rc == 0)
		rc = nng_http_server_hold(&h->srv, h->url);
	if (rc != 0) {
		cl_http_live_close(h);
		return cl_err_set(err, CL_EINVAL, "%s '%s': %s", flag, addr, nng_strerror(rc));
	}
	*out = h;
	return 0;
}

static void on_request(nng_aio *aio)
{
	nng_http_handler *hd = nng_aio_get_input(aio, 1);
	struct page *pg = nng_http_handler_get_data(hd);
	nng_http_res *res = NULL;
	struct cl_buf body;
	cl_buf_init(&body, MAX_PAGE_BODY);
	const char *type = "text/plain; charset=utf-8";
	int rc = pg->fn(pg->ctx, &body, &type);
	if (rc == 0 && nng_http_res_alloc(&res) == 0 &&
	    nng_http_res_set_header(res, "Content-Type", type) == 0 &&
	    nng_http_res_set_header(res, "Cache-Control", "no-store") == 0 &&
	    nng_http_res_copy_data(res, body.data ? body.data : "", body.len) == 0) {
		cl_buf_free(&body);
		nng_aio_set_output(aio, 0, res);
		nng_aio_finish(aio, 0);
		return;
	}
	cl_buf_free(&body);
	if (res)
		nng_http_res_free(res);
	if (nng_http_res_alloc_error(&res, NNG_HTTP_STATUS_INTERNAL_SERVER_ERROR) == 0) {
		nng_aio_set_output(aio, 0, res);
		nng_aio_finish(aio, 0);
		return;
	}
	nng_aio_finish(aio, NNG_ENOMEM);
}

int cl_http_live_add(struct cl_http_live *h, const char *path, cl_http_live_page_fn fn, void *ctx,
		     struct cl_err *err)
{
	if (h->started || h->n_pages == MAX_PAGES || !path || path[0] != '/' || !fn)
		return cl_err_set(err, CL_EINVAL, "cannot add page '%s'", path ? path : "");
	struct page *pg = &h->pages[h->n_pages];
	pg->fn = fn;
	pg->ctx = ctx;
	nng_http_handler *hd;
	int rc = nng_http_handler_alloc(&hd, path, on_request);
	if (rc == 0 && (rc = nng_http_handler_set_data(hd, pg, NULL)) != 0)
		nng_http_handler_free(hd);
	if (rc == 0 && (rc = nng_http_server_add_handler(h->srv, hd)) != 0)
		nng_http_handler_free(hd);
	if (rc != 0)
		return cl_err_set(err, rc == NNG_ENOMEM ? CL_ENOMEM : CL_ESYS,
				  "cannot serve '%s': %s", path, nng_strerror(rc));
	h->n_pages++;
	return 0;
}

int cl_http_live_start(struct cl_http_live *h, char *url, size_t n, struct cl_err *err)
{
	int rc = nng_http_server_start(h->srv);
	if (rc != 0)
		return cl_err_set(err, CL_ESYS, "cannot listen on %s:%s for live pages: %s",
				  h->url->u_hostname, h->url->u_port, nng_strerror(rc));
	h->started = true;
	nng_sockaddr sa;
	char ip[INET6_ADDRSTRLEN] = "";
	unsigned port = 0;
	if (nng_http_server_get_addr(h->srv, &sa) == 0) {
		if (sa.s_family == NNG_AF_INET) {
			inet_ntop(AF_INET, &sa.s_in.sa_addr, ip, sizeof(ip));
			port = ntohs(sa.s_in.sa_port);
		} else if (sa.s_family == NNG_AF_INET6) {
			inet_ntop(AF_INET6, sa.s_in6.sa_addr, ip, sizeof(ip));
			port = ntohs(sa.s_in6.sa_port);
		}
	}
	if (ip[0])
		snprintf(url, n, strchr(ip, ':') ? "http://[%s]:%u" : "http://%s:%u", ip, port);
	else
		snprintf(url, n, "http://%s:%s", h->url->u_hostname, h->url->u_port);
	return 0;
}

void cl_http_live_close(struct cl_http_live *h)
{
	if (!h)
		return;
	if (h->srv) {
		if (h->started)
			nng_http_server_stop(h->srv);
		nng_http_server_release(h->srv);
	}
	if (h->url)
		nng_url_free(h->url);
	free(h);
}
