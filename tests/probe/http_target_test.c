/* Tests of client/http: where a URL connects as libcurl parses it (checked against where
 * libcurl really connects), the --allow-target decision on hostile URLs, and the target
 * handle's headers, key policy, endpoint URLs and options. */
#include "client/http/allow.h"
#include "client/http/handle.h"
#include "client/http/url.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define assert_contains(hay, needle)                                                               \
	do {                                                                                       \
		const char *h_ = (hay), *n_ = (needle);                                            \
		if (!h_ || !strstr(h_, n_))                                                        \
			fail_msg("expected \"%s\" in \"%s\"", n_, h_ ? h_ : "(null)");             \
	} while (0)

static const char *const entries[] = { "127.0.0.2", "Allowed.Example:8000", "[::1]:9000",
				       "[fe80::1%eth0]:80" };

static void make_list(struct cl_allow_list *l)
{
	memset(l, 0, sizeof(*l));
	struct cl_err err = { 0 };
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		if (cl_allow_list_add(l, entries[i], &err) != 0)
			fail_msg("entry '%s': %s", entries[i], err.msg);
	}
}

/* URLs an attacker holding the coordinator's token might send to get past the list. */
static const char *const hostile[] = {
	"http://127.0.0.2:x@127.0.0.3:8000/v1",             /* userinfo names the allowed host */
	"http://127.0.0.2@127.0.0.3/v1",                    /* ... without a password */
	"http://127.0.0.2:@127.0.0.3/v1",                   /* ... with an empty one */
	"http://allowed.example:8000@evil.example:8000/",   /* user:password looks like host:port */
	"http://allowed.example%3A8000@evil.example:8000/", /* ... percent-encoded */
	"http://127.0.0.2%2f@127.0.0.3/",                   /* an encoded '/' in the user */
	"http://allowed.example:8000%09@evil/",             /* an encoded tab in the password */
	"http://evil.example#@allowed.example:8000/",       /* the fragment hides the '@' */
	"http://evil.example?@allowed.example:8000/",       /* the query hides the '@' */
	"http://allowed.example:8001/",                     /* wrong port */
	"http://allowed.example/",                          /* default port 80, not 8000 */
	"https://allowed.example/",                         /* default port 443 */
	"http://allowed.example.evil.example:8000/",        /* a suffix */
	"http://allowed.example%2eevil.example:8000/",      /* ... percent-encoded dot */
	"http://evil-allowed.example:8000/",                /* a prefix */
	"http://127.0.0.3/",                                /* the neighbour */
	"http://0x7f.0.0.3/",                               /* ... spelt in hex */
	"http://2130706435/",                               /* ... as one number */
	"http://%31%32%37.0.0.3/",                          /* ... percent-encoded */
	"http://127.0.0.2./",          /* a name that looks like the address (DNS decides it) */
	"http://127.0.0.2.nip.io/",    /* a name that resolves to it elsewhere */
	"http://[::ffff:127.0.0.2]/",  /* the IPv4-mapped IPv6 address */
	"http://[::1]:9001/",          /* IPv6, wrong port */
	"http://[::1]/",               /* IPv6, default port */
	"http://[::1%25lo]:9000/",     /* an allowed address on a zone the entry does not name */
	"http://[fe80::1]:80/",        /* link-local without the entry's zone */
	"http://[fe80::1%25eth1]:80/", /* ... on another interface */
	"http://[::1]@127.0.0.3/",     /* brackets in the userinfo */
	"ftp://127.0.0.2/",            /* not HTTP */
	"file:///etc/passwd",          /* not a network URL */
	"gopher://127.0.0.2:70/",      /* not HTTP */
	"http://allowed.example%00.evil:8000/", /* a NUL */
	"http://allowed.example:8000:80/",      /* two ports */
	"http://127.0.0.2%40127.0.0.3/",        /* an encoded '@' in the host */
	"http://\xd0\xb0llowed.example:8000/",  /* Cyrillic a: an IDN spoof */
	"http://[fe80::1%\\2]:80/",             /* a zone no interface has (fuzz_url found it) */
	"http://12%37.2:8000/", /* a number hidden by percent-encoding (fuzz_url found it) */
	"HTTP://127.0.0.3/",    /* upper-case scheme, other host */
	"//127.0.0.2/",         /* no scheme */
	"127.0.0.2:80",         /* no scheme, host:port */
	"",                     /* nothing */
};

/* The same hosts and ports, written in ways that must still be allowed. */
static const char *const benign[] = {
	"http://127.0.0.2/v1",
	"http://127.0.0.2:1234/v1", /* an entry without a port allows any */
	"http://127.0.2/",          /* curl's a.b.c IPv4 form */
	"http://0x7f000002/",
	"http://2130706434/",
	"https://127.0.0.2/",
	"http://ALLOWED.example:8000/v1",
	"http://allowed.example.:8000/", /* one trailing dot: the same DNS name */
	"http://%61llowed.example:8000/",
	"http://allowed.example:08000/",
	"https://allowed.example:8000/",
	"http://evil\\@allowed.example:8000/", /* libcurl takes "evil\" as the user */
	"http://[::1]:9000/v1",
	"http://[0:0:0:0:0:0:0:1]:9000/",
	"http://[fe80::1%25eth0]/",
	"http://[fe80::1%eth0]:80/",
};

static void test_hostile_urls_refused(void **state)
{
	struct cl_allow_list l;
	make_list(&l);
	size_t n = sizeof(hostile) / sizeof(hostile[0]);
	assert_true(n >= 20);
	for (size_t i = 0; i < n; i++) {
		struct cl_err err = { 0 };
		int rc = cl_allow_check_url(&l, hostile[i], &err);
		if (rc == 0)
			fail_msg("hostile URL allowed: '%s'", hostile[i]);
		assert_true(rc == CL_EREFUSED || rc == CL_EINVAL);
		assert_true(err.msg[0] != '\0');
		/* A password never shows in a message. */
		assert_null(strstr(err.msg, ":x@"));
		printf("  refused %-48s %s\n", hostile[i], err.msg);
	}
	cl_allow_list_free(&l);
}

static void test_benign_urls_allowed(void **state)
{
	struct cl_allow_list l;
	make_list(&l);
	for (size_t i = 0; i < sizeof(benign) / sizeof(benign[0]); i++) {
		struct cl_err err = { 0 };
		if (cl_allow_check_url(&l, benign[i], &err) != 0)
			fail_msg("allowed URL refused: '%s': %s", benign[i], err.msg);
	}
	/* An empty list allows any URL libcurl can use, and still refuses what it cannot. */
	struct cl_allow_list none = { 0 };
	struct cl_err err = { 0 };
	assert_int_equal(cl_allow_check_url(&none, "http://127.0.0.3:1/", &err), 0);
	assert_int_equal(cl_allow_check_url(NULL, "http://anything.example/", &err), 0);
	assert_int_equal(cl_allow_check_url(NULL, "ftp://anything.example/", &err), CL_EINVAL);
	cl_allow_list_free(&l);
}

/* The refusal names the host and port libcurl would have used, and the userinfo trick. */
static void test_refusal_message(void **state)
{
	struct cl_allow_list l;
	make_list(&l);
	struct cl_err err = { 0 };
	assert_int_equal(cl_allow_check_url(&l, "http://127.0.0.2:x@127.0.0.3:8000/v1", &err),
			 CL_EREFUSED);
	assert_contains(err.msg, "target '127.0.0.3:8000' is not in this agent's --allow-target");
	assert_contains(err.msg, "127.0.0.2, allowed.example:8000, [::1]:9000, [fe80::1%25eth0]:80");
	assert_contains(err.msg, "user@ part is not the host");
	cl_allow_list_free(&l);
}

/* An entry written from a URL's own host and port allows that URL, whatever its zone id
 * (fuzz_url found a zone starting "25" that a bare '%' made into another zone). */
static void test_own_entry_allows(void **state)
{
	const char *urls[] = { "http:/[::1%2525e-0]/", "http://[fe80::1%25eth0]:8000/v1",
			       "http://[fe80::1%eth0]/", "https://Example.COM./v1", "http://127.1/" };
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		struct cl_url_where w;
		struct cl_err err = { 0 };
		assert_int_equal(cl_url_where(urls[i], &w, &err), 0);
		char entry[CL_URL_HOST_MAX + 80];
		cl_url_where_str(&w, entry, sizeof(entry));
		struct cl_allow_list l = { 0 };
		if (cl_allow_list_add(&l, entry, &err) != 0)
			fail_msg("'%s' -> entry '%s': %s", urls[i], entry, err.msg);
		if (cl_allow_check_url(&l, urls[i], &err) != 0)
			fail_msg("'%s' refused by its own entry '%s': %s", urls[i], entry, err.msg);
		cl_allow_list_free(&l);
	}
}

static void test_bad_entries(void **state)
{
	static const char *const bad[] = {
		"",    "http://h", "h/v1", "u@h",       "h:99999",          "[::1",    "h:port",
		"h h", "h?x",      "h#x",  "[1.2.3.4]", "\xd0\xb0.example", "h:80:80", "a\\b",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cl_allow_list l = { 0 };
		struct cl_err err = { 0 };
		if (cl_allow_list_add(&l, bad[i], &err) == 0)
			fail_msg("bad entry accepted: '%s'", bad[i]);
		assert_contains(err.msg, "--allow-target");
		assert_int_equal(l.n, 0);
		cl_allow_list_free(&l);
	}
	struct cl_allow_list l = { 0 };
	struct cl_err err = { 0 };
	assert_int_equal(cl_allow_list_add(&l, "LOCALHOST.", &err), 0);
	assert_string_equal(l.v[0].where.name, "localhost");
	assert_int_equal(l.v[0].port, -1);
	assert_int_equal(cl_allow_list_add(&l, "127.1:80", &err), 0);
	assert_true(l.v[1].where.is_ip);
	assert_int_equal(l.v[1].port, 80);
	cl_allow_list_free(&l);
}

/* A listener on host:port (0: any port); its port is returned in *port. */
static int listen_on(const char *host, int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)*port) };
	inet_pton(AF_INET, host, &a.sin_addr);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 16) != 0) {
		close(fd);
		return -1;
	}
	socklen_t len = sizeof(a);
	getsockname(fd, (struct sockaddr *)&a, &len);
	*port = ntohs(a.sin_port);
	return fd;
}

/*
 * The point of parsing with curl_url(): for URLs built to confuse, the host and port
 * cl_url_where reports are the ones libcurl really connects to.  Listeners on 127.0.0.2 and
 * 127.0.0.3 (same port); libcurl connects (CONNECT_ONLY) and says where it went.
 */
static void test_where_is_where_libcurl_connects(void **state)
{
	int port = 0, fd3 = -1, fd2 = -1;
	for (int tries = 0; tries < 20 && fd2 < 0; tries++) {
		port = 0;
		fd3 = listen_on("127.0.0.3", &port);
		assert_true(fd3 >= 0);
		fd2 = listen_on("127.0.0.2", &port);
		if (fd2 < 0)
			close(fd3);
	}
	assert_true(fd2 >= 0);
	static const char *const forms[] = {
		"http://127.0.0.2:x@127.0.0.3:%d/v1",
		"http://127.0.0.2@127.0.0.3:%d/v1",
		"http://127.0.0.3:%d@127.0.0.2:%d/",
		"http://evil\\@127.0.0.2:%d/",
		"http://0x7f.0.0.3:%d/",
		"http://%%31%%32%%37.0.0.2:%d/",
		"http://127.0.3:%d/",
		"http://127.0.0.2:%d#@127.0.0.3:%d/",
		"http://127.0.0.3:%d?@127.0.0.2:%d/",
	};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char url[200];
		snprintf(url, sizeof(url), forms[i], port, port);
		struct cl_url_where w;
		struct cl_err err = { 0 };
		assert_int_equal(cl_url_where(url, &w, &err), 0);
		CURL *h = curl_easy_init();
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
		CURLcode rc = curl_easy_perform(h);
		char *ip = NULL;
		long cport = 0;
		curl_easy_getinfo(h, CURLINFO_PRIMARY_IP, &ip);
		curl_easy_getinfo(h, CURLINFO_PRIMARY_PORT, &cport);
		printf("  %-44s where %s:%u, libcurl connected to %s:%ld (%s)\n", url, w.host,
		       w.port, ip ? ip : "?", cport, curl_easy_strerror(rc));
		assert_int_equal(rc, CURLE_OK);
		assert_string_equal(ip, w.host);
		assert_int_equal(cport, w.port);
		curl_easy_cleanup(h);
	}
	close(fd2);
	close(fd3);
}

static struct cl_target_plan plan_for(const char *url)
{
	return (struct cl_target_plan){ .base_url = (char *)url, .tls_verify = true };
}

static void test_endpoint_urls(void **state)
{
	struct cl_http_target t;
	struct cl_err err = { 0 };
	struct cl_target_plan p = plan_for("http://127.0.0.1:8000/v1/");
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	assert_string_equal(t.url[CL_HTTP_CHAT], "http://127.0.0.1:8000/v1/chat/completions");
	assert_string_equal(t.url[CL_HTTP_MODELS], "http://127.0.0.1:8000/v1/models");
	assert_string_equal(t.url[CL_HTTP_BASE], "http://127.0.0.1:8000/v1");
	/* /tokenize is beside /v1 (vLLM, SGLang, llama.cpp), and sends JSON. */
	assert_string_equal(t.url[CL_HTTP_TOKENIZE], "http://127.0.0.1:8000/tokenize");
	bool json_ct = false;
	for (size_t i = 0; i < t.n_lines[CL_HTTP_TOKENIZE]; i++)
		json_ct |=
		    strcmp(t.lines[CL_HTTP_TOKENIZE][i], "Content-Type: application/json") == 0;
	assert_true(json_ct);
	assert_int_equal(t.ver.curl_version, (long)CURL_HTTP_VERSION_1_1);
	assert_false(t.ver.multiplex);
	cl_http_target_free(&t);

	/* A gateway's query stays after the path; a fragment goes. */
	p = plan_for("https://gw.example/openai/v1?api-version=2024-06-01#frag");
	p.http2 = true;
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	assert_string_equal(t.url[CL_HTTP_CHAT],
			    "https://gw.example/openai/v1/chat/completions?api-version=2024-06-01");
	assert_string_equal(t.url[CL_HTTP_TOKENIZE],
			    "https://gw.example/openai/tokenize?api-version=2024-06-01");
	assert_int_equal(t.ver.curl_version, (long)CURL_HTTP_VERSION_2TLS);
	assert_true(t.ver.h2_required);
	cl_http_target_free(&t);

	/* The version is client/httpver's decision: http2 required without TLS is HTTP/2 with
	 * prior knowledge, preferred is HTTP/1.1 with Upgrade: h2c. */
	p = plan_for("http://h/v1");
	p.http2 = true;
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	assert_int_equal(t.ver.curl_version, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	cl_http_target_free(&t);
	p.http2_fallback = true;
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	assert_int_equal(t.ver.curl_version, (long)CURL_HTTP_VERSION_2_0);
	assert_false(t.ver.h2_required);
	cl_http_target_free(&t);

	/* The scheme as libcurl reads it: HTTPS:// is TLS, so h2 goes by ALPN. */
	p = plan_for("HTTPS://gw.example/v1");
	p.http2 = true;
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	assert_true(t.ver.tls);
	assert_int_equal(t.ver.curl_version, (long)CURL_HTTP_VERSION_2TLS);
	cl_http_target_free(&t);
}

/* A page outside the API (the server's /metrics) says who asks for it as every request
 * does, unless the caller's own lines name a User-Agent; a bad line is refused. */
static void test_page_headers(void **state)
{
	(void)state;
	struct curl_slist *l = NULL;
	struct cl_err err = { 0 };
	const char *own[] = { "Authorization: Bearer metrics-reader" };
	assert_int_equal(cl_http_page_headers(own, 1, &l, &err), 0);
	assert_non_null(l);
	assert_string_equal(l->data, "User-Agent: chatload/" CHATLOAD_VERSION);
	assert_string_equal(l->next->data, own[0]);
	assert_null(l->next->next);
	curl_slist_free_all(l);
	const char *ua[] = { "user-agent: probe/1", "X-A: b" };
	assert_int_equal(cl_http_page_headers(ua, 2, &l, &err), 0);
	assert_string_equal(l->data, ua[0]);
	assert_string_equal(l->next->data, ua[1]);
	assert_null(l->next->next);
	curl_slist_free_all(l);
	assert_int_equal(cl_http_page_headers(NULL, 0, &l, &err), 0);
	assert_string_equal(l->data, "User-Agent: chatload/" CHATLOAD_VERSION);
	assert_null(l->next);
	curl_slist_free_all(l);
	const char *bad[] = { "X-A: b\r\nHost: elsewhere" };
	assert_int_equal(cl_http_page_headers(bad, 1, &l, &err), CL_EINVAL);
	assert_null(l);
	assert_non_null(strstr(err.msg, "bad header"));
}

static void test_userinfo_and_allow_refused(void **state)
{
	struct cl_http_target t;
	struct cl_err err = { 0 };
	struct cl_target_plan p = plan_for("http://user:sekrit@127.0.0.1:8000/v1");
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), CL_EINVAL);
	assert_contains(err.msg, "user name or password");
	assert_null(strstr(err.msg, "sekrit"));
	cl_http_target_free(&t);

	struct cl_allow_list l;
	make_list(&l);
	p = plan_for("http://127.0.0.2:x@127.0.0.3:8000/v1");
	assert_int_equal(cl_http_target_init(&t, &p, &l, &err), CL_EREFUSED);
	assert_contains(err.msg, "127.0.0.3:8000");
	cl_http_target_free(&t);
	p = plan_for("http://127.0.0.2:8000/v1");
	assert_int_equal(cl_http_target_init(&t, &p, &l, &err), 0);
	cl_http_target_free(&t);
	cl_allow_list_free(&l);
}

/* Header lines of an endpoint, as one string (lines joined by '|'). */
static void lines_of(const struct cl_http_target *t, enum cl_http_endpoint ep, char *out, size_t n)
{
	struct curl_slist nodes[CL_HTTP_MAX_HEADERS];
	char lead[] = "X-Request-Id: a1-0-1";
	struct curl_slist *l = cl_http_target_link(t, ep, nodes, CL_HTTP_MAX_HEADERS, lead);
	size_t o = 0;
	out[0] = '\0';
	for (; l && o < n; l = l->next)
		o += (size_t)snprintf(out + o, n - o, "%s|", l->data);
}

static void test_headers_and_key(void **state)
{
	struct cl_http_target t;
	struct cl_err err = { 0 };
	char *extra[] = { "X-Team: infra", "User-Agent: mine/1" };
	struct cl_target_plan p = plan_for("http://127.0.0.1/v1");
	p.headers = extra;
	p.n_headers = 2;
	p.api_key_env = "CL_HTTP_TEST_KEY";
	setenv("CL_HTTP_TEST_KEY", "sk-123", 1);
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	unsetenv("CL_HTTP_TEST_KEY"); /* read once, at init */
	char got[1024];
	lines_of(&t, CL_HTTP_CHAT, got, sizeof(got));
	/* The scenario's User-Agent replaces chatload's; the key is sent. */
	assert_string_equal(got, "X-Request-Id: a1-0-1|Content-Type: application/json|"
				 "Accept: text/event-stream|Expect:|Authorization: Bearer sk-123|"
				 "X-Team: infra|User-Agent: mine/1|");
	lines_of(&t, CL_HTTP_MODELS, got, sizeof(got));
	assert_string_equal(got, "X-Request-Id: a1-0-1|Authorization: Bearer sk-123|"
				 "X-Team: infra|User-Agent: mine/1|");
	/* Too few nodes: nothing linked rather than a list cut short. */
	struct curl_slist two[2];
	assert_null(cl_http_target_link(&t, CL_HTTP_CHAT, two, 2, NULL));
	cl_http_target_free(&t);
	assert_null(t.auth);

	p.n_headers = 0;
	p.api_key_env = NULL;
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	lines_of(&t, CL_HTTP_MODELS, got, sizeof(got));
	assert_string_equal(got, "X-Request-Id: a1-0-1|User-Agent: chatload/" CHATLOAD_VERSION "|");
	cl_http_target_free(&t);

	/* api messages (issue 44): the key as x-api-key too, Anthropic's version on the
	 * generation endpoint only; a scenario's own version line replaces chatload's. */
	char *version[] = { "anthropic-version: 2024-99-99" };
	p.api = CL_API_MESSAGES;
	p.api_key_env = "CL_HTTP_TEST_KEY";
	setenv("CL_HTTP_TEST_KEY", "sk-9", 1);
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	lines_of(&t, CL_HTTP_CHAT, got, sizeof(got));
	assert_string_equal(got, "X-Request-Id: a1-0-1|Content-Type: application/json|"
				 "Accept: text/event-stream|Expect:|User-Agent: chatload/" CHATLOAD_VERSION
				 "|Authorization: Bearer sk-9|x-api-key: sk-9|"
				 "anthropic-version: 2023-06-01|");
	lines_of(&t, CL_HTTP_MODELS, got, sizeof(got));
	assert_string_equal(got, "X-Request-Id: a1-0-1|User-Agent: chatload/" CHATLOAD_VERSION
				 "|Authorization: Bearer sk-9|x-api-key: sk-9|");
	cl_http_target_free(&t);
	assert_null(t.xkey);
	p.headers = version;
	p.n_headers = 1;
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	unsetenv("CL_HTTP_TEST_KEY");
	lines_of(&t, CL_HTTP_CHAT, got, sizeof(got));
	assert_non_null(strstr(got, "|anthropic-version: 2024-99-99|"));
	assert_null(strstr(got, "2023-06-01"));
	cl_http_target_free(&t);
}

/* One policy for a key the scenario names but the host lacks: refused, naming it. */
static void test_key_policy(void **state)
{
	struct cl_http_target t;
	struct cl_err err = { 0 };
	struct cl_target_plan p = plan_for("http://127.0.0.1/v1");
	p.api_key_env = "CL_HTTP_TEST_UNSET";
	unsetenv("CL_HTTP_TEST_UNSET");
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), CL_EREFUSED);
	assert_contains(err.msg, "environment variable 'CL_HTTP_TEST_UNSET'");
	cl_http_target_free(&t);
	setenv("CL_HTTP_TEST_UNSET", "", 1);
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), CL_EREFUSED);
	cl_http_target_free(&t);

	static const char *const bad_keys[] = { "sk\r\nX-Evil: 1", "sk\n", "sk 1", "sk\t1",
						"sk\x7f" };
	for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
		setenv("CL_HTTP_TEST_UNSET", bad_keys[i], 1);
		assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), CL_EINVAL);
		assert_contains(err.msg, "the API key in 'CL_HTTP_TEST_UNSET'");
		assert_null(strstr(err.msg, "sk"));
		cl_http_target_free(&t);
	}
	unsetenv("CL_HTTP_TEST_UNSET");
	p.api_key_env = "NOT A NAME";
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), CL_EINVAL);
	cl_http_target_free(&t);
}

static void test_bad_headers(void **state)
{
	static char *bad[] = {
		"X-Evil: a\r\nHost: other",
		"X-Evil: a\n",
		"X-Evil: a\rb",
		"NoColon",
		": no name",
		"Bad Name: x",
		"X-Nul: \x01",
		"X(y): z",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cl_http_target t;
		struct cl_err err = { 0 };
		struct cl_target_plan p = plan_for("http://127.0.0.1/v1");
		p.headers = &bad[i];
		p.n_headers = 1;
		if (cl_http_target_init(&t, &p, NULL, &err) != CL_EINVAL)
			fail_msg("bad header accepted: '%s'", bad[i]);
		assert_contains(err.msg, "bad target header");
		cl_http_target_free(&t);
	}
	/* An empty value (curl's way to drop a header) and a tab are fine. */
	char *ok[] = { "Accept:", "X-Tab: a\tb" };
	struct cl_http_target t;
	struct cl_err err = { 0 };
	struct cl_target_plan p = plan_for("http://127.0.0.1/v1");
	p.headers = ok;
	p.n_headers = 2;
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	char got[512];
	lines_of(&t, CL_HTTP_CHAT, got, sizeof(got));
	assert_null(strstr(got, "text/event-stream")); /* replaced by the empty Accept */
	cl_http_target_free(&t);
}

/* Options land on a handle: a redirect is not followed and only http(s) is spoken. */
static void test_apply(void **state)
{
	struct cl_http_target t;
	struct cl_err err = { 0 };
	struct cl_target_plan p = plan_for("http://127.0.0.1:1/v1");
	p.connect_timeout_us = 500000;
	assert_int_equal(cl_http_target_init(&t, &p, NULL, &err), 0);
	CURL *h = curl_easy_init();
	assert_int_equal(cl_http_target_apply(&t, h, CL_HTTP_MODELS, 2000000, NULL, &err), 0);
	/* Port 1 refuses: the request fails fast, not after a default timeout. */
	CURLcode rc = curl_easy_perform(h);
	assert_int_equal(rc, CURLE_COULDNT_CONNECT);
	char *url = NULL;
	curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &url);
	assert_string_equal(url, "http://127.0.0.1:1/v1/models");
	curl_easy_cleanup(h);
	/* A zeroed target cannot be applied. */
	struct cl_http_target z = { 0 };
	h = curl_easy_init();
	assert_int_equal(cl_http_target_apply(&z, h, CL_HTTP_CHAT, 0, NULL, &err), CL_EINVAL);
	curl_easy_cleanup(h);
	cl_http_target_free(&t);
	cl_http_target_free(&z);
}

static int group_setup(void **state)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_urls_refused),
		cmocka_unit_test(test_benign_urls_allowed),
		cmocka_unit_test(test_refusal_message),
		cmocka_unit_test(test_own_entry_allows),
		cmocka_unit_test(test_bad_entries),
		cmocka_unit_test(test_where_is_where_libcurl_connects),
		cmocka_unit_test(test_endpoint_urls),
		cmocka_unit_test(test_page_headers),
		cmocka_unit_test(test_userinfo_and_allow_refused),
		cmocka_unit_test(test_headers_and_key),
		cmocka_unit_test(test_key_policy),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_apply),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
