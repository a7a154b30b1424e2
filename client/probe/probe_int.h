/* What the readiness probe's phases share (client/probe/probe_http.c, which defines them, and
 * probe_gen.c, the streamed generation): an attempt's outcome set, the server's words as one
 * line, a request's common options, and a failed transfer or HTTP answer classified.
 * Internal to this folder, hence cli_probe_. */
#ifndef CHATLOAD_PROBE_INT_H
#define CHATLOAD_PROBE_INT_H

#include "client/probe/probe_http.h"
#include "client/stream/error.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROBE_MESSAGE_MAX_BYTES 200 /* of a server's message quoted in last_error */

/* Fills a's error from fmt and sets its outcome. */
void cli_probe_set_error(struct cl_probe_attempt *a, enum cl_probe_outcome outcome, const char *fmt,
			 ...) __attribute__((format(printf, 3, 4)));
/* An attempt with nothing measured yet (ttft_us and total_us -1). */
void cli_probe_attempt_clear(struct cl_probe_attempt *a);

/* Copies text into out as one printable line, at most PROBE_MESSAGE_MAX_BYTES ("..." when
 * cut, never inside a UTF-8 character). */
void cli_probe_copy_line(const char *text, size_t len, char *out, size_t n);
/* The message of a failure e read (cl_stream_error_read) as one printable line: unescaped
 * when it came from JSON, as is when it is the text itself.  False when e has none. */
bool cli_probe_error_message(const struct cl_stream_error *e, char *out, size_t n);

/* Sets one option of a request; a refusal is a fatal attempt naming the option (returns -1
 * from the calling function). */
#define PROBE_SETOPT(a, e, opt, val)                                                               \
	do {                                                                                       \
		CURLcode c_ = curl_easy_setopt(e, opt, val);                                       \
		if (c_ != CURLE_OK) {                                                              \
			cli_probe_set_error(a, CL_PROBE_FATAL, "cannot set %s: %s", #opt,          \
					    curl_easy_strerror(c_));                               \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

/*
 * Everything a request shares, from the target (as the engine sends it: URL, headers, TLS,
 * HTTP version and connection use), plus the probe's cancel callback, on the handle e reset
 * first.  -1 with a filled attempt when an option is refused.
 */
int cli_probe_setup(struct cl_probe_http *h, CURL *e, enum cl_http_endpoint ep, int64_t timeout_us,
		    struct curl_slist *headers, struct cl_probe_attempt *a);

/* Classifies a failed transfer (no HTTP status to go by); what prefixes a time-out. */
void cli_probe_transfer_failure(struct cl_probe_http *h, CURL *e, CURLcode rc, int64_t timeout_us,
				const char *what, struct cl_probe_attempt *a);
/* 4xx answers that no amount of waiting fixes: the request or its credentials are wrong. */
bool cli_probe_fatal_status(long status);
/* Classifies an answer that is not 200, with the server's words from body; hint404 follows
 * a 404's text. */
void cli_probe_http_failure(struct cl_probe_http *h, long status, const struct cl_buf *body,
			    const char *hint404, struct cl_probe_attempt *a);
/* With target.http2 required, a transfer that failed at the protocol level or was answered
 * over HTTP/1.x is a configuration error: true (a set to fatal) when rc/e show that.  first:
 * the gate's first HTTP request (/models). */
bool cli_probe_h2_refused(struct cl_probe_http *h, CURL *e, CURLcode rc, int64_t timeout_us,
			  bool first, struct cl_probe_attempt *a);

#endif
