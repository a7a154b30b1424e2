/* Plan helpers: exact largest-remainder apportionment, stage splitting, names and frees. */
#include "chatload/plan.h"

#include "chatload/assert.h"
#include "chatload/rng.h"

#include <stdlib.h>
#include <string.h>

/* Remainder of one share, with its index, for ordering the leftover units. */
struct rem {
	uint64_t rem;
	size_t idx;
};

/* Larger remainder first; on a tie the lower index first (so results are deterministic). */
static int rem_cmp(const void *a, const void *b)
{
	const struct rem *x = a, *y = b;
	if (x->rem != y->rem)
		return x->rem > y->rem ? -1 : 1;
	return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

int cl_apportion(uint64_t total, const uint32_t *weights, size_t n, uint64_t *out)
{
	if (n == 0 || !weights || !out)
		return CL_EINVAL;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += weights[i];
	bool equal = sum == 0;
	if (equal)
		sum = n;

	/*
	 * total * w can reach 96 bits, so the exact quota is computed in 128 bits: the floor
	 * goes to out[i] and the remainder (always < sum, so it fits 64 bits) decides who gets
	 * the leftover units.  Comparing remainders compares the fractional parts exactly,
	 * since every quota shares the denominator sum.
	 */
	struct rem *rems = malloc(n * sizeof(*rems));
	if (!rems)
		return CL_ENOMEM;
	uint64_t given = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned __int128 q = (unsigned __int128)total * (equal ? 1u : weights[i]);
		out[i] = (uint64_t)(q / sum);
		rems[i].rem = (uint64_t)(q % sum);
		rems[i].idx = i;
		given += out[i];
	}
	/* The floors lose less than one unit each, so fewer than n units are left over. */
	uint64_t left = total - given;
	CL_ASSERT(left < n); /* rems[] has n entries */
	if (left) {
		qsort(rems, n, sizeof(*rems), rem_cmp);
		for (size_t k = 0; k < left; k++)
			out[rems[k].idx]++;
	}
	free(rems);
	return 0;
}

int cl_apportion_real(double total, const uint32_t *weights, size_t n, double *out)
{
	if (n == 0 || !weights || !out)
		return CL_EINVAL;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += weights[i];
	size_t last = n; /* the last party with a share absorbs the rounding residue */
	double given = 0;
	for (size_t i = 0; i < n; i++) {
		double w = sum ? weights[i] : 1.0;
		out[i] = total * w / (sum ? (double)sum : (double)n);
		if (w > 0)
			last = i;
		given += out[i];
	}
	if (last < n) {
		double fixed = out[last] + (total - given);
		out[last] = fixed > 0 ? fixed : 0;
	}
	return 0;
}

const char *cl_api_name(enum cl_api a)
{
	static const char *const names[CL_API__COUNT] = {
		[CL_API_CHAT] = "chat",           [CL_API_COMPLETIONS] = "completions",
		[CL_API_RESPONSES] = "responses", [CL_API_EMBEDDINGS] = "embeddings",
		[CL_API_MESSAGES] = "messages",   [CL_API_RERANK] = "rerank",
		[CL_API_SCORE] = "score",         [CL_API_TRANSCRIPTION] = "transcription",
	};
	return (unsigned)a < CL_API__COUNT ? names[a] : NULL;
}

const char *cl_route_name(enum cl_route r)
{
	static const char *const names[CL_ROUTE__COUNT] = { "round_robin", "least_outstanding",
							    "session_hash" };
	return (unsigned)r < CL_ROUTE__COUNT ? names[r] : NULL;
}

const char *cl_api_path(enum cl_api a)
{
	static const char *const paths[CL_API__COUNT] = {
		[CL_API_CHAT] = "/chat/completions",
		[CL_API_COMPLETIONS] = "/completions",
		[CL_API_RESPONSES] = "/responses",
		[CL_API_EMBEDDINGS] = "/embeddings",
		[CL_API_MESSAGES] = "/messages",
		[CL_API_RERANK] = "/rerank",
		[CL_API_SCORE] = "/score",
		[CL_API_TRANSCRIPTION] = "/audio/transcriptions",
	};
	return (unsigned)a < CL_API__COUNT ? paths[a] : NULL;
}

bool cl_api_streams(enum cl_api a)
{
	return a != CL_API_EMBEDDINGS && a != CL_API_TRANSCRIPTION && !cl_api_scores(a);
}

bool cl_api_scores(enum cl_api a)
{
	return a == CL_API_RERANK || a == CL_API_SCORE;
}

const char *cl_load_mode_name(enum cl_load_mode m)
{
	switch (m) {
	case CL_MODE_CONCURRENCY:
		return "concurrency";
	case CL_MODE_RATE:
		return "rate";
	}
	return "unknown";
}

const char *cl_arrival_name(enum cl_arrival a)
{
	switch (a) {
	case CL_ARRIVAL_CONSTANT:
		return "constant";
	case CL_ARRIVAL_POISSON:
		return "poisson";
	case CL_ARRIVAL_GAMMA:
		return "gamma";
	}
	return "unknown";
}

void cl_target_plan_free(struct cl_target_plan *t)
{
	if (!t)
		return;
	free(t->base_url);
	free(t->model);
	free(t->api_key_env);
	for (size_t i = 0; t->headers && i < t->n_headers; i++)
		free(t->headers[i]);
	free(t->headers);
	free(t->ca_file);
	for (size_t i = 0; t->endpoints && i < t->n_endpoints; i++)
		free(t->endpoints[i]);
	free(t->endpoints);
	memset(t, 0, sizeof(*t));
}

void cl_stage_plan_free(struct cl_stage_plan *s)
{
	if (!s)
		return;
	free(s->name);
	memset(s, 0, sizeof(*s));
}

void cl_workload_plan_free(struct cl_workload_plan *w)
{
	if (!w)
		return;
	for (size_t i = 0; w->bodies && i < w->n_bodies; i++)
		free(w->bodies[i].json);
	free(w->bodies);
	for (size_t i = 0; w->classes && i < w->n_classes; i++) {
		free(w->classes[i].name);
		for (size_t k = 0; w->classes[i].headers && k < w->classes[i].n_headers; k++)
			free(w->classes[i].headers[k]);
		free(w->classes[i].headers);
	}
	free(w->classes);
	memset(w, 0, sizeof(*w));
}

/*
 * The weights the divisible quantities are split by.  In concurrency mode requests and
 * ramp_from follow the concurrency shares rather than the raw weights: a party given no
 * streams must not be given requests it can never start, and ramp_from must never exceed
 * a party's concurrency.  In rate mode with a cap, a party whose cap share is 0 could send
 * nothing, so it gets no rate either (0 would otherwise read as "no cap").
 */
int cl_stage_plan_split(const struct cl_stage_plan *stage, const uint32_t *weights, size_t n,
			struct cl_stage_plan *out)
{
	if (!stage || !weights || !out || n == 0)
		return CL_EINVAL;
	int rc = CL_ENOMEM;
	uint64_t *conc = calloc(n, sizeof(*conc));
	uint64_t *tmp = calloc(n, sizeof(*tmp));
	uint32_t *eff = calloc(n, sizeof(*eff));
	double *rate = calloc(n, sizeof(*rate));
	memset(out, 0, n * sizeof(*out));
	if (!conc || !tmp || !eff || !rate)
		goto out;

	if ((rc = cl_apportion(stage->concurrency, weights, n, conc)) != 0)
		goto out;
	uint64_t wsum = 0;
	for (size_t i = 0; i < n; i++)
		wsum += weights[i];
	for (size_t i = 0; i < n; i++) {
		uint32_t w = wsum ? weights[i] : 1;
		if (stage->mode == CL_MODE_CONCURRENCY)
			eff[i] = (uint32_t)conc[i];
		else if (stage->concurrency > 0)
			eff[i] = conc[i] ? w : 0;
		else
			eff[i] = w;
	}
	for (size_t i = 0; i < n; i++) {
		struct cl_stage_plan *o = &out[i];
		*o = *stage;
		o->name = NULL;
		o->concurrency = (uint32_t)conc[i];
		o->seed = cl_seed_derive(stage->seed, i);
	}
	/* An all-zero eff only arises from a zero concurrency, which already gives nothing. */
	bool any = false;
	for (size_t i = 0; i < n; i++)
		any |= eff[i] != 0;
	if ((rc = cl_apportion(stage->requests, any ? eff : weights, n, tmp)) != 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		out[i].requests = tmp[i];
	if ((rc = cl_apportion(stage->ramp_from, any ? eff : weights, n, tmp)) != 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		out[i].ramp_from = (uint32_t)tmp[i];
	if ((rc = cl_apportion_real(stage->rate_per_s, any ? eff : weights, n, rate)) != 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		out[i].rate_per_s = stage->mode == CL_MODE_RATE ? rate[i] : stage->rate_per_s;
	for (size_t i = 0; i < n; i++) {
		if (stage->name && !(out[i].name = strdup(stage->name))) {
			rc = CL_ENOMEM;
			goto out;
		}
	}
	rc = 0;
out:
	if (rc) {
		for (size_t i = 0; i < n; i++)
			cl_stage_plan_free(&out[i]);
	}
	free(conc);
	free(tmp);
	free(eff);
	free(rate);
	return rc;
}

bool cl_cancel_pick(const struct cl_workload_plan *w, uint64_t k, int64_t *after_us)
{
	*after_us = 0;
	if (!w->cancel_ppm)
		return false;
	uint64_t ppm = w->cancel_ppm > CL_CANCEL_PPM_MAX ? CL_CANCEL_PPM_MAX : w->cancel_ppm;
	uint64_t phase = cl_mix64(w->cancel_seed) % CL_CANCEL_PPM_MAX;
	/* (k + 1) x ppm stays far below 2^64 for any k a run reaches (2^44 requests). */
	if ((k * ppm + phase) / CL_CANCEL_PPM_MAX == ((k + 1) * ppm + phase) / CL_CANCEL_PPM_MAX)
		return false;
	if (w->cancel_after_tokens)
		return true;
	int64_t lo = w->cancel_after_us, hi = w->cancel_after_max_us;
	if (hi > lo)
		lo += (int64_t)(cl_seed_derive(w->cancel_seed, k + 1) % (uint64_t)(hi - lo + 1));
	*after_us = lo;
	return true;
}
