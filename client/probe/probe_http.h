/* One attempt of each readiness phase over blocking libcurl, classified as ok, not yet or
 * fatal with a short human reason.  Internal to chatload_client. */
#ifndef CHATLOAD_PROBE_HTTP_H
#define CHATLOAD_PROBE_HTTP_H

#include "client/http/handle.h"

#include "chatload/buf.h"
#include "chatload/err.h"
#include "chatload/plan.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define CL_PROBE_MODELS_MAX_BYTES  (4u << 20)   /* a /models answer larger than this is refused */
#define CL_PROBE_ERRBODY_MAX_BYTES 8192u        /* of an error body, kept for its message */
#define CL_PROBE_EVENT_MAX_BYTES   (256u << 10) /* one SSE event of the probe stream */

enum cl_probe_outcome {
	CL_PROBE_OK = 0,
	CL_PROBE_RETRY = 1,     /* not yet: try again after a backoff */
	CL_PROBE_FATAL = 2,     /* configuration error: waiting will not help */
	CL_PROBE_CANCELLED = 3, /* *cancel became nonzero */
};

struct cl_probe_attempt {
	enum cl_probe_outcome outcome;
	char error[400];  /* why it did not pass: `HTTP 503 "Loading model"` */
	long http_status; /* 0: no response */
	int64_t ttft_us;  /* generation: request sent -> first token chunk */
	int64_t total_us; /* generation: request sent -> end of the response */
	char model[128];  /* models: the model found */
};

/* A reusable connection to one target (keep-alive across attempts). */
struct cl_probe_http {
	const struct cl_target_plan *target;
	struct cl_http_target http; /* URL, headers, key, TLS: as the engine sends them */
	CURL *easy;
	struct curl_slist models_nodes[CL_HTTP_MAX_HEADERS]; /* header lists, linked once */
	struct curl_slist chat_nodes[CL_HTTP_MAX_HEADERS];
	struct curl_slist *models_headers, *chat_headers;
	bool has_key;
	const atomic_int *cancel;
	char errbuf[CURL_ERROR_SIZE];
};

/*
 * Prepares h for target (borrowed; must outlive h) through cl_http_target_init: the URL
 * checked against allow (NULL or empty: any target), the API key read from
 * target->api_key_env now (CL_EREFUSED with err naming the variable when it is not set or
 * empty), headers checked.  CL_EINVAL, CL_EREFUSED, CL_ENOMEM with err filled.
 * cli_probe_http_destroy is safe after any failure.
 */
CL_MUST_CHECK int cli_probe_http_init(struct cl_probe_http *h, const struct cl_target_plan *target,
				      const struct cl_allow_list *allow, const atomic_int *cancel,
				      struct cl_err *err);
void cli_probe_http_destroy(struct cl_probe_http *h);

/* TCP (and for https, TLS) connect to the URL's host and port, within timeout_us.  Blocks. */
void cli_probe_http_connect(struct cl_probe_http *h, int64_t timeout_us,
			    struct cl_probe_attempt *a);

/* GET {base}/models within timeout_us; want_model NULL takes the first listed (a->model). */
void cli_probe_http_models(struct cl_probe_http *h, const char *want_model, int64_t timeout_us,
			   struct cl_probe_attempt *a);

/* One streamed POST {base}/chat/completions of body_json within timeout_us.  Blocks. */
void cli_probe_http_generate(struct cl_probe_http *h, const char *body_json, int64_t timeout_us,
			     struct cl_probe_attempt *a);

/*
 * Writes `HTTP <status> "<message>"` into out, the message taken from an OpenAI-style error
 * body ({"error": {"message"}}, {"error": "..."}, {"message"}, {"detail"}) or else the body's
 * first line of text (HTML bodies are left out).  Exposed for tests.
 */
void cli_probe_http_error_text(long status, const char *body, size_t len, char *out, size_t n);

#endif
