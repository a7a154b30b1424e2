/* chatload validate's plan of a scenario, printed section by section with every default
 * shown: target, agents, readiness, warmup, the workload (validate_workload.c), stages, a
 * generate job (validate_generate.c), a capacity search, cost, SLOs, estimate and output. */
#include "coordinator/cmd/validate_int.h"

#include "chatload/metrics.h"
#include "chatload/sim_options.h"
#include "chatload/units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *cli_validate_dur(int64_t us, char *buf, size_t n)
{
	if (us == 0)
		return "0";
	return cl_format_duration_us(us, CL_DURATION_PRECISE, buf, n);
}

static const char *or_none(const char *s, const char *none)
{
	return s ? s : none;
}

static void print_target(const struct cl_scenario *s)
{
	const struct cl_scn_target *t = &s->target;
	char a[32];
	printf("target:\n");
	if (t->simulator) {
		printf("  built-in simulator (chatload-sim)\n");
		/* every setting a scenario may give, in the table's order, defaults marked */
		for (size_t i = 0; i < cl_sim_options_count; i++) {
			const struct cl_sim_option *o = &cl_sim_options[i];
			const char *given = NULL;
			for (size_t k = 0; k < t->n_sim && !given; k++) {
				if (strcmp(t->sim[k].key, o->name) == 0)
					given = t->sim[k].value;
			}
			if (given)
				printf("  simulator %s: %s\n", o->name, given);
			else if (o->scenario && o->def)
				printf("  simulator %s: %s (default)\n", o->name, o->def);
		}
	} else if (t->n_urls) {
		for (size_t i = 0; i < t->n_urls; i++)
			printf("  url %zu: %s\n", i + 1, t->urls[i]);
		printf("  route: %s%s\n", cl_route_name(t->route),
		       t->route_given ? "" : " (default)");
	} else {
		printf("  url: %s\n", t->url);
	}
	printf("  model: %s\n", or_none(t->model, "(the first model /v1/models lists)"));
	if (t->api_key_env)
		printf("  api key: from $%s (read on each agent host)\n", t->api_key_env);
	else
		printf("  api key: none\n");
	printf("  extra body: %s\n", or_none(t->body_json, "none"));
	for (size_t i = 0; i < t->n_headers; i++)
		printf("  header: %s\n", t->headers[i]);
	printf("  http2: %s\n", !t->http2           ? "no"
				: t->http2_fallback ? "preferred (HTTP/1.1 allowed)"
						    : "required");
	if (t->http2)
		printf("  http2 streams per connection: %u%s\n",
		       t->http2_streams ? t->http2_streams : CL_HTTP2_DEFAULT_STREAMS,
		       t->http2_streams ? "" : " (default)");
	printf("  tls verify: %s%s%s\n", t->tls_verify ? "yes" : "no", t->ca_file ? ", ca " : "",
	       t->ca_file ? t->ca_file : "");
	printf("  connect timeout: %s\n", cli_validate_dur(t->connect_timeout_us, a, sizeof(a)));
	const struct cl_scn_server_metrics *sm = &t->server_metrics;
	if (sm->mode == CL_SCN_SRV_OFF) {
		printf("  server metrics: off\n");
	} else {
		printf("  server metrics: %s every %s",
		       sm->mode == CL_SCN_SRV_URL ? sm->url : "auto (the target's /metrics)",
		       cli_validate_dur(sm->interval_us, a, sizeof(a)));
		if (sm->n_headers)
			printf(", %zu header%s", sm->n_headers, sm->n_headers == 1 ? "" : "s");
		for (size_t i = 0; i < sm->n_series; i++)
			printf("%s%s", i ? ", " : "; series kept first: ", sm->series[i]);
		for (size_t i = 0; i < sm->n_extra; i++)
			printf("%s%s", i ? ", " : "; exporters also scraped: ", sm->extra[i]);
		printf("\n");
	}
}

static void print_agents(const struct cl_scn_agents *a)
{
	char b[32];
	printf("agents:\n");
	if (a->local_auto)
		printf("  local: auto (as many agents as the largest stage needs, sized when the "
		       "run starts)\n");
	else
		printf("  local: %u\n", a->local);
	if (a->source && a->source->n) {
		printf("  source addresses: %zu (", a->source->n);
		for (size_t i = 0; i < a->source->n && i < 4; i++)
			printf("%s%s", i ? ", " : "", a->source->addr[i]);
		printf("%s)\n", a->source->n > 4 ? ", ..." : "");
	}
	if (a->listen) {
		printf("  listen: %s\n", a->listen);
		printf("  expect: %u remote\n", a->expect);
	}
	if (a->workers)
		printf("  workers per agent: %u\n", a->workers);
	else
		printf("  workers per agent: one per core of the agent's host\n");
	printf("  join timeout: %s\n", cli_validate_dur(a->join_timeout_us, b, sizeof(b)));
	printf("  on loss: %s\n", a->on_loss == CL_ON_LOSS_CONTINUE ? "continue" : "fail");
	printf("  report interval: %s\n", cli_validate_dur(a->report_interval_us, b, sizeof(b)));
	if (a->token_env)
		printf("  token from: $%s\n", a->token_env);
	if (a->token_file)
		printf("  token from: %s\n", a->token_file);
	if (a->tls_cert)
		printf("  tls: cert %s, key %s%s%s\n", a->tls_cert, or_none(a->tls_key, "-"),
		       a->tls_ca ? ", ca " : "", a->tls_ca ? a->tls_ca : "");
}

static void print_readiness(const struct cl_scn_readiness *r)
{
	char a[32], b[32];
	printf("readiness:\n");
	if (!r->enabled) {
		printf("  disabled\n");
		return;
	}
	printf("  timeout: %s\n", cli_validate_dur(r->timeout_us, a, sizeof(a)));
	printf("  prompt: \"%s\"\n", or_none(r->prompt, ""));
	printf("  max tokens: %u\n", r->max_tokens);
	printf("  consecutive successes: %u\n", r->consecutive);
	printf("  request timeout: %s\n", cli_validate_dur(r->request_timeout_us, a, sizeof(a)));
	printf("  backoff: %s to %s\n", cli_validate_dur(r->backoff_initial_us, a, sizeof(a)),
	       cli_validate_dur(r->backoff_max_us, b, sizeof(b)));
	if (r->body_json)
		printf("  extra body: %s\n", r->body_json);
}

static void print_warmup(const struct cl_scenario *s, const struct cl_workload_stats *st)
{
	const struct cl_scn_warmup *w = &s->warmup;
	char a[32];
	printf("warmup:\n");
	if (!w->requests && !w->duration_us) {
		printf("  none\n");
		return;
	}
	if (w->requests)
		printf("  requests: %u\n", w->requests);
	else
		printf("  duration: %s\n", cli_validate_dur(w->duration_us, a, sizeof(a)));
	printf("  concurrency: %u\n", w->concurrency);
	/* What the warmup sends, as the run decides it: its own body, or the workload's bodies
	 * as they are (each with its own max_tokens, whatever warmup.max_tokens defaulted to). */
	if (cl_scenario_warmup_own_body(s))
		printf("  max tokens: %u (a body of its own: the %s prompt)\n", w->max_tokens,
		       s->workload.kind == CL_WORKLOAD_PROMPTS && s->workload.n_prompts
			   ? "first inline"
			   : "readiness");
	else if (!cl_api_streams(s->workload.api))
		printf("  bodies: the workload's own\n");
	else if (st->requested_min == st->requested_max)
		printf("  max tokens: %u (the workload's own bodies)\n", st->requested_max);
	else
		printf("  max tokens: %u..%u (the workload's own bodies, each its own)\n",
		       st->requested_min, st->requested_max);
	printf("  request timeout: %s\n", cli_validate_dur(w->request_timeout_us, a, sizeof(a)));
	printf("  fail on error: %s\n", w->fail_on_error ? "yes" : "no");
	if (w->body_json)
		printf("  extra body: %s\n", w->body_json);
}

static void print_stages(const struct cl_scenario *s, const struct cl_gen_scan *scan)
{
	char a[32], load[96], bound[48];
	printf("stages: %zu\n", s->n_stages);
	printf("  %-3s %-16s %-12s %-34s %-16s %s\n", "#", "name", "mode", "load", "bound", "ramp");
	for (size_t i = 0; i < s->n_stages; i++) {
		const struct cl_scn_stage *st = &s->stages[i];
		if (st->search) {
			printf("  %-3zu %-16s %-12s %-34s %-16s %s\n", i, st->name, "search",
			       st->mode == CL_MODE_CONCURRENCY ? "over concurrency" : "over rate",
			       "probes (below)", "-");
			continue;
		}
		if (st->mode == CL_MODE_CONCURRENCY) {
			snprintf(load, sizeof(load), "concurrency %u", st->concurrency);
		} else {
			int n = st->replay ? snprintf(load, sizeof(load),
						      "trace replay, mean %.3g/s", st->rate_per_s)
					   : snprintf(load, sizeof(load), "%g/s %s", st->rate_per_s,
						      cl_arrival_name(st->arrival));
			if (st->arrival == CL_ARRIVAL_GAMMA && n > 0 && (size_t)n < sizeof(load))
				n += snprintf(load + n, sizeof(load) - (size_t)n, " (shape %g)",
					      st->gamma_shape);
			if (st->concurrency && n > 0 && (size_t)n < sizeof(load))
				snprintf(load + n, sizeof(load) - (size_t)n, ", cap %u",
					 st->concurrency);
		}
		if (s->generate.set) /* a job: every valid line of its input, once */
			snprintf(bound, sizeof(bound), "%llu request%s",
				 (unsigned long long)scan->valid, scan->valid == 1 ? "" : "s");
		else if (st->requests)
			snprintf(bound, sizeof(bound), "%llu requests",
				 (unsigned long long)st->requests);
		else
			snprintf(bound, sizeof(bound), "%s",
				 cli_validate_dur(st->duration_us, a, sizeof(a)));
		if (st->repeat > 1) {
			size_t len = strlen(bound);
			snprintf(bound + len, sizeof(bound) - len, " x%u", st->repeat);
		}
		printf("  %-3zu %-16s %-12s %-34s %-16s %s\n", i, st->name,
		       cl_load_mode_name(st->mode), load, bound,
		       st->ramp_us ? cli_validate_dur(st->ramp_us, a, sizeof(a)) : "-");
	}
}

void cli_validate_print_slo(const struct cl_scn_slo *o, const char *stage)
{
	char a[32];
	switch (o->kind) {
	case CL_SLO_LATENCY:
		if (o->percentile < 0)
			printf("  %s: mean %s <= %s (%s)\n", o->key, cl_lat_name(o->lat),
			       cli_validate_dur((int64_t)o->limit, a, sizeof(a)), stage);
		else
			printf("  %s: p%g of %s <= %s (%s)\n", o->key, o->percentile,
			       cl_lat_name(o->lat),
			       cli_validate_dur((int64_t)o->limit, a, sizeof(a)), stage);
		break;
	case CL_SLO_ERROR_RATE:
		printf("  %s: errors <= %g%% (%s)\n", o->key, o->limit * 100, stage);
		break;
	case CL_SLO_MIN_OUTPUT_TPS:
		printf("  %s: output tokens/s >= %g (%s)\n", o->key, o->limit, stage);
		break;
	case CL_SLO_MIN_REQUEST_RATE:
		printf("  %s: completed requests/s >= %g (%s)\n", o->key, o->limit, stage);
		break;
	}
}

/* A level of a search: "8 streams" or "20/s". */
static char *level(const struct cl_scn_search *q, double v, char *buf, size_t n)
{
	if (q->over == CL_MODE_CONCURRENCY)
		snprintf(buf, n, "%g streams", v);
	else
		snprintf(buf, n, "%g/s", v);
	return buf;
}

static void print_search(const struct cl_scenario *s)
{
	for (size_t i = 0; i < s->n_stages; i++) {
		const struct cl_scn_search *q = s->stages[i].search;
		if (!q)
			continue;
		char a[32], b[32], t[64], d[32];
		if (q->tolerance_relative)
			snprintf(t, sizeof(t), "%g%% of the upper bracket", q->tolerance * 100);
		else
			level(q, q->tolerance, t, sizeof(t));
		printf("search '%s':\n  over: %s, from %s up to %s, doubling then bisecting\n",
		       s->stages[i].name, cl_load_mode_name(q->over),
		       level(q, q->from, a, sizeof(a)), level(q, q->max, b, sizeof(b)));
		printf("  tolerance: %s\n  each probe: %s", t,
		       cli_validate_dur(q->probe_duration_us, d, sizeof(d)));
		if (q->ramp_us)
			printf(" after a %s ramp", cli_validate_dur(q->ramp_us, d, sizeof(d)));
		if (q->over == CL_MODE_RATE)
			printf(", %s arrivals", cl_arrival_name(q->arrival));
		printf("\n  a probe passes when it meets:\n");
		for (size_t k = 0; k < q->n_slos; k++)
			cli_validate_print_slo(&q->slos[k], "each probe");
	}
	if (s->cost.per_hour > 0) {
		const char *cur = s->cost.currency ? s->cost.currency : "";
		unsigned servers = s->cost.servers ? s->cost.servers : 1;
		printf("cost: %g%s%s an hour for the target (", cl_scenario_cost_per_hour(&s->cost),
		       *cur ? " " : "", cur);
		if (s->cost.gpus)
			printf("%g per GPU x %u GPUs x %u server%s)\n", s->cost.per_hour,
			       s->cost.gpus, servers, servers == 1 ? "" : "s");
		else
			printf("%g per server x %u server%s)\n", s->cost.per_hour, servers,
			       servers == 1 ? "" : "s");
	}
	if (s->plan.requests_per_s > 0)
		printf("plan: servers and agents for %g requests/s\n", s->plan.requests_per_s);
	else if (s->plan.output_tokens_per_s > 0)
		printf("plan: servers and agents for %g output tokens/s\n",
		       s->plan.output_tokens_per_s);
}

static void print_slos(const struct cl_scenario *s)
{
	char a[32];
	printf("slo:\n");
	if (!s->n_slos)
		printf("  none\n");
	for (size_t i = 0; i < s->n_slos; i++)
		cli_validate_print_slo(&s->slos[i],
				       s->slos[i].stage ? s->slos[i].stage : "every stage");
	if (s->slo_abort_intervals)
		printf("  abort on breach: yes, after %u consecutive breached intervals\n",
		       s->slo_abort_intervals);
	else
		printf("  abort on breach: %s\n",
		       s->slo_abort_on_breach ? "yes, after a breached stage" : "no");
	const struct cl_scn_drift *d = &s->drift;
	if (d->set) {
		printf("  max drift (first window against last, %s):",
		       d->window_us ? cli_validate_dur(d->window_us, a, sizeof(a))
				    : "a quarter of each stage");
		if (!isnan(d->ttft_p99))
			printf(" ttft_p99 +%g%%", d->ttft_p99 * 100);
		if (!isnan(d->itl_p99))
			printf(" itl_p99 +%g%%", d->itl_p99 * 100);
		if (!isnan(d->output_tokens_per_s))
			printf(" output_tokens_per_s -%g%%", d->output_tokens_per_s * 100);
		if (!isnan(d->error_rate))
			printf(" error_rate +%g points", d->error_rate * 100);
		printf("\n");
	}
	printf("client-bound stage: %s\n", s->client_bound == CL_CLIENT_BOUND_WARN
					       ? "warn (the run still passes)"
					       : "fail (exit 1: its numbers describe the client)");
}

void cli_validate_print_plan(const struct cl_scenario *s, const struct cl_workload_stats *st,
			     const struct cl_gen_scan *scan, const struct cl_err *first_bad)
{
	printf("scenario: %s (%s)\n", s->name, s->file);
	if (s->description)
		printf("description: %s\n", s->description);
	print_target(s);
	print_agents(&s->agents);
	print_readiness(&s->readiness);
	print_warmup(s, st);
	cli_validate_print_workload(&s->workload, st);
	print_stages(s, scan);
	if (s->generate.set)
		cli_validate_print_generate(s, scan, first_bad);
	print_search(s);
	print_slos(s);
	printf("estimate:\n");
	if (!s->estimate.n_samples) {
		printf("  none\n");
	} else {
		printf("  samples:");
		for (size_t i = 0; i < s->estimate.n_samples; i++)
			printf(" %llu", (unsigned long long)s->estimate.samples[i]);
		printf("\n  from stage: %s\n", or_none(s->estimate.from_stage, "(the last stage)"));
	}
	static const char *const fmt[] = { "json", "csv", "md", "html" };
	printf("output:\n  dir: %s\n  formats:",
	       or_none(s->output.dir, "results/<name>-<UTC time>/"));
	for (int i = 0; i < 4; i++) {
		if (s->output.formats & (1u << i))
			printf(" %s", fmt[i]);
	}
	printf("\n");
}
