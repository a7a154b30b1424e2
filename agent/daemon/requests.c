/* The session's side of output.requests: the engine's per-request records go back in
 * REQUESTS messages on the channel a generate job's ANSWERS use (a benchmark has none), so
 * they never wait behind a held POLL or delay an interval REPORT.  One message is in flight
 * at a time; while it is, the engine's ring fills and then drops (and counts) new records,
 * so a coordinator that falls behind costs the agent neither memory nor pace. */

#include "agent/daemon/requests.h"

#include "chatload/assert.h"
#include "chatload/log.h"

#include <stdlib.h>

/* One REQUESTS carries at most this many records (~200 bytes each encoded): ~0.8 MB. */
#define REQUESTS_MAX CL_WIRE_MAX_ITEMS

bool cl_requests_next(struct session *s)
{
	if (s->req_pending)
		return true;
	if (!s->engine || !cl_engine_records_waiting(s->engine))
		return false;
	struct cl_req_record *r = malloc(REQUESTS_MAX * sizeof(*r));
	if (!r)
		return false;
	uint64_t dropped = 0;
	size_t n = cl_engine_take_records(s->engine, r, REQUESTS_MAX, &dropped);
	CL_ASSERT(n <= REQUESTS_MAX);
	struct cl_msg m = { .type = CL_MSG_REQUESTS, .run = s->run, .agent = s->agent_id };
	m.seq = ++s->seq;
	m.requests = (struct cl_msg_requests){
		.records = r, .n_records = n, .dropped = dropped, .t_send_us = cl_mono_us()
	};
	struct cl_err err = { 0 };
	msgpack_sbuffer_init(&s->req_buf);
	if (cl_wire_encode(&m, &s->req_buf, &err) != 0) {
		/* Not expected: the engine keeps every field within its cap. */
		char msg[700];
		CL_ERROR("cannot encode %zu request records (dropped): %s", n,
			 cl_err_format(&err, msg, sizeof(msg)));
		msgpack_sbuffer_destroy(&s->req_buf);
	} else {
		s->req_pending = true;
		s->req_seq = m.seq;
		s->req_count = n;
	}
	free(r);
	return s->req_pending;
}

void cl_requests_answered(struct session *s)
{
	if (!s->req_pending)
		return;
	s->req_sent += s->req_count;
	msgpack_sbuffer_destroy(&s->req_buf);
	s->req_pending = false;
	s->req_count = 0;
}

size_t cl_requests_outstanding(struct session *s)
{
	return (s->req_pending ? s->req_count : 0) +
	       (s->engine ? cl_engine_records_waiting(s->engine) : 0);
}

void cl_requests_clear(struct session *s)
{
	if (s->req_pending)
		msgpack_sbuffer_destroy(&s->req_buf);
	s->req_pending = false;
	s->req_count = 0;
}
