/* Request-body rendering, the entry points: inline prompts, dataset files and synthetic
 * prompts become pre-rendered chat-completions bodies (jansson; off the hot path).  One file
 * per source (workload_dataset.c, workload_synth.c), the body builder in workload_body.c. */
#include "workload_int.h"

#include <stdlib.h>
#include <string.h>

static void free_bodies(struct cl_request_body *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i].json);
	free(b);
}

int cl_workload_render(const struct cl_scenario *s, const char *model, struct cl_workload_plan *out,
		       struct cl_err *err)
{
	struct render_ctx c = { 0 };
	int rc = 0;
	memset(out, 0, sizeof(*out));
	if (!s || !model || !*model)
		return cl_err_set(err, CL_EINVAL, "no model to render request bodies for");
	const struct cl_scn_workload *w = &s->workload;
	c.model = model;
	c.max_tokens = w->max_tokens;
	c.system_prompt = w->system_prompt;
	if (s->target.body_json && (rc = cli_workload_parse_object(
					s->target.body_json, "target.body", &c.extra, err)) != 0)
		return rc;
	switch (w->kind) {
	case CL_WORKLOAD_PROMPTS:
		if (w->n_prompts == 0) {
			rc = cl_err_set(err, CL_EINVAL, "workload.prompts is empty");
			break;
		}
		for (size_t i = 0; i < w->n_prompts && !rc; i++) {
			rc = cli_workload_push_prompt(&c, c.system_prompt, w->prompts[i],
						      strlen(w->prompts[i]), err);
			if (rc)
				cl_err_prefix(err, "workload.prompts[%zu]", i);
		}
		break;
	case CL_WORKLOAD_DATASET:
		rc = cli_workload_read_dataset(&c, w, err);
		break;
	case CL_WORKLOAD_SYNTHETIC:
		rc = cli_workload_synthesize(&c, w, err);
		break;
	default:
		rc = cl_err_set(err, CL_EINVAL, "unknown workload kind %d", (int)w->kind);
	}
	json_decref(c.extra);
	if (rc) {
		free_bodies(c.bodies, c.n);
		return rc;
	}
	out->bodies = c.bodies;
	out->n_bodies = c.n;
	out->max_tokens = w->max_tokens;
	out->request_timeout_us = w->request_timeout_us;
	return 0;
}

int cl_workload_render_probe(const char *model, const char *prompt, uint32_t max_tokens,
			     const char *extra_body_json, char **json_out, struct cl_err *err)
{
	json_t *extra = NULL;
	json_t *messages = NULL;
	int rc = 0;
	*json_out = NULL;
	if (!model || !*model || !prompt)
		return cl_err_set(err, CL_EINVAL, "probe body needs a model and a prompt");
	if (extra_body_json &&
	    (rc = cli_workload_parse_object(extra_body_json, "probe body", &extra, err)))
		return rc;
	json_t *content = json_string(prompt);
	if (!content) {
		rc = cl_err_set(err, CL_EINVAL, "probe prompt is not valid UTF-8");
		goto out;
	}
	messages = json_array();
	if (!messages || cli_workload_add_message(messages, "user", content) != 0) {
		if (!messages)
			json_decref(content);
		rc = cl_err_set(err, CL_ENOMEM, "out of memory rendering the probe body");
		goto out;
	}
	rc = cli_workload_dump_body(model, messages, max_tokens, extra, json_out);
	messages = NULL;
	if (rc)
		rc = cl_err_set(err, CL_ENOMEM, "out of memory rendering the probe body");
out:
	json_decref(messages);
	json_decref(extra);
	return rc;
}
