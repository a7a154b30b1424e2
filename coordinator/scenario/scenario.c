/* The scenario model's defaults (the one place they live) and its destructor. */
#include "coordinator/scenario/scenario.h"

#include "coordinator/scenario/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEC 1000000LL
#define MIN (60 * SEC)

/* Used when the workload names no prompts, dataset or synthetic set (docs/scenario.md,
 * `workload`). */
static const char *const builtin_prompts[] = {
	"Write a Python quicksort.",
	"Explain quantum entanglement.",
	"Redis data structures guide.",
};

/* Asks for a one-word answer, so a readiness probe costs the server almost nothing. */
static const char readiness_prompt[] = "Reply with just the word OK.";

void cl_scenario_defaults(struct cl_scenario *s)
{
	memset(s, 0, sizeof(*s));

	s->target.tls_verify = true;
	s->target.connect_timeout_us = 10 * SEC;
	s->target.server_metrics.interval_us = SEC;

	s->agents.local = 2; /* 0 when agents.listen is set: see cli_scenario_derive_defaults */
	s->agents.join_timeout_us = 60 * SEC;
	s->agents.on_loss = CL_ON_LOSS_FAIL; /* continue for a generate job (scenario/generate.c) */
	s->generate.concurrency = 64;
	s->generate.max_attempts = 4;
	s->generate.backoff_initial_us = 1 * SEC;
	s->generate.backoff_max_us = 30 * SEC;
	s->agents.workers = 0;
	s->agents.report_interval_us = 1 * SEC;

	s->readiness.enabled = true;
	s->readiness.timeout_us = 15 * MIN;
	s->readiness.prompt = NULL; /* readiness_prompt, filled by cli_scenario_derive_defaults */
	s->readiness.max_tokens = 16;
	s->readiness.request_timeout_us = 5 * MIN;
	s->readiness.consecutive = 2;
	s->readiness.backoff_initial_us = 1 * SEC;
	s->readiness.backoff_max_us = 30 * SEC;

	s->warmup.requests = 0;
	s->warmup.duration_us = 0;
	s->warmup.concurrency = 1;
	s->warmup.max_tokens = 0;         /* workload.max_tokens */
	s->warmup.request_timeout_us = 0; /* workload.request_timeout */
	s->warmup.fail_on_error = true;

	s->workload.kind = CL_WORKLOAD_PROMPTS;
	s->workload.dataset_format = CL_DATASET_AUTO;
	s->workload.dataset_limit = 0;
	s->workload.synthetic_input.stddev = 0;
	s->workload.synthetic_input.min = 1;
	s->workload.synthetic_input.max = 0; /* mean + 4 stddev, see cli_scenario_derive_defaults */
	s->workload.synthetic_count = 64;
	s->workload.seed = 1;
	s->workload.trace_speedup = 1;
	s->workload.max_tokens = 256;
	s->workload.embedding_batch = 1;
	s->workload.documents = CL_SCN_DEFAULT_DOCUMENTS;
	s->workload.images.width = s->workload.images.height = 512;
	s->workload.audio.count = 16;
	s->workload.tools_result_tokens = 64;
	s->workload.tools_max_rounds = 1;
	s->workload.request_timeout_us = 10 * MIN;
	s->workload.drain_timeout_us = 30 * SEC;
	s->workload.ignore_eos = -1;
	s->workload.dataset_output = CL_DATASET_OUTPUT_RECORD;

	s->slo_abort_on_breach = false;

	s->output.dir = NULL;
	s->output.formats = CL_FMT_JSON | CL_FMT_CSV | CL_FMT_MD | CL_FMT_HTML;

	s->client_bound = CL_CLIENT_BOUND_FAIL;

	s->slo_abort_intervals = 0;
	s->drift = (struct cl_scn_drift){
		.ttft_p99 = NAN, .itl_p99 = NAN, .output_tokens_per_s = NAN, .error_rate = NAN
	};
}

void cli_scenario_stage_defaults(struct cl_scn_stage *st)
{
	memset(st, 0, sizeof(*st));
	st->mode = CL_MODE_CONCURRENCY;
	/* Open-loop stages default to Poisson arrivals, as real users arrive independently;
	 * constant spacing is the unusual choice and must be asked for. */
	st->arrival = CL_ARRIVAL_POISSON;
	st->gamma_shape = 1.0;
	st->repeat = 1;
}

static int dup_into(char **dst, const char *src)
{
	if (*dst)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : CL_ENOMEM;
}

/* "dir/nightly.yaml" -> "nightly". */
static int name_from_file(struct cl_scenario *s, const char *file)
{
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	size_t len = strlen(base);
	const char *dot = strrchr(base, '.');
	if (dot && dot != base && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0))
		len = (size_t)(dot - base);
	if (len == 0) {
		base = "scenario";
		len = strlen(base);
	}
	s->name = strndup(base, len);
	return s->name ? 0 : CL_ENOMEM;
}

/* A length distribution's bounds when not given: min 1, max mean + 4 stddev. */
static void dist_defaults(struct cl_len_dist *d, bool min_given, bool max_given)
{
	if (!min_given)
		d->min = 1;
	if (!max_given) {
		double hi = ceil(d->mean + 4 * d->stddev);
		d->max = hi > 4294967295.0 ? UINT32_MAX : (uint32_t)hi;
		if (d->max < d->min)
			d->max = d->min;
	}
}

int cli_scenario_derive_defaults(struct cl_scenario *s, const struct scn_given *given,
				 const char *file)
{
	if (!given->agents_local && s->agents.listen)
		s->agents.local = 0;
	if (!given->warmup_max_tokens)
		s->warmup.max_tokens = s->workload.max_tokens;
	if (!given->warmup_request_timeout)
		s->warmup.request_timeout_us = s->workload.request_timeout_us;

	if (s->workload.kind == CL_WORKLOAD_SYNTHETIC) {
		dist_defaults(&s->workload.synthetic_input, given->synthetic_min,
			      given->synthetic_max);
		if (s->workload.synthetic_output.mean > 0)
			dist_defaults(&s->workload.synthetic_output, given->output_min,
				      given->output_max);
	}
	if (s->workload.multi_turn && s->workload.turns.mean > 0)
		dist_defaults(&s->workload.turns, given->turns_min, given->turns_max);

	if (dup_into(&s->readiness.prompt, readiness_prompt))
		return CL_ENOMEM;
	if (!s->name && name_from_file(s, file && *file ? file : "scenario"))
		return CL_ENOMEM;

	if (!given->workload_source && s->workload.kind == CL_WORKLOAD_PROMPTS &&
	    !s->workload.n_prompts) {
		size_t n = sizeof(builtin_prompts) / sizeof(builtin_prompts[0]);
		s->workload.prompts = calloc(n, sizeof(char *));
		if (!s->workload.prompts)
			return CL_ENOMEM;
		for (size_t i = 0; i < n; i++) {
			if (!(s->workload.prompts[i] = strdup(builtin_prompts[i])))
				return CL_ENOMEM;
			s->workload.n_prompts = i + 1;
		}
	}
	return 0;
}

bool cl_scenario_warmup_own_body(const struct cl_scenario *s)
{
	return s->warmup.body_json || s->warmup.max_tokens != s->workload.max_tokens;
}

const char *cl_scenario_render_model(const struct cl_scenario *s)
{
	if (s->target.model)
		return s->target.model;
	if (s->target.simulator) {
		const char *m = "chatload-sim";
		for (size_t i = 0; i < s->target.n_sim; i++)
			if (strcmp(s->target.sim[i].key, "model") == 0)
				m = s->target.sim[i].value;
		return m;
	}
	return "chatload-model-to-be-found";
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

double cl_scenario_cost_per_hour(const struct cl_scn_cost *c)
{
	if (!c || !(c->per_hour > 0))
		return NAN;
	return c->per_hour * (c->gpus ? c->gpus : 1) * (c->servers ? c->servers : 1);
}

void cl_scenario_free(struct cl_scenario *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->description);
	free(s->file);
	free(s->cost.currency);

	struct cl_scn_target *t = &s->target;
	free(t->url);
	for (size_t i = 0; t->urls && i < t->n_urls; i++)
		free(t->urls[i]);
	free(t->urls);
	free(t->model);
	free(t->api_key_env);
	free(t->body_json);
	free_strv(t->headers, t->n_headers);
	free(t->ca_file);
	for (size_t i = 0; t->sim && i < t->n_sim; i++) {
		free(t->sim[i].key);
		free(t->sim[i].value);
	}
	free(t->sim);
	free(t->server_metrics.url);
	free_strv(t->server_metrics.headers, t->server_metrics.n_headers);
	free_strv(t->server_metrics.series, t->server_metrics.n_series);
	free_strv(t->server_metrics.extra, t->server_metrics.n_extra);

	struct cl_scn_agents *a = &s->agents;
	free(a->listen);
	free(a->token_env);
	free(a->token_file);
	free(a->source);
	free(a->tls_cert);
	free(a->tls_key);
	free(a->tls_ca);

	free(s->readiness.prompt);
	free(s->readiness.body_json);
	free(s->warmup.body_json);

	struct cl_scn_workload *w = &s->workload;
	free_strv(w->prompts, w->n_prompts);
	free(w->system_prompt);
	free(w->dataset);
	free(w->trace);
	free(w->audio.dir);
	free(w->audio.language);
	for (size_t i = 0; w->classes && i < w->n_classes; i++)
		cli_scn_class_free(&w->classes[i]);
	free(w->classes);

	for (size_t i = 0; s->stages && i < s->n_stages; i++) {
		free(s->stages[i].name);
		cl_scenario_search_free(s->stages[i].search);
	}
	free(s->stages);
	for (size_t i = 0; s->slos && i < s->n_slos; i++) {
		free(s->slos[i].key);
		free(s->slos[i].stage);
	}
	free(s->slos);

	free(s->estimate.samples);
	free(s->estimate.from_stage);
	free(s->output.dir);
	free(s->generate.input);
	free(s->generate.output);
	free(s->generate.errors);
	free(s->generate.estimate_from);
	memset(s, 0, sizeof(*s));
}

void cl_scenario_search_free(struct cl_scn_search *q)
{
	if (!q)
		return;
	for (size_t i = 0; q->slos && i < q->n_slos; i++) {
		free(q->slos[i].key);
		free(q->slos[i].stage);
	}
	free(q->slos);
	free(q);
}

int cl_scenario_insert_stage(struct cl_scenario *s, size_t at, const struct cl_scn_stage *st)
{
	if (at > s->n_stages)
		at = s->n_stages;
	/* Grown one at a time: a run inserts a handful of probes, between stages. */
	struct cl_scn_stage *p = realloc(s->stages, (s->n_stages + 1) * sizeof(*p));
	if (!p)
		return CL_ENOMEM;
	s->stages = p;
	memmove(&p[at + 1], &p[at], (s->n_stages - at) * sizeof(*p));
	p[at] = *st;
	s->n_stages++;
	return 0;
}

void cl_scenario_remove_stage(struct cl_scenario *s, size_t at)
{
	if (at >= s->n_stages)
		return;
	free(s->stages[at].name);
	cl_scenario_search_free(s->stages[at].search);
	memmove(&s->stages[at], &s->stages[at + 1], (s->n_stages - at - 1) * sizeof(*s->stages));
	s->n_stages--;
}
