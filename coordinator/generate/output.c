/* A generate job's output and errors files: opened with a half-written last line repaired and
 * the custom_ids in them read back (what a rerun skips), then appended whole lines at a time
 * in OpenAI's Batch output shape, fsync'd in batches. */
#include "coordinator/generate/batch.h"

#include "chatload/clock.h"
#include "chatload/log.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Cuts whatever follows the last newline of fd (a line a crash left half-written): the bytes
 * cut, or CL_EIO. */
static long long repair(int fd, const char *path, struct cl_err *err)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return cl_err_set(err, CL_EIO, "cannot read '%s': %s", path, strerror(errno));
	off_t end = st.st_size, pos = end;
	char buf[4096];
	while (pos > 0) {
		off_t from = pos > (off_t)sizeof(buf) ? pos - (off_t)sizeof(buf) : 0;
		ssize_t n = pread(fd, buf, (size_t)(pos - from), from);
		if (n != pos - from)
			return cl_err_set(err, CL_EIO, "cannot read '%s': %s", path,
					  n < 0 ? strerror(errno) : "short read");
		for (ssize_t i = n - 1; i >= 0; i--) {
			if (buf[i] == '\n') {
				off_t keep = from + i + 1;
				if (keep == end)
					return 0;
				if (ftruncate(fd, keep) != 0 || fsync(fd) != 0)
					return cl_err_set(err, CL_EIO, "cannot repair '%s': %s",
							  path, strerror(errno));
				return (long long)(end - keep);
			}
		}
		pos = from;
	}
	if (end > 0 && (ftruncate(fd, 0) != 0 || fsync(fd) != 0))
		return cl_err_set(err, CL_EIO, "cannot repair '%s': %s", path, strerror(errno));
	return (long long)end;
}

/* Reads every line's custom_id into done (an error line for a bad input line without one
 * counts as "#line:N").  The number of lines, or a negative code. */
static long long read_ids(const char *path, struct cl_gen_idset *done, struct cl_err *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return cl_err_set(err, CL_EIO, "cannot read '%s': %s", path, strerror(errno));
	char *buf = NULL;
	size_t cap = 0;
	long long lines = 0;
	int rc = 0;
	ssize_t n;
	while ((n = getline(&buf, &cap, f)) > 0) {
		lines++;
		json_error_t je;
		json_t *root = json_loadb(buf, (size_t)n, 0, &je);
		json_t *cid = json_object_get(root, "custom_id");
		char key[40];
		const char *id = NULL;
		size_t il = 0;
		if (json_is_string(cid)) {
			id = json_string_value(cid);
			il = json_string_length(cid);
		} else if (json_is_null(cid) && json_is_integer(json_object_get(root, "line"))) {
			il = (size_t)snprintf(
			    key, sizeof(key), "#line:%lld",
			    (long long)json_integer_value(json_object_get(root, "line")));
			id = key;
		}
		if (!id) {
			rc = cl_err_setpos(err, CL_EINVAL, path, (int)lines, root ? 1 : je.column,
					   "not a Batch output line (no custom_id): is this the "
					   "file a generate job writes?");
		} else if (cl_gen_idset_add(done, id, il) < 0) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory reading '%s'", path);
		}
		json_decref(root);
		if (rc)
			break;
	}
	if (!rc && ferror(f))
		rc = cl_err_set(err, CL_EIO, "cannot read '%s': %s", path, strerror(errno));
	free(buf);
	fclose(f);
	return rc ? rc : lines;
}

static int open_one(const char *path, int *fd, struct cl_gen_idset *done, uint64_t *lines,
		    uint64_t *repaired, struct cl_err *err)
{
	*fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (*fd < 0)
		return cl_err_set(err, CL_EIO, "cannot open '%s': %s", path, strerror(errno));
	long long cut = repair(*fd, path, err);
	if (cut < 0)
		return (int)cut;
	if (cut > 0) {
		CL_WARN(
		    "'%s' ended in a half-written line (%lld bytes, a run stopped while writing "
		    "it): cut off; its request is sent again",
		    path, cut);
		*repaired += (uint64_t)cut;
	}
	long long n = read_ids(path, done, err);
	if (n < 0)
		return (int)n;
	*lines = (uint64_t)n;
	return 0;
}

int cl_gen_out_open(struct cl_gen_out *o, const char *path_out, const char *path_err,
		    struct cl_gen_idset *done, struct cl_err *err)
{
	memset(o, 0, sizeof(*o));
	o->fd_out = o->fd_err = -1;
	o->path_out = path_out;
	o->path_err = path_err;
	o->sync_every_us = 1000000;
	o->last_sync_us = cl_mono_us();
	/* Line ids unique across reruns: the time and pid of this run, then a counter. */
	snprintf(o->id_stem, sizeof(o->id_stem), "%llx%x",
		 (unsigned long long)(cl_wall_us() / 1000000), (unsigned)getpid() & 0xffff);
	int rc = open_one(path_out, &o->fd_out, done, &o->out_lines, &o->repaired_bytes, err);
	if (rc == 0)
		rc = open_one(path_err, &o->fd_err, done, &o->err_lines, &o->repaired_bytes, err);
	return rc;
}

/* Writes text[0..len) (a whole line, its newline included) to fd in one write, retried on a
 * short write. */
static int write_line(struct cl_gen_out *o, int fd, const char *path, const char *text, size_t len,
		      struct cl_err *err)
{
	size_t done = 0;
	int rc = 0;
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = cl_err_set(err, CL_EIO,
					"cannot write '%s': %s (every line before this "
					"one is whole; run the same command again to "
					"finish)",
					path, n < 0 ? strerror(errno) : "nothing written");
			break;
		}
		done += (size_t)n;
	}
	o->dirty = true;
	return rc;
}

/* Appends root as one line to fd. */
static int append(struct cl_gen_out *o, int fd, const char *path, json_t *root, struct cl_err *err)
{
	char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (!text)
		return cl_err_set(err, CL_ENOMEM, "out of memory writing '%s'", path);
	size_t len = strlen(text);
	text[len] = '\n'; /* json_dumps's NUL becomes the newline: one buffer, one write */
	int rc = write_line(o, fd, path, text, len + 1, err);
	free(text);
	return rc;
}

/* A JSON string's text (quoted, escaped), or "null" for NULL; free it.  NULL: no memory. */
static char *json_text(const char *s)
{
	json_t *j = s ? json_string(s) : json_null();
	char *t = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	json_decref(j);
	return t;
}

/*
 * The success line with the body copied as it came, not parsed into a tree and serialized
 * again: the answers are most of a job's bytes, and dumping each one again cost the
 * coordinator as much as parsing it (docs/testing.md, "Generate jobs at scale").  The body
 * has been checked to be one JSON object; a raw newline in it (whitespace between tokens,
 * legal JSON) would split the line, so such a body takes the slow path.  1 when written
 * (or failed: rc in *rc), 0 when the caller must take the slow path.
 */
static int append_verbatim(struct cl_gen_out *o, const char *custom_id, int status,
			   const char *request_id, const char *body, size_t body_len, int *rc,
			   struct cl_err *err)
{
	if (memchr(body, '\n', body_len) || memchr(body, '\r', body_len))
		return 0;
	char *cid = json_text(custom_id), *rid = json_text(request_id);
	size_t cap = body_len + (cid ? strlen(cid) : 0) + (rid ? strlen(rid) : 0) + 160;
	char *line = cid && rid ? malloc(cap) : NULL;
	if (!line) {
		free(cid);
		free(rid);
		*rc = cl_err_set(err, CL_ENOMEM, "out of memory writing '%s'", o->path_out);
		return 1;
	}
	int k = snprintf(line, cap,
			 "{\"id\":\"batch_req_%s%06llx\",\"custom_id\":%s,\"response\":{"
			 "\"status_code\":%d,\"request_id\":%s,\"body\":",
			 o->id_stem, (unsigned long long)++o->seq, cid, status, rid);
	size_t len = (size_t)k;
	memcpy(line + len, body, body_len);
	len += body_len;
	static const char tail[] = "},\"error\":null}\n";
	memcpy(line + len, tail, sizeof(tail) - 1);
	len += sizeof(tail) - 1;
	*rc = write_line(o, o->fd_out, o->path_out, line, len, err);
	free(line);
	free(cid);
	free(rid);
	return 1;
}

static json_t *line_base(struct cl_gen_out *o, const char *custom_id)
{
	char id[64];
	snprintf(id, sizeof(id), "batch_req_%s%06llx", o->id_stem, (unsigned long long)++o->seq);
	return json_pack("{s:s, s:o}", "id", id, "custom_id",
			 custom_id ? json_string(custom_id) : json_null());
}

int cl_gen_out_success(struct cl_gen_out *o, const char *custom_id, int status,
		       const char *request_id, const char *body, struct cl_err *err)
{
	json_error_t je;
	json_t *b = json_loads(body, 0, &je);
	if (!json_is_object(b)) {
		json_decref(b);
		return cl_err_set(err, CL_EINVAL, "the answer to '%.200s' is not a JSON object: %s",
				  custom_id, b ? "another JSON value" : je.text);
	}
	int rc;
	if (append_verbatim(o, custom_id, status, request_id, body, strlen(body), &rc, err)) {
		json_decref(b);
		return rc;
	}
	json_t *root = line_base(o, custom_id);
	json_t *resp = json_pack("{s:i, s:s?, s:o}", "status_code", status, "request_id",
				 request_id, "body", b);
	if (!root || !resp || json_object_set_new(root, "response", resp) != 0 ||
	    json_object_set_new(root, "error", json_null()) != 0) {
		json_decref(root);
		return cl_err_set(err, CL_ENOMEM, "out of memory writing '%s'", o->path_out);
	}
	rc = append(o, o->fd_out, o->path_out, root, err);
	json_decref(root);
	return rc;
}

/* A message as a JSON string: the server's words may be cut inside a UTF-8 sequence (the
 * agent keeps their first bytes) or not be UTF-8 at all, which jansson refuses; the cut
 * sequence is dropped, and failing that every byte above ASCII becomes '?'. */
static json_t *message_json(const char *s)
{
	json_t *j = json_string(s);
	size_t n = strlen(s);
	for (size_t cut = 1; !j && cut <= 3 && cut <= n && (unsigned char)s[n - cut] >= 0x80; cut++)
		j = json_stringn(s, n - cut);
	char *ascii = j ? NULL : strdup(s);
	if (ascii) {
		for (char *p = ascii; *p; p++)
			if ((unsigned char)*p >= 0x80)
				*p = '?';
		j = json_string(ascii);
		free(ascii);
	}
	return j;
}

int cl_gen_out_failure(struct cl_gen_out *o, const char *custom_id, int status,
		       const char *request_id, const char *code, const char *message,
		       uint64_t line_no, struct cl_err *err)
{
	json_t *root = line_base(o, custom_id);
	json_t *resp = status ? json_pack("{s:i, s:s?, s:n}", "status_code", status, "request_id",
					  request_id, "body")
			      : json_null();
	json_t *e = json_pack("{s:s, s:o}", "code", code, "message", message_json(message));
	if (!root || !resp || !e || json_object_set_new(root, "response", resp) != 0 ||
	    json_object_set_new(root, "error", e) != 0 ||
	    (line_no &&
	     json_object_set_new(root, "line", json_integer((json_int_t)line_no)) != 0)) {
		json_decref(root);
		return cl_err_set(err, CL_ENOMEM, "out of memory writing '%s'", o->path_err);
	}
	int rc = append(o, o->fd_err, o->path_err, root, err);
	json_decref(root);
	return rc;
}

int cl_gen_out_sync(struct cl_gen_out *o, bool force, struct cl_err *err)
{
	int64_t now = cl_mono_us();
	if (!o->dirty || (!force && now - o->last_sync_us < o->sync_every_us))
		return 0;
	o->last_sync_us = now;
	o->dirty = false;
	if (o->fd_out >= 0 && fsync(o->fd_out) != 0)
		return cl_err_set(err, CL_EIO, "cannot sync '%s': %s", o->path_out,
				  strerror(errno));
	if (o->fd_err >= 0 && fsync(o->fd_err) != 0)
		return cl_err_set(err, CL_EIO, "cannot sync '%s': %s", o->path_err,
				  strerror(errno));
	return 0;
}

int cl_gen_out_close(struct cl_gen_out *o, struct cl_err *err)
{
	int rc = 0;
	if (o->path_out)
		rc = cl_gen_out_sync(o, true, err);
	if (o->path_out && o->fd_out >= 0)
		close(o->fd_out);
	if (o->path_out && o->fd_err >= 0)
		close(o->fd_err);
	o->fd_out = o->fd_err = -1;
	o->path_out = o->path_err = NULL;
	return rc;
}
