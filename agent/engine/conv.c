/* Which body a request sends: the next in order, the next turn of a multi-turn conversation
 * (with the history of real answers it carries, the think time before it, TTFT by turn
 * index), or the one a replayed trace's arrival chose (load/trace.c). */
#include "internal.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "chatload/rng.h"
#include "chatload/salt.h"

#include <stdlib.h>
#include <string.h>

int cli_conv_index(struct cl_engine *e)
{
	const struct cl_workload_plan *w = &e->workload;
	size_t n = 0;
	for (size_t i = 0; i < w->n_bodies; i++)
		n += w->bodies[i].turn == 1;
	if (!n)
		return 0;
	if (!(e->conv_starts = calloc(n, sizeof(*e->conv_starts))))
		return CL_ENOMEM;
	/* The agent's first conversation is the first one at or after its first body, so the
	 * coordinator's stagger between agents carries over to conversations. */
	e->first_conv = 0;
	bool first_set = false;
	for (size_t i = 0; i < w->n_bodies; i++) {
		if (w->bodies[i].turn != 1)
			continue;
		if (!first_set && i >= w->first_body) {
			e->first_conv = e->n_convs;
			first_set = true;
		}
		e->conv_starts[e->n_convs++] = i;
	}
	/* The conversations that start inside the agent's share of the bodies. */
	size_t end =
	    w->share > w->n_bodies - w->first_body ? w->n_bodies : w->first_body + w->share;
	e->conv_share = 0;
	for (size_t c = 0; w->share && c < e->n_convs; c++)
		e->conv_share += e->conv_starts[c] >= w->first_body && e->conv_starts[c] < end;
	if (!e->conv_share)
		e->conv_share = e->n_convs;
	return 0;
}

/* Whether body i is followed by the next turn of its conversation. */
static bool has_next_turn(const struct cl_workload_plan *w, size_t i)
{
	return i + 1 < w->n_bodies && w->bodies[i].turn &&
	       w->bodies[i + 1].turn == w->bodies[i].turn + 1;
}

/* The turns of its conversation that follow body i. */
static uint64_t turns_after(const struct cl_workload_plan *w, size_t i)
{
	uint64_t n = 0;
	while (has_next_turn(w, i++))
		n++;
	return n;
}

void cli_conv_end(struct cl_worker *w, struct cl_slot *s)
{
	if (!s->conv_live)
		return;
	s->conv_live = false;
	uint64_t n = turns_after(&w->e->workload, s->conv_body);
	CL_ASSERT(w->conv_owed >= n);
	w->conv_owed -= n;
}

bool cli_conv_may_begin(const struct cl_worker *w, int64_t t_us)
{
	const struct cl_stage_run *st = &w->st;
	/* A request intended before the window (the ramp) takes nothing of the budget. */
	if (!w->e->n_convs || !st->by_requests || t_us < st->win_start_us)
		return true;
	return st->to_start > w->conv_owed;
}

/* Whether the k-th body (or conversation) the agent takes was sent before in this run: past
 * the agent's share of share of them the agent wraps into bodies sent already (its own, or
 * those of the agent whose share follows), and with per_stage below what an earlier stage
 * took. A body taken once by each of two agents whose shares were overrun counts once per
 * overrun, which is the count of requests the server may have seen. */
static bool is_repeat(const struct cl_engine *e, uint64_t k, size_t share)
{
	return k >= share || k < e->taken_before;
}

/*
 * A synthetic workload without a pool (plan.retag): the k-th body the agent takes, past its
 * share, goes out with the run's salt replaced by a tag of its own, so it is a prompt no
 * request of the run sent (and no cache holds: the tag opens the prompt).  Writes into the
 * slot's conv_req (unused without conversations).  False when the body does not carry the
 * salt or does not fit: it is then sent as it is, and counted repeated.
 */
static bool retag(struct cl_slot *s, const struct cl_workload_plan *wl,
		  const struct cl_request_body *b, uint64_t k)
{
	char needle[CL_SALT_PREFIX_LEN + 1];
	if (!cl_salt_prefix(wl->retag, needle, sizeof(needle)))
		return false;
	const char *at = memmem(b->json, b->len, needle, CL_SALT_MARK_LEN);
	if (!at)
		return false;
	cl_buf_reset(&s->conv_req);
	if (cl_buf_append(&s->conv_req, b->json, b->len))
		return false;
	uint64_t x = 0xcbf29ce484222325ULL;
	for (int i = 1; i <= CL_SALT_DIGITS; i++)
		x = (x ^ (unsigned char)needle[i]) * 0x100000001b3ULL;
	x ^= (uint64_t)wl->first_body * 0x9e3779b97f4a7c15ULL ^ k * 0xbf58476d1ce4e5b9ULL;
	char tag[CL_SALT_TAG_SIZE];
	cl_salt_from_u64(cl_splitmix64(&x), tag);
	memcpy(s->conv_req.data + (at - b->json) + 1, tag, CL_SALT_DIGITS);
	s->post = s->conv_req.data;
	s->post_len = s->conv_req.len;
	return true;
}

/* A round of the agentic loop: body b with the history in place of its user message (which
 * the history holds, before the calls and their results); the history's last ',' dropped. */
static const struct cl_request_body *tool_round(struct cl_slot *s, const struct cl_request_body *b)
{
	s->answer_cut = false;
	cl_buf_reset(&s->conv_answer);
	cli_tools_reset_answer(s);
	CL_ASSERT(s->conv_hist.len > 0 && s->conv_hist.data[s->conv_hist.len - 1] == ',');
	cl_buf_reset(&s->conv_req);
	if (cl_buf_append(&s->conv_req, b->json, b->hist_at) ||
	    cl_buf_append(&s->conv_req, s->conv_hist.data, s->conv_hist.len - 1) ||
	    cl_buf_append(&s->conv_req, b->json + b->hist_at + b->user_len,
			  b->len - b->hist_at - b->user_len))
		return NULL;
	s->post = s->conv_req.data;
	s->post_len = s->conv_req.len;
	return b;
}

const struct cl_request_body *cli_conv_pick(struct cl_worker *w, struct cl_slot *s)
{
	struct cl_engine *e = w->e;
	const struct cl_workload_plan *wl = &e->workload;
	const struct cl_request_body *b;
	if (w->pick) {
		b = w->pick; /* a trace's request, chosen by its start time */
		w->pick = NULL;
		s->repeated = false;
	} else if (s->tool_next) {
		/* The same turn again after its tool results (the agentic loop): the history
		 * holds the turn's user message, the calls and their results. */
		s->tool_next = false;
		s->conv_req_no++;
		return tool_round(s, &wl->bodies[s->conv_body]);
	} else if (s->conv_next) {
		/* The next turn of the slot's conversation (its history already holds the
		 * previous turns and their answers). */
		s->conv_next = false;
		s->conv_req_no++;
		s->tool_rounds = 0;
		s->user_in_hist = false;
		b = &wl->bodies[++s->conv_body];
		if (s->conv_live) {
			CL_ASSERT(w->conv_owed > 0);
			w->conv_owed--; /* the turn owed starts */
		}
	} else if (e->n_convs) {
		uint64_t k = atomic_fetch_add_explicit(&e->next_body, 1, memory_order_relaxed);
		cli_conv_end(w, s); /* ended already: a slot carries one conversation at a time */
		s->conv_body = e->conv_starts[(e->first_conv + k) % e->n_convs];
		s->conv_live = true;
		w->conv_owed += turns_after(wl, s->conv_body);
		s->repeated = is_repeat(e, k, e->conv_share);
		cl_buf_reset(&s->conv_hist);
		s->conv_req_no = 1;
		s->tool_rounds = 0;
		s->user_in_hist = false;
		b = &wl->bodies[s->conv_body];
	} else {
		uint64_t k = atomic_fetch_add_explicit(&e->next_body, 1, memory_order_relaxed);
		b = &wl->bodies[(wl->first_body + k) % wl->n_bodies];
		s->repeated = is_repeat(e, k, wl->share ? wl->share : wl->n_bodies);
		s->post = b->json;
		s->post_len = b->len;
		/* Past its share, a pool-less synthetic workload sends a new prompt: the same
		 * words behind a tag of the request's own (per_stage's repeats stay repeats). */
		if (s->repeated && wl->retag[0] && k >= (wl->share ? wl->share : wl->n_bodies) &&
		    retag(s, wl, b, k))
			s->repeated = false;
		s->answer_cut = false;
		cl_buf_reset(&s->conv_answer);
		cli_tools_reset_answer(s);
		return b;
	}
	s->post = b->json;
	s->post_len = b->len;
	s->answer_cut = false;
	cl_buf_reset(&s->conv_answer);
	cli_tools_reset_answer(s);
	if (!b->turn || !s->conv_hist.len)
		return b;
	/* The body with the history at its place: before the turn's own user message. */
	cl_buf_reset(&s->conv_req);
	if (cl_buf_append(&s->conv_req, b->json, b->hist_at) ||
	    cl_buf_append(&s->conv_req, s->conv_hist.data, s->conv_hist.len) ||
	    cl_buf_append(&s->conv_req, b->json + b->hist_at, b->len - b->hist_at))
		return NULL;
	s->post = s->conv_req.data;
	s->post_len = s->conv_req.len;
	return b;
}

void cli_conv_on_content(struct cl_slot *s, const char *text, size_t len)
{
	if (!s->body || !s->body->turn || s->answer_cut)
		return;
	/* The text is still JSON-escaped and validated by the chunk decoder, so it goes into
	 * the history's string as it is. */
	if (cl_buf_append(&s->conv_answer, text, len) != 0)
		s->answer_cut = true;
}

/*
 * Appends the turn just answered to the history: its user message (unless an earlier round
 * of the agentic loop put it there), then the answer: its text, or with tool_calls the
 * assistant's calls and the tool results (tools.c).  Chat (and Responses, whose input items
 * are the same messages): the user message object, a comma, then {"role":"assistant",
 * "content":"<answer>"} and a comma.  Completions, whose prompt is one string: the turn's
 * text and the answer inside that string, each followed by a blank line.  The answer is
 * still JSON-escaped, as the decoder validated it.
 */
static int add_to_history(struct cl_slot *s, bool tool_calls)
{
	static const char chat_head[] = "{\"role\":\"assistant\",\"content\":\"",
			  chat_tail[] = "\"},", gap[] = "\\n\\n";
	const struct cl_request_body *b = s->body;
	bool prompt = s->w->e->http.api == CL_API_COMPLETIONS;
	const char *mid = prompt ? gap : ",", *head = prompt ? "" : chat_head,
		   *tail = prompt ? gap : chat_tail;
	struct cl_buf *h = &s->conv_hist;
	size_t mark = h->len;
	int rc = 0;
	if (!s->user_in_hist) {
		rc = cl_buf_append(h, b->json + b->hist_at, b->user_len);
		rc = rc ? rc : cl_buf_append(h, mid, strlen(mid));
	}
	if (tool_calls) {
		rc = rc ? rc : cli_tools_add_history(s);
	} else {
		rc = rc ? rc : cl_buf_append(h, head, strlen(head));
		rc = rc ? rc
			: cl_buf_append(h, s->conv_answer.data ? s->conv_answer.data : "",
					s->conv_answer.len);
		rc = rc ? rc : cl_buf_append(h, tail, strlen(tail));
	}
	if (rc) {
		h->len = mark;
		if (h->data)
			h->data[mark] = '\0';
	}
	return rc;
}

/* cli_conv_follow's decision and, when the conversation goes on, its parking. */
static bool follow(struct cl_worker *w, struct cl_slot *s, bool completed, int64_t now_us)
{
	const struct cl_stage_run *st = &w->st;
	const struct cl_workload_plan *wl = &w->e->workload;
	s->conv_next = s->tool_next = false;
	if (!completed || !s->body || !s->body->turn || s->answer_cut || !st->active ||
	    st->stopping)
		return false;
	/* The agentic loop: an answer that is a tool call gets its results and the same
	 * question again, up to max_rounds times a turn; past them the calls and results stay
	 * in the history and the next turn follows them. */
	bool calls = s->tool_answer && s->n_tool_calls && w->e->tool_result;
	bool again = calls && s->tool_rounds < wl->tool_max_rounds;
	if ((!again && !has_next_turn(wl, s->conv_body)) || add_to_history(s, calls) != 0)
		return false;
	/* The conversation keeps its slot through the think time: parked like a backoff, it
	 * holds its user's place in the closed loop and is woken by the same heap.  A tool
	 * result is there at once: no user thinks between the rounds. */
	if (again) {
		s->tool_next = true;
		s->tool_rounds++;
		s->user_in_hist = true;
	} else {
		s->conv_next = true;
	}
	s->parked = true;
	s->no_answer_streak = 0;
	cl_park_push(&w->parked, s->index, now_us + (again ? 0 : wl->think_time_us));
	return true;
}

bool cli_conv_follow(struct cl_worker *w, struct cl_slot *s, bool completed, int64_t now_us)
{
	if (follow(w, s, completed, now_us))
		return true;
	cli_conv_end(w, s); /* the turns it had left will not be sent */
	return false;
}

void cli_conv_record(struct cl_metrics *m, const struct cl_slot *s, int64_t prompt_tokens)
{
	if (!s->body || !s->body->turn)
		return;
	/* The request's place in its conversation: its turn, counting the rounds of the
	 * agentic loop as turns of their own (the prompt grows with each). */
	uint32_t n = s->conv_req_no ? s->conv_req_no : s->body->turn;
	uint32_t t = n < CL_TURNS_MAX ? n - 1 : CL_TURNS_MAX - 1;
	m->ctr[CL_CTR_TURN1_COMPLETED + t]++;
	if (prompt_tokens > 0)
		m->ctr[CL_CTR_TURN1_PROMPT_TOKENS + t] += (uint64_t)prompt_tokens;
	if (s->first_us)
		cl_hist_record(&m->lat[CL_LAT_TTFT_TURN1 + t], s->first_us - s->handed_us);
}
