/* The Prometheus text exposition format, decoded line by line into samples (prom.h). */
#include "prom.h"

#include "chatload/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The family a sample belongs to: the last TYPE line's name when the sample's name is it or
 * it with a suffix of its type (_bucket/_sum/_count/_total/_created). */
struct family {
	char name[256];
	enum cl_prom_type type;
};

struct cursor {
	const char *p, *end;
};

static bool is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static void skip_blank(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

/* A metric or label name; returns its length (0: none). */
static size_t take_name(struct cursor *c, const char **start)
{
	*start = c->p;
	if (c->p >= c->end || !is_name_start(*c->p))
		return 0;
	while (c->p < c->end && is_name_char(*c->p))
		c->p++;
	return (size_t)(c->p - *start);
}

const char *cl_prom_type_name(enum cl_prom_type t)
{
	switch (t) {
	case CL_PROM_COUNTER:
		return "counter";
	case CL_PROM_GAUGE:
		return "gauge";
	case CL_PROM_HISTOGRAM:
		return "histogram";
	case CL_PROM_SUMMARY:
		return "summary";
	default:
		return "untyped";
	}
}

/* A float as Go's ParseFloat reads Prometheus values: decimal, exponent, +Inf/-Inf/NaN. */
static int take_float(struct cursor *c, double *out)
{
	char tmp[64];
	size_t n = 0;
	while (c->p + n < c->end && c->p[n] != ' ' && c->p[n] != '\t' && c->p[n] != '}' &&
	       c->p[n] != ',')
		n++;
	if (n == 0 || n >= sizeof(tmp))
		return -1;
	memcpy(tmp, c->p, n);
	tmp[n] = '\0';
	const char *t = tmp + (tmp[0] == '+' || tmp[0] == '-');
	bool neg = tmp[0] == '-';
	if (strcmp(t, "Inf") == 0 || strcmp(t, "inf") == 0 || strcmp(t, "+Inf") == 0) {
		*out = neg ? -INFINITY : INFINITY;
	} else if (strcmp(t, "NaN") == 0 || strcmp(t, "nan") == 0) {
		*out = NAN;
	} else {
		/* strtod would also take hex floats, "infinity" and "nan(…)": only digits, one
		 * point and one exponent are a Prometheus number. */
		for (const char *q = t; *q; q++)
			if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
			      *q == '+' || *q == '-'))
				return -1;
		char *e = NULL;
		*out = strtod(tmp, &e);
		if (e != tmp + n)
			return -1;
	}
	c->p += n;
	return 0;
}

/* Appends `k="v"` (v escaped again) to lab, decoding the quoted value at c.  le is taken
 * out: its value goes to *le. */
static int take_label(struct cursor *c, struct cl_buf *lab, double *le, const char **why)
{
	const char *k;
	size_t kn = take_name(c, &k);
	if (kn == 0)
		return *why = "bad label name", -1;
	skip_blank(c);
	if (c->p >= c->end || *c->p != '=')
		return *why = "label without '='", -1;
	c->p++;
	skip_blank(c);
	if (c->p >= c->end || *c->p != '"')
		return *why = "label value not quoted", -1;
	c->p++;
	char val[256];
	size_t vn = 0;
	for (;;) {
		if (c->p >= c->end)
			return *why = "unterminated label value", -1;
		char ch = *c->p++;
		if (ch == '"')
			break;
		if (ch == '\\') {
			if (c->p >= c->end)
				return *why = "unterminated label value", -1;
			char e = *c->p++;
			ch = e == 'n' ? '\n' : e; /* \\ and \" stand for themselves */
		}
		if (vn + 1 >= sizeof(val))
			return *why = "label value longer than 255 bytes", -1;
		val[vn++] = ch;
	}
	val[vn] = '\0';
	if (kn == 2 && memcmp(k, "le", 2) == 0) {
		struct cursor vc = { val, val + vn };
		if (take_float(&vc, le) != 0 || vc.p != vc.end)
			return *why = "le is not a number", -1;
		return 0;
	}
	int rc = 0;
	if (lab->len)
		rc = cl_buf_append(lab, ",", 1);
	rc = rc ? rc : cl_buf_append(lab, k, kn);
	rc = rc ? rc : cl_buf_append(lab, "=\"", 2);
	for (size_t i = 0; i < vn && rc == 0; i++) {
		if (val[i] == '\\' || val[i] == '"')
			rc = cl_buf_append(lab, "\\", 1);
		rc = rc ? rc
			: (val[i] == '\n' ? cl_buf_append(lab, "\\n", 2)
					  : cl_buf_append(lab, &val[i], 1));
	}
	rc = rc ? rc : cl_buf_append(lab, "\"", 1);
	return rc ? (*why = "labels too long", rc) : 0;
}

static int take_labels(struct cursor *c, struct cl_buf *lab, double *le, const char **why)
{
	c->p++; /* '{' */
	for (;;) {
		skip_blank(c);
		if (c->p < c->end && *c->p == '}') {
			c->p++;
			return 0;
		}
		if (take_label(c, lab, le, why) != 0)
			return -1;
		skip_blank(c);
		if (c->p < c->end && *c->p == ',')
			c->p++;
		else if (c->p >= c->end || *c->p != '}')
			return *why = "expected ',' or '}' after a label", -1;
	}
}

static bool has_suffix_of(const char *name, size_t n, const struct family *f)
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count", "_total", "_created" };
	size_t fn = strlen(f->name);
	if (fn == 0 || n < fn || memcmp(name, f->name, fn) != 0)
		return false;
	if (n == fn)
		return true;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
		if (n - fn == strlen(sfx[i]) && memcmp(name + fn, sfx[i], n - fn) == 0)
			return true;
	return false;
}

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int store(struct cl_prom_page *pg, struct cl_prom_sample *smp)
{
	if (pg->n >= CL_PROM_MAX_SERIES) {
		pg->dropped++;
		return 1;
	}
	if (pg->n == pg->cap) {
		size_t cap = pg->cap ? pg->cap * 2 : 64;
		void *p = realloc(pg->s, cap * sizeof(*pg->s));
		if (!p)
			return CL_ENOMEM;
		pg->s = p;
		pg->cap = cap;
	}
	pg->s[pg->n++] = *smp;
	return 0;
}

static void free_sample(struct cl_prom_sample *s)
{
	free(s->name);
	free(s->family);
	free(s->labels);
	s->name = s->family = s->labels = NULL;
}

/* One sample line.  Returns 0, 1 when malformed (why set), CL_ENOMEM. */
static int sample_line(struct cursor *c, const struct family *fam, struct cl_prom_page *pg,
		       const char **why)
{
	const char *name;
	size_t nn = take_name(c, &name);
	if (nn == 0)
		return *why = "bad metric name", 1;
	struct cl_prom_sample smp = { .le = NAN };
	struct cl_buf lab;
	cl_buf_init(&lab, 16384);
	skip_blank(c);
	if (c->p < c->end && *c->p == '{' && take_labels(c, &lab, &smp.le, why) != 0)
		goto bad;
	skip_blank(c);
	if (take_float(c, &smp.value) != 0) {
		*why = "bad value";
		goto bad;
	}
	skip_blank(c);
	if (c->p < c->end && *c->p != '#') { /* '#': an OpenMetrics exemplar follows */
		double ts;
		if (take_float(c, &ts) != 0 || !(fabs(ts) < 9e18)) {
			*why = "bad timestamp";
			goto bad;
		}
		smp.ts_ms = (int64_t)ts;
		smp.has_ts = true;
	}
	bool in_fam = has_suffix_of(name, nn, fam);
	smp.type = in_fam ? fam->type : CL_PROM_UNTYPED;
	smp.name = dup_n(name, nn);
	smp.family = in_fam ? strdup(fam->name) : dup_n(name, nn);
	smp.labels = lab.data ? cl_buf_steal(&lab) : strdup("");
	if (!smp.name || !smp.family || !smp.labels) {
		free_sample(&smp);
		return CL_ENOMEM;
	}
	int rc = store(pg, &smp);
	if (rc != 0)
		free_sample(&smp);
	return rc < 0 ? rc : 0;
bad:
	cl_buf_free(&lab);
	return 1;
}

/* "# TYPE name type" sets the family; HELP and other comments are skipped. */
static void comment_line(struct cursor *c, struct family *fam)
{
	c->p++;
	skip_blank(c);
	if (c->end - c->p < 5 || memcmp(c->p, "TYPE", 4) != 0 ||
	    (c->p[4] != ' ' && c->p[4] != '\t'))
		return;
	c->p += 4;
	skip_blank(c);
	const char *n;
	size_t nn = take_name(c, &n);
	skip_blank(c);
	static const char *const names[] = { "untyped", "counter", "gauge", "histogram",
					     "summary" };
	size_t tn = (size_t)(c->end - c->p);
	while (tn > 0 && (c->p[tn - 1] == ' ' || c->p[tn - 1] == '\t'))
		tn--;
	fam->name[0] = '\0';
	if (nn == 0 || nn >= sizeof(fam->name))
		return;
	fam->type = CL_PROM_UNTYPED;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (tn == strlen(names[i]) && memcmp(c->p, names[i], tn) == 0)
			fam->type = (enum cl_prom_type)i;
	memcpy(fam->name, n, nn);
	fam->name[nn] = '\0';
}

int cl_prom_parse(const char *text, size_t len, struct cl_prom_page *pg, struct cl_err *err)
{
	if (len > CL_PROM_MAX_PAGE)
		return cl_err_set(err, CL_ETOOBIG, "metrics page of %zu bytes exceeds %u", len,
				  CL_PROM_MAX_PAGE);
	struct family fam = { .name = "" };
	const char *p = text, *end = text + len;
	size_t line_no = 0;
	while (p < end) {
		line_no++;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct cursor c = { p, le };
		if (c.end > c.p && c.end[-1] == '\r')
			c.end--;
		p = nl ? nl + 1 : end;
		skip_blank(&c);
		if (c.p == c.end)
			continue;
		if (*c.p == '#') {
			comment_line(&c, &fam);
			continue;
		}
		const char *why = "line too long";
		int rc =
		    (size_t)(c.end - c.p) > CL_PROM_MAX_LINE ? 1 : sample_line(&c, &fam, pg, &why);
		if (rc < 0)
			return cl_err_set(err, rc, "out of memory reading a metrics page");
		if (rc > 0 && pg->bad_lines++ == 0)
			snprintf(pg->first_bad, sizeof(pg->first_bad), "line %zu: %s", line_no,
				 why);
	}
	return 0;
}

void cl_prom_page_free(struct cl_prom_page *pg)
{
	if (!pg)
		return;
	for (size_t i = 0; i < pg->n; i++)
		free_sample(&pg->s[i]);
	free(pg->s);
	memset(pg, 0, sizeof(*pg));
}
