/* chatload validate's workload section: the workload as written (inline prompts, a dataset,
 * synthetic lengths, a trace, transcription audio; api, timeouts, cancel, seed, order, salt),
 * what reading it gave (records, bodies, lengths, prefixes), and each class's share. */
#include "coordinator/cmd/validate_int.h"

#include <stdio.h>
#include <string.h>

/* workload.tools.choice as written. */
static const char *tool_choice_name(enum cl_tool_choice c)
{
	static const char *const names[] = { "auto", "none", "required" };
	return (unsigned)c < 3 ? names[c] : "auto";
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
		printf("  request timeout: %s\n",
		       cli_validate_dur(w->request_timeout_us, a, sizeof(a)));
		printf("  drain timeout: %s\n",
		       cli_validate_dur(w->drain_timeout_us, a, sizeof(a)));
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
			       cli_validate_dur(w->think_time_us, a, sizeof(a)));
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
	printf("  request timeout: %s\n", cli_validate_dur(w->request_timeout_us, a, sizeof(a)));
	printf("  drain timeout: %s\n", cli_validate_dur(w->drain_timeout_us, a, sizeof(a)));
	if (w->cancel_share > 0 && w->cancel_after_tokens)
		printf("  cancel: %g%% of each stage's requests, closed by the client after %u "
		       "tokens\n",
		       w->cancel_share * 100, w->cancel_after_tokens);
	else if (w->cancel_share > 0 && w->cancel_after_max_us > w->cancel_after_us) {
		char b[32];
		printf("  cancel: %g%% of each stage's requests, closed by the client after a "
		       "delay drawn from %s..%s\n",
		       w->cancel_share * 100, cli_validate_dur(w->cancel_after_us, a, sizeof(a)),
		       cli_validate_dur(w->cancel_after_max_us, b, sizeof(b)));
	} else if (w->cancel_share > 0)
		printf("  cancel: %g%% of each stage's requests, closed by the client after %s\n",
		       w->cancel_share * 100, cli_validate_dur(w->cancel_after_us, a, sizeof(a)));
	printf("  seed: %llu\n", (unsigned long long)w->seed);
	printf("  order: %s\n", w->order_per_stage
				    ? "per_stage (every stage sends the same bodies again)"
				    : "run (the warmup and each stage take the next bodies)");
	if (!salt[0])
		printf("  salt: none (the text exactly as written)\n");
	else
		printf("  salt: [%s] before every first message (a new tag every run)\n", salt);
}

void cli_validate_print_workload(const struct cl_scn_workload *w,
				 const struct cl_workload_stats *st)
{
	print_workload(w, st->salt);
	print_workload_read(w, st);
}

/* workload.classes: each class's share of the bodies as rendered (exact by weight), and its
 * shape: model, priority, output length, extra keys, headers, SLOs. */
void cli_validate_print_classes(const struct cl_scn_workload *w, const struct cl_workload_plan *p)
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
			cli_validate_print_slo(&c->slos[i], "this class, every stage");
	}
}
