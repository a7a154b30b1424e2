/* chatload validate: loads scenarios, prints every error with its position, or the resolved
 * plan with every default shown. */
#include "coordinator/cmd/commands.h"

#include "chatload/exitcode.h"
#include "chatload/metrics.h"
#include "coordinator/generate/batch.h"
#include "coordinator/results/results.h"
#include "coordinator/scenario/scenario.h"
#include "chatload/sim_options.h"
#include "chatload/units.h"
#include "coordinator/workload/workload.h"

#include <errno.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* workload.tools.choice as written. */
static const char *tool_choice_name(enum cl_tool_choice c)
{
	static const char *const names[] = { "auto", "none", "required" };
	return (unsigned)c < 3 ? names[c] : "auto";
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: chatload validate [--set KEY.PATH=VALUE]... SCENARIO...\n\n"
	    "Checks each scenario and prints the plan it resolves to, defaults included.\n"
	    "Errors are printed as file:line:column: message.\n\n"
	    "The workload is read in full (every dataset line), as chatload run reads it before\n"
	    "it starts anything; so is a generate job's input (nothing is written).\n\n"
	    "options:\n"
	    "  --set KEY.PATH=VALUE  override a value before checking, e.g.\n"
	    "                        --set stages.0.duration=30s --set target.model=x\n"
	    "                        (list entries by index; VALUE is YAML, so [1,2] is a list)\n"
	    "  --dump-bodies FILE    write the request bodies, one JSON object a line, in the\n"
	    "                        order an agent starting at the first sends them (one\n"
	    "                        scenario only), with an example of the run's salt\n"
	    "  -h, --help            show this help\n\n"
	    "exit codes: 0 every scenario is valid, 2 a scenario has errors or cannot be read\n");
}

static const char *dur(int64_t us, char *buf, size_t n)
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
	printf("  connect timeout: %s\n", dur(t->connect_timeout_us, a, sizeof(a)));
	const struct cl_scn_server_metrics *sm = &t->server_metrics;
	if (sm->mode == CL_SCN_SRV_OFF) {
		printf("  server metrics: off\n");
	} else {
		printf("  server metrics: %s every %s",
		       sm->mode == CL_SCN_SRV_URL ? sm->url : "auto (the target's /metrics)",
		       dur(sm->interval_us, a, sizeof(a)));
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
	printf("  join timeout: %s\n", dur(a->join_timeout_us, b, sizeof(b)));
	printf("  on loss: %s\n", a->on_loss == CL_ON_LOSS_CONTINUE ? "continue" : "fail");
	printf("  report interval: %s\n", dur(a->report_interval_us, b, sizeof(b)));
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
	printf("  timeout: %s\n", dur(r->timeout_us, a, sizeof(a)));
	printf("  prompt: \"%s\"\n", or_none(r->prompt, ""));
	printf("  max tokens: %u\n", r->max_tokens);
	printf("  consecutive successes: %u\n", r->consecutive);
	printf("  request timeout: %s\n", dur(r->request_timeout_us, a, sizeof(a)));
	printf("  backoff: %s to %s\n", dur(r->backoff_initial_us, a, sizeof(a)),
	       dur(r->backoff_max_us, b, sizeof(b)));
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
		printf("  duration: %s\n", dur(w->duration_us, a, sizeof(a)));
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
	printf("  request timeout: %s\n", dur(w->request_timeout_us, a, sizeof(a)));
	printf("  fail on error: %s\n", w->fail_on_error ? "yes" : "no");
	if (w->body_json)
		printf("  extra body: %s\n", w->body_json);
}

/* What reading the workload gave: records, bodies, output lengths, shared prefixes. */
static void print_workload_read(const struct cl_scn_workload *w, const struct cl_workload_stats *st)
{
	if (w->kind == CL_WORKLOAD_DATASET) {
		printf("  read: %zu records", st->records);
		if (st->filtered)
			printf(", %zu left out by the filter", st->filtered);
		if (st->limited)
			printf(", %zu left out by the limit", st->limited);
		printf("\n");
	}
	if (w->api != CL_API_TRANSCRIPTION)
		printf("  request bodies: %zu (prompts of %.1f tokens on average, estimated)\n",
		       st->bodies, st->bodies ? (double)st->prompt_tokens_sum / st->bodies : 0.0);
	if (st->images) {
		static const char *const fmt[] = { "png", "jpeg" };
		printf("  images: %u per request, %ux%u %s, made from the seed; bodies of %.0f "
		       "bytes on average\n",
		       st->images, w->images.width, w->images.height,
		       fmt[w->images.format == CL_IMAGE_JPEG],
		       st->bodies ? (double)st->body_bytes_sum / st->bodies : 0.0);
	}
	if (w->api == CL_API_TRANSCRIPTION) {
		/* The bodies are descriptions of the clips; their audio is what counts. */
		printf("  audio: %zu clips%s\n", st->bodies, w->audio.dir ? ", each checked" : "");
		return;
	}
	if (w->api == CL_API_EMBEDDINGS) {
		/* Nothing is generated: no lengths or ends of sequence to report. */
		printf("  inputs: %zu prompts, %u to a request\n",
		       st->records ? st->records : st->bodies, w->embedding_batch);
		return;
	}
	if (cl_api_scores(w->api)) {
		/* Nothing is generated: each request is a query and its documents. */
		printf("  requests: %zu, each a query and up to %u documents\n", st->bodies,
		       w->documents);
		return;
	}
	printf("  output tokens asked: %u..%u, mean %.1f; %zu bodies with their own length, "
	       "%zu with max_tokens\n",
	       st->requested_min, st->requested_max,
	       st->bodies ? (double)st->requested_sum / st->bodies : 0.0, st->own_length,
	       st->bodies - st->own_length);
	printf("  ignore_eos: on %zu of %zu bodies\n", st->ignore_eos, st->bodies);
	if (st->stop)
		printf("  stop: on %zu of %zu bodies (an answer ends where a stop sequence "
		       "appears, before max_tokens)\n",
		       st->stop, st->bodies);
	if (st->prefix_groups)
		printf("  shared prefix: %u groups of %u tokens\n", st->prefix_groups,
		       st->prefix_tokens);
	if (w->kind == CL_WORKLOAD_TRACE)
		printf("  trace: %zu requests over %.3f s (speedup applied), a mean %.3g/s\n",
		       st->bodies, st->trace_span_us / 1e6,
		       st->bodies / ((st->trace_span_us + 1000) / 1e6));
}

static void print_slo(const struct cl_scn_slo *o, const char *stage);

/* workload.classes: each class's share of the bodies as rendered (exact by weight), and its
 * shape: model, priority, output length, extra keys, headers, SLOs. */
static void print_classes(const struct cl_scn_workload *w, const struct cl_workload_plan *p)
{
	if (!w->n_classes)
		return;
	size_t count[CL_SCN_MAX_CLASSES] = { 0 };
	for (size_t i = 0; i < p->n_bodies; i++)
		if (p->bodies[i].cls < CL_SCN_MAX_CLASSES)
			count[p->bodies[i].cls]++;
	printf("  classes: %zu (each request's class drawn by weight, apportioned exactly over "
	       "the bodies)\n",
	       w->n_classes);
	for (size_t k = 0; k < w->n_classes; k++) {
		const struct cl_scn_class *c = &w->classes[k];
		printf("    - %s: weight %u, %zu of %zu bodies (%.1f%%), model %s", c->name,
		       c->weight, count[k], p->n_bodies,
		       p->n_bodies ? 100.0 * (double)count[k] / (double)p->n_bodies : 0.0,
		       c->model ? c->model : "(the run's)");
		if (c->priority_set)
			printf(", priority %lld", (long long)c->priority);
		if (c->n_prompts)
			printf(", %zu prompts of its own", c->n_prompts);
		else if (c->input_tokens)
			printf(", synthetic prompts of %u tokens", c->input_tokens);
		else if (c->dataset)
			printf(", dataset %s", c->dataset);
		if (c->output_tokens)
			printf(", output %u tokens (ignore_eos)", c->output_tokens);
		else if (c->max_tokens)
			printf(", max_tokens %u", c->max_tokens);
		printf("\n");
		if (c->body_json)
			printf("      body: %s\n", c->body_json);
		for (size_t h = 0; h < c->n_headers; h++)
			printf("      header: %s\n", c->headers[h]);
		for (size_t i = 0; i < c->n_slos; i++)
			print_slo(&c->slos[i], "this class, every stage");
	}
}

static void print_workload(const struct cl_scn_workload *w, const char *salt)
{
	static const char *const formats[] = { "auto", "openai", "sharegpt", "text" };
	char a[32];
	printf("workload:\n");
	if (w->api == CL_API_TRANSCRIPTION) {
		const struct cl_scn_audio *au = &w->audio;
		if (au->dir)
			printf("  audio: the .wav files of %s, in name order\n", au->dir);
		else
			printf(
			    "  audio: %u clips of %g s (stddev %g, %g..%g), 16 kHz mono WAV made "
			    "from the seed\n",
			    au->count, au->seconds_mean, au->seconds_stddev, au->seconds_min,
			    au->seconds_max);
		printf("  api: transcription (POST %s, multipart/form-data)\n",
		       cl_api_path(w->api));
		printf("  language: %s\n", au->language ? au->language : "none (the server's)");
		printf("  answer: %s\n", au->stream ? "streamed text deltas" : "one JSON document");
		printf("  request timeout: %s\n", dur(w->request_timeout_us, a, sizeof(a)));
		printf("  drain timeout: %s\n", dur(w->drain_timeout_us, a, sizeof(a)));
		printf("  seed: %llu\n", (unsigned long long)w->seed);
		return;
	}
	switch (w->kind) {
	case CL_WORKLOAD_PROMPTS:
		printf("  prompts: %zu inline\n", w->n_prompts);
		for (size_t i = 0; i < w->n_prompts && i < 5; i++) {
			size_t len = strlen(w->prompts[i]);
			printf("    - \"%.*s%s\"\n", (int)(len > 60 ? 60 : len), w->prompts[i],
			       len > 60 ? "..." : "");
		}
		if (w->n_prompts > 5)
			printf("    ... and %zu more\n", w->n_prompts - 5);
		break;
	case CL_WORKLOAD_DATASET: {
		const struct cl_dataset_filter *f = &w->dataset_filter;
		printf("  dataset: %s (format %s", w->dataset, formats[w->dataset_format]);
		if (w->dataset_limit)
			printf(", %s %u records", w->dataset_shuffle ? "any" : "first",
			       w->dataset_limit);
		printf(")\n");
		printf("  dataset order: %s\n",
		       w->dataset_shuffle ? "shuffled with the seed" : "as in the file");
		printf("  dataset output tokens: %s\n",
		       w->dataset_output == CL_DATASET_OUTPUT_RECORD ? "each record's own length"
								     : "max_tokens");
		if (f->min_input || f->max_input || f->min_output || f->max_output)
			printf("  dataset filter: input tokens %u..%u, output tokens %u..%u (0: no "
			       "bound)\n",
			       f->min_input, f->max_input, f->min_output, f->max_output);
		break;
	}
	case CL_WORKLOAD_SYNTHETIC:
		printf("  synthetic: %u prompts of %g tokens (stddev %g, %u..%u)\n",
		       w->synthetic_count, w->synthetic_input.mean, w->synthetic_input.stddev,
		       w->synthetic_input.min, w->synthetic_input.max);
		if (w->synthetic_output.mean > 0)
			printf("  synthetic output: %g tokens (stddev %g, %u..%u)\n",
			       w->synthetic_output.mean, w->synthetic_output.stddev,
			       w->synthetic_output.min, w->synthetic_output.max);
		if (w->multi_turn)
			printf("  multi-turn: each prompt a conversation of %g turns (stddev %g, "
			       "%u..%u), think time %s\n",
			       w->turns.mean, w->turns.stddev, w->turns.min, w->turns.max,
			       dur(w->think_time_us, a, sizeof(a)));
		if (w->tools_count && w->multi_turn)
			printf("  tools: %u synthetic functions, tool_choice %s; agentic loop: a "
			       "tool call gets a %u-token result, up to %u rounds a turn\n",
			       w->tools_count, tool_choice_name(w->tools_choice),
			       w->tools_result_tokens, w->tools_max_rounds);
		else if (w->tools_count)
			printf("  tools: %u synthetic functions, tool_choice %s\n", w->tools_count,
			       tool_choice_name(w->tools_choice));
		break;
	case CL_WORKLOAD_TRACE: {
		static const char *const tf[] = { "auto", "mooncake", "azure" };
		printf("  trace: %s (format %s), replayed at speedup %g\n", w->trace,
		       tf[(unsigned)w->trace_format < 3 ? w->trace_format : 0], w->trace_speedup);
		break;
	}
	}
	if (w->shared_prefix_groups)
		printf("  shared prefix: %u groups, %u tokens each\n", w->shared_prefix_groups,
		       w->shared_prefix_tokens);
	if (w->system_prompt)
		printf("  system prompt: \"%s\"\n", w->system_prompt);
	printf("  api: %s (POST %s)%s\n", cl_api_name(w->api), cl_api_path(w->api),
	       w->api == CL_API_CHAT ? " (default)" : "");
	if (w->api == CL_API_EMBEDDINGS)
		printf("  embedding batch: %u inputs per request\n", w->embedding_batch);
	else if (cl_api_scores(w->api))
		printf("  documents: %u per request, after its query\n", w->documents);
	else
		printf("  max tokens: %u\n", w->max_tokens);
	printf("  request timeout: %s\n", dur(w->request_timeout_us, a, sizeof(a)));
	printf("  drain timeout: %s\n", dur(w->drain_timeout_us, a, sizeof(a)));
	if (w->cancel_share > 0 && w->cancel_after_tokens)
		printf("  cancel: %g%% of each stage's requests, closed by the client after %u "
		       "tokens\n",
		       w->cancel_share * 100, w->cancel_after_tokens);
	else if (w->cancel_share > 0 && w->cancel_after_max_us > w->cancel_after_us) {
		char b[32];
		printf("  cancel: %g%% of each stage's requests, closed by the client after a "
		       "delay drawn from %s..%s\n",
		       w->cancel_share * 100, dur(w->cancel_after_us, a, sizeof(a)),
		       dur(w->cancel_after_max_us, b, sizeof(b)));
	} else if (w->cancel_share > 0)
		printf("  cancel: %g%% of each stage's requests, closed by the client after %s\n",
		       w->cancel_share * 100, dur(w->cancel_after_us, a, sizeof(a)));
	printf("  seed: %llu\n", (unsigned long long)w->seed);
	printf("  order: %s\n", w->order_per_stage
				    ? "per_stage (every stage sends the same bodies again)"
				    : "run (the warmup and each stage take the next bodies)");
	if (!salt[0])
		printf("  salt: none (the text exactly as written)\n");
	else
		printf("  salt: [%s] before every first message (a new tag every run)\n", salt);
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
			snprintf(bound, sizeof(bound), "%s", dur(st->duration_us, a, sizeof(a)));
		if (st->repeat > 1) {
			size_t len = strlen(bound);
			snprintf(bound + len, sizeof(bound) - len, " x%u", st->repeat);
		}
		printf("  %-3zu %-16s %-12s %-34s %-16s %s\n", i, st->name,
		       cl_load_mode_name(st->mode), load, bound,
		       st->ramp_us ? dur(st->ramp_us, a, sizeof(a)) : "-");
	}
}

static void print_slo(const struct cl_scn_slo *o, const char *stage)
{
	char a[32];
	switch (o->kind) {
	case CL_SLO_LATENCY:
		if (o->percentile < 0)
			printf("  %s: mean %s <= %s (%s)\n", o->key, cl_lat_name(o->lat),
			       dur((int64_t)o->limit, a, sizeof(a)), stage);
		else
			printf("  %s: p%g of %s <= %s (%s)\n", o->key, o->percentile,
			       cl_lat_name(o->lat), dur((int64_t)o->limit, a, sizeof(a)), stage);
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
		       dur(q->probe_duration_us, d, sizeof(d)));
		if (q->ramp_us)
			printf(" after a %s ramp", dur(q->ramp_us, d, sizeof(d)));
		if (q->over == CL_MODE_RATE)
			printf(", %s arrivals", cl_arrival_name(q->arrival));
		printf("\n  a probe passes when it meets:\n");
		for (size_t k = 0; k < q->n_slos; k++)
			print_slo(&q->slos[k], "each probe");
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
		print_slo(&s->slos[i], s->slos[i].stage ? s->slos[i].stage : "every stage");
	if (s->slo_abort_intervals)
		printf("  abort on breach: yes, after %u consecutive breached intervals\n",
		       s->slo_abort_intervals);
	else
		printf("  abort on breach: %s\n",
		       s->slo_abort_on_breach ? "yes, after a breached stage" : "no");
	const struct cl_scn_drift *d = &s->drift;
	if (d->set) {
		printf("  max drift (first window against last, %s):",
		       d->window_us ? dur(d->window_us, a, sizeof(a)) : "a quarter of each stage");
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

/* generate.estimate_from: the file, the stage its estimate rests on and its rate, and a
 * warning when that stage was client-bound (its rate then describes the client). */
static void print_estimate_from(const char *path)
{
	json_t *doc = NULL;
	struct cl_err err = { 0 };
	char msg[600];
	printf("  estimate from: %s\n", path);
	if (cl_results_load(path, &doc, &err) != 0) {
		printf("    cannot read it: %s\n", cl_err_format(&err, msg, sizeof(msg)));
		return;
	}
	double rps;
	bool client_bound;
	const char *stage = cl_results_estimate_source(doc, &rps, &client_bound);
	if (!stage)
		printf("    no estimate with a stage in it: run the benchmark with estimate: { "
		       "samples: [...] }\n");
	else
		printf("    its estimate: stage '%s', %.4g requests/s\n", stage, rps);
	if (stage && client_bound)
		printf("    warning: stage '%s' was client-bound: its %.4g requests/s describe the "
		       "client, not the server, so the job's plan may be too long; estimate from "
		       "a stage that was not\n",
		       stage, rps);
	json_decref(doc);
}

/* A generate job: its settings and what the input check found (nothing is written, so
 * ids already in output or errors are not counted: run skips them). */
static void print_generate(const struct cl_scenario *s, const struct cl_gen_scan *scan,
			   const struct cl_err *first_bad)
{
	const struct cl_scn_generate *g = &s->generate;
	char a[32], b[32], msg[1024];
	printf("generate:\n");
	static const char *const formats[] = { "batch", "openai", "sharegpt", "text" };
	printf("  input: %s\n", g->input);
	printf("  input format: %s%s\n", formats[g->input_format],
	       g->input_format == CL_GEN_INPUT_BATCH
		   ? ""
		   : " (a dataset: each record's custom_id is its line number; workload's model, "
		     "system_prompt, max_tokens and target.body apply, never ignore_eos)");
	printf("  input %s: %llu, %llu valid, %llu invalid\n",
	       g->input_format == CL_GEN_INPUT_BATCH ? "lines" : "records",
	       (unsigned long long)scan->lines, (unsigned long long)scan->valid,
	       (unsigned long long)scan->invalid);
	if (scan->invalid)
		printf("  first invalid line (skip_invalid: written to errors): %s\n",
		       cl_err_format(first_bad, msg, sizeof(msg)));
	printf("  output: %s\n  errors: %s\n", g->output, g->errors);
	if (g->rate_per_s > 0)
		printf("  rate: %g/s, evenly spaced (retries included), at most %u streams\n",
		       g->rate_per_s, g->concurrency);
	else
		printf("  concurrency: %u\n", g->concurrency);
	printf("  max attempts: %u\n", g->max_attempts);
	printf("  backoff: %s to %s\n", dur(g->backoff_initial_us, a, sizeof(a)),
	       dur(g->backoff_max_us, b, sizeof(b)));
	printf("  skip invalid: %s\n", g->skip_invalid ? "yes" : "no");
	if (g->estimate_from)
		print_estimate_from(g->estimate_from);
}

/* A dataset's rendered record, counted (a cl_workload_body_fn): validate writes nothing. */
static int count_record(void *arg, uint32_t line, const char *json, size_t len, struct cl_err *err)
{
	(void)line, (void)json, (void)len, (void)err;
	((struct cl_gen_scan *)arg)->lines++;
	return 0;
}

/* A generate job's input checked as chatload run checks it, with nothing written: 0, or
 * CL_EINVAL with err naming file:line:col, or CL_EIO / CL_ENOMEM.  With skip_invalid the
 * first bad line is left in first_bad. */
static int check_generate(const struct cl_scenario *s, struct cl_gen_scan *scan,
			  struct cl_err *first_bad, struct cl_err *err)
{
	if (s->generate.input_format != CL_GEN_INPUT_BATCH) {
		/* a dataset: every record rendered as run renders it, one at a time, and counted;
		 * a bad one stops it */
		int rc = cl_workload_render_generate(s, cl_scenario_render_model(s), count_record,
						     scan, NULL, err);
		if (rc == 0)
			scan->valid = scan->to_send = scan->lines;
		return rc;
	}
	struct cl_gen_idset seen = { 0 };
	int rc = cl_gen_scan(s->generate.input, NULL, s->generate.skip_invalid, NULL, &seen, NULL,
			     scan, s->generate.skip_invalid ? first_bad : err);
	cl_gen_idset_free(&seen);
	return rc;
}

static void print_plan(const struct cl_scenario *s, const char *salt,
		       const struct cl_workload_stats *st, const struct cl_gen_scan *scan,
		       const struct cl_err *first_bad)
{
	printf("scenario: %s (%s)\n", s->name, s->file);
	if (s->description)
		printf("description: %s\n", s->description);
	print_target(s);
	print_agents(&s->agents);
	print_readiness(&s->readiness);
	print_warmup(s, st);
	print_workload(&s->workload, salt);
	print_workload_read(&s->workload, st);
	print_stages(s, scan);
	if (s->generate.set)
		print_generate(s, scan, first_bad);
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

/* Writes the bodies, one a line, from first_body on (0: the order of agent 1). */
static int dump_bodies(const char *path, const struct cl_workload_plan *w)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < w->n_bodies; i++) {
		fwrite(w->bodies[i].json, 1, w->bodies[i].len, f);
		fputc('\n', f);
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Prints every diagnostic of one file; returns how many. */
static size_t print_diags(const struct cl_diags *d)
{
	char line[1024];
	for (size_t i = 0; i < d->n; i++)
		fprintf(stderr, "%s\n", cl_err_format(&d->items[i], line, sizeof(line)));
	if (d->dropped)
		fprintf(stderr, "... and %zu more error%s\n", d->dropped,
			d->dropped == 1 ? "" : "s");
	return d->n + d->dropped;
}

int cl_cmd_validate(int argc, char **argv)
{
	const char **sets = calloc((size_t)argc + 1, sizeof(char *));
	const char **files = calloc((size_t)argc + 1, sizeof(char *));
	size_t n_sets = 0, n_files = 0;
	const char *dump = NULL;
	int rc = CL_EXIT_USAGE;
	if (!sets || !files) {
		fprintf(stderr, "chatload validate: out of memory\n");
		goto out;
	}
	bool options = true;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (options && strcmp(arg, "--") == 0) {
			options = false;
		} else if (options && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)) {
			usage(stdout);
			rc = CL_EXIT_OK;
			goto out;
		} else if (options && strcmp(arg, "--set") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr,
					"chatload validate: '--set' needs KEY.PATH=VALUE\n");
				goto out;
			}
			sets[n_sets++] = argv[++i];
		} else if (options && strncmp(arg, "--set=", 6) == 0) {
			sets[n_sets++] = arg + 6;
		} else if (options && strcmp(arg, "--dump-bodies") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr,
					"chatload validate: '--dump-bodies' needs a file\n");
				goto out;
			}
			dump = argv[++i];
		} else if (options && arg[0] == '-' && arg[1]) {
			fprintf(stderr, "chatload validate: unknown option '%s'\n", arg);
			usage(stderr);
			goto out;
		} else {
			files[n_files++] = arg;
		}
	}
	if (!n_files) {
		fprintf(stderr, "chatload validate: no scenario given\n");
		usage(stderr);
		goto out;
	}
	if (dump && n_files > 1) {
		fprintf(stderr, "chatload validate: --dump-bodies takes one scenario\n");
		goto out;
	}

	size_t bad = 0;
	for (size_t i = 0; i < n_files; i++) {
		struct cl_scenario s;
		struct cl_diags d = { 0 };
		int lrc = cl_scenario_load_file(files[i], sets, &s, &d);
		struct cl_workload_plan w = { 0 };
		/* zeroed: the rendering makes the salt a run would, so --dump-bodies shows what
		 * is sent; a run makes a tag of its own (workload.salt) */
		struct cl_workload_stats st = { 0 };
		struct cl_err werr = { 0 }, first_bad = { 0 };
		struct cl_gen_scan scan = { 0 };
		char line[1024];
		if (lrc == 0 && cl_workload_render_stats(&s, cl_scenario_render_model(&s), &w, &st,
							 &werr) != 0) {
			/* The scenario is sound but its workload is not: a dataset line, a
			 * length out of range.  The message names the file, line and column. */
			bad++;
			if (werr.file[0])
				fprintf(stderr, "%s\n", cl_err_format(&werr, line, sizeof(line)));
			else
				fprintf(stderr, "%s: workload: %s\n", files[i],
					cl_err_format(&werr, line, sizeof(line)));
		} else if (lrc == 0 && s.generate.set &&
			   check_generate(&s, &scan, &first_bad, &werr) != 0) {
			/* The job's input has a bad line (or cannot be read): run would stop
			 * there with exit 2 before sending anything, so validate does too. */
			bad++;
			fprintf(stderr, "%s\n", cl_err_format(&werr, line, sizeof(line)));
		} else if (lrc == 0) {
			if (i)
				printf("\n");
			cl_workload_trace_fill_stages(&s, &st);
			print_plan(&s, st.salt, &st, &scan, &first_bad);
			print_classes(&s.workload, &w);
			if (dump && dump_bodies(dump, &w) != 0)
				bad++;
		} else {
			bad++;
			if (!print_diags(&d))
				fprintf(stderr, "%s: %s\n", files[i], cl_strerror(lrc));
		}
		fflush(stdout);
		cl_workload_plan_free(&w);
		cl_diags_free(&d);
		cl_scenario_free(&s);
	}
	rc = bad ? CL_EXIT_USAGE : CL_EXIT_OK;
	if (bad && n_files > 1)
		fprintf(stderr, "%zu of %zu scenarios have errors\n", bad, n_files);
out:
	free(sets);
	free(files);
	return rc;
}
