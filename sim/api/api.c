/* Request routing and policy of chatload-sim (see api.h). */
#include "api.h"

#include "audio.h"
#include "chat.h"
#include "content.h"
#include "chatload/assert.h"
#include "chatload/clock.h"
#include "sim/faults/dialect.h"
#include "sim/faults/faults.h"
#include "render.h"
#include "tokenize.h"
#include "sim/rng.h"
#include "sim/serve/conn.h"
#include "sim/sched/stream.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DEFAULT_OUTPUT_TOKENS 128
/* A transcription's text: tokens per second of audio (speech runs near 150 words a
 * minute, about 3 tokens a second). */
#define CL_SIM_AUDIO_TOKENS_PER_S 3

/* llama.cpp's answer while the model loads (tests/data/streams/README.md). */
static bool answer_loading(struct cl_sim_conn *c)
{
	return cl_sim_conn_error(c, 503, NULL, "Loading model", "unavailable_error", NULL);
}

static bool answer_json(struct cl_sim_conn *c, int status, const struct cl_buf *b)
{
	return cl_sim_conn_respond(c, status, NULL, b->data ? b->data : "", b->len);
}

/* A refusal before any stream, in the shape of the endpoint's API: on /v1/messages
 * Anthropic's {"type":"error","error":{"type","message"}}, its type by the status (what
 * Anthropic's clients read); elsewhere the OpenAI-style body of cl_sim_conn_error. */
static bool refuse(struct cl_sim_conn *c, enum cl_api api, int status, const char *hdr,
		   const char *message, const char *type, const char *code)
{
	if (api != CL_API_MESSAGES)
		return cl_sim_conn_error(c, status, hdr, message, type, code);
	char tmp[4096]; /* a 512-byte message, each byte escaped to six at worst */
	struct cl_sim_w w;
	cl_sim_w_init(&w, tmp, sizeof(tmp));
	CL_SIM_W_LIT(&w, "{\"type\":\"error\",\"error\":{\"type\":\"");
	cl_sim_w_str(&w, cl_sim_dialect_anthropic_type((uint32_t)status));
	CL_SIM_W_LIT(&w, "\",\"message\":");
	cl_sim_w_json(&w, message, strlen(message));
	CL_SIM_W_LIT(&w, "}}");
	if (w.overflow)
		return cl_sim_conn_error(c, status, hdr, message, type, code);
	return cl_sim_conn_respond(c, status, hdr, tmp, cl_sim_w_len(&w, tmp));
}

static bool method_not_allowed(struct cl_sim_conn *c, const char *allow)
{
	char hdr[64];
	snprintf(hdr, sizeof(hdr), "Allow: %s\r\n", allow);
	return cl_sim_conn_error(c, 405, hdr, "method not allowed", "invalid_request_error",
				 "method_not_allowed");
}

/* Compares in time independent of where the strings differ. */
static bool equal_ct(const char *a, size_t an, const char *b, size_t bn)
{
	unsigned char d = an != bn;
	size_t n = an < bn ? an : bn;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

static bool authorized(const struct cl_sim_config *cfg, const struct cl_sim_http_req *req)
{
	if (!cfg->api_key)
		return true;
	/* x-api-key, as Anthropic's API and the gateways that speak it take the key. */
	if (req->has_xkey && !req->xkey_too_long &&
	    equal_ct(req->xkey, strlen(req->xkey), cfg->api_key, strlen(cfg->api_key)))
		return true;
	if (!req->has_auth || req->auth_too_long || strncmp(req->auth, "Bearer ", 7) != 0)
		return false;
	return equal_ct(req->auth + 7, strlen(req->auth + 7), cfg->api_key, strlen(cfg->api_key));
}

static const char *find_model(const struct cl_sim_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_models; i++)
		if (strcmp(cfg->models[i], name) == 0)
			return cfg->models[i];
	return NULL;
}

static uint32_t pick_length(const struct cl_sim_config *cfg, struct cl_sim_stream *st,
			    uint32_t req_max, bool ignore_eos)
{
	double x;
	uint32_t n;
	/* --output-tokens is where the model would stop (its end of sequence); ignore_eos
	 * asks a server to go on to max_tokens regardless, as vLLM, SGLang and llama.cpp do.
	 * The draw is still made, so the request's random sequence is the same either way. */
	switch (cfg->len_kind) {
	case CL_SIM_LEN_FIXED:
		n = cfg->len_a;
		break;
	case CL_SIM_LEN_UNIFORM:
		n = cfg->len_a +
		    (uint32_t)(cl_splitmix64(&st->rng) % ((uint64_t)cfg->len_b - cfg->len_a + 1));
		break;
	case CL_SIM_LEN_NORMAL:
		x = llround(cfg->len_mean + cfg->len_sd * cl_splitmix_normal(&st->rng));
		n = x < 1 ? 1 : x > CL_SIM_MAX_OUTPUT ? CL_SIM_MAX_OUTPUT : (uint32_t)x;
		break;
	case CL_SIM_LEN_REQUEST:
	default:
		n = req_max ? req_max : DEFAULT_OUTPUT_TOKENS;
		break;
	}
	if (req_max && (n >= req_max || ignore_eos)) {
		n = req_max;
		st->finish_length = true;
	}
	return n;
}

/* Prompt tokens of a text by the tokenizer played: --word-tokens, else --chars-per-token. */
static uint32_t prompt_tokens(const struct cl_sim_config *cfg, uint64_t chars, uint64_t words)
{
	if (cfg->word_tokens)
		return words > UINT32_MAX ? UINT32_MAX : (uint32_t)words;
	return cl_sim_chat_prompt_tokens(chars, cfg->chars_per_token);
}

/*
 * Whether the answer is a tool call (docs/simulator.md, "Tool calls"), and of which tool:
 * with tools offered and tool_choice auto, with probability rate^(N+1) where N counts the
 * tool results since the last user message, so an agentic loop ends (rate 1: a call every
 * time, until the client stops); "required" or a named tool always, "none" never.  The
 * draw is its own hash of the seed and the request number: the request's other random
 * numbers (jitter, length, fault) are the same with or without tools.
 */
static void pick_tool_call(const struct cl_sim_config *cfg, struct cl_sim_stream *st,
			   const struct cl_sim_chat_req *cr)
{
	_Static_assert(sizeof(st->tool_name) == CL_SIM_TOOL_NAME, "a tool's name fits");
	st->tool_results = cr->tool_results;
	if (!cr->n_tools || cr->tool_choice == CL_SIM_TOOL_NONE ||
	    st->planned_tokens <= st->planned_reasoning)
		return;
	uint64_t h = cl_sim_rng_for(cfg->seed ^ 0x746f6f6c63616c6cULL, st->seq);
	double p = pow(cfg->tool_call_rate, (double)cr->tool_results + 1.0);
	bool call = cr->tool_choice == CL_SIM_TOOL_REQUIRED || cl_splitmix_frac(&h) <= p;
	if (!call)
		return;
	uint32_t k =
	    cr->tool_choice_named ? cr->tool_named : (uint32_t)(cl_splitmix64(&h) % cr->n_tools);
	st->tool_call = true;
	snprintf(st->tool_name, sizeof(st->tool_name), "%s", cr->tool_names[k]);
}

/* The request's number, its id in its API's shape and the model that answers it. */
static void name_stream(struct cl_sim *s, struct cl_sim_stream *st,
			const struct cl_sim_chat_req *cr, const char *model)
{
	const struct cl_sim_config *cfg = s->cfg;
	static const char *const id_prefix[CL_API__COUNT] = {
		[CL_API_CHAT] = "chatcmpl-sim-",  [CL_API_COMPLETIONS] = "cmpl-sim-",
		[CL_API_RESPONSES] = "resp-sim-", [CL_API_EMBEDDINGS] = "embd-sim-",
		[CL_API_MESSAGES] = "msg_sim_",   [CL_API_RERANK] = "rerank-sim-",
		[CL_API_SCORE] = "score-sim-",    [CL_API_TRANSCRIPTION] = "trsc-sim-",
	};
	CL_ASSERT(id_prefix[cr->api]);
	st->seq = ++s->next_seq;
	st->api = cr->api;
	st->inputs = cr->inputs;
	st->audio_ms = cr->audio_ms;
	/* With --processes each process numbers its own requests: its index keeps ids apart. */
	if (cfg->processes > 1)
		snprintf(st->id, sizeof(st->id), "%sp%u-%llu", id_prefix[cr->api],
			 cfg->process_index, (unsigned long long)st->seq);
	else
		snprintf(st->id, sizeof(st->id), "%s%llu", id_prefix[cr->api],
			 (unsigned long long)st->seq);
	st->model = model;
	st->created_s = cl_wall_us() / 1000000;
}

/* Whether the answer streams, and the usage (and llama.cpp's timings) it carries. */
static void plan_usage(const struct cl_sim_config *cfg, struct cl_sim_stream *st,
		       const struct cl_sim_chat_req *cr)
{
	st->stream = cr->stream;
	/* A Responses stream always ends with its usage (response.completed); per-chunk usage
	 * is vLLM's chat and completions option only. */
	bool own_usage = cr->api == CL_API_RESPONSES || cr->api == CL_API_MESSAGES;
	st->include_usage = cr->stream && (cr->include_usage || own_usage);
	st->continuous_usage = cr->stream && cr->continuous_usage && !own_usage;
	/* llama.cpp's timings object rides on chat and completion chunks only. */
	st->cache_timings =
	    cfg->cache_timings && (cr->api == CL_API_CHAT || cr->api == CL_API_COMPLETIONS);
}

/* What the stream takes from the prompt: its tokens (and of them those the prefix cache
 * holds), what the request asked of the output, and the names the truth log gives it. */
static void plan_prompt(struct cl_sim *s, struct cl_sim_stream *st,
			const struct cl_sim_chat_req *cr)
{
	const struct cl_sim_config *cfg = s->cfg;
	/* The chat template wraps messages (chat, and responses' input items); a raw prompt
	 * or an embeddings input is tokenized as it is. */
	bool templated =
	    cr->api == CL_API_CHAT || cr->api == CL_API_RESPONSES || cr->api == CL_API_MESSAGES;
	/* Each image part is --image-tokens prompt tokens: usage, the truth log, prefill. */
	uint64_t image_tokens = (uint64_t)cr->images * cfg->image_tokens;
	uint64_t pt = (uint64_t)prompt_tokens(cfg, cr->prompt_chars, cr->prompt_words) +
		      (templated ? cfg->template_tokens : 0) + image_tokens;
	st->prompt_tokens = pt > UINT32_MAX ? UINT32_MAX : (uint32_t)pt;
	st->images = cr->images;
	st->cached_tokens = cl_sim_metrics_prefix(s, &cr->prefix, st->prompt_tokens);
	st->requested_tokens = cr->max_tokens;
	st->ignore_eos = cr->ignore_eos;
	st->has_priority = cr->has_priority;
	st->priority = cr->priority;
	st->history_turns = cr->history_turns;
	st->history_fnv = cr->history_fnv;
	st->prompt_fnv = cr->prompt_fnv;
}

/* The output's length and its reasoning part, by the API: a generation's length drawn (or
 * asked), nothing for the APIs that generate nothing, a transcription's by its audio; then
 * cut where a stop string first appears. */
static void plan_output(const struct cl_sim_config *cfg, struct cl_sim_stream *st,
			const struct cl_sim_chat_req *cr)
{
	st->planned_tokens =
	    pick_length(cfg, st, cr->max_tokens, cr->ignore_eos && !cfg->no_ignore_eos);
	/* The legacy completions API has no reasoning field: all of it is text there; a messages
	 * request may turn thinking off. */
	uint32_t reasoning =
	    cr->api == CL_API_COMPLETIONS || cr->no_thinking ? 0 : cfg->reasoning_tokens;
	st->planned_reasoning = reasoning < st->planned_tokens ? reasoning : st->planned_tokens;
	if (!cl_api_streams(cr->api) && cr->api != CL_API_TRANSCRIPTION) {
		/* Nothing is generated (embeddings, rerank, score): the answer's time is its
		 * input's (stream.c). */
		st->planned_tokens = st->planned_reasoning = 0;
		st->finish_length = false;
	}
	if (cr->api == CL_API_TRANSCRIPTION) {
		/* The text of the audio: CL_SIM_AUDIO_TOKENS_PER_S tokens a second of speech (at
		 * least one), no reasoning, ended by its end ("stop"). */
		uint64_t t = ((uint64_t)cr->audio_ms * CL_SIM_AUDIO_TOKENS_PER_S + 999) / 1000;
		st->planned_tokens =
		    t ? (t > CL_SIM_MAX_OUTPUT ? CL_SIM_MAX_OUTPUT : (uint32_t)t) : 1;
		st->planned_reasoning = 0;
		st->finish_length = false;
	}
	if (cr->n_stop) {
		/* A stop string ends the answer where it first appears, with finish_reason
		 * "stop", whatever ignore_eos asked. */
		uint32_t content = st->planned_tokens - st->planned_reasoning;
		uint32_t at = cl_sim_render_stop_at(st->seq, content, cr->stop, cr->n_stop);
		if (at < content) {
			st->planned_tokens = st->planned_reasoning + at;
			st->finish_length = false;
		}
	}
}

/* The 429 fault's Retry-After header line into hdr (size n): seconds, or with
 * --retry-after-date an HTTP date. */
static void put_retry_after(const struct cl_sim_config *cfg, char *hdr, size_t n)
{
	if (cfg->retry_after_date) {
		/* An HTTP date has whole seconds: the next second boundary plus the value, so a
		 * client waits at least retry_after_s from now. */
		time_t at = time(NULL) + 1 + (time_t)cfg->retry_after_s;
		struct tm tm;
		char date[64];
		gmtime_r(&at, &tm);
		strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		snprintf(hdr, n, "Retry-After: %s\r\n", date);
	} else {
		snprintf(hdr, n, "Retry-After: %u\r\n", cfg->retry_after_s);
	}
}

/* The planned request answered: a fault that answers before any stream (500, 429, the
 * hang, json-200's error body), or its stream begun. */
static void answer_planned(struct cl_sim *s, struct cl_sim_conn *c, int64_t now)
{
	const struct cl_sim_config *cfg = s->cfg;
	struct cl_sim_stream *st = &c->st;
	char hdr[256] = "";
	size_t hl = 0;
	if (st->has_request_id)
		hl = (size_t)snprintf(hdr, sizeof(hdr), "X-Request-Id: %s\r\n", st->request_id);
	if (st->fault == CL_SIM_FAULT_500) {
		cl_sim_stream_log_rejected(s, st, 500);
		refuse(c, st->api, 500, hdr,
		       "simulated internal server error (chatload-sim fault 500)", "server_error",
		       "internal_error");
		return;
	}
	if (st->fault == CL_SIM_FAULT_429) {
		put_retry_after(cfg, hdr + hl, sizeof(hdr) - hl);
		cl_sim_stream_log_rejected(s, st, 429);
		refuse(c, st->api, 429, hdr, "Rate limit reached (chatload-sim fault 429)",
		       "rate_limit_error", "rate_limit_exceeded");
		return;
	}
	if (st->fault == CL_SIM_FAULT_HANG) {
		cl_sim_stream_hang(s, st);
		return;
	}
	if (st->fault == CL_SIM_FAULT_ERROR_CHUNK && st->stream &&
	    cfg->error_dialect == CL_SIM_DIALECT_JSON_200) {
		cl_sim_stream_fail_at_once(s, st, now);
		return;
	}
	cl_sim_stream_begin(s, st, now);
}

/* A request that passed every check: its plan (the fault drawn first, then the prompt and
 * the output, in the order the request's draws are made), then its answer. */
static void accept_chat(struct cl_sim *s, struct cl_sim_conn *c, const struct cl_sim_chat_req *cr,
			const char *model, int64_t now)
{
	const struct cl_sim_config *cfg = s->cfg;
	struct cl_sim_stream *st = &c->st;

	name_stream(s, st, cr, model);
	plan_usage(cfg, st, cr);
	st->rng = cl_sim_rng_for(cfg->seed, st->seq);
	st->fault = cl_sim_fault_pick(cfg, st->seq, &st->rng);
	plan_prompt(s, st, cr);
	plan_output(cfg, st, cr);
	pick_tool_call(cfg, st, cr);
	st->fault_tok = cl_sim_fault_token(cfg, st->planned_tokens);
	st->stall_tok = cl_sim_fault_stall_token(cfg, st->planned_tokens);
	/* Reasoning comes first within the output; the renderers count content from its end. */
	CL_ASSERT(st->planned_reasoning <= st->planned_tokens);
	answer_planned(s, c, now);
}

static void handle_chat(struct cl_sim *s, struct cl_sim_conn *c, enum cl_api api,
			const char *content_type, const char *body, size_t len, int64_t now)
{
	struct cl_sim_stream *st = &c->st;
	struct cl_sim_chat_req cr;
	char msg[512];
	const char *code;
	const char *model = s->cfg->models[0];

	st->api = api;
	int bad = api == CL_API_TRANSCRIPTION
		      ? cl_sim_audio_parse(content_type, body, len, &cr, msg, sizeof(msg), &code)
		      : cl_sim_api_parse(api, body, len, &cr, msg, sizeof(msg), &code);
	if (bad != 0) {
		cl_sim_stream_log_rejected(s, st, 400);
		refuse(c, api, 400, NULL, msg, "invalid_request_error", code);
		return;
	}
	st->stream = cr.stream;
	if (cr.n_tools && s->cfg->no_tools) {
		/* A server without tool support (llama.cpp without --jinja refuses them). */
		cl_sim_stream_log_rejected(s, st, 400);
		refuse(c, api, 400, NULL,
		       "tools are not supported by this server (chatload-sim --no-tools)",
		       "invalid_request_error", "unsupported_parameter");
		return;
	}
	if (!cr.stream && (api == CL_API_COMPLETIONS || api == CL_API_RESPONSES)) {
		/* Not built: chatload streams these, and the simulator answers what it sends. */
		snprintf(msg, sizeof(msg),
			 "chatload-sim answers %s only streamed: set 'stream': true",
			 cl_api_path(api));
		cl_sim_stream_log_rejected(s, st, 400);
		refuse(c, api, 400, NULL, msg, "invalid_request_error", "invalid_value");
		return;
	}
	if (cr.has_model) {
		model = cr.model_too_long ? NULL : find_model(s->cfg, cr.model);
		if (!model) {
			snprintf(msg, sizeof(msg), "The model `%s%s` does not exist.", cr.model,
				 cr.model_too_long ? "..." : "");
			cl_sim_stream_log_rejected(s, st, 404);
			refuse(c, api, 404, NULL, msg, "invalid_request_error", "model_not_found");
			return;
		}
	}
	accept_chat(s, c, &cr, model, now);
}

/* POST /tokenize: the prompt's token count by --chars-per-token (or --word-tokens), in vLLM's shape
 * ({"count", "max_model_len", "tokens"}); "tokens" (ids 0..count-1, llama.cpp's field too) is
 * left out past 65536 tokens. */
static void answer_tokenize(struct cl_sim_conn *c, const struct cl_sim_config *cfg,
			    const struct cl_sim_http_req *req, const char *body, size_t body_len,
			    struct cl_buf *b)
{
	char msg[256];
	uint64_t chars, words;
	if (strcmp(req->method, "POST") != 0) {
		method_not_allowed(c, "POST");
		return;
	}
	if (cl_sim_tokenize_parse(body, body_len, &chars, &words, msg, sizeof(msg)) != 0) {
		cl_sim_conn_error(c, 400, NULL, msg, "invalid_request_error", "invalid_request");
		return;
	}
	uint32_t n = prompt_tokens(cfg, chars, words); /* the text's: no chat template */
	int rc = cl_buf_printf(b, "{\"count\":%u,\"max_model_len\":%u", n, CL_SIM_MAX_OUTPUT);
	if (!rc && n <= 65536) {
		rc = cl_buf_puts(b, ",\"tokens\":[");
		for (uint32_t i = 0; i < n && !rc; i++)
			rc = cl_buf_printf(b, i ? ",%u" : "%u", i);
		rc = rc ? rc : cl_buf_puts(b, "]");
	}
	rc = rc ? rc : cl_buf_puts(b, "}");
	if (rc != 0) {
		/* Never half an answer: a client would take a cut list for the tokens. */
		cl_sim_conn_error(c, 500, NULL, "cannot render the tokens", "server_error",
				  "internal_error");
		return;
	}
	answer_json(c, 200, b);
}

/* Which generation endpoint path is, one per API (what the truth log records); CL_API__COUNT
 * for any other path. */
static enum cl_api route_api(const char *path)
{
	enum cl_api api = CL_API__COUNT;
	for (int a = 0; a < CL_API__COUNT; a++)
		if (cl_api_path(a) && strncmp(path, "/v1", 3) == 0 &&
		    strcmp(path + 3, cl_api_path(a)) == 0)
			api = (enum cl_api)a;
	/* vLLM serves rerank and score without /v1 too (and rerank as /v2/rerank), as
	 * llama.cpp and TEI serve /rerank. */
	if (strcmp(path, "/rerank") == 0 || strcmp(path, "/v2/rerank") == 0)
		api = CL_API_RERANK;
	else if (strcmp(path, "/score") == 0)
		api = CL_API_SCORE;
	return api;
}

/* The connection's stream made new for req, arrived at now: what the request's headers say
 * of it (X-Request-Id, its class, its conversation) is all it carries yet. */
static void reset_stream(struct cl_sim_conn *c, const struct cl_sim_http_req *req, enum cl_api api,
			 int64_t now)
{
	struct cl_sim_stream *st = &c->st;
	memset(st, 0, sizeof(*st));
	st->conn = c;
	st->heap_idx = SIZE_MAX;
	st->arrival_us = now;
	st->api = api;
	if (req->has_request_id) {
		st->has_request_id = true;
		snprintf(st->request_id, sizeof(st->request_id), "%s", req->request_id);
	}
	if (req->has_class) {
		st->has_class = true;
		snprintf(st->cls, sizeof(st->cls), "%s", req->cls);
	}
	if (req->has_conversation) {
		st->has_conversation = true;
		snprintf(st->conversation, sizeof(st->conversation), "%s", req->conversation);
	}
}

/* The readiness phases every endpoint sees, since the server started: 503 while it shuts
 * down, "Loading model" during --loading-for (a generation request logged as refused).
 * Whether it answered. */
static bool answer_unready(struct cl_sim *s, struct cl_sim_conn *c, enum cl_api api, int64_t since)
{
	bool is_chat = api != CL_API__COUNT;
	if (s->draining) {
		if (is_chat)
			cl_sim_stream_log_rejected(s, &c->st, 503);
		refuse(c, api, 503, NULL, "server is shutting down", "unavailable_error",
		       "unavailable");
		return true;
	}
	if (since < s->cfg->loading_for_us) {
		if (is_chat)
			cl_sim_stream_log_rejected(s, &c->st, 503);
		answer_loading(c);
		return true;
	}
	return false;
}

/* Whether req's method is GET; if not, a 405 that says so is the answer. */
static bool get_or_405(struct cl_sim_conn *c, const struct cl_sim_http_req *req)
{
	if (strcmp(req->method, "GET") == 0)
		return true;
	method_not_allowed(c, "GET");
	return false;
}

/* GET /health: {"status":"ok"}. */
static void answer_health(struct cl_sim_conn *c, const struct cl_sim_http_req *req)
{
	struct cl_buf b = { .max = 1 << 20 };
	if (!get_or_405(c, req))
		return;
	if (cl_buf_puts(&b, "{\"status\":\"ok\"}") != 0)
		cl_sim_conn_error(c, 500, NULL, "out of memory", "server_error", "internal_error");
	else
		answer_json(c, 200, &b);
	cl_buf_free(&b);
}

/* GET /metrics: the Prometheus page (truth/metrics.c). */
static void answer_metrics(struct cl_sim *s, struct cl_sim_conn *c,
			   const struct cl_sim_http_req *req)
{
	struct cl_buf b = { .max = 1 << 20 };
	if (!get_or_405(c, req))
		return;
	if (cl_sim_metrics_render(s, &b) != 0) {
		cl_sim_conn_error(c, 500, NULL, "cannot render metrics", "server_error",
				  "internal_error");
	} else {
		/* The exposition format's own type, as Prometheus' client libraries send it: a
		 * scraper that goes by Content-Type must not take the page for JSON. */
		cl_sim_conn_respond_typed(c, 200, "text/plain; version=0.0.4; charset=utf-8", NULL,
					  b.data ? b.data : "", b.len);
	}
	cl_buf_free(&b);
}

/* GET /v1/models, every model served, and GET /v1/models/<id>, one (404 for a model not
 * served). */
static void answer_models(struct cl_sim *s, struct cl_sim_conn *c,
			  const struct cl_sim_http_req *req)
{
	bool one = strncmp(req->path, "/v1/models/", 11) == 0;
	const char *m = one ? find_model(s->cfg, req->path + 11) : NULL;
	struct cl_buf b = { .max = 1 << 20 };
	if (!get_or_405(c, req))
		return;
	if (one && !m) {
		cl_sim_conn_error(c, 404, NULL, "model not found", "invalid_request_error",
				  "model_not_found");
		return;
	}
	cl_sim_render_models(&b, s->cfg, m, s->start_wall_s);
	answer_json(c, 200, &b);
	cl_buf_free(&b);
}

void cl_sim_api_handle(struct cl_sim *s, struct cl_sim_conn *c, const struct cl_sim_http_req *req,
		       const char *body, size_t body_len)
{
	const struct cl_sim_config *cfg = s->cfg;
	int64_t now = cl_mono_us();
	int64_t since = now - s->start_us;
	enum cl_api api = route_api(req->path);
	bool is_chat = api != CL_API__COUNT;

	reset_stream(c, req, is_chat ? api : CL_API_CHAT, now);
	if (answer_unready(s, c, api, since))
		return;
	if (strcmp(req->path, "/health") == 0) {
		answer_health(c, req);
		return;
	}
	if (strcmp(req->path, "/metrics") == 0) {
		answer_metrics(s, c, req);
		return;
	}
	if ((strncmp(req->path, "/v1/", 4) == 0 || is_chat) && !authorized(cfg, req)) {
		if (is_chat)
			cl_sim_stream_log_rejected(s, &c->st, 401);
		refuse(c, api, 401, "WWW-Authenticate: Bearer\r\n", "Incorrect API key provided",
		       "invalid_request_error", "invalid_api_key");
		return;
	}
	if (strcmp(req->path, "/v1/models") == 0 || strncmp(req->path, "/v1/models/", 11) == 0) {
		answer_models(s, c, req);
		return;
	}
	if (strcmp(req->path, "/tokenize") == 0 && !cfg->no_tokenize) {
		struct cl_buf b = { .max = 1 << 20 };
		answer_tokenize(c, cfg, req, body, body_len, &b);
		cl_buf_free(&b);
		return;
	}
	if (!is_chat) {
		cl_sim_conn_error(c, 404, NULL, "not found", "invalid_request_error", "not_found");
		return;
	}
	if (strcmp(req->method, "POST") != 0) {
		cl_sim_stream_log_rejected(s, &c->st, 405);
		method_not_allowed(c, "POST");
		return;
	}
	if (since < cfg->chat_ready_after_us) {
		cl_sim_stream_log_rejected(s, &c->st, 503);
		answer_loading(c);
		return;
	}
	handle_chat(s, c, api, req->content_type, body, body_len, now);
}
