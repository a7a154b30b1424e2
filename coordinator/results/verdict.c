/* SLO evaluation on merged histograms, goodput, client-bound detection, estimates and the
 * exit code of a run. */
#include "coordinator/results/verdict.h"

#include "coordinator/results/results.h"

#include "chatload/exitcode.h"
#include "chatload/units.h"

#include <math.h>
#include <string.h>

uint64_t cl_verdict_errors(const struct cl_metrics *m)
{
	uint64_t n = 0;
	for (int i = CL_CTR_FIRST_ERROR; i <= CL_CTR_LAST_ERROR; i++)
		n += m->ctr[i];
	return n;
}

double cl_verdict_error_rate(const struct cl_metrics *m)
{
	uint64_t errors = cl_verdict_errors(m);
	uint64_t ended = errors + m->ctr[CL_CTR_COMPLETED];
	return ended ? (double)errors / (double)ended : 0.0;
}

double cl_verdict_request_rate(const struct cl_metrics *m, double window_s)
{
	return window_s > 0 ? (double)m->ctr[CL_CTR_WINDOW_SHARE_MILLI] / 1000.0 / window_s : NAN;
}

double cl_verdict_goodput(const struct cl_metrics *m, double window_s)
{
	return window_s > 0 ? (double)m->ctr[CL_CTR_GOOD] / window_s : 0.0;
}

bool cl_verdict_applies(const struct cl_scn_slo *slo, const char *stage_name)
{
	return !slo->stage || (stage_name && strcmp(slo->stage, stage_name) == 0);
}

double cl_verdict_measure(const struct cl_scn_slo *slo, const struct cl_metrics *m, double window_s,
			  bool *has_data)
{
	*has_data = true;
	switch (slo->kind) {
	case CL_SLO_LATENCY: {
		if (slo->lat < 0 || slo->lat >= CL_LAT__COUNT) {
			*has_data = false;
			return NAN;
		}
		const struct cl_hist *h = &m->lat[slo->lat];
		if (cl_hist_count(h) == 0) {
			*has_data = false;
			return NAN;
		}
		if (slo->percentile < 0)
			return cl_hist_mean(h);
		return (double)cl_hist_percentile(h, slo->percentile);
	}
	case CL_SLO_ERROR_RATE:
		return cl_verdict_error_rate(m);
	case CL_SLO_MIN_OUTPUT_TPS:
		if (window_s <= 0)
			break;
		return (double)m->ctr[CL_CTR_OUTPUT_TOKENS] / window_s;
	case CL_SLO_MIN_REQUEST_RATE:
		if (window_s <= 0)
			break;
		return cl_verdict_request_rate(m, window_s);
	}
	*has_data = false;
	return NAN;
}

uint64_t cl_verdict_slo_samples(const struct cl_scn_slo *slo, const struct cl_metrics *m)
{
	if (slo->kind != CL_SLO_LATENCY || slo->lat < 0 || slo->lat >= CL_LAT__COUNT)
		return 0;
	return cl_hist_count(&m->lat[slo->lat]);
}

uint64_t cl_verdict_samples_needed(const struct cl_scn_slo *slo)
{
	if (slo->kind != CL_SLO_LATENCY || slo->percentile < 0 || slo->percentile >= 100)
		return 1;
	/* The small epsilon keeps 1 / 0.01 from rounding up to 101. */
	double need = ceil(1.0 / (1.0 - slo->percentile / 100.0) - 1e-9);
	return need < 1 ? 1 : need > 1e9 ? 1000000000u : (uint64_t)need;
}

bool cl_verdict_passes(const struct cl_scn_slo *slo, double measured, bool has_data)
{
	if (!has_data || isnan(measured))
		return false;
	switch (slo->kind) {
	case CL_SLO_LATENCY:
	case CL_SLO_ERROR_RATE:
		return measured <= slo->limit;
	case CL_SLO_MIN_OUTPUT_TPS:
	case CL_SLO_MIN_REQUEST_RATE:
		return measured >= slo->limit;
	}
	return false;
}

const char *cl_verdict_unit(const struct cl_scn_slo *slo)
{
	switch (slo->kind) {
	case CL_SLO_LATENCY:
		return "ms";
	case CL_SLO_ERROR_RATE:
		return "ratio";
	default:
		return "1/s";
	}
}

double cl_verdict_to_unit(const struct cl_scn_slo *slo, double v)
{
	return slo->kind == CL_SLO_LATENCY ? v / 1000.0 : v;
}

bool cl_verdict_cpu_bound(double cpu_pct, double cpu_capacity_pct)
{
	return cpu_capacity_pct > 0 && cpu_pct > CL_RESULTS_CLIENT_CPU_FRACTION * cpu_capacity_pct;
}

unsigned cl_verdict_client_bound(const struct cl_client_obs *o)
{
	unsigned why = 0;
	if (o->cpu_bound_intervals > 0)
		why |= CL_CLIENT_CPU;
	if (!o->dispatch_lag_is_backlog && o->dispatch_lag_p99_us > CL_RESULTS_CLIENT_LAG_US)
		why |= CL_CLIENT_DISPATCH_LAG;
	if (o->loop_lag_p99_us > CL_RESULTS_CLIENT_LAG_US)
		why |= CL_CLIENT_LOOP_LAG;
	if (o->stalls > 0)
		why |= CL_CLIENT_STALL;
	if (o->agents_missing > 0)
		why |= CL_CLIENT_AGENT_MISSING;
	if (o->coordinator_stalls > 0)
		why |= CL_CLIENT_COORDINATOR_STALL;
	return why;
}

long cl_verdict_find_stage(const char *from_stage, const struct cl_stage_ref *stages, size_t n)
{
	if (n == 0)
		return -1;
	if (!from_stage)
		return (long)n - 1;
	for (size_t i = 0; i < n; i++) {
		if (stages[i].name && strcmp(stages[i].name, from_stage) == 0)
			return (long)i;
	}
	uint64_t c;
	if (cl_parse_u64(from_stage, UINT32_MAX, &c) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (stages[i].concurrency_mode && stages[i].concurrency == c)
			return (long)i;
	}
	return -1;
}

void cl_verdict_estimate(uint64_t samples, double requests_per_s, double tokens_per_request,
			 double *hours, double *output_tokens)
{
	*hours = requests_per_s > 0 ? (double)samples / requests_per_s / 3600.0 : NAN;
	*output_tokens = (double)samples * tokens_per_request;
}

int cl_verdict_exit_code(int hint, bool complete, bool stage_failed, bool client_bound_fails,
			 size_t breaches)
{
	if (hint != CL_EXIT_OK)
		return hint;
	/* A client-bound stage's numbers (and so its SLO checks) describe the client: that
	 * outranks a breach, as a failed stage does. */
	if (!complete || stage_failed || client_bound_fails)
		return CL_EXIT_FAILED;
	return breaches ? CL_EXIT_SLO_BREACH : CL_EXIT_OK;
}
