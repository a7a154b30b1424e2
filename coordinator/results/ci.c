/* The 95 % confidence intervals of a stage's headline figures (stages[].ci95): batch means over
 * the stage's report intervals in bounded memory, or the spread across a stage's repeats
 * (their figures for the rates, their distribution functions for the percentiles). */
#include "coordinator/results/ci.h"
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/assert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Why batch means.  The intervals of one stage are not independent draws: a slow request
 * straddles two intervals, and a closed loop that completes many requests in one interval
 * has fewer in flight for the next.  A plain standard error over intervals would then be too
 * narrow.  Batch means groups consecutive intervals into B batches of equal length L; when
 * L is long against the series' memory the batch figures are nearly independent, and the
 * t interval over them is honest.  A block bootstrap would do as well but needs every
 * interval kept (or resampled blocks of them), which a soak cannot afford.
 *
 * Bounded memory: at most 2K batches are kept.  When they are full, neighbours are merged
 * (histograms exactly, counts summed) and L doubles, so a 12-hour soak holds K..2K batches of
 * long intervals, the same memory as a 10-second stage.  Each batch keeps the four latency
 * histograms the percentiles need at 2 significant digits (26 KiB each): how many of a
 * batch's values lie at or below the stage's percentile, within 1 % of the value, which is
 * noise next to the spread between batches (pct_fig says why percentiles go that way).
 */
#define K_MIN_BATCHES 10
#define MAX_BATCHES   (2 * K_MIN_BATCHES)
/* Fewer whole batches than this and the interval is not worth printing (null). */
#define MIN_BATCHES 5
/* Values one figure's interval is computed from at most: batches, or a stage's repeats. */
#define CI_VALUES CL_RESULTS_MAX_REPEATS
_Static_assert(CI_VALUES >= MAX_BATCHES, "room for every batch");

enum { H_TTFT, H_ITL, H_TPOT, H_E2E, H__N };
static const int h_lat[H__N] = { CL_LAT_TTFT, CL_LAT_ITL, CL_LAT_TPOT, CL_LAT_E2E };
static const struct cl_hist_cfg batch_cfg = { .lowest = 1, .highest = 3600000000LL, .sigfigs = 2 };

struct batch {
	struct cl_hist h[H__N];
	uint64_t completed_in_window, output_tokens, completed, errors;
	uint64_t inputs, prompt_tokens; /* embeddings: inputs embedded, their tokens */
	uint64_t documents;             /* rerank, score: documents scored */
	uint32_t intervals;
	double seconds;
};

struct cli_rs_ci {
	double ramp_s, end_s;
	bool until_end;     /* request-bound: the last interval is a drain, held back one step */
	uint32_t per_batch; /* L: intervals in a whole batch */
	uint32_t n_full;    /* whole batches in b[] */
	struct batch b[MAX_BATCHES];
	struct batch pending;
	bool has_pending;
};

/* The figures, in the order results.json lists them: name, where the point estimate is in
 * the stage object, and which batch value goes with it. */
enum fig_kind {
	F_RATE_TOKENS,
	F_RATE_REQUESTS,
	F_PCT,
	F_ERROR_RATE,
	F_RATE_INPUTS,       /* embeddings only (a stage with `embeddings`) */
	F_RATE_INPUT_TOKENS, /* ... and rerank, score: the tokens read */
	F_RATE_DOCUMENTS     /* rerank and score only (a stage with `rerank`) */
};
static const struct figure {
	const char *name;
	const char *path;
	enum fig_kind kind;
	int hist;
	double pct;
} figures[] = {
	{ "output_tokens_per_s", "throughput.output_tokens_per_s", F_RATE_TOKENS, 0, 0 },
	{ "requests_per_s", "throughput.requests_per_s", F_RATE_REQUESTS, 0, 0 },
	{ "ttft_p50_ms", "latency_ms.ttft.p50", F_PCT, H_TTFT, 50 },
	{ "ttft_p99_ms", "latency_ms.ttft.p99", F_PCT, H_TTFT, 99 },
	{ "itl_p50_ms", "latency_ms.itl.p50", F_PCT, H_ITL, 50 },
	{ "itl_p99_ms", "latency_ms.itl.p99", F_PCT, H_ITL, 99 },
	{ "tpot_p50_ms", "latency_ms.tpot.p50", F_PCT, H_TPOT, 50 },
	{ "tpot_p99_ms", "latency_ms.tpot.p99", F_PCT, H_TPOT, 99 },
	{ "e2e_p50_ms", "latency_ms.e2e.p50", F_PCT, H_E2E, 50 },
	{ "e2e_p99_ms", "latency_ms.e2e.p99", F_PCT, H_E2E, 99 },
	{ "error_rate", "requests.error_rate", F_ERROR_RATE, 0, 0 },
	/* An embeddings stage's own figures; other stages have no such path and no interval. */
	{ "inputs_per_s", "embeddings.inputs_per_s", F_RATE_INPUTS, 0, 0 },
	{ "input_tokens_per_s", "embeddings.input_tokens_per_s", F_RATE_INPUT_TOKENS, 0, 0 },
	/* A rerank or score stage's own figures, likewise. */
	{ "documents_per_s", "rerank.documents_per_s", F_RATE_DOCUMENTS, 0, 0 },
	{ "rerank_tokens_per_s", "rerank.tokens_per_s", F_RATE_INPUT_TOKENS, 0, 0 },
};
#define N_FIGURES (sizeof(figures) / sizeof(figures[0]))

static int batch_init(struct batch *b)
{
	memset(b, 0, sizeof(*b));
	int rc = 0;
	for (int i = 0; i < H__N; i++)
		rc |= cl_hist_init(&b->h[i], &batch_cfg);
	return rc ? CL_ENOMEM : 0;
}

static void batch_destroy(struct batch *b)
{
	for (int i = 0; i < H__N; i++)
		cl_hist_destroy(&b->h[i]);
}

static void batch_reset(struct batch *b)
{
	for (int i = 0; i < H__N; i++)
		cl_hist_reset(&b->h[i]);
	b->completed_in_window = b->output_tokens = b->completed = b->errors = 0;
	b->inputs = b->prompt_tokens = b->documents = 0;
	b->intervals = 0;
	b->seconds = 0;
}

static void batch_add(struct batch *dst, const struct batch *src)
{
	for (int i = 0; i < H__N; i++) {
		/* Both batches' histograms are made with one configuration: a merge cannot fail. */
		int rc = cl_hist_merge(&dst->h[i], &src->h[i]);
		CL_ASSERT(rc == 0);
	}
	dst->completed_in_window += src->completed_in_window;
	dst->output_tokens += src->output_tokens;
	dst->completed += src->completed;
	dst->errors += src->errors;
	dst->inputs += src->inputs;
	dst->documents += src->documents;
	dst->prompt_tokens += src->prompt_tokens;
	dst->intervals += src->intervals;
	dst->seconds += src->seconds;
}

/* One interval into b: its histograms re-bucketed at the batch's precision. */
static void batch_add_metrics(struct batch *b, double interval_s, const struct cl_metrics *m)
{
	for (int i = 0; i < H__N; i++) {
		const struct cl_hist *src = &m->lat[h_lat[i]];
		int32_t state = 0, index;
		int64_t value;
		uint64_t count;
		while (cl_hist_next_bucket(src, &state, &index, &value, &count))
			cl_hist_record_n(&b->h[i], value, count);
	}
	b->completed_in_window += m->ctr[CL_CTR_COMPLETED_IN_WINDOW];
	b->output_tokens += m->ctr[CL_CTR_OUTPUT_TOKENS];
	b->completed += m->ctr[CL_CTR_COMPLETED];
	b->errors += cl_verdict_errors(m);
	b->inputs += m->ctr[CL_CTR_EMBEDDING_INPUTS];
	b->documents += m->ctr[CL_CTR_DOCUMENTS];
	b->prompt_tokens += m->ctr[CL_CTR_PROMPT_TOKENS];
	b->intervals++;
	b->seconds += interval_s;
}

void cli_rs_ci_free(struct cli_rs_ci *c)
{
	if (!c)
		return;
	for (int i = 0; i < MAX_BATCHES; i++)
		batch_destroy(&c->b[i]);
	batch_destroy(&c->pending);
	free(c);
}

struct cli_rs_ci *cli_rs_ci_new(double ramp_s, double duration_s)
{
	struct cli_rs_ci *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	int rc = batch_init(&c->pending);
	for (int i = 0; i < MAX_BATCHES; i++)
		rc |= batch_init(&c->b[i]);
	if (rc) {
		cli_rs_ci_free(c);
		return NULL;
	}
	c->ramp_s = ramp_s;
	c->end_s = duration_s > 0 ? ramp_s + duration_s : INFINITY;
	c->until_end = duration_s <= 0;
	c->per_batch = 1;
	return c;
}

/* Adds one measured interval (in c->pending) to the batch filling; merges neighbours when
 * every slot is whole. */
static void commit(struct cli_rs_ci *c)
{
	batch_add(&c->b[c->n_full], &c->pending);
	if (c->b[c->n_full].intervals < c->per_batch)
		return;
	c->n_full++;
	if (c->n_full < MAX_BATCHES)
		return;
	/* b[i] = b[2i] + b[2i+1]: for i >= 1 both sources lie past i and are still intact. */
	batch_add(&c->b[0], &c->b[1]);
	for (int i = 1; i < K_MIN_BATCHES; i++) {
		batch_reset(&c->b[i]);
		batch_add(&c->b[i], &c->b[2 * i]);
		batch_add(&c->b[i], &c->b[2 * i + 1]);
	}
	for (int i = K_MIN_BATCHES; i < MAX_BATCHES; i++)
		batch_reset(&c->b[i]);
	c->n_full = K_MIN_BATCHES;
	c->per_batch *= 2;
}

void cli_rs_ci_add(struct cli_rs_ci *c, double t_s, double interval_s, const struct cl_metrics *m)
{
	const double eps = 1e-6;
	/* Whole intervals of the measured window only, as drift takes them. */
	if (!c || interval_s <= 0 || t_s - interval_s < c->ramp_s - eps || t_s > c->end_s + eps)
		return;
	if (c->until_end && c->has_pending)
		commit(c);
	batch_reset(&c->pending);
	batch_add_metrics(&c->pending, interval_s, m);
	c->has_pending = true;
	if (!c->until_end) {
		commit(c);
		c->has_pending = false;
	}
}

/* Student's t quantiles, two-sided 95 % and 99 % (97.5 % and 99.5 %), for df 1..30 by pairs,
 * then for df below 40, 60, 120 and more. */
static const double t_table[31][2] = {
	{ NAN, NAN },     { 12.706, 63.657 }, { 4.303, 9.925 }, { 3.182, 5.841 }, { 2.776, 4.604 },
	{ 2.571, 4.032 }, { 2.447, 3.707 },   { 2.365, 3.499 }, { 2.306, 3.355 }, { 2.262, 3.250 },
	{ 2.228, 3.169 }, { 2.201, 3.106 },   { 2.179, 3.055 }, { 2.160, 3.012 }, { 2.145, 2.977 },
	{ 2.131, 2.947 }, { 2.120, 2.921 },   { 2.110, 2.898 }, { 2.101, 2.878 }, { 2.093, 2.861 },
	{ 2.086, 2.845 }, { 2.080, 2.831 },   { 2.074, 2.819 }, { 2.069, 2.807 }, { 2.064, 2.797 },
	{ 2.060, 2.787 }, { 2.056, 2.779 },   { 2.052, 2.771 }, { 2.048, 2.763 }, { 2.045, 2.756 },
	{ 2.042, 2.750 },
};
static const double t_beyond[4][2] = {
	{ 2.030, 2.704 }, { 2.010, 2.704 }, { 1.990, 2.660 }, { 1.960, 2.576 }
};

static double t_quantile(size_t df, int level)
{
	if (df <= 30)
		return t_table[df][level];
	return t_beyond[df < 40 ? 0 : df < 60 ? 1 : df < 120 ? 2 : 3][level];
}

double cl_ci_t975(size_t df)
{
	return t_quantile(df, 0);
}

double cl_ci_t995(size_t df)
{
	return t_quantile(df, 1);
}

double cli_rs_ci_half(const double *v, size_t n)
{
	/* Deviations from the first value, so that equal values give exactly 0 (a mean of
	 * equal doubles need not equal them). */
	size_t k = 0;
	double shift = NAN, mean = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i])) {
			if (k == 0)
				shift = v[i];
			mean += v[i] - shift;
			k++;
		}
	if (k < 2)
		return NAN;
	mean /= (double)k;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i]))
			ss += (v[i] - shift - mean) * (v[i] - shift - mean);
	return cl_ci_t975(k - 1) * sqrt(ss / (double)(k - 1)) / sqrt((double)k);
}

/* {half, low, high, n, method}; null when unknown. */
static json_t *fig_json(const struct figure *f, double lo, double hi, size_t n, const char *method)
{
	if (!isfinite(lo) || !isfinite(hi))
		return json_null();
	if (lo < 0)
		lo = 0;
	if (f->kind == F_ERROR_RATE && hi > 1)
		hi = 1;
	int sig = f->kind == F_ERROR_RATE ? 4 : 5;
	return json_pack("{s:o,s:o,s:o,s:i,s:s}", "half",
			 cli_rj_real(cli_rj_sig((hi - lo) / 2, sig)), "low",
			 cli_rj_real(cli_rj_sig(lo, sig)), "high", cli_rj_real(cli_rj_sig(hi, sig)),
			 "n", (int)n, "method", method);
}

/* The t interval of values v[0..n) put around the stage's estimate. */
static json_t *t_fig(const struct figure *f, double est, const double *v, size_t n, size_t min_n,
		     const char *method)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += isfinite(v[i]) != 0;
	double half = k >= min_n ? cli_rs_ci_half(v, n) : NAN;
	return fig_json(f, est - half, est + half, k, method);
}

/*
 * A percentile's interval, through the distribution function.  The stage's p-th percentile x
 * is where the pooled distribution function F crosses p, and an interval for F(x) maps back
 * through the pooled histogram's quantiles to one for the percentile: [Q(p - h), Q(p + h)]
 * (Woodruff's interval).  F(x), the share of values at or below x, is a ratio of two sums
 * over the batches, so batch means gives its uncertainty (the ratio estimator's: residuals
 * below_i - F * values_i, t with B - 1 degrees of freedom), and that sees the dependence
 * between values: the gaps of the streams in one simulator batch step move together, requests
 * queued behind one slow request are slow together, a host hiccup stretches every gap of one
 * batch.  The order-statistic interval (binomial: values independent) is too narrow then.
 *
 * Why not batch means over each batch's own percentile: a batch needs ~5/(1-p) values for a
 * p99 of its own (a batch of 8 requests has none: its "p99" is its max, biased low), and the
 * mean of small batches' tail percentiles is a different, outlier-driven statistic from the
 * pooled one.  Counting values at or below x needs no minimum per batch, and the interval is
 * centred where the figure is.
 *
 * Never narrower than the binomial width (values independent): ten batches' spread of a
 * rare exceedance can come out near 0 by chance, and a load test's values are rarely less
 * dependent than independent.  Null when a rank would leave the data and the extreme value
 * there does not bound the percentile either (a p99 of under ~370 independent values), or
 * there are no values.  The batches' histograms are at 2 digits: below_i counts the
 * bucket holding x in proportion (cl_hist_count_at_or_below).
 */
static json_t *pct_fig(const struct batch *b, size_t nb, const struct figure *f, double est,
		       const struct cl_hist *pooled, const char *method)
{
	uint64_t n = pooled ? cl_hist_count(pooled) : 0;
	if (n == 0 || !isfinite(est) || nb > CI_VALUES)
		return json_null();
	double p = f->pct / 100.0, x = (double)cl_hist_percentile(pooled, f->pct);
	double below[CI_VALUES], values[CI_VALUES], sum_below = 0, sum_values = 0;
	for (size_t i = 0; i < nb; i++) {
		below[i] = cl_hist_count_at_or_below(&b[i].h[f->hist], x);
		values[i] = (double)cl_hist_count(&b[i].h[f->hist]);
		sum_below += below[i];
		sum_values += values[i];
	}
	double h = 1.96 * sqrt(p * (1 - p) / (double)n), n_eff = (double)n;
	if (sum_values > 0 && nb >= 2) {
		double share = sum_below / sum_values, ss = 0;
		for (size_t i = 0; i < nb; i++)
			ss += (below[i] - share * values[i]) * (below[i] - share * values[i]);
		double mean_values = sum_values / (double)nb;
		double se = sqrt(ss / ((double)nb * (double)(nb - 1))) / mean_values;
		double hb = cl_ci_t975(nb - 1) * se;
		if (hb > h) {
			h = hb;
			n_eff = fmin((double)n, p * (1 - p) / (se * se));
		}
	}
	/* Past the data's ends the ranks fall back on the min or max, when these still bound the
	 * percentile at 97.5 % on their side: the max falls below the p-quantile only when all of
	 * n_eff independent values do, p^n_eff (n_eff: the values the dependence leaves, n
	 * shrunk by the ratio of the batches' variance of F(x) to the binomial one). */
	double lo_rank = floor((double)n * (p - h)), hi_rank = ceil((double)n * (p + h));
	if (lo_rank < 1 && n_eff * log(1 - p) <= log(0.025))
		lo_rank = 1;
	if (hi_rank > (double)n && n_eff * log(p) <= log(0.025))
		hi_rank = (double)n;
	if (lo_rank < 1 || hi_rank > (double)n)
		return json_null();
	double lo = lo_rank == 1
			? (double)cl_hist_min(pooled) / 1000.0
			: cl_hist_percentile(pooled, 100.0 * (lo_rank - 0.5) / (double)n) / 1000.0;
	double hi = hi_rank == (double)n
			? (double)cl_hist_max(pooled) / 1000.0
			: cl_hist_percentile(pooled, 100.0 * (hi_rank - 0.5) / (double)n) / 1000.0;
	/* The stage's estimate is the 3-digit histogram's; keep it inside its interval. */
	lo = lo < est ? lo : est;
	hi = hi > est ? hi : est;
	return fig_json(f, lo, hi, (size_t)n, method);
}

static json_t *ci_head(const char *method, size_t n, uint32_t per_batch)
{
	json_t *o = json_pack("{s:s,s:f,s:i}", "method", method, "level", 0.95, "n", (int)n);
	if (o && per_batch && cli_rj_set(o, "intervals_per_batch", json_integer(per_batch))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *cli_rs_ci_json(const struct cli_rs_ci *c, const json_t *stage,
		       const struct cl_metrics *cumulative)
{
	if (!c || c->n_full < MIN_BATCHES)
		return json_null();
	json_t *o = ci_head("batch_means", c->n_full, c->per_batch);
	size_t n = c->n_full;
	for (size_t f = 0; o && f < N_FIGURES; f++) {
		const struct figure *fg = &figures[f];
		if (!cl_results_get(stage, fg->path))
			continue; /* an embeddings figure of another stage */
		double est = cl_results_num(stage, fg->path);
		json_t *fj;
		if (fg->kind == F_PCT) {
			fj = pct_fig(c->b, c->n_full, fg, est,
				     cumulative ? &cumulative->lat[h_lat[fg->hist]] : NULL,
				     "cdf_batch_means");
		} else {
			double v[CI_VALUES];
			for (size_t i = 0; i < n; i++) {
				const struct batch *b = &c->b[i];
				uint64_t ended = b->completed + b->errors;
				if (fg->kind == F_RATE_TOKENS)
					v[i] = b->seconds > 0 ? b->output_tokens / b->seconds : NAN;
				else if (fg->kind == F_RATE_INPUTS)
					v[i] = b->seconds > 0 ? b->inputs / b->seconds : NAN;
				else if (fg->kind == F_RATE_DOCUMENTS)
					v[i] = b->seconds > 0 ? b->documents / b->seconds : NAN;
				else if (fg->kind == F_RATE_INPUT_TOKENS)
					v[i] = b->seconds > 0 ? b->prompt_tokens / b->seconds : NAN;
				else if (fg->kind == F_RATE_REQUESTS)
					v[i] = b->seconds > 0 ? b->completed_in_window / b->seconds
							      : NAN;
				else
					v[i] = ended ? (double)b->errors / (double)ended : NAN;
			}
			fj = t_fig(fg, est, v, n, MIN_BATCHES, "batch_means");
		}
		if (cli_rj_set(o, fg->name, fj)) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

/*
 * A stage's repeats, each kept as one batch: its four latency histograms (2 digits) and its
 * counters.  Across repeats a percentile's interval is the same distribution-function
 * interval as within one run, with the repeats as its batches (method cdf_repeats): each
 * repeat's share of values at or below the pooled percentile, a ratio over independent runs.
 * Why not the t interval of the repeats' own percentiles, as for the rates: a 5-second
 * repeat of 60 requests has no TTFT p99 of its own (its "p99" is its max), the mean of such
 * figures is not the pooled one, and the interval was centred where the figure is not.
 * Memory: ~104 KiB a repeat, at most CL_RESULTS_MAX_REPEATS (10 MiB), freed with the stage.
 */
struct cli_rs_ci_reps {
	size_t n;
	struct batch b[CI_VALUES];
};

struct cli_rs_ci_reps *cli_rs_ci_reps_new(void)
{
	return calloc(1, sizeof(struct cli_rs_ci_reps));
}

int cli_rs_ci_reps_add(struct cli_rs_ci_reps *r, double window_s, const struct cl_metrics *m)
{
	if (r->n >= CI_VALUES)
		return 0; /* cannot happen: repeat is at most CL_RESULTS_MAX_REPEATS */
	if (batch_init(&r->b[r->n]) != 0) {
		batch_destroy(&r->b[r->n]);
		return CL_ENOMEM;
	}
	batch_add_metrics(&r->b[r->n], window_s, m);
	r->n++;
	return 0;
}

void cli_rs_ci_reps_free(struct cli_rs_ci_reps *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		batch_destroy(&r->b[i]);
	free(r);
}

json_t *cli_rs_ci_repeats_json(const json_t *stage, const json_t *const *repeats, size_t n,
			       const struct cli_rs_ci_reps *reps, const struct cl_metrics *pooled)
{
	if (n < 2 || n > CI_VALUES)
		return json_null();
	json_t *o = ci_head("repeats", n, 0);
	for (size_t f = 0; o && f < N_FIGURES; f++) {
		const struct figure *fg = &figures[f];
		double v[CI_VALUES];
		if (!cl_results_get(stage, fg->path))
			continue; /* an embeddings figure of another stage */
		double est = cl_results_num(stage, fg->path);
		json_t *fj = NULL;
		if (fg->kind == F_PCT && reps && reps->n == n && pooled)
			fj = pct_fig(reps->b, reps->n, fg, est, &pooled->lat[h_lat[fg->hist]],
				     "cdf_repeats");
		/* The rates; and a percentile the distribution function cannot bound: too few
		 * values (a p99 of under ~370 independent ones), or repeats that disagree past
		 * what their values can bound (F(x) near 0 in some, 1 in others): the t interval
		 * of the repeats' own figures.  A rough width (a short repeat's p99 is near its
		 * max), but a width: a null would leave compare the limit alone for a figure
		 * known to be noisy. */
		if (!fj || json_is_null(fj)) {
			json_decref(fj);
			for (size_t i = 0; i < n; i++)
				v[i] = cl_results_num(repeats[i], fg->path);
			fj = t_fig(fg, est, v, n, 2, "repeats");
		}
		if (cli_rj_set(o, fg->name, fj)) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}
