/* stages[].classes: a finished stage's figures per request class (workload.classes), each
 * judged by its own SLOs (docs/results.md, "stages[].classes"). */
#include "coordinator/results/internal.h"
#include "coordinator/results/json_int.h"

#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;
	*oom |= s && !d;
	return d;
}

int cli_rs_classes_copy(struct cl_results *r, const struct cl_scenario *s)
{
	const struct cl_scn_workload *w = &s->workload;
	bool oom = false;
	if (!w->n_classes)
		return 0;
	if (!(r->classes = calloc(w->n_classes, sizeof(*r->classes))))
		return CL_ENOMEM;
	r->n_classes = w->n_classes;
	for (size_t i = 0; i < w->n_classes; i++) {
		const struct cl_scn_class *k = &w->classes[i];
		struct cli_rs_class *c = &r->classes[i];
		c->name = dup_or_null(k->name ? k->name : "", &oom);
		c->model = dup_or_null(k->model, &oom);
		c->priority_set = k->priority_set;
		c->priority = k->priority;
		c->weight = k->weight;
		c->max_tokens = k->output_tokens ? k->output_tokens : k->max_tokens;
		if (k->n_slos && !(c->slos = calloc(k->n_slos, sizeof(*c->slos))))
			return CL_ENOMEM;
		for (size_t j = 0; j < k->n_slos; j++, c->n_slos++) {
			c->slos[j] = k->slos[j];
			c->slos[j].key = dup_or_null(k->slos[j].key ? k->slos[j].key : "slo", &oom);
			c->slos[j].stage = dup_or_null(k->slos[j].stage, &oom);
		}
	}
	return oom ? CL_ENOMEM : 0;
}

void cli_rs_classes_free(struct cl_results *r)
{
	for (size_t i = 0; r->classes && i < r->n_classes; i++) {
		struct cli_rs_class *c = &r->classes[i];
		free(c->name);
		free(c->model);
		for (size_t j = 0; c->slos && j < c->n_slos; j++) {
			free(c->slos[j].key);
			free(c->slos[j].stage);
		}
		free(c->slos);
	}
	free(r->classes);
	r->classes = NULL;
	r->n_classes = 0;
}

/* The stage's server figures of model (stages[].server.models[], by model_name), NULL when
 * the server's page says nothing of it. */
static const json_t *server_of(const json_t *server, const char *model)
{
	size_t i;
	const json_t *e;
	json_array_foreach(json_object_get(server, "models"), i, e)
	{
		const char *name = json_string_value(json_object_get(e, "model_name"));
		if (model && name && strcmp(name, model) == 0)
			return e;
	}
	return NULL;
}

/* One class's object: who it is, its figures, its checks (each naming the class, and each
 * appended to all_checks too), the server's figures of its model when its page has them. */
static json_t *class_json(const struct cli_rs_class *c, uint64_t weights, const char *stage,
			  const struct cl_metrics *m, double window_s, json_t *all_checks,
			  const json_t *server, const char *run_model)
{
	json_t *o = cli_rs_class_figures(m, window_s);
	json_t *checks = cli_rs_checks(c->slos, c->n_slos, stage, m, window_s);
	size_t i;
	json_t *chk;
	if (!o || !checks)
		goto fail;
	json_array_foreach(checks, i, chk)
	{
		if (cli_rj_set(chk, "class", cli_rj_str(c->name)) ||
		    json_array_append(all_checks, chk) != 0)
			goto fail;
	}
	bool pass = true;
	json_array_foreach(checks, i, chk) pass &= json_is_true(json_object_get(chk, "pass"));
	if (cli_rj_set(o, "name", cli_rj_str(c->name)) ||
	    cli_rj_set(o, "model", c->model ? json_string(c->model) : json_null()) ||
	    cli_rj_set(o, "priority", c->priority_set ? json_integer(c->priority) : json_null()) ||
	    cli_rj_set(o, "weight", json_integer(c->weight)) ||
	    cli_rj_set(o, "share", json_real(weights ? (double)c->weight / (double)weights : 0)) ||
	    cli_rj_set(o, "max_tokens",
		       c->max_tokens ? json_integer(c->max_tokens) : json_null()) ||
	    cli_rj_set(o, "pass", json_boolean(pass)) || cli_rj_set(o, "checks", checks)) {
		json_decref(o);
		return NULL;
	}
	const json_t *srv = server_of(server, c->model ? c->model : run_model);
	if (srv && cli_rj_set(o, "server", json_deep_copy(srv))) {
		json_decref(o);
		return NULL;
	}
	return o;
fail:
	json_decref(o);
	json_decref(checks);
	return NULL;
}

json_t *cli_rs_classes_json(const struct cl_results *r, const char *stage,
			    const struct cl_metrics *m, double window_s, json_t *checks,
			    const json_t *server)
{
	/* the model the run's bodies name: the one the gate found (results' target.model) */
	const char *run_model =
	    json_string_value(json_object_get(json_object_get(r->doc, "target"), "model"));
	json_t *a = json_array();
	uint64_t weights = 0;
	for (size_t i = 0; i < r->n_classes; i++)
		weights += r->classes[i].weight;
	/* The agents' records follow the plan's classes, which are the scenario's. */
	for (uint32_t i = 0; a && i < m->n_cls && i < r->n_classes; i++) {
		if (cli_rj_append(a, class_json(&r->classes[i], weights, stage, &m->cls[i],
						window_s, checks, server, run_model))) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}
