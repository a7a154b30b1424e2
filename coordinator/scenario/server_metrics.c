/* The scenario loader's target.server_metrics: off, auto (the target's /metrics), a URL,
 * or a mapping of its url, scrape interval, headers, the series kept first and the other
 * exporters scraped beside it. */
#include "coordinator/scenario/scenario.h"

#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SEC  1000000LL
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void conv_sm_headers(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_server_metrics *m = obj;
	cli_scn_read_headers(c, v, &m->headers, &m->n_headers);
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

/* One list of strings, series or extra, and the words of its errors. */
struct str_list {
	const char *of;    /* "%s must be a list of <of>, got %s" */
	const char *items; /* "%s has %zu <items>; at most %d <kept>" */
	const char *kept;
	int max;
	/* 0 to keep the string read from x (the list then owns it), or -1 after an error;
	 * have[0..n) are the ones kept so far */
	int (*item)(struct scn_ctx *c, const struct ynode *x, char *const *have, size_t n,
		    char **out);
};

/* A list of at most how->max strings into *list, *n counting those kept; each read by
 * how->item, one that fails freed. Nothing for null; out of memory sets c->oom. */
static void read_list(struct scn_ctx *c, const struct ynode *v, const struct str_list *how,
		      char ***list, size_t *n)
{
	char got[96];
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_SEQ) {
		cli_scn_error(c, v, "%s must be a list of %s, got %s", cli_scn_path(c), how->of,
			      cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (v->n > (size_t)how->max) {
		cli_scn_error(c, v, "%s has %zu %s; at most %d %s", cli_scn_path(c), v->n,
			      how->items, how->max, how->kept);
		return;
	}
	*list = calloc(v->n ? v->n : 1, sizeof(**list));
	if (!*list) {
		c->oom = true;
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		char *s = NULL;
		if (how->item(c, v->kids[i], *list, *n, &s) == 0)
			(*list)[(*n)++] = s;
		else
			free(s);
		cli_scn_path_pop(c, mark);
	}
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

static int series_item(struct scn_ctx *c, const struct ynode *x, char *const *have, size_t n,
		       char **out)
{
	char got[96];
	(void)have, (void)n;
	if (cli_scn_get_str(c, x, true, out) != 0)
		return -1;
	if (!series_name_ok(*out)) {
		cli_scn_error(c, x,
			      "%s must be a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, optionally "
			      "ending in '*'), got %s",
			      cli_scn_path(c), cli_scn_describe(x, got, sizeof(got)));
		return -1;
	}
	return 0;
}

/* series: the names kept first, each a metric name or such a beginning and a '*'. */
static void conv_sm_series(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct str_list how = {
		.of = "metric names (e.g. [vllm:iteration_tokens_total, DCGM_FI_DEV_*])",
		.items = "names",
		.kept = "are kept",
		.max = CL_SCN_SRV_MAX_SERIES,
		.item = series_item,
	};
	struct cl_scn_server_metrics *m = obj;
	read_list(c, v, &how, &m->series, &m->n_series);
}

static int extra_item(struct scn_ctx *c, const struct ynode *x, char *const *have, size_t n,
		      char **out)
{
	if (cli_scn_get_http_url(c, x, out) != 0)
		return -1;
	for (size_t k = 0; k < n; k++) {
		if (strcmp(have[k], *out) == 0) {
			cli_scn_error(c, x, "%s repeats the exporter URL '%s'", cli_scn_path(c),
				      *out);
			return -1;
		}
	}
	return 0;
}

/* extra: more exporters' pages, scraped beside the engine's: http(s) URLs, each once. */
static void conv_sm_extra(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct str_list how = {
		.of = "exporter URLs (e.g. [http://gpu-node:9400/metrics])",
		.items = "URLs",
		.kept = "exporters are scraped",
		.max = CL_SCN_SRV_MAX_EXTRA,
		.item = extra_item,
	};
	struct cl_scn_server_metrics *m = obj;
	read_list(c, v, &how, &m->extra, &m->n_extra);
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
void cli_scn_conv_server_metrics(struct scn_ctx *c, const struct ynode *v, void *obj)
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
	if (v->kind == YN_SCALAR &&
	    (strcmp(v->str, "auto") == 0 || strncasecmp(v->str, "http://", 7) == 0 ||
	     strncasecmp(v->str, "https://", 8) == 0)) {
		conv_sm_url(c, v, m);
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
