/* One attempt of each readiness phase (connect, /models, a streamed generation) over blocking
 * libcurl, classified as ok, not yet or fatal with a short human reason. */
#include "client/probe/probe_http.h"

#include "client/probe/readiness.h"
#include "client/stream/chunk.h"
#include "client/stream/embedding.h"
#include "client/stream/error.h"
#include "client/stream/event.h"
#include "client/stream/responses.h"
#include "client/stream/sse.h"
#include "client/stream/transcription.h"

#include "chatload/audio.h"
#include "chatload/clock.h"
#include "chatload/units.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MESSAGE_MAX_BYTES 200 /* of a server's message quoted in last_error */
#define MODELS_LISTED_MAX 8   /* model names quoted when the wanted one is missing */
#define DONE_GRACE_US                                                                              \
	100000 /* a framed body still open this long after [DONE] is                               \
		* ended by the probe, as by the engine */

static void set_error(struct cl_probe_attempt *a, enum cl_probe_outcome outcome, const char *fmt,
		      ...) __attribute__((format(printf, 3, 4)));

static void set_error(struct cl_probe_attempt *a, enum cl_probe_outcome outcome, const char *fmt,
		      ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->error, sizeof(a->error), fmt, ap);
	va_end(ap);
	a->outcome = outcome;
}

static void attempt_clear(struct cl_probe_attempt *a)
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

/* Copies text into out as one printable line, at most MESSAGE_MAX_BYTES ("..." when cut). */
static void copy_line(const char *text, size_t len, char *out, size_t n)
{
	size_t max = n - 1 < MESSAGE_MAX_BYTES ? n - 1 : MESSAGE_MAX_BYTES;
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
static bool error_message(const struct cl_stream_error *e, char *out, size_t n)
{
	if (!e->message || !e->message_len)
		return false;
	if (e->message_raw) {
		copy_line(e->message, e->message_len, out, n);
		return true;
	}
	char quoted[MESSAGE_MAX_BYTES * 6 + 8];
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
		copy_line(json_string_value(v), json_string_length(v), out, n);
	else
		copy_line(e->message, e->message_len, out, n); /* a cut \u escape: as it is */
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
	if (error_message(&e, out, n))
		return true;
	json_t *root = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	json_t *d = json_object_get(root, "detail");
	json_t *msg = json_is_array(d) ? json_object_get(json_array_get(d, 0), "msg") : NULL;
	bool found = json_is_string(msg) && json_string_length(msg) > 0;
	if (found)
		copy_line(json_string_value(msg), json_string_length(msg), out, n);
	json_decref(root);
	return found;
}

void cli_probe_http_error_text(long status, const char *body, size_t len, char *out, size_t n)
{
	char msg[MESSAGE_MAX_BYTES + 8];
	msg[0] = '\0';
	if (body && len && !json_message(body, len, msg, sizeof(msg))) {
		size_t i = 0;
		while (i < len &&
		       (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
			i++;
		/* An HTML error page says nothing a person needs in one line. */
		if (i < len && body[i] != '<' && body[i] != '{') {
			const char *nl = memchr(body + i, '\n', len - i);
			copy_line(body + i, nl ? (size_t)(nl - body - i) : len - i, msg,
				  sizeof(msg));
		}
	}
	if (msg[0])
		snprintf(out, n, "HTTP %ld \"%s\"", status, msg);
	else
		snprintf(out, n, "HTTP %ld", status);
}

/* ---- connection setup -------------------------------------------------------------------- */

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

/* Sets one option of a request; a refusal is a fatal attempt naming the option. */
#define SETOPT(a, e, opt, val)                                                                     \
	do {                                                                                       \
		CURLcode c_ = curl_easy_setopt(e, opt, val);                                       \
		if (c_ != CURLE_OK) {                                                              \
			set_error(a, CL_PROBE_FATAL, "cannot set %s: %s", #opt,                    \
				  curl_easy_strerror(c_));                                         \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

/*
 * Everything a request shares, from the target (as the engine sends it: URL, headers, TLS,
 * HTTP version and connection use), plus the probe's cancel callback; the handle keeps its
 * connections across resets.  The reset before every request also clears libcurl's count of
 * re-sends on dead reused connections, which 7.88 otherwise carries from one transfer to the
 * next (see agent/engine/request.c): against a server that closes after every answer the
 * probe's re-sends never add up.  -1 with a filled attempt when an option is refused.
 */
static int setup(struct cl_probe_http *h, CURL *e, enum cl_http_endpoint ep, int64_t timeout_us,
		 struct curl_slist *headers, struct cl_probe_attempt *a)
{
	curl_easy_reset(e);
	h->errbuf[0] = '\0';
	struct cl_err err = { 0 };
	if (cl_http_target_apply(&h->http, e, ep, timeout_us, headers, &err) != 0) {
		set_error(a, CL_PROBE_FATAL, "%s", err.msg);
		return -1;
	}
	SETOPT(a, e, CURLOPT_ERRORBUFFER, h->errbuf);
	SETOPT(a, e, CURLOPT_NOPROGRESS, 0L);
	SETOPT(a, e, CURLOPT_XFERINFOFUNCTION, on_xferinfo);
	SETOPT(a, e, CURLOPT_XFERINFODATA, h);
	return 0;
}

/* Classifies a failed transfer (no HTTP status to go by). */
static void transfer_failure(struct cl_probe_http *h, CURL *e, CURLcode rc, int64_t timeout_us,
			     const char *what, struct cl_probe_attempt *a)
{
	char d[32];
	long os_errno = 0;
	const char *detail = h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc);
	switch (rc) {
	case CURLE_ABORTED_BY_CALLBACK:
		if (h->cancel && *h->cancel) {
			set_error(a, CL_PROBE_CANCELLED, "cancelled");
			return;
		}
		break;
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
		if (os_errno == ECONNREFUSED)
			set_error(a, CL_PROBE_RETRY, "connection refused");
		else
			set_error(a, CL_PROBE_RETRY, "cannot connect: %s", detail);
		return;
	case CURLE_OPERATION_TIMEDOUT:
		set_error(a, CL_PROBE_RETRY, "%stimed out after %s", what,
			  cl_format_duration_us(timeout_us, CL_DURATION_TENTHS, d, sizeof(d)));
		return;
	case CURLE_COULDNT_RESOLVE_HOST:
		set_error(a, CL_PROBE_RETRY, "cannot resolve host: %s", detail);
		return;
	case CURLE_GOT_NOTHING:
		set_error(a, CL_PROBE_RETRY, "empty reply from server");
		return;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		set_error(a, CL_PROBE_FATAL, "unusable URL '%s': %s", h->target->base_url, detail);
		return;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
		set_error(a, CL_PROBE_FATAL, "TLS: %s", detail);
		return;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		set_error(a, CL_PROBE_RETRY, "connection lost: %s", detail);
		return;
	default:
		break;
	}
	set_error(a, CL_PROBE_RETRY, "%s", detail);
}

/* 4xx answers that no amount of waiting fixes: the request or its credentials are wrong. */
static bool fatal_status(long status)
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

static void http_failure(struct cl_probe_http *h, long status, const struct cl_buf *body,
			 const char *hint404, struct cl_probe_attempt *a)
{
	char text[sizeof(a->error)];
	cli_probe_http_error_text(status, body->data, body->len, text, sizeof(text));
	a->http_status = status;
	if (status >= 300 && status < 400) {
		/* Redirects are not followed (a POST would lose its body): the URL is wrong. */
		char *loc = NULL;
		curl_easy_getinfo(h->easy, CURLINFO_REDIRECT_URL, &loc);
		set_error(a, CL_PROBE_FATAL, "HTTP %ld redirect to '%s' (use that URL)", status,
			  loc ? loc : "?");
		return;
	}
	if (!fatal_status(status)) {
		set_error(a, CL_PROBE_RETRY, "%s", text);
		return;
	}
	const char *hint = "";
	if ((status == 401 || status == 403) && !h->has_key)
		hint = " (no API key sent: set target.api_key_env / --api-key-env)";
	else if (status == 404)
		hint = hint404;
	set_error(a, CL_PROBE_FATAL, "%s%s", text, hint);
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
	if (setup(&h1, e, CL_HTTP_MODELS, timeout_us, h->models_headers, &scratch) == 0 &&
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
static bool h2_refused(struct cl_probe_http *h, CURL *e, CURLcode rc, int64_t timeout_us,
		       bool first, struct cl_probe_attempt *a)
{
	if (!h->http.ver.h2_required)
		return false;
	if (rc == CURLE_OK) {
		if (cl_httpver_used(e) != 1)
			return false;
		set_error(a, CL_PROBE_FATAL,
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
	set_error(a, CL_PROBE_FATAL,
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
	if (setup(h, e, CL_HTTP_BASE, timeout_us, NULL, a) != 0)
		return -1;
	SETOPT(a, e, CURLOPT_CONNECT_ONLY, 1L);
	return 0;
}

void cli_probe_http_connect(struct cl_probe_http *h, int64_t timeout_us, struct cl_probe_attempt *a)
{
	attempt_clear(a);
	/* A connect-only handle of its own: curl never reuses such a connection for requests. */
	CURL *e = curl_easy_init();
	if (!e) {
		set_error(a, CL_PROBE_RETRY, "out of memory");
		return;
	}
	if (connect_opts(h, e, timeout_us, a) == 0) {
		CURLcode rc = curl_easy_perform(e);
		if (rc == CURLE_OK)
			a->outcome = CL_PROBE_OK;
		else
			transfer_failure(h, e, rc, timeout_us, "connect ", a);
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
		set_error(a, CL_PROBE_FATAL,
			  "answer is not an OpenAI model list (is the URL right? it usually ends "
			  "in /v1)");
		goto out;
	}
	size_t i, n = json_array_size(data);
	json_t *m;
	if (n == 0) {
		set_error(a, CL_PROBE_RETRY, "no models listed yet");
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
		set_error(a, CL_PROBE_FATAL, "no model listed has an 'id'");
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
	set_error(a, CL_PROBE_FATAL, "model '%s' is not listed; the server lists %s", want,
		  list.data ? list.data : "nothing usable");
	cl_buf_free(&list);
out:
	json_decref(root);
}

static int models_opts(struct cl_probe_http *h, struct capture *cap, int64_t timeout_us,
		       struct cl_probe_attempt *a)
{
	if (setup(h, h->easy, CL_HTTP_MODELS, timeout_us, h->models_headers, a) != 0)
		return -1;
	SETOPT(a, h->easy, CURLOPT_HTTPGET, 1L);
	SETOPT(a, h->easy, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(a, h->easy, CURLOPT_WRITEDATA, cap);
	return 0;
}

void cli_probe_http_models(struct cl_probe_http *h, const char *want_model, int64_t timeout_us,
			   struct cl_probe_attempt *a)
{
	attempt_clear(a);
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
		set_error(a, CL_PROBE_FATAL, "answer is larger than %u MiB",
			  CL_PROBE_MODELS_MAX_BYTES >> 20);
	else if (h2_refused(h, h->easy, rc, timeout_us, true, a))
		; /* a is set */
	else if (rc != CURLE_OK)
		transfer_failure(h, h->easy, rc, timeout_us, "", a);
	else if (status != 200)
		http_failure(h, status, &body, " (is the URL right? it usually ends in /v1)", a);
	else
		read_models(&body, want_model, a);
out:
	cl_buf_free(&body);
}

/* State of one streamed generation. */
struct gen {
	struct cl_probe_http *h;
	struct cl_sse_parser sse;
	struct cl_buf errbody; /* a non-200 answer's body, for its message */
	struct cl_buf whole;   /* embeddings: the whole answer (one JSON document) */
	struct cl_buf form;    /* transcription: the form rendered from the body's description */
	long status;
	bool status_known;
	bool framed; /* the body can end by itself (chunked, Content-Length, HTTP/2) */
	size_t events;
	bool token, done, finish, malformed, stream_error;
	bool config_error;      /* the stream's error is one waiting cannot fix */
	bool not_a_stream;      /* the body was one JSON document, no error */
	bool ended_at_done;     /* the probe ended the transfer at [DONE] (see on_event) */
	int64_t first_token_us; /* monotonic */
	int64_t done_us;        /* monotonic, when [DONE] arrived */
	char problem[300];      /* malformed chunk / stream error text */
};

enum { STOP_BAD = 1, STOP_AT_DONE = 2 };

/* Whether the answer's body is framed, so that it can end without the connection closing:
 * HTTP/2 or later, a Content-Length, or chunked transfer encoding. */
static bool body_framed(CURL *e)
{
	long version = 0;
	curl_off_t length = -1;
	struct curl_header *te = NULL;
	curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
	curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
	if (version >= CURL_HTTP_VERSION_2_0 || length >= 0)
		return true;
	if (curl_easy_header(e, "Transfer-Encoding", 0, CURLH_HEADER, -1, &te) != CURLHE_OK)
		return false;
	for (const char *v = te->value; *v; v++)
		if (strncasecmp(v, "chunked", 7) == 0)
			return true;
	return false;
}

/* A failure the server reports with this code or kind is one of the request itself (too long
 * for its context, invalid, an unknown model): every retry gets the same answer.  429, 5xx
 * and "Loading model" (503) are the server's state, and pass. */
static bool config_failure(int code, const char *type, size_t type_len)
{
	static const char *const kinds[] = {
		"invalid_request_error",     "validation",       "not_found_error",
		"exceed_context_size_error", "BadRequestError",  "NotFoundError",
		"authentication_error",      "permission_error",
	};
	if (code)
		return fatal_status(code);
	for (size_t i = 0; type && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (type_len == strlen(kinds[i]) && memcmp(type, kinds[i], type_len) == 0)
			return true;
	return false;
}

/* The server said the generation failed (in any dialect, stream/event.h): its words, its
 * code, and whether waiting can fix it. */
static void stream_error(struct gen *g, const char *data, size_t len, const struct cl_chunk *ch)
{
	struct cl_stream_error e;
	char msg[MESSAGE_MAX_BYTES + 8], code[24] = "";
	cl_stream_error_read(data, len, &e);
	if (!error_message(&e, msg, sizeof(msg)))
		copy_line(data, len, msg, sizeof(msg));
	if (ch->error_code)
		snprintf(code, sizeof(code), " (code %d)", ch->error_code);
	snprintf(g->problem, sizeof(g->problem), "error in stream%s: \"%s\"", code, msg);
	g->stream_error = true;
	g->config_error = config_failure(ch->error_code, ch->error_type, ch->error_type_len);
}

static int on_event(void *ctx, const char *data, size_t len, unsigned flags)
{
	struct gen *g = ctx;
	struct cl_chunk ch;
	g->events++;
	if (g->done)
		return 0; /* anything after [DONE] is not ours to judge */
	int rc = cl_event_decode(g->h->http.api, data, len, flags, &ch);
	if (rc != 0) {
		char snippet[64];
		copy_line(data, len < 48 ? len : 48, snippet, sizeof(snippet));
		if (rc == CL_EPROTO && ch.malformed)
			snprintf(g->problem, sizeof(g->problem),
				 "malformed chunk in stream (%s): '%s'", ch.malformed, snippet);
		else
			snprintf(g->problem, sizeof(g->problem), "malformed chunk in stream: '%s'",
				 snippet);
		g->malformed = true;
		g->not_a_stream = rc == CL_EPROTO && ch.malformed &&
				  strcmp(ch.malformed, CL_EVENT_NOT_A_STREAM) == 0;
		return STOP_BAD;
	}
	if (ch.done) {
		g->done = true;
		g->done_us = cl_mono_us();
		/* [DONE] ends the answer.  A body only the connection's close could end may
		 * never end (a server that holds it open): stop here.  A framed one ends in a
		 * moment, or on_gen_progress stops it after a grace. */
		if (!g->framed) {
			g->ended_at_done = true;
			return STOP_AT_DONE;
		}
		return 0;
	}
	if (ch.is_error) {
		stream_error(g, data, len, &ch);
		return STOP_BAD;
	}
	/* A tool call is a generation too: a probe that offers workload.tools may get one. */
	if ((ch.has_content || ch.has_reasoning || ch.has_tool_call) && !g->token) {
		g->token = true;
		g->first_token_us = cl_mono_us();
	}
	if (ch.finish_reason[0])
		g->finish = true;
	return 0;
}

/* Whether the probe's answer is one JSON document: embeddings, and a transcription (the
 * probe's description asks for it unstreamed). */
static bool whole_api(const struct cl_probe_http *h)
{
	return h->http.api == CL_API_EMBEDDINGS || h->http.api == CL_API_TRANSCRIPTION;
}

static size_t on_stream(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct gen *g = ctx;
	size_t n = size * nmemb;
	if (!g->status_known) {
		curl_easy_getinfo(g->h->easy, CURLINFO_RESPONSE_CODE, &g->status);
		g->framed = body_framed(g->h->easy);
		g->status_known = true;
	}
	if (g->status != 200) {
		/* Keep the start of an error body; the rest is read and dropped. */
		size_t room = g->errbody.max - g->errbody.len;
		/* Within the cap only memory can fail: the error is then told without its body,
		 * which is a sample for the message, not the verdict. */
		CL_IGNORE(cl_buf_append(&g->errbody, p, n < room ? n : room));
		return n;
	}
	if (whole_api(g->h)) {
		if (cl_buf_append(&g->whole, p, n) == 0)
			return n;
		snprintf(g->problem, sizeof(g->problem), "%s answer larger than %u MiB",
			 cl_api_name(g->h->http.api), (unsigned)(g->whole.max >> 20));
		g->malformed = true;
		return 0;
	}
	int rc = cl_sse_feed(&g->sse, p, n, on_event, g);
	if (rc == STOP_AT_DONE)
		return 0; /* ends the transfer: the answer is complete */
	if (rc == CL_ETOOBIG) {
		snprintf(g->problem, sizeof(g->problem), "stream event larger than %u KiB",
			 CL_PROBE_EVENT_MAX_BYTES >> 10);
		g->malformed = true;
	}
	return rc ? 0 : n;
}

/* Progress callback of a generation: cancellation, and the end of a framed body that is
 * still open DONE_GRACE_US after [DONE] (called at least about once a second). */
static int on_gen_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			   curl_off_t ulnow)
{
	struct gen *g = ctx;
	if (g->h->cancel && atomic_load(g->h->cancel))
		return 1;
	if (g->done && cl_mono_us() - g->done_us >= DONE_GRACE_US) {
		g->ended_at_done = true;
		return 1;
	}
	return 0;
}

/* Embeddings: judges the whole answer of a 200 (one JSON document, at least one vector).
 * False with the error set when it is not one. */
static bool transcription_answer(struct gen *g, struct cl_probe_attempt *a)
{
	struct cl_transcription t;
	char snippet[64];
	const char *data = g->whole.data ? g->whole.data : "";
	int rc = cl_transcription_decode(data, g->whole.len, true, &t);
	copy_line(data, g->whole.len < 48 ? g->whole.len : 48, snippet, sizeof(snippet));
	struct cl_stream_error se;
	cl_stream_error_read(data, g->whole.len, &se);
	if ((rc == 0 && t.is_error) || (rc == CL_EPROTO && se.is_error)) {
		char msg[MESSAGE_MAX_BYTES + 8], code[24] = "";
		if (!error_message(&se, msg, sizeof(msg)))
			snprintf(msg, sizeof(msg), "%s", snippet);
		if (se.code)
			snprintf(code, sizeof(code), " (code %d)", se.code);
		set_error(a,
			  config_failure(se.code, se.type, se.type_len) ? CL_PROBE_FATAL
									: CL_PROBE_RETRY,
			  "error in the transcription answer%s: \"%s\"", code, msg);
		return false;
	}
	if (rc != 0) {
		set_error(a, CL_PROBE_RETRY, "malformed transcription answer (%s): '%s'",
			  rc == CL_EPROTO && t.malformed ? t.malformed : "not JSON", snippet);
		return false;
	}
	g->token = true;
	g->first_token_us = cl_mono_us();
	return true;
}

static bool whole_answer(struct gen *g, struct cl_probe_attempt *a)
{
	if (g->h->http.api == CL_API_TRANSCRIPTION)
		return transcription_answer(g, a);
	struct cl_embedding e;
	char snippet[64];
	const char *data = g->whole.data ? g->whole.data : "";
	int rc = cl_embedding_decode(data, g->whole.len, &e);
	copy_line(data, g->whole.len < 48 ? g->whole.len : 48, snippet, sizeof(snippet));
	/* A failure in any dialect (the embeddings decoder knows "error" only): the server's
	 * words and code, fatal when waiting cannot fix it, as for a stream. */
	struct cl_stream_error se;
	cl_stream_error_read(data, g->whole.len, &se);
	if ((rc == 0 && e.is_error) || (rc == CL_EPROTO && se.is_error)) {
		char msg[MESSAGE_MAX_BYTES + 8], code[24] = "";
		if (!error_message(&se, msg, sizeof(msg)))
			snprintf(msg, sizeof(msg), "%s", snippet);
		if (se.code)
			snprintf(code, sizeof(code), " (code %d)", se.code);
		set_error(a,
			  config_failure(se.code, se.type, se.type_len) ? CL_PROBE_FATAL
									: CL_PROBE_RETRY,
			  "error in the embeddings answer%s: \"%s\"", code, msg);
		return false;
	}
	if (rc != 0) {
		if (rc == CL_EPROTO && e.malformed)
			set_error(a, CL_PROBE_RETRY, "malformed embeddings answer (%s): '%s'",
				  e.malformed, snippet);
		else
			set_error(a, CL_PROBE_RETRY, "malformed embeddings answer: '%s'", snippet);
		return false;
	}
	if (e.n_data == 0) {
		set_error(a, CL_PROBE_RETRY, "embeddings answer without vectors");
		return false;
	}
	/* No tokens to wait for: the first "token" is the whole answer. */
	g->token = true;
	g->first_token_us = cl_mono_us();
	return true;
}

static int generate_opts(struct cl_probe_http *h, struct gen *g, const char *body_json,
			 int64_t timeout_us, struct cl_probe_attempt *a)
{
	if (setup(h, h->easy, CL_HTTP_CHAT, timeout_us, h->chat_headers, a) != 0)
		return -1;
	const char *post = body_json;
	size_t post_len = strlen(body_json);
	if (h->http.api == CL_API_TRANSCRIPTION) {
		/* The body is a description: the form it asks for is what goes out. */
		uint32_t ms;
		bool stream;
		struct cl_err err = { 0 };
		if (cl_audio_form_render(body_json, post_len, &g->form, &ms, &stream, &err) != 0) {
			set_error(a, CL_PROBE_FATAL, "%s", err.msg);
			return -1;
		}
		post = g->form.data;
		post_len = g->form.len;
	}
	SETOPT(a, h->easy, CURLOPT_POSTFIELDS, post);
	SETOPT(a, h->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)post_len);
	SETOPT(a, h->easy, CURLOPT_WRITEFUNCTION, on_stream);
	SETOPT(a, h->easy, CURLOPT_WRITEDATA, g);
	/* after setup: replaces its cancel-only progress callback */
	SETOPT(a, h->easy, CURLOPT_XFERINFOFUNCTION, on_gen_progress);
	SETOPT(a, h->easy, CURLOPT_XFERINFODATA, g);
	return 0;
}

void cli_probe_http_generate(struct cl_probe_http *h, const char *body_json, int64_t timeout_us,
			     struct cl_probe_attempt *a)
{
	attempt_clear(a);
	struct gen g = { .h = h };
	cl_buf_init(&g.errbody, CL_PROBE_ERRBODY_MAX_BYTES);
	cl_buf_init(&g.whole, 64u << 20);
	cl_buf_init(&g.form, CL_AUDIO_FORM_MAX);
	if (cl_sse_init(&g.sse, CL_PROBE_EVENT_MAX_BYTES) != 0) {
		set_error(a, CL_PROBE_RETRY, "out of memory");
		goto out;
	}
	if (generate_opts(h, &g, body_json, timeout_us, a) != 0)
		goto out;
	int64_t t0 = cl_mono_us();
	CURLcode rc = curl_easy_perform(h->easy);
	int64_t t_end = cl_mono_us();
	long status = 0;
	curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
	a->http_status = status;
	/* Ended by us at [DONE]: the transfer's end is the answer's. */
	if (g.ended_at_done && (rc == CURLE_WRITE_ERROR || rc == CURLE_ABORTED_BY_CALLBACK)) {
		rc = CURLE_OK;
		t_end = g.done_us;
	}
	/* The end of the body: one that was a JSON document is judged now. */
	if (rc == CURLE_OK && status == 200 && !whole_api(h) && !g.done && !g.malformed &&
	    !g.stream_error)
		(void)cl_sse_finish(&g.sse, on_event, &g);
	if (g.stream_error) {
		set_error(a, g.config_error ? CL_PROBE_FATAL : CL_PROBE_RETRY, "%s", g.problem);
		goto out;
	}
	if (g.not_a_stream) {
		/* A server that answers a streamed request with one JSON body will not start
		 * streaming by being asked again. */
		char *ctype = NULL;
		curl_easy_getinfo(h->easy, CURLINFO_CONTENT_TYPE, &ctype);
		set_error(a, CL_PROBE_FATAL,
			  "response is not an event stream (Content-Type: %s): the server sent one "
			  "JSON document",
			  ctype ? ctype : "none");
		goto out;
	}
	if (rc != CURLE_OK && g.malformed) {
		set_error(a, CL_PROBE_RETRY, "%s", g.problem);
		goto out;
	}
	if (h2_refused(h, h->easy, rc, timeout_us, false, a))
		goto out;
	if (rc != CURLE_OK && !(status && status != 200)) {
		transfer_failure(h, h->easy, rc, timeout_us, "", a);
		goto out;
	}
	if (status != 200) {
		char hint[96];
		snprintf(hint, sizeof(hint), " (unknown model, or the URL does not serve %s)",
			 cl_api_path(h->http.api));
		http_failure(h, status, &g.errbody, hint, a);
		goto out;
	}
	if (whole_api(h)) {
		if (!whole_answer(&g, a))
			goto out;
	} else if (!g.token) {
		char *ctype = NULL;
		curl_easy_getinfo(h->easy, CURLINFO_CONTENT_TYPE, &ctype);
		/* A server that answers a streamed request with one JSON body will not start
		 * streaming by being asked again. */
		if (g.events == 0 && ctype && !strstr(ctype, "text/event-stream"))
			set_error(a, CL_PROBE_FATAL,
				  "response is not an event stream (Content-Type: %s)", ctype);
		else
			set_error(a, CL_PROBE_RETRY, "stream ended without tokens");
		goto out;
	}
	if (!whole_api(h) && !g.done && !(g.finish && !cl_sse_pending(&g.sse))) {
		set_error(a, CL_PROBE_RETRY, "stream ended without [DONE]");
		goto out;
	}
	/* "Sent" is when curl had connected and was about to send: the probe's TTFT is then the
	 * server's, like the engine's, not the connection set-up's. */
	curl_off_t pre_us = 0;
	curl_easy_getinfo(h->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us);
	int64_t sent = t0 + (int64_t)pre_us;
	a->ttft_us = g.first_token_us > sent ? g.first_token_us - sent : 0;
	a->total_us = t_end > sent ? t_end - sent : 0;
	a->outcome = CL_PROBE_OK;
out:
	cl_sse_destroy(&g.sse);
	cl_buf_free(&g.form);
	cl_buf_free(&g.errbody);
	cl_buf_free(&g.whole);
}
