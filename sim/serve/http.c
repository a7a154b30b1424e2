/* Minimal HTTP/1.1 request parsing for chatload-sim (see http.h). */
#include "http.h"

#include "chatload/err.h"

#include <string.h>
#include <strings.h>

static int fail(struct cl_sim_http_req *req, int status, const char *msg)
{
	req->error_status = status;
	req->error_msg = msg;
	return status == 431 ? CL_ETOOBIG : CL_EPARSE;
}

/* Finds the end of the line starting at p (the '\n'), or NULL. */
static const char *line_end(const char *p, const char *end)
{
	return memchr(p, '\n', (size_t)(end - p));
}

static bool token_in_list(const char *v, size_t n, const char *token)
{
	size_t tl = strlen(token);
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < n && v[i] != ',')
			i++;
		size_t e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && strncasecmp(v + s, token, tl) == 0)
			return true;
	}
	return false;
}

static void copy_value(char *dst, size_t cap, const char *v, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static int parse_request_line(const char *p, size_t n, struct cl_sim_http_req *req)
{
	const char *sp1 = memchr(p, ' ', n);
	if (!sp1 || sp1 == p || (size_t)(sp1 - p) >= sizeof(req->method))
		return fail(req, 400, "malformed request line");
	memcpy(req->method, p, (size_t)(sp1 - p));
	req->method[sp1 - p] = '\0';
	const char *t = sp1 + 1;
	const char *end = p + n;
	const char *sp2 = memchr(t, ' ', (size_t)(end - t));
	if (!sp2 || sp2 == t)
		return fail(req, 400, "malformed request line");
	const char *ver = sp2 + 1;
	if ((size_t)(end - ver) != 8 || strncmp(ver, "HTTP/1.", 7) != 0)
		return fail(req, (end - ver >= 5 && strncmp(ver, "HTTP/", 5) == 0) ? 505 : 400,
			    "unsupported HTTP version");
	if (ver[7] != '0' && ver[7] != '1')
		return fail(req, 505, "unsupported HTTP version");
	req->version_minor = ver[7] - '0';
	/* absolute-form (proxies): skip scheme and authority */
	if ((size_t)(sp2 - t) > 7 && strncasecmp(t, "http://", 7) == 0) {
		const char *slash = memchr(t + 7, '/', (size_t)(sp2 - t - 7));
		t = slash ? slash : sp2;
	}
	const char *q = memchr(t, '?', (size_t)(sp2 - t));
	const char *pend = q ? q : sp2;
	if (pend == t) {
		strcpy(req->path, "/");
		return 0;
	}
	if (*t != '/')
		return fail(req, 400, "request target must be a path");
	if ((size_t)(pend - t) >= sizeof(req->path))
		return fail(req, 414, "request target too long");
	memcpy(req->path, t, (size_t)(pend - t));
	req->path[pend - t] = '\0';
	return 0;
}

static int parse_header(const char *p, size_t n, struct cl_sim_http_req *req, bool *conn_close,
			bool *conn_keep)
{
	const char *colon = memchr(p, ':', n);
	if (!colon || colon == p)
		return fail(req, 400, "malformed header line");
	size_t nl = (size_t)(colon - p);
	for (size_t i = 0; i < nl; i++)
		if (p[i] == ' ' || p[i] == '\t')
			return fail(req, 400, "whitespace in header name");
	const char *v = colon + 1;
	const char *end = p + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t vn = (size_t)(end - v);

#define IS(name) (nl == sizeof(name) - 1 && strncasecmp(p, name, nl) == 0)
	if (IS("content-length")) {
		uint64_t x = 0;
		if (vn == 0 || vn > 15)
			return fail(req, 400, "invalid content-length");
		for (size_t i = 0; i < vn; i++) {
			if (v[i] < '0' || v[i] > '9')
				return fail(req, 400, "invalid content-length");
			x = x * 10 + (uint64_t)(v[i] - '0');
		}
		if (req->has_length && req->content_length != x)
			return fail(req, 400, "conflicting content-length headers");
		req->has_length = true;
		req->content_length = x;
	} else if (IS("transfer-encoding")) {
		if (vn == 7 && strncasecmp(v, "chunked", 7) == 0)
			req->chunked = true;
		else if (vn != 8 || strncasecmp(v, "identity", 8) != 0)
			return fail(req, 501, "unsupported transfer-encoding");
	} else if (IS("connection")) {
		if (token_in_list(v, vn, "close"))
			*conn_close = true;
		if (token_in_list(v, vn, "keep-alive"))
			*conn_keep = true;
	} else if (IS("expect")) {
		if (vn == 12 && strncasecmp(v, "100-continue", 12) == 0)
			req->expect_continue = true;
	} else if (IS("authorization")) {
		req->has_auth = true;
		req->auth_too_long = vn > CL_SIM_AUTH_MAX;
		copy_value(req->auth, sizeof(req->auth), v, vn);
	} else if (IS("x-api-key")) {
		/* Anthropic's header for the key, which its gateways accept too. */
		req->has_xkey = true;
		req->xkey_too_long = vn > CL_SIM_AUTH_MAX;
		copy_value(req->xkey, sizeof(req->xkey), v, vn);
	} else if (IS("x-request-id")) {
		req->has_request_id = true;
		copy_value(req->request_id, sizeof(req->request_id), v, vn);
	} else if (IS("content-type")) {
		copy_value(req->content_type, sizeof(req->content_type), v, vn);
	} else if (IS("x-chatload-class")) {
		req->has_class = true;
		copy_value(req->cls, sizeof(req->cls), v, vn);
	} else if (IS("x-chatload-conversation")) {
		req->has_conversation = true;
		copy_value(req->conversation, sizeof(req->conversation), v, vn);
	}
#undef IS
	return 0;
}

int cl_sim_http_parse(const char *buf, size_t len, struct cl_sim_http_req *req)
{
	memset(req, 0, sizeof(*req));
	const char *p = buf;
	const char *end = buf + len;
	bool conn_close = false, conn_keep = false;
	bool first = true;
	int rc;

	/* Robustness (RFC 9112 2.2): ignore empty lines before the request line. */
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	for (;;) {
		const char *nl = line_end(p, end);
		if (!nl) {
			if (len > CL_SIM_HTTP_MAX_HEAD)
				return fail(req, 431, "request head too large");
			return 0;
		}
		if ((size_t)(nl + 1 - buf) > CL_SIM_HTTP_MAX_HEAD)
			return fail(req, 431, "request head too large");
		size_t n = (size_t)(nl - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		for (size_t i = 0; i < n; i++)
			if (p[i] == '\0' || p[i] == '\r')
				return fail(req, 400, "control character in request head");
		if (first) {
			if ((rc = parse_request_line(p, n, req)))
				return rc;
			first = false;
		} else if (n == 0) {
			req->head_len = (size_t)(nl + 1 - buf);
			break;
		} else if (*p == ' ' || *p == '\t') {
			return fail(req, 400, "obsolete header line folding");
		} else if ((rc = parse_header(p, n, req, &conn_close, &conn_keep))) {
			return rc;
		}
		p = nl + 1;
	}
	if (req->chunked && req->has_length)
		return fail(req, 400, "both content-length and transfer-encoding");
	req->keep_alive = req->version_minor == 1 ? !conn_close : (conn_keep && !conn_close);
	return 1;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int cl_sim_http_dechunk(const char *buf, size_t len, struct cl_buf *out, size_t *consumed)
{
	size_t i = 0;
	cl_buf_reset(out);
	for (;;) {
		/* chunk-size [; ext] CRLF */
		const char *nl = memchr(buf + i, '\n', len - i);
		if (!nl)
			return (len - i > 4096) ? CL_EPARSE : 0;
		size_t line = (size_t)(nl - (buf + i));
		uint64_t size = 0;
		size_t d = 0;
		while (d < line && hexval(buf[i + d]) >= 0) {
			if (d >= 15)
				return CL_EPARSE;
			size = size * 16 + (uint64_t)hexval(buf[i + d]);
			d++;
		}
		if (d == 0)
			return CL_EPARSE;
		i += line + 1;
		if (size == 0) {
			/* trailers until an empty line */
			for (;;) {
				nl = memchr(buf + i, '\n', len - i);
				if (!nl)
					return (len - i > 4096) ? CL_EPARSE : 0;
				size_t tl = (size_t)(nl - (buf + i));
				i += tl + 1;
				if (tl == 0 || (tl == 1 && buf[i - 2] == '\r')) {
					*consumed = i;
					return 1;
				}
			}
		}
		if (out->max && out->len + size > out->max)
			return CL_ETOOBIG;
		if (len - i < size + 1)
			return 0;
		int rc = cl_buf_append(out, buf + i, (size_t)size);
		if (rc)
			return rc;
		i += (size_t)size;
		if (buf[i] == '\r') {
			if (len - i < 2)
				return 0;
			i++;
		}
		if (buf[i] != '\n')
			return CL_EPARSE;
		i++;
	}
}
