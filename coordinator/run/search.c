/* A capacity search in a run: each probe the search decides on becomes an ordinary stage,
 * inserted before the search's entry and run like any other; its outcome (the search's SLOs,
 * client health) decides the next level, until the answer is bracketed. */
#include "coordinator/run/internal.h"

#include "coordinator/results/capacity.h"

#include "chatload/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The probe at level as a stage of the scenario: the search entry's settings, the level's
 * load, a name from the search's ("cap-c8", "cap-r12.5").  0 or CL_ENOMEM. */
static int probe_stage(const struct cl_scn_stage *entry, const char *name, double level,
		       struct cl_scn_stage *out)
{
	const struct cl_scn_search *q = entry->search;
	*out = *entry;
	out->search = NULL;
	out->requests = 0;
	/* It may run on to max_probe_duration for the samples its SLOs need (run/stage.c ends
	 * it as soon as they are in, from probe_duration on). */
	out->duration_us = q->max_probe_duration_us > q->probe_duration_us
			       ? q->max_probe_duration_us
			       : q->probe_duration_us;
	out->probe_of = q;
	out->probe_min_us = q->probe_duration_us;
	out->ramp_us = q->ramp_us;
	int n;
	if (q->over == CL_MODE_CONCURRENCY) {
		out->mode = CL_MODE_CONCURRENCY;
		out->concurrency = (uint32_t)level;
		n = asprintf(&out->name, "%s-c%u", name, out->concurrency);
	} else {
		out->mode = CL_MODE_RATE;
		out->rate_per_s = level;
		out->concurrency = q->max_concurrency;
		out->arrival = q->arrival;
		out->gamma_shape = q->gamma_shape;
		n = asprintf(&out->name, "%s-r%g", name, level);
	}
	if (n < 0) {
		out->name = NULL;
		return CL_ENOMEM;
	}
	return 0;
}

/* Reads a finished probe back from the results: did it meet the search's SLOs, can it be
 * trusted (it ran to its end, and its client was not the limit unless client_bound: warn),
 * and why not. */
static void probe_outcome(struct run *r, size_t index, double level, struct cl_capacity_probe *p,
			  char *why, size_t n)
{
	const json_t *st = cl_results_stage(r->res, index);
	*p = (struct cl_capacity_probe){ .level = level, .stage = index };
	why[0] = '\0';
	if (!st) {
		snprintf(why, n, "probe %zu has no results", index);
		return;
	}
	const char *name = cl_results_str(st, "name", "?");
	p->pass = json_is_true(cl_results_get(st, "probe.pass"));
	p->requests_per_s = cl_results_num(st, "throughput.requests_per_s");
	p->output_tokens_per_s = cl_results_num(st, "throughput.output_tokens_per_s");
	const char *status = cl_results_str(st, "status", "ok");
	bool client_bound = json_is_true(cl_results_get(st, "client.client_bound"));
	p->trusted = true;
	if (strcmp(status, "ok") != 0) {
		p->trusted = false;
		snprintf(why, n, "probe '%s' %s: %s", name, status,
			 cl_results_str(st, "reason", "?"));
	} else if (client_bound && r->s.client_bound != CL_CLIENT_BOUND_WARN) {
		p->trusted = false;
		char reasons[96];
		snprintf(why, n, "probe '%s' was client-bound (%s)", name,
			 cl_results_client_reasons(st, reasons, sizeof(reasons)));
	}
}

int cli_run_search(struct run *r, size_t *index)
{
	size_t at = *index;
	/* The entry moves as probes are inserted before it; its search does not. */
	const struct cl_scn_search *q = r->s.stages[at].search;
	char *name = strdup(r->s.stages[at].name);
	if (!name)
		return CL_ENOMEM;
	struct cl_capacity *cap = calloc(1, sizeof(*cap));
	if (!cap) {
		free(name);
		return CL_ENOMEM;
	}
	cl_capacity_init(cap, q);
	cl_progress_note(&r->prog, "search '%s': %s from %g to %g, %zu SLOs per probe", name,
			 q->over == CL_MODE_CONCURRENCY ? "concurrency" : "rate (req/s)", cap->from,
			 cap->max, q->n_slos);
	int rc = 0;
	double level;
	while (rc == 0 && cl_capacity_next(cap, &level)) {
		struct cl_scn_stage st;
		if ((rc = probe_stage(&r->s.stages[at], name, level, &st)) != 0)
			break;
		struct cl_results_probe_def def = {
			.search = name, .level = level, .slos = q->slos, .n_slos = q->n_slos
		};
		if ((rc = cl_results_insert_stage(r->res, at, st.name, &def)) != 0) {
			free(st.name);
			break;
		}
		if ((rc = cl_scenario_insert_stage(&r->s, at, &st)) != 0) {
			free(st.name);
			cl_results_remove_stage(r->res, at);
			break;
		}
		int src = cli_run_stage(r, at);
		struct cl_capacity_probe p;
		char why[300];
		probe_outcome(r, at, level, &p, why, sizeof(why));
		if (src != 0 && p.trusted) {
			p.trusted = false;
			snprintf(why, sizeof(why), "probe '%s' did not finish",
				 r->s.stages[at].name);
		}
		cl_capacity_record(cap, &p, why);
		cl_progress_note(&r->prog, "search '%s': %g %s: %s%s%s", name, level,
				 q->over != CL_MODE_CONCURRENCY ? "req/s"
				 : level == 1                   ? "stream"
								: "streams",
				 !p.trusted ? "not trusted"
				 : p.pass   ? "meets the SLOs"
					    : "breaks them",
				 why[0] ? " - " : "", why);
		at++;
		rc = src;
	}
	/* The entry has done its job: the document lists the probes, not the search. */
	int set = cl_results_set_capacity(r->res, name, q, cap, &r->s.plan);
	if (set != 0 && set != CL_EIO)
		CL_ERROR("cannot record the capacity answer: %s", cl_strerror(set));
	const char *summary = cl_results_str(cl_results_doc(r->res), "capacity.summary", NULL);
	if (summary)
		cl_progress_note(&r->prog, "%s", summary);
	if (cl_results_remove_stage(r->res, at) == 0)
		cl_scenario_remove_stage(&r->s, at);
	*index = at > 0 ? at - 1 : 0;
	free(cap);
	free(name);
	return rc;
}
