/* Which HTTP version chatload speaks to a target and how it uses connections: the one decision
 * the readiness probe, warmup and stages share (docs/engine.md, "HTTP/2"). */
#ifndef CHATLOAD_HTTPVER_H
#define CHATLOAD_HTTPVER_H

#include "chatload/plan.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

/* libcurl's version_num from which an h2c prior-knowledge connection can be reused (curl
 * 7.89.0 fixed curl issue #10634: 7.88 stacked a second HTTP/2 layer on every reuse). */
#define CL_HTTPVER_H2C_REUSE_FIXED 0x075900

/* How requests to one target go out. */
struct cl_httpver {
	long curl_version;         /* CURLOPT_HTTP_VERSION */
	bool h2;                   /* HTTP/2 asked for (target.http2 true/required/preferred) */
	bool h2_required;          /* an answer over HTTP/1.x is a failure, not a fallback */
	bool tls;                  /* https:// (ALPN decides); else cleartext */
	bool multiplex;            /* streams share connections: CURLPIPE_MULTIPLEX, PIPEWAIT */
	bool fresh_connection;     /* one connection per request (see cl_httpver_choose) */
	uint32_t streams_per_conn; /* CURLMOPT_MAX_CONCURRENT_STREAMS when multiplex */
};

/*
 * Decides for target t (its base_url must start with http:// or https://):
 * - http2 false: HTTP/1.1, one stream per connection, connections kept alive.
 * - https:// with http2: ALPN offering h2 and http/1.1 (CURL_HTTP_VERSION_2TLS); required
 *   makes an http/1.1 answer a failure, preferred accepts it.
 * - http:// with http2 required (or true): HTTP/2 with prior knowledge (h2c), what h2c
 *   gateways expect.  A libcurl older than 7.89.0 cannot reuse such a connection, so then
 *   every request gets its own (fresh_connection): still h2c, not multiplexed.
 * - http:// with http2 preferred: HTTP/1.1 with "Upgrade: h2c" (CURL_HTTP_VERSION_2_0): the
 *   only way a cleartext client can fall back.  A server that upgrades gets multiplexed h2c.
 * Pure apart from asking libcurl its version; never fails.
 */
void cl_httpver_choose(const struct cl_target_plan *t, struct cl_httpver *out);

/* Sets CURLOPT_HTTP_VERSION, PIPEWAIT, FRESH_CONNECT and FORBID_REUSE on h for v.
 * Returns 0, or the first CURLcode libcurl refused (e.g. no HTTP/2 built in). */
int cl_httpver_apply(CURL *h, const struct cl_httpver *v);

/*
 * Streams one libcurl multi handle should hold.  h1_slots (the caller's HTTP/1.1 figure) when
 * not multiplexing; else one connection's streams, at least 16: libcurl 7.88 lets a
 * connection still in its handshake carry one stream only, so a burst of starts opens a
 * connection per stream unless the multi may open only slots/S connections
 * (cl_httpver_apply_multi), and then C streams on slots taken lowest first use ceil(C / S).
 */
uint32_t cl_httpver_shard_slots(const struct cl_httpver *v, uint32_t h1_slots);

/*
 * Sets multi m, which holds `slots` streams, for v: CURLMOPT_PIPELINING, and when
 * multiplexing CURLMOPT_MAX_CONCURRENT_STREAMS (our cap; a server's lower SETTINGS wins) and,
 * with HTTP/2 required, CURLMOPT_MAX_HOST_CONNECTIONS = slots / S (streams beyond a server's
 * lower cap then wait for a free stream, see docs/engine.md).  With HTTP/2 preferred the
 * connections are not limited: an HTTP/1.1 answer needs one per stream.  Returns 0, or
 * nonzero when libcurl refused an option.
 */
int cl_httpver_apply_multi(CURLM *m, const struct cl_httpver *v, uint32_t slots);

/* The HTTP major version a finished transfer on h used: 1, 2, 3, or 0 when none (no
 * answer).  From CURLINFO_HTTP_VERSION. */
int cl_httpver_used(CURL *h);

/* "HTTP/1.1" (http2 false), "HTTP/2 (required)" or "HTTP/2 (preferred)": for messages. */
const char *cl_httpver_describe(const struct cl_httpver *v);

/* Whether this libcurl cannot reuse an h2c prior-knowledge connection (< 7.89.0). */
bool cl_httpver_h2c_reuse_broken(void);

#endif
