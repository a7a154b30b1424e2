/* Where a target URL makes libcurl connect, as libcurl itself parses it (curl_url()), and the
 * URL of an endpoint below a base URL, built by the same parser. */
#ifndef CHATLOAD_HTTP_URL_H
#define CHATLOAD_HTTP_URL_H

#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_URL_HOST_MAX 256
#define CL_URL_ZONE_MAX 64

/* The host and port a URL connects to. */
struct cl_url_where {
	bool https;
	bool has_userinfo; /* the URL carries "user[:password]@" (never the host) */
	bool is_ip;        /* the host is an IP literal: IPv4 in any spelling curl takes, or [v6] */
	int af;            /* AF_INET or AF_INET6 when is_ip */
	unsigned char addr[16];
	char host[CL_URL_HOST_MAX]; /* for messages: as libcurl holds it ([v6] in brackets) */
	char name[CL_URL_HOST_MAX]; /* a name: lower case, one trailing dot dropped; "" for IPs */
	char zone[CL_URL_ZONE_MAX]; /* an IPv6 zone id ("eth0"), "" when none */
	uint16_t port;              /* as written, else the scheme's default (80, 443) */
	bool port_given;            /* the URL wrote a port */
};

/*
 * Parses url with libcurl's own URL parser and fills w with where libcurl would connect:
 * the host after any userinfo, percent-decoding and curl's IPv4/IPv6 normalisation
 * (127.1 and 2130706433 are 127.0.0.1; [0:0::1] is [::1]), the port or the scheme's default.
 * CL_EINVAL with err saying why when libcurl cannot parse it, the scheme is not http or
 * https, or the host is not a plain name (letters, digits, '-', '_', '.'; an
 * internationalised name must be written in its xn-- form) nor an IP literal.  Never prints
 * the URL's userinfo.  An IPv6 zone id must be an interface name or number (letters, digits,
 * '-', '_', '.').  Does not block (no name is resolved).
 */
int cl_url_where(const char *url, struct cl_url_where *w, struct cl_err *err);

/*
 * Writes into *out (malloc'd; the caller frees) the URL of endpoint suffix ("/models")
 * below base: base's path with its trailing '/' dropped, then suffix; base's query is kept
 * after the new path (?api-version=... for gateways that want one), its fragment dropped.
 * Built by libcurl's parser, so the host of *out is the host of base.  CL_EINVAL (err
 * filled) when base does not parse, CL_ENOMEM.
 */
int cl_url_endpoint(const char *base, const char *suffix, char **out, struct cl_err *err);

/* cl_url_endpoint for an endpoint beside the API rather than below it: a path ending in
 * "/v1" loses it first ("http://h:8000/v1" + "/tokenize" = "http://h:8000/tokenize"). */
int cl_url_root_endpoint(const char *base, const char *suffix, char **out, struct cl_err *err);

/* Formats w as "host:port" ("[v6%25zone]:port", the zone after an encoded '%') into out
 * (size n); returns out.  An allow-list entry made of it allows w. */
const char *cl_url_where_str(const struct cl_url_where *w, char *out, size_t n);

#endif
