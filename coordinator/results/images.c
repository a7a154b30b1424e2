/* What workload.images cost in prompt tokens: a stage's measured prompt tokens per request
 * against the text's estimate, per image (results' `stages[].images`). */
#include "coordinator/results/internal.h"

#include <math.h>

json_t *cli_rs_images_json(const json_t *workload, const json_t *stage)
{
	const json_t *im = json_object_get(workload, "images");
	double per_request = json_number_value(json_object_get(im, "count"));
	if (!json_is_object(im) || !(per_request > 0))
		return NULL;
	double text = json_number_value(json_object_get(workload, "prompt_tokens_estimated_mean"));
	const json_t *pp = json_object_get(json_object_get(stage, "tokens"), "prompt_per_request");
	double n = json_number_value(json_object_get(pp, "count"));
	double with = json_number_value(json_object_get(pp, "mean"));
	/* Nothing measured (no usage, or no request finished): the cost is unknown, not 0. */
	bool have = n > 0 && isfinite(with) && json_is_number(json_object_get(pp, "mean"));
	return json_pack(
	    "{s:o,s:o,s:o,s:o}", "per_request", json_integer((json_int_t)per_request),
	    "prompt_tokens_mean", have ? json_real(with) : json_null(),
	    "text_prompt_tokens_estimated_mean", json_real(text), "prompt_tokens_per_image",
	    have ? json_real(cli_rj_sig((with - text) / per_request, 6)) : json_null());
}
