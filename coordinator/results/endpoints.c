/* A stage's figures per endpoint when the target has several (target.urls): the stage's
 * `endpoints` array (docs/results.md, "Per endpoint"). */
#include "internal.h"

#include "chatload/metrics.h"

static json_t *ms_or_null(const struct cl_hist *h, double p)
{
	return cl_hist_count(h) ? json_real(cl_hist_percentile(h, p) / 1000.0) : json_null();
}

/* {count, p50, p99} in ms of one endpoint histogram (merged across agents and workers like
 * the stage's own, never percentiles averaged) */
static json_t *lat_json(const struct cl_hist *h)
{
	return json_pack("{s:o,s:o,s:o}", "count", cli_rj_uint(cl_hist_count(h)), "p50",
			 ms_or_null(h, 50), "p99", ms_or_null(h, 99));
}

static json_t *one_json(const struct cl_ep_metrics *ep, const char *url, double window_s)
{
	json_t *errors = json_object();
	uint64_t total = 0;
	for (size_t i = 0; errors && i < cli_rj_n_err_keys; i++) {
		uint64_t n = ep->ctr[CL_CTR_FIRST_ERROR + i];
		total += n;
		if (cli_rj_set(errors, cli_rj_err_keys[i], cli_rj_uint(n))) {
			json_decref(errors);
			errors = NULL;
		}
	}
	if (!errors)
		return NULL;
	uint64_t tok = ep->ctr[CL_CTR_OUTPUT_TOKENS];
	json_t *tps = window_s > 0 ? json_real(cli_rj_sig((double)tok / window_s, 6)) : json_null();
	json_t *rps = window_s > 0 ? json_real(cli_rj_sig((double)ep->ctr[CL_CTR_WINDOW_SHARE_MILLI] /
							   1000.0 / window_s,
						   6))
				   : json_null();
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "url", cli_rj_str(url),
			 "started", cli_rj_uint(ep->ctr[CL_CTR_STARTED]), "completed",
			 cli_rj_uint(ep->ctr[CL_CTR_COMPLETED]), "cut",
			 cli_rj_uint(ep->ctr[CL_CTR_CUT]), "errors_total", cli_rj_uint(total),
			 "errors", errors, "output_tokens", cli_rj_uint(tok), "output_tokens_per_s",
			 tps, "requests_per_s", rps, "ttft_ms", lat_json(&ep->lat[CL_EP_LAT_TTFT]),
			 "itl_ms", lat_json(&ep->lat[CL_EP_LAT_ITL]));
}

json_t *cli_rs_endpoints_json(const struct cl_metrics *m, const json_t *urls, double window_s)
{
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < m->n_eps; i++) {
		const json_t *u = json_array_get(urls, i);
		if (cli_rj_append(a, one_json(&m->eps[i], u ? json_string_value(u) : NULL,
					      window_s))) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}
