/* Joules and money (docs/results.md, "Joules and money"): a stage's energy per token from what
 * the GPUs drew over its window (stages[].server.gpu_energy), and with the scenario's `cost:`
 * its money per million tokens, a capacity plan's money per hour and an estimate's cost. */
#include "internal.h"

#include "coordinator/scenario/scenario.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

json_t *cli_rs_cost_scenario_json(const struct cl_scn_cost *c)
{
	double hour = cl_scenario_cost_per_hour(c);
	if (isnan(hour))
		return json_null();
	return json_pack("{s:f,s:o,s:o,s:o,s:f}", "per_hour", c->per_hour, "gpus",
			 c->gpus ? json_integer(c->gpus) : json_null(), "servers",
			 json_integer(c->servers ? c->servers : 1), "currency",
			 cli_rj_str(c->currency), "target_per_hour", cli_rj_sig(hour, 6));
}

/* x rounded to 6 significant digits, null when it is not a finite number. */
static json_t *sig6(double x)
{
	return isfinite(x) ? json_real(cli_rj_sig(x, 6)) : json_null();
}

json_t *cli_rs_energy_json(const json_t *stage)
{
	const json_t *e = cl_results_get(stage, "server.gpu_energy");
	double power = cl_results_num(e, "power_w");
	if (!json_is_object(e) || !(power >= 0))
		return NULL;
	double secs = cl_results_num(stage, "duration_s");
	double out_s = cl_results_num(stage, "throughput.output_tokens_per_s");
	/* Mean power over the window, over output tokens a second over the same window: the
	 * energy each output token cost, the whole draw of the GPUs charged to the tokens. */
	return json_pack("{s:O,s:o,s:o,s:o,s:o,s:o}", "source", json_object_get(e, "source"),
			 "power_w", sig6(power), "joules", sig6(power * secs), "gpus",
			 json_deep_copy(json_object_get(e, "gpus")), "joules_per_output_token",
			 sig6(out_s > 0 ? power / out_s : NAN), "output_tokens_per_joule",
			 sig6(power > 0 ? out_s / power : NAN));
}

json_t *cli_rs_cost_json(double per_hour, const char *currency, const json_t *stage)
{
	if (!(per_hour > 0))
		return NULL;
	double out_s = cl_results_num(stage, "throughput.output_tokens_per_s");
	double in_s = cl_results_num(stage, "throughput.total_tokens_per_s") - out_s;
	/* The whole hour's cost over the tokens of one kind an hour at this stage's rate (as a
	 * price list quotes input and output apart): what a million of them cost when the
	 * target does nothing else. */
	return json_pack("{s:f,s:o,s:o,s:o}", "per_hour", cli_rj_sig(per_hour, 6), "currency",
			 cli_rj_str(currency), "per_million_output_tokens",
			 sig6(out_s > 0 ? per_hour / (out_s * 3600) * 1e6 : NAN),
			 "per_million_input_tokens",
			 sig6(in_s > 0 ? per_hour / (in_s * 3600) * 1e6 : NAN));
}
