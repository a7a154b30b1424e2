/* Response rendering for chatload-sim (see render.h). */
#include "render.h"

#include "chatload/assert.h"
#include "chatload/err.h"

#include <string.h>

/* Deterministic words, so a stream reads as text and the same request always says the
 * same thing.  Every word is JSON-safe (no quotes, backslashes or control characters). */
static const char *const content_words[] = {
	" The",     " simulator", " streams", " tokens", " at",        " exact", " times,",
	" so",      " load",      " tests",   " can",    " compare",   " what",  " they",
	" measure", " with",      " what",    " really", " happened.", " Each",  " chunk",
	" leaves",  " when",      " its",     " last",   " token",     " is",    " due,",
	" and",     " the",       " truth",   " log",    " records",   " both",  " times.",
};
static const char *const reasoning_words[] = {
	" Let",   " me", " think", " about", " what",   " the",    " user", " asks,",
	" weigh", " a",  " few",   " ways",  " to",     " say",    " it,",  " and",
	" plan",  " a",  " short", " clear", " answer", " first.",
};
#define N_CONTENT   (sizeof(content_words) / sizeof(content_words[0]))
#define N_REASONING (sizeof(reasoning_words) / sizeof(reasoning_words[0]))

void cl_sim_render_tokens(struct cl_sim_w *w, uint64_t seq, uint32_t first, uint32_t n,
			  bool reasoning)
{
	for (uint32_t i = first; i < first + n; i++) {
		/* request 1 starts at the first word; later ones further along */
		const char *word = reasoning ? reasoning_words[(seq - 1 + i) % N_REASONING]
					     : content_words[(seq - 1 + i) % N_CONTENT];
		cl_sim_w_str(w, word);
	}
}

uint64_t cl_sim_render_content_fnv(uint64_t seq, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (uint32_t i = 0; i < n; i++)
		for (const char *p = content_words[(seq - 1 + i) % N_CONTENT]; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return h;
}

uint32_t cl_sim_render_stop_at(uint64_t seq, uint32_t n, const char (*stop)[64], uint32_t n_stop)
{
	/* The text so far, kept to its last bytes: a stop string (under 64 bytes) that
	 * completes in the newest word lies within them.  The answer ends before the word in
	 * which the match begins, found among the last words' start offsets (a stop string
	 * spans at most 64 bytes, so at most 32 words of two bytes or more). */
	char win[160];
	size_t len = 0;
	uint64_t base = 0; /* offset in the whole text of win[0] */
	uint64_t starts[32];
	for (uint32_t i = 0; i < n; i++) {
		const char *word = content_words[(seq - 1 + i) % N_CONTENT];
		size_t wl = strlen(word);
		if (len + wl >= sizeof(win)) {
			size_t keep = 64;
			memmove(win, win + len - keep, keep);
			base += len - keep;
			len = keep;
		}
		starts[i % 32] = base + len;
		memcpy(win + len, word, wl + 1);
		len += wl;
		for (uint32_t k = 0; k < n_stop; k++) {
			const char *hit = strstr(win, stop[k]);
			if (!hit)
				continue;
			uint64_t at = base + (uint64_t)(hit - win);
			uint32_t j = i;
			while (j > 0 && i - j < 31 && starts[j % 32] > at)
				j--;
			return j;
		}
	}
	return n;
}

/* prompt_tokens_details.cached_tokens only when the prefix cache found some, as servers
 * that report it without being asked (SGLang, llama.cpp) give it. */
static void render_usage_obj(struct cl_sim_w *w, uint32_t prompt, uint32_t completion,
			     uint32_t reasoning, uint32_t cached)
{
	CL_SIM_W_LIT(w, "{\"prompt_tokens\":");
	cl_sim_w_u64(w, prompt);
	CL_SIM_W_LIT(w, ",\"completion_tokens\":");
	cl_sim_w_u64(w, completion);
	CL_SIM_W_LIT(w, ",\"total_tokens\":");
	cl_sim_w_u64(w, (uint64_t)prompt + completion);
	CL_SIM_W_LIT(w, ",\"completion_tokens_details\":{\"reasoning_tokens\":");
	cl_sim_w_u64(w, reasoning);
	CL_SIM_W_LIT(w, "}");
	if (cached) {
		CL_SIM_W_LIT(w, ",\"prompt_tokens_details\":{\"cached_tokens\":");
		cl_sim_w_u64(w, cached);
		CL_SIM_W_LIT(w, "}");
	}
	CL_SIM_W_LIT(w, "}");
}

/* What usage says the cache found: nothing with --cache-timings (timings say it). */
static uint32_t usage_cached(const struct cl_sim_stream *st)
{
	return st->cache_timings ? 0 : st->cached_tokens;
}

static uint32_t reasoning_among(const struct cl_sim_stream *st, uint32_t tokens)
{
	return tokens < st->planned_reasoning ? tokens : st->planned_reasoning;
}

static void render_head(struct cl_sim_w *w, const struct cl_sim_stream *st)
{
	CL_SIM_W_LIT(w, "data: {\"id\":\"");
	cl_sim_w_str(w, st->id);
	if (st->api == CL_API_COMPLETIONS)
		CL_SIM_W_LIT(w, "\",\"object\":\"text_completion\",\"created\":");
	else if (st->api == CL_API_TRANSCRIPTION) /* vLLM's TranscriptionStreamResponse */
		CL_SIM_W_LIT(w, "\",\"object\":\"transcription.chunk\",\"created\":");
	else
		CL_SIM_W_LIT(w, "\",\"object\":\"chat.completion.chunk\",\"created\":");
	cl_sim_w_i64(w, st->created_s);
	CL_SIM_W_LIT(w, ",\"model\":\"");
	cl_sim_w_str(w, st->model);
	CL_SIM_W_LIT(w, "\",\"choices\":[");
}

/* ---- tool calls (docs/simulator.md, "Tool calls") ------------------------------------- */

const char *cl_sim_render_finish(const struct cl_sim_stream *st)
{
	return st->tool_call ? "tool_calls" : st->finish_length ? "length" : "stop";
}

/* The arguments text of a tool call, as it goes inside a JSON string: tokens [first, first +
 * n) of the answer's content tokens.  The whole text is {"q":"<words>"}: the first token
 * opens the object, the last closes it, so the planned count of tokens is the arguments. */
static void render_tool_args(struct cl_sim_w *w, const struct cl_sim_stream *st, uint32_t first,
			     uint32_t n)
{
	uint32_t total = st->planned_tokens - st->planned_reasoning;
	if (first == 0)
		CL_SIM_W_LIT(w, "{\\\"q\\\":\\\"");
	cl_sim_render_tokens(w, st->seq, first, n, false);
	if (first + n == total)
		CL_SIM_W_LIT(w, "\\\"}");
}

/* A tool_calls delta as vLLM and llama.cpp stream it: the call's first piece carries its
 * index, id, type and function name, later pieces the index and an arguments fragment. */
static void render_tool_delta(struct cl_sim_w *w, const struct cl_sim_stream *st, uint32_t first,
			      uint32_t n)
{
	CL_SIM_W_LIT(w, "\"tool_calls\":[{\"index\":0,");
	if (first == 0) {
		CL_SIM_W_LIT(w, "\"id\":\"call-sim-");
		cl_sim_w_u64(w, st->seq);
		CL_SIM_W_LIT(w, "\",\"type\":\"function\",\"function\":{\"name\":\"");
		cl_sim_w_str(w, st->tool_name); /* [A-Za-z0-9_-] only: checked when read */
		CL_SIM_W_LIT(w, "\",\"arguments\":\"");
	} else {
		CL_SIM_W_LIT(w, "\"function\":{\"arguments\":\"");
	}
	render_tool_args(w, st, first, n);
	CL_SIM_W_LIT(w, "\"}}]");
}

/* A chat chunk's delta members: the opening role, or its reasoning then content text. */
static void render_delta(struct cl_sim_w *w, const struct cl_sim_config *cfg,
			 const struct cl_sim_stream *st, const struct cl_sim_chunk *ch)
{
	if (ch->role) {
		CL_SIM_W_LIT(w, "\"role\":\"assistant\",\"content\":\"\"");
		return;
	}
	if (ch->n_tokens == 0) {
		/* an answer of no token (a stop string at its first): its finish alone */
		CL_SIM_W_LIT(w, "\"content\":\"\"");
		return;
	}
	uint32_t a = ch->first_token, b = ch->first_token + ch->n_tokens;
	uint32_t r_end = b < st->planned_reasoning ? b : st->planned_reasoning;
	bool any = false;
	if (a < r_end) {
		CL_SIM_W_LIT(w, "\"");
		cl_sim_w_str(w, cfg->reasoning_field);
		CL_SIM_W_LIT(w, "\":\"");
		cl_sim_render_tokens(w, st->seq, a, r_end - a, true);
		CL_SIM_W_LIT(w, "\"");
		any = true;
		a = r_end;
	}
	if (a < b && st->tool_call) {
		if (any)
			CL_SIM_W_LIT(w, ",");
		render_tool_delta(w, st, a - st->planned_reasoning, b - a);
	} else if (a < b) {
		if (any)
			CL_SIM_W_LIT(w, ",");
		CL_SIM_W_LIT(w, "\"content\":\"");
		cl_sim_render_tokens(w, st->seq, a - st->planned_reasoning, b - a, false);
		CL_SIM_W_LIT(w, "\"");
	}
}

void cl_sim_render_chunk(struct cl_sim_w *w, const struct cl_sim_config *cfg,
			 const struct cl_sim_stream *st, const struct cl_sim_chunk *ch)
{
	/* The tokens a chunk names lie within the stream's output. */
	CL_ASSERT(ch->first_token + ch->n_tokens <= st->planned_tokens);
	render_head(w, st);
	if (st->api == CL_API_COMPLETIONS) {
		/* vLLM's text_completion chunk: the text, no delta, no role, no reasoning. */
		CL_SIM_W_LIT(w, "{\"index\":0,\"text\":\"");
		cl_sim_render_tokens(w, st->seq, ch->first_token, ch->n_tokens, false);
		CL_SIM_W_LIT(w, "\"");
	} else {
		CL_SIM_W_LIT(w, "{\"index\":0,\"delta\":{");
		render_delta(w, cfg, st, ch);
		CL_SIM_W_LIT(w, "}");
	}
	CL_SIM_W_LIT(w, ",\"logprobs\":null,\"finish_reason\":");
	if (ch->finish) {
		CL_SIM_W_LIT(w, "\"");
		cl_sim_w_str(w, ch->finish);
		CL_SIM_W_LIT(w, "\"");
	} else {
		CL_SIM_W_LIT(w, "null");
	}
	CL_SIM_W_LIT(w, "}]");
	if (st->continuous_usage) {
		uint32_t done = ch->role ? 0 : ch->first_token + ch->n_tokens;
		CL_SIM_W_LIT(w, ",\"usage\":");
		render_usage_obj(w, st->prompt_tokens, done, reasoning_among(st, done),
				 usage_cached(st));
	} else if (st->include_usage) {
		CL_SIM_W_LIT(w, ",\"usage\":null");
	}
	CL_SIM_W_LIT(w, "}\n\n");
}

void cl_sim_render_usage(struct cl_sim_w *w, const struct cl_sim_stream *st)
{
	render_head(w, st);
	CL_SIM_W_LIT(w, "],\"usage\":");
	render_usage_obj(w, st->prompt_tokens, st->sent_tokens,
			 reasoning_among(st, st->sent_tokens), usage_cached(st));
	if (st->cache_timings) {
		/* llama.cpp b4748's shape: prompt_n is what it evaluated, the rest was cached. */
		CL_SIM_W_LIT(w, ",\"timings\":{\"prompt_n\":");
		cl_sim_w_u64(w, st->prompt_tokens - st->cached_tokens);
		CL_SIM_W_LIT(w, ",\"predicted_n\":");
		cl_sim_w_u64(w, st->sent_tokens);
		CL_SIM_W_LIT(w, "}");
	}
	CL_SIM_W_LIT(w, "}\n\n");
}

void cl_sim_render_done(struct cl_sim_w *w)
{
	CL_SIM_W_LIT(w, "data: [DONE]\n\n");
}

void cl_sim_render_malformed(struct cl_sim_w *w, const struct cl_sim_stream *st)
{
	/* Cut inside a string: no JSON parser can accept it. */
	CL_SIM_W_LIT(w, "data: {\"id\":\"");
	cl_sim_w_str(w, st->id);
	CL_SIM_W_LIT(w, "\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
			"\"delta\":{\"content\":\"trunc\n\n");
}

void cl_sim_render_wrong_type(struct cl_sim_w *w, const struct cl_sim_stream *st,
			      enum cl_sim_wrong_shape shape)
{
	if (shape == CL_SIM_WRONG_ROTATE)
		shape = (enum cl_sim_wrong_shape)((st->seq - 1) % 4);
	bool all = shape == CL_SIM_WRONG_ALL;
	if (all || shape == CL_SIM_WRONG_CONTENT) {
		render_head(w, st);
		CL_SIM_W_LIT(w, "{\"index\":0,\"delta\":{\"content\":5},\"logprobs\":null,"
				"\"finish_reason\":null}]}\n\n");
	}
	if (all || shape == CL_SIM_WRONG_CHOICES) {
		CL_SIM_W_LIT(w, "data: {\"id\":\"");
		cl_sim_w_str(w, st->id);
		CL_SIM_W_LIT(w,
			     "\",\"object\":\"chat.completion.chunk\",\"choices\":\"nope\"}\n\n");
	}
	if (all || shape == CL_SIM_WRONG_USAGE) {
		render_head(w, st);
		CL_SIM_W_LIT(w, "],\"usage\":{\"prompt_tokens\":");
		cl_sim_w_u64(w, st->prompt_tokens);
		CL_SIM_W_LIT(w, ",\"completion_tokens\":\"many\"}}\n\n");
	}
	if (all || shape == CL_SIM_WRONG_ARRAY)
		CL_SIM_W_LIT(w, "data: [1,2,3]\n\n");
}

int cl_sim_render_append_tokens(struct cl_buf *out, uint64_t seq, uint32_t first, uint32_t n,
				bool reasoning)
{
	char tmp[4096];
	while (n > 0) {
		uint32_t batch = n < 256 ? n : 256; /* 256 words of <= 12 bytes fit */
		struct cl_sim_w w;
		cl_sim_w_init(&w, tmp, sizeof(tmp));
		cl_sim_render_tokens(&w, seq, first, batch, reasoning);
		int rc = cl_buf_append(out, tmp, cl_sim_w_len(&w, tmp));
		if (rc)
			return rc;
		first += batch;
		n -= batch;
	}
	return 0;
}

void cl_sim_render_transcript_delta(struct cl_sim_w *w, const struct cl_sim_stream *st,
				    uint32_t first, uint32_t n)
{
	CL_SIM_W_LIT(w, "data: {\"type\":\"transcript.text.delta\",\"delta\":\"");
	cl_sim_render_tokens(w, st->seq, first, n, false);
	CL_SIM_W_LIT(w, "\",\"logprobs\":null}\n\n");
}

void cl_sim_render_transcript_done(struct cl_sim_w *w, const struct cl_sim_stream *st,
				   bool with_usage)
{
	/* The whole text, up to CL_SIM_TRANSCRIPT_DONE_MAX tokens so the event fits the
	 * scratch buffer (the deltas carried all of it). */
	uint32_t n = st->sent_tokens < CL_SIM_TRANSCRIPT_DONE_MAX ? st->sent_tokens
								  : CL_SIM_TRANSCRIPT_DONE_MAX;
	CL_SIM_W_LIT(w, "data: {\"type\":\"transcript.text.done\",\"text\":\"");
	cl_sim_render_tokens(w, st->seq, 0, n, false);
	CL_SIM_W_LIT(w, "\"");
	if (with_usage) {
		CL_SIM_W_LIT(w, ",\"usage\":{\"type\":\"tokens\",\"input_tokens\":");
		cl_sim_w_u64(w, st->prompt_tokens);
		CL_SIM_W_LIT(w, ",\"output_tokens\":");
		cl_sim_w_u64(w, st->sent_tokens);
		CL_SIM_W_LIT(w, ",\"total_tokens\":");
		cl_sim_w_u64(w, (uint64_t)st->prompt_tokens + st->sent_tokens);
		CL_SIM_W_LIT(w, "}");
	}
	CL_SIM_W_LIT(w, "}\n\n");
}

int cl_sim_render_transcription(struct cl_buf *out, const struct cl_sim_stream *st, bool with_usage)
{
	int rc = cl_buf_puts(out, "{\"text\":\"");
	rc = rc ? rc : cl_sim_render_append_tokens(out, st->seq, 0, st->planned_tokens, false);
	rc = rc ? rc : cl_buf_puts(out, "\"");
	/* vLLM's TranscriptionUsageAudio: the audio's whole seconds, rounded up. */
	if (!rc && with_usage)
		rc = cl_buf_printf(out, ",\"usage\":{\"type\":\"duration\",\"seconds\":%u}",
				   (st->audio_ms + 999) / 1000);
	return rc ? rc : cl_buf_puts(out, "}");
}

int cl_sim_render_completion(struct cl_buf *out, const struct cl_sim_config *cfg,
			     const struct cl_sim_stream *st, bool with_usage)
{
	char tmp[512];
	struct cl_sim_w w;
	uint32_t n = st->planned_tokens, r = st->planned_reasoning;
	int rc;

	cl_sim_w_init(&w, tmp, sizeof(tmp));
	CL_SIM_W_LIT(&w, "{\"id\":\"");
	cl_sim_w_str(&w, st->id);
	CL_SIM_W_LIT(&w, "\",\"object\":\"chat.completion\",\"created\":");
	cl_sim_w_i64(&w, st->created_s);
	CL_SIM_W_LIT(&w, ",\"model\":\"");
	cl_sim_w_str(&w, st->model);
	CL_SIM_W_LIT(&w, "\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",");
	if ((rc = cl_buf_append(out, tmp, cl_sim_w_len(&w, tmp))))
		return rc;
	if (st->tool_call) {
		/* The whole call at once: content null, the arguments in one string. */
		rc = cl_buf_printf(
		    out,
		    "\"content\":null,\"tool_calls\":[{\"id\":\"call-sim-%llu\",\"type\":"
		    "\"function\",\"function\":{\"name\":\"%s\",\"arguments\":\"{\\\"q\\\":"
		    "\\\"",
		    (unsigned long long)st->seq, st->tool_name);
		rc = rc ? rc : cl_sim_render_append_tokens(out, st->seq, 0, n - r, false);
		rc = rc ? rc : cl_buf_puts(out, "\\\"}\"}}]");
	} else {
		rc = cl_buf_puts(out, "\"content\":\"");
		rc = rc ? rc : cl_sim_render_append_tokens(out, st->seq, r, n - r, false);
		rc = rc ? rc : cl_buf_puts(out, "\"");
	}
	if (rc)
		return rc;
	if (r > 0) {
		if ((rc = cl_buf_printf(out, ",\"%s\":\"", cfg->reasoning_field)) ||
		    (rc = cl_sim_render_append_tokens(out, st->seq, 0, r, true)) ||
		    (rc = cl_buf_puts(out, "\"")))
			return rc;
	}
	cl_sim_w_init(&w, tmp, sizeof(tmp));
	CL_SIM_W_LIT(&w, "},\"logprobs\":null,\"finish_reason\":\"");
	cl_sim_w_str(&w, cl_sim_render_finish(st));
	CL_SIM_W_LIT(&w, "\"}]");
	if (with_usage) {
		CL_SIM_W_LIT(&w, ",\"usage\":");
		render_usage_obj(&w, st->prompt_tokens, n, r, usage_cached(st));
	}
	CL_SIM_W_LIT(&w, "}");
	return cl_buf_append(out, tmp, cl_sim_w_len(&w, tmp));
}

static int render_model(struct cl_buf *out, const char *id, int64_t created_s)
{
	return cl_buf_printf(out,
			     "{\"id\":\"%s\",\"object\":\"model\",\"created\":%lld,\"owned_by\":"
			     "\"chatload-sim\",\"root\":\"%s\",\"parent\":null}",
			     id, (long long)created_s, id);
}

int cl_sim_render_models(struct cl_buf *out, const struct cl_sim_config *cfg, const char *id,
			 int64_t created_s)
{
	int rc;
	if (id)
		return render_model(out, id, created_s);
	if ((rc = cl_buf_puts(out, "{\"object\":\"list\",\"data\":[")))
		return rc;
	for (size_t i = 0; i < cfg->n_models; i++) {
		if ((i && (rc = cl_buf_puts(out, ","))) ||
		    (rc = render_model(out, cfg->models[i], created_s)))
			return rc;
	}
	return cl_buf_puts(out, "]}");
}

int cl_sim_render_error(struct cl_buf *out, const char *message, const char *type, const char *code,
			int status)
{
	char tmp[1024];
	struct cl_sim_w w;
	cl_sim_w_init(&w, tmp, sizeof(tmp));
	if (!code) {
		/* llama.cpp's field order, as captured in tests/data/streams/README.md */
		CL_SIM_W_LIT(&w, "{\"error\":{\"code\":");
		cl_sim_w_i64(&w, status);
		CL_SIM_W_LIT(&w, ",\"message\":");
		cl_sim_w_json(&w, message, strlen(message));
		CL_SIM_W_LIT(&w, ",\"type\":");
		cl_sim_w_json(&w, type, strlen(type));
		CL_SIM_W_LIT(&w, "}}");
	} else {
		CL_SIM_W_LIT(&w, "{\"error\":{\"message\":");
		cl_sim_w_json(&w, message, strlen(message));
		CL_SIM_W_LIT(&w, ",\"type\":");
		cl_sim_w_json(&w, type, strlen(type));
		CL_SIM_W_LIT(&w, ",\"param\":null,\"code\":");
		cl_sim_w_json(&w, code, strlen(code));
		CL_SIM_W_LIT(&w, "}}");
	}
	if (w.overflow)
		return CL_ETOOBIG;
	return cl_buf_append(out, tmp, cl_sim_w_len(&w, tmp));
}
