/* The scenario loader's sections: target (with the simulator's settings), agents, readiness,
 * and warmup, each read from its YAML mapping (workload: scenario/workload.c, stages:
 * scenario/stages.c). */
#include "coordinator/scenario/scenario.h"

#include "chatload/assert.h"
#include "chatload/sim_options.h"
#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEC  1000000LL
#define DAY  (86400LL * SEC)
#define N(a) (sizeof(a) / sizeof((a)[0]))

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
	for (size_t i = 0; i < N(misplaced); i++) {
		if (strcmp(misplaced[i].key, key) == 0)
			return misplaced[i].section;
	}
	return NULL;
}

/* ---- target ---- */

/* An http:// or https:// URL with a host and no spaces, into *out (trailing '/' dropped).
 * 0, or -1 after an error naming the field. */
int cli_scn_get_http_url(struct scn_ctx *c, const struct ynode *v, char **out)
{
	char got[96];
	if (cli_scn_get_str(c, v, true, out) != 0)
		return -1;
	const char *u = *out;
	const char *host = NULL;
	if (strncasecmp(u, "http://", 7) == 0)
		host = u + 7;
	else if (strncasecmp(u, "https://", 8) == 0)
		host = u + 8;
	if (!host) {
		cli_scn_error(c, v, "%s must start with http:// or https://, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	if (!*host || *host == '/' || *host == ':') {
		cli_scn_error(c, v, "%s has no host, got %s", cli_scn_path(c),
			      cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	for (const char *p = u; *p; p++) {
		if (isspace((unsigned char)*p) || (unsigned char)*p < 0x20) {
			cli_scn_error(c, v,
				      "%s must not contain spaces or control characters, got %s",
				      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
			return -1;
		}
	}
	size_t len = strlen(*out);
	while (len > (size_t)(host - u) + 1 && (*out)[len - 1] == '/')
		(*out)[--len] = '\0';
	return 0;
}

static void conv_url(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	cli_scn_get_http_url(c, v, &t->url);
}

/* True for the output-tokens forms chatload-sim documents: N, request, uniform:A-B,
 * normal:M,SD. */
static bool output_tokens_spec_ok(const char *s)
{
	uint64_t a, b;
	char x[32], y[32];
	if (strcmp(s, "request") == 0)
		return true;
	if (cl_parse_u64(s, 10000000, &a) == 0)
		return true;
	const char *sep;
	if (strncmp(s, "uniform:", 8) == 0 && (sep = strchr(s + 8, '-'))) {
		snprintf(x, sizeof(x), "%.*s", (int)(sep - s - 8), s + 8);
		snprintf(y, sizeof(y), "%s", sep + 1);
		return cl_parse_u64(x, 10000000, &a) == 0 && cl_parse_u64(y, 10000000, &b) == 0 &&
		       a <= b;
	}
	double m, sd;
	if (strncmp(s, "normal:", 7) == 0 && (sep = strchr(s + 7, ','))) {
		snprintf(x, sizeof(x), "%.*s", (int)(sep - s - 7), s + 7);
		snprintf(y, sizeof(y), "%s", sep + 1);
		return cl_parse_double(x, &m) == 0 && cl_parse_double(y, &sd) == 0 && m > 0 &&
		       sd >= 0;
	}
	return false;
}

void cli_scn_sim_append(struct scn_ctx *c, struct cl_scn_target *t, const char *key,
			const char *value)
{
	struct cl_sim_kv *kv = realloc(t->sim, (t->n_sim + 1) * sizeof(*kv));
	if (!kv) {
		c->oom = true;
		return;
	}
	t->sim = kv;
	kv[t->n_sim].key = strdup(key);
	kv[t->n_sim].value = strdup(value);
	t->n_sim++;
	if (!kv[t->n_sim - 1].key || !kv[t->n_sim - 1].value)
		c->oom = true;
}

struct sim_arg {
	struct cl_scn_target *t;
	const struct ynode *seen[CL_SIM_OPTIONS_MAX]; /* by index in cl_sim_options */
};

static void sim_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v, bool merged,
		     void *argp)
{
	struct sim_arg *a = argp;
	char got[96];
	if (k->kind != YN_SCALAR) {
		cli_scn_error(c, k, "keys in %s must be option names, got %s", cli_scn_path(c),
			      cli_scn_describe(k, got, sizeof(got)));
		return;
	}
	const struct cl_sim_option *o = cl_sim_option_find(k->str);
	if (!o) {
		/* suggest in the spelling the user chose: output_tokens or output-tokens */
		bool underscore = strchr(k->str, '_') != NULL || strchr(k->str, '-') == NULL;
		char names[CL_SIM_OPTIONS_MAX][32];
		const char *list[CL_SIM_OPTIONS_MAX];
		size_t n = 0;
		for (size_t i = 0; i < cl_sim_options_count; i++) {
			if (!cl_sim_options[i].scenario)
				continue;
			snprintf(names[n], sizeof(names[n]), "%s", cl_sim_options[i].name);
			for (char *p = names[n]; underscore && *p; p++)
				*p = *p == '-' ? '_' : *p;
			list[n] = names[n];
			n++;
		}
		cli_scn_unknown_key(c, k, list, n, NULL);
		return;
	}
	if (!o->scenario) {
		cli_scn_error(c, k,
			      "'%s' is a setting of the chatload-sim process, not of a scenario's "
			      "simulator",
			      k->str);
		return;
	}
	size_t idx = (size_t)(o - cl_sim_options);
	CL_ASSERT(idx < CL_SIM_OPTIONS_MAX);
	if (a->seen[idx]) {
		if (!merged)
			cli_scn_error(c, k, "duplicate key '%s' in %s", k->str, cli_scn_path(c));
		return;
	}
	a->seen[idx] = k;
	size_t mark = cli_scn_path_key(c, k->str);
	const char *value = NULL;
	bool ok = false;
	int64_t dur;
	uint64_t u;
	double d;
	bool b;
	switch (o->kind) {
	case CL_SIMOPT_DURATION:
		ok = cli_scn_get_dur(c, v, 0, 0, &dur) == 0;
		break;
	case CL_SIMOPT_INT:
		ok = cli_scn_get_u64(c, v, 0, 1000000000, &u) == 0;
		break;
	case CL_SIMOPT_FLOAT: {
		bool prob = strncmp(o->name, "fault-", 6) == 0 || strcmp(o->name, "jitter") == 0;
		ok = cli_scn_get_double(c, v, 0, prob ? 1 : 1e308, &d) == 0;
		break;
	}
	case CL_SIMOPT_BOOL:
		if ((ok = cli_scn_get_bool(c, v, &b) == 0))
			value = b ? "true" : "false";
		break;
	case CL_SIMOPT_STRING:
		ok = cli_scn_scalar(c, v, "a string");
		if (ok && strcmp(o->name, "output-tokens") == 0 && !output_tokens_spec_ok(v->str)) {
			cli_scn_error(
			    c, v,
			    "%s must be N, request, uniform:MIN-MAX or normal:MEAN,SD, got %s",
			    cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
			ok = false;
		}
		break;
	}
	cli_scn_path_pop(c, mark);
	if (!ok)
		return;
	cli_scn_sim_append(c, a->t, o->name, value ? value : v->str);
	if (strcmp(o->name, "model") == 0)
		L(c)->sim_model = v;
}

static void conv_simulator(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	char got[96];
	bool b;
	t->simulator = true;
	if (cli_ynode_is_null(v))
		return;
	if (v->kind == YN_SCALAR && cl_parse_bool(v->str, &b) == 0) {
		t->simulator = b;
		return;
	}
	if (v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping of simulator settings (e.g. { ttft: 100ms, "
			      "itl: 10ms }), got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	struct sim_arg a = { .t = t };
	cli_scn_map_each(c, v, sim_pair, &a);
}

/* Where header_pair appends: target.headers or target.server_metrics.headers. */
struct header_list {
	char ***headers;
	size_t *n_headers;
};

static void header_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v,
			bool merged, void *argp)
{
	const struct header_list *hl = argp;
	char **have = *hl->headers;
	size_t n = *hl->n_headers;
	char got[96];
	if (k->kind != YN_SCALAR || k->len == 0 || strlen(k->str) != k->len) {
		cli_scn_error(c, k, "header names in %s must be strings, got %s", cli_scn_path(c),
			      cli_scn_describe(k, got, sizeof(got)));
		return;
	}
	/* HTTP header names are case-insensitive: a second one is a duplicate, unless merged */
	for (size_t i = 0; i < n; i++) {
		if (strncasecmp(have[i], k->str, k->len) == 0 && have[i][k->len] == ':') {
			if (!merged)
				cli_scn_error(c, k, "duplicate header '%s' in %s", k->str,
					      cli_scn_path(c));
			return;
		}
	}
	for (const char *p = k->str; *p; p++) {
		if (!isalnum((unsigned char)*p) && !strchr("!#$%&'*+-.^_`|~", *p)) {
			cli_scn_error(c, k, "%s: '%s' is not a valid HTTP header name",
				      cli_scn_path(c), k->str);
			return;
		}
	}
	if (n >= SCN_MAX_HEADERS) {
		cli_scn_error(c, k, "%s has more than %d headers", cli_scn_path(c),
			      SCN_MAX_HEADERS);
		return;
	}
	size_t mark = cli_scn_path_key(c, k->str);
	bool ok = cli_scn_scalar(c, v, "a string");
	if (ok && strpbrk(v->str, "\r\n")) {
		cli_scn_error(c, v, "%s must not contain line breaks", cli_scn_path(c));
		ok = false;
	}
	cli_scn_path_pop(c, mark);
	if (!ok)
		return;
	char **h = realloc(have, (n + 1) * sizeof(*h));
	if (!h) {
		c->oom = true;
		return;
	}
	*hl->headers = h;
	if (asprintf(&h[n], "%s: %s", k->str, v->str) < 0) {
		c->oom = true;
		return;
	}
	(*hl->n_headers)++;
}

void cli_scn_read_headers(struct scn_ctx *c, const struct ynode *v, char ***headers, size_t *n)
{
	struct header_list hl = { headers, n };
	char got[96];
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_MAP) {
		cli_scn_error(c, v, "%s must be a mapping of header names to values, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_map_each(c, v, header_pair, &hl);
}

static void read_headers(struct scn_ctx *c, const struct ynode *v, struct header_list *hl)
{
	char got[96];
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_MAP) {
		cli_scn_error(c, v, "%s must be a mapping of header names to values, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_map_each(c, v, header_pair, hl);
}

static void conv_headers(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	struct header_list hl = { &t->headers, &t->n_headers };
	read_headers(c, v, &hl);
}

/* ---- target.server_metrics ---- */

static void conv_sm_headers(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_server_metrics *m = obj;
	struct header_list hl = { &m->headers, &m->n_headers };
	read_headers(c, v, &hl);
}

/* url: `auto` (the target's) or an http(s) URL. */
static void conv_sm_url(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_server_metrics *m = obj;
	if (v && v->kind == YN_SCALAR && strcmp(v->str, "auto") == 0)
		return;
	if (cli_scn_get_http_url(c, v, &m->url) == 0)
		m->mode = CL_SCN_SRV_URL;
}

/* A Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), or such a beginning and a '*'. */
static bool series_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n && s[n - 1] == '*')
		n--;
	if (n == 0 || isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != ':')
			return false;
	return true;
}

static void conv_sm_series(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_server_metrics *m = obj;
	char got[96];
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_SEQ) {
		cli_scn_error(
		    c, v,
		    "%s must be a list of metric names (e.g. [vllm:iteration_tokens_total, "
		    "DCGM_FI_DEV_*]), got %s",
		    cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (v->n > CL_SCN_SRV_MAX_SERIES) {
		cli_scn_error(c, v, "%s has %zu names; at most %d are kept", cli_scn_path(c), v->n,
			      CL_SCN_SRV_MAX_SERIES);
		return;
	}
	m->series = calloc(v->n ? v->n : 1, sizeof(*m->series));
	if (!m->series) {
		c->oom = true;
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *x = v->kids[i];
		size_t mark = cli_scn_path_index(c, i);
		char *name = NULL;
		if (cli_scn_get_str(c, x, true, &name) == 0) {
			if (!series_name_ok(name)) {
				cli_scn_error(c, x,
					      "%s must be a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, "
					      "optionally ending in '*'), got %s",
					      cli_scn_path(c),
					      cli_scn_describe(x, got, sizeof(got)));
				free(name);
			} else {
				m->series[m->n_series++] = name;
			}
		}
		cli_scn_path_pop(c, mark);
	}
}

/* extra: more exporters' pages, scraped beside the engine's: http(s) URLs, each once. */
static void conv_sm_extra(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_server_metrics *m = obj;
	char got[96];
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_SEQ) {
		cli_scn_error(c, v,
			      "%s must be a list of exporter URLs (e.g. "
			      "[http://gpu-node:9400/metrics]), got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (v->n > CL_SCN_SRV_MAX_EXTRA) {
		cli_scn_error(c, v, "%s has %zu URLs; at most %d exporters are scraped",
			      cli_scn_path(c), v->n, CL_SCN_SRV_MAX_EXTRA);
		return;
	}
	m->extra = calloc(v->n ? v->n : 1, sizeof(*m->extra));
	if (!m->extra) {
		c->oom = true;
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *x = v->kids[i];
		size_t mark = cli_scn_path_index(c, i);
		char *url = NULL;
		if (cli_scn_get_http_url(c, x, &url) == 0) {
			bool dup = false;
			for (size_t k = 0; k < m->n_extra && !dup; k++)
				dup = strcmp(m->extra[k], url) == 0;
			if (dup) {
				cli_scn_error(c, x, "%s repeats the exporter URL '%s'",
					      cli_scn_path(c), url);
				free(url);
			} else {
				m->extra[m->n_extra++] = url;
			}
		} else {
			free(url);
		}
		cli_scn_path_pop(c, mark);
	}
}

static const struct scn_field server_metrics_fields[] = {
	SCN_CUSTOM("url", conv_sm_url),
	SCN_RANGE("interval", SCN_F_DUR, struct cl_scn_server_metrics, interval_us, 100000,
		  3600 * SEC),
	SCN_CUSTOM("headers", conv_sm_headers),
	SCN_CUSTOM("series", conv_sm_series),
	SCN_CUSTOM("extra", conv_sm_extra),
};

/* false, auto (or true, or nothing), a URL, or { url, interval, headers, series, extra }. */
static void conv_server_metrics(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	struct cl_scn_server_metrics *m = &t->server_metrics;
	char got[96];
	bool b;
	if (cli_ynode_is_null(v))
		return;
	if (v->kind == YN_SCALAR && !v->quoted && cl_parse_bool(v->str, &b) == 0) {
		m->mode = b ? CL_SCN_SRV_AUTO : CL_SCN_SRV_OFF;
		return;
	}
	if (v->kind == YN_SCALAR && strcmp(v->str, "auto") == 0)
		return;
	if (v->kind == YN_SCALAR &&
	    (strncasecmp(v->str, "http://", 7) == 0 || strncasecmp(v->str, "https://", 8) == 0)) {
		if (cli_scn_get_http_url(c, v, &m->url) == 0)
			m->mode = CL_SCN_SRV_URL;
		return;
	}
	if (v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be false, auto, a URL (http:// or https://) or a mapping "
			      "{ url, interval, headers, series, extra }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	const struct ynode *seen[N(server_metrics_fields)] = { 0 };
	cli_scn_fields(c, v, server_metrics_fields, N(server_metrics_fields), m, seen, NULL);
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
	{ "stream", "chat, completions and responses requests always stream, and embeddings "
		    "never do" },
	{ "max_tokens", "set max_tokens in the section instead" },
	{ "max_output_tokens", "set max_tokens in the section instead" },
};

static void reserved_pair(struct scn_ctx *c, const struct ynode *k, const struct ynode *v,
			  bool merged, void *arg)
{
	for (size_t r = 0; k->kind == YN_SCALAR && r < N(reserved_fields); r++) {
		if (strcmp(k->str, reserved_fields[r].key) == 0)
			cli_scn_error(c, k, "%s.%s is set by chatload (%s)", cli_scn_path(c),
				      k->str, reserved_fields[r].why);
	}
}

static void check_body(struct scn_ctx *c, const struct ynode *v)
{
	cli_scn_map_each(c, v, reserved_pair, NULL);
}

static void conv_target_body(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_target *t = obj;
	check_body(c, v);
	cli_scn_get_json(c, v, &t->body_json);
}

/* http2: false, true (= required), required or preferred (HTTP/1.1 allowed). */
static void conv_http2(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "false", "true", "required", "preferred" };
	struct cl_scn_target *t = obj;
	bool b;
	if (v && v->kind == YN_SCALAR && cl_parse_bool(v->str, &b) == 0) {
		t->http2 = b;
		t->http2_fallback = false;
		return;
	}
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) != 0)
		return;
	t->http2 = x != 0;
	t->http2_fallback = x == 3;
}

static const struct scn_field target_fields[TK__COUNT] = {
	[TK_URL] = SCN_CUSTOM("url", conv_url),
	[TK_SIMULATOR] = SCN_CUSTOM("simulator", conv_simulator),
	[TK_MODEL] = SCN_FIELD("model", SCN_F_NESTR, struct cl_scn_target, model),
	[TK_API_KEY_ENV] = SCN_FIELD("api_key_env", SCN_F_ENV, struct cl_scn_target, api_key_env),
	[TK_BODY] = SCN_CUSTOM("body", conv_target_body),
	[TK_HEADERS] = SCN_CUSTOM("headers", conv_headers),
	[TK_HTTP2] = SCN_CUSTOM("http2", conv_http2),
	[TK_TLS_VERIFY] = SCN_FIELD("tls_verify", SCN_F_BOOL, struct cl_scn_target, tls_verify),
	[TK_CA_FILE] = SCN_FIELD("ca_file", SCN_F_NESTR, struct cl_scn_target, ca_file),
	[TK_CONNECT_TIMEOUT] = SCN_RANGE("connect_timeout", SCN_F_DUR, struct cl_scn_target,
					 connect_timeout_us, 1, DAY),
	[TK_H2_STREAMS] = SCN_RANGE("http2_streams_per_connection", SCN_F_U32, struct cl_scn_target,
				    http2_streams, 1, CL_HTTP2_MAX_STREAMS),
	[TK_SERVER_METRICS] = SCN_CUSTOM("server_metrics", conv_server_metrics),
	[TK_URLS] = SCN_CUSTOM("urls", cli_scn_conv_urls),
	[TK_ROUTE] = SCN_CUSTOM("route", cli_scn_conv_route),
};

const struct ynode *cli_scn_target_key(const struct scn_loader *l, const char *key)
{
	for (size_t i = 0; i < N(target_fields) && i < N(l->target); i++)
		if (strcmp(target_fields[i].name, key) == 0)
			return l->target[i];
	return NULL;
}

void cli_scn_conv_target(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	cli_scn_fields(c, v, target_fields, N(target_fields), &l->s->target, l->target,
		       cli_scn_hint_for);
}

/* ---- agents ---- */

static void conv_listen(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const schemes[] = { "tcp://",     "tcp4://",     "tcp6://",
					       "tls+tcp://", "tls+tcp4://", "tls+tcp6://",
					       "ipc://" };
	struct cl_scn_agents *a = obj;
	char got[96];
	if (cli_scn_get_str(c, v, true, &a->listen) != 0)
		return;
	for (size_t i = 0; i < N(schemes); i++) {
		size_t l = strlen(schemes[i]);
		if (strncmp(a->listen, schemes[i], l) == 0 && a->listen[l])
			return;
	}
	cli_scn_error(c, v,
		      "%s must be an address such as tls+tcp://0.0.0.0:7700 or tcp://"
		      "127.0.0.1:7700, got %s",
		      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
}

static void conv_on_loss(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "fail", "continue" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_agents *)obj)->on_loss = (enum cl_on_loss)x;
}

static const struct scn_field agents_tls_fields[] = {
	SCN_FIELD("cert", SCN_F_NESTR, struct cl_scn_agents, tls_cert),
	SCN_FIELD("key", SCN_F_NESTR, struct cl_scn_agents, tls_key),
	SCN_FIELD("ca", SCN_F_NESTR, struct cl_scn_agents, tls_ca),
};

static void conv_agents_tls(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	const struct ynode *seen[N(agents_tls_fields)] = { 0 };
	cli_scn_fields(c, v, agents_tls_fields, N(agents_tls_fields), obj, seen, NULL);
	if (!seen[0] != !seen[1])
		cli_scn_error(c, seen[0] ? seen[0] : seen[1], "%s needs both cert and key",
			      cli_scn_path(c));
}

static void conv_agents_local(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_agents *a = obj;
	L(c)->given.agents_local = true;
	/* auto: the run decides how many, from the largest stage and the descriptor limit
	 * (run/setup.c); 1 until then, so the checks between keys see agents that run load. */
	if (v->kind == YN_SCALAR && strcmp(v->str, "auto") == 0) {
		a->local_auto = true;
		a->local = 1;
		return;
	}
	cli_scn_get_u32(c, v, 0, 256, &a->local);
}

/* agents.source_addresses: a list of addresses and IPv4 blocks, expanded into one pool. */
static void conv_source_addresses(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_agents *a = obj;
	char got[96];
	if (v->kind != YN_SEQ || v->n == 0) {
		cli_scn_error(c, v,
			      "%s must be a list of local addresses or IPv4 blocks, e.g. "
			      "[127.0.0.2, 127.0.0.3] or [127.0.0.0/30], got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (!a->source && !(a->source = calloc(1, sizeof(*a->source)))) {
		cli_scn_error(c, v, "out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		char *text = NULL;
		struct cl_err err = { 0 };
		size_t before = a->source->n;
		if (cli_scn_get_str(c, v->kids[i], true, &text) == 0 &&
		    cl_srcaddr_add(a->source, text, &err) != 0)
			cli_scn_error(c, v->kids[i], "%s: %s", cli_scn_path(c), err.msg);
		/* Local agents bind to them on this host: one this host lacks would fail every
		 * connection, so it is found here, where the file's position can be named. */
		for (size_t k = before; k < a->source->n; k++) {
			if (cl_srcaddr_check_local(a->source->addr[k], &err) != 0) {
				cli_scn_error(c, v->kids[i], "%s: %s", cli_scn_path(c), err.msg);
				break;
			}
		}
		free(text);
		cli_scn_path_pop(c, mark);
	}
}

static const struct scn_field agents_fields[] = {
	[AGF_LOCAL] = SCN_CUSTOM("local", conv_agents_local),
	[AGF_LISTEN] = SCN_CUSTOM("listen", conv_listen),
	[AGF_EXPECT] =
	    SCN_RANGE("expect", SCN_F_U32, struct cl_scn_agents, expect, 0, CL_SCN_MAX_AGENTS),
	[AGF_JOIN_TIMEOUT] =
	    SCN_RANGE("join_timeout", SCN_F_DUR, struct cl_scn_agents, join_timeout_us, 1, DAY),
	[AGF_ON_LOSS] = SCN_CUSTOM("on_loss", conv_on_loss),
	[AGF_WORKERS] = SCN_RANGE("workers", SCN_F_U32, struct cl_scn_agents, workers, 0, 1024),
	[AGF_TOKEN_ENV] = SCN_FIELD("token_env", SCN_F_ENV, struct cl_scn_agents, token_env),
	[AGF_TOKEN_FILE] = SCN_FIELD("token_file", SCN_F_NESTR, struct cl_scn_agents, token_file),
	[AGF_TLS] = SCN_CUSTOM("tls", conv_agents_tls),
	[AGF_REPORT_INTERVAL] = SCN_RANGE("report_interval", SCN_F_DUR, struct cl_scn_agents,
					  report_interval_us, 100000, 60 * SEC),
	[AGF_SOURCE_ADDRESSES] = SCN_CUSTOM("source_addresses", conv_source_addresses),
};
_Static_assert(N(agents_fields) == AGF__COUNT, "one field per index");
_Static_assert(AGF__COUNT <= N(((struct scn_loader *)0)->agents), "room for every key");

void cli_scn_conv_agents(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	cli_scn_fields(c, v, agents_fields, N(agents_fields), &l->s->agents, l->agents,
		       cli_scn_hint_for);
}

/* ---- readiness and warmup ---- */

static void conv_backoff(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		SCN_RANGE("initial", SCN_F_DUR, struct cl_scn_readiness, backoff_initial_us, 1,
			  DAY),
		SCN_RANGE("max", SCN_F_DUR, struct cl_scn_readiness, backoff_max_us, 1, DAY),
	};
	const struct ynode *seen[N(f)] = { 0 };
	struct cl_scn_readiness *r = obj;
	cli_scn_fields(c, v, f, N(f), obj, seen, NULL);
	if (r->backoff_initial_us > r->backoff_max_us)
		cli_scn_error(c,
			      seen[1]   ? seen[1]
			      : seen[0] ? seen[0]
					: v,
			      "%s.initial must not be longer than %s.max", cli_scn_path(c),
			      cli_scn_path(c));
}

static void conv_probe_body(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	check_body(c, v);
	cli_scn_get_json(c, v, obj);
}

static void conv_readiness_body(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	conv_probe_body(c, v, &((struct cl_scn_readiness *)obj)->body_json);
}

static const struct scn_field readiness_fields[] = {
	SCN_FIELD("enabled", SCN_F_BOOL, struct cl_scn_readiness, enabled),
	SCN_RANGE("timeout", SCN_F_DUR, struct cl_scn_readiness, timeout_us, 1, 7 * DAY),
	SCN_FIELD("prompt", SCN_F_NESTR, struct cl_scn_readiness, prompt),
	SCN_RANGE("max_tokens", SCN_F_U32, struct cl_scn_readiness, max_tokens, 1, 1000000),
	SCN_RANGE("request_timeout", SCN_F_DUR, struct cl_scn_readiness, request_timeout_us, 1,
		  DAY),
	SCN_RANGE("consecutive", SCN_F_U32, struct cl_scn_readiness, consecutive, 1, 1000),
	SCN_CUSTOM("body", conv_readiness_body),
	SCN_CUSTOM("backoff", conv_backoff),
};

void cli_scn_conv_readiness(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_readiness *r = &L(c)->s->readiness;
	const struct ynode *seen[N(readiness_fields)] = { 0 };
	bool b;
	/* "readiness: false" switches the gate off */
	if (v && v->kind == YN_SCALAR && !cli_ynode_is_null(v) && cl_parse_bool(v->str, &b) == 0) {
		r->enabled = b;
		return;
	}
	cli_scn_fields(c, v, readiness_fields, N(readiness_fields), r, seen, cli_scn_hint_for);
}

static void conv_warmup_body(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	conv_probe_body(c, v, &((struct cl_scn_warmup *)obj)->body_json);
}

static const struct scn_field warmup_fields[] = {
	SCN_RANGE("requests", SCN_F_U32, struct cl_scn_warmup, requests, 0, 1000000),
	SCN_RANGE("duration", SCN_F_DUR, struct cl_scn_warmup, duration_us, 0, DAY),
	SCN_RANGE("concurrency", SCN_F_U32, struct cl_scn_warmup, concurrency, 1,
		  CL_PLAN_CONCURRENCY_MAX),
	SCN_RANGE("max_tokens", SCN_F_U32, struct cl_scn_warmup, max_tokens, 1, 10000000),
	SCN_RANGE("request_timeout", SCN_F_DUR, struct cl_scn_warmup, request_timeout_us, 1, DAY),
	SCN_CUSTOM("body", conv_warmup_body),
	SCN_FIELD("fail_on_error", SCN_F_BOOL, struct cl_scn_warmup, fail_on_error),
};

void cli_scn_conv_warmup(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	const struct ynode **seen = l->warmup;
	cli_scn_fields(c, v, warmup_fields, N(warmup_fields), &l->s->warmup, seen,
		       cli_scn_hint_for);
	l->given.warmup_max_tokens = seen[3] != NULL;
	l->given.warmup_request_timeout = seen[4] != NULL;
	if (seen[0] && seen[1])
		cli_scn_error(c, seen[1], "%s: set requests or duration, not both",
			      cli_scn_path(c));
}
