/* One way to talk to a target: a target plan turned, once, into checked endpoint URLs, header
 * lines and libcurl options that the load engine and the readiness probe both apply. */
#ifndef CHATLOAD_HTTP_HANDLE_H
#define CHATLOAD_HTTP_HANDLE_H

#include "client/http/allow.h"
#include "client/http/url.h"
#include "client/httpver/httpver.h"

#include "chatload/err.h"
#include "chatload/plan.h"

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#define CL_HTTP_DEFAULT_CONNECT_TIMEOUT_US 10000000LL /* when the plan says 0 (scenario: 10s) */
/* Sent with every request of workload.api: messages (Anthropic's API version). */
#define CL_HTTP_ANTHROPIC_VERSION "anthropic-version: 2023-06-01"
#define CL_HTTP_MAX_HEADERS       72 /* lines of one request, fixed ones too */

/* What a request asks for; each has its URL and header lines. */
enum cl_http_endpoint {
	CL_HTTP_BASE = 0,     /* the base URL itself: the probe's connect-only check, no headers */
	CL_HTTP_MODELS = 1,   /* GET {base}/models */
	CL_HTTP_CHAT = 2,     /* POST the generation endpoint: {base}/chat/completions, or the
			       * plan's other API (cl_api_path: /completions, /responses,
			       * /embeddings) */
	CL_HTTP_TOKENIZE = 3, /* POST {root}/tokenize: vLLM, SGLang and llama.cpp serve it beside
			       * /v1, so a base ending in /v1 loses it */
	CL_HTTP__ENDPOINTS
};

/*
 * A target ready to be applied to libcurl handles.  Built once by cl_http_target_init and
 * then only read, so any number of threads may apply it at once.  Owns its strings; the key
 * (inside the Authorization line) is wiped when it is freed.
 */
struct cl_http_target {
	struct cl_url_where where;              /* where every request goes (checked) */
	char *url[CL_HTTP__ENDPOINTS];          /* each endpoint's URL, as libcurl will get it */
	const char **lines[CL_HTTP__ENDPOINTS]; /* header lines per endpoint, n_lines[] each */
	size_t n_lines[CL_HTTP__ENDPOINTS];
	char *auth;   /* "Authorization: Bearer <key>" or NULL; wiped at free */
	char *xkey;   /* api messages: "x-api-key: <key>" beside it, or NULL; wiped too */
	char **extra; /* copies of the plan's extra header lines */
	size_t n_extra;
	struct cl_httpver ver; /* HTTP version and connection use (cl_httpver_choose) */
	bool tls_verify;
	char *ca_file;
	int64_t connect_timeout_us;
	enum cl_api api; /* the plan's: which URL and Accept line CL_HTTP_CHAT gets */
};

/*
 * Checks plan and builds t from it; plan may be freed afterwards.
 * - URL: parsed by libcurl (cl_url_where); http:// or https:// only; refused when allow is
 *   non-empty and does not allow its host and port (CL_EREFUSED), and when it carries
 *   user:password@ (CL_EINVAL: the URL is logged and recorded; use headers or api_key_env).
 *   Each endpoint URL is built by libcurl from it and checked again to go to the same host
 *   and port.
 * - Key: when plan->api_key_env is set, its value is read from the environment now and sent
 *   as "Authorization: Bearer <key>" (with api messages also as "x-api-key: <key>", the
 *   header Anthropic's API reads; gateways read either).  A variable that is unset or empty is
 * refused (CL_EREFUSED, naming the variable): a scenario that names a key wants one, and requests
 *   without it would only fail with 401 later, or worse succeed against the wrong tenant.
 * - Headers: every line "Name: value" with a token name; CR, LF or another control
 *   character anywhere (the key too) is refused (CL_EINVAL).  Fixed lines: User-Agent
 *   chatload/<version> on every request, and Content-Type, Accept: text/event-stream and an
 *   empty Expect on chat, and CL_HTTP_ANTHROPIC_VERSION there with api messages; an extra
 *   header of the same name replaces a fixed line.
 * - HTTP version and connection use: cl_httpver_choose (client/httpver) decides, once, in
 *   ver; the engine's shards and the probe's h2 checks read it from there.
 * - Every libcurl option is tried on a scratch handle, so an option this libcurl refuses
 *   (HTTP/2 not built in) fails here (CL_EINVAL), not on the first request.
 * err says what failed, never the key.  cl_http_target_free is safe after any failure.  The
 * program must have called curl_global_init.
 */
CL_MUST_CHECK int cl_http_target_init(struct cl_http_target *t, const struct cl_target_plan *plan,
				      const struct cl_allow_list *allow, struct cl_err *err);

/* Frees what t owns, wiping the key first; t is zeroed.  Safe on a zeroed or part-built t. */
void cl_http_target_free(struct cl_http_target *t);

/* Number of header lines endpoint ep sends (for sizing a node array). */
size_t cl_http_target_n_lines(const struct cl_http_target *t, enum cl_http_endpoint ep);

/*
 * Links the caller's node array into a header list for ep without allocating: nodes[0]
 * carries lead when it is not NULL (the engine's X-Request-Id, rewritten in place per
 * request), then ep's lines.  n must be at least cl_http_target_n_lines(ep) + (lead != NULL).
 * The nodes point at t's strings: t must outlive every request using them.  Returns the
 * head, NULL when there is nothing to send (or n is too small).
 */
struct curl_slist *cl_http_target_link(const struct cl_http_target *t, enum cl_http_endpoint ep,
				       struct curl_slist *nodes, size_t n, char *lead);

/*
 * Applies to easy everything about where and how requests of ep go: URL, allowed protocols
 * (http, https) and no redirects, HTTP version with PIPEWAIT, FRESH_CONNECT and FORBID_REUSE
 * (cl_httpver_apply of ver), TLS verification and CA file, connect
 * timeout (the plan's, at most timeout_us) and overall timeout (timeout_us; 0 none),
 * NOSIGNAL, and headers (the list from cl_http_target_link, may be NULL).  Each setopt is
 * checked: CL_EINVAL with err naming the option libcurl refused.  Callers add their own
 * callbacks and body afterwards; they must not set the URL, proxies-by-name, CONNECT_TO or
 * RESOLVE themselves.
 */
int cl_http_target_apply(const struct cl_http_target *t, CURL *easy, enum cl_http_endpoint ep,
			 int64_t timeout_us, struct curl_slist *headers, struct cl_err *err);

/*
 * Applies to easy what a request for a page outside the API takes from t: the server's own
 * /metrics and the exporters beside it (coordinator/server/scrape.c), so that every request
 * chatload makes is configured here.  url need not be one of t's endpoints; libcurl parses it.
 * On t's own host and port it gets t's HTTP version and connection use (target.http2 holds
 * for every request to the target); another address gets HTTP/2 only in the forms that fall
 * back (ALPN over TLS, Upgrade: h2c in cleartext) when t asks for HTTP/2, else HTTP/1.1: the
 * target's promise is not another server's.  The rest as cl_http_target_apply: http and https
 * only, no redirects, TLS verification and CA file, connect and overall timeouts, NOSIGNAL,
 * headers (from cl_http_page_headers; may be NULL).  CL_EINVAL with err when url does not parse
 * or libcurl refuses an option.  No allow-list is consulted: the caller decided the URL.
 */
int cl_http_target_apply_page(const struct cl_http_target *t, CURL *easy, const char *url,
			      int64_t timeout_us, struct curl_slist *headers, struct cl_err *err);

/*
 * The header lines of such a page: "User-Agent: chatload/<version>", as every request says,
 * then lines[0..n) (the caller's own, e.g. target.server_metrics.headers), one of which named
 * User-Agent replaces the fixed one.  Each line is checked as target.headers are (CL_EINVAL,
 * err quoting it).  *out is a new list the caller frees with curl_slist_free_all; NULL on
 * failure (CL_ENOMEM too).
 */
int cl_http_page_headers(const char *const *lines, size_t n, struct curl_slist **out,
			 struct cl_err *err);

#endif
