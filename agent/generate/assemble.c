/* Streamed chat.completion.chunk events folded into one chat.completion (jansson holds the
 * parts; a chunk's strings are appended, its scalars replace). */
#include "agent/generate/assemble.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct text {
	char *s;
	size_t len, cap;
	bool seen;
};

struct tool_call {
	struct text id, type, name, args;
};

struct choice {
	bool seen;
	struct text content, reasoning, refusal;
	struct tool_call *calls;
	size_t n_calls;
	json_t *finish_reason; /* NULL until given non-null */
	json_t *logprobs;      /* content logprobs appended, when the server sends them */
};

struct cl_asm {
	json_t *id, *model, *created, *fingerprint, *usage;
	struct choice ch[CL_ASM_MAX_CHOICES];
	size_t bytes;
	bool done, token;
	bool content; /* a content token, a refusal or a tool call: an answer for the user */
	bool error;   /* an error object arrived */
};

struct cl_asm *cl_asm_new(void)
{
	return calloc(1, sizeof(struct cl_asm));
}

static void text_free(struct text *t)
{
	free(t->s);
	memset(t, 0, sizeof(*t));
}

void cl_asm_reset(struct cl_asm *a)
{
	if (!a)
		return;
	json_decref(a->id);
	json_decref(a->model);
	json_decref(a->created);
	json_decref(a->fingerprint);
	json_decref(a->usage);
	for (size_t i = 0; i < CL_ASM_MAX_CHOICES; i++) {
		struct choice *c = &a->ch[i];
		text_free(&c->content);
		text_free(&c->reasoning);
		text_free(&c->refusal);
		for (size_t k = 0; k < c->n_calls; k++) {
			text_free(&c->calls[k].id);
			text_free(&c->calls[k].type);
			text_free(&c->calls[k].name);
			text_free(&c->calls[k].args);
		}
		free(c->calls);
		json_decref(c->finish_reason);
		json_decref(c->logprobs);
	}
	memset(a, 0, sizeof(*a));
}

void cl_asm_free(struct cl_asm *a)
{
	cl_asm_reset(a);
	free(a);
}

static int fail(char *why, size_t n, const char *fmt, const char *what)
{
	snprintf(why, n, fmt, what);
	return -1;
}

/* Appends v (a JSON string; null or absent: nothing) to t.  -1 when v is another type or the
 * answer grew past its cap. */
static int append(struct cl_asm *a, struct text *t, json_t *v)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	size_t n = json_string_length(v);
	if (a->bytes + n > CL_ASM_MAX_BYTES)
		return -1;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *p = realloc(t->s, cap);
		if (!p)
			return -1;
		t->s = p;
		t->cap = cap;
	}
	memcpy(t->s + t->len, json_string_value(v), n);
	t->len += n;
	t->s[t->len] = '\0';
	t->seen = true;
	a->bytes += n;
	return 0;
}

static void keep(json_t **slot, json_t *v)
{
	if (!v || json_is_null(v))
		return;
	json_decref(*slot);
	*slot = json_incref(v);
}

static int fold_tool_calls(struct cl_asm *a, struct choice *c, json_t *calls, char *why, size_t n)
{
	if (!json_is_array(calls))
		return fail(why, n, "%s must be an array", "delta.tool_calls");
	size_t i;
	json_t *tc;
	json_array_foreach(calls, i, tc)
	{
		json_t *ix = json_object_get(tc, "index");
		json_int_t k = json_is_integer(ix) ? json_integer_value(ix) : (json_int_t)i;
		if (!json_is_object(tc) || k < 0 || k >= 128)
			return fail(why, n,
				    "%s has an entry that is not an object with an index "
				    "below 128",
				    "delta.tool_calls");
		if ((size_t)k >= c->n_calls) {
			struct tool_call *p = realloc(c->calls, (size_t)(k + 1) * sizeof(*p));
			if (!p)
				return fail(why, n, "%s", "out of memory");
			memset(p + c->n_calls, 0, ((size_t)k + 1 - c->n_calls) * sizeof(*p));
			c->calls = p;
			c->n_calls = (size_t)k + 1;
		}
		struct tool_call *t = &c->calls[k];
		json_t *fn = json_object_get(tc, "function");
		/* An id or type arrives whole in the first delta of a call: replace, not append. */
		json_t *id = json_object_get(tc, "id"), *type = json_object_get(tc, "type");
		if (json_is_string(id) && !t->id.seen && append(a, &t->id, id) != 0)
			return fail(why, n, "%s is not a string", "tool_calls[].id");
		if (json_is_string(type) && !t->type.seen && append(a, &t->type, type) != 0)
			return fail(why, n, "%s is not a string", "tool_calls[].type");
		if (fn && (append(a, &t->name, json_object_get(fn, "name")) != 0 ||
			   append(a, &t->args, json_object_get(fn, "arguments")) != 0))
			return fail(why, n, "%s are not strings", "tool_calls[].function fields");
	}
	a->token = true;
	a->content = true;
	return 0;
}

int cl_asm_feed(struct cl_asm *a, const char *data, size_t len, int *error_code, char *why,
		size_t n)
{
	*error_code = 0;
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		a->done = true;
		return 0;
	}
	json_error_t je;
	json_t *root = json_loadb(data, len, 0, &je);
	int rc = 0;
	if (!json_is_object(root)) {
		rc = fail(why, n, "a chunk is not a JSON object: %s",
			  root ? "another JSON value" : je.text);
		goto out;
	}
	json_t *err = json_object_get(root, "error");
	if (err && !json_is_null(err)) {
		/* {"error": {"code", "message"}} (vLLM, llama.cpp since PR 16109) or a string
		 * (TGI): the server's own words are kept, its numeric code beside them. */
		json_t *code = json_object_get(err, "code");
		*error_code = json_is_integer(code) ? (int)json_integer_value(code) : 0;
		json_t *msg = json_is_string(err) ? err : json_object_get(err, "message");
		char codes[24] = "";
		if (*error_code)
			snprintf(codes, sizeof(codes), " (code %d)", *error_code);
		snprintf(why, n, "the server sent an error in the stream%s: %.300s", codes,
			 json_is_string(msg) ? json_string_value(msg) : "(no message)");
		a->error = true;
		rc = -1;
		goto out;
	}
	keep(&a->id, json_object_get(root, "id"));
	keep(&a->model, json_object_get(root, "model"));
	keep(&a->created, json_object_get(root, "created"));
	keep(&a->fingerprint, json_object_get(root, "system_fingerprint"));
	json_t *usage = json_object_get(root, "usage");
	if (usage && !json_is_null(usage)) {
		if (!json_is_object(usage)) {
			rc = fail(why, n, "%s is not an object", "usage");
			goto out;
		}
		keep(&a->usage, usage);
	}
	json_t *choices = json_object_get(root, "choices");
	if (choices && !json_is_array(choices)) {
		rc = fail(why, n, "%s is not an array", "choices");
		goto out;
	}
	size_t i;
	json_t *c;
	json_array_foreach(choices, i, c)
	{
		json_t *ix = json_object_get(c, "index");
		json_int_t k = json_is_integer(ix) ? json_integer_value(ix) : 0;
		if (!json_is_object(c) || k < 0 || k >= CL_ASM_MAX_CHOICES) {
			rc = fail(why, n, "%s", "a choice is not an object with an index below 16");
			goto out;
		}
		struct choice *ch = &a->ch[k];
		ch->seen = true;
		json_t *delta = json_object_get(c, "delta");
		if (delta && !json_is_null(delta)) {
			if (!json_is_object(delta)) {
				rc = fail(why, n, "%s is not an object", "delta");
				goto out;
			}
			json_t *content = json_object_get(delta, "content");
			json_t *reasoning = json_object_get(delta, "reasoning_content");
			if (!reasoning)
				reasoning =
				    json_object_get(delta, "reasoning"); /* vLLM's newer name */
			if (append(a, &ch->content, content) != 0 ||
			    append(a, &ch->reasoning, reasoning) != 0 ||
			    append(a, &ch->refusal, json_object_get(delta, "refusal")) != 0) {
				rc = fail(why, n, "%s",
					  "delta.content, reasoning_content or refusal is not a "
					  "string (or the answer is larger than 16 MiB)");
				goto out;
			}
			if ((json_is_string(content) && json_string_length(content)) ||
			    (json_is_string(reasoning) && json_string_length(reasoning)))
				a->token = true;
			json_t *refusal = json_object_get(delta, "refusal");
			if ((json_is_string(content) && json_string_length(content)) ||
			    (json_is_string(refusal) && json_string_length(refusal)))
				a->content = true;
			json_t *calls = json_object_get(delta, "tool_calls");
			if (calls && !json_is_null(calls) &&
			    (rc = fold_tool_calls(a, ch, calls, why, n)) != 0)
				goto out;
		}
		keep(&ch->finish_reason, json_object_get(c, "finish_reason"));
		json_t *lp = json_object_get(json_object_get(c, "logprobs"), "content");
		if (json_is_array(lp)) {
			if (!ch->logprobs)
				ch->logprobs = json_array();
			json_array_extend(ch->logprobs, lp);
		}
	}
out:
	json_decref(root);
	return rc;
}

bool cl_asm_done(const struct cl_asm *a)
{
	return a->done;
}

bool cl_asm_has_token(const struct cl_asm *a)
{
	return a->token;
}

bool cl_asm_has_content(const struct cl_asm *a)
{
	return a->content;
}

bool cl_asm_has_choice(const struct cl_asm *a)
{
	for (size_t i = 0; i < CL_ASM_MAX_CHOICES; i++)
		if (a->ch[i].seen)
			return true;
	return false;
}

bool cl_asm_error_seen(const struct cl_asm *a)
{
	return a->error;
}

bool cl_asm_finished(const struct cl_asm *a)
{
	bool any = false;
	for (size_t i = 0; i < CL_ASM_MAX_CHOICES; i++) {
		if (!a->ch[i].seen)
			continue;
		any = true;
		if (!a->ch[i].finish_reason)
			return false;
	}
	return any;
}

static uint32_t usage_count(const struct cl_asm *a, const char *name)
{
	json_t *t = json_object_get(a->usage, name);
	json_int_t v = json_is_integer(t) ? json_integer_value(t) : 0;
	return v > 0 && v < UINT32_MAX ? (uint32_t)v : 0;
}

uint32_t cl_asm_output_tokens(const struct cl_asm *a)
{
	return usage_count(a, "completion_tokens");
}

uint32_t cl_asm_prompt_tokens(const struct cl_asm *a)
{
	return usage_count(a, "prompt_tokens");
}

const char *cl_asm_id(const struct cl_asm *a)
{
	return json_is_string(a->id) ? json_string_value(a->id) : NULL;
}

static json_t *text_json(const struct text *t)
{
	return json_stringn(t->s ? t->s : "", t->len);
}

char *cl_asm_result(const struct cl_asm *a)
{
	json_t *root = json_object();
	json_t *choices = json_array();
	if (!root || !choices) {
		json_decref(root);
		json_decref(choices);
		return NULL;
	}
	json_object_set(root, "id", a->id ? a->id : json_null());
	json_object_set_new(root, "object", json_string("chat.completion"));
	json_object_set_new(root, "created",
			    a->created ? json_incref(a->created) : json_integer(0));
	json_object_set(root, "model", a->model ? a->model : json_null());
	if (a->fingerprint)
		json_object_set(root, "system_fingerprint", a->fingerprint);
	for (size_t i = 0; i < CL_ASM_MAX_CHOICES; i++) {
		const struct choice *c = &a->ch[i];
		if (!c->seen)
			continue;
		json_t *msg = json_object();
		json_object_set_new(msg, "role", json_string("assistant"));
		/* content is null only when the answer is tool calls and nothing else */
		json_object_set_new(msg, "content",
				    c->content.seen || !c->n_calls ? text_json(&c->content)
								   : json_null());
		if (c->reasoning.seen)
			json_object_set_new(msg, "reasoning_content", text_json(&c->reasoning));
		if (c->refusal.seen)
			json_object_set_new(msg, "refusal", text_json(&c->refusal));
		if (c->n_calls) {
			json_t *calls = json_array();
			for (size_t k = 0; k < c->n_calls; k++) {
				const struct tool_call *t = &c->calls[k];
				json_array_append_new(
				    calls, json_pack("{s:o, s:o, s:{s:o, s:o}}", "id",
						     text_json(&t->id), "type",
						     t->type.seen ? text_json(&t->type)
								  : json_string("function"),
						     "function", "name", text_json(&t->name),
						     "arguments", text_json(&t->args)));
			}
			json_object_set_new(msg, "tool_calls", calls);
		}
		json_t *ch = json_pack(
		    "{s:I, s:o, s:o, s:O}", "index", (json_int_t)i, "message", msg, "logprobs",
		    c->logprobs ? json_pack("{s:O}", "content", c->logprobs) : json_null(),
		    "finish_reason", c->finish_reason ? c->finish_reason : json_null());
		json_array_append_new(choices, ch);
	}
	json_object_set_new(root, "choices", choices);
	json_object_set(root, "usage", a->usage ? a->usage : json_null());
	char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(root);
	return text;
}
