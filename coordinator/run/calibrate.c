/* workload.calibrate: asks the target's /tokenize (vLLM, SGLang, llama.cpp) how many tokens
 * a sample of the prompt vocabulary is, then the prompts to be sent themselves, so prompts are
 * built to the target's own characters per token rather than the estimate of 4. */
#include "coordinator/run/calibrate.h"

#include "client/http/handle.h"

#include "chatload/buf.h"
#include "coordinator/workload/workload.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_TOKENS 1000       /* estimated tokens of the sample: 4000 characters */
#define REPLY_MAX     (4u << 20) /* a /tokenize answer larger than this is refused */

/* One connection to the target's /tokenize, used for every count of a calibration. */
struct tokenizer {
	struct cl_http_target t;
	struct curl_slist nodes[CL_HTTP_MAX_HEADERS];
	CURL *h;
	struct cl_buf reply;
	const char *model;
};

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

static void tok_free(struct tokenizer *k)
{
	if (k->h)
		curl_easy_cleanup(k->h);
	k->h = NULL;
	cl_buf_free(&k->reply);
	cl_http_target_free(&k->t);
}

static int tok_init(struct tokenizer *k, const struct cl_target_plan *target, const char *model,
		    struct cl_err *err)
{
	memset(k, 0, sizeof(*k));
	k->reply.max = REPLY_MAX;
	k->model = model ? model : "";
	int rc = cl_http_target_init(&k->t, target, NULL, err);
	if (rc)
		return rc;
	if (!(k->h = curl_easy_init()))
		return cl_err_set(err, CL_ENOMEM, "out of memory calling /tokenize");
	struct curl_slist *hdrs =
	    cl_http_target_link(&k->t, CL_HTTP_TOKENIZE, k->nodes, CL_HTTP_MAX_HEADERS, NULL);
	if ((rc = cl_http_target_apply(&k->t, k->h, CL_HTTP_TOKENIZE, 30000000, hdrs, err)) != 0)
		return rc;
	curl_easy_setopt(k->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(k->h, CURLOPT_WRITEDATA, &k->reply);
	return 0;
}

/* POSTs text (as "prompt" and "content") and sets *count from the answer. */
static int tok_count(struct tokenizer *k, const char *text, long *count, struct cl_err *err)
{
	json_t *o = json_pack("{s:s,s:s,s:s}", "model", k->model, "prompt", text, "content", text);
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!body)
		return cl_err_set(err, CL_ENOMEM, "out of memory calling /tokenize");
	cl_buf_reset(&k->reply);
	curl_easy_setopt(k->h, CURLOPT_POSTFIELDS, body);
	CURLcode cc = curl_easy_perform(k->h);
	free(body);
	long status = 0;
	curl_easy_getinfo(k->h, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK)
		return cl_err_set(err, CL_EIO, "POST %s: %s", k->t.url[CL_HTTP_TOKENIZE],
				  curl_easy_strerror(cc));
	if (status != 200)
		return cl_err_set(err, CL_EPROTO, "POST %s answered HTTP %ld",
				  k->t.url[CL_HTTP_TOKENIZE], status);
	*count = reply_count(k->reply.data ? k->reply.data : "", k->reply.len);
	if (*count < 1)
		return cl_err_set(err, CL_EPROTO,
				  "POST %s: the answer has neither 'count' nor a 'tokens' array",
				  k->t.url[CL_HTTP_TOKENIZE]);
	return 0;
}

int cl_calibrate_tokens(const struct cl_target_plan *target, const char *model,
			double *chars_per_token, struct cl_err *err)
{
	struct tokenizer k;
	char *sample = NULL;
	long count = 0;
	int rc = tok_init(&k, target, model, err);
	if (rc)
		goto out;
	if ((rc = cl_workload_sample_text(SAMPLE_TOKENS, &sample)) != 0) {
		rc = cl_err_set(err, rc, "out of memory building the calibration sample");
		goto out;
	}
	if ((rc = tok_count(&k, sample, &count, err)) != 0)
		goto out;
	double ratio = (double)strlen(sample) / (double)count;
	/* Outside this range the answer is not a tokenizer's count of text. */
	if (ratio < 0.5 || ratio > 64) {
		rc =
		    cl_err_set(err, CL_EPROTO, "POST %s: %ld tokens for %zu characters is no count",
			       k.t.url[CL_HTTP_TOKENIZE], count, strlen(sample));
		goto out;
	}
	*chars_per_token = ratio;
out:
	tok_free(&k);
	free(sample);
	return rc;
}

/* The text of a rendered body's messages, one after the other, into b: what the target's
 * tokenizer sees of the prompt (the chat template's own tokens aside). */
static int body_text(const struct cl_request_body *body, struct cl_buf *b)
{
	json_t *j = json_loadb(body->json, body->len, 0, NULL);
	json_t *messages = json_object_get(j, "messages");
	size_t i, p;
	json_t *m, *part;
	int rc = 0;
	cl_buf_reset(b);
	json_array_foreach(messages, i, m)
	{
		json_t *content = json_object_get(m, "content");
		if (json_is_string(content)) {
			rc |= cl_buf_append(b, json_string_value(content),
					    json_string_length(content));
			continue;
		}
		json_array_foreach(content, p, part)
		{
			json_t *text = json_object_get(part, "text");
			if (json_is_string(text))
				rc |= cl_buf_append(b, json_string_value(text),
						    json_string_length(text));
		}
	}
	json_decref(j);
	rc |= cl_buf_append(b, "", 1); /* NUL-terminated */
	return rc ? CL_ENOMEM : 0;
}

int cl_calibrate_prompts(const struct cl_target_plan *target, const char *model,
			 const struct cl_workload_plan *plan, uint32_t max_checked,
			 struct cl_calibrate_check *out, struct cl_err *err)
{
	struct tokenizer k;
	struct cl_buf text;
	cl_buf_init(&text, 0);
	memset(out, 0, sizeof(*out));
	int rc = tok_init(&k, target, model, err);
	size_t n = plan->n_bodies, want = n < max_checked ? n : max_checked;
	/* Spread over the workload: its lengths may be drawn from a distribution. */
	for (size_t c = 0; c < want && !rc; c++) {
		const struct cl_request_body *b = &plan->bodies[c * n / want];
		long count = 0;
		if ((rc = body_text(b, &text)) != 0) {
			rc = cl_err_set(err, rc, "out of memory reading a request body");
			break;
		}
		if (text.len <= 1)
			continue; /* no text to count */
		if ((rc = tok_count(&k, text.data, &count, err)) != 0)
			break;
		out->prompts++;
		out->chars += b->prompt_chars;
		out->tokens += (uint64_t)count;
	}
	if (!rc && !out->tokens)
		rc = cl_err_set(err, CL_EINVAL, "no prompt with text to count");
	tok_free(&k);
	cl_buf_free(&text);
	return rc;
}
