/* Reports waiting for the coordinator's ACK, oldest first: encoded once when queued, so a
 * resend after a lost ACK carries the same seq and is deduplicated by the coordinator. */
#include "session.h"

#include "chatload/log.h"

#include <stdio.h>

void cl_report_queue_push(struct session *s, struct cl_msg_report *rep, const char *what)
{
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
	if (cl_wire_encode(&m, &p->buf, &err) != 0) {
		char msg[600];
		CL_ERROR("cannot encode %s report: %s", what,
			 cl_err_format(&err, msg, sizeof(msg)));
		msgpack_sbuffer_destroy(&p->buf);
		return;
	}
	p->seq = m.seq;
	snprintf(p->what, sizeof(p->what), "%s", what);
	s->q_len++;
}

int cl_report_queue_flush_one(struct session *s, struct cl_err *err)
{
	struct pending_report *p = &s->q[s->q_head];
	struct cl_msg reply = { 0 };
	int64_t t_send, t_recv;
	int rc = cl_session_send(s, p->buf.data, p->buf.size, &reply, &t_send, &t_recv, err);
	if (rc != 0)
		return rc;
	if (reply.type == CL_MSG_REFUSE) {
		rc = cl_err_set(err, CL_EREFUSED, "coordinator refused %s report: %s", p->what,
				reply.refuse.reason);
	} else if (reply.type != CL_MSG_ACK || reply.seq != p->seq) {
		rc = cl_err_set(err, CL_EPROTO, "expected ACK %llu for %s report, got %s %llu",
				(unsigned long long)p->seq, p->what,
				cl_msg_type_name(reply.type) ? cl_msg_type_name(reply.type) : "?",
				(unsigned long long)reply.seq);
	}
	cl_msg_free(&reply);
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
