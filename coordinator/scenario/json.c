/* The scenario loader's request bodies: a YAML mapping to JSON object text, types kept as
 * YAML 1.2's core schema reads them (quoted scalars stay strings). */
#include "coordinator/scenario/internal.h"

#include "chatload/units.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* YAML 1.2 core schema: [-+]?[0-9]+, 0o[0-7]+, 0x[0-9a-fA-F]+. */
static bool yaml_int(const char *s, json_int_t *out, bool *range)
{
	int base = 10;
	const char *p = s;
	bool neg = false;
	*range = false;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
		base = s[1] == 'x' ? 16 : 8;
		p = s + 2;
	} else if (*p == '-' || *p == '+') {
		neg = *p == '-';
		p++;
	}
	if (!*p)
		return false;
	unsigned long long v = 0;
	for (; *p; p++) {
		int d = isdigit((unsigned char)*p) ? *p - '0'
			: base == 16 && isxdigit((unsigned char)*p)
			    ? tolower((unsigned char)*p) - 'a' + 10
			    : 99;
		if (d >= base)
			return false;
		if (v > (0x7fffffffffffffffull - (unsigned)d) / (unsigned)base)
			*range = true;
		else
			v = v * (unsigned)base + (unsigned)d;
	}
	if (!*range)
		*out = neg ? -(json_int_t)v : (json_int_t)v;
	return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool yaml_float(const char *s)
{
	const char *p = s;
	if (*p == '-' || *p == '+')
		p++;
	bool digits = false;
	while (isdigit((unsigned char)*p)) {
		p++;
		digits = true;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			p++;
			digits = true;
		}
	}
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return *p == '\0';
}

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++) {
		if (strcmp(s, *list) == 0)
			return true;
	}
	return false;
}

static json_t *scalar_json(struct scn_ctx *c, const struct ynode *v)
{
	static const char *const yes[] = { "true", "True", "TRUE", NULL };
	static const char *const no[] = { "false", "False", "FALSE", NULL };
	static const char *const yaml11[] = { "yes", "Yes", "YES", "no",  "No",  "NO", "on",
					      "On",  "ON",  "off", "Off", "OFF", NULL };
	static const char *const special[] = { ".inf",  ".Inf", ".INF", "-.inf", "-.Inf", "-.INF",
					       "+.inf", ".nan", ".NaN", ".NAN",  NULL };
	if (strlen(v->str) != v->len) {
		cli_scn_error(c, v, "%s must not contain a NUL character", cli_scn_path(c));
		return NULL;
	}
	if (v->quoted) {
		json_t *j = json_stringn(v->str, v->len);
		if (!j)
			cli_scn_error(c, v, "%s is not valid UTF-8 text", cli_scn_path(c));
		return j;
	}
	if (cli_ynode_is_null(v))
		return json_null();
	if (one_of(v->str, yes))
		return json_true();
	if (one_of(v->str, no))
		return json_false();
	if (one_of(v->str, yaml11)) {
		cli_scn_error(c, v,
			      "%s is '%s', which YAML readers disagree on: write true/false for a "
			      "boolean or quote it (\"%s\") for a string",
			      cli_scn_path(c), v->str, v->str);
		return NULL;
	}
	if (one_of(v->str, special)) {
		cli_scn_error(c, v, "%s is '%s', which JSON cannot represent", cli_scn_path(c),
			      v->str);
		return NULL;
	}
	json_int_t i;
	bool range;
	if (yaml_int(v->str, &i, &range)) {
		if (!range)
			return json_integer(i);
		cli_scn_error(c, v, "%s is an integer too large for JSON (beyond 64 bits): '%s'",
			      cli_scn_path(c), v->str);
		return NULL;
	}
	double d;
	if (yaml_float(v->str) && cl_parse_double(v->str, &d) == 0)
		return json_real(d);
	json_t *j = json_stringn(v->str, v->len);
	if (!j)
		cli_scn_error(c, v, "%s is not valid UTF-8 text", cli_scn_path(c));
	return j;
}

static json_t *to_json(struct scn_ctx *c, const struct ynode *v);

struct json_map_arg {
	json_t *obj;
	bool failed;
};

static void json_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v, bool merged,
		      void *argp)
{
	struct json_map_arg *a = argp;
	char got[96];
	if (k->kind != YN_SCALAR || strlen(k->str) != k->len) {
		cli_scn_error(c, k, "keys in %s must be strings, got %s", cli_scn_path(c),
			      cli_scn_describe(k, got, sizeof(got)));
		a->failed = true;
		return;
	}
	if (json_object_get(a->obj, k->str)) {
		if (!merged) {
			cli_scn_error(c, k, "duplicate key '%s' in %s", k->str, cli_scn_path(c));
			a->failed = true;
		}
		return;
	}
	size_t mark = cli_scn_path_key(c, k->str);
	json_t *j = to_json(c, v);
	cli_scn_path_pop(c, mark);
	if (!j || json_object_set_new(a->obj, k->str, j) != 0)
		a->failed = true;
}

static json_t *to_json(struct scn_ctx *c, const struct ynode *v)
{
	if (v->kind == YN_SCALAR)
		return scalar_json(c, v);
	if (v->kind == YN_SEQ) {
		json_t *arr = json_array();
		if (!arr)
			return NULL;
		for (size_t i = 0; i < v->n; i++) {
			size_t mark = cli_scn_path_index(c, i);
			json_t *j = to_json(c, v->kids[i]);
			cli_scn_path_pop(c, mark);
			if (!j || json_array_append_new(arr, j) != 0) {
				json_decref(arr);
				return NULL;
			}
		}
		return arr;
	}
	struct json_map_arg a = { json_object(), false };
	if (!a.obj)
		return NULL;
	cli_scn_map_each(c, v, json_pair, &a);
	if (a.failed) {
		json_decref(a.obj);
		return NULL;
	}
	return a.obj;
}

int cli_scn_get_json(struct scn_ctx *c, const struct ynode *v, char **out)
{
	char got[96];
	if (cli_ynode_is_null(v))
		return 1;
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping of request fields (e.g. { temperature: 0.6 }), "
			      "got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	size_t before = c->n_errors;
	json_t *j = to_json(c, v);
	if (!j) {
		if (c->n_errors == before)
			c->oom = true;
		return -1;
	}
	/* 17 significant digits would print 0.6 as 0.59999999999999998 */
	char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15));
	json_decref(j);
	if (!s) {
		c->oom = true;
		return -1;
	}
	free(*out);
	*out = s;
	return 0;
}

/* Request fields chatload writes itself; a body may not replace them. */
static const struct {
	const char *key;
	const char *why;
} reserved_fields[] = {
	{ "model", "set target.model instead" },
	{ "messages", "prompts come from the workload" },
	{ "prompt", "prompts come from the workload" },
	{ "input", "prompts come from the workload" },
	{ "stream", "chat, completions and responses requests always stream, and rerank, score "
		    "and embeddings never do" },
	{ "query", "the query and documents come from the workload" },
	{ "documents", "the query and documents come from the workload" },
	{ "text_1", "the query and documents come from the workload" },
	{ "text_2", "the query and documents come from the workload" },
	{ "max_tokens", "set max_tokens in the section instead" },
	{ "max_output_tokens", "set max_tokens in the section instead" },
};

static void reserved_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v,
			  bool merged, void *arg)
{
	for (size_t r = 0;
	     k->kind == YN_SCALAR && r < sizeof(reserved_fields) / sizeof(reserved_fields[0]);
	     r++) {
		if (strcmp(k->str, reserved_fields[r].key) == 0)
			cli_scn_error(c, k, "%s.%s is set by chatload (%s)", cli_scn_path(c),
				      k->str, reserved_fields[r].why);
	}
}

int cli_scn_get_body(struct scn_ctx *c, const struct ynode *v, char **out)
{
	cli_scn_map_each(c, v, reserved_pair, NULL);
	return cli_scn_get_json(c, v, out);
}
