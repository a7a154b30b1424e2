/* One attempt of the readiness phases connect and /models over blocking libcurl, and what
 * every phase's request shares (probe_int.h): its set-up, a failed transfer or HTTP answer
 * classified as not yet or fatal with a short human reason and the server's own words.  The
 * streamed generation is probe_gen.c. */
#include "client/probe/probe_int.h"

#include "client/stream/error.h"

#include "chatload/clock.h"
#include "chatload/units.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODELS_LISTED_MAX 8 /* model names quoted when the wanted one is missing */

void cli_probe_set_error(struct cl_probe_attempt *a, enum cl_probe_outcome outcome, const char *fmt,
			 ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->error, sizeof(a->error), fmt, ap);
	va_end(ap);
	a->outcome = outcome;
}

void cli_probe_attempt_clear(struct cl_probe_attempt *a)
{
	memset(a, 0, sizeof(*a));
	a->ttft_us = a->total_us = -1;
}

/* ---- message extraction ------------------------------------------------------------------ */

/* Length of the longest prefix of s[0..n) that does not end inside a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t n)
{
	size_t i = n;
	size_t back = 0;
	while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--, back++;
	if (i == 0)
		return n;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	return back + 1 >= need ? n : i - 1;
}

/* Copies text into out as one printable line, at most PROBE_MESSAGE_MAX_BYTES ("..." when cut). */
void cli_probe_copy_line(const char *text, size_t len, char *out, size_t n)
{
	size_t max = n - 1 < PROBE_MESSAGE_MAX_BYTES ? n - 1 : PROBE_MESSAGE_MAX_BYTES;
	size_t o = 0;
	bool space = false, cut = false;
	while (len && (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n'))
		text++, len--;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)text[i];
		if (ch < 0x20 || ch == 0x7F) {
			space = o > 0;
			continue;
		}
		if (o + (space ? 2 : 1) > max) {
			cut = true;
			break;
		}
		if (space)
			out[o++] = ' ';
		space = false;
		out[o++] = (char)ch;
	}
	if (cut && max >= 3) {
		o = utf8_cut(out, o > max - 3 ? max - 3 : o);
		memcpy(out + o, "...", 3);
		o += 3;
	} else {
		o = utf8_cut(out, o); /* the text itself may stop inside a character */
	}
	out[o] = '\0';
}

/* The message of a failure e read (cl_stream_error_read) as one printable line: unescaped
 * when it came from JSON (it is a validated string's inside, so quoting it again makes a
 * JSON string), as is when it is the text itself.  False when e has none. */
bool cli_probe_error_message(const struct cl_stream_error *e, char *out, size_t n)
{
	if (!e->message || !e->message_len)
		return false;
	if (e->message_raw) {
		cli_probe_copy_line(e->message, e->message_len, out, n);
		return true;
	}
	char quoted[PROBE_MESSAGE_MAX_BYTES * 6 + 8];
	size_t take = e->message_len;
	if (take > sizeof(quoted) - 2) {
		/* Keep whole escapes: cut before a backslash run that might be split. */
		take = sizeof(quoted) - 2;
		while (take && e->message[take - 1] == '\\')
			take--;
		while (take && (e->message[take - 1] & 0xC0) == 0x80)
			take--; /* nor inside a UTF-8 character */
		if (take && ((unsigned char)e->message[take - 1] & 0xC0) == 0xC0)
			take--;
	}
	quoted[0] = '"';
	memcpy(quoted + 1, e->message, take);
	quoted[take + 1] = '"';
	json_t *v = json_loadb(quoted, take + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	bool ok = json_is_string(v);
	if (ok)
		cli_probe_copy_line(json_string_value(v), json_string_length(v), out, n);
	else
		cli_probe_copy_line(e->message, e->message_len, out,
				    n); /* a cut \u escape: as it is */
	json_decref(v);
	return true;
}

/* Finds the human message in a server's error text, whatever its dialect (the one reader,
 * stream/error.h), or in FastAPI's validation list ({"detail": [{"msg": ...}]}). */
static bool json_message(const char *body, size_t len, char *out, size_t n)
{
	struct cl_stream_error e;
	cl_stream_error_read(body, len, &e);
	if (!e.is_json)
		return false;
	if (cli_probe_error_message(&e, out, n))
		return true;
	json_t *root = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	json_t *d = json_object_get(root, "detail");
	json_t *msg = json_is_array(d) ? json_object_get(json_array_get(d, 0), "msg") : NULL;
	bool found = json_is_string(msg) && json_string_length(msg) > 0;
	if (found)
		cli_probe_copy_line(json_string_value(msg), json_string_length(msg), out, n);
	json_decref(root);
	return found;
}

void cli_probe_http_error_text(long status, const char *body, size_t len, char *out, size_t n)
{
	char msg[PROBE_MESSAGE_MAX_BYTES + 8];
	msg[0] = '\0';
	if (body && len && !json_message(body, len, msg, sizeof(msg))) {
		size_t i = 0;
		while (i < len &&
		       (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
			i++;
		/* An HTML error page says nothing a person needs in one line. */
		if (i < len && body[i] != '<' && body[i] != '{') {
			const char *nl = memchr(body + i, '\n', len - i);
			cli_probe_copy_line(body + i, nl ? (size_t)(nl - body - i) : len - i, msg,
					    sizeof(msg));
		}
	}
	if (msg[0])
		snprintf(out, n, "HTTP %ld \"%s\"", status, msg);
	else
		snprintf(out, n, "HTTP %ld", status);
}

/* ---- connection cli_probe_setup
 * -------------------------------------------------------------------- */

int cli_probe_http_init(struct cl_probe_http *h, const struct cl_target_plan *target,
			const struct cl_allow_list *allow, const atomic_int *cancel,
			struct cl_err *err)
{
	memset(h, 0, sizeof(*h));
	h->target = target;
	h->cancel = cancel;
	int rc = cl_http_target_init(&h->http, target, allow, err);
	if (rc != 0)
		return rc;
	h->has_key = h->http.auth != NULL;
	h->models_headers = cl_http_target_link(&h->http, CL_HTTP_MODELS, h->models_nodes,
						CL_HTTP_MAX_HEADERS, NULL);
	h->chat_headers =
	    cl_http_target_link(&h->http, CL_HTTP_CHAT, h->chat_nodes, CL_HTTP_MAX_HEADERS, NULL);
	h->easy = curl_easy_init();
	if (!h->easy)
		return cl_err_set(err, CL_ENOMEM, "out of memory preparing the readiness probe");
	return 0;
}

void cli_probe_http_destroy(struct cl_probe_http *h)
{
	if (!h)
		return;
	if (h->easy)
		curl_easy_cleanup(h->easy);
	h->easy = NULL;
	h->models_headers = h->chat_headers = NULL;
	cl_http_target_free(&h->http);
}

static int on_xferinfo(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct cl_probe_http *h = ctx;
	return h->cancel && *h->cancel ? 1 : 0;
}

/*
 * Everything a request shares, from the target (as the engine sends it: URL, headers, TLS,
 * HTTP version and connection use), plus the probe's cancel callback; the handle keeps its
 * connections across resets.  The reset before every request also clears libcurl's count of
 * re-sends on dead reused connections, which 7.88 otherwise carries from one transfer to the
 * next (see agent/engine/request.c): against a server that closes after every answer the
 * probe's re-sends never add up.  -1 with a filled attempt when an option is refused.
 */
int cli_probe_setup(struct cl_probe_http *h, CURL *e, enum cl_http_endpoint ep, int64_t timeout_us,
		    struct curl_slist *headers, struct cl_probe_attempt *a)
{
	curl_easy_reset(e);
	h->errbuf[0] = '\0';
	struct cl_err err = { 0 };
	if (cl_http_target_apply(&h->http, e, ep, timeout_us, headers, &err) != 0) {
		cli_probe_set_error(a, CL_PROBE_FATAL, "%s", err.msg);
		return -1;
	}
	PROBE_SETOPT(a, e, CURLOPT_ERRORBUFFER, h->errbuf);
	PROBE_SETOPT(a, e, CURLOPT_NOPROGRESS, 0L);
	PROBE_SETOPT(a, e, CURLOPT_XFERINFOFUNCTION, on_xferinfo);
	PROBE_SETOPT(a, e, CURLOPT_XFERINFODATA, h);
	return 0;
}

/* Classifies a failed transfer (no HTTP status to go by). */
void cli_probe_transfer_failure(struct cl_probe_http *h, CURL *e, CURLcode rc, int64_t timeout_us,
				const char *what, struct cl_probe_attempt *a)
{
	char d[32];
	long os_errno = 0;
	const char *detail = h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc);
	switch (rc) {
	case CURLE_ABORTED_BY_CALLBACK:
		if (h->cancel && *h->cancel) {
			cli_probe_set_error(a, CL_PROBE_CANCELLED, "cancelled");
			return;
		}
		break;
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
		if (os_errno == ECONNREFUSED)
			cli_probe_set_error(a, CL_PROBE_RETRY, "connection refused");
		else
			cli_probe_set_error(a, CL_PROBE_RETRY, "cannot connect: %s", detail);
		return;
	case CURLE_OPERATION_TIMEDOUT:
		cli_probe_set_error(
		    a, CL_PROBE_RETRY, "%stimed out after %s", what,
		    cl_format_duration_us(timeout_us, CL_DURATION_TENTHS, d, sizeof(d)));
		return;
	case CURLE_COULDNT_RESOLVE_HOST:
		cli_probe_set_error(a, CL_PROBE_RETRY, "cannot resolve host: %s", detail);
		return;
	case CURLE_GOT_NOTHING:
		cli_probe_set_error(a, CL_PROBE_RETRY, "empty reply from server");
		return;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		cli_probe_set_error(a, CL_PROBE_FATAL, "unusable URL '%s': %s", h->target->base_url,
				    detail);
		return;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
		cli_probe_set_error(a, CL_PROBE_FATAL, "TLS: %s", detail);
		return;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		cli_probe_set_error(a, CL_PROBE_RETRY, "connection lost: %s", detail);
		return;
	default:
		break;
	}
	cli_probe_set_error(a, CL_PROBE_RETRY, "%s", detail);
}

/* 4xx answers that no amount of waiting fixes: the request or its credentials are wrong. */
bool cli_probe_fatal_status(long status)
{
	switch (status) {
	case 400:
	case 401:
	case 403:
	case 404:
	case 405:
	case 413:
	case 422:
		return true;
	default:
		return false;
	}
}

void cli_probe_http_failure(struct cl_probe_http *h, long status, const struct cl_buf *body,
			    const char *hint404, struct cl_probe_attempt *a)
{
	char text[sizeof(a->error)];
	cli_probe_http_error_text(status, body->data, body->len, text, sizeof(text));
	a->http_status = status;
	if (status >= 300 && status < 400) {
		/* Redirects are not followed (a POST would lose its body): the URL is wrong. */
		char *loc = NULL;
		curl_easy_getinfo(h->easy, CURLINFO_REDIRECT_URL, &loc);
		cli_probe_set_error(a, CL_PROBE_FATAL, "HTTP %ld redirect to '%s' (use that URL)",
				    status, loc ? loc : "?");
		return;
	}
	if (!cli_probe_fatal_status(status)) {
		cli_probe_set_error(a, CL_PROBE_RETRY, "%s", text);
		return;
	}
	const char *hint = "";
	if ((status == 401 || status == 403) && !h->has_key)
		hint = " (no API key sent: set target.api_key_env / --api-key-env)";
	else if (status == 404)
		hint = hint404;
	cli_probe_set_error(a, CL_PROBE_FATAL, "%s%s", text, hint);
}

/* ---- the protocol ------------------------------------------------------------------------ */

/* Transfer errors an HTTP/1.1 server gives a client that opens with the HTTP/2 preface. */
static bool preface_refused(CURLcode rc)
{
	switch (rc) {
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_WEIRD_SERVER_REPLY:
		return true;
	default:
		return false;
	}
}

/* The status of GET {base}/models over plain HTTP/1.1 on a connection of its own; 0 when
 * none. */
static long h1_status(struct cl_probe_http *h, int64_t timeout_us)
{
	CURL *e = curl_easy_init();
	long status = 0;
	if (!e)
		return 0;
	struct cl_probe_http h1 = *h; /* shallow: only h1.http.ver differs, nothing is freed */
	h1.http.ver.curl_version = CURL_HTTP_VERSION_1_1;
	h1.http.ver.multiplex = false;
	h1.http.ver.fresh_connection = true;
	struct cl_probe_attempt scratch;
	if (cli_probe_setup(&h1, e, CL_HTTP_MODELS, timeout_us, h->models_headers, &scratch) == 0 &&
	    curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK && curl_easy_perform(e) == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(e);
	return status;
}

/*
 * With target.http2 required, a transfer that failed at the protocol level or was answered
 * over HTTP/1.x is a configuration error, not "not ready yet": waiting will not teach the
 * server HTTP/2.  Returns true (a set to fatal) when rc/e show that.  first: the gate's
 * first HTTP request (/models), the one that tells whether h2c is spoken at all.
 */
bool cli_probe_h2_refused(struct cl_probe_http *h, CURL *e, CURLcode rc, int64_t timeout_us,
			  bool first, struct cl_probe_attempt *a)
{
	if (!h->http.ver.h2_required)
		return false;
	if (rc == CURLE_OK) {
		if (cl_httpver_used(e) != 1)
			return false;
		cli_probe_set_error(
		    a, CL_PROBE_FATAL,
		    "the server answered over HTTP/1.1 (ALPN chose http/1.1), but "
		    "target.http2 is required; set target.http2: preferred to accept "
		    "HTTP/1.1, or false");
		return true;
	}
	if (!first || h->http.ver.tls || !preface_refused(rc))
		return false;
	/* h2c prior knowledge: the server may simply not be up yet.  If it answers plain
	 * HTTP/1.1, it is up and does not speak h2c. */
	long st = h1_status(h, timeout_us);
	if (st == 0)
		return false;
	cli_probe_set_error(
	    a, CL_PROBE_FATAL,
	    "the server does not speak HTTP/2 with prior knowledge (h2c): the HTTP/2 "
	    "request failed (%s) while HTTP/1.1 gets HTTP %ld; set target.http2: "
	    "preferred to accept HTTP/1.1, false, or use an h2c endpoint",
	    h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc), st);
	return true;
}

/* ---- phases ------------------------------------------------------------------------------ */

static int connect_opts(struct cl_probe_http *h, CURL *e, int64_t timeout_us,
			struct cl_probe_attempt *a)
{
	if (cli_probe_setup(h, e, CL_HTTP_BASE, timeout_us, NULL, a) != 0)
		return -1;
	PROBE_SETOPT(a, e, CURLOPT_CONNECT_ONLY, 1L);
	return 0;
}

void cli_probe_http_connect(struct cl_probe_http *h, int64_t timeout_us, struct cl_probe_attempt *a)
{
	cli_probe_attempt_clear(a);
	/* A connect-only handle of its own: curl never reuses such a connection for requests. */
	CURL *e = curl_easy_init();
	if (!e) {
		cli_probe_set_error(a, CL_PROBE_RETRY, "out of memory");
		return;
	}
	if (connect_opts(h, e, timeout_us, a) == 0) {
		CURLcode rc = curl_easy_perform(e);
		if (rc == CURLE_OK)
			a->outcome = CL_PROBE_OK;
		else
			cli_probe_transfer_failure(h, e, rc, timeout_us, "connect ", a);
	}
	curl_easy_cleanup(e);
}

struct capture {
	struct cl_buf *buf;
	bool too_big;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct capture *c = ctx;
	size_t n = size * nmemb;
	if (cl_buf_append(c->buf, p, n) != 0) {
		c->too_big = true;
		return 0;
	}
	return n;
}

/* Checks a 200 answer of /models and picks the model. */
static void read_models(const struct cl_buf *body, const char *want, struct cl_probe_attempt *a)
{
	json_t *root = json_loadb(body->data ? body->data : "", body->len, 0, NULL);
	json_t *data = json_object_get(root, "data");
	if (!json_is_array(data)) {
		cli_probe_set_error(
		    a, CL_PROBE_FATAL,
		    "answer is not an OpenAI model list (is the URL right? it usually ends "
		    "in /v1)");
		goto out;
	}
	size_t i, n = json_array_size(data);
	json_t *m;
	if (n == 0) {
		cli_probe_set_error(a, CL_PROBE_RETRY, "no models listed yet");
		goto out;
	}
	json_array_foreach(data, i, m)
	{
		const char *id = json_string_value(json_object_get(m, "id"));
		if (id && (!want || strcmp(id, want) == 0)) {
			snprintf(a->model, sizeof(a->model), "%s", id);
			a->outcome = CL_PROBE_OK;
			goto out;
		}
	}
	if (!want) {
		cli_probe_set_error(a, CL_PROBE_FATAL, "no model listed has an 'id'");
		goto out;
	}
	/* Which models it does list is what the person needs to fix the scenario. */
	struct cl_buf list = { 0 };
	cl_buf_init(&list, 256);
	size_t shown = 0;
	json_array_foreach(data, i, m)
	{
		const char *id = json_string_value(json_object_get(m, "id"));
		if (!id || shown == MODELS_LISTED_MAX)
			continue;
		if (cl_buf_printf(&list, "%s'%s'", shown ? ", " : "", id) != 0)
			break;
		shown++;
	}
	/* Past the list's cap the count is left out: the names shown are still the server's. */
	if (n > shown)
		CL_IGNORE(cl_buf_printf(&list, " and %zu more", n - shown));
	cli_probe_set_error(a, CL_PROBE_FATAL, "model '%s' is not listed; the server lists %s",
			    want, list.data ? list.data : "nothing usable");
	cl_buf_free(&list);
out:
	json_decref(root);
}

static int models_opts(struct cl_probe_http *h, struct capture *cap, int64_t timeout_us,
		       struct cl_probe_attempt *a)
{
	if (cli_probe_setup(h, h->easy, CL_HTTP_MODELS, timeout_us, h->models_headers, a) != 0)
		return -1;
	PROBE_SETOPT(a, h->easy, CURLOPT_HTTPGET, 1L);
	PROBE_SETOPT(a, h->easy, CURLOPT_WRITEFUNCTION, on_body);
	PROBE_SETOPT(a, h->easy, CURLOPT_WRITEDATA, cap);
	return 0;
}

void cli_probe_http_models(struct cl_probe_http *h, const char *want_model, int64_t timeout_us,
			   struct cl_probe_attempt *a)
{
	cli_probe_attempt_clear(a);
	struct cl_buf body;
	cl_buf_init(&body, CL_PROBE_MODELS_MAX_BYTES);
	struct capture cap = { &body, false };
	if (models_opts(h, &cap, timeout_us, a) != 0)
		goto out;
	CURLcode rc = curl_easy_perform(h->easy);
	long status = 0;
	curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
	a->http_status = status;
	if (rc == CURLE_WRITE_ERROR && cap.too_big)
		cli_probe_set_error(a, CL_PROBE_FATAL, "answer is larger than %u MiB",
				    CL_PROBE_MODELS_MAX_BYTES >> 20);
	else if (cli_probe_h2_refused(h, h->easy, rc, timeout_us, true, a))
		; /* a is set */
	else if (rc != CURLE_OK)
		cli_probe_transfer_failure(h, h->easy, rc, timeout_us, "", a);
	else if (status != 200)
		cli_probe_http_failure(h, status, &body,
				       " (is the URL right? it usually ends in /v1)", a);
	else
		read_models(&body, want_model, a);
out:
	cl_buf_free(&body);
}
