/* Tool calls in the engine: the pieces of an answer's tool calls kept as they stream, and the
 * agentic loop's history (the assistant's calls, the synthetic tool results). */
#include "internal.h"

#include "client/stream/chunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Four-character words (space included): a result of N of them is about N tokens by the
 * common estimate of four characters a token. */
static const char *const result_words[] = { " sky", " oak", " red", " map", " ink",
					    " sun", " bay", " fog", " elm", " ore" };
#define N_RESULT_WORDS (sizeof(result_words) / sizeof(result_words[0]))

int cli_tools_init(struct cl_engine *e)
{
	uint32_t n = e->workload.tool_result_tokens;
	if (!n)
		return 0;
	static const char head[] = "result:";
	size_t len = sizeof(head) - 1 + (size_t)n * 4;
	if (!(e->tool_result = malloc(len + 1)))
		return CL_ENOMEM;
	memcpy(e->tool_result, head, sizeof(head) - 1);
	for (uint32_t i = 0; i < n; i++)
		memcpy(e->tool_result + sizeof(head) - 1 + (size_t)i * 4,
		       result_words[i % N_RESULT_WORDS], 4);
	e->tool_result[len] = '\0';
	e->tool_result_len = len;
	return 0;
}

void cli_tools_slot_init(struct cl_slot *s)
{
	for (int i = 0; i < CL_ENGINE_TOOL_CALLS; i++)
		cl_buf_init(&s->tool[i].args, CL_ENGINE_MAX_TOOL_ARGS);
}

void cli_tools_slot_free(struct cl_slot *s)
{
	for (int i = 0; i < CL_ENGINE_TOOL_CALLS; i++)
		cl_buf_free(&s->tool[i].args);
}

void cli_tools_reset_answer(struct cl_slot *s)
{
	s->tool_answer = false;
	for (uint32_t i = 0; i < s->n_tool_calls && i < CL_ENGINE_TOOL_CALLS; i++) {
		s->tool[i].id[0] = s->tool[i].name[0] = '\0';
		cl_buf_reset(&s->tool[i].args);
	}
	s->n_tool_calls = 0;
}

/* Copies a raw piece into a fixed field; false when it does not fit whole. */
static bool keep(char *dst, size_t cap, const char *src, size_t len)
{
	if (len >= cap)
		return false;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return true;
}

void cli_tools_on_chunk(struct cl_slot *s, const struct cl_chunk *c)
{
	if (c->has_tool_call)
		s->tool_answer = true;
	/* Only a conversation with the loop keeps the pieces: nothing else reads them. */
	if (!s->w->e->tool_result || !s->body || !s->body->turn || s->answer_cut)
		return;
	if (c->n_tool_calls > CL_CHUNK_TOOLS_MAX) {
		s->answer_cut = true; /* pieces were not kept: the calls cannot be sent back */
		return;
	}
	for (uint32_t i = 0; i < c->n_tool_calls; i++) {
		const struct cl_chunk_tool *t = &c->tools[i];
		/* A piece without an index belongs to the answer's only call so far. */
		int64_t k = t->index >= 0 ? t->index : (s->n_tool_calls ? s->n_tool_calls - 1 : 0);
		if (k >= CL_ENGINE_TOOL_CALLS) {
			s->answer_cut = true;
			return;
		}
		struct cli_tool_call *tc = &s->tool[k];
		while (s->n_tool_calls <= (uint32_t)k) {
			struct cli_tool_call *n = &s->tool[s->n_tool_calls++];
			n->id[0] = n->name[0] = '\0';
			cl_buf_reset(&n->args);
		}
		if ((t->id_len && !keep(tc->id, sizeof(tc->id), t->id, t->id_len)) ||
		    (t->name_len && !keep(tc->name, sizeof(tc->name), t->name, t->name_len)) ||
		    (t->args_len && cl_buf_append(&tc->args, t->args, t->args_len) != 0)) {
			s->answer_cut = true;
			return;
		}
	}
}

int cli_tools_add_history(struct cl_slot *s)
{
	const struct cl_engine *e = s->w->e;
	struct cl_buf *h = &s->conv_hist;
	size_t mark = h->len;
	int rc = cl_buf_puts(h, "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[");
	char id[128];
	for (uint32_t i = 0; !rc && i < s->n_tool_calls; i++) {
		const struct cli_tool_call *tc = &s->tool[i];
		if (!tc->name[0]) {
			rc = CL_EPROTO; /* a call without a function name cannot be sent back */
			break;
		}
		/* A server that sent no id gets one of ours, the same in both messages. */
		if (tc->id[0])
			snprintf(id, sizeof(id), "%s", tc->id);
		else
			snprintf(id, sizeof(id), "call_chatload_%u", i);
		rc = cl_buf_printf(h,
				   "%s{\"id\":\"%s\",\"type\":\"function\",\"function\":{\"name\":"
				   "\"%s\",\"arguments\":\"",
				   i ? "," : "", id, tc->name);
		rc = rc ? rc : cl_buf_append(h, tc->args.data ? tc->args.data : "", tc->args.len);
		rc = rc ? rc : cl_buf_puts(h, "\"}}");
	}
	rc = rc ? rc : cl_buf_puts(h, "]},");
	for (uint32_t i = 0; !rc && i < s->n_tool_calls; i++) {
		const struct cli_tool_call *tc = &s->tool[i];
		if (tc->id[0])
			snprintf(id, sizeof(id), "%s", tc->id);
		else
			snprintf(id, sizeof(id), "call_chatload_%u", i);
		rc = cl_buf_printf(h, "{\"role\":\"tool\",\"tool_call_id\":\"%s\",\"content\":\"",
				   id);
		rc = rc ? rc : cl_buf_append(h, e->tool_result, e->tool_result_len);
		rc = rc ? rc : cl_buf_puts(h, "\"},");
	}
	if (rc) {
		h->len = mark;
		if (h->data)
			h->data[mark] = '\0';
	}
	return rc;
}
