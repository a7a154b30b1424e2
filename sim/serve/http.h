/* chatload-sim's minimal HTTP/1.1 request parser: request line, the headers the server
 * uses, and chunked request bodies.  Pure functions over a byte buffer (fuzzable). */
#ifndef CHATLOAD_SIM_HTTP_H
#define CHATLOAD_SIM_HTTP_H

#include "chatload/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_SIM_HTTP_MAX_HEAD  16384 /* request line + headers; 431 beyond */
#define CL_SIM_REQUEST_ID_MAX 128   /* bytes of X-Request-Id kept (longer ones are cut) */
#define CL_SIM_CLASS_MAX      64    /* bytes of X-Chatload-Class kept */
#define CL_SIM_AUTH_MAX       512   /* bytes of Authorization kept (longer: never matches) */

struct cl_sim_http_req {
	char method[16];
	char path[512];    /* without the query string */
	int version_minor; /* HTTP/1.x */
	bool keep_alive;
	bool chunked; /* Transfer-Encoding: chunked */
	bool expect_continue;
	bool has_length;
	uint64_t content_length;
	size_t head_len; /* bytes up to and including the blank line */
	bool has_auth;
	bool auth_too_long;
	char auth[CL_SIM_AUTH_MAX + 1];
	bool has_xkey; /* x-api-key (Anthropic's way to send the key) */
	bool xkey_too_long;
	char xkey[CL_SIM_AUTH_MAX + 1];
	bool has_request_id;
	char request_id[CL_SIM_REQUEST_ID_MAX + 1];
	bool has_conversation;  /* X-Chatload-Conversation: a multi-turn client's conversation */
	char content_type[256]; /* Content-Type ("" when absent; cut at 255 bytes) */
	char conversation[CL_SIM_REQUEST_ID_MAX + 1];
	bool has_class; /* X-Chatload-Class: the request class (workload.classes) it was sent as */
	char cls[CL_SIM_CLASS_MAX + 1];
	int error_status;      /* on failure: the HTTP status to answer (400, 431, 501, 505) */
	const char *error_msg; /* on failure: why, static text */
};

/*
 * Parses the request head at buf[0..len).  Returns 1 when a complete head was parsed
 * (req filled, req->head_len set), 0 when more bytes are needed, or a negative CL_E* code
 * with req->error_status / error_msg saying what to answer (the connection should then be
 * closed: the framing cannot be trusted).  Never reads past len, never allocates.
 */
int cl_sim_http_parse(const char *buf, size_t len, struct cl_sim_http_req *req);

/*
 * Decodes a chunked body at buf[0..len) into out (cleared first; its cap applies).
 * Returns 1 when the terminating chunk and trailers were read (*consumed = bytes used),
 * 0 when more bytes are needed, CL_ETOOBIG past out's cap, CL_EPARSE on bad framing.
 */
int cl_sim_http_dechunk(const char *buf, size_t len, struct cl_buf *out, size_t *consumed);

#endif
