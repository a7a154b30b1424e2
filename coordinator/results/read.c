/* Reading results documents back: lenient accessors for renderers, and the loader and
 * shape check `report` and `compare` run on files that may be old, edited or hostile. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"

#include "chatload/buf.h"
#include "chatload/units.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const json_t *cl_results_get(const json_t *o, const char *path)
{
	char key[128];
	while (o && path && *path) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);
		if (len >= sizeof(key) || !json_is_object(o))
			return NULL;
		memcpy(key, path, len);
		key[len] = '\0';
		o = json_object_get(o, key);
		path = dot ? dot + 1 : NULL;
	}
	return o;
}

double cl_results_num(const json_t *o, const char *path)
{
	const json_t *v = cl_results_get(o, path);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *cl_results_str(const json_t *o, const char *path, const char *def)
{
	const json_t *v = cl_results_get(o, path);
	return json_is_string(v) ? json_string_value(v) : def;
}

char *cl_results_client_reasons(const json_t *stage, char *buf, size_t n)
{
	size_t i;
	const json_t *why;
	if (n)
		buf[0] = '\0';
	json_array_foreach(cl_results_get(stage, "client.reasons"), i, why)
	{
		size_t len = strlen(buf);
		if (len + 1 >= n)
			break;
		snprintf(buf + len, n - len, "%s%s", len ? ", " : "",
			 json_is_string(why) ? json_string_value(why) : "?");
	}
	return buf;
}

int cl_stage_status_parse(const char *name, enum cl_stage_status *out)
{
	for (int s = 0; name && s < CL_STAGE_N_STATUS; s++) {
		if (strcmp(name, cl_stage_status_name((enum cl_stage_status)s)) == 0) {
			*out = (enum cl_stage_status)s;
			return 0;
		}
	}
	return CL_EINVAL;
}

enum want { W_OBJ, W_ARR, W_STR, W_STR_NULL, W_BOOL, W_INT, W_INT_NULL, W_NUM_NULL };

static const char *want_text(enum want w)
{
	switch (w) {
	case W_OBJ:
		return "an object";
	case W_ARR:
		return "an array";
	case W_STR:
		return "a string";
	case W_STR_NULL:
		return "a string or null";
	case W_BOOL:
		return "true or false";
	case W_INT:
		return "an integer";
	case W_INT_NULL:
		return "an integer or null";
	default:
		return "a number or null";
	}
}

static bool is(const json_t *v, enum want w)
{
	switch (w) {
	case W_OBJ:
		return json_is_object(v);
	case W_ARR:
		return json_is_array(v);
	case W_STR:
		return json_is_string(v);
	case W_STR_NULL:
		return json_is_string(v) || json_is_null(v);
	case W_BOOL:
		return json_is_boolean(v);
	case W_INT:
		return json_is_integer(v);
	case W_INT_NULL:
		return json_is_integer(v) || json_is_null(v);
	default:
		return json_is_number(v) || json_is_null(v);
	}
}

struct field {
	const char *path;
	enum want want;
};

/* What the renderers and compare read from the top of the document ... */
static const struct field top_fields[] = {
	{ "schema", W_STR },         { "chatload_version", W_STR },
	{ "scenario", W_OBJ },       { "scenario.name", W_STR_NULL },
	{ "started_at", W_STR },     { "finished_at", W_STR_NULL },
	{ "complete", W_BOOL },      { "exit_code", W_INT_NULL },
	{ "verdict", W_OBJ },        { "verdict.pass", W_BOOL },
	{ "verdict.checks", W_ARR }, { "verdict.breaches", W_ARR },
	{ "agents", W_ARR },         { "stages", W_ARR },
	{ "estimates", W_ARR },      { "warnings", W_ARR },
};

/* ... and from every stage. */
static const struct field stage_fields[] = {
	{ "index", W_INT },
	{ "name", W_STR },
	{ "status", W_STR },
	{ "mode", W_STR },
	{ "concurrency", W_INT_NULL },
	{ "rate", W_NUM_NULL },
	{ "duration_s", W_NUM_NULL },
	{ "requests", W_OBJ },
	{ "requests.started", W_INT },
	{ "requests.completed", W_INT },
	{ "requests.cut", W_INT },
	{ "requests.errors_total", W_INT },
	{ "requests.error_rate", W_NUM_NULL },
	{ "requests.errors", W_OBJ },
	{ "tokens", W_OBJ },
	{ "tokens.output", W_INT },
	{ "tokens.source", W_STR },
	{ "throughput", W_OBJ },
	{ "throughput.requests_per_s", W_NUM_NULL },
	{ "throughput.output_tokens_per_s", W_NUM_NULL },
	{ "throughput.total_tokens_per_s", W_NUM_NULL },
	{ "throughput.goodput_requests_per_s", W_NUM_NULL },
	{ "latency_ms", W_OBJ },
	{ "client", W_OBJ },
	{ "client.client_bound", W_BOOL },
	{ "intervals", W_ARR },
};

static const char *const summary_keys[] = { "count", "mean", "p50", "p90", "p99", "max" };

static int check_fields(const json_t *o, const struct field *f, size_t n, const char *prefix,
			struct cl_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const json_t *v = cl_results_get(o, f[i].path);
		if (!is(v, f[i].want))
			return cl_err_set(err, CL_EPARSE, "%s%s: %s %s", prefix, f[i].path,
					  v ? "expected" : "missing, expected",
					  want_text(f[i].want));
	}
	return 0;
}

int cl_results_check(const json_t *doc, struct cl_err *err)
{
	if (!json_is_object(doc))
		return cl_err_set(err, CL_EPARSE, "not a results document (expected an object)");
	const char *schema = cl_results_str(doc, "schema", NULL);
	if (!schema ||
	    strncmp(schema, CL_RESULTS_SCHEMA_PREFIX, strlen(CL_RESULTS_SCHEMA_PREFIX)) != 0)
		return cl_err_set(err, CL_EPARSE,
				  "schema: not a chatload results document (expected '%s')",
				  CL_RESULTS_SCHEMA);
	int64_t major;
	if (cl_parse_i64(schema + strlen(CL_RESULTS_SCHEMA_PREFIX), 1, INT32_MAX, &major) != 0 ||
	    major != CL_RESULTS_SCHEMA_MAJOR)
		return cl_err_set(err, CL_EVERSION,
				  "schema: unsupported version '%s' (this chatload reads '%s')",
				  schema, CL_RESULTS_SCHEMA);
	int rc = check_fields(doc, top_fields, sizeof(top_fields) / sizeof(top_fields[0]), "", err);
	if (rc != 0)
		return rc;
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		char prefix[64];
		snprintf(prefix, sizeof(prefix), "stages[%zu].", i);
		if (!json_is_object(s))
			return cl_err_set(err, CL_EPARSE, "stages[%zu]: expected an object", i);
		rc = check_fields(s, stage_fields, sizeof(stage_fields) / sizeof(stage_fields[0]),
				  prefix, err);
		if (rc != 0)
			return rc;
		for (size_t k = 0; k < cli_rj_n_lat_keys; k++) {
			const json_t *l =
			    json_object_get(json_object_get(s, "latency_ms"), cli_rj_lat_keys[k]);
			if (!json_is_object(l))
				return cl_err_set(err, CL_EPARSE, "%slatency_ms.%s: %s", prefix,
						  cli_rj_lat_keys[k],
						  l ? "expected an object" : "missing");
			for (size_t q = 0; q < sizeof(summary_keys) / sizeof(summary_keys[0]);
			     q++) {
				const json_t *v = json_object_get(l, summary_keys[q]);
				if (!is(v, W_NUM_NULL))
					return cl_err_set(err, CL_EPARSE,
							  "%slatency_ms.%s.%s: %s a number or null",
							  prefix, cli_rj_lat_keys[k],
							  summary_keys[q],
							  v ? "expected" : "missing, expected");
			}
		}
	}
	return 0;
}

int cl_results_load(const char *path, json_t **out, struct cl_err *err)
{
	int rc = 0;
	char *joined = NULL;
	struct cl_buf b;
	json_t *doc = NULL;
	*out = NULL;
	cl_buf_init(&b, CL_RESULTS_MAX_FILE_BYTES);
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		joined = cli_rj_path(path, "results.json");
		if (!joined)
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		path = joined;
	}
	rc = cl_buf_read_file(&b, path);
	if (rc == CL_ETOOBIG) {
		cl_err_set(err, rc, "cannot read '%s': larger than %u MiB", path,
			   CL_RESULTS_MAX_FILE_BYTES >> 20);
		goto out;
	}
	if (rc != 0) {
		cl_err_set(err, rc, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	json_error_t je;
	doc = json_loadb(b.data ? b.data : "", b.len, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		rc = cl_err_setpos(err, CL_EPARSE, path, je.line > 0 ? je.line : 0,
				   je.column > 0 ? je.column : 0, "%s", je.text);
		goto out;
	}
	rc = cl_results_check(doc, err);
	if (rc != 0) {
		cl_err_prefix(err, "'%s'", path);
		goto out;
	}
	*out = doc;
	doc = NULL;
out:
	json_decref(doc);
	cl_buf_free(&b);
	free(joined);
	return rc;
}
