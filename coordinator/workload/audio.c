/* A transcription workload's bodies (workload.audio): the form fields each request sends
 * and the length of the WAV file the agent makes for it; the audio itself is made on the
 * fly by the engine (client/http/form.h), so no file is read or held. */
#include "coordinator/workload/internal.h"

#include "chatload/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A length in ms: normal around the mean, clamped to [100 ms, twice the mean]. */
static uint32_t draw_ms(const struct cl_scn_audio *a, uint64_t *rng)
{
	double mean_ms = (double)a->duration_us / 1000.0;
	double x = mean_ms +
		   (a->stddev_us > 0 ? (double)a->stddev_us / 1000.0 * cl_splitmix_normal(rng) : 0);
	double hi = 2 * mean_ms;
	x = round(x);
	return x < 100 ? 100 : x > hi ? (uint32_t)hi : (uint32_t)x;
}

int cli_workload_audio(struct render_ctx *c, const struct cl_scn_workload *w, struct cl_err *err)
{
	const struct cl_scn_audio *a = &w->audio;
	uint64_t rng = w->seed ^ 0x617564696f000000ULL; /* "audio" */
	if (a->duration_us <= 0 || a->count == 0)
		return cl_err_set(err, CL_EINVAL, "workload.audio needs a duration and a count");
	for (uint32_t i = 0; i < a->count; i++) {
		/* "model" first, as every body (cl_workload_plan_set_model swaps it there). */
		json_t *form = json_pack("{s:s,s:s}", "model", c->model, "response_format", "json");
		if (!form || (c->extra && cl_body_json_merge(form, c->extra, false) != 0)) {
			json_decref(form);
			return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
		}
		char *json = json_dumps(form, CL_BODY_JSON_DUMP_FLAGS);
		json_decref(form);
		if (!json)
			return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
		struct cl_request_body b = { .json = json,
					     .len = strlen(json),
					     .audio_ms = draw_ms(a, &rng) };
		int rc = cli_workload_append(c, &b, 0, err);
		if (rc)
			return rc;
	}
	return 0;
}
