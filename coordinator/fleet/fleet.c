/* Agent sessions on the coordinator: HELLO/WELCOME, POLL/CMD (long polls), REPORT/ACK,
 * liveness.
 *
 * The REP socket is opened raw: a received request keeps its routing header (the pipe and
 * the request id), and a reply is any later message sent with that header.  That is what
 * lets this one thread hold a POLL while it answers others, without a context and an aio per
 * request in flight and the hand-offs between nng's threads and this one they would need. */
#include "coordinator/fleet/fleet.h"

#include "coordinator/fleet/internal.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "chatload/log.h"
#include "chatload/metrics.h"
#include "chatload/transport.h"

#include <nng/protocol/reqrep0/rep.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

const char *cl_fleet_liveness_name(enum cl_fleet_liveness l)
{
	switch (l) {
	case CL_LIVE_OK:
		return "ok";
	case CL_LIVE_MISSING:
		return "missing";
	case CL_LIVE_LOST:
		return "lost";
	}
	return "?";
}

int cl_fleet_open(struct cl_fleet *f, const char *run, const char *token, uint32_t max_agents,
		  int64_t report_interval_us, struct cl_err *err)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->run, sizeof(f->run), "%s", run);
	snprintf(f->token, sizeof(f->token), "%s", token ? token : "");
	f->max_agents = max_agents ? max_agents : 1;
	if (f->max_agents > CL_FLEET_MAX_AGENTS)
		f->max_agents = CL_FLEET_MAX_AGENTS;
	f->report_interval_us = report_interval_us;
	f->next_cmd_seq = 1;
	f->agents = calloc(f->max_agents, sizeof(*f->agents));
	if (!f->agents || cl_hist_init(&f->report_lag[0], cl_metrics_lat_cfg()) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory for the agent table");
	if (cl_hist_init(&f->report_lag[1], cl_metrics_lat_cfg()) != 0) {
		cl_hist_destroy(&f->report_lag[0]);
		return cl_err_set(err, CL_ENOMEM, "out of memory for the agent table");
	}
	f->report_lag_ready = true;
	int rc = nng_rep0_open_raw(&f->sock);
	if (rc != 0)
		return cl_err_set(err, CL_ESYS, "cannot open the control socket: %s",
				  nng_strerror(rc));
	f->open = true;
	nng_socket_set_size(f->sock, NNG_OPT_RECVMAXSZ, CL_WIRE_MAX_MSG);
	nng_socket_set_ms(f->sock, NNG_OPT_SENDTIMEO, 1000);
	if ((rc = cli_fleet_peers_open(f->sock, &f->peers)) != 0)
		return cl_err_set(err, rc, "cannot watch the control socket's connections");
	if ((rc = cli_fleet_watch_start(&f->watch)) != 0)
		return cl_err_set(err, rc, "cannot start the coordinator's stall watch");
	return 0;
}

int cl_fleet_listen(struct cl_fleet *f, const char *url, const struct cl_tls_opts *tls,
		    bool insecure, struct cl_err *err)
{
	nng_listener l;
	int rc = cl_transport_listen(f->sock, url, tls, insecure, &l, err);
	if (rc == 0 && strncmp(url, "tls+", 4) == 0 && f->n_tls < CL_FLEET_MAX_LISTENERS) {
		f->tls[f->n_tls].l = l;
		snprintf(f->tls[f->n_tls].url, sizeof(f->tls[f->n_tls].url), "%s", url);
		f->n_tls++;
	}
	return rc;
}

/* The address book of a socket whose close was abandoned: kept, and reachable (not a leak). */
static struct cli_fleet_peers *abandoned_peers;

static void release_held(struct cl_fleet *f, struct cl_fleet_agent *a);

/* One kind of report's lag, "N kind p50 / p99 / max ms"; nothing when there were none. */
static int lag_text(const struct cl_hist *h, const char *kind, char *buf, size_t n)
{
	if (!cl_hist_count(h))
		return 0;
	return snprintf(buf, n, "%llu %s %.1f / %.1f / %.1f ms",
			(unsigned long long)cl_hist_count(h), kind, cl_hist_percentile(h, 50) / 1e3,
			cl_hist_percentile(h, 99) / 1e3, cl_hist_max(h) / 1e3);
}

/* Logs how long reports took from their agents to the merge (docs/protocol.md, §5); a kind
 * of report that never came is not named (no "0 interval 0.0 / 0.0 / 0.0 ms"). */
static void say_report_lag(const struct cl_fleet *f)
{
	const struct cl_hist *h = f->report_lag;
	char interval[96] = "", other[128] = "";
	lag_text(&h[0], "interval", interval, sizeof(interval));
	lag_text(&h[1], "other (final, probe, warmup)", other, sizeof(other));
	if (!interval[0] && !other[0])
		return;
	CL_INFO("control channel: reports reached the merge after their agent sent them "
		"(p50 / p99 / max): %s%s%s",
		interval, interval[0] && other[0] ? "; " : "", other);
}

void cl_fleet_close(struct cl_fleet *f)
{
	if (!f)
		return;
	while (f->held_first)
		release_held(f, f->held_first);
	if (f->report_lag_ready)
		say_report_lag(f);
	for (int k = 0; f->report_lag_ready && k < 2; k++)
		cl_hist_destroy(&f->report_lag[k]);
	f->report_lag_ready = false;
	bool closed = true;
	if (f->open)
		closed = cl_transport_close(f->sock, "the coordinator's control socket");
	f->open = false;
	if (closed) {
		/* After the close: no pipe callback runs any more. */
		cli_fleet_peers_free(f->peers);
	} else {
		abandoned_peers = f->peers; /* its pipe callbacks may yet run */
	}
	f->peers = NULL;
	cli_fleet_watch_stop(f->watch);
	f->watch = NULL;
	free(f->agents);
	f->agents = NULL;
	f->n = 0;
}

/* Answers the request rq (a received message: its header routes the reply) with m.  peer
 * names it in a failure's message; NULL: looked up then. */
static void reply(struct cl_fleet *f, nng_msg *rq, struct cl_msg *m, const char *peer)
{
	char name[96];
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_err err = { 0 };
	nng_msg *out = NULL;
	int rc;
	if (cl_wire_encode(m, &sb, &err) != 0) {
		char msg[600];
		CL_ERROR("cannot encode %s for %s: %s", cl_msg_type_name(m->type),
			 peer ? peer : cli_fleet_peers_name(f->peers, rq, name, sizeof(name)),
			 cl_err_format(&err, msg, sizeof(msg)));
	} else if ((rc = nng_msg_alloc(&out, 0)) != 0 ||
		   (rc = nng_msg_header_append(out, nng_msg_header(rq), nng_msg_header_len(rq))) !=
		       0 ||
		   (rc = nng_msg_append(out, sb.data, sb.size)) != 0 ||
		   (rc = nng_sendmsg(f->sock, out, 0)) != 0) {
		nng_msg_free(out); /* not sent: still ours */
		CL_WARN("cannot reply to %s: %s",
			peer ? peer : cli_fleet_peers_name(f->peers, rq, name, sizeof(name)),
			nng_strerror(rc));
	}
	msgpack_sbuffer_destroy(&sb);
}

static void refuse(struct cl_fleet *f, nng_msg *rq, const struct cl_msg *req, const char *peer,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void refuse(struct cl_fleet *f, nng_msg *rq, const struct cl_msg *req, const char *peer,
		   const char *fmt, ...)
{
	char reason[CL_WIRE_MAX_REASON];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	CL_WARN("refused %s: %s", peer, reason);
	f->rejected++;
	/* No run id: a refused peer has not earned it. */
	struct cl_msg m = { .type = CL_MSG_REFUSE, .run = "", .seq = req ? req->seq : 0 };
	m.agent = req ? req->agent : 0;
	m.refuse.reason = reason;
	reply(f, rq, &m, peer);
}

/* Fills a->address from a->peer ("10.0.0.5:41234", "[::1]:41234"; nothing for ipc) and
 * a->label from both. */
static void label_agent(struct cl_fleet_agent *a)
{
	const char *p = a->peer;
	size_t n = 0;
	if (p[0] == '[') {
		const char *end = strchr(p, ']');
		if (end) {
			p++;
			n = (size_t)(end - p);
		}
	} else if (strchr(p, ':') && !strchr(p, ' ')) {
		n = (size_t)(strrchr(p, ':') - p);
	}
	snprintf(a->address, sizeof(a->address), "%.*s", (int)(n < 63 ? n : 63), p);
	if (a->address[0])
		snprintf(a->label, sizeof(a->label), "%s at %s", a->host, a->address);
	else
		snprintf(a->label, sizeof(a->label), "%s", a->host);
}

static void on_hello(struct cl_fleet *f, nng_msg *rq, struct cl_msg *req, const char *peer,
		     int64_t t_recv)
{
	struct cl_msg_hello *h = &req->hello;
	if (strcmp(h->version, CHATLOAD_VERSION) != 0) {
		refuse(f, rq, req, peer, "agent version %s does not match coordinator version %s",
		       h->version, CHATLOAD_VERSION);
		return;
	}
	if (!cl_wire_token_equal(f->token, h->token)) {
		refuse(f, rq, req, peer, "bad token");
		return;
	}
	/* A resent HELLO (its WELCOME was lost) must not make a second agent. */
	for (size_t i = 0; i < f->n; i++) {
		struct cl_fleet_agent *a = &f->agents[i];
		if (a->pid == h->pid && strcmp(a->host, h->host) == 0 && !a->gone &&
		    a->live != CL_LIVE_LOST && a->applied_seq == 0) {
			struct cl_msg m = { .type = CL_MSG_WELCOME,
					    .run = a->session,
					    .agent = a->id,
					    .seq = req->seq };
			m.welcome =
			    (struct cl_msg_welcome){ .agent_id = a->id,
						     .report_interval_us = f->report_interval_us,
						     .t_coord_recv_us = t_recv,
						     .t_coord_us = cl_mono_us() };
			a->last_seen_us = t_recv;
			reply(f, rq, &m, peer);
			return;
		}
	}
	/* The same process again after it was declared lost (it stopped its load and began a
	 * new session): the truth, not "run full". */
	for (size_t i = 0; i < f->n; i++) {
		const struct cl_fleet_agent *a = &f->agents[i];
		if (a->pid != h->pid || strcmp(a->host, h->host) != 0 || a->live != CL_LIVE_LOST)
			continue;
		/* The same words every time (no "N s ago"): the agent says a refusal once while
		 * it stays the same. */
		if (a->lost_cause == CL_LOSS_COORDINATOR_STALL)
			refuse(f, rq, req, peer,
			       "agent %u (%s) was declared lost in run '%s' when this coordinator "
			       "could not run for longer than an agent waits for it; a lost agent "
			       "does not rejoin a run: it may join the next one",
			       a->id, a->label, f->run);
		else
			refuse(f, rq, req, peer,
			       "agent %u (%s) was declared lost in run '%s' after %.0f s without a "
			       "word from it; a lost agent does not rejoin a run: it may join the "
			       "next one",
			       a->id, a->label, f->run, CL_WIRE_LOST_US / 1e6);
		return;
	}
	if (f->n >= f->max_agents) {
		size_t lost = 0;
		for (size_t i = 0; i < f->n; i++)
			lost += f->agents[i].live == CL_LIVE_LOST;
		if (lost)
			refuse(f, rq, req, peer,
			       "run '%s' was made for %u agents and does not take new ones (%zu of "
			       "them lost); this agent may join the next run",
			       f->run, f->max_agents, lost);
		else
			refuse(f, rq, req, peer, "run '%s' already has its %u agents", f->run,
			       f->max_agents);
		return;
	}
	struct cl_fleet_agent *a = &f->agents[f->n];
	memset(a, 0, sizeof(*a));
	a->id = (uint32_t)f->n + 1;
	snprintf(a->host, sizeof(a->host), "%s", h->host);
	snprintf(a->peer, sizeof(a->peer), "%s", peer);
	label_agent(a);
	snprintf(a->version, sizeof(a->version), "%s", h->version);
	a->workers = h->workers ? h->workers : 1;
	a->pid = h->pid;
	a->joined_us = a->last_seen_us = t_recv;
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		refuse(f, rq, req, peer, "no entropy for a session id");
		return;
	}
	int off = snprintf(a->session, sizeof(a->session), "%.200s/", f->run);
	for (size_t i = 0; i < sizeof(rnd); i++)
		off += snprintf(a->session + off, sizeof(a->session) - (size_t)off, "%02x", rnd[i]);
	f->n++;
	CL_INFO("agent %u joined: %s (%s), %u workers", a->id, a->label, peer, a->workers);
	struct cl_msg m = {
		.type = CL_MSG_WELCOME, .run = a->session, .agent = a->id, .seq = req->seq
	};
	m.welcome = (struct cl_msg_welcome){ .agent_id = a->id,
					     .report_interval_us = f->report_interval_us,
					     .t_coord_recv_us = t_recv,
					     .t_coord_us = cl_mono_us() };
	reply(f, rq, &m, peer);
}

static struct cl_fleet_agent *find_agent(struct cl_fleet *f, const struct cl_msg *req)
{
	if (!req->run || req->agent == 0 || req->agent > f->n)
		return NULL;
	struct cl_fleet_agent *a = &f->agents[req->agent - 1];
	return cl_wire_token_equal(a->session, req->run) ? a : NULL;
}

/* Holds shorter than this are not worth a wake-up of their own: when the oldest hold ends,
 * those ending within this much after it end with it (the protocol's figure: wire.h). */
#define HOLD_BATCH_US CL_WIRE_POLL_HOLD_BATCH_US

/* Takes a's held POLL off the list and frees it, unanswered. */
static void release_held(struct cl_fleet *f, struct cl_fleet_agent *a)
{
	if (!a->held)
		return;
	if (a->held_prev)
		a->held_prev->held_next = a->held_next;
	else
		f->held_first = a->held_next;
	if (a->held_next)
		a->held_next->held_prev = a->held_prev;
	else
		f->held_last = a->held_prev;
	a->held_prev = a->held_next = NULL;
	nng_msg_free(a->held);
	a->held = NULL;
}

/* Answers a POLL (rq, with seq and arrival t_recv) with the oldest command a has not applied,
 * or NOOP. */
static void answer_poll(struct cl_fleet *f, struct cl_fleet_agent *a, nng_msg *rq, uint64_t seq,
			int64_t t_recv)
{
	struct cl_msg m = { .type = CL_MSG_CMD, .run = a->session, .agent = a->id, .seq = seq };
	if (a->n_cmds)
		m.cmd = a->cmds[0];
	else
		m.cmd.cmd = CL_CMD_NOOP;
	m.cmd.t_coord_recv_us = t_recv;
	m.cmd.t_coord_us = cl_mono_us();
	reply(f, rq, &m, NULL);
	/* An agent that is handed QUIT goes away without another word. */
	if (m.cmd.cmd == CL_CMD_QUIT) {
		a->gone = true;
		a->quit_pipe = nng_msg_get_pipe(rq);
	}
}

/* Answers a's held POLL now (with its command, or NOOP when its hold is over). */
static void answer_held(struct cl_fleet *f, struct cl_fleet_agent *a)
{
	answer_poll(f, a, a->held, a->held_seq, a->held_recv_us);
	release_held(f, a);
}

/* Ends the holds that are over by now (and those about to be: HOLD_BATCH_US); a lost agent's
 * is dropped, unanswered.  Returns when the next one ends, INT64_MAX when none is held. */
static int64_t end_holds(struct cl_fleet *f, int64_t now)
{
	struct cl_fleet_agent *a;
	while ((a = f->held_first) &&
	       a->held_recv_us + CL_WIRE_POLL_HOLD_US <= now + HOLD_BATCH_US) {
		if (a->live == CL_LIVE_LOST)
			release_held(f, a);
		else
			answer_held(f, a);
	}
	return a ? a->held_recv_us + CL_WIRE_POLL_HOLD_US : INT64_MAX;
}

/* Takes rq when it holds it (returns true): the caller frees it otherwise. */
static bool on_poll(struct cl_fleet *f, struct cl_fleet_agent *a, nng_msg *rq, struct cl_msg *req,
		    int64_t t_recv)
{
	struct cl_msg_poll *p = &req->poll;
	enum cl_agent_state prev = a->state;
	a->state = p->state;
	a->applied_seq = p->applied_seq;
	a->cpu_pct = p->cpu_pct;
	a->rss_bytes = p->rss_bytes;
	a->inflight = p->inflight;
	if (p->clock_rtt_us > 0) {
		a->clock_offset_us = p->clock_offset_us;
		a->rtt_us = p->clock_rtt_us;
	}
	if (p->state == CL_AGENT_FAILED && p->error) {
		if (prev != CL_AGENT_FAILED || strcmp(a->error, p->error) != 0)
			CL_ERROR("agent %u (%s) failed: %s", a->id, a->label, p->error);
		snprintf(a->error, sizeof(a->error), "%s", p->error);
	}
	/* Drop what it has applied. */
	size_t keep = 0;
	for (size_t i = 0; i < a->n_cmds; i++) {
		if (a->cmds[i].cmd_seq > a->applied_seq)
			a->cmds[keep++] = a->cmds[i];
	}
	a->n_cmds = keep;
	/* A newer POLL means the agent gave up on the one held (its state changed, or nng
	 * resent it): that one is dropped, unanswered. */
	release_held(f, a);
	if (a->n_cmds) {
		answer_poll(f, a, rq, req->seq, t_recv);
		return false;
	}
	/* Nothing to say: hold it until there is (cl_fleet_send) or its hold ends. */
	a->held = rq;
	a->held_seq = req->seq;
	a->held_recv_us = t_recv;
	a->held_prev = f->held_last;
	a->held_next = NULL;
	if (f->held_last)
		f->held_last->held_next = a;
	else
		f->held_first = a;
	f->held_last = a;
	f->polls_held++;
	return true;
}

static void on_report(struct cl_fleet *f, struct cl_fleet_agent *a, nng_msg *rq, struct cl_msg *req,
		      const char *peer)
{
	bool fresh = req->seq > a->last_report_seq;
	if (fresh) {
		a->last_report_seq = req->seq;
		if (f->on_report)
			f->on_report(f->ctx, a, &req->report);
		int64_t lag = cl_mono_us() - (req->report.t_send_us + a->clock_offset_us);
		if (req->report.t_send_us > 0)
			cl_hist_record(&f->report_lag[req->report.kind != CL_REPORT_INTERVAL],
				       lag > 0 ? lag : 0);
	} else {
		CL_DEBUG("duplicate report %llu from agent %u ignored",
			 (unsigned long long)req->seq, a->id);
	}
	struct cl_msg m = {
		.type = CL_MSG_ACK, .run = a->session, .agent = a->id, .seq = req->seq
	};
	reply(f, rq, &m, peer);
}

static void update_liveness(struct cl_fleet *f, int64_t now)
{
	for (size_t i = 0; i < f->n; i++) {
		struct cl_fleet_agent *a = &f->agents[i];
		if (a->gone || a->live == CL_LIVE_LOST)
			continue;
		int64_t silent = now - a->last_seen_us - a->credit_us;
		enum cl_fleet_liveness l = silent > CL_WIRE_LOST_US      ? CL_LIVE_LOST
					   : silent > CL_WIRE_MISSING_US ? CL_LIVE_MISSING
									 : CL_LIVE_OK;
		if (l != a->live) {
			if (l == CL_LIVE_LOST) {
				CL_ERROR("agent %u (%s) lost: silent for %.1f s", a->id, a->label,
					 silent / 1e6);
				a->lost_cause = CL_LOSS_SILENT;
				a->lost_at_us = now;
			} else if (l == CL_LIVE_MISSING)
				CL_WARN("agent %u (%s) missing: silent for %.1f s", a->id, a->label,
					silent / 1e6);
			else
				CL_INFO("agent %u (%s) is back", a->id, a->label);
			a->live = l;
		}
	}
}

/*
 * Files the coordinator's own stalls noted since the last call: each is said, the agents'
 * silence inside it is credited to them, and one longer than an agent waits for a reply
 * loses, at once, every agent not heard from since before it (they have stopped their load
 * and left: waiting for them would only blame them later for our silence).
 */
static void absorb_own_stalls(struct cl_fleet *f, int64_t now)
{
	struct cl_stall_list l;
	if (!cli_fleet_watch_take(f->watch, &l))
		return;
	for (uint32_t k = 0; k < l.n; k++) {
		int64_t from = l.ep[k].start_us, to = from + l.ep[k].length_us;
		if (to <= f->stalled_until_us)
			continue; /* seen by both threads: filed already */
		/* Overlapping the last one filed (the other thread's view of the same stall):
		 * that one grows, rather than a sliver of it being filed again. */
		bool grows = f->n_own && from <= f->stalled_until_us;
		if (from < f->stalled_until_us)
			from = f->stalled_until_us;
		struct cl_stall *own =
		    &f->own_stalls[(grows ? f->n_own - 1 : f->n_own) % CL_FLEET_OWN_STALLS];
		if (grows) {
			own->length_us = to - own->start_us;
		} else {
			*own = (struct cl_stall){ .start_us = from, .length_us = to - from };
			f->n_own++;
		}
		f->stalled_until_us = to;
		bool fatal = own->length_us > CL_WIRE_AGENT_SILENCE_US;
		if (!grows)
			CL_WARN("this coordinator could not run for %.1f s (stopped, suspended or "
				"starved): the agents' silence in that time is not theirs%s",
				own->length_us / 1e6,
				fatal ? "; it outlasted the 10 s an agent waits for a reply, so "
					"every agent has stopped its load and left"
				      : "");
		for (size_t i = 0; i < f->n; i++) {
			struct cl_fleet_agent *a = &f->agents[i];
			if (a->gone || a->live == CL_LIVE_LOST || a->last_seen_us >= to)
				continue;
			a->credit_us += to - (a->last_seen_us > from ? a->last_seen_us : from);
			if (!fatal || a->last_seen_us > own->start_us)
				continue;
			CL_ERROR(
			    "agent %u (%s) lost: this coordinator could not run for %.1f s, "
			    "longer than an agent waits for a reply; the agent stopped its load "
			    "as it must (not its fault)",
			    a->id, a->label, own->length_us / 1e6);
			a->live = CL_LIVE_LOST;
			a->lost_cause = CL_LOSS_COORDINATOR_STALL;
			a->lost_at_us = now;
		}
	}
}

/* Handles the request rq, and frees it unless it holds it (a POLL). */
/* ANSWERS of a generate job and REQUESTS of output.requests: handed to the run once per seq,
 * then ACKed (a resend of one already taken is only ACKed). */
static void on_batch(struct cl_fleet *f, struct cl_fleet_agent *a, nng_msg *rq, struct cl_msg *req,
		     const char *peer)
{
	bool answers = req->type == CL_MSG_ANSWERS;
	uint64_t *last = answers ? &a->last_answers_seq : &a->last_requests_seq;
	if (answers ? !f->on_answers : !f->on_requests) {
		refuse(f, rq, req, peer,
		       answers ? "ANSWERS outside a generate job"
			       : "REQUESTS without output.requests");
		return;
	}
	if (req->seq > *last) {
		int rc = answers ? f->on_answers(f->ctx, a, &req->answers)
				 : f->on_requests(f->ctx, a, &req->requests);
		if (rc != 0)
			return; /* not ACKed: the agent sends it again */
		*last = req->seq;
	}
	struct cl_msg m = {
		.type = CL_MSG_ACK, .run = a->session, .agent = a->id, .seq = req->seq
	};
	reply(f, rq, &m, peer);
}

static void handle(struct cl_fleet *f, nng_msg *rq, int64_t t_recv)
{
	char peer[96];
	cli_fleet_peers_name(f->peers, rq, peer, sizeof(peer));
	struct cl_msg req = { 0 };
	struct cl_err err = { 0 };
	bool held = false;
	int rc = cl_wire_decode(nng_msg_body(rq), nng_msg_len(rq), &req, &err);
	if (rc != 0) {
		char why[600];
		refuse(f, rq, &req, peer, "malformed message: %s",
		       cl_err_format(&err, why, sizeof(why)));
		cl_msg_free(&req);
		nng_msg_free(rq);
		return;
	}
	if (req.type == CL_MSG_HELLO) {
		on_hello(f, rq, &req, peer, t_recv);
	} else {
		struct cl_fleet_agent *a = find_agent(f, &req);
		if (!a) {
			refuse(f, rq, &req, peer,
			       "unknown agent %u or session (no HELLO on record)", req.agent);
		} else if (a->live == CL_LIVE_LOST) {
			refuse(f, rq, &req, peer,
			       "agent %u (%s) was declared lost in run '%s'; its session is over "
			       "and it may join the next run",
			       a->id, a->label, f->run);
		} else {
			if (a->live == CL_LIVE_MISSING) {
				CL_INFO("agent %u (%s) is back after %.1f s of silence", a->id,
					a->label, (t_recv - a->last_seen_us) / 1e6);
				a->silent_from_us = a->last_seen_us;
				a->silent_until_us = t_recv;
				a->returns++;
			}
			a->live = CL_LIVE_OK;
			a->last_seen_us = t_recv;
			a->credit_us = 0;
			if (req.type == CL_MSG_POLL)
				held = on_poll(f, a, rq, &req, t_recv);
			else if (req.type == CL_MSG_REPORT)
				on_report(f, a, rq, &req, peer);
			else if (req.type == CL_MSG_ANSWERS || req.type == CL_MSG_REQUESTS)
				on_batch(f, a, rq, &req, peer);
			else
				refuse(f, rq, &req, peer, "unexpected %s from an agent",
				       cl_msg_type_name(req.type));
		}
	}
	cl_msg_free(&req);
	if (!held)
		nng_msg_free(rq);
}

/* Logs, at most once a second, TLS handshakes a listener refused since the last look: an
 * agent with the wrong CA, name or certificate never gets as far as a message, so this is
 * all the coordinator can say about it (the agent's own log says which check failed). */
static void check_handshakes(struct cl_fleet *f, int64_t now)
{
	if (!f->n_tls || now - f->tls_checked_us < 1000000)
		return;
	f->tls_checked_us = now;
	for (size_t i = 0; i < f->n_tls; i++) {
		uint64_t n = cl_transport_refused_handshakes(f->tls[i].l);
		if (n <= f->tls[i].refused)
			continue;
		CL_WARN("refused %llu TLS connection%s on %s: the peer's certificate or CA does "
			"not match (nng does not say which peer; the agent's log says which check "
			"failed)",
			(unsigned long long)(n - f->tls[i].refused),
			n - f->tls[i].refused == 1 ? "" : "s", f->tls[i].url);
		f->tls[i].refused = n;
	}
}

void cl_fleet_serve(struct cl_fleet *f, int64_t for_us)
{
	int64_t deadline = cl_mono_us() + for_us;
	do {
		int64_t now = cl_mono_us();
		int64_t until = end_holds(f, now);
		if (until > deadline)
			until = deadline;
		int64_t left_ms = (until - now + 999) / 1000;
		if (left_ms < 1)
			left_ms = 1;
		nng_socket_set_ms(f->sock, NNG_OPT_RECVTIMEO, (nng_duration)left_ms);
		nng_msg *msg = NULL;
		int64_t due = now + left_ms * 1000;
		int rc = nng_recvmsg(f->sock, &msg, 0);
		int64_t t_recv = cl_mono_us();
		/* A receive that ends this late means this thread could not run: file the stall
		 * before the message, so a backlog read on waking is not taken as news. */
		if (t_recv - due >= CL_STALL_MIN_US)
			cli_fleet_watch_note(f->watch, due, t_recv - due);
		absorb_own_stalls(f, t_recv);
		if (rc == 0) {
			handle(f, msg, t_recv);
		} else if (rc != NNG_ETIMEDOUT) {
			CL_WARN("control socket receive failed: %s", nng_strerror(rc));
			cl_sleep_ns(1000000);
		}
	} while (cl_mono_us() < deadline);
	absorb_own_stalls(f, cl_mono_us());
	update_liveness(f, cl_mono_us());
	check_handshakes(f, cl_mono_us());
}

uint64_t cl_fleet_send(struct cl_fleet *f, size_t i, const struct cl_msg_cmd *cmd)
{
	CL_ASSERT(i < f->n);
	struct cl_fleet_agent *a = &f->agents[i];
	if (a->n_cmds == CL_FLEET_MAX_QUEUED_CMDS) {
		CL_ERROR("command queue of agent %u is full", a->id);
		return 0;
	}
	a->cmds[a->n_cmds] = *cmd;
	a->cmds[a->n_cmds].cmd_seq = f->next_cmd_seq++;
	uint64_t seq = a->cmds[a->n_cmds++].cmd_seq;
	if (a->held) {
		f->polls_answered_early++;
		answer_held(f, a);
	}
	return seq;
}

size_t cl_fleet_room(const struct cl_fleet *f, size_t i)
{
	CL_ASSERT(i < f->n && f->agents[i].n_cmds <= CL_FLEET_MAX_QUEUED_CMDS);
	return CL_FLEET_MAX_QUEUED_CMDS - f->agents[i].n_cmds;
}

void cl_fleet_unqueue(struct cl_fleet *f, enum cl_cmd cmd)
{
	for (size_t i = 0; i < f->n; i++) {
		struct cl_fleet_agent *a = &f->agents[i];
		size_t keep = 0;
		for (size_t q = 0; q < a->n_cmds; q++) {
			if (a->cmds[q].cmd != cmd)
				a->cmds[keep++] = a->cmds[q];
		}
		a->n_cmds = keep;
	}
}

void cl_fleet_broadcast(struct cl_fleet *f, const struct cl_msg_cmd *cmd)
{
	for (size_t i = 0; i < f->n; i++) {
		if (!f->agents[i].gone && f->agents[i].live != CL_LIVE_LOST)
			cl_fleet_send(f, i, cmd);
	}
}

bool cl_fleet_departed(const struct cl_fleet *f, size_t i)
{
	CL_ASSERT(i < f->n);
	const struct cl_fleet_agent *a = &f->agents[i];
	char addr[96];
	return a->live == CL_LIVE_LOST ||
	       (a->gone && cl_transport_pipe_addr(a->quit_pipe, addr, sizeof(addr)) != 0);
}

size_t cl_fleet_active(const struct cl_fleet *f)
{
	size_t n = 0;
	for (size_t i = 0; i < f->n; i++)
		n += !f->agents[i].gone && f->agents[i].live != CL_LIVE_LOST;
	return n;
}
