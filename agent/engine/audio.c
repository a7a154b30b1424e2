/* Transcription bodies: each description the plan carries becomes, once when the engine is
 * made, the multipart form its requests upload (chatload/audio.h), so the hot path sends
 * bytes as for any other API and makes no audio per request. */
#include "internal.h"

#include "chatload/audio.h"

#include <stdlib.h>

#define FORMS_MAX_BYTES (2ull << 30) /* every form an engine holds, together */

int cli_audio_forms(struct cl_engine *e, struct cl_err *err)
{
	struct cl_workload_plan *w = &e->workload;
	struct cl_buf form = { .max = CL_AUDIO_FORM_MAX };
	uint64_t total = 0;
	for (size_t i = 0; i < w->n_bodies; i++) {
		struct cl_request_body *b = &w->bodies[i];
		uint32_t ms = 0;
		bool stream = false;
		int rc = cl_audio_form_render(b->json, b->len, &form, &ms, &stream, err);
		if (rc) {
			cl_buf_free(&form);
			return cl_err_prefix(err, "request body %zu", i);
		}
		total += form.len;
		if (total > FORMS_MAX_BYTES) {
			cl_buf_free(&form);
			return cl_err_set(
			    err, CL_ETOOBIG,
			    "the audio of %zu request bodies makes forms of more than "
			    "%llu MiB: fewer or shorter clips (workload.audio)",
			    w->n_bodies, FORMS_MAX_BYTES >> 20);
		}
		size_t len = form.len;
		char *bytes = cl_buf_steal(&form);
		if (!bytes)
			return cl_err_set(err, CL_ENOMEM, "out of memory rendering audio forms");
		free(b->json);
		b->json = bytes;
		b->len = len;
		b->audio_ms = ms;
		b->whole = !stream;
	}
	cl_buf_free(&form);
	return 0;
}
