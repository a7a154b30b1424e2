/* The reader of a transcription upload: a multipart/form-data body (RFC 7578) split into its
 * parts by the boundary its Content-Type names, each part's name from its
 * Content-Disposition, and the file part's length in milliseconds from its WAV header. */
#include "sim/api/audio.h"

#include "chatload/audio.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define BOUNDARY_MAX 70 /* RFC 2046: 1..70 characters */

static int fail(char *msg, size_t n, const char **code, const char *c, const char *text)
{
	snprintf(msg, n, "%s", text);
	*code = c;
	return CL_EINVAL;
}

/* The boundary parameter of a multipart/form-data Content-Type into b (NUL-terminated). */
static bool boundary_of(const char *ct, char *b, size_t cap)
{
	if (strncasecmp(ct, "multipart/form-data", 19) != 0)
		return false;
	const char *p = strcasestr(ct, "boundary=");
	if (!p)
		return false;
	p += 9;
	bool quoted = *p == '"';
	p += quoted;
	size_t k = 0;
	while (*p && k + 1 < cap && (quoted ? *p != '"' : (*p != ';' && *p != ' ')))
		b[k++] = *p++;
	b[k] = '\0';
	return k > 0 && k <= BOUNDARY_MAX;
}

/* The value of a header parameter (name="value") within h[0..hn) into out. */
static bool param(const char *h, size_t hn, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i + nl + 2 <= hn; i++) {
		if ((i == 0 || h[i - 1] == ' ' || h[i - 1] == ';') &&
		    strncasecmp(h + i, name, nl) == 0 && h[i + nl] == '=' && h[i + nl + 1] == '"') {
			const char *v = h + i + nl + 2;
			const char *e = memchr(v, '"', hn - (size_t)(v - h));
			if (!e)
				return false;
			size_t l = (size_t)(e - v);
			if (l >= cap)
				l = cap - 1;
			memcpy(out, v, l);
			out[l] = '\0';
			return true;
		}
	}
	return false;
}

/* A text field's value (v, vn bytes) into out, cut to cap - 1 bytes. */
static void text_value(const char *v, size_t vn, char *out, size_t cap)
{
	if (vn >= cap)
		vn = cap - 1;
	memcpy(out, v, vn);
	out[vn] = '\0';
}

int cl_sim_audio_parse(const char *content_type, const char *body, size_t len,
		       struct cl_sim_chat_req *req, char *msg, size_t n, const char **code)
{
	memset(req, 0, sizeof(*req));
	req->api = CL_API_TRANSCRIPTION;
	char b[BOUNDARY_MAX + 1], delim[BOUNDARY_MAX + 5];
	if (!boundary_of(content_type, b, sizeof(b)))
		return fail(msg, n, code, "invalid_request",
			    "Content-Type must be multipart/form-data with a boundary");
	int dl = snprintf(delim, sizeof(delim), "\r\n--%s", b);
	/* The first delimiter has no CRLF before it when the body starts with it. */
	const char *p = body, *end = body + len;
	if ((size_t)(dl - 2) <= len && memcmp(p, delim + 2, (size_t)dl - 2) == 0) {
		p += dl - 2;
	} else {
		const char *at = memmem(p, len, delim, (size_t)dl);
		if (!at)
			return fail(msg, n, code, "invalid_request",
				    "multipart body holds no part of its boundary");
		p = at + dl;
	}
	bool has_file = false, closed = false;
	while (p < end) {
		if (end - p >= 2 && memcmp(p, "--", 2) == 0) {
			closed = true;
			break;
		}
		if (end - p < 2 || memcmp(p, "\r\n", 2) != 0)
			break;
		p += 2;
		const char *head_end = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
		if (!head_end)
			break;
		const char *v = head_end + 4;
		const char *next = memmem(v, (size_t)(end - v), delim, (size_t)dl);
		if (!next)
			break;
		size_t vn = (size_t)(next - v), hn = (size_t)(head_end - p);
		char name[32] = "";
		if (!param(p, hn, "name", name, sizeof(name)))
			return fail(msg, n, code, "invalid_request",
				    "a form part has no Content-Disposition name");
		if (strcmp(name, "file") == 0) {
			uint64_t ms = 0;
			const char *why = NULL;
			if (cl_audio_wav_ms(v, vn, &ms, &why) != 0) {
				snprintf(msg, n, "file: %s", why);
				*code = "invalid_value";
				return CL_EINVAL;
			}
			req->audio_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
			has_file = true;
		} else if (strcmp(name, "model") == 0) {
			req->has_model = true;
			req->model_too_long = vn >= sizeof(req->model);
			text_value(v, vn, req->model, sizeof(req->model));
		} else if (strcmp(name, "stream") == 0) {
			char t[8];
			text_value(v, vn, t, sizeof(t));
			if (strcmp(t, "true") != 0 && strcmp(t, "false") != 0)
				return fail(msg, n, code, "invalid_value",
					    "'stream' must be true or false");
			req->stream = t[0] == 't';
		} else if (strcmp(name, "response_format") == 0) {
			char t[16];
			text_value(v, vn, t, sizeof(t));
			if (strcmp(t, "json") != 0 && strcmp(t, "text") != 0)
				return fail(msg, n, code, "invalid_value",
					    "chatload-sim answers response_format json or text");
		}
		p = next + dl;
	}
	if (!closed)
		return fail(msg, n, code, "invalid_request",
			    "multipart body is cut: no closing boundary");
	if (!has_file)
		return fail(msg, n, code, "invalid_request", "the form has no 'file' part");
	if (req->audio_ms == 0)
		return fail(msg, n, code, "invalid_value", "file: the audio lasts less than 1 ms");
	/* vLLM streams usage when asked; the simulator always ends a stream with it. */
	req->include_usage = req->stream;
	return 0;
}
