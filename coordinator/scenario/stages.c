/* The scenario loader's stages: closed-loop (concurrency) and open-loop (rate) stage entries,
 * checked as a whole and expanded, one stage per value of a sweep. */
#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY  (86400LL * 1000000LL)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* A stage entry as written, before a sweep is expanded. */
struct stage_spec {
	char *name;
	uint32_t *conc; /* concurrency values (a sweep when more than one) */
	size_t n_conc;
	double *rate; /* per second */
	size_t n_rate;
	int arrival;
	double burstiness;
	double gamma_shape;
	uint32_t max_concurrency;
	int64_t duration_us;
	uint64_t requests;
	int64_t ramp_us;
	bool replay;
	uint32_t repeat;
};

static int list_or_one(struct scn_ctx *c, const struct ynode *v, size_t *n)
{
	char got[96];
	if (v && v->kind == YN_SEQ) {
		if (v->n == 0) {
			cli_scn_error(c, v, "%s is an empty list", cli_scn_path(c));
			return -1;
		}
		if (v->n > SCN_MAX_LIST) {
			cli_scn_error(c, v, "%s has more than %d values", cli_scn_path(c),
				      SCN_MAX_LIST);
			return -1;
		}
		*n = v->n;
		return 0;
	}
	if (v && v->kind == YN_MAP) {
		cli_scn_error(c, v, "%s must be a value or a list of values, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	*n = 1;
	return 0;
}

/* Reads one value of a sweep into slot. */
typedef int (*sweep_read_fn)(struct scn_ctx *c, const struct ynode *x, void *slot);

/* A value or a list of values (a sweep), each read by read into a new array of elements of
 * size bytes, which it returns (NULL after an error).  *n counts the values read, and stays 0
 * unless every one of them is good. */
static void *read_sweep(struct scn_ctx *c, const struct ynode *v, size_t size, sweep_read_fn read,
			size_t *n)
{
	size_t want;
	if (list_or_one(c, v, &want))
		return NULL;
	char *arr = calloc(want, size);
	if (!arr) {
		c->oom = true;
		return NULL;
	}
	for (size_t i = 0; i < want; i++) {
		const struct ynode *x = v->kind == YN_SEQ ? v->kids[i] : v;
		size_t mark = v->kind == YN_SEQ ? cli_scn_path_index(c, i) : c->path_len;
		if (read(c, x, arr + *n * size) == 0)
			(*n)++;
		cli_scn_path_pop(c, mark);
	}
	if (*n < want)
		*n = 0;
	return arr;
}

static int read_conc(struct scn_ctx *c, const struct ynode *x, void *slot)
{
	return cli_scn_get_u32(c, x, 1, CL_PLAN_CONCURRENCY_MAX, slot);
}

static int read_rate(struct scn_ctx *c, const struct ynode *x, void *slot)
{
	return cli_scn_get_rate(c, x, slot);
}

static void conv_stage_conc(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct stage_spec *sp = obj;
	sp->conc = read_sweep(c, v, sizeof(*sp->conc), read_conc, &sp->n_conc);
}

static void conv_stage_rate(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct stage_spec *sp = obj;
	sp->rate = read_sweep(c, v, sizeof(*sp->rate), read_rate, &sp->n_rate);
}

static void conv_arrival(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "constant", "poisson", "gamma" };
	cli_scn_get_enum(c, v, names, N(names), &((struct stage_spec *)obj)->arrival);
}

enum {
	SF_NAME,
	SF_CONC,
	SF_RATE,
	SF_ARRIVAL,
	SF_BURST,
	SF_GAMMA,
	SF_MAXC,
	SF_DUR,
	SF_REQ,
	SF_RAMP,
	SF_REPLAY,
	SF_REPEAT,
	SF__COUNT
};

static const struct scn_field stage_fields[SF__COUNT] = {
	[SF_NAME] = SCN_FIELD("name", SCN_F_NESTR, struct stage_spec, name),
	[SF_CONC] = SCN_CUSTOM("concurrency", conv_stage_conc),
	[SF_RATE] = SCN_CUSTOM("rate", conv_stage_rate),
	[SF_ARRIVAL] = SCN_CUSTOM("arrival", conv_arrival),
	[SF_BURST] = SCN_DRANGE("burstiness", struct stage_spec, burstiness, 1e-3, 1000),
	[SF_GAMMA] = SCN_DRANGE("gamma_shape", struct stage_spec, gamma_shape, 1e-3, 1000),
	[SF_MAXC] = SCN_RANGE("max_concurrency", SCN_F_U32, struct stage_spec, max_concurrency, 1,
			      CL_PLAN_CONCURRENCY_MAX),
	[SF_DUR] = SCN_RANGE("duration", SCN_F_DUR, struct stage_spec, duration_us, 1, 100 * DAY),
	[SF_REQ] =
	    SCN_RANGE("requests", SCN_F_U64, struct stage_spec, requests, 1, 1000000000000ull),
	[SF_RAMP] = SCN_RANGE("ramp", SCN_F_DUR, struct stage_spec, ramp_us, 0, 100 * DAY),
	[SF_REPLAY] = SCN_FIELD("replay", SCN_F_BOOL, struct stage_spec, replay),
	[SF_REPEAT] =
	    SCN_RANGE("repeat", SCN_F_U32, struct stage_spec, repeat, 1, CL_SCN_MAX_REPEAT),
};

static void add_stage(struct scn_ctx *c, const struct ynode *entry, const struct stage_spec *sp,
		      const struct ynode **seen, size_t value, bool sweep)
{
	struct scn_loader *l = L(c);
	struct cl_scenario *s = l->s;
	if (s->n_stages >= SCN_MAX_STAGES) {
		if (s->n_stages == SCN_MAX_STAGES)
			cli_scn_error(c, entry, "more than %d stages after expanding sweeps",
				      SCN_MAX_STAGES);
		s->n_stages++; /* counted once past the cap so the error is said once */
		return;
	}
	if (s->n_stages == l->cap_stages) {
		size_t cap = l->cap_stages ? l->cap_stages * 2 : 8;
		struct cl_scn_stage *p = realloc(s->stages, cap * sizeof(*p));
		if (!p) {
			c->oom = true;
			return;
		}
		s->stages = p;
		l->cap_stages = cap;
	}
	struct cl_scn_stage *st = &s->stages[s->n_stages];
	cli_scenario_stage_defaults(st);
	char gen[64];
	if (sp->replay) {
		/* Arrivals are the trace's: rate is its mean once read (1/s until then). */
		st->mode = CL_MODE_RATE;
		st->rate_per_s = 1;
		st->arrival = CL_ARRIVAL_CONSTANT;
		st->concurrency = sp->max_concurrency;
		st->replay = true;
		snprintf(gen, sizeof(gen), "replay");
	} else if (sp->n_conc) {
		st->mode = CL_MODE_CONCURRENCY;
		st->concurrency = sp->conc[value];
		snprintf(gen, sizeof(gen), "c%u", st->concurrency);
	} else {
		st->mode = CL_MODE_RATE;
		st->rate_per_s = sp->rate[value];
		st->concurrency = sp->max_concurrency;
		snprintf(gen, sizeof(gen), "r%g", st->rate_per_s);
		if (seen[SF_ARRIVAL])
			st->arrival = (enum cl_arrival)sp->arrival;
		else if (seen[SF_BURST] || seen[SF_GAMMA])
			st->arrival = CL_ARRIVAL_GAMMA;
		if (seen[SF_BURST])
			st->gamma_shape = sp->burstiness;
		else if (seen[SF_GAMMA])
			st->gamma_shape = sp->gamma_shape;
	}
	st->duration_us = sp->duration_us;
	st->requests = sp->requests;
	st->ramp_us = sp->ramp_us;
	st->repeat = seen[SF_REPEAT] ? sp->repeat : 1;
	st->line = entry->line;
	if (sp->name && sweep)
		st->name = (asprintf(&st->name, "%s-%s", sp->name, gen) < 0) ? NULL : st->name;
	else
		st->name = strdup(sp->name ? sp->name : gen);
	if (!st->name) {
		c->oom = true;
		return;
	}
	l->stage_nodes[s->n_stages] = seen[SF_NAME] ? seen[SF_NAME] : entry;
	s->n_stages++;
}

static void conv_stage(struct scn_ctx *c, const struct ynode *entry)
{
	struct stage_spec sp = { 0 };
	const struct ynode *seen[SF__COUNT] = { 0 };
	char got[96];
	if (!entry || entry->kind != YN_MAP) {
		cli_scn_error(
		    c, entry,
		    "%s must be a mapping such as { concurrency: 8, duration: 1m }, got %s",
		    cli_scn_path(c), cli_scn_describe(entry, got, sizeof(got)));
		return;
	}
	size_t before = c->n_errors;
	cli_scn_fields(c, entry, stage_fields, SF__COUNT, &sp, seen, cli_scn_hint_for);
	const char *p = cli_scn_path(c);

	if (sp.replay) {
		if (seen[SF_REPEAT])
			cli_scn_error(
			    c, seen[SF_REPEAT],
			    "%s.repeat does not apply to a replay stage (a trace replayed "
			    "again is not an independent repeat: its arrivals are the "
			    "same)",
			    p);
		static const int not_replay[] = { SF_CONC,  SF_RATE, SF_ARRIVAL, SF_BURST,
						  SF_GAMMA, SF_REQ,  SF_RAMP };
		for (size_t i = 0; i < N(not_replay); i++) {
			if (seen[not_replay[i]])
				cli_scn_error(c, seen[not_replay[i]],
					      "%s.%s does not apply to a replay stage (the trace "
					      "decides when requests start)",
					      p, stage_fields[not_replay[i]].name);
		}
		if (c->n_errors == before && !c->oom)
			add_stage(c, entry, &sp, seen, 0, false);
		free(sp.name);
		free(sp.conc);
		free(sp.rate);
		return;
	}
	if (!seen[SF_CONC] && !seen[SF_RATE])
		cli_scn_error(c, entry,
			      "%s needs concurrency (closed loop, e.g. concurrency: 8) or rate "
			      "(open loop, e.g. rate: 20/s)",
			      p);
	if (seen[SF_CONC] && seen[SF_RATE])
		cli_scn_error(c, seen[SF_RATE],
			      "%s: concurrency and rate are exclusive (to cap an open-"
			      "loop stage use max_concurrency)",
			      p);
	if (seen[SF_CONC]) {
		static const int rate_only[] = { SF_ARRIVAL, SF_BURST, SF_GAMMA, SF_MAXC };
		for (size_t i = 0; i < N(rate_only); i++) {
			if (seen[rate_only[i]])
				cli_scn_error(c, seen[rate_only[i]],
					      "%s.%s only applies to rate stages", p,
					      stage_fields[rate_only[i]].name);
		}
	}
	if (seen[SF_DUR] && seen[SF_REQ])
		cli_scn_error(c, seen[SF_REQ], "%s: set duration or requests, not both", p);
	if (!seen[SF_DUR] && !seen[SF_REQ])
		cli_scn_error(c, entry,
			      "%s needs a duration (e.g. duration: 2m) or a request count (e.g. "
			      "requests: 100)",
			      p);
	if (seen[SF_BURST] && seen[SF_GAMMA])
		cli_scn_error(c, seen[SF_GAMMA],
			      "%s: burstiness and gamma_shape are the same setting; give "
			      "one",
			      p);
	if ((seen[SF_BURST] || seen[SF_GAMMA]) && seen[SF_ARRIVAL] &&
	    sp.arrival != CL_ARRIVAL_GAMMA)
		cli_scn_error(c, seen[SF_BURST] ? seen[SF_BURST] : seen[SF_GAMMA],
			      "%s.%s needs arrival: gamma", p,
			      seen[SF_BURST] ? "burstiness" : "gamma_shape");
	if (seen[SF_RAMP] && seen[SF_DUR] && sp.ramp_us > sp.duration_us && sp.duration_us > 0) {
		char a[32], b[32];
		cli_scn_error(
		    c, seen[SF_RAMP], "%s.ramp (%s) is longer than the stage's duration (%s)", p,
		    cl_format_duration_us(sp.ramp_us, CL_DURATION_PRECISE, a, sizeof(a)),
		    cl_format_duration_us(sp.duration_us, CL_DURATION_PRECISE, b, sizeof(b)));
	}

	size_t n = sp.n_conc ? sp.n_conc : sp.n_rate;
	if (c->n_errors == before && !c->oom) {
		for (size_t i = 0; i < n; i++)
			add_stage(c, entry, &sp, seen, i, n > 1);
	}
	free(sp.name);
	free(sp.conc);
	free(sp.rate);
}

void cli_scn_conv_stages(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	char got[96];
	if (!v || v->kind != YN_SEQ) {
		cli_scn_error(
		    c, v,
		    "stages must be a list of stages (e.g. '- { concurrency: 8, duration: 1m }'), "
		    "got %s",
		    cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (v->n == 0) {
		cli_scn_error(c, v, "stages is empty: add at least one stage");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		if (cli_scn_is_search_entry(c, v->kids[i]))
			cli_scn_conv_search_stage(c, v->kids[i]);
		else
			conv_stage(c, v->kids[i]);
		cli_scn_path_pop(c, mark);
	}
}
