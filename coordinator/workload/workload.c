/* Request-body rendering, the entry points: inline prompts, dataset files and synthetic
 * prompts become pre-rendered chat-completions bodies (jansson; off the hot path).  One file
 * per source (workload/dataset.c, workload/synth.c), the body builder in workload/body.c. */
#include "coordinator/workload/internal.h"

#include "chatload/rng.h"
#include "chatload/salt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void free_bodies(struct cl_request_body *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i].json);
	free(b);
}

uint32_t cl_workload_tokens_estimate(const char *text, size_t len)
{
	uint64_t chars = 0;
	for (size_t i = 0; i < len; i++)
		chars += ((unsigned char)text[i] & 0xC0) != 0x80; /* not a continuation byte */
	uint64_t t = (chars + CL_WORKLOAD_CHARS_PER_TOKEN - 1) / CL_WORKLOAD_CHARS_PER_TOKEN;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

void cli_workload_stats_add(struct cl_workload_stats *st, const struct cl_request_body *b,
			    uint8_t flags)
{
	st->own_length += (flags & RENDER_OWN_LENGTH) != 0;
	st->ignore_eos += (flags & RENDER_IGNORE_EOS) != 0;
	st->stop += (flags & RENDER_STOP) != 0;
	st->prompt_chars_sum += b->prompt_chars;
	st->body_bytes_sum += b->len;
	st->requested_sum += b->max_tokens;
	if (b->max_tokens < st->requested_min)
		st->requested_min = b->max_tokens;
	if (b->max_tokens > st->requested_max)
		st->requested_max = b->max_tokens;
	st->prompt_tokens_sum +=
	    (b->prompt_chars + CL_WORKLOAD_CHARS_PER_TOKEN - 1) / CL_WORKLOAD_CHARS_PER_TOKEN;
}

/* The figures of the final bodies (after a shuffle's limit); a sink's were counted as they
 * went by.  st->requested_min starts at UINT32_MAX. */
static void finish_stats(const struct render_ctx *c, struct cl_workload_stats *st)
{
	st->bodies = c->n;
	for (size_t i = 0; !c->sink && i < c->n; i++)
		cli_workload_stats_add(st, &c->bodies[i], c->flags[i]);
	if (!c->n)
		st->requested_min = 0;
}

int cl_workload_render(const struct cl_scenario *s, const char *model, struct cl_workload_plan *out,
		       struct cl_err *err)
{
	return cl_workload_render_stats(s, model, out, NULL, err);
}

/* *extra becomes workload.tools' keys with the old *extra (target.body, or NULL) merged over
 * them: the scenario's explicit body wins. */
static int with_tools(const struct cl_scn_workload *w, json_t **extra, struct cl_err *err)
{
	json_t *tools;
	int rc = cli_workload_tools(w, &tools, err);
	if (rc)
		return rc;
	if (*extra && cl_body_json_merge(tools, *extra, false) != 0) {
		json_decref(tools);
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering workload.tools");
	}
	json_decref(*extra);
	*extra = tools;
	return 0;
}

/* The bodies of the workload's source, pushed into c: its prompts, dataset, synthetic prompts,
 * trace or (a transcription) audio.  0, or an error with err filled. */
static int read_source(struct render_ctx *c, const struct cl_scn_workload *w, struct cl_err *err)
{
	switch (w->api == CL_API_TRANSCRIPTION ? -1 : (int)w->kind) {
	case -1: /* the audio is the workload */
		return cli_workload_audio(c, w, err);
	case CL_WORKLOAD_PROMPTS:
		if (w->n_prompts == 0)
			return cl_err_set(err, CL_EINVAL, "workload.prompts is empty");
		for (size_t i = 0; i < w->n_prompts; i++) {
			c->stats->records++;
			int rc = cli_workload_push_prompt(c, c->system_prompt, w->prompts[i],
							  strlen(w->prompts[i]), 0, err);
			if (rc) {
				cl_err_prefix(err, "workload.prompts[%zu]", i);
				return rc;
			}
		}
		return 0;
	case CL_WORKLOAD_DATASET:
		return cli_workload_read_dataset(c, w, err);
	case CL_WORKLOAD_SYNTHETIC: {
		/* Without a pool every request is to be distinct (retag): with classes the
		 * prompts made are a whole number of the classes' rounds, so each class has its
		 * exact share without a prompt made twice (workload/classes.c). */
		struct cl_scn_workload sw = *w;
		if (!w->synthetic_count_given)
			sw.synthetic_count = cli_workload_class_round(w, w->synthetic_count);
		return cli_workload_synthesize(c, &sw, err);
	}
	case CL_WORKLOAD_TRACE:
		return cli_workload_read_trace(c, w, err);
	default:
		return cl_err_set(err, CL_EINVAL, "unknown workload kind %d", (int)w->kind);
	}
}

/* Renders s's workload into out; with sink, each body goes to sink instead and out gets
 * none (its other fields are set). */
static int render(const struct cl_scenario *s, const char *model, const char *salt_tag,
		  struct cl_workload_plan *out, struct cl_workload_stats *stats,
		  cl_workload_body_fn sink, void *sink_arg, struct cl_err *err)
{
	struct cl_workload_stats own = { .requested_min = UINT32_MAX };
	struct render_ctx c = { .stats = &own, .sink = sink, .sink_arg = sink_arg };
	int rc = 0;
	memset(out, 0, sizeof(*out));
	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (!s || !model || !*model)
		return cl_err_set(err, CL_EINVAL, "no model to render request bodies for");
	const struct cl_scn_workload *w = &s->workload;
	c.model = model;
	c.max_tokens = w->max_tokens;
	c.ignore_eos = w->ignore_eos;
	c.system_prompt = w->system_prompt;
	char salt[CL_SALT_PREFIX_LEN + 1];
	if (salt_tag && cl_salt_prefix(salt_tag, salt, sizeof(salt))) {
		c.salt = salt;
		c.salt_tag = salt_tag;
	}
	c.api = w->api;
	c.images = &w->images;
	c.seed = w->seed;
	own.images = w->images.count;
	c.batch = w->api == CL_API_EMBEDDINGS && w->embedding_batch ? w->embedding_batch : 1;
	/* rerank and score: a query and its documents, one prompt each, in the order read. */
	if (cl_api_scores(w->api))
		c.batch = (w->documents ? w->documents : CL_SCN_DEFAULT_DOCUMENTS) + 1;
	c.token_scale =
	    w->chars_per_token > 0 ? w->chars_per_token / CL_WORKLOAD_CHARS_PER_TOKEN : 1;
	own.prefix_groups = w->shared_prefix_groups;
	own.prefix_tokens = w->shared_prefix_groups ? w->shared_prefix_tokens : 0;
	if (s->target.body_json && (rc = cl_body_json_parse_object(
					s->target.body_json, "target.body", &c.extra, err)) != 0)
		return rc;
	/* workload.tools go into every body as keys of the extra body, under target.body's
	 * (a "tools" or "tool_choice" there replaces them). */
	if (w->tools_count && (rc = with_tools(w, &c.extra, err)) != 0)
		goto out;
	if ((rc = cli_workload_make_prefixes(&c, w, err)) != 0)
		goto out;
	rc = read_source(&c, w, err);
	if (!rc)
		rc = cli_workload_flush_batch(&c, err); /* a last batch that is not full */
	if (!rc && cl_api_scores(w->api) && c.n == 0 && !c.sink)
		rc = cl_err_set(
		    err, CL_EINVAL,
		    "workload.api: %s needs at least two prompts (a query and a document)",
		    cl_api_name(w->api));
	/* workload.classes: each body's class and its keys (workload/classes.c) */
	if (!rc)
		rc = cli_workload_apply_classes(&c, s, out, err);
out:
	json_decref(c.pending);
	json_decref(c.extra);
	for (size_t i = 0; i < c.n_prefixes; i++)
		free(c.prefixes[i]);
	free(c.prefixes);
	if (rc) {
		free_bodies(c.bodies, c.bodies ? c.n : 0);
		free(c.flags);
		cl_workload_plan_free(out);
		return rc;
	}
	finish_stats(&c, &own);
	free(c.flags);
	if (stats)
		*stats = own;
	out->bodies = c.bodies;
	out->n_bodies = c.bodies ? c.n : 0; /* a sink's bodies are gone */
	out->max_tokens = w->max_tokens;
	out->request_timeout_us = w->request_timeout_us;
	out->think_time_us = w->multi_turn ? w->think_time_us : 0;
	/* The agentic loop: tool calls answered within a conversation. */
	out->tool_result_tokens = w->tools_count && w->multi_turn ? w->tools_result_tokens : 0;
	out->tool_max_rounds = out->tool_result_tokens ? w->tools_max_rounds : 0;
	/* One agent replays it all; the coordinator gives each of n agents every n-th. */
	out->trace_stride = w->kind == CL_WORKLOAD_TRACE ? 1 : 0;
	/* Abandoned requests: which ones follow from the workload's seed (chatload/plan.h). */
	if (w->cancel_share > 0) {
		double ppm = w->cancel_share * CL_CANCEL_PPM_MAX;
		out->cancel_ppm = ppm < 1 ? 1 : (uint32_t)(ppm + 0.5);
		out->cancel_after_tokens = w->cancel_after_tokens;
		out->cancel_after_us = w->cancel_after_tokens ? 0 : w->cancel_after_us;
		out->cancel_after_max_us = w->cancel_after_tokens ? 0 : w->cancel_after_max_us;
		out->cancel_seed = cl_seed_derive(w->seed, 0x63616e63656cull); /* "cancel" */
	}
	return 0;
}

int cli_workload_render_like(const struct render_ctx *c, const struct cl_scenario *s,
			     struct cl_workload_plan *out, struct cl_err *err)
{
	return render(s, c->model, c->salt_tag, out, NULL, NULL, NULL, err);
}

/*
 * Whether every request of the run should be distinct past the bodies too (plan.h, retag):
 * synthetic prompts without a pool, and a list of prompts.  A dataset's records stay a pool
 * (its re-sends counted), and so do bodies behind a shared prefix or a conversation's turns: a
 * tag of their own would put their shared system prompt or prefix out of the cache the first
 * requests filled.  A transcription's clips carry no salt (the audio is the request).
 */
static bool retagged(const struct cl_scn_workload *w)
{
	bool unpooled = w->kind == CL_WORKLOAD_PROMPTS ||
			(w->kind == CL_WORKLOAD_SYNTHETIC && !w->synthetic_count_given);
	return unpooled && !w->multi_turn && !w->shared_prefix_groups &&
	       w->api != CL_API_TRANSCRIPTION;
}

int cl_workload_render_stats(const struct cl_scenario *s, const char *model,
			     struct cl_workload_plan *out, struct cl_workload_stats *stats,
			     struct cl_err *err)
{
	char tag[CL_SALT_TAG_SIZE] = "";
	bool wanted = stats && s && !s->workload.salt_none && !s->generate.set;
	if (wanted && stats->salt[0])
		memcpy(tag, stats->salt, sizeof(tag)); /* a rendering again: the run's tag */
	else if (wanted)
		cl_salt_new(tag);
	int rc = render(s, model, tag, out, stats, NULL, NULL, err);
	if (rc == 0 && stats)
		memcpy(stats->salt, tag, sizeof(tag));
	if (rc == 0 && tag[0] && retagged(&s->workload))
		snprintf(out->retag, sizeof(out->retag), "%s", tag);
	return rc;
}

/* What a generate job's rendering hands each body through: the caller's callback, and
 * whether target.body names ignore_eos (which a generate job never sends). */
struct generate_sink {
	cl_workload_body_fn fn;
	void *arg;
	bool strip_eos;
};

/* A generate job's body: ignore_eos taken out if target.body put it in, then given to the
 * caller's callback. */
static int generate_body(void *arg, uint32_t line, const char *json, size_t len, struct cl_err *err)
{
	const struct generate_sink *g = arg;
	if (!g->strip_eos || !strstr(json, "\"ignore_eos\""))
		return g->fn(g->arg, line, json, len, err);
	json_t *o = json_loadb(json, len, 0, NULL);
	char *text = NULL;
	if (o && json_object_del(o, "ignore_eos") == 0)
		text = json_dumps(o, CL_BODY_JSON_DUMP_FLAGS);
	json_decref(o);
	if (!text)
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
	int rc = g->fn(g->arg, line, text, strlen(text), err);
	free(text);
	return rc;
}

int cl_workload_render_generate(const struct cl_scenario *s, const char *model,
				cl_workload_body_fn fn, void *arg, struct cl_workload_stats *stats,
				struct cl_err *err)
{
	static const enum cl_dataset_format formats[] = {
		[CL_GEN_INPUT_OPENAI] = CL_DATASET_OPENAI,
		[CL_GEN_INPUT_SHAREGPT] = CL_DATASET_SHAREGPT,
		[CL_GEN_INPUT_TEXT] = CL_DATASET_TEXT,
	};
	const struct cl_scn_generate *g = &s->generate;
	if (!g->set || g->input_format == CL_GEN_INPUT_BATCH ||
	    (unsigned)g->input_format >= sizeof(formats) / sizeof(formats[0]))
		return cl_err_set(err, CL_EINVAL, "generate.input is not a dataset");
	/* A copy that reads only the input, one body a record: a generate job wants each
	 * record's own answer, so no record's length is asked for (max_tokens stays a cap),
	 * nothing forces the length (ignore_eos), and nothing is dropped, shuffled or
	 * prefixed.  The copy borrows s's strings. */
	struct cl_scenario t = *s;
	struct cl_scn_workload *w = &t.workload;
	w->kind = CL_WORKLOAD_DATASET;
	w->dataset = g->input;
	w->dataset_format = formats[g->input_format];
	w->dataset_limit = 0;
	w->dataset_shuffle = false;
	memset(&w->dataset_filter, 0, sizeof(w->dataset_filter));
	w->dataset_output = CL_DATASET_OUTPUT_MAX_TOKENS;
	w->ignore_eos = 0;
	w->shared_prefix_groups = 0;
	w->multi_turn = false;
	w->chars_per_token = 0;
	/* target.body may name ignore_eos itself; a generate job never sends it */
	struct generate_sink sink = { .fn = fn,
				      .arg = arg,
				      .strip_eos = s->target.body_json != NULL };
	struct cl_workload_plan none;
	int rc = render(&t, model, NULL, &none, stats, generate_body, &sink, err);
	cl_workload_plan_free(&none);
	if (rc == 0 && stats)
		stats->ignore_eos = 0; /* counted from target.body's key, which generate_body cut */
	return rc;
}

/* The text a body begins with when rendered for model: {"model":"<model, JSON-escaped>". */
static char *model_head(const char *model)
{
	json_t *o = json_pack("{s:s}", "model", model);
	char *text = o ? json_dumps(o, CL_BODY_JSON_DUMP_FLAGS) : NULL;
	json_decref(o);
	if (text)
		text[strlen(text) - 1] = '\0'; /* drop the closing brace */
	return text;
}

/* json (len bytes) with its head old_head (ol bytes, then a comma) replaced by new_head:
 * malloc'd into *out.  0, CL_EINVAL (json does not begin with old_head,) or CL_ENOMEM. */
static int swap_head(const char *json, size_t len, const char *old_head, size_t ol,
		     const char *new_head, size_t nl, char **out)
{
	*out = NULL;
	if (len <= ol || memcmp(json, old_head, ol) != 0 || json[ol] != ',')
		return CL_EINVAL;
	if (!(*out = malloc(len - ol + nl + 1)))
		return CL_ENOMEM;
	memcpy(*out, new_head, nl);
	memcpy(*out + nl, json + ol, len - ol + 1);
	return 0;
}

int cl_workload_body_set_model(const char *json, size_t len, const char *old_model,
			       const char *model, char **out, size_t *out_len, struct cl_err *err)
{
	*out = NULL;
	char *old_head = model_head(old_model), *new_head = model_head(model);
	int rc = !old_head || !new_head ? CL_ENOMEM
					: swap_head(json, len, old_head, strlen(old_head), new_head,
						    strlen(new_head), out);
	if (rc == 0)
		*out_len = len - strlen(old_head) + strlen(new_head);
	else if (rc == CL_EINVAL)
		cl_err_set(err, rc, "a request body does not begin with its model");
	else
		cl_err_set(err, rc, "out of memory setting the model");
	free(old_head);
	free(new_head);
	return rc;
}

int cl_workload_plan_set_model(struct cl_workload_plan *w, const char *old_model, const char *model,
			       struct cl_err *err)
{
	if (!w || !old_model || !model || !*model)
		return cl_err_set(err, CL_EINVAL, "no model to put in the request bodies");
	if (strcmp(old_model, model) == 0)
		return 0;
	char *old_head = model_head(old_model), *new_head = model_head(model);
	char **texts = calloc(w->n_bodies ? w->n_bodies : 1, sizeof(char *));
	int rc = 0;
	if (!old_head || !new_head || !texts) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory setting the model");
		goto out;
	}
	size_t ol = strlen(old_head), nl = strlen(new_head);
	/* Every new text first, so a failure leaves the plan as it was. */
	for (size_t i = 0; i < w->n_bodies; i++) {
		const struct cl_request_body *b = &w->bodies[i];
		if (b->own_model) /* its class names its model (an adapter, another model) */
			continue;
		rc = swap_head(b->json, b->len, old_head, ol, new_head, nl, &texts[i]);
		if (rc == CL_EINVAL) {
			rc = cl_err_set(err, CL_EINVAL,
					"request body %zu does not begin with its model", i);
			goto out;
		}
		if (rc != 0) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory setting the model");
			goto out;
		}
	}
	for (size_t i = 0; i < w->n_bodies; i++) {
		struct cl_request_body *b = &w->bodies[i];
		if (!texts[i])
			continue;
		free(b->json);
		b->json = texts[i];
		b->len = b->len - ol + nl;
		if (b->turn) /* the history goes after the messages' start, which moved */
			b->hist_at = (uint32_t)(b->hist_at - ol + nl);
		texts[i] = NULL;
	}
out:
	for (size_t i = 0; texts && i < w->n_bodies; i++)
		free(texts[i]);
	free(texts);
	free(old_head);
	free(new_head);
	return rc;
}
