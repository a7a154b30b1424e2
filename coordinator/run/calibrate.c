/* workload.calibrate: asks the target's /tokenize (vLLM, SGLang, llama.cpp) how many tokens
 * a sample of the prompt vocabulary is, once, so prompts are built to the target's own
 * characters-per-token rather than the estimate of 4. */
#include "run/calibrate.h"

#include "http/handle.h"

#include "chatload/buf.h"
#include "workload/workload.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_TOKENS 1000       /* estimated tokens of the sample: 4000 characters */
#define REPLY_MAX     (4u << 20) /* a /tokenize answer larger than this is refused */

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
	return cl_buf_append(ud, p, size * n) == 0 ? size * n : 0;
}

/* The count of a /tokenize answer: vLLM's "count", else the length of "tokens". */
static long reply_count(const char *text, size_t len)
{
	json_t *j = json_loadb(text, len, 0, NULL);
	json_t *count = json_object_get(j, "count"), *tokens = json_object_get(j, "tokens");
	long n = json_is_integer(count)  ? (long)json_integer_value(count)
		 : json_is_array(tokens) ? (long)json_array_size(tokens)
					 : -1;
	json_decref(j);
	return n;
}

int cl_calibrate_tokens(const struct cl_target_plan *target, const char *model,
			double *chars_per_token, struct cl_err *err)
{
	struct cl_http_target t = { 0 };
	struct curl_slist nodes[CL_HTTP_MAX_HEADERS];
	struct cl_buf reply = { .max = REPLY_MAX };
	char *sample = NULL, *body = NULL;
	CURL *h = NULL;
	int rc = cl_http_target_init(&t, target, NULL, err);
	if (rc)
		goto out;
	if ((rc = cl_workload_sample_text(SAMPLE_TOKENS, &sample)) != 0) {
		rc = cl_err_set(err, rc, "out of memory building the calibration sample");
		goto out;
	}
	json_t *o = json_pack("{s:s,s:s,s:s}", "model", model ? model : "", "prompt", sample,
			      "content", sample);
	body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!body || !(h = curl_easy_init())) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory calling /tokenize");
		goto out;
	}
	struct curl_slist *hdrs =
	    cl_http_target_link(&t, CL_HTTP_TOKENIZE, nodes, CL_HTTP_MAX_HEADERS, NULL);
	if ((rc = cl_http_target_apply(&t, h, CL_HTTP_TOKENIZE, 30000000, hdrs, err)) != 0)
		goto out;
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
	CURLcode cc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK) {
		rc = cl_err_set(err, CL_EIO, "POST %s: %s", t.url[CL_HTTP_TOKENIZE],
				curl_easy_strerror(cc));
		goto out;
	}
	if (status != 200) {
		rc = cl_err_set(err, CL_EPROTO, "POST %s answered HTTP %ld",
				t.url[CL_HTTP_TOKENIZE], status);
		goto out;
	}
	long count = reply_count(reply.data ? reply.data : "", reply.len);
	if (count < 1) {
		rc = cl_err_set(err, CL_EPROTO,
				"POST %s: the answer has neither 'count' nor a 'tokens' array",
				t.url[CL_HTTP_TOKENIZE]);
		goto out;
	}
	double ratio = (double)strlen(sample) / (double)count;
	/* Outside this range the answer is not a tokenizer's count of text. */
	if (ratio < 0.5 || ratio > 64) {
		rc =
		    cl_err_set(err, CL_EPROTO, "POST %s: %ld tokens for %zu characters is no count",
			       t.url[CL_HTTP_TOKENIZE], count, strlen(sample));
		goto out;
	}
	*chars_per_token = ratio;
out:
	if (h)
		curl_easy_cleanup(h);
	cl_buf_free(&reply);
	free(body);
	free(sample);
	cl_http_target_free(&t);
	return rc;
}
