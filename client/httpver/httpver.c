/* The HTTP-version decision (HTTP/1.1, h2 over ALPN, h2c with prior knowledge or by Upgrade)
 * and the libcurl options that carry it out, shared by the probe and the engine. */
#include "client/httpver/httpver.h"

#include <string.h>

bool cl_httpver_h2c_reuse_broken(void)
{
	const curl_version_info_data *vi = curl_version_info(CURLVERSION_NOW);
	return !vi || vi->version_num < CL_HTTPVER_H2C_REUSE_FIXED;
}

void cl_httpver_choose(const struct cl_target_plan *t, struct cl_httpver *out)
{
	memset(out, 0, sizeof(*out));
	out->tls = t->base_url && strncmp(t->base_url, "https://", 8) == 0;
	out->h2 = t->http2;
	out->h2_required = t->http2 && !t->http2_fallback;
	out->streams_per_conn = t->http2_streams ? t->http2_streams : CL_HTTP2_DEFAULT_STREAMS;
	if (!t->http2) {
		/* One stream per connection: never wait for a busy connection (PIPEWAIT off),
		 * never queue a request behind another. */
		out->curl_version = CURL_HTTP_VERSION_1_1;
		out->streams_per_conn = 1;
		return;
	}
	out->multiplex = true;
	if (out->tls) {
		/* ALPN offers h2 and http/1.1; the server picks.  libcurl has no "h2 only" over
		 * TLS, so `required` is enforced on the answer (cl_httpver_used). */
		out->curl_version = CURL_HTTP_VERSION_2TLS;
	} else if (!out->h2_required) {
		/* Prior knowledge cannot fall back: a server without h2c answers the preface
		 * with garbage.  Upgrade: h2c can, and a server that upgrades multiplexes. */
		out->curl_version = CURL_HTTP_VERSION_2_0;
	} else {
		out->curl_version = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
		if (cl_httpver_h2c_reuse_broken()) {
			/* curl < 7.89 adds a second HTTP/2 layer each time it reuses a
			 * prior-knowledge connection, for the next request or a concurrent stream
			 * alike, and every stream on it then fails with "Error in the HTTP2 framing
			 * layer" (curl #10634; Debian 12 ships 7.88.1).  A connection per request
			 * is the only correct h2c such a libcurl can do. */
			out->multiplex = false;
			out->fresh_connection = true;
			out->streams_per_conn = 1;
		}
	}
}

int cl_httpver_apply(CURL *h, const struct cl_httpver *v)
{
	CURLcode c;
	if ((c = curl_easy_setopt(h, CURLOPT_HTTP_VERSION, v->curl_version)) != CURLE_OK)
		return (int)c;
	/* h1: never wait for a connection to become free (no serialisation); h2: wait for the
	 * first connection to say whether it multiplexes, rather than open one per stream. */
	if ((c = curl_easy_setopt(h, CURLOPT_PIPEWAIT, v->multiplex ? 1L : 0L)) != CURLE_OK)
		return (int)c;
	if ((c = curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, v->fresh_connection ? 1L : 0L)) !=
	    CURLE_OK)
		return (int)c;
	if ((c = curl_easy_setopt(h, CURLOPT_FORBID_REUSE, v->fresh_connection ? 1L : 0L)) !=
	    CURLE_OK)
		return (int)c;
	return 0;
}

uint32_t cl_httpver_shard_slots(const struct cl_httpver *v, uint32_t h1_slots)
{
	if (!v->multiplex || v->streams_per_conn == 0)
		return h1_slots;
	uint32_t s = v->streams_per_conn;
	return s >= 16 ? s : s * ((16 + s - 1) / s);
}

int cl_httpver_apply_multi(CURLM *m, const struct cl_httpver *v, uint32_t slots)
{
	int bad = 0;
	bad |= curl_multi_setopt(m, CURLMOPT_PIPELINING,
				 v->multiplex ? (long)CURLPIPE_MULTIPLEX : (long)CURLPIPE_NOTHING);
	if (v->multiplex)
		bad |= curl_multi_setopt(m, CURLMOPT_MAX_CONCURRENT_STREAMS,
					 (long)v->streams_per_conn);
	if (v->multiplex && v->h2_required)
		bad |= curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS,
					 (long)(slots / v->streams_per_conn));
	return bad;
}

int cl_httpver_used(CURL *h)
{
	long v = 0;
	if (curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &v) != CURLE_OK)
		return 0;
	switch (v) {
	case CURL_HTTP_VERSION_1_0:
	case CURL_HTTP_VERSION_1_1:
		return 1;
	case CURL_HTTP_VERSION_2_0:
		return 2;
#ifdef CURL_HTTP_VERSION_3
	case CURL_HTTP_VERSION_3:
		return 3;
#endif
	default:
		return 0;
	}
}

const char *cl_httpver_describe(const struct cl_httpver *v)
{
	if (!v->h2)
		return "HTTP/1.1";
	return v->h2_required ? "HTTP/2 (required)" : "HTTP/2 (preferred)";
}
