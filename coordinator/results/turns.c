/* A stage's multi-turn figures in results.json: TTFT and prompt length by turn index. */
#include "coordinator/results/internal.h"

/* Milliseconds at percentile p of h, rounded to the microsecond. */
static json_t *pct_ms(const struct cl_hist *h, double p)
{
	return json_real(cli_rj_round(cl_hist_percentile(h, p) / 1000.0, 3));
}

json_t *cli_rs_turns_json(const struct cl_metrics *m)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	for (int t = 0; t < CL_TURNS_MAX; t++) {
		const struct cl_hist *h = &m->lat[CL_LAT_TTFT_TURN1 + t];
		uint64_t done = m->ctr[CL_CTR_TURN1_COMPLETED + t];
		if (!done)
			continue;
		uint64_t pt = m->ctr[CL_CTR_TURN1_PROMPT_TOKENS + t];
		bool any = cl_hist_count(h) > 0;
		json_t *o = json_pack(
		    "{s:i,s:b,s:o,s:o,s:o,s:o,s:o}", "turn", t + 1, "and_later",
		    t == CL_TURNS_MAX - 1, "requests", cli_rj_uint(done), "ttft_p50_ms",
		    any ? pct_ms(h, 50) : json_null(), "ttft_p90_ms",
		    any ? pct_ms(h, 90) : json_null(), "ttft_p99_ms",
		    any ? pct_ms(h, 99) : json_null(), "prompt_tokens_mean",
		    pt ? json_real(cli_rj_round((double)pt / (double)done, 1)) : json_null());
		if (cli_rj_append(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}
