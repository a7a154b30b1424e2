/* Per-request records for output.requests: each finished request of a stage becomes one
 * struct cl_req_record in a bounded ring the agent drains into REQUESTS messages
 * (docs/engine.md, "Request records"). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int cli_records_init(struct cl_engine *e, uint32_t cap)
{
	e->rec_ring = calloc(cap, sizeof(*e->rec_ring));
	if (!e->rec_ring)
		return CL_ENOMEM;
	if (pthread_mutex_init(&e->rec_mu, NULL) != 0) {
		free(e->rec_ring);
		e->rec_ring = NULL;
		return CL_ESYS;
	}
	e->rec_cap = cap;
	return 0;
}

void cli_records_destroy(struct cl_engine *e)
{
	if (!e->rec_ring)
		return;
	pthread_mutex_destroy(&e->rec_mu);
	free(e->rec_ring);
	e->rec_ring = NULL;
}

/* A duration from start to t, -1 when t was never reached. */
static int64_t since(int64_t start_us, int64_t t_us)
{
	return t_us && start_us && t_us >= start_us ? t_us - start_us : -1;
}

void cli_records_push(struct cl_worker *w, const struct cl_slot *s, const char *status,
		      int64_t end_us, int64_t tokens, int64_t rtokens, const char *msg,
		      size_t msg_len)
{
	struct cl_engine *e = w->e;
	if (!e->rec_ring || !atomic_load_explicit(&e->rec_on, memory_order_relaxed))
		return;
	pthread_mutex_lock(&e->rec_mu);
	if (e->rec_len == e->rec_cap) {
		/* The agent has not drained the ring: the coordinator is behind.  Dropping and
		 * counting keeps this worker's memory and pace what they were. */
		e->rec_dropped++;
		pthread_mutex_unlock(&e->rec_mu);
		return;
	}
	struct cl_req_record *r = &e->rec_ring[(e->rec_head + e->rec_len) % e->rec_cap];
	e->rec_len++;
	r->stage = w->st.plan.index;
	/* reqid is the header line "X-Request-Id: <id>"; the id is what the server logs. */
	const char *id = strchr(s->reqid, ':');
	id = id ? id + 2 : s->reqid;
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->in_window = s->in_window;
	r->start_us = s->handed_us;
	r->ttft_us = since(s->handed_us, s->first_us);
	r->ttfc_us = since(s->handed_us, s->first_content_us);
	r->e2e_us = since(s->handed_us, end_us);
	r->chunks = s->n_tok_chunks;
	r->last_token_us = since(s->handed_us, s->last_us);
	r->http_status = s->http_status > 0 ? (uint32_t)s->http_status : 0;
	r->prompt_tokens = s->usage_pt > 0 ? (uint64_t)s->usage_pt : 0;
	r->output_tokens = tokens > 0 ? (uint64_t)tokens : 0;
	r->reasoning_tokens = rtokens > 0 ? (uint64_t)rtokens : 0;
	r->sent_us = since(s->handed_us, s->sent_us);
	r->ttfb_us = since(s->handed_us, s->headers_us);
	r->conn = s->ct;
	r->connects = s->connects > 0 ? (uint32_t)s->connects : 0;
	snprintf(r->status, sizeof(r->status), "%s", status);
	size_t n = msg ? (msg_len < CL_WIRE_MAX_REQ_ERR ? msg_len : CL_WIRE_MAX_REQ_ERR) : 0;
	/* A message is text for the wire: no NUL inside it (it would end the C string). */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		r->error[k++] = msg[i] ? msg[i] : ' ';
	r->error[k] = '\0';
	pthread_mutex_unlock(&e->rec_mu);
}

void cl_engine_record_requests(struct cl_engine *e, bool on)
{
	if (e->rec_ring)
		atomic_store(&e->rec_on, on);
}

size_t cl_engine_take_records(struct cl_engine *e, struct cl_req_record *out, size_t max,
			      uint64_t *dropped)
{
	size_t n = 0;
	if (!e->rec_ring) {
		*dropped = 0;
		return 0;
	}
	pthread_mutex_lock(&e->rec_mu);
	while (n < max && e->rec_len) {
		out[n++] = e->rec_ring[e->rec_head];
		e->rec_head = (e->rec_head + 1) % e->rec_cap;
		e->rec_len--;
	}
	*dropped = e->rec_dropped;
	pthread_mutex_unlock(&e->rec_mu);
	return n;
}

size_t cl_engine_records_waiting(struct cl_engine *e)
{
	if (!e->rec_ring)
		return 0;
	pthread_mutex_lock(&e->rec_mu);
	size_t n = e->rec_len;
	pthread_mutex_unlock(&e->rec_mu);
	return n;
}
