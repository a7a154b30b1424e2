/* Where a target URL makes libcurl connect, parsed by libcurl itself (curl_url()), and
 * endpoint URLs built by the same parser: a check that parses a URL differently from the
 * code that connects can be walked around (user@host, percent-encoding, odd IP spellings). */
#include "client/http/url.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

/* Classifies the host libcurl parsed: an IP literal (compared as an address) or a plain
 * name (compared as lower-case text without one trailing dot).  Anything else is refused:
 * a '%' left after decoding, spaces, or non-ASCII (curl would convert an IDN to its xn--
 * form only when it connects, so the text here is not what it connects to). */
static int classify_host(struct cl_url_where *w, struct cl_err *err)
{
	const char *h = w->host;
	size_t n = strlen(h);
	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		char inner[CL_URL_HOST_MAX];
		snprintf(inner, sizeof(inner), "%.*s", (int)(n - 2), h + 1);
		if (inet_pton(AF_INET6, inner, w->addr) != 1)
			return cl_err_set(err, CL_EINVAL, "target host '%s' is not an IPv6 address",
					  h);
		w->is_ip = true;
		w->af = AF_INET6;
		return 0;
	}
	/* curl writes every IPv4 spelling it accepts (127.1, 0x7f.1, 2130706433) as a dotted
	 * quad, and a dotted quad is what it connects to; "127.0.0.1." is a name to it. */
	if (inet_pton(AF_INET, h, w->addr) == 1) {
		w->is_ip = true;
		w->af = AF_INET;
		return 0;
	}
	/* A name the resolver reads as an IPv4 number (inet_aton: "60.700002", "0x7f.1") that
	 * curl did not normalise, because percent-encoding hid it ("6%30.700002"): the text
	 * compares as a name, but getaddrinfo connects to the number, and a URL rebuilt from it
	 * reads as that number.  fuzz_url found it; it is refused, not guessed at. */
	struct in_addr num;
	if (inet_aton(h, &num))
		return cl_err_set(err, CL_EINVAL,
				  "target host '%.80s' is an IPv4 address in disguise (write it as "
				  "a plain dotted address)",
				  h);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!name_char(c))
			return cl_err_set(
			    err, CL_EINVAL,
			    "target host '%.80s' is not a plain host name (letters, "
			    "digits, '-', '_', '.'; write an international name in its "
			    "xn-- form)",
			    h);
		w->name[k++] = c;
	}
	if (k && w->name[k - 1] == '.')
		k--; /* "host." and "host" are the same name to DNS */
	w->name[k] = '\0';
	if (!k || w->name[0] == '.')
		return cl_err_set(err, CL_EINVAL, "target host '%.80s' is not a host name", h);
	return 0;
}

int cl_url_where(const char *url, struct cl_url_where *w, struct cl_err *err)
{
	memset(w, 0, sizeof(*w));
	if (!url || !*url)
		return cl_err_set(err, CL_EINVAL, "no target URL");
	CURLU *u = curl_url();
	if (!u)
		return cl_err_set(err, CL_ENOMEM, "out of memory parsing the target URL");
	char *scheme = NULL, *host = NULL, *port = NULL, *zone = NULL, *user = NULL,
	     *password = NULL;
	int rc = 0;
	/* No CURLU_GUESS_SCHEME and no CURLU_NON_SUPPORT_SCHEME: exactly what CURLOPT_URL
	 * accepts. */
	CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
	if (uc != CURLUE_OK) {
		rc = cl_err_set(err, uc == CURLUE_OUT_OF_MEMORY ? CL_ENOMEM : CL_EINVAL,
				"cannot use the target URL: %s", curl_url_strerror(uc));
		goto out;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		rc = cl_err_set(err, CL_EINVAL, "target URL scheme '%s' is not http or https",
				scheme ? scheme : "");
		goto out;
	}
	w->https = strcmp(scheme, "https") == 0;
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		rc = cl_err_set(err, CL_EINVAL, "the target URL has no host");
		goto out;
	}
	if (strlen(host) >= sizeof(w->host)) {
		rc = cl_err_set(err, CL_EINVAL, "target host is longer than %d bytes",
				CL_URL_HOST_MAX - 1);
		goto out;
	}
	snprintf(w->host, sizeof(w->host), "%s", host);
	if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		rc = cl_err_set(err, CL_EINVAL, "the target URL has no port");
		goto out;
	}
	long p = strtol(port, NULL, 10);
	if (p <= 0 || p > 65535) {
		rc = cl_err_set(err, CL_EINVAL, "target port %s is not 1-65535", port);
		goto out;
	}
	w->port = (uint16_t)p;
	char *written = NULL;
	w->port_given = curl_url_get(u, CURLUPART_PORT, &written, 0) == CURLUE_OK;
	curl_free(written);
	if (curl_url_get(u, CURLUPART_ZONEID, &zone, 0) == CURLUE_OK && zone && *zone) {
		if (strlen(zone) >= sizeof(w->zone)) {
			rc = cl_err_set(err, CL_EINVAL, "target IPv6 zone id is too long");
			goto out;
		}
		snprintf(w->zone, sizeof(w->zone), "%s", zone);
		/* An interface name or number; libcurl takes any bytes here ("%\\2"), which no
		 * allow-list entry could name. */
		for (const char *z = zone; *z; z++) {
			if (!name_char((char)(*z >= 'A' && *z <= 'Z' ? *z - 'A' + 'a' : *z))) {
				rc = cl_err_set(err, CL_EINVAL,
						"target IPv6 zone id is not an interface name");
				goto out;
			}
		}
	}
	w->has_userinfo = curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
			  curl_url_get(u, CURLUPART_PASSWORD, &password, 0) == CURLUE_OK;
	rc = classify_host(w, err);
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(zone);
	curl_free(user);
	if (password)
		explicit_bzero(password, strlen(password));
	curl_free(password);
	curl_url_cleanup(u);
	return rc;
}

static int endpoint(const char *base, const char *suffix, bool root, char **out,
		    struct cl_err *err);

int cl_url_endpoint(const char *base, const char *suffix, char **out, struct cl_err *err)
{
	return endpoint(base, suffix, false, out, err);
}

int cl_url_root_endpoint(const char *base, const char *suffix, char **out, struct cl_err *err)
{
	return endpoint(base, suffix, true, out, err);
}

static int endpoint(const char *base, const char *suffix, bool root, char **out, struct cl_err *err)
{
	*out = NULL;
	CURLU *u = curl_url();
	if (!u)
		return cl_err_set(err, CL_ENOMEM, "out of memory building a target URL");
	char *path = NULL, *full = NULL, *joined = NULL;
	int rc = 0;
	CURLUcode uc = curl_url_set(u, CURLUPART_URL, base ? base : "", 0);
	if (uc == CURLUE_OK)
		uc = curl_url_get(u, CURLUPART_PATH, &path, 0);
	if (uc != CURLUE_OK) {
		rc = cl_err_set(err, uc == CURLUE_OUT_OF_MEMORY ? CL_ENOMEM : CL_EINVAL,
				"cannot use the target URL: %s", curl_url_strerror(uc));
		goto out;
	}
	size_t pl = strlen(path);
	while (pl && path[pl - 1] == '/')
		pl--;
	if (root && pl >= 3 && memcmp(path + pl - 3, "/v1", 3) == 0)
		pl -= 3;
	size_t n = pl + strlen(suffix) + 1;
	if (!(joined = malloc(n))) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory building a target URL");
		goto out;
	}
	snprintf(joined, n, "%.*s%s", (int)pl, path, suffix);
	/* The path as it stands (already encoded as the base had it); no fragment. */
	if ((uc = curl_url_set(u, CURLUPART_PATH, joined, 0)) != CURLUE_OK ||
	    (uc = curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0)) != CURLUE_OK ||
	    (uc = curl_url_get(u, CURLUPART_URL, &full, 0)) != CURLUE_OK) {
		rc = cl_err_set(err, uc == CURLUE_OUT_OF_MEMORY ? CL_ENOMEM : CL_EINVAL,
				"cannot build the target URL: %s", curl_url_strerror(uc));
		goto out;
	}
	if (!(*out = strdup(full)))
		rc = cl_err_set(err, CL_ENOMEM, "out of memory building a target URL");
out:
	if (full)
		explicit_bzero(full, strlen(full)); /* it may carry a password */
	curl_free(full);
	curl_free(path);
	free(joined);
	curl_url_cleanup(u);
	return rc;
}

const char *cl_url_where_str(const struct cl_url_where *w, char *out, size_t n)
{
	/* "[fe80::1]" -> "[fe80::1%25eth0]": the zone after an encoded '%' (RFC 6874), as
	 * libcurl reads it back; a bare '%' is ambiguous for a zone that starts with "25"
	 * (fuzz_url found "[::1%2525e-0]": zone "25e-0", written bare, read back as "e-0"). */
	if (w->zone[0])
		snprintf(out, n, "%.*s%%25%s]:%u", (int)strlen(w->host) - 1, w->host, w->zone,
			 w->port);
	else
		snprintf(out, n, "%s:%u", w->host, w->port);
	return out;
}
