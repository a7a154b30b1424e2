/* Request classes (workload.classes): which class each rendered body belongs to, apportioned
 * exactly over the bodies by weight, and each body given its class's model, priority, output
 * length and extra keys (docs/scenario.md, "Request classes"). */
#include "coordinator/workload/internal.h"

#include "chatload/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_workload_class_order(const uint32_t *weights, size_t n_classes, size_t n_bodies,
			     uint32_t *out)
{
	uint64_t target[CL_CLASSES_MAX], taken[CL_CLASSES_MAX] = { 0 };
	if (n_classes == 0 || n_classes > CL_CLASSES_MAX)
		return CL_EINVAL;
	int rc = cl_apportion(n_bodies, weights, n_classes, target);
	if (rc)
		return rc;
	/* The class furthest behind its share of the bodies so far goes next (ties to the
	 * lower index): every class ends at its exact count, and any run of consecutive
	 * bodies (an agent's share, a stage's requests) holds each class within one of its
	 * share.  A pure function of the weights and the count: repeats and agents agree. */
	for (size_t i = 0; i < n_bodies; i++) {
		size_t best = n_classes;
		int64_t best_lag = 0;
		for (size_t k = 0; k < n_classes; k++) {
			if (taken[k] >= target[k])
				continue;
			/* lag = target[k] * (i + 1) / n_bodies - taken[k], scaled by n_bodies */
			int64_t lag =
			    (int64_t)(target[k] * (i + 1)) - (int64_t)(taken[k] * n_bodies);
			if (best == n_classes || lag > best_lag) {
				best = k;
				best_lag = lag;
			}
		}
		if (best == n_classes)
			return CL_EINVAL; /* cannot happen: the targets sum to n_bodies */
		taken[best]++;
		out[i] = (uint32_t)best;
	}
	return 0;
}

/* The key a body bounds its output with: the one it has, else max_tokens. */
static const char *max_key(const json_t *o)
{
	static const char *const keys[] = { "max_tokens", "max_completion_tokens",
					    "max_output_tokens" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_object_get(o, keys[i]))
			return keys[i];
	return "max_tokens";
}

/* Body b given class k's keys; *flags updated (RENDER_OWN_LENGTH, RENDER_IGNORE_EOS). */
static int apply_one(struct cl_request_body *b, uint8_t *flags, const struct cl_scn_class *k,
		     json_t *extra, enum cl_api api, struct cl_err *err)
{
	json_t *o = json_loadb(b->json, b->len, 0, NULL);
	int rc = 0;
	if (!o)
		return cl_err_set(err, CL_ENOMEM, "out of memory applying class '%s'", k->name);
	uint32_t len = k->output_tokens ? k->output_tokens : k->max_tokens;
	bool bad = false;
	/* "model" stays the first key (jansson keeps a replaced key's place), so a body whose
	 * class names no model still takes the one the readiness gate finds. */
	if (k->model)
		bad |= json_object_set_new(o, "model", json_string(k->model)) != 0;
	if (k->priority_set)
		bad |= json_object_set_new(o, "priority", json_integer(k->priority)) != 0;
	if (len && cl_api_streams(api))
		bad |= json_object_set_new(o, max_key(o), json_integer(len)) != 0;
	if (k->output_tokens && cl_api_streams(api))
		bad |= json_object_set_new(o, "ignore_eos", json_true()) != 0;
	if (extra)
		bad |= cl_body_json_merge(o, extra, false) != 0;
	/* As cl_body_json_render_api: an API answered whole (embeddings, rerank, score) sends
	 * no "stream" at all, a streamed one "stream": true, whatever extra says. */
	if (cl_api_streams(api))
		bad |= json_object_set_new(o, "stream", json_true()) != 0;
	else
		json_object_del(o, "stream"); /* -1 when absent: nothing to do */
	char *text = bad ? NULL : json_dumps(o, CL_BODY_JSON_DUMP_FLAGS);
	json_decref(o);
	if (!text)
		return cl_err_set(err, CL_ENOMEM, "out of memory applying class '%s'", k->name);
	free(b->json);
	b->json = text;
	b->len = strlen(text);
	b->own_model = k->model != NULL;
	if (len && cl_api_streams(api)) {
		b->max_tokens = len;
		*flags |= RENDER_OWN_LENGTH;
	}
	if (k->output_tokens && cl_api_streams(api))
		*flags |= RENDER_IGNORE_EOS;
	return rc;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* The classes' round: the sum of the weights over their greatest common divisor (2:1:1 is
 * 4), the fewest bodies that hold every class in its exact share; 1 without classes. */
static uint64_t class_round(const struct cl_scn_workload *w)
{
	uint64_t sum = 0, g = 0;
	for (size_t i = 0; i < w->n_classes; i++) {
		sum += w->classes[i].weight;
		g = gcd(g, w->classes[i].weight);
	}
	return g ? sum / g : 1;
}

uint32_t cli_workload_class_round(const struct cl_scn_workload *w, uint32_t n)
{
	uint64_t r = class_round(w);
	uint64_t up = (n + r - 1) / r * r;
	return r <= 1 || up > CL_WORKLOAD_MAX_BODIES ? n : (uint32_t)up;
}

/*
 * Each body repeated f times in a row, so a pool that is not a whole number of the classes'
 * rounds (one inline prompt, three classes) still carries every class in its exact share: f
 * = round / gcd(bodies, round), the fewest copies that make the pool a whole number of rounds
 * (one prompt with weights 2:1:1: 4 bodies; 64 prompts: no copy).  f is 1 for a trace (its
 * bodies are its arrivals) or when the copies would pass the caps on bodies held.
 */
static int replicate(struct render_ctx *c, const struct cl_scn_workload *w, struct cl_err *err)
{
	uint64_t round = class_round(w);
	uint64_t f = c->n ? round / gcd(c->n, round) : 1;
	if (f <= 1 || w->kind == CL_WORKLOAD_TRACE || c->n == 0 ||
	    c->n * f > CL_WORKLOAD_MAX_BODIES ||
	    (uint64_t)c->total_bytes * f > CL_WORKLOAD_MAX_TOTAL_BYTES)
		return 0;
	size_t n = c->n * (size_t)f;
	struct cl_request_body *bodies = calloc(n, sizeof(*bodies));
	uint8_t *flags = calloc(n, sizeof(*flags));
	if (!bodies || !flags)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		const struct cl_request_body *from = &c->bodies[i / f];
		bodies[i] = *from;
		flags[i] = c->flags[i / f];
		if (!(bodies[i].json = malloc(from->len + 1))) {
			for (size_t k = 0; k < i; k++)
				free(bodies[k].json);
			goto oom;
		}
		memcpy(bodies[i].json, from->json, from->len + 1);
	}
	for (size_t i = 0; i < c->n; i++)
		free(c->bodies[i].json);
	free(c->bodies);
	free(c->flags);
	c->bodies = bodies;
	c->flags = flags;
	c->total_bytes *= f;
	c->n = c->cap = n;
	return 0;
oom:
	free(bodies);
	free(flags);
	return cl_err_set(err, CL_ENOMEM,
			  "out of memory repeating the bodies for workload.classes");
}

static bool own_source(const struct cl_scn_class *k)
{
	return k->n_prompts || k->input_tokens || k->dataset;
}

/* Class k's own prompts rendered as the workload's would be (model, salt, system prompt,
 * target.body): its inline prompts, or `count` synthetic prompts of input_tokens tokens
 * seeded apart from the workload's. */
static int render_own(const struct render_ctx *c, const struct cl_scenario *s, size_t k,
		      uint32_t count, struct cl_workload_plan *pool, struct cl_err *err)
{
	const struct cl_scn_class *cls = &s->workload.classes[k];
	struct cl_scenario t = *s; /* borrows s's strings; never freed */
	struct cl_scn_workload *w = &t.workload;
	w->classes = NULL;
	w->n_classes = 0;
	if (cls->n_prompts) {
		w->kind = CL_WORKLOAD_PROMPTS;
		w->prompts = cls->prompts;
		w->n_prompts = cls->n_prompts;
	} else if (cls->dataset) {
		/* read whole, as written: none of the workload's dataset settings apply */
		w->kind = CL_WORKLOAD_DATASET;
		w->dataset = cls->dataset;
		w->dataset_format = CL_DATASET_AUTO;
		w->dataset_limit = 0;
		w->dataset_shuffle = false;
		memset(&w->dataset_filter, 0, sizeof(w->dataset_filter));
	} else {
		w->kind = CL_WORKLOAD_SYNTHETIC;
		w->synthetic_input = (struct cl_len_dist){ .mean = cls->input_tokens,
							   .min = cls->input_tokens,
							   .max = cls->input_tokens };
		w->synthetic_count = count ? count : 1;
		w->synthetic_count_given = true;
		w->seed = s->workload.seed + k + 1;
	}
	int rc = cli_workload_render_like(c, &t, pool, err);
	if (rc)
		cl_err_prefix(err, "workload.classes[%zu]", k);
	return rc;
}

/*
 * With classes that bring prompts of their own (prompts, input_tokens): the pool becomes N
 * bodies, N a whole number of the classes' rounds and large enough that every pool is gone
 * through at least once; each body of a class with its own prompts is the next of its pool
 * (rendered with as many synthetic prompts as the class has bodies), each body of another
 * class the next of the workload's, in turn, so the classes that share the workload's
 * prompts share them out.
 */
static int mix(struct render_ctx *c, const struct cl_scenario *s, const uint32_t *weights,
	       struct cl_err *err)
{
	const struct cl_scn_workload *w = &s->workload;
	size_t n_cls = w->n_classes;
	uint64_t all = 0, shared = 0, round = class_round(w);
	for (size_t k = 0; k < n_cls; k++) {
		all += weights[k];
		shared += own_source(&w->classes[k]) ? 0 : weights[k];
	}
	if (shared && c->n == 0)
		return cl_err_set(err, CL_EINVAL,
				  "workload.classes: the workload has no bodies for the classes "
				  "without prompts of their own");
	/* The pools of a fixed size first (inline prompts, a dataset): they decide N too. */
	struct cl_workload_plan pools[CL_CLASSES_MAX] = { 0 };
	int rc = 0;
	for (size_t k = 0; k < n_cls && !rc; k++)
		if (weights[k] && (w->classes[k].n_prompts || w->classes[k].dataset))
			rc = render_own(c, s, k, 0, &pools[k], err);
	uint64_t need = round;
	if (shared && (c->n * all + shared - 1) / shared > need)
		need = (c->n * all + shared - 1) / shared;
	for (size_t k = 0; k < n_cls; k++)
		if (pools[k].n_bodies &&
		    (pools[k].n_bodies * all + weights[k] - 1) / weights[k] > need)
			need = (pools[k].n_bodies * all + weights[k] - 1) / weights[k];
	uint64_t n = (need + round - 1) / round * round;
	if (!rc && n > CL_WORKLOAD_MAX_BODIES)
		rc = cl_err_set(err, CL_ETOOBIG,
				"workload.classes need %llu request bodies (at most %u)",
				(unsigned long long)n, CL_WORKLOAD_MAX_BODIES);
	uint32_t *order = rc ? NULL : calloc(n, sizeof(*order));
	struct cl_request_body *bodies = rc ? NULL : calloc(n, sizeof(*bodies));
	uint8_t *flags = rc ? NULL : calloc(n, sizeof(*flags));
	size_t count[CL_CLASSES_MAX] = { 0 }, at[CL_CLASSES_MAX] = { 0 }, shared_at = 0, made = 0;
	size_t bytes = 0;
	if (!rc)
		rc = order && bodies && flags ? cli_workload_class_order(weights, n_cls, n, order)
					      : cl_err_set(err, CL_ENOMEM, "out of memory");
	for (size_t p = 0; p < n && !rc; p++)
		count[order[p]]++;
	/* synthetic pools: as many prompts as the class has bodies */
	for (size_t k = 0; k < n_cls && !rc; k++)
		if (w->classes[k].input_tokens && count[k])
			rc = render_own(c, s, k, (uint32_t)count[k], &pools[k], err);
	for (size_t p = 0; p < n && !rc; p++, made++) {
		uint32_t k = order[p];
		const struct cl_request_body *from;
		if (own_source(&w->classes[k])) {
			from = &pools[k].bodies[at[k]++ % pools[k].n_bodies];
		} else {
			flags[p] = c->flags[shared_at % c->n];
			from = &c->bodies[shared_at++ % c->n];
		}
		bodies[p] = *from;
		bytes += from->len;
		if (bytes > CL_WORKLOAD_MAX_TOTAL_BYTES)
			rc = cl_err_set(err, CL_ETOOBIG, "workload.classes' bodies pass %u MiB",
					CL_WORKLOAD_MAX_TOTAL_BYTES >> 20);
		else if (!(bodies[p].json = malloc(from->len + 1)))
			rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		else
			memcpy(bodies[p].json, from->json, from->len + 1);
		if (rc)
			bodies[p].json = NULL;
	}
	for (size_t k = 0; k < n_cls; k++)
		cl_workload_plan_free(&pools[k]);
	free(order);
	if (rc) {
		for (size_t p = 0; bodies && p < made; p++)
			free(bodies[p].json);
		free(bodies);
		free(flags);
		return rc;
	}
	for (size_t i = 0; i < c->n; i++)
		free(c->bodies[i].json);
	free(c->bodies);
	free(c->flags);
	c->bodies = bodies;
	c->flags = flags;
	c->total_bytes = bytes;
	c->n = c->cap = n;
	return 0;
}

/* The class plans an agent gets: names and header lines, copied. */
static int class_plans(const struct cl_scn_workload *w, struct cl_workload_plan *out)
{
	out->classes = calloc(w->n_classes, sizeof(*out->classes));
	if (!out->classes)
		return CL_ENOMEM;
	out->n_classes = w->n_classes;
	for (size_t i = 0; i < w->n_classes; i++) {
		const struct cl_scn_class *k = &w->classes[i];
		struct cl_class_plan *p = &out->classes[i];
		if (!(p->name = strdup(k->name)))
			return CL_ENOMEM;
		/* X-Chatload-Class first, as X-Chatload-Conversation tells a conversation: a
		 * server's log (chatload-sim's truth log) can tell the classes apart */
		if (!(p->headers = calloc(k->n_headers + 1, sizeof(char *))))
			return CL_ENOMEM;
		if (asprintf(&p->headers[0], "X-Chatload-Class: %s", k->name) < 0) {
			p->headers[0] = NULL;
			return CL_ENOMEM;
		}
		p->n_headers = 1;
		for (size_t h = 0; h < k->n_headers; h++, p->n_headers++)
			if (!(p->headers[h + 1] = strdup(k->headers[h])))
				return CL_ENOMEM;
	}
	return 0;
}

int cli_workload_apply_classes(struct render_ctx *c, const struct cl_scenario *s,
			       struct cl_workload_plan *out, struct cl_err *err)
{
	const struct cl_scn_workload *w = &s->workload;
	if (!w->n_classes || c->sink)
		return 0;
	uint32_t weights[CL_CLASSES_MAX];
	for (size_t i = 0; i < w->n_classes; i++)
		weights[i] = w->classes[i].weight;
	bool own = false;
	for (size_t i = 0; i < w->n_classes; i++)
		own |= own_source(&w->classes[i]);
	int rc0 = own ? mix(c, s, weights, err) : replicate(c, w, err);
	if (rc0)
		return rc0;
	uint32_t *order = calloc(c->n ? c->n : 1, sizeof(*order));
	json_t *extra[CL_CLASSES_MAX] = { 0 };
	int rc = order ? cli_workload_class_order(weights, w->n_classes, c->n, order) : CL_ENOMEM;
	if (rc) {
		cl_err_set(err, rc, "cannot apportion the bodies over workload.classes");
		goto out;
	}
	for (size_t i = 0; i < w->n_classes && !rc; i++)
		if (w->classes[i].body_json)
			rc = cl_body_json_parse_object(w->classes[i].body_json,
						       "workload.classes[].body", &extra[i], err);
	for (size_t i = 0; i < c->n && !rc; i++) {
		c->bodies[i].cls = order[i];
		rc = apply_one(&c->bodies[i], &c->flags[i], &w->classes[order[i]], extra[order[i]],
			       w->api, err);
	}
	if (!rc && (rc = class_plans(w, out)) != 0)
		cl_err_set(err, rc, "out of memory copying workload.classes");
out:
	for (size_t i = 0; i < CL_CLASSES_MAX; i++)
		json_decref(extra[i]);
	free(order);
	return rc;
}
