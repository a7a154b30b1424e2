/* A generate job's input, an OpenAI Batch file, read in two streaming passes: the checking
 * pass before anything is sent (every bad line named by file:line:col) and the sending pass,
 * which reads as the leases need it.  Neither holds the file: one line at a time. */
#include "coordinator/generate/batch.h"

#include <jansson.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The column (1-based) where key first appears in the line, for messages; 1 when not found. */
static int col_of(const char *line, const char *key)
{
	char pat[40];
	snprintf(pat, sizeof(pat), "\"%s\"", key);
	const char *p = strstr(line, pat);
	return p ? (int)(p - line) + 1 : 1;
}

/* Reads the next line into *buf (NUL-terminated, newline cut): its length, -1 at the end,
 * CL_ETOOBIG past CL_GEN_MAX_LINE (the rest of the line is skipped), CL_EIO. */
static long read_line(FILE *f, char **buf, size_t *cap)
{
	errno = 0;
	ssize_t n = getline(buf, cap, f);
	if (n < 0)
		return ferror(f) ? CL_EIO : -1;
	if (n > 0 && (*buf)[n - 1] == '\n')
		(*buf)[--n] = '\0';
	if (n > 0 && (*buf)[n - 1] == '\r')
		(*buf)[--n] = '\0';
	if ((size_t)n > CL_GEN_MAX_LINE)
		return CL_ETOOBIG;
	return (long)n;
}

static bool blank(const char *s)
{
	for (; *s; s++)
		if (*s != ' ' && *s != '\t')
			return false;
	return true;
}

/*
 * Checks one line; on success *root is the parsed line (the caller decrefs) and *id its
 * custom_id (inside root).  On failure err says "path:line:col: what" (CL_EINVAL) and *id is
 * the custom_id when one could be read (else NULL).
 */
static int check_line(const char *path, uint64_t line_no, const char *line, size_t len,
		      json_t **root, const char **id, struct cl_err *err)
{
	json_error_t je;
	*id = NULL;
	*root = NULL;
	/* jansson stops reading at a NUL byte inside a number and accepts the line; the body
	 * would then be sent cut short (fuzz_batch found it) */
	const char *nul = memchr(line, '\0', len);
	if (nul)
		return cl_err_setpos(err, CL_EINVAL, path, (int)line_no, (int)(nul - line) + 1,
				     "not a JSON line: a NUL byte");
	*root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!*root)
		return cl_err_setpos(err, CL_EINVAL, path, (int)line_no,
				     je.column > 0 ? je.column : 1, "not a JSON line: %s", je.text);
	if (!json_is_object(*root))
		return cl_err_setpos(err, CL_EINVAL, path, (int)line_no, 1,
				     "a Batch line must be a JSON object "
				     "{\"custom_id\", \"method\", \"url\", \"body\"}");
	json_t *cid = json_object_get(*root, "custom_id");
	if (!json_is_string(cid))
		return cl_err_setpos(
		    err, CL_EINVAL, path, (int)line_no, cid ? col_of(line, "custom_id") : 1,
		    cid ? "field 'custom_id' must be a string" : "field 'custom_id' is missing");
	const char *s = json_string_value(cid);
	size_t sl = json_string_length(cid);
	if (sl == 0 || sl > CL_GEN_MAX_ID)
		return cl_err_setpos(err, CL_EINVAL, path, (int)line_no, col_of(line, "custom_id"),
				     "field 'custom_id' must be 1 to %u bytes long (it is %zu)",
				     CL_GEN_MAX_ID, sl);
	for (size_t i = 0; i < sl; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return cl_err_setpos(err, CL_EINVAL, path, (int)line_no,
					     col_of(line, "custom_id"),
					     "field 'custom_id' contains a control character "
					     "(it is sent as the X-Request-Id header)");
	}
	*id = s;
	json_t *method = json_object_get(*root, "method");
	if (method && (!json_is_string(method) || strcmp(json_string_value(method), "POST") != 0))
		return cl_err_setpos(err, CL_EINVAL, path, (int)line_no, col_of(line, "method"),
				     "field 'method' must be \"POST\"");
	json_t *url = json_object_get(*root, "url");
	if (!json_is_string(url))
		return cl_err_setpos(
		    err, CL_EINVAL, path, (int)line_no, url ? col_of(line, "url") : 1,
		    url ? "field 'url' must be a string" : "field 'url' is missing");
	if (strcmp(json_string_value(url), CL_GEN_URL) != 0)
		return cl_err_setpos(err, CL_EINVAL, path, (int)line_no, col_of(line, "url"),
				     "field 'url' is '%.100s': chatload sends %s only",
				     json_string_value(url), CL_GEN_URL);
	json_t *body = json_object_get(*root, "body");
	if (!json_is_object(body))
		return cl_err_setpos(err, CL_EINVAL, path, (int)line_no,
				     body ? col_of(line, "body") : 1,
				     body ? "field 'body' must be a JSON object (the request)"
					  : "field 'body' is missing");
	return 0;
}

int cl_gen_scan(const char *path, const struct cl_gen_idset *present, bool skip_invalid,
		struct cl_gen_out *out, struct cl_gen_idset *seen, struct cl_gen_lineset *send,
		struct cl_gen_scan *scan, struct cl_err *err)
{
	memset(scan, 0, sizeof(*scan));
	FILE *f = fopen(path, "r");
	if (!f)
		return cl_err_set(err, CL_EIO, "cannot open generate.input '%s': %s", path,
				  strerror(errno));
	char *buf = NULL;
	size_t cap = 0;
	uint64_t line_no = 0;
	int rc = 0;
	for (;;) {
		long n = read_line(f, &buf, &cap);
		line_no++;
		if (n == -1)
			break;
		if (n == CL_EIO) {
			rc = cl_err_set(err, CL_EIO, "cannot read generate.input '%s': %s", path,
					strerror(errno));
			break;
		}
		struct cl_err lerr = { 0 };
		json_t *root = NULL;
		const char *id = NULL;
		int lrc;
		if (n == CL_ETOOBIG) {
			lrc =
			    cl_err_setpos(&lerr, CL_EINVAL, path, (int)line_no, 1,
					  "the line is longer than %u MiB", CL_GEN_MAX_LINE >> 20);
		} else {
			if (blank(buf))
				continue;
			lrc = check_line(path, line_no, buf, (size_t)n, &root, &id, &lerr);
		}
		scan->lines++;
		if (lrc == 0) {
			size_t il = strlen(id);
			int added = cl_gen_idset_add(seen, id, il);
			if (added < 0) {
				json_decref(root);
				rc = cl_err_set(err, CL_ENOMEM, "out of memory reading '%s'", path);
				break;
			}
			if (added == 0) {
				lrc = cl_err_setpos(&lerr, CL_EINVAL, path, (int)line_no,
						    col_of(buf, "custom_id"),
						    "custom_id '%.200s' is used by an earlier line "
						    "(custom_ids must be unique)",
						    id);
				id =
				    NULL; /* the error line must not name (and so skip) the first */
			} else {
				scan->valid++;
				if (cl_gen_idset_has(present, id, il)) {
					scan->present++;
				} else if (send && cl_gen_lineset_add(send, line_no) != 0) {
					json_decref(root);
					rc = cl_err_set(err, CL_ENOMEM,
							"out of memory reading '%s'", path);
					break;
				}
			}
		}
		if (lrc != 0) {
			scan->invalid++;
			if (!skip_invalid) {
				*err = lerr;
				json_decref(root);
				rc = CL_EINVAL;
				break;
			}
			if (!out) { /* counted only (chatload validate); the first one said */
				if (scan->invalid == 1)
					*err = lerr;
				json_decref(root);
				continue;
			}
			/* Written once: a rerun finds its key ("#line:N", or the custom_id)
			 * among the ids already answered. */
			char key[40];
			int kl =
			    snprintf(key, sizeof(key), "#line:%llu", (unsigned long long)line_no);
			bool there = id ? cl_gen_idset_has(present, id, strlen(id))
					: cl_gen_idset_has(present, key, (size_t)kl);
			char msg[900];
			if (!there &&
			    (rc = cl_gen_out_failure(out, id, 0, NULL, "invalid_input",
						     cl_err_format(&lerr, msg, sizeof(msg)),
						     id ? 0 : line_no, err)) != 0) {
				json_decref(root);
				break;
			}
		}
		json_decref(root);
	}
	scan->to_send = scan->valid - scan->present;
	free(buf);
	fclose(f);
	return rc;
}

int cl_gen_reader_open(struct cl_gen_reader *r, const char *path, struct cl_err *err)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	if (!(r->f = fopen(path, "r")))
		return cl_err_set(err, CL_EIO, "cannot open generate.input '%s': %s", path,
				  strerror(errno));
	return 0;
}

static char *reserialized_body(json_t *body);

/* Past the JSON string starting at p (its opening quote); the text is known valid. */
static const char *skip_string(const char *p)
{
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : p;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* Past the JSON value at p (known valid): a string, a container, or a scalar. */
static const char *skip_value(const char *p)
{
	if (*p == '"')
		return skip_string(p);
	if (*p != '{' && *p != '[') {
		while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
		       *p != '\n' && *p != '\r')
			p++;
		return p;
	}
	int depth = 0;
	for (; *p; p++) {
		if (*p == '"') {
			p = skip_string(p) - 1;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if ((*p == '}' || *p == ']') && --depth == 0) {
			return p + 1;
		}
	}
	return p;
}

/*
 * The body's own text inside line (a JSON object that check_line accepted): its first byte
 * and length, so it can be sent byte for byte as written.  False when its key is written with
 * escapes (then the caller re-serializes it).
 */
static bool body_span(const char *line, const char **at, size_t *len)
{
	const char *p = skip_ws(line);
	if (*p != '{')
		return false;
	p = skip_ws(p + 1);
	while (*p == '"') {
		const char *k = p, *kend = skip_string(p);
		p = skip_ws(kend);
		if (*p != ':')
			return false;
		p = skip_ws(p + 1);
		const char *v = p;
		p = skip_value(p);
		if (kend - k == 6 && memcmp(k, "\"body\"", 6) == 0) {
			*at = v;
			*len = (size_t)(p - v);
			return *v == '{';
		}
		p = skip_ws(p);
		if (*p != ',')
			return false;
		p = skip_ws(p + 1);
	}
	return false;
}

/*
 * The body to send: as written in the line, with "stream":true and
 * "stream_options":{"include_usage":true} put first; a body that says both itself (a
 * dataset's spool, rendered as a benchmark's bodies are) is sent as written.  A body that
 * has stream or stream_options otherwise (or a key written with escapes) is re-serialized
 * with the two set (other stream_options kept), since a JSON object must not carry a key
 * twice.
 */
static char *streamed_body(const char *line, json_t *body)
{
	const char *at;
	size_t len;
	json_t *stream = json_object_get(body, "stream"),
	       *so = json_object_get(body, "stream_options");
	if (json_is_true(stream) && json_is_true(json_object_get(so, "include_usage")) &&
	    body_span(line, &at, &len))
		return strndup(at, len);
	if (!stream && !so && body_span(line, &at, &len)) {
		static const char add[] =
		    "\"stream\":true,\"stream_options\":{\"include_usage\":true}";
		const char *rest = skip_ws(at + 1);
		bool empty = *rest == '}';
		size_t n = 1 + sizeof(add) - 1 + !empty + (len - 1);
		char *out = malloc(n + 1);
		if (!out)
			return NULL;
		size_t o = 0;
		out[o++] = '{';
		memcpy(out + o, add, sizeof(add) - 1);
		o += sizeof(add) - 1;
		if (!empty)
			out[o++] = ',';
		memcpy(out + o, at + 1, len - 1);
		o += len - 1;
		out[o] = '\0';
		return out;
	}
	return reserialized_body(body);
}

/* The body with stream: true and stream_options.include_usage: true set (an include_usage
 * the body had is kept true; other stream_options stay), re-serialized compactly. */
static char *reserialized_body(json_t *body)
{
	json_t *so = json_object_get(body, "stream_options");
	if (!json_is_object(so)) {
		so = json_object();
		if (!so || json_object_set_new(body, "stream_options", so) != 0)
			return NULL;
	}
	if (json_object_set_new(so, "include_usage", json_true()) != 0 ||
	    json_object_set_new(body, "stream", json_true()) != 0)
		return NULL;
	return json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(17));
}

int cl_gen_line_parse(const char *path, uint64_t line_no, const char *line, size_t len,
		      struct cl_gen_line *out, struct cl_err *err)
{
	memset(out, 0, sizeof(*out));
	json_t *root = NULL;
	const char *id = NULL;
	int rc = check_line(path, line_no, line, len, &root, &id, err);
	if (rc == 0) {
		out->line_no = line_no;
		out->id = strdup(id);
		out->body = streamed_body(line, json_object_get(root, "body"));
		if (!out->id || !out->body) {
			cl_gen_line_free(out);
			rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		} else {
			out->body_len = strlen(out->body);
		}
	}
	json_decref(root);
	return rc;
}

int cl_gen_reader_next(struct cl_gen_reader *r, const struct cl_gen_lineset *send,
		       struct cl_gen_line *out, struct cl_err *err)
{
	memset(out, 0, sizeof(*out));
	while (!r->eof) {
		long n = read_line(r->f, &r->buf, &r->cap);
		r->line_no++;
		if (n == -1) {
			r->eof = true;
			break;
		}
		if (n == CL_EIO)
			return cl_err_set(err, CL_EIO, "cannot read generate.input '%s': %s",
					  r->path, strerror(errno));
		if (n == CL_ETOOBIG || blank(r->buf) ||
		    (send && !cl_gen_lineset_has(send, r->line_no)))
			continue;
		struct cl_err lerr = { 0 };
		int prc = cl_gen_line_parse(r->path, r->line_no, r->buf, (size_t)n, out, &lerr);
		if (prc == CL_EINVAL)
			continue; /* reported by the checking pass */
		if (prc != 0)
			return cl_err_set(err, prc, "out of memory reading '%s'", r->path);
		return 1;
	}
	return 0;
}

void cl_gen_reader_close(struct cl_gen_reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

void cl_gen_line_free(struct cl_gen_line *l)
{
	free(l->id);
	free(l->body); /* json_dumps uses malloc (the default allocator) */
	memset(l, 0, sizeof(*l));
}
