/* Reports waiting for the coordinator's ACK, oldest first: encoded once when queued, so a
 * resend after a lost ACK carries the same seq and is deduplicated by the coordinator. */

#include "agent/daemon/report_queue.h"

#include "chatload/assert.h"
#include "chatload/log.h"

#include <stdio.h>

/* The ring's bounds, which every index into q relies on. */
static void check_bounds(const struct session *s)
{
	CL_ASSERT(s->q_head < MAX_PENDING_REPORTS && s->q_len <= MAX_PENDING_REPORTS);
}

void cl_report_queue_push(struct session *s, struct cl_msg_report *rep, const char *what)
{
	check_bounds(s);
	if (s->q_len == MAX_PENDING_REPORTS) {
		CL_ERROR("report queue full: dropping %s report (coordinator unreachable?)", what);
		return;
	}
	struct cl_msg m = { .type = CL_MSG_REPORT, .run = s->run, .agent = s->agent_id };
	m.report = *rep;
	m.seq = ++s->seq;
	struct pending_report *p = &s->q[(s->q_head + s->q_len) % MAX_PENDING_REPORTS];
	msgpack_sbuffer_init(&p->buf);
	struct cl_err err = { 0 };
	if (cl_wire_encode_report(&m, &p->buf, &p->t_send_at, &err) != 0) {
		char msg[600];
		CL_ERROR("cannot encode %s report: %s", what,
			 cl_err_format(&err, msg, sizeof(msg)));
		msgpack_sbuffer_destroy(&p->buf);
		return;
	}
	p->seq = m.seq;
	/* An interval report waits its share of the spread; the others go at once. */
	p->not_before_us =
	    rep->kind == CL_REPORT_INTERVAL
		? cl_mono_us() + cl_wire_report_spread_us(s->report_interval_us, s->agent_id)
		: 0;
	snprintf(p->what, sizeof(p->what), "%s", what);
	s->q_len++;
}

struct pending_report *cl_report_queue_head(struct session *s)
{
	check_bounds(s);
	return s->q_len ? &s->q[s->q_head] : NULL;
}

int cl_report_queue_answered(struct session *s, const struct cl_msg *reply, struct cl_err *err)
{
	check_bounds(s);
	struct pending_report *p = &s->q[s->q_head];
	int rc = 0;
	if (!s->q_len)
		return cl_err_set(err, CL_ESTATE, "a reply to a report with none queued");
	if (reply->type == CL_MSG_REFUSE) {
		rc = cl_err_set(err, CL_EREFUSED, "coordinator refused %s report: %s", p->what,
				reply->refuse.reason);
	} else if (reply->type != CL_MSG_ACK || reply->seq != p->seq) {
		rc = cl_err_set(err, CL_EPROTO, "expected ACK %llu for %s report, got %s %llu",
				(unsigned long long)p->seq, p->what,
				cl_msg_type_name(reply->type) ? cl_msg_type_name(reply->type) : "?",
				(unsigned long long)reply->seq);
	}
	if (rc == 0 || rc == CL_EREFUSED) {
		msgpack_sbuffer_destroy(&p->buf);
		s->q_head = (s->q_head + 1) % MAX_PENDING_REPORTS;
		s->q_len--;
	}
	return rc;
}

void cl_report_queue_clear(struct session *s)
{
	while (s->q_len) {
		msgpack_sbuffer_destroy(&s->q[s->q_head].buf);
		s->q_head = (s->q_head + 1) % MAX_PENDING_REPORTS;
		s->q_len--;
	}
}
