/* The error sample of a failed request in words a user acts on: what happened and what to
 * check first, then the detail (the server's body, its in-stream message, libcurl's message),
 * so a sample truncated to its 255 bytes loses detail, never the explanation. */
#include "internal.h"

#include "chatload/units.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Appends to out[n] at *len, truncating. */
static void put(char *out, size_t n, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t n, size_t *len, const char *fmt, ...)
{
	if (*len + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(out + *len, n - *len, fmt, ap);
	va_end(ap);
	if (k > 0)
		*len = *len + (size_t)k < n ? *len + (size_t)k : n - 1;
}

/* What libcurl said: its error buffer, else the text of its code. */
static const char *curl_detail(const struct cl_slot *s, CURLcode res)
{
	return s->errbuf[0] ? s->errbuf : curl_easy_strerror(res);
}

static bool is_protocol_error(CURLcode res)
{
	return res == CURLE_HTTP2 || res == CURLE_HTTP2_STREAM || res == CURLE_WEIRD_SERVER_REPLY ||
	       res == CURLE_UNSUPPORTED_PROTOCOL || res == CURLE_HTTP3;
}

/* "N tokens" received so far, as people say it. */
static const char *tokens_so_far(const struct cl_slot *s, char *buf, size_t n)
{
	if (!s->headers_us)
		snprintf(buf, n, "before any response");
	else if (!s->n_tok_chunks)
		snprintf(buf, n, "after the response headers, before any token");
	else
		snprintf(buf, n, "after %u token chunk%s", s->n_tok_chunks,
			 s->n_tok_chunks == 1 ? "" : "s");
	return buf;
}

static void http_text(const struct cl_slot *s, char *out, size_t n, size_t *len)
{
	int st = s->http_status;
	const char *what =
	    st == 429                ? "the server is rate limiting: lower the load or "
				       "raise its limit"
	    : st == 401 || st == 403 ? "the server refused the request: check the API "
				       "key (target.api_key_env)"
	    : st == 404              ? "not found: check target.url (it normally ends "
				       "in /v1) and target.model"
	    : st >= 400 && st <= 499 ? "the server rejected the request: check "
				       "target.body and the model's limits"
	    : st >= 500 && st <= 599 ? "the server failed: see its logs"
	    : st >= 300 && st <= 399 ? "the server redirected: point target.url at the "
				       "final address (http or https, the /v1 path)"
				     : "unexpected HTTP status";
	put(out, n, len, "HTTP %d, %s", st, what);
	if (s->sample_len)
		put(out, n, len, ": %.*s", (int)s->sample_len, s->sample);
	else
		put(out, n, len, " (empty body)");
}

size_t cli_error_text(const struct cl_slot *s, int cls, CURLcode res, char *out, size_t n)
{
	const struct cl_engine *e = s->w->e;
	size_t len = 0;
	char d[32], so_far[64];
	out[0] = '\0';
	switch (cls) {
	case CL_CTR_ERR_CONNECT:
		if (res == CURLE_OPERATION_TIMEDOUT)
			put(out, n, &len,
			    "no connection within target.connect_timeout (%s): check the host, "
			    "port and any firewall",
			    cl_format_duration_us(e->target.connect_timeout_us, CL_DURATION_MILLIS,
						  d, sizeof(d)));
		else
			put(out, n, &len,
			    "cannot connect to the server: check that it runs and that "
			    "target.url's "
			    "host and port are right");
		put(out, n, &len, ": %s", curl_detail(s, res));
		break;
	case CL_CTR_ERR_TLS:
		put(out, n, &len,
		    "TLS failed: check http:// vs https://, target.ca_file and target.tls_verify: "
		    "%s",
		    curl_detail(s, res));
		break;
	case CL_CTR_ERR_TIMEOUT:
		put(out, n, &len,
		    "no complete answer within workload.request_timeout (%s), %s: the server "
		    "stalled or is slower than that; check it or raise the timeout: %s",
		    cl_format_duration_us(e->workload.request_timeout_us, CL_DURATION_MILLIS, d,
					  sizeof(d)),
		    tokens_so_far(s, so_far, sizeof(so_far)), curl_detail(s, res));
		break;
	case CL_CTR_ERR_STREAM_INCOMPLETE:
		if (!s->headers_us)
			put(out, n, &len,
			    "the server closed the connection without answering: %s: %s",
			    e->target.http2 ? "with target.http2: true it must speak HTTP/2 (set "
					      "it to false for HTTP/1.1), else check its logs"
					    : "check its logs (a crash, or a proxy cutting "
					      "connections)",
			    curl_detail(s, res));
		else if (res == CURLE_OK)
			put(out, n, &len,
			    "the stream ended %s without data: [DONE]: the server closed it early "
			    "(check its logs, a proxy's timeouts)",
			    tokens_so_far(s, so_far, sizeof(so_far)));
		else
			put(out, n, &len,
			    "the connection dropped %s, before data: [DONE]: check the server's "
			    "logs "
			    "and any proxy between: %s",
			    tokens_so_far(s, so_far, sizeof(so_far)), curl_detail(s, res));
		break;
	case CL_CTR_ERR_HTTP_4XX:
	case CL_CTR_ERR_HTTP_429:
	case CL_CTR_ERR_HTTP_5XX:
		http_text(s, out, n, &len);
		break;
	case CL_CTR_ERR_STREAM_ERROR:
		/* The code first: a long message is cut at the sample's size, the code never. */
		if (s->err_code)
			put(out, n, &len, "the server said the request failed (code %d) %s: %.*s",
			    s->err_code, tokens_so_far(s, so_far, sizeof(so_far)),
			    (int)s->sample_len, s->sample);
		else
			put(out, n, &len, "the server said the request failed %s: %.*s",
			    tokens_so_far(s, so_far, sizeof(so_far)), (int)s->sample_len,
			    s->sample);
		break;
	case CL_CTR_ERR_EMPTY_ANSWER:
		put(out, n, &len,
		    "the stream %s without a token, a finish_reason or usage: the server answered "
		    "nothing (check its logs: a request it refused without saying so, a prompt "
		    "it could not take)",
		    s->done_seen ? "ended at data: [DONE]" : "ended");
		break;
	case CL_CTR_ERR_STREAM_MALFORMED:
		/* The offending event itself is the most useful thing to show. */
		put(out, n, &len, "%.*s", (int)s->sample_len, s->sample);
		break;
	default: /* CL_CTR_ERR_OTHER: the exceptions */
		if (s->http_status && (s->http_status < 200 || s->http_status > 299))
			http_text(s, out, n, &len);
		else if (is_protocol_error(res))
			put(out, n, &len,
			    "the server's reply is not HTTP this client can read: %s: %s",
			    e->target.http2 ? "with target.http2: true the server must speak "
					      "HTTP/2 (set it to false for HTTP/1.1)"
					    : "check target.url's scheme and port",
			    curl_detail(s, res));
		else if (s->sample_len)
			put(out, n, &len, "%.*s", (int)s->sample_len, s->sample);
		else
			put(out, n, &len, "the request failed (libcurl error %d): %s", (int)res,
			    curl_detail(s, res));
		break;
	}
	return len;
}
