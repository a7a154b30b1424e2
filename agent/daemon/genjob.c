/* The session's side of a generate job: GENERATE starts the runner (agent/generate/), LEASE
 * feeds it, and its finished answers go back in ANSWERS messages on a channel of their own,
 * so they never wait behind a held POLL or delay an interval REPORT. */

#include "agent/daemon/genjob.h"
#include "agent/daemon/allow.h"
#include "agent/daemon/wake.h"

#include "chatload/assert.h"
#include "chatload/log.h"

#include <stdlib.h>
#include <string.h>

/* One ANSWERS carries at most this many answers and about this many bytes of bodies: a
 * message the coordinator handles in a few ms, far below CL_WIRE_MAX_MSG. */
#define ANSWERS_MAX       1024
#define ANSWERS_MAX_BYTES (8u << 20)

void cl_genjob_start(struct session *s, struct cl_msg_cmd *c)
{
	const struct cl_cmd_generate *g = &c->generate;
	if (s->gen) {
		/* The job again: the coordinator has given this agent a new part of the rate (an
		 * agent was lost, and the others take its share).  Its leases and streams stay. */
		cl_gen_runner_set_rate(s->gen, g->rate_per_s);
		CL_INFO("generate job: %g tries a second from now on", g->rate_per_s);
		return;
	}
	char why[600];
	if (!cl_agent_plan_allowed(s->o, &g->target, why, sizeof(why))) {
		cl_session_fail(s, "%s", why);
		return;
	}
	struct cl_gen_runner_cfg cfg = {
		.target = &g->target,
		.allow = s->o->allow,
		.concurrency = g->concurrency,
		.max_attempts = g->max_attempts,
		.request_timeout_us = g->request_timeout_us,
		.backoff_initial_us = g->backoff_initial_us,
		.backoff_max_us = g->backoff_max_us,
		.rate_per_s = g->rate_per_s,
		.seed = (uint64_t)s->agent_id * 7919u + (uint64_t)cl_mono_us(),
		.notify = cl_wake_poke,
	};
	struct cl_err err = { 0 };
	if (cl_gen_runner_start(&cfg, &s->gen, &err) != 0) {
		char msg[700];
		cl_session_fail(s, "cannot start the generate job: %s",
				cl_err_format(&err, msg, sizeof(msg)));
		return;
	}
	CL_INFO("generate job: %u streams, %u attempts a request", g->concurrency, g->max_attempts);
	cl_session_set_state(s, CL_AGENT_RUNNING);
}

void cl_genjob_lease(struct session *s, struct cl_msg_cmd *c)
{
	if (!s->gen) {
		cl_session_fail(s, "LEASE without a generate job (no GENERATE before it)");
		return;
	}
	if (cl_gen_runner_add(s->gen, c->lease.items, c->lease.n_items) != 0)
		cl_session_fail(s, "out of memory taking %zu leased requests", c->lease.n_items);
}

bool cl_genjob_next_answers(struct session *s)
{
	if (s->ans_pending)
		return true;
	if (!s->gen)
		return false;
	struct cl_gen_answer *a = calloc(ANSWERS_MAX, sizeof(*a));
	if (!a)
		return false;
	size_t n = cl_gen_runner_take(s->gen, a, ANSWERS_MAX, ANSWERS_MAX_BYTES);
	CL_ASSERT(n <= ANSWERS_MAX);
	if (n == 0) {
		free(a);
		return false;
	}
	struct cl_msg m = { .type = CL_MSG_ANSWERS, .run = s->run, .agent = s->agent_id };
	m.seq = ++s->seq;
	m.answers =
	    (struct cl_msg_answers){ .answers = a, .n_answers = n, .t_send_us = cl_mono_us() };
	struct cl_err err = { 0 };
	msgpack_sbuffer_init(&s->ans_buf);
	if (cl_wire_encode(&m, &s->ans_buf, &err) != 0) {
		/* Not expected (the runner keeps every field within its cap); the requests
		 * stay leased and are re-issued if this agent is lost. */
		char msg[700];
		CL_ERROR("cannot encode %zu answers: %s", n, cl_err_format(&err, msg, sizeof(msg)));
		msgpack_sbuffer_destroy(&s->ans_buf);
	} else {
		s->ans_pending = true;
		s->ans_seq = m.seq;
		s->ans_count = n;
	}
	for (size_t i = 0; i < n; i++)
		cl_gen_answer_free(&a[i]);
	free(a);
	return s->ans_pending;
}

void cl_genjob_answered(struct session *s)
{
	if (!s->ans_pending)
		return;
	/* what was sent is what is acknowledged: one message of 1 to ANSWERS_MAX answers */
	CL_ASSERT(s->ans_count >= 1 && s->ans_count <= ANSWERS_MAX);
	s->ans_sent += s->ans_count;
	msgpack_sbuffer_destroy(&s->ans_buf);
	s->ans_pending = false;
	s->ans_count = 0;
}

void cl_genjob_stop(struct session *s)
{
	if (s->gen)
		CL_INFO("generate job stopped: %llu answers acknowledged",
			(unsigned long long)s->ans_sent);
	cl_gen_runner_stop(s->gen);
	s->gen = NULL;
	if (s->ans_pending)
		msgpack_sbuffer_destroy(&s->ans_buf);
	s->ans_pending = false;
}
