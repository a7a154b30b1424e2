/* The scenario loader's typed readers: YAML nodes to numbers, durations and strings, each
 * error naming the field path and the node's position; unknown keys with suggestions. */
#include "coordinator/scenario/internal.h"

#include "chatload/units.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors and paths ---- */

static void add(struct scn_ctx *c, int line, int col, const char *origin, const char *msg)
{
	if (c->n_errors++ >= SCN_MAX_ERRORS) {
		c->diags->dropped++;
		return;
	}
	struct cl_err e;
	if (origin)
		cl_err_setpos(&e, CL_EINVAL, c->file, 0, 0, "--set %s: %s", origin, msg);
	else
		cl_err_setpos(&e, CL_EINVAL, c->file, line, col, "%s", msg);
	cl_diags_add(c->diags, &e);
}

void cli_scn_error(struct scn_ctx *c, const struct ynode *at, const char *fmt, ...)
{
	char msg[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	add(c, at ? at->line : 0, at ? at->col : 0, at ? at->origin : NULL, msg);
}

void cli_scn_error_pos(struct scn_ctx *c, int line, int col, const char *fmt, ...)
{
	char msg[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	add(c, line, col, NULL, msg);
}

size_t cli_scn_path_key(struct scn_ctx *c, const char *key)
{
	size_t mark = c->path_len;
	size_t room = sizeof(c->path) - c->path_len;
	int n = snprintf(c->path + c->path_len, room, "%s%s", c->path_len ? "." : "", key);
	c->path_len = n < 0               ? c->path_len
		      : (size_t)n >= room ? sizeof(c->path) - 1
					  : c->path_len + (size_t)n;
	return mark;
}

size_t cli_scn_path_index(struct scn_ctx *c, size_t i)
{
	size_t mark = c->path_len;
	size_t room = sizeof(c->path) - c->path_len;
	int n = snprintf(c->path + c->path_len, room, "[%zu]", i);
	c->path_len = n < 0               ? c->path_len
		      : (size_t)n >= room ? sizeof(c->path) - 1
					  : c->path_len + (size_t)n;
	return mark;
}

void cli_scn_path_pop(struct scn_ctx *c, size_t mark)
{
	c->path_len = mark;
	c->path[mark] = '\0';
}

const char *cli_scn_path(const struct scn_ctx *c)
{
	return c->path_len ? c->path : "the scenario";
}

const char *cli_scn_describe(const struct ynode *v, char *buf, size_t n)
{
	if (!v || (v->kind == YN_SCALAR && v->len == 0 && !v->quoted)) {
		snprintf(buf, n, "nothing");
		return buf;
	}
	if (v->kind == YN_MAP) {
		snprintf(buf, n, "a mapping");
		return buf;
	}
	if (v->kind == YN_SEQ) {
		snprintf(buf, n, "a list");
		return buf;
	}
	/* quoted and shortened, with control characters escaped so the message stays one line */
	size_t o = 0;
	bool cut = false;
	if (n < 16) {
		snprintf(buf, n, "a value");
		return buf;
	}
	buf[o++] = '\'';
	for (size_t i = 0; i < v->len; i++) {
		if (o + 4 + 5 > n || i >= 60) { /* room for an escape, "...'" and the NUL */
			cut = true;
			break;
		}
		unsigned char ch = (unsigned char)v->str[i];
		if (ch == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", ch);
		} else {
			buf[o++] = (char)ch;
		}
	}
	if (cut) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

/* ---- mappings, merges and unknown keys ---- */

static bool is_merge_key(const struct ynode *k)
{
	return k->kind == YN_SCALAR && !k->quoted && strcmp(k->str, "<<") == 0;
}

static void each_rec(struct scn_ctx *c, const struct ynode *map, scn_pair_fn fn, void *arg,
		     bool merged, int depth)
{
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		if (!is_merge_key(map->kids[i]))
			fn(c, map->kids[i], map->kids[i + 1], merged, arg);
	}
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		const struct ynode *k = map->kids[i], *v = map->kids[i + 1];
		char got[96];
		if (!is_merge_key(k))
			continue;
		if (depth >= SCN_MAX_MERGE_DEPTH) {
			cli_scn_error(c, k, "'<<' merges are nested more than %d deep",
				      SCN_MAX_MERGE_DEPTH);
			continue;
		}
		if (v->kind == YN_MAP) {
			each_rec(c, v, fn, arg, true, depth + 1);
		} else if (v->kind == YN_SEQ) {
			for (size_t j = 0; j < v->n; j++) {
				if (v->kids[j]->kind == YN_MAP)
					each_rec(c, v->kids[j], fn, arg, true, depth + 1);
				else
					cli_scn_error(
					    c, v->kids[j], "'<<' in %s merges mappings, got %s",
					    cli_scn_path(c),
					    cli_scn_describe(v->kids[j], got, sizeof(got)));
			}
		} else {
			cli_scn_error(
			    c, v,
			    "'<<' in %s takes a mapping (an alias like *defaults) or a list "
			    "of them, got %s",
			    cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		}
	}
}

void cli_scn_map_each(struct scn_ctx *c, const struct ynode *map, scn_pair_fn fn, void *arg)
{
	if (map && map->kind == YN_MAP)
		each_rec(c, map, fn, arg, false, 0);
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return SIZE_MAX;
	size_t d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost =
			    tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			if ((a[i - 1] == '-' && b[j - 1] == '_') ||
			    (a[i - 1] == '_' && b[j - 1] == '-'))
				cost = 0;
			size_t best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < best)
				best = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

const char *cli_scn_suggest(const char *word, const char *const *names, size_t n)
{
	size_t len = strlen(word);
	size_t limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, names[i]);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	/* a long key that merely shares a prefix ("max_tokens" in "max_tokens_total") counts */
	if (best_d <= limit)
		return best;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(names[i]);
		if (l >= 4 && len > l && strncmp(word, names[i], l) == 0)
			return names[i];
	}
	return NULL;
}

void cli_scn_unknown_key(struct scn_ctx *c, const struct ynode *key, const char *const *names,
			 size_t n, const char *hint)
{
	char where[560];
	if (c->n_errors >= SCN_MAX_ERRORS) { /* only counted: spare the suggestion's cost */
		cli_scn_error(c, key, "unknown key");
		return;
	}
	if (c->path_len)
		snprintf(where, sizeof(where), "in %s", c->path);
	else
		snprintf(where, sizeof(where), "at the top level");
	const char *s = cli_scn_suggest(key->str, names, n);
	if (s) {
		cli_scn_error(c, key, "unknown key '%s' %s (did you mean '%s'?)", key->str, where,
			      s);
		return;
	}
	if (hint) {
		cli_scn_error(c, key, "unknown key '%s' %s (it belongs under '%s')", key->str,
			      where, hint);
		return;
	}
	char list[400];
	size_t o = 0;
	list[0] = '\0';
	for (size_t i = 0; i < n && o < sizeof(list) - 1; i++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", names[i]);
	if (o >= sizeof(list))
		o = sizeof(list) - 1;
	cli_scn_error(c, key, "unknown key '%s' %s (expected one of: %s)", key->str, where, list);
}

struct fields_arg {
	const struct scn_field *f;
	size_t nf;
	void *obj;
	const struct ynode **seen;
	const char *(*hint)(const char *key);
};

/* Where a key that is unknown in one section belongs, for "(it belongs under 'workload')". */
static const struct {
	const char *key;
	const char *section;
} misplaced[] = {
	{ "max_tokens", "workload" },
	{ "request_timeout", "workload" },
	{ "prompts", "workload" },
	{ "dataset", "workload" },
	{ "synthetic", "workload" },
	{ "system_prompt", "workload" },
	{ "drain_timeout", "workload" },
	{ "url", "target" },
	{ "model", "target" },
	{ "simulator", "target" },
	{ "api_key_env", "target" },
	{ "headers", "target" },
	{ "body", "target" },
	{ "local", "agents" },
	{ "listen", "agents" },
	{ "workers", "agents" },
	{ "concurrency", "stages" },
	{ "rate", "stages" },
	{ "duration", "stages" },
	{ "ramp", "stages" },
	{ "abort_on_breach", "slo" },
	{ "error_rate", "slo" },
	{ "ttft_p99", "slo" },
	{ "samples", "estimate" },
	{ "formats", "output" },
	{ "dir", "output" },
	{ "ttft", "target.simulator" },
	{ "itl", "target.simulator" },
	{ "output_tokens", "target.simulator" },
	{ "max_batch", "target.simulator" },
};

const char *cli_scn_hint_for(const char *key)
{
	for (size_t i = 0; i < sizeof(misplaced) / sizeof(misplaced[0]); i++) {
		if (strcmp(misplaced[i].key, key) == 0)
			return misplaced[i].section;
	}
	return NULL;
}

static void field_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v, bool merged,
		       void *argp)
{
	struct fields_arg *a = argp;
	char got[96];
	if (k->kind != YN_SCALAR) {
		cli_scn_error(c, k, "keys in %s must be plain names, got %s", cli_scn_path(c),
			      cli_scn_describe(k, got, sizeof(got)));
		return;
	}
	/* "x-..." at the top level is an extension field, a place to keep anchors */
	if (c->path_len == 0 && strncmp(k->str, "x-", 2) == 0)
		return;
	size_t i = 0;
	while (i < a->nf && !(strlen(a->f[i].name) == k->len && strcmp(a->f[i].name, k->str) == 0))
		i++;
	if (i == a->nf) {
		const char *names[64];
		size_t n = 0;
		for (size_t j = 0; j < a->nf && n < 64; j++)
			names[n++] = a->f[j].name;
		cli_scn_unknown_key(c, k, names, n, a->hint ? a->hint(k->str) : NULL);
		return;
	}
	if (a->seen[i]) {
		if (!merged) {
			if (a->seen[i]->line)
				cli_scn_error(c, k,
					      "duplicate key '%s' in %s (first given at line %d)",
					      k->str, cli_scn_path(c), a->seen[i]->line);
			else
				cli_scn_error(c, k, "duplicate key '%s' in %s", k->str,
					      cli_scn_path(c));
		}
		return;
	}
	a->seen[i] = k;
	const struct scn_field *f = &a->f[i];
	void *p = (char *)a->obj + f->off;
	size_t mark = cli_scn_path_key(c, f->name);
	switch (f->type) {
	case SCN_F_STR:
		cli_scn_get_str(c, v, false, p);
		break;
	case SCN_F_NESTR:
		cli_scn_get_str(c, v, true, p);
		break;
	case SCN_F_ENV: {
		char **out = p;
		if (cli_scn_get_str(c, v, true, out) == 0) {
			const char *s = *out;
			bool ok = isalpha((unsigned char)s[0]) || s[0] == '_';
			for (const char *q = s; ok && *q; q++)
				ok = isalnum((unsigned char)*q) || *q == '_';
			if (!ok)
				cli_scn_error(
				    c, v,
				    "%s must name an environment variable (letters, digits "
				    "and '_'), got %s",
				    cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		}
		break;
	}
	case SCN_F_BOOL:
		cli_scn_get_bool(c, v, p);
		break;
	case SCN_F_U32:
		cli_scn_get_u32(c, v, (uint32_t)f->min, (uint32_t)f->max, p);
		break;
	case SCN_F_U64:
		cli_scn_get_u64(c, v, (uint64_t)f->min, (uint64_t)f->max, p);
		break;
	case SCN_F_DUR:
		cli_scn_get_dur(c, v, f->min, f->max, p);
		break;
	case SCN_F_DBL:
		cli_scn_get_double(c, v, f->dmin, f->dmax, p);
		break;
	case SCN_F_JSON:
		cli_scn_get_json(c, v, p);
		break;
	case SCN_F_CUSTOM:
		f->fn(c, v, p);
		break;
	}
	cli_scn_path_pop(c, mark);
}

void cli_scn_fields(struct scn_ctx *c, const struct ynode *map, const struct scn_field *f,
		    size_t nf, void *obj, const struct ynode **seen,
		    const char *(*hint)(const char *key))
{
	char got[96];
	if (!map || cli_ynode_is_null(map))
		return;
	if (map->kind != YN_MAP) {
		cli_scn_error(c, map, "%s must be a mapping of keys, got %s", cli_scn_path(c),
			      cli_scn_describe(map, got, sizeof(got)));
		return;
	}
	struct fields_arg a = { f, nf, obj, seen, hint };
	cli_scn_map_each(c, map, field_pair, &a);
}

/* ---- scalars ---- */

bool cli_scn_scalar(struct scn_ctx *c, const struct ynode *v, const char *what)
{
	char got[96];
	if (!v || v->kind != YN_SCALAR || cli_ynode_is_null(v)) {
		cli_scn_error(c, v, "%s must be %s, got %s", cli_scn_path(c), what,
			      cli_scn_describe(v, got, sizeof(got)));
		return false;
	}
	if (strlen(v->str) != v->len) {
		cli_scn_error(c, v, "%s must not contain a NUL character", cli_scn_path(c));
		return false;
	}
	return true;
}

int cli_scn_get_str(struct scn_ctx *c, const struct ynode *v, bool nonempty, char **out)
{
	if (!nonempty && cli_ynode_is_null(v))
		return 1;
	if (!cli_scn_scalar(c, v, nonempty ? "a non-empty string" : "a string"))
		return -1;
	if (nonempty && v->len == 0) {
		cli_scn_error(c, v, "%s must not be empty", cli_scn_path(c));
		return -1;
	}
	char *s = strdup(v->str);
	if (!s) {
		c->oom = true;
		return -1;
	}
	free(*out);
	*out = s;
	return 0;
}

int cli_scn_get_bool(struct scn_ctx *c, const struct ynode *v, bool *out)
{
	char got[96];
	if (v && v->kind == YN_SCALAR && cl_parse_bool(v->str, out) == 0)
		return 0;
	cli_scn_error(c, v, "%s must be true or false, got %s", cli_scn_path(c),
		      cli_scn_describe(v, got, sizeof(got)));
	return -1;
}

int cli_scn_get_u64(struct scn_ctx *c, const struct ynode *v, uint64_t min, uint64_t max,
		    uint64_t *out)
{
	char got[96];
	const char *kind = min >= 1 ? "a positive integer" : "a non-negative integer";
	if (!cli_scn_scalar(c, v, kind))
		return -1;
	uint64_t x;
	int rc = cl_parse_u64(v->str, max, &x);
	if (rc == CL_ERANGE) {
		cli_scn_error(c, v, "%s must be at most %llu, got %s", cli_scn_path(c),
			      (unsigned long long)max, cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (rc) {
		cli_scn_error(c, v, "%s must be %s, got %s", cli_scn_path(c), kind,
			      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (x < min) {
		if (min == 1)
			cli_scn_error(c, v, "%s must be %s, got %s", cli_scn_path(c), kind,
				      cli_scn_describe(v, got, sizeof(got)));
		else
			cli_scn_error(c, v, "%s must be at least %llu, got %s", cli_scn_path(c),
				      (unsigned long long)min,
				      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	*out = x;
	return 0;
}

int cli_scn_get_u32(struct scn_ctx *c, const struct ynode *v, uint32_t min, uint32_t max,
		    uint32_t *out)
{
	uint64_t x;
	int rc = cli_scn_get_u64(c, v, min, max, &x);
	if (rc == 0)
		*out = (uint32_t)x;
	return rc;
}

int cli_scn_get_dur(struct scn_ctx *c, const struct ynode *v, int64_t min_us, int64_t max_us,
		    int64_t *out)
{
	char got[96], a[32], b[32];
	if (!cli_scn_scalar(c, v, "a duration (e.g. 500ms, 90s, 2m, 1h30m)"))
		return -1;
	int64_t us;
	int rc = cl_parse_duration_us(v->str, &us, NULL);
	if (rc == CL_ERANGE) {
		cli_scn_error(c, v, "%s is too long (at most 100d), got %s", cli_scn_path(c),
			      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (rc) {
		bool digits = v->len > 0;
		for (size_t i = 0; i < v->len; i++)
			digits = digits && (isdigit((unsigned char)v->str[i]) || v->str[i] == '.');
		if (digits)
			cli_scn_error(c, v, "%s needs a unit: write e.g. '%ss' or '%sms', got %s",
				      cli_scn_path(c), v->str, v->str,
				      cli_scn_describe(v, got, sizeof(got)));
		else
			cli_scn_error(
			    c, v, "%s must be a duration such as 500ms, 90s, 2m or 1h30m, got %s",
			    cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (us < min_us) {
		if (min_us <= 1)
			cli_scn_error(c, v, "%s must be longer than 0, got %s", cli_scn_path(c),
				      cli_scn_describe(v, got, sizeof(got)));
		else
			cli_scn_error(
			    c, v, "%s must be at least %s, got %s", cli_scn_path(c),
			    cl_format_duration_us(min_us, CL_DURATION_PRECISE, a, sizeof(a)),
			    cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (max_us > 0 && us > max_us) {
		cli_scn_error(c, v, "%s must be at most %s, got %s", cli_scn_path(c),
			      cl_format_duration_us(max_us, CL_DURATION_PRECISE, b, sizeof(b)),
			      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	*out = us;
	return 0;
}

int cli_scn_get_double(struct scn_ctx *c, const struct ynode *v, double min, double max,
		       double *out)
{
	char got[96];
	if (!cli_scn_scalar(c, v, "a number"))
		return -1;
	double x;
	if (cl_parse_double(v->str, &x) != 0) {
		cli_scn_error(c, v, "%s must be a number, got %s", cli_scn_path(c),
			      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (x < min || x > max) {
		if (min == 0 && max == 1)
			cli_scn_error(c, v, "%s must be a probability between 0 and 1, got %s",
				      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		else if (max >= 1e300)
			cli_scn_error(c, v, "%s must be %s, got %s", cli_scn_path(c),
				      min > 0 ? "a positive number" : "at least 0",
				      cli_scn_describe(v, got, sizeof(got)));
		else
			cli_scn_error(c, v, "%s must be between %g and %g, got %s", cli_scn_path(c),
				      min, max, cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	*out = x;
	return 0;
}

int cli_scn_get_percent(struct scn_ctx *c, const struct ynode *v, double *out)
{
	char got[96];
	if (!cli_scn_scalar(c, v, "a percentage (e.g. 1%)"))
		return -1;
	int rc = cl_parse_percent(v->str, out, NULL);
	if (rc == CL_ERANGE) {
		cli_scn_error(c, v, "%s must be at most 100%%, got %s", cli_scn_path(c),
			      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (rc) {
		cli_scn_error(c, v, "%s must be a percentage such as 1%% or 0.5%%, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	return 0;
}

int cli_scn_get_rate(struct scn_ctx *c, const struct ynode *v, double *out)
{
	char got[96];
	if (!cli_scn_scalar(c, v, "a rate (e.g. 20/s)"))
		return -1;
	if (cl_parse_rate(v->str, out, NULL) != 0) {
		double x;
		if (cl_parse_double(v->str, &x) == 0 && x > 0)
			cli_scn_error(c, v, "%s needs a unit: write '%s/s' (or /m, /h), got %s",
				      cli_scn_path(c), v->str,
				      cli_scn_describe(v, got, sizeof(got)));
		else
			cli_scn_error(c, v,
				      "%s must be a positive rate such as 20/s or 1200/m, got %s",
				      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (*out > 1e6) {
		cli_scn_error(c, v, "%s must be at most 1000000/s, got %s", cli_scn_path(c),
			      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	return 0;
}

int cli_scn_get_enum(struct scn_ctx *c, const struct ynode *v, const char *const *names, size_t n,
		     int *out)
{
	char got[96], list[256];
	size_t o = 0;
	list[0] = '\0';
	for (size_t i = 0; i < n && o < sizeof(list); i++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", names[i]);
	if (v && v->kind == YN_SCALAR) {
		for (size_t i = 0; i < n; i++) {
			if (strcmp(v->str, names[i]) == 0) {
				*out = (int)i;
				return 0;
			}
		}
		const char *s = cli_scn_suggest(v->str, names, n);
		if (s && !cli_ynode_is_null(v)) {
			cli_scn_error(c, v, "%s must be one of %s, got %s (did you mean '%s'?)",
				      cli_scn_path(c), list, cli_scn_describe(v, got, sizeof(got)),
				      s);
			return -1;
		}
	}
	cli_scn_error(c, v, "%s must be one of %s, got %s", cli_scn_path(c), list,
		      cli_scn_describe(v, got, sizeof(got)));
	return -1;
}
