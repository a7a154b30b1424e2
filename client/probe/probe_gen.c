/* The readiness gate's generation phase: one streamed request, its answer read as the engine
 * reads one (SSE events decoded in the target's API, or an embeddings, rerank, score or
 * transcription document whole) and judged: a token and the stream's end, or why not, fatal
 * when waiting cannot fix it.  The request's set-up and the classification of failed
 * transfers are probe_http.c's. */
#include "client/probe/probe_int.h"

#include "client/stream/chunk.h"
#include "client/stream/embedding.h"
#include "client/stream/rerank.h"
#include "client/stream/event.h"
#include "client/stream/sse.h"
#include "client/stream/transcription.h"

#include "chatload/audio.h"
#include "chatload/clock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DONE_GRACE_US                                                                              \
	100000 /* a framed body still open this long after [DONE] is                               \
		* ended by the probe, as by the engine */

/* State of one streamed generation. */
struct gen {
	struct cl_probe_http *h;
	struct cl_sse_parser sse;
	struct cl_buf errbody; /* a non-200 answer's body, for its message */
	struct cl_buf whole;   /* embeddings: the whole answer (one JSON document) */
	struct cl_buf form;    /* transcription: the form rendered from the body's description */
	long status;
	bool status_known;
	bool framed; /* the body can end by itself (chunked, Content-Length, HTTP/2) */
	size_t events;
	bool token, done, finish, malformed, stream_error;
	bool config_error;      /* the stream's error is one waiting cannot fix */
	bool not_a_stream;      /* the body was one JSON document, no error */
	bool ended_at_done;     /* the probe ended the transfer at [DONE] (see on_event) */
	int64_t first_token_us; /* monotonic */
	int64_t done_us;        /* monotonic, when [DONE] arrived */
	char problem[300];      /* malformed chunk / stream error text */
};

enum { STOP_BAD = 1, STOP_AT_DONE = 2 };

/* Whether the answer's body is framed, so that it can end without the connection closing:
 * HTTP/2 or later, a Content-Length, or chunked transfer encoding. */
static bool body_framed(CURL *e)
{
	long version = 0;
	curl_off_t length = -1;
	struct curl_header *te = NULL;
	curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
	curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
	if (version >= CURL_HTTP_VERSION_2_0 || length >= 0)
		return true;
	if (curl_easy_header(e, "Transfer-Encoding", 0, CURLH_HEADER, -1, &te) != CURLHE_OK)
		return false;
	for (const char *v = te->value; *v; v++)
		if (strncasecmp(v, "chunked", 7) == 0)
			return true;
	return false;
}

/* A failure the server reports with this code or kind is one of the request itself (too long
 * for its context, invalid, an unknown model): every retry gets the same answer.  429, 5xx
 * and "Loading model" (503) are the server's state, and pass. */
static bool config_failure(int code, const char *type, size_t type_len)
{
	static const char *const kinds[] = {
		"invalid_request_error",     "validation",       "not_found_error",
		"exceed_context_size_error", "BadRequestError",  "NotFoundError",
		"authentication_error",      "permission_error",
	};
	if (code)
		return cli_probe_fatal_status(code);
	for (size_t i = 0; type && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (type_len == strlen(kinds[i]) && memcmp(type, kinds[i], type_len) == 0)
			return true;
	return false;
}

/* The server said the generation failed (in any dialect, stream/event.h): its words, its
 * code, and whether waiting can fix it. */
static void stream_error(struct gen *g, const char *data, size_t len, const struct cl_chunk *ch)
{
	struct cl_stream_error e;
	char msg[PROBE_MESSAGE_MAX_BYTES + 8], code[24] = "";
	cl_stream_error_read(data, len, &e);
	if (!cli_probe_error_message(&e, msg, sizeof(msg)))
		cli_probe_copy_line(data, len, msg, sizeof(msg));
	if (ch->error_code)
		snprintf(code, sizeof(code), " (code %d)", ch->error_code);
	snprintf(g->problem, sizeof(g->problem), "error in stream%s: \"%s\"", code, msg);
	g->stream_error = true;
	g->config_error = config_failure(ch->error_code, ch->error_type, ch->error_type_len);
}

static int on_event(void *ctx, const char *data, size_t len, unsigned flags)
{
	struct gen *g = ctx;
	struct cl_chunk ch;
	g->events++;
	if (g->done)
		return 0; /* anything after [DONE] is not ours to judge */
	int rc = cl_event_decode(g->h->http.api, data, len, flags, &ch);
	if (rc != 0) {
		char snippet[64];
		cli_probe_copy_line(data, len < 48 ? len : 48, snippet, sizeof(snippet));
		if (rc == CL_EPROTO && ch.malformed)
			snprintf(g->problem, sizeof(g->problem),
				 "malformed chunk in stream (%s): '%s'", ch.malformed, snippet);
		else
			snprintf(g->problem, sizeof(g->problem), "malformed chunk in stream: '%s'",
				 snippet);
		g->malformed = true;
		g->not_a_stream = rc == CL_EPROTO && ch.malformed &&
				  strcmp(ch.malformed, CL_EVENT_NOT_A_STREAM) == 0;
		return STOP_BAD;
	}
	if (ch.done) {
		g->done = true;
		g->done_us = cl_mono_us();
		/* [DONE] ends the answer.  A body only the connection's close could end may
		 * never end (a server that holds it open): stop here.  A framed one ends in a
		 * moment, or on_gen_progress stops it after a grace. */
		if (!g->framed) {
			g->ended_at_done = true;
			return STOP_AT_DONE;
		}
		return 0;
	}
	if (ch.is_error) {
		stream_error(g, data, len, &ch);
		return STOP_BAD;
	}
	/* A tool call is a generation too: a probe that offers workload.tools may get one. */
	if ((ch.has_content || ch.has_reasoning || ch.has_tool_call) && !g->token) {
		g->token = true;
		g->first_token_us = cl_mono_us();
	}
	if (ch.finish_reason[0])
		g->finish = true;
	return 0;
}

/* Whether the probe's answer is one JSON document: embeddings, rerank, score, and a
 * transcription (the probe's description asks for it unstreamed). */
static bool whole_api(const struct cl_probe_http *h)
{
	return !cl_api_streams(h->http.api);
}

static size_t on_stream(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct gen *g = ctx;
	size_t n = size * nmemb;
	if (!g->status_known) {
		curl_easy_getinfo(g->h->easy, CURLINFO_RESPONSE_CODE, &g->status);
		g->framed = body_framed(g->h->easy);
		g->status_known = true;
	}
	if (g->status != 200) {
		/* Keep the start of an error body; the rest is read and dropped. */
		size_t room = g->errbody.max - g->errbody.len;
		/* Within the cap only memory can fail: the error is then told without its body,
		 * which is a sample for the message, not the verdict. */
		CL_IGNORE(cl_buf_append(&g->errbody, p, n < room ? n : room));
		return n;
	}
	if (whole_api(g->h)) {
		if (cl_buf_append(&g->whole, p, n) == 0)
			return n;
		snprintf(g->problem, sizeof(g->problem), "%s answer larger than %u MiB",
			 cl_api_name(g->h->http.api), (unsigned)(g->whole.max >> 20));
		g->malformed = true;
		return 0;
	}
	int rc = cl_sse_feed(&g->sse, p, n, on_event, g);
	if (rc == STOP_AT_DONE)
		return 0; /* ends the transfer: the answer is complete */
	if (rc == CL_ETOOBIG) {
		snprintf(g->problem, sizeof(g->problem), "stream event larger than %u KiB",
			 CL_PROBE_EVENT_MAX_BYTES >> 10);
		g->malformed = true;
	}
	return rc ? 0 : n;
}

/* Progress callback of a generation: cancellation, and the end of a framed body that is
 * still open DONE_GRACE_US after [DONE] (called at least about once a second). */
static int on_gen_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			   curl_off_t ulnow)
{
	struct gen *g = ctx;
	if (g->h->cancel && atomic_load(g->h->cancel))
		return 1;
	if (g->done && cl_mono_us() - g->done_us >= DONE_GRACE_US) {
		g->ended_at_done = true;
		return 1;
	}
	return 0;
}

/* Transcription: judges the whole answer of a 200 (one JSON document with its text).  False
 * with the error set when it is not one. */
static bool transcription_answer(struct gen *g, struct cl_probe_attempt *a)
{
	struct cl_transcription t;
	char snippet[64];
	const char *data = g->whole.data ? g->whole.data : "";
	int rc = cl_transcription_decode(data, g->whole.len, true, &t);
	cli_probe_copy_line(data, g->whole.len < 48 ? g->whole.len : 48, snippet, sizeof(snippet));
	struct cl_stream_error se;
	cl_stream_error_read(data, g->whole.len, &se);
	if ((rc == 0 && t.is_error) || (rc == CL_EPROTO && se.is_error)) {
		char msg[PROBE_MESSAGE_MAX_BYTES + 8], code[24] = "";
		if (!cli_probe_error_message(&se, msg, sizeof(msg)))
			snprintf(msg, sizeof(msg), "%s", snippet);
		if (se.code)
			snprintf(code, sizeof(code), " (code %d)", se.code);
		cli_probe_set_error(a,
				    config_failure(se.code, se.type, se.type_len) ? CL_PROBE_FATAL
										  : CL_PROBE_RETRY,
				    "error in the transcription answer%s: \"%s\"", code, msg);
		return false;
	}
	if (rc != 0) {
		cli_probe_set_error(a, CL_PROBE_RETRY, "malformed transcription answer (%s): '%s'",
				    rc == CL_EPROTO && t.malformed ? t.malformed : "not JSON",
				    snippet);
		return false;
	}
	g->token = true;
	g->first_token_us = cl_mono_us();
	return true;
}

/* Embeddings, rerank, score: judges the whole answer of a 200 (one JSON document, at least
 * one vector or score).  False with the error set when it is not one. */
static bool whole_answer(struct gen *g, struct cl_probe_attempt *a)
{
	if (g->h->http.api == CL_API_TRANSCRIPTION)
		return transcription_answer(g, a);
	struct cl_embedding e;
	struct cl_rerank r;
	char snippet[64];
	const char *data = g->whole.data ? g->whole.data : "";
	/* Embeddings answer vectors; rerank and score, one score per document. */
	bool scores = cl_api_scores(g->h->http.api);
	const char *what = scores ? cl_api_name(g->h->http.api) : "embeddings";
	int rc = scores ? cl_rerank_decode(data, g->whole.len, &r)
			: cl_embedding_decode(data, g->whole.len, &e);
	bool is_error = scores ? r.is_error : e.is_error;
	const char *malformed = scores ? r.malformed : e.malformed;
	uint32_t n = scores ? r.n_results : e.n_data;
	cli_probe_copy_line(data, g->whole.len < 48 ? g->whole.len : 48, snippet, sizeof(snippet));
	/* A failure in any dialect (the decoders know "error" only): the server's words and
	 * code, fatal when waiting cannot fix it, as for a stream. */
	struct cl_stream_error se;
	cl_stream_error_read(data, g->whole.len, &se);
	if ((rc == 0 && is_error) || (rc == CL_EPROTO && se.is_error)) {
		char msg[PROBE_MESSAGE_MAX_BYTES + 8], code[24] = "";
		if (!cli_probe_error_message(&se, msg, sizeof(msg)))
			snprintf(msg, sizeof(msg), "%s", snippet);
		if (se.code)
			snprintf(code, sizeof(code), " (code %d)", se.code);
		cli_probe_set_error(a,
				    config_failure(se.code, se.type, se.type_len) ? CL_PROBE_FATAL
										  : CL_PROBE_RETRY,
				    "error in the %s answer%s: \"%s\"", what, code, msg);
		return false;
	}
	if (rc != 0) {
		if (rc == CL_EPROTO && malformed)
			cli_probe_set_error(a, CL_PROBE_RETRY, "malformed %s answer (%s): '%s'",
					    what, malformed, snippet);
		else
			cli_probe_set_error(a, CL_PROBE_RETRY, "malformed %s answer: '%s'", what,
					    snippet);
		return false;
	}
	if (n == 0) {
		cli_probe_set_error(a, CL_PROBE_RETRY, "%s answer without %s", what,
				    scores ? "scores" : "vectors");
		return false;
	}
	/* No tokens to wait for: the first "token" is the whole answer. */
	g->token = true;
	g->first_token_us = cl_mono_us();
	return true;
}

static int generate_opts(struct cl_probe_http *h, struct gen *g, const char *body_json,
			 int64_t timeout_us, struct cl_probe_attempt *a)
{
	if (cli_probe_setup(h, h->easy, CL_HTTP_CHAT, timeout_us, h->chat_headers, a) != 0)
		return -1;
	const char *post = body_json;
	size_t post_len = strlen(body_json);
	if (h->http.api == CL_API_TRANSCRIPTION) {
		/* The body is a description: the form it asks for is what goes out. */
		uint32_t ms;
		bool stream;
		struct cl_err err = { 0 };
		if (cl_audio_form_render(body_json, post_len, &g->form, &ms, &stream, &err) != 0) {
			cli_probe_set_error(a, CL_PROBE_FATAL, "%s", err.msg);
			return -1;
		}
		post = g->form.data;
		post_len = g->form.len;
	}
	PROBE_SETOPT(a, h->easy, CURLOPT_POSTFIELDS, post);
	PROBE_SETOPT(a, h->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)post_len);
	PROBE_SETOPT(a, h->easy, CURLOPT_WRITEFUNCTION, on_stream);
	PROBE_SETOPT(a, h->easy, CURLOPT_WRITEDATA, g);
	/* after cli_probe_setup: replaces its cancel-only progress callback */
	PROBE_SETOPT(a, h->easy, CURLOPT_XFERINFOFUNCTION, on_gen_progress);
	PROBE_SETOPT(a, h->easy, CURLOPT_XFERINFODATA, g);
	return 0;
}

void cli_probe_http_generate(struct cl_probe_http *h, const char *body_json, int64_t timeout_us,
			     struct cl_probe_attempt *a)
{
	cli_probe_attempt_clear(a);
	struct gen g = { .h = h };
	cl_buf_init(&g.errbody, CL_PROBE_ERRBODY_MAX_BYTES);
	cl_buf_init(&g.whole, 64u << 20);
	cl_buf_init(&g.form, CL_AUDIO_FORM_MAX);
	if (cl_sse_init(&g.sse, CL_PROBE_EVENT_MAX_BYTES) != 0) {
		cli_probe_set_error(a, CL_PROBE_RETRY, "out of memory");
		goto out;
	}
	if (generate_opts(h, &g, body_json, timeout_us, a) != 0)
		goto out;
	int64_t t0 = cl_mono_us();
	CURLcode rc = curl_easy_perform(h->easy);
	int64_t t_end = cl_mono_us();
	long status = 0;
	curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
	a->http_status = status;
	/* Ended by us at [DONE]: the transfer's end is the answer's. */
	if (g.ended_at_done && (rc == CURLE_WRITE_ERROR || rc == CURLE_ABORTED_BY_CALLBACK)) {
		rc = CURLE_OK;
		t_end = g.done_us;
	}
	/* The end of the body: one that was a JSON document is judged now. */
	if (rc == CURLE_OK && status == 200 && !whole_api(h) && !g.done && !g.malformed &&
	    !g.stream_error)
		(void)cl_sse_finish(&g.sse, on_event, &g);
	if (g.stream_error) {
		cli_probe_set_error(a, g.config_error ? CL_PROBE_FATAL : CL_PROBE_RETRY, "%s",
				    g.problem);
		goto out;
	}
	if (g.not_a_stream) {
		/* A server that answers a streamed request with one JSON body will not start
		 * streaming by being asked again. */
		char *ctype = NULL;
		curl_easy_getinfo(h->easy, CURLINFO_CONTENT_TYPE, &ctype);
		cli_probe_set_error(
		    a, CL_PROBE_FATAL,
		    "response is not an event stream (Content-Type: %s): the server sent one "
		    "JSON document",
		    ctype ? ctype : "none");
		goto out;
	}
	if (rc != CURLE_OK && g.malformed) {
		cli_probe_set_error(a, CL_PROBE_RETRY, "%s", g.problem);
		goto out;
	}
	if (cli_probe_h2_refused(h, h->easy, rc, timeout_us, false, a))
		goto out;
	if (rc != CURLE_OK && !(status && status != 200)) {
		cli_probe_transfer_failure(h, h->easy, rc, timeout_us, "", a);
		goto out;
	}
	if (status != 200) {
		char hint[96];
		snprintf(hint, sizeof(hint), " (unknown model, or the URL does not serve %s)",
			 cl_api_path(h->http.api));
		cli_probe_http_failure(h, status, &g.errbody, hint, a);
		goto out;
	}
	if (whole_api(h)) {
		if (!whole_answer(&g, a))
			goto out;
	} else if (!g.token) {
		char *ctype = NULL;
		curl_easy_getinfo(h->easy, CURLINFO_CONTENT_TYPE, &ctype);
		/* A server that answers a streamed request with one JSON body will not start
		 * streaming by being asked again. */
		if (g.events == 0 && ctype && !strstr(ctype, "text/event-stream"))
			cli_probe_set_error(a, CL_PROBE_FATAL,
					    "response is not an event stream (Content-Type: %s)",
					    ctype);
		else
			cli_probe_set_error(a, CL_PROBE_RETRY, "stream ended without tokens");
		goto out;
	}
	if (!whole_api(h) && !g.done && !(g.finish && !cl_sse_pending(&g.sse))) {
		cli_probe_set_error(a, CL_PROBE_RETRY, "stream ended without [DONE]");
		goto out;
	}
	/* "Sent" is when curl had connected and was about to send: the probe's TTFT is then the
	 * server's, like the engine's, not the connection set-up's. */
	curl_off_t pre_us = 0;
	curl_easy_getinfo(h->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us);
	int64_t sent = t0 + (int64_t)pre_us;
	a->ttft_us = g.first_token_us > sent ? g.first_token_us - sent : 0;
	a->total_us = t_end > sent ? t_end - sent : 0;
	a->outcome = CL_PROBE_OK;
out:
	cl_sse_destroy(&g.sse);
	cl_buf_free(&g.form);
	cl_buf_free(&g.errbody);
	cl_buf_free(&g.whole);
}
