/* What faults leave in the document: a lost agent's unaccounted load per stage, each agent's
 * episodes (stalls, silences, loss) gathered at the run level, and the warnings they call
 * for.  docs/protocol.md ("Faults") says what each fault leaves. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cl_results_add_unaccounted(struct cl_results *r, size_t stage, const struct cl_results_blind *b)
{
	if (stage >= r->n_stages || r->stages[stage].finished || !b || !(b->to_s >= b->from_s))
		return CL_EINVAL;
	struct cli_rs_client *c = &r->stages[stage].client;
	if (!c->unaccounted && !(c->unaccounted = json_array()))
		return CL_ENOMEM;
	double length_s = b->to_s - b->from_s;
	/* No report, no rate: the window is stated, its size is not guessed. */
	bool known = b->rate_basis_s > 0;
	json_t *o = json_pack(
	    "{s:I,s:o,s:s,s:f,s:f,s:f,s:f,s:o,s:o,s:o,s:o}", "agent", (json_int_t)b->agent, "host",
	    cli_rj_str(b->host), "cause", b->cause ? b->cause : "silent", "from_s",
	    cli_rj_round(b->from_s, 3), "to_s", cli_rj_round(b->to_s, 3), "length_s",
	    cli_rj_round(length_s, 3), "rate_basis_s", cli_rj_round(b->rate_basis_s, 3),
	    "requests_per_s", known ? cli_rj_real(cli_rj_sig(b->requests_per_s, 6)) : json_null(),
	    "output_tokens_per_s",
	    known ? cli_rj_real(cli_rj_sig(b->output_tokens_per_s, 6)) : json_null(),
	    "requests_estimated",
	    known ? cli_rj_real(round(b->requests_per_s * length_s)) : json_null(),
	    "output_tokens_estimated",
	    known ? cli_rj_real(round(b->output_tokens_per_s * length_s)) : json_null());
	return cli_rj_append(c->unaccounted, o);
}

/* ---- agents[].episodes ------------------------------------------------------------------ */

/* One episode as it is gathered: an agent's stretch of trouble in a stage. */
struct episode {
	json_int_t agent;
	const char *stage;
	double at_s, length_s;
	bool by_agent, by_coordinator; /* who saw it (a stall, a silence) */
	bool lost;
};

#define MAX_EPISODES 512 /* 64 stalls and a few losses per stage, over a few stages */

static int episode_json(const struct episode *e, json_t *into)
{
	/* A silence the agent saw no stall of its own in: it ran, the control link did not
	 * carry its words (or its host paused without its clock showing it). */
	const char *cause = e->lost ? "lost" : e->by_agent ? "stall" : "partition";
	json_t *seen = json_array();
	if (!seen || (e->by_agent && cli_rj_append(seen, json_string("agent"))) ||
	    ((e->by_coordinator || e->lost) && cli_rj_append(seen, json_string("coordinator")))) {
		json_decref(seen);
		return CL_ENOMEM;
	}
	return cli_rj_append(into, json_pack("{s:s,s:f,s:f,s:s,s:o}", "stage", e->stage, "at_s",
					     cli_rj_round(e->at_s, 3), "length_s",
					     cli_rj_round(e->length_s, 3), "cause", cause,
					     "seen_by", seen));
}

/* Gathers the stage's episodes: its listed stalls and silences, one episode where the two
 * witnesses saw the same stretch, and its lost agents' blind windows. */
static size_t stage_episodes(const json_t *s, struct episode *out, size_t n, size_t cap)
{
	const char *name = cl_results_str(s, "name", "");
	size_t k;
	const json_t *x;
	json_array_foreach(cl_results_get(s, "client.stalls"), k, x)
	{
		const json_t *agent = json_object_get(x, "agent");
		if (!json_is_integer(agent))
			continue; /* the coordinator's own stall: no agent's */
		struct episode e = {
			.agent = json_integer_value(agent),
			.stage = name,
			.at_s = cl_results_num(x, "at_s"),
			.length_s = cl_results_num(x, "length_s"),
		};
		bool coord = strcmp(cl_results_str(x, "seen_by", ""), "coordinator") == 0;
		e.by_coordinator = coord;
		e.by_agent = !coord;
		bool merged = false;
		for (size_t i = 0; i < n && !merged; i++) {
			struct episode *o = &out[i];
			double o_end = o->at_s + o->length_s, e_end = e.at_s + e.length_s;
			if (o->lost || o->agent != e.agent || o->stage != name || e.at_s > o_end ||
			    o->at_s > e_end)
				continue;
			double from = fmin(o->at_s, e.at_s), to = fmax(o_end, e_end);
			o->at_s = from;
			o->length_s = to - from;
			o->by_agent |= e.by_agent;
			o->by_coordinator |= e.by_coordinator;
			merged = true;
		}
		if (!merged && n < cap)
			out[n++] = e;
	}
	json_array_foreach(json_object_get(s, "unaccounted"), k, x)
	{
		if (n < cap)
			out[n++] = (struct episode){
				.agent = json_integer_value(json_object_get(x, "agent")),
				.stage = name,
				.at_s = cl_results_num(x, "from_s"),
				.length_s = cl_results_num(x, "length_s"),
				.lost = true,
			};
	}
	return n;
}

int cli_rs_agent_episodes(json_t *doc)
{
	static struct episode eps[MAX_EPISODES]; /* one coordinator thread (results/results.h) */
	size_t n = 0, i;
	json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s) n =
	    stage_episodes(s, eps, n, MAX_EPISODES);
	json_t *a;
	json_array_foreach(json_object_get(doc, "agents"), i, a)
	{
		json_int_t id = json_integer_value(json_object_get(a, "id"));
		json_t *list = json_array();
		if (!list || json_object_set_new(a, "episodes", list) != 0)
			return CL_ENOMEM;
		for (size_t k = 0; k < n; k++)
			if (eps[k].agent == id && episode_json(&eps[k], list) != 0)
				return CL_ENOMEM;
	}
	return 0;
}

/* ---- warnings ------------------------------------------------------------------------- */

int cli_rs_fault_warnings(json_t *w, const json_t *stage)
{
	const char *name = cl_results_str(stage, "name", "");
	size_t k;
	const json_t *x;
	int rc = 0;
	json_array_foreach(json_object_get(stage, "unaccounted"), k, x)
	{
		bool own = strcmp(cl_results_str(x, "cause", ""), "coordinator_stall") == 0;
		char est[200] = "its rate is unknown (it sent no report)";
		if (json_is_number(json_object_get(x, "requests_estimated")))
			snprintf(
			    est, sizeof(est),
			    "up to about %.0f requests and %.0f output tokens at its last rate "
			    "(%.1f req/s)",
			    cl_results_num(x, "requests_estimated"),
			    cl_results_num(x, "output_tokens_estimated"),
			    cl_results_num(x, "requests_per_s"));
		rc |= cli_rs_warn(
		    w,
		    "stage '%s': agent %lld (%s) was lost (%s): its load from %.1f s to at "
		    "most %.1f s into the stage is in no report, %s; the target may have "
		    "received that much more than these results count",
		    name, (long long)json_integer_value(json_object_get(x, "agent")),
		    cl_results_str(x, "host", "?"),
		    own ? "the coordinator could not run for longer than it waits"
			: "silent past the loss window",
		    cl_results_num(x, "from_s"), cl_results_num(x, "to_s"), est);
	}
	return rc ? CL_ENOMEM : 0;
}
