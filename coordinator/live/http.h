/* The coordinator's live HTTP listener (chatload run --metrics-listen, --web): nng's own HTTP
 * server, one port for every page a run serves while it runs (/metrics, the live report at
 * /), each page rendered on request by a callback. */
#ifndef CHATLOAD_HTTP_LIVE_H
#define CHATLOAD_HTTP_LIVE_H

#include "chatload/buf.h"
#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>

struct cl_http_live;

/* Renders a page into body (empty, capped) and names its content type (static text).
 * Called on one of nng's threads, never the caller's, so it must lock what it reads.
 * Returns 0, or a negative code (the client gets 500). */
typedef int (*cl_http_live_page_fn)(void *ctx, struct cl_buf *body, const char **content_type);

/*
 * Prepares a listener on addr, "HOST:PORT" ("127.0.0.1:9464", "[::1]:0", "localhost:9464";
 * port 0 picks a free one).  HOST must be a loopback address unless allow_remote: the pages
 * tell anyone who can reach them about the run.  flag and remote_flag name the options in
 * messages ("--web", "--web-allow-remote").  Nothing is served before
 * cl_http_live_start.  0, or CL_EINVAL (bad or non-loopback address: err says which) or
 * CL_ENOMEM; *out NULL on failure.
 */
int cl_http_live_open(const char *addr, const char *flag, const char *remote_flag,
		      bool allow_remote, struct cl_http_live **out, struct cl_err *err);

/* Serves GET (and HEAD) path with fn(ctx).  Before cl_http_live_start only.  0, CL_EINVAL,
 * CL_ENOMEM, CL_ESYS. */
int cl_http_live_add(struct cl_http_live *h, const char *path, cl_http_live_page_fn fn, void *ctx,
		     struct cl_err *err);

/* Binds and starts serving; url[n] gets the base URL really bound ("http://127.0.0.1:40123"),
 * with the port chosen when it was 0.  0, or CL_ESYS (cannot bind: err says why). */
int cl_http_live_start(struct cl_http_live *h, char *url, size_t n, struct cl_err *err);

/* Stops serving (requests in flight finish first: nng waits for its handlers) and frees h.
 * Accepts NULL and a listener that never started. */
void cl_http_live_close(struct cl_http_live *h);

#endif
