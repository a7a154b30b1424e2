/* One way to talk to a target: URL and allow-list, headers and key, TLS, timeouts, HTTP
 * version and protocols, decided once from the plan and applied to any number of libcurl
 * handles by the engine and the readiness probe alike. */
#include "client/http/handle.h"

#include "chatload/audio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const endpoint_suffix[CL_HTTP__ENDPOINTS] = { "", "/models", "/chat/completions",
								 "/tokenize" };

/* RFC 9110 token characters: what a header name may be made of. */
static bool tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Length of the name of a "Name: value" line, 0 when it is not one.  The value may hold
 * any byte but controls other than tab: a CR or LF would start another header or the
 * body. */
static size_t header_name_len(const char *h)
{
	size_t n = 0;
	while (tchar((unsigned char)h[n]))
		n++;
	if (n == 0 || h[n] != ':')
		return 0;
	for (const char *p = h + n + 1; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return 0;
	}
	return n;
}

/* Whether line's name is the same as one of the extra lines' (so the extra one wins). */
static bool overridden(const struct cl_http_target *t, const char *line)
{
	size_t n = strcspn(line, ":");
	for (size_t i = 0; i < t->n_extra; i++) {
		if (strncasecmp(t->extra[i], line, n) == 0 && t->extra[i][n] == ':')
			return true;
	}
	return false;
}

static int read_key(struct cl_http_target *t, const char *env, struct cl_err *err)
{
	for (const char *p = env; *p; p++) {
		char c = *p;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return cl_err_set(err, CL_EINVAL,
					  "target.api_key_env '%.60s' is not a variable name", env);
	}
	const char *key = getenv(env);
	if (!key || !*key)
		return cl_err_set(err, CL_EREFUSED,
				  "environment variable '%s' (target.api_key_env, the API key) is "
				  "not set on this host: set it, or drop api_key_env if the server "
				  "needs no key",
				  env);
	for (const char *p = key; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c < 0x21 || c == 0x7f)
			return cl_err_set(
			    err, CL_EINVAL,
			    "the API key in '%s' contains a space, line break or other "
			    "control character",
			    env);
	}
	size_t n = strlen(key) + sizeof("Authorization: Bearer ");
	if (!(t->auth = malloc(n)))
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	snprintf(t->auth, n, "Authorization: Bearer %s", key);
	if (t->api != CL_API_MESSAGES)
		return 0;
	/* Anthropic's own API reads the key from x-api-key, gateways (LiteLLM, llama.cpp's
	 * server) from either: both go, so every one of them finds it. */
	n = strlen(key) + sizeof("x-api-key: ");
	if (!(t->xkey = malloc(n)))
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	snprintf(t->xkey, n, "x-api-key: %s", key);
	return 0;
}

/* Fills lines[ep] for every endpoint: fixed lines (unless an extra one replaces them), the
 * key, then the extra lines. */
static int build_lines(struct cl_http_target *t, struct cl_err *err)
{
	static const char *const every[] = { "User-Agent: chatload/" CHATLOAD_VERSION };
	static const char *const chat[] = {
		"Content-Type: application/json", "Accept: text/event-stream",
		"Expect:", /* curl would send Expect: 100-continue for large bodies and wait */
	};
	static const char *const embeddings[] = {
		"Content-Type: application/json",
		"Accept: application/json",
		"Expect:",
	};
	static const char *const transcription[] = {
		"Content-Type: " CL_AUDIO_FORM_TYPE,
		"Accept: application/json, text/event-stream",
		"Expect:",
	};
	for (int ep = CL_HTTP_MODELS; ep < CL_HTTP__ENDPOINTS; ep++) {
		size_t cap = 4 + 3 + t->n_extra;
		const char **l = calloc(cap, sizeof(*l));
		if (!l)
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		t->lines[ep] = l;
		size_t n = 0;
		/* The generation endpoint's lines: an embeddings, rerank or score answer is one
		 * JSON document, a transcription's either, and its request a form
		 * (chatload/audio.h). */
		const char *const *gen = t->api == CL_API_TRANSCRIPTION ? transcription
					 : cl_api_streams(t->api)       ? chat
									: embeddings;
		for (size_t i = 0; ep == CL_HTTP_CHAT && i < sizeof(chat) / sizeof(chat[0]); i++)
			if (!overridden(t, gen[i]))
				l[n++] = gen[i];
		if (ep == CL_HTTP_TOKENIZE && !overridden(t, chat[0]))
			l[n++] = chat[0]; /* Content-Type: application/json */
		for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++)
			if (!overridden(t, every[i]))
				l[n++] = every[i];
		if (t->auth && !overridden(t, t->auth))
			l[n++] = t->auth;
		if (t->xkey && !overridden(t, t->xkey))
			l[n++] = t->xkey;
		/* Anthropic's API refuses a request without the version it is written to. */
		if (ep == CL_HTTP_CHAT && t->api == CL_API_MESSAGES &&
		    !overridden(t, CL_HTTP_ANTHROPIC_VERSION))
			l[n++] = CL_HTTP_ANTHROPIC_VERSION;
		for (size_t i = 0; i < t->n_extra; i++)
			l[n++] = t->extra[i];
		t->n_lines[ep] = n;
	}
	return 0;
}

static int copy_extra(struct cl_http_target *t, const struct cl_target_plan *p, struct cl_err *err)
{
	/* The fixed lines: 3 of the endpoint, the agent's, the key; messages' version and
	 * x-api-key. */
	size_t fixed = t->api == CL_API_MESSAGES ? 7 : 5;
	if (p->n_headers + fixed > CL_HTTP_MAX_HEADERS)
		return cl_err_set(err, CL_EINVAL, "too many target headers (%zu; at most %zu)",
				  p->n_headers, CL_HTTP_MAX_HEADERS - fixed);
	if (!p->n_headers)
		return 0;
	if (!(t->extra = calloc(p->n_headers, sizeof(*t->extra))))
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	for (size_t i = 0; i < p->n_headers; i++) {
		const char *h = p->headers[i] ? p->headers[i] : "";
		if (!header_name_len(h))
			return cl_err_set(err, CL_EINVAL,
					  "bad target header '%.80s': want 'Name: value' without "
					  "line breaks or control characters",
					  h);
		if (!(t->extra[i] = strdup(h)))
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		t->n_extra++;
	}
	return 0;
}

static bool same_where(const struct cl_url_where *a, const struct cl_url_where *b)
{
	return a->https == b->https && a->port == b->port && strcmp(a->host, b->host) == 0 &&
	       strcmp(a->zone, b->zone) == 0;
}

/* Builds each endpoint URL with libcurl and checks it still goes where the base goes. */
static int build_urls(struct cl_http_target *t, const char *base, struct cl_err *err)
{
	for (int ep = 0; ep < CL_HTTP__ENDPOINTS; ep++) {
		/* The generation endpoint is the API's (chat/completions, completions, ...). */
		const char *suffix = ep == CL_HTTP_CHAT ? cl_api_path(t->api) : endpoint_suffix[ep];
		int rc = ep == CL_HTTP_TOKENIZE
			     ? cl_url_root_endpoint(base, suffix, &t->url[ep], err)
			     : cl_url_endpoint(base, suffix, &t->url[ep], err);
		if (rc != 0)
			return rc;
		struct cl_url_where w;
		if ((rc = cl_url_where(t->url[ep], &w, err)) != 0)
			return rc;
		if (!same_where(&w, &t->where))
			return cl_err_set(err, CL_EINVAL,
					  "the target URL's %s endpoint would not go to %s", suffix,
					  t->where.host);
	}
	return 0;
}

/* Tries every option on a scratch handle: what this libcurl refuses fails now. */
static int try_options(const struct cl_http_target *t, struct cl_err *err)
{
	CURL *h = curl_easy_init();
	if (!h)
		return cl_err_set(err, CL_ENOMEM, "cannot create a curl handle");
	int rc = 0;
	struct curl_slist nodes[CL_HTTP_MAX_HEADERS];
	for (int ep = 0; ep < CL_HTTP__ENDPOINTS && rc == 0; ep++) {
		struct curl_slist *l = cl_http_target_link(t, ep, nodes, CL_HTTP_MAX_HEADERS, NULL);
		rc = cl_http_target_apply(t, h, ep, 1000000, l, err);
		curl_easy_reset(h);
	}
	curl_easy_cleanup(h);
	return rc;
}

int cl_http_target_init(struct cl_http_target *t, const struct cl_target_plan *p,
			const struct cl_allow_list *allow, struct cl_err *err)
{
	memset(t, 0, sizeof(*t));
	int rc;
	if (!p || !p->base_url || !*p->base_url)
		return cl_err_set(err, CL_EINVAL, "no target URL");
	if ((rc = cl_allow_check_url(allow, p->base_url, err)) != 0)
		return rc;
	if ((rc = cl_url_where(p->base_url, &t->where, err)) != 0)
		return rc;
	if (t->where.has_userinfo)
		return cl_err_set(err, CL_EINVAL,
				  "the target URL carries a user name or password (user:pass@): "
				  "URLs are logged and recorded, so send credentials with "
				  "target.api_key_env or target.headers");
	t->api = cl_api_name(p->api) ? p->api : CL_API_CHAT;
	t->tls_verify = p->tls_verify;
	t->connect_timeout_us =
	    p->connect_timeout_us > 0 ? p->connect_timeout_us : CL_HTTP_DEFAULT_CONNECT_TIMEOUT_US;
	if (p->ca_file && !(t->ca_file = strdup(p->ca_file)))
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	if ((rc = build_urls(t, p->base_url, err)) != 0 || (rc = copy_extra(t, p, err)) != 0)
		return rc;
	/* The HTTP version is decided in client/httpver and nowhere else; it reads the scheme
	 * from the URL as libcurl normalised it (HTTPS:// is https://). */
	struct cl_target_plan norm = *p;
	norm.base_url = t->url[CL_HTTP_BASE];
	cl_httpver_choose(&norm, &t->ver);
	if (p->api_key_env && *p->api_key_env && (rc = read_key(t, p->api_key_env, err)) != 0)
		return rc;
	if ((rc = build_lines(t, err)) != 0)
		return rc;
	return try_options(t, err);
}

void cl_http_target_free(struct cl_http_target *t)
{
	if (!t)
		return;
	for (int ep = 0; ep < CL_HTTP__ENDPOINTS; ep++) {
		free(t->url[ep]);
		free(t->lines[ep]);
	}
	if (t->auth) {
		explicit_bzero(t->auth, strlen(t->auth));
		free(t->auth);
	}
	if (t->xkey) {
		explicit_bzero(t->xkey, strlen(t->xkey));
		free(t->xkey);
	}
	for (size_t i = 0; i < t->n_extra; i++)
		free(t->extra[i]);
	free(t->extra);
	free(t->ca_file);
	memset(t, 0, sizeof(*t));
}

size_t cl_http_target_n_lines(const struct cl_http_target *t, enum cl_http_endpoint ep)
{
	return ep < CL_HTTP__ENDPOINTS ? t->n_lines[ep] : 0;
}

struct curl_slist *cl_http_target_link(const struct cl_http_target *t, enum cl_http_endpoint ep,
				       struct curl_slist *nodes, size_t n, char *lead)
{
	size_t need = cl_http_target_n_lines(t, ep) + (lead ? 1 : 0);
	if (need == 0 || n < need)
		return NULL;
	size_t k = 0;
	if (lead)
		nodes[k++].data = lead;
	for (size_t i = 0; i < t->n_lines[ep]; i++)
		nodes[k++].data = (char *)t->lines[ep][i];
	for (size_t i = 0; i < k; i++)
		nodes[i].next = i + 1 < k ? &nodes[i + 1] : NULL;
	return nodes;
}

static long to_ms(int64_t us)
{
	return us <= 0 ? 0 : us < 1000 ? 1 : (long)((us + 999) / 1000);
}

/* Every option of a request to url over ver: the one list both appliers share. */
static int apply_url(const struct cl_http_target *t, CURL *h, const char *url,
		     const struct cl_httpver *ver, int64_t timeout_us, struct curl_slist *headers,
		     struct cl_err *err)
{
	int64_t connect_us = t->connect_timeout_us;
	if (timeout_us > 0 && connect_us > timeout_us)
		connect_us = timeout_us;
	CURLcode c;
	const char *what;
#define SET(opt, val)                                                                              \
	do {                                                                                       \
		what = #opt;                                                                       \
		if ((c = curl_easy_setopt(h, opt, val)) != CURLE_OK)                               \
			goto fail;                                                                 \
	} while (0)
	SET(CURLOPT_URL, url);
	/* Nothing but HTTP(S), and never somewhere else by a redirect: the allow-list decided
	 * on this URL's host and port, and a redirect would be a new destination. */
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_NOSIGNAL, 1L);
	what = "CURLOPT_HTTP_VERSION";
	if ((c = (CURLcode)cl_httpver_apply(h, ver)) != CURLE_OK)
		goto fail;
	SET(CURLOPT_SSL_VERIFYPEER, t->tls_verify ? 1L : 0L);
	SET(CURLOPT_SSL_VERIFYHOST, t->tls_verify ? 2L : 0L);
	if (t->ca_file)
		SET(CURLOPT_CAINFO, t->ca_file);
	SET(CURLOPT_CONNECTTIMEOUT_MS, to_ms(connect_us));
	SET(CURLOPT_TIMEOUT_MS, to_ms(timeout_us));
	SET(CURLOPT_HTTPHEADER, headers);
#undef SET
	return 0;
fail:
	if (c == CURLE_UNSUPPORTED_PROTOCOL || c == CURLE_NOT_BUILT_IN || c == CURLE_UNKNOWN_OPTION)
		return cl_err_set(err, CL_EINVAL, "this libcurl cannot do %s%s: %s", what,
				  strcmp(what, "CURLOPT_HTTP_VERSION") == 0 ? " (HTTP/2)" : "",
				  curl_easy_strerror(c));
	return cl_err_set(err, c == CURLE_OUT_OF_MEMORY ? CL_ENOMEM : CL_EINVAL,
			  "cannot set %s: %s", what, curl_easy_strerror(c));
}

int cl_http_target_apply(const struct cl_http_target *t, CURL *h, enum cl_http_endpoint ep,
			 int64_t timeout_us, struct curl_slist *headers, struct cl_err *err)
{
	if (ep >= CL_HTTP__ENDPOINTS || !t->url[ep])
		return cl_err_set(err, CL_EINVAL, "target not prepared");
	return apply_url(t, h, t->url[ep], &t->ver, timeout_us, headers, err);
}

int cl_http_target_apply_page(const struct cl_http_target *t, CURL *h, const char *url,
			      int64_t timeout_us, struct curl_slist *headers, struct cl_err *err)
{
	if (!t->url[CL_HTTP_BASE])
		return cl_err_set(err, CL_EINVAL, "target not prepared");
	struct cl_url_where w;
	int rc = cl_url_where(url, &w, err);
	if (rc != 0)
		return rc;
	if (same_where(&w, &t->where))
		return apply_url(t, h, url, &t->ver, timeout_us, headers, err);
	/* Another server (a /metrics on its own port, an exporter): the target's promise of
	 * HTTP/2 is not its, so it gets HTTP/2 only in a form that falls back (ALPN over
	 * TLS, Upgrade over cleartext), decided where every version is. */
	struct cl_target_plan other = { .base_url = (char *)url,
					.http2 = t->ver.h2,
					.http2_fallback = true,
					.http2_streams = t->ver.streams_per_conn };
	struct cl_httpver ver;
	cl_httpver_choose(&other, &ver);
	return apply_url(t, h, url, &ver, timeout_us, headers, err);
}

int cl_http_page_headers(const char *const *lines, size_t n, struct curl_slist **out,
			 struct cl_err *err)
{
	static const char ua[] = "User-Agent: chatload/" CHATLOAD_VERSION;
	struct curl_slist *l = NULL, *next;
	bool own_ua = false;
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		size_t name = header_name_len(lines[i] ? lines[i] : "");
		if (!name) {
			curl_slist_free_all(l);
			return cl_err_set(err, CL_EINVAL,
					  "bad header '%.80s': want 'Name: value' without line "
					  "breaks or control characters",
					  lines[i] ? lines[i] : "");
		}
		own_ua = own_ua || (name == sizeof("User-Agent") - 1 &&
				    strncasecmp(lines[i], "User-Agent", name) == 0);
	}
	/* Who sends it first, as on every other request; a line of the caller's own of the
	 * same name replaces it. */
	if (!own_ua && !(l = curl_slist_append(NULL, ua)))
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!(next = curl_slist_append(l, lines[i]))) {
			curl_slist_free_all(l);
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		}
		l = next;
	}
	*out = l;
	return 0;
}
