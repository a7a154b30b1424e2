/* One request body: messages plus the scenario's extra body rendered to compact JSON, and
 * the growing array of rendered bodies with its caps. */
#include "coordinator/workload/internal.h"

#include "chatload/assert.h"

#include <stdlib.h>
#include <string.h>

/* Puts prefix + "\n\n" before the text of the first user message of messages. */
static int add_prefix(json_t *messages, const char *prefix, size_t *chars)
{
	size_t i;
	json_t *m;
	json_array_foreach(messages, i, m)
	{
		json_t *role = json_object_get(m, "role");
		if (!json_is_string(role) || strcmp(json_string_value(role), "user") != 0)
			continue;
		json_t *content = json_object_get(m, "content");
		size_t plen = strlen(prefix);
		if (json_is_string(content)) {
			struct cl_buf b;
			cl_buf_init(&b, 0);
			int rc = cl_buf_append(&b, prefix, plen) || cl_buf_append(&b, "\n\n", 2) ||
				 cl_buf_append(&b, json_string_value(content),
					       json_string_length(content));
			json_t *v = rc ? NULL : json_stringn(b.data, b.len);
			cl_buf_free(&b);
			if (!v || json_object_set_new(m, "content", v) != 0)
				return CL_ENOMEM;
			*chars += plen + 2;
			return 0;
		}
		if (json_is_array(content)) {
			json_t *part = json_pack("{s:s,s:s}", "type", "text", "text", prefix);
			if (!part || json_array_insert_new(content, 0, part) != 0)
				return CL_ENOMEM;
			*chars += plen;
			return 0;
		}
		return 0;
	}
	return 0;
}

/* Puts salt before the text of the first message of messages (as a first text part when its
 * content is an array of parts): every request of a run then begins with the same few tokens
 * that no earlier run sent, so a server's prefix cache shares within the run only. */
static int add_salt(json_t *messages, const char *salt, size_t *chars)
{
	json_t *m = NULL;
	/* The first object: a conversation's turn holds a history marker (a string) before it. */
	for (size_t i = 0; i < json_array_size(messages) && !json_is_object(m); i++)
		m = json_array_get(messages, i);
	json_t *content = json_is_object(m) ? json_object_get(m, "content") : NULL;
	size_t slen = strlen(salt);
	if (json_is_string(content)) {
		struct cl_buf b;
		cl_buf_init(&b, 0);
		int rc = cl_buf_append(&b, salt, slen) ||
			 cl_buf_append(&b, json_string_value(content), json_string_length(content));
		json_t *v = rc ? NULL : json_stringn(b.data, b.len);
		cl_buf_free(&b);
		if (!v || json_object_set_new(m, "content", v) != 0)
			return CL_ENOMEM;
		*chars += slen;
	} else if (json_is_array(content)) {
		json_t *part = json_pack("{s:s,s:s}", "type", "text", "text", salt);
		if (!part || json_array_insert_new(content, 0, part) != 0)
			return CL_ENOMEM;
		*chars += slen;
	}
	return 0;
}

/* A rendered body (b->json taken) given to c->sink, counted in the figures and freed: it
 * takes the place of the next body, as if kept, so an image's seed (the body's index) is the
 * same either way. */
static int sink_body(struct render_ctx *c, struct cl_request_body *b, uint8_t flags,
		     struct cl_err *err)
{
	cli_workload_stats_add(c->stats, b, flags);
	int rc = c->sink(c->sink_arg, c->cur_line, b->json, b->len, err);
	free(b->json);
	b->json = NULL;
	c->n++;
	return rc;
}

/* A new body at the end of c's list (*out), holding json (len bytes; taken, freed on
 * failure), its other fields zero: CL_ETOOBIG when the bodies' bytes would pass their cap,
 * CL_ENOMEM when memory runs out. */
static int append_body(struct render_ctx *c, char *json, size_t len, struct cl_request_body **out,
		       struct cl_err *err)
{
	if (len > CL_WORKLOAD_MAX_TOTAL_BYTES - c->total_bytes) {
		free(json);
		return cl_err_set(err, CL_ETOOBIG, "rendered request bodies exceed %u MiB in total",
				  CL_WORKLOAD_MAX_TOTAL_BYTES >> 20);
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct cl_request_body *p = realloc(c->bodies, cap * sizeof(*p));
		if (p)
			c->bodies = p;
		uint8_t *f = p ? realloc(c->flags, cap) : NULL;
		if (!f) {
			free(json);
			return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
		}
		c->flags = f;
		c->cap = cap;
	}
	struct cl_request_body *b = &c->bodies[c->n];
	memset(b, 0, sizeof(*b));
	b->json = json;
	b->len = len;
	*out = b;
	return 0;
}

int cli_workload_push_body(struct render_ctx *c, json_t *messages, size_t prompt_chars,
			   uint32_t out_tokens, struct cl_err *err)
{
	char *json = NULL;
	if (c->n >= CL_WORKLOAD_MAX_BODIES && !c->sink) {
		json_decref(messages);
		return cl_err_set(err, CL_ETOOBIG, "workload has more than %u prompts",
				  CL_WORKLOAD_MAX_BODIES);
	}
	size_t chars = prompt_chars;
	if (c->n_prefixes && !c->no_prefix &&
	    add_prefix(messages, c->prefixes[c->n % c->n_prefixes], &chars) != 0) {
		json_decref(messages);
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
	}
	if (c->salt && !c->no_salt && add_salt(messages, c->salt, &chars) != 0) {
		json_decref(messages);
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
	}
	/* workload.images, after the prefix and salt went into the text they join. */
	int irc =
	    c->images && c->images->count ? cli_workload_add_images(c, messages, c->n, err) : 0;
	if (irc) {
		json_decref(messages);
		return irc;
	}
	if (!cl_api_streams(c->api) && c->batch > 1) {
		/* One input (embeddings) or text (rerank, score: the query, then its documents)
		 * per prompt: they wait until the batch is full. */
		if (!c->pending && !(c->pending = json_array())) {
			json_decref(messages);
			return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
		}
		int bad = json_array_extend(c->pending, messages);
		json_decref(messages);
		if (bad)
			return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
		c->pending_chars += chars;
		if (json_array_size(c->pending) < c->batch)
			return 0;
		return cli_workload_flush_batch(c, err);
	}
	uint32_t inputs = c->api == CL_API_EMBEDDINGS ? (uint32_t)json_array_size(messages) : 0;
	if (cl_api_scores(c->api)) {
		/* The first text is the query, the rest its documents: a lone text (a last
		 * group of one) would be a query with nothing to score, and is left out. */
		size_t texts = json_array_size(messages);
		if (texts < 2) {
			json_decref(messages);
			return 0;
		}
		inputs = (uint32_t)(texts - 1);
	}
	uint32_t max_tokens = out_tokens ? out_tokens : c->max_tokens;
	bool ignore_eos = c->ignore_eos == 1 || (c->ignore_eos < 0 && out_tokens);
	if (!cl_api_streams(c->api))
		max_tokens = 0, ignore_eos = false; /* no output */
	if (cl_body_json_render_api(c->api, c->model, messages, max_tokens, ignore_eos, c->extra,
				    &json) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
	/* What is sent, whichever key set it: target.body's keys replace chatload's (a null
	 * removes one), so its ignore_eos decides, and a stop there ends answers early. */
	const json_t *eos = c->extra ? json_object_get(c->extra, "ignore_eos") : NULL;
	if (eos)
		ignore_eos = json_is_true(eos);
	const json_t *stop = c->extra ? json_object_get(c->extra, "stop") : NULL;
	bool has_stop = stop && !json_is_null(stop) &&
			!(json_is_array(stop) && json_array_size(stop) == 0) &&
			!(json_is_string(stop) && json_string_length(stop) == 0);
	size_t len = strlen(json);
	uint8_t flags = (out_tokens ? RENDER_OWN_LENGTH : 0) |
			(ignore_eos ? RENDER_IGNORE_EOS : 0) | (has_stop ? RENDER_STOP : 0);
	if (c->sink) {
		struct cl_request_body b = { .json = json,
					     .len = len,
					     .max_tokens = max_tokens,
					     .prompt_chars = chars > UINT32_MAX ? UINT32_MAX
										: (uint32_t)chars };
		return sink_body(c, &b, flags, err);
	}
	struct cl_request_body *b;
	int rc = append_body(c, json, len, &b, err);
	if (rc)
		return rc;
	b->prompt_chars = chars > UINT32_MAX ? UINT32_MAX : (uint32_t)chars;
	b->max_tokens = max_tokens;
	b->inputs = inputs;
	c->flags[c->n] = flags;
	c->n++;
	c->total_bytes += len;
	return 0;
}

int cli_workload_push_raw(struct render_ctx *c, char *json, uint32_t audio_ms, struct cl_err *err)
{
	size_t len = strlen(json);
	if (c->n >= CL_WORKLOAD_MAX_BODIES) {
		free(json);
		return cl_err_set(err, CL_ETOOBIG, "workload has more than %u requests",
				  CL_WORKLOAD_MAX_BODIES);
	}
	struct cl_request_body *b;
	int rc = append_body(c, json, len, &b, err);
	if (rc)
		return rc;
	b->audio_ms = audio_ms;
	c->flags[c->n] = 0;
	c->n++;
	c->total_bytes += len;
	return 0;
}

int cli_workload_flush_batch(struct render_ctx *c, struct cl_err *err)
{
	json_t *batch = c->pending;
	size_t chars = c->pending_chars;
	if (!batch || json_array_size(batch) == 0)
		return 0;
	/* The prefix, if any, is in each input already. */
	size_t saved = c->n_prefixes;
	c->n_prefixes = 0;
	c->pending = NULL;
	c->pending_chars = 0;
	json_t *messages = batch;
	/* The batch is full (or the last one): through push_body with batching off. */
	uint32_t b = c->batch;
	c->batch = 1;
	int rc = cli_workload_push_body(c, messages, chars, 0, err);
	c->batch = b;
	c->n_prefixes = saved;
	return rc;
}

/* Markers that stand where the history goes and after the turn's user message while a turn
 * is rendered: strings jansson writes as "\u0000CLHIST1", which no text can produce with its
 * closing quote unescaped, so the first match is the marker itself. */
static const char mark1[] = "\"\\u0000CLHIST1\",", mark2[] = ",\"\\u0000CLHIST2\"";

/*
 * The messages of one request: the system prompt (when set) and the user's prompt; with
 * markers, the history marker before the user's message and the end marker after it (see
 * cut_markers).  *chars counts the characters of both prompts.  0, CL_EINVAL (not UTF-8) or
 * CL_ENOMEM, err filled.
 */
static int build_messages(const char *system, const char *prompt, size_t len, bool markers,
			  json_t **out, size_t *chars, struct cl_err *err)
{
	json_t *messages = json_array();
	json_t *content = json_stringn(prompt, len);
	*out = NULL;
	*chars = len;
	if (!content) {
		json_decref(messages);
		return cl_err_set(err, CL_EINVAL, "prompt is not valid UTF-8");
	}
	if (!messages)
		goto nomem_content;
	if (system && *system) {
		json_t *sys = json_string(system);
		if (!sys) {
			json_decref(content);
			json_decref(messages);
			return cl_err_set(err, CL_EINVAL, "system prompt is not valid UTF-8");
		}
		if (cl_body_json_add_message(messages, "system", sys) != 0)
			goto nomem_content;
		*chars += strlen(system);
	}
	if (markers && json_array_append_new(messages, json_stringn("\0CLHIST1", 8)) != 0)
		goto nomem_content;
	if (cl_body_json_add_message(messages, "user", content) != 0)
		goto nomem; /* content is taken, even on failure */
	if (markers && json_array_append_new(messages, json_stringn("\0CLHIST2", 8)) != 0)
		goto nomem;
	*out = messages;
	return 0;
nomem_content:
	json_decref(content);
nomem:
	json_decref(messages);
	return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
}

int cli_workload_push_prompt(struct render_ctx *c, const char *system, const char *prompt,
			     size_t len, uint32_t out_tokens, struct cl_err *err)
{
	json_t *messages;
	size_t chars;
	int rc = build_messages(system, prompt, len, false, &messages, &chars, err);
	return rc ? rc : cli_workload_push_body(c, messages, chars, out_tokens, err);
}

/* Cuts the markers mark1 and mark2 (or, for a completions prompt, cmark1 and cmark2) out of
 * b->json, filling hist_at and user_len. */
static int cut_markers(struct cl_request_body *b, const char *open, const char *close)
{
	size_t l1 = strlen(open), l2 = strlen(close);
	char *m1 = strstr(b->json, open);
	char *m2 = m1 ? strstr(m1 + l1, close) : NULL;
	if (!m1 || !m2)
		return CL_EINVAL;
	size_t at = (size_t)(m1 - b->json), user = (size_t)(m2 - m1) - l1;
	CL_ASSERT(m2 >= m1 + l1);
	memmove(m1, m1 + l1, user);
	memmove(m1 + user, m2 + l2, b->len - (size_t)(m2 + l2 - b->json) + 1);
	b->len -= l1 + l2;
	if (at > UINT32_MAX || user > UINT32_MAX)
		return CL_ETOOBIG;
	b->hist_at = (uint32_t)at;
	b->user_len = (uint32_t)user;
	return 0;
}

/* The body just pushed is turn `turn`: its markers (open, close) cut out, its history's
 * place and user message recorded. */
static int mark_turn(struct render_ctx *c, const char *open, const char *close, uint32_t turn,
		     struct cl_err *err)
{
	CL_ASSERT(!c->sink); /* a sink's bodies are gone: conversations are kept whole */
	struct cl_request_body *b = &c->bodies[c->n - 1];
	size_t before = b->len;
	int rc = cut_markers(b, open, close);
	if (rc)
		return cl_err_set(err, rc, "cannot place the history in a conversation's body");
	c->total_bytes -= before - b->len;
	b->turn = turn;
	return 0;
}

/* ---- multi-turn with api: completions ---- */

/* The markers of a completions turn: inside the prompt string, around the turn's own text,
 * where jansson writes the NUL that opens each as \u0000. */
static const char cmark1[] = "\\u0000CLHIST1", cmark2[] = "\\u0000CLHIST2";

/*
 * Turn `turn` of a conversation sent to /v1/completions, whose prompt is one string: the
 * history (each earlier turn's text and answer, "\n\n" after each, agent/engine/conv.c)
 * goes just before the turn's own text, so turn k's prompt is turn k-1's, its answer and
 * the new text.  What opens the prompt (the system prompt, the salt, a shared prefix) is in
 * every turn, before the history: unlike chat messages, a prompt string has no earlier
 * message to carry it.
 */
static int push_turn_prompt(struct render_ctx *c, const char *system, const char *prompt,
			    size_t len, uint32_t out_tokens, uint32_t turn, struct cl_err *err)
{
	struct cl_buf text;
	json_t *messages;
	size_t chars;
	cl_buf_init(&text, 0);
	if (cl_buf_append(&text, "\0CLHIST1", 8) || cl_buf_append(&text, prompt, len) ||
	    cl_buf_append(&text, "\0CLHIST2", 8)) {
		cl_buf_free(&text);
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
	}
	int rc = build_messages(system, text.data, text.len, false, &messages, &chars, err);
	cl_buf_free(&text);
	if (rc)
		return rc;
	rc = cli_workload_push_body(c, messages, chars - 16, out_tokens, err);
	return rc ? rc : mark_turn(c, cmark1, cmark2, turn, err);
}

int cli_workload_push_turn(struct render_ctx *c, const char *system, const char *prompt, size_t len,
			   uint32_t out_tokens, uint32_t turn, struct cl_err *err)
{
	if (c->api == CL_API_COMPLETIONS)
		return push_turn_prompt(c, system, prompt, len, out_tokens, turn, err);
	json_t *messages;
	size_t chars;
	int rc = build_messages(system, prompt, len, true, &messages, &chars, err);
	if (rc)
		return rc;
	/* A shared prefix opens the conversation: later turns carry it in their history. */
	c->no_prefix = turn > 1;
	/* So does the salt, unless a system message comes first in every turn: then each turn
	 * opens with the same salted system message, and its history follows. */
	c->no_salt = turn > 1 && !(system && *system);
	rc = cli_workload_push_body(c, messages, chars, out_tokens, err);
	c->no_prefix = c->no_salt = false;
	return rc ? rc : mark_turn(c, mark1, mark2, turn, err);
}
