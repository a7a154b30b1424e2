/* The scenario loader's target.simulator: true, false, or a mapping of the built-in
 * simulator's settings, each checked against chatload-sim's own option table
 * (chatload/sim_options.h) and kept as a key and value for its command line. */
#include "coordinator/scenario/scenario.h"

#include "chatload/assert.h"
#include "chatload/sim_options.h"
#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void cli_scn_conv_simulator(struct scn_ctx *c, const struct ynode *v, void *obj)
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
