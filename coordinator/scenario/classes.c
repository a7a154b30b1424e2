/* The scenario loader's workload.classes: each class's name, weight, model, priority, output
 * length, extra body keys, headers and SLOs (docs/scenario.md, "Request classes"). */
#include "coordinator/scenario/scenario.h"

#include "coordinator/scenario/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void conv_headers(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_class *k = obj;
	cli_scn_read_headers(c, v, &k->headers, &k->n_headers);
}

static void conv_slo(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_class *k = obj;
	cli_scn_take_slos(c, v, &k->slos, &k->n_slos);
}

static void conv_priority(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_class *k = obj;
	char got[96];
	if (!cli_scn_scalar(c, v, "an integer"))
		return;
	/* vLLM takes any integer, a lower one served first; a negative one is allowed */
	char *end;
	errno = 0;
	long long x = strtoll(v->str, &end, 10);
	if (errno || end == v->str || *end || x < -1000000000LL || x > 1000000000LL) {
		cli_scn_error(c, v, "%s must be an integer in -1e9..1e9, got %s", cli_scn_path(c),
			      cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	k->priority = x;
	k->priority_set = true;
}

static void conv_prompts(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_class *k = obj;
	char got[96];
	if (!v || v->kind != YN_SEQ || v->n == 0) {
		cli_scn_error(c, v, "%s must be a list of one or more prompt strings, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (!(k->prompts = calloc(v->n, sizeof(char *)))) {
		c->oom = true;
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		char *p = NULL;
		if (cli_scn_get_str(c, v->kids[i], true, &p) == 0)
			k->prompts[k->n_prompts++] = p;
		cli_scn_path_pop(c, mark);
	}
}

enum class_field {
	CF_NAME,
	CF_WEIGHT,
	CF_MODEL,
	CF_PRIORITY,
	CF_MAX_TOKENS,
	CF_OUTPUT_TOKENS,
	CF_BODY,
	CF_HEADERS,
	CF_SLO,
	CF_PROMPTS,
	CF_INPUT_TOKENS,
	CF_DATASET,
	CF__COUNT
};

static const struct scn_field class_fields[] = {
	[CF_NAME] = SCN_FIELD("name", SCN_F_NESTR, struct cl_scn_class, name),
	[CF_WEIGHT] = SCN_RANGE("weight", SCN_F_U32, struct cl_scn_class, weight, 0, 1000000),
	[CF_MODEL] = SCN_FIELD("model", SCN_F_NESTR, struct cl_scn_class, model),
	[CF_PRIORITY] = SCN_CUSTOM("priority", conv_priority),
	[CF_MAX_TOKENS] =
	    SCN_RANGE("max_tokens", SCN_F_U32, struct cl_scn_class, max_tokens, 1, 10000000),
	[CF_OUTPUT_TOKENS] =
	    SCN_RANGE("output_tokens", SCN_F_U32, struct cl_scn_class, output_tokens, 1, 10000000),
	[CF_BODY] = SCN_FIELD("body", SCN_F_JSON, struct cl_scn_class, body_json),
	[CF_HEADERS] = SCN_CUSTOM("headers", conv_headers),
	[CF_SLO] = SCN_CUSTOM("slo", conv_slo),
	[CF_PROMPTS] = SCN_CUSTOM("prompts", conv_prompts),
	[CF_INPUT_TOKENS] =
	    SCN_RANGE("input_tokens", SCN_F_U32, struct cl_scn_class, input_tokens, 1, 1 << 20),
	[CF_DATASET] = SCN_FIELD("dataset", SCN_F_NESTR, struct cl_scn_class, dataset),
};
_Static_assert(N(class_fields) == CF__COUNT, "one field per index");

/* A name fit for a table row, a CSV cell and a Prometheus label: letters, digits, '_', '-',
 * '.', at most 64 bytes. */
static bool good_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("_-.", *s)))
			return false;
	return true;
}

static void one_class(struct scn_ctx *c, const struct ynode *v, struct cl_scn_class *k,
		      const struct cl_scn_class *before, size_t n_before)
{
	const struct ynode *seen[CF__COUNT] = { 0 };
	char got[96];
	k->weight = 1;
	k->line = v ? v->line : 0;
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(
		    c, v,
		    "%s must be a mapping such as { name: chat, weight: 3, priority: 0 }, "
		    "got %s",
		    cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, class_fields, N(class_fields), k, seen, NULL);
	if (!seen[CF_NAME]) {
		cli_scn_error(c, v, "%s needs a name (it names the class in the results)",
			      cli_scn_path(c));
		return;
	}
	if (k->name && !good_name(k->name))
		cli_scn_error(c, seen[CF_NAME],
			      "%s.name '%s' must be 1..64 letters, digits, '_', '-' or '.'",
			      cli_scn_path(c), k->name);
	for (size_t i = 0; k->name && i < n_before; i++)
		if (before[i].name && strcmp(before[i].name, k->name) == 0)
			cli_scn_error(c, seen[CF_NAME], "%s.name '%s' is given to two classes",
				      cli_scn_path(c), k->name);
	if (!!seen[CF_PROMPTS] + !!seen[CF_INPUT_TOKENS] + !!seen[CF_DATASET] > 1) {
		cli_scn_error(c, seen[CF_DATASET] ? seen[CF_DATASET] : seen[CF_INPUT_TOKENS],
			      "%s: prompts, input_tokens and dataset are exclusive (its own inline "
			      "prompts, synthetic ones of input_tokens tokens, or a dataset's)",
			      cli_scn_path(c));
	} else if (k->dataset) {
		char what[160];
		snprintf(what, sizeof(what), "%s.dataset", cli_scn_path(c));
		cli_scn_resolve_file(c, &k->dataset, what, seen[CF_DATASET]);
	}
	if (seen[CF_MAX_TOKENS] && seen[CF_OUTPUT_TOKENS])
		cli_scn_error(c, seen[CF_OUTPUT_TOKENS],
			      "%s: max_tokens and output_tokens are exclusive (output_tokens is "
			      "max_tokens with ignore_eos: true)",
			      cli_scn_path(c));
}

void cli_scn_conv_classes(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_workload *w = obj;
	char got[96];
	if (cli_ynode_is_null(v))
		return;
	if (v->kind != YN_SEQ || v->n == 0) {
		cli_scn_error(c, v, "%s must be a list of classes such as [{ name: chat }], got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (v->n > CL_SCN_MAX_CLASSES) {
		cli_scn_error(c, v, "%s has %zu classes (at most %d)", cli_scn_path(c), v->n,
			      CL_SCN_MAX_CLASSES);
		return;
	}
	if (!(w->classes = calloc(v->n, sizeof(*w->classes)))) {
		c->oom = true;
		return;
	}
	w->n_classes = v->n;
	uint64_t weights = 0;
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		one_class(c, v->kids[i], &w->classes[i], w->classes, i);
		weights += w->classes[i].weight;
		cli_scn_path_pop(c, mark);
	}
	if (weights == 0)
		cli_scn_error(c, v, "%s: every weight is 0, so no class would be sent",
			      cli_scn_path(c));
}

void cli_scn_class_free(struct cl_scn_class *k)
{
	free(k->name);
	free(k->model);
	free(k->body_json);
	free(k->dataset);
	for (size_t i = 0; i < k->n_prompts; i++)
		free(k->prompts[i]);
	free(k->prompts);
	for (size_t i = 0; i < k->n_headers; i++)
		free(k->headers[i]);
	free(k->headers);
	for (size_t i = 0; k->slos && i < k->n_slos; i++) {
		free(k->slos[i].key);
		free(k->slos[i].stage);
	}
	free(k->slos);
	memset(k, 0, sizeof(*k));
}
