/* Small helpers for results.json and the files beside it (results/json_int.h): JSON values
 * from untrusted C text, rounding, atomic file writes, directories, the dump format; and the
 * warnings and stage order of the document (results/internal.h). */
#include "coordinator/results/internal.h"

#include "chatload/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const cli_rj_lat_keys[] = { "queue", "ttfb", "ttft", "ttfc",
					"itl",   "tpot", "e2e",  "e2e_sched" };
const size_t cli_rj_n_lat_keys = sizeof(cli_rj_lat_keys) / sizeof(cli_rj_lat_keys[0]);

/* Same order as enum cl_ctr from CL_CTR_FIRST_ERROR to CL_CTR_LAST_ERROR. */
const char *const cli_rj_err_keys[] = { "connect",
					"tls",
					"http_4xx",
					"http_429",
					"http_5xx",
					"timeout",
					"stream_malformed",
					"stream_incomplete",
					"stream_error",
					"empty_answer",
					"other" };
const size_t cli_rj_n_err_keys = sizeof(cli_rj_err_keys) / sizeof(cli_rj_err_keys[0]);
_Static_assert(sizeof(cli_rj_err_keys) / sizeof(cli_rj_err_keys[0]) ==
		   CL_CTR_LAST_ERROR - CL_CTR_FIRST_ERROR + 1,
	       "cli_rj_err_keys must list every error counter");

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t need;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid. */
	if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need;
}

json_t *cli_rj_strn(const char *s, size_t len)
{
	if (!s)
		return json_null();
	/* Worst case every byte becomes the 3-byte replacement character. */
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	char *clean = malloc(len * 3 + 1);
	if (!clean)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		size_t k = utf8_len((const unsigned char *)s + i, len - i);
		if (k == 0 || (k == 1 && s[i] == '\0')) {
			memcpy(clean + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(clean + o, s + i, k);
			o += k;
			i += k;
		}
	}
	json_t *v = json_stringn(clean, o);
	free(clean);
	return v;
}

json_t *cli_rj_str(const char *s)
{
	return s ? cli_rj_strn(s, strlen(s)) : json_null();
}

json_t *cli_rj_real(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

json_t *cli_rj_uint(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

int cli_rj_set(json_t *obj, const char *key, json_t *v)
{
	if (!v)
		return CL_ENOMEM;
	return json_object_set_new(obj, key, v) == 0 ? 0 : CL_ENOMEM;
}

int cli_rj_append(json_t *arr, json_t *v)
{
	if (!v)
		return CL_ENOMEM;
	return json_array_append_new(arr, v) == 0 ? 0 : CL_ENOMEM;
}

double cli_rj_sig(double x, int digits)
{
	if (!isfinite(x) || x == 0)
		return x;
	char buf[64];
	snprintf(buf, sizeof(buf), "%.*g", digits, x);
	return strtod(buf, NULL);
}

double cli_rj_round(double x, int decimals)
{
	if (!isfinite(x))
		return x;
	char buf[64];
	snprintf(buf, sizeof(buf), "%.*f", decimals, x);
	return strtod(buf, NULL);
}

char *cli_rj_path(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, a);
	p[a] = '/';
	memcpy(p + a + 1, name, b + 1);
	return p;
}

int cli_rj_mkdirs(const char *path, struct cl_err *err)
{
	char buf[4096];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(buf))
		return cl_err_set(err, CL_EINVAL, "invalid results directory '%s'", path);
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char saved = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return cl_err_set(err, CL_EIO, "cannot create directory '%s': %s", buf,
					  strerror(errno));
		buf[i] = saved;
	}
	struct stat st;
	if (stat(path, &st) != 0)
		return cl_err_set(err, CL_EIO, "cannot create directory '%s': %s", path,
				  strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cl_err_set(err, CL_EIO, "cannot create directory '%s': %s", path,
				  strerror(ENOTDIR));
	return 0;
}

int cli_rj_write_atomic(const char *dir, const char *name, int (*fill)(FILE *f, void *ctx),
			void *ctx, struct cl_err *err)
{
	int rc = 0;
	FILE *f = NULL;
	char *final = cli_rj_path(dir, name);
	char tmp[4096];
	if (!final)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	/* Dot-prefixed and pid-stamped: never mistaken for a result, unique per writer. */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", dir, name, (long)getpid()) >=
	    sizeof(tmp)) {
		rc = cl_err_set(err, CL_EINVAL, "results path too long '%s'", final);
		goto out;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = cl_err_set(err, CL_EIO, "cannot write '%s': %s", final, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	rc = fill(f, ctx);
	if (rc != 0) {
		cl_err_set(err, rc, "cannot write '%s': %s", final, cl_strerror(rc));
		goto out;
	}
	if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
		rc = cl_err_set(err, CL_EIO, "cannot write '%s': %s", final, strerror(errno));
		goto out;
	}
	int crc = fclose(f);
	f = NULL;
	if (crc != 0) {
		rc = cl_err_set(err, CL_EIO, "cannot write '%s': %s", final, strerror(errno));
		goto out;
	}
	if (rename(tmp, final) != 0) {
		rc = cl_err_set(err, CL_EIO, "cannot rename '%s' to '%s': %s", tmp, final,
				strerror(errno));
		goto out;
	}
	/* The rename is durable only once the directory entry is on disk. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	if (f)
		fclose(f);
	if (rc != 0)
		unlink(tmp);
	free(final);
	return rc;
}

static bool is_scalar(const json_t *j)
{
	return !json_is_object(j) && !json_is_array(j);
}

/* json_dump_callback's sink for fits_in: counts, and stops the dump past the limit. */
struct fit {
	size_t len, limit;
};

static int count_up_to(const char *buf, size_t size, void *data)
{
	(void)buf;
	struct fit *fit = data;
	fit->len += size;
	return fit->len > fit->limit ? -1 : 0;
}

/* Whether j's one-line JSON is at most limit bytes.  Counted, never built: asked of the
 * document and every container in it, building each would make a transient copy of the
 * whole document per level (MBs for a soak's intervals) at every rewrite of
 * results.json, and the dump stops as soon as it is too long. */
static bool fits_in(const json_t *j, size_t limit)
{
	struct fit fit = { 0, limit };
	return json_dump_callback(j, count_up_to, &fit,
				  JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) == 0 &&
	       fit.len <= limit;
}

/* Whether j is printed on one line: scalars, arrays of scalars or of arrays of scalars
 * (histogram buckets), objects of scalars (a latency summary, an interval), and anything
 * short. */
static bool one_line(const json_t *j, size_t short_len)
{
	if (is_scalar(j))
		return true;
	size_t i;
	const char *k;
	const json_t *v;
	bool flat = true;
	if (json_is_array(j)) {
		json_array_foreach(j, i, v)
		{
			if (is_scalar(v))
				continue;
			size_t q;
			const json_t *w;
			if (!json_is_array(v)) {
				flat = false;
				break;
			}
			json_array_foreach(v, q, w) flat = flat && is_scalar(w);
		}
	} else {
		json_object_foreach((json_t *)j, k, v) flat = flat && is_scalar(v);
	}
	return flat || fits_in(j, short_len);
}

static int emit(const json_t *j, FILE *f, int depth)
{
	const size_t flags = JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15);
	/* Streamed into f, never built as a string: a flat container (a histogram's buckets)
	 * can be long, and a copy per rewrite of results.json is a transient for nothing. */
	if (one_line(j, (size_t)(96 - 2 * depth > 40 ? 96 - 2 * depth : 40)))
		return json_dumpf(j, f, flags) == 0 ? 0 : CL_EIO;
	bool obj = json_is_object(j);
	size_t n = obj ? json_object_size(j) : json_array_size(j), at = 0;
	fputs(obj ? "{\n" : "[\n", f);
	const char *k;
	json_t *v;
	size_t i;
	int rc = 0;
	if (obj) {
		json_object_foreach((json_t *)j, k, v)
		{
			json_t *key = json_string(k);
			if (!key)
				return CL_ENOMEM;
			fprintf(f, "%*s", 2 * (depth + 1), "");
			rc = json_dumpf(key, f, flags) == 0 ? 0 : CL_EIO;
			json_decref(key);
			if (rc != 0)
				return rc;
			fputs(": ", f);
			if ((rc = emit(v, f, depth + 1)) != 0)
				return rc;
			fputs(++at < n ? ",\n" : "\n", f);
		}
	} else {
		json_array_foreach(j, i, v)
		{
			fprintf(f, "%*s", 2 * (depth + 1), "");
			if ((rc = emit(v, f, depth + 1)) != 0)
				return rc;
			fputs(++at < n ? ",\n" : "\n", f);
		}
	}
	fprintf(f, "%*s%c", 2 * depth, "", obj ? '}' : ']');
	return 0;
}

int cli_rj_dump(const json_t *j, FILE *f)
{
	int rc = emit(j, f, 0);
	if (rc == 0 && fputc('\n', f) == EOF)
		rc = CL_EIO;
	return rc == 0 && ferror(f) ? CL_EIO : rc;
}

int cli_rs_insert_stage(json_t *stages, size_t index, json_t *o)
{
	if (!o)
		return CL_ENOMEM;
	size_t at = json_array_size(stages);
	for (size_t k = 0; k < json_array_size(stages); k++) {
		json_int_t idx =
		    json_integer_value(json_object_get(json_array_get(stages, k), "index"));
		if (idx >= 0 && (size_t)idx > index) {
			at = k;
			break;
		}
	}
	return json_array_insert_new(stages, at, o) != 0 ? CL_ENOMEM : 0;
}

int cli_rs_warn(json_t *arr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return cli_rj_append(arr, cli_rj_str(buf));
}
