/* The agent's session with a coordinator over an nng REQ socket: join with HELLO, then keep
 * a long POLL (carrying the agent's state) in flight on one context and the queued REPORTs
 * going out on another, applying the commands the replies carry, until QUIT, silence or a
 * stop.  One loop on the control thread moves both on; it sleeps on the wake-up pipe (wake.h)
 * that the aio callbacks, the gate's thread and the signal handler poke. */

#include "agent/daemon/session.h"
#include "agent/daemon/activity.h"
#include "agent/daemon/genjob.h"
#include "agent/daemon/probe_thread.h"
#include "agent/daemon/report_queue.h"
#include "agent/daemon/requests.h"
#include "agent/daemon/wake.h"

#include "chatload/assert.h"
#include "chatload/log.h"
#include "chatload/transport.h"

#include <curl/curl.h>
#include <nng/protocol/reqrep0/req.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* How long a reply may take beyond the coordinator's hold of a POLL. */
#define REPLY_TIMEOUT_US 3000000
/* The least time between two POLLs when the first was answered NOOP or failed: what keeps a
 * coordinator that answers at once, or a broken link, from spinning the loop. */
#define POLL_GAP_US 100000
/* A failed REPORT exchange is tried again after this. */
#define REPORT_RETRY_US 100000
/* While a stage, a warmup or a gate runs, the loop looks at it this often (its end is noticed
 * this soon); otherwise it sleeps until a reply, a stop, an interval's end or a deadline. */
#define ACTIVE_TICK_US 100000
/* A channel's exchange still under way (channel_turn). */
#define CHANNEL_BUSY 1

bool cl_session_nap(const atomic_int *stop, int64_t us)
{
	int64_t end = cl_mono_us() + us;
	for (;;) {
		if (atomic_load(stop))
			return false;
		int64_t left = end - cl_mono_us();
		if (left <= 0)
			return true;
		cl_wake_sleep(left); /* the signal handler pokes it */
	}
}

static void on_channel_done(void *arg)
{
	struct channel *c = arg;
	atomic_store(&c->done, true);
	cl_wake_poke();
}

static int channel_open(struct session *s, struct channel *c, const char *name)
{
	c->name = name;
	atomic_init(&c->done, false);
	int rc = nng_ctx_open(&c->ctx, s->sock);
	if (rc != 0)
		return rc;
	c->ctx_open = true;
	/* Above the coordinator's hold, or nng would resend every held POLL. */
	nng_ctx_set_ms(c->ctx, NNG_OPT_REQ_RESENDTIME, CL_WIRE_RESEND_MS);
	return nng_aio_alloc(&c->aio, on_channel_done, c);
}

static void channel_close(struct channel *c)
{
	if (c->aio) {
		nng_aio_stop(c->aio); /* cancels, and waits out a callback under way */
		nng_msg_free(nng_aio_get_msg(c->aio));
		nng_aio_free(c->aio);
	}
	c->aio = NULL;
	if (c->ctx_open)
		nng_ctx_close(c->ctx);
	c->ctx_open = false;
	c->phase = CHANNEL_IDLE;
}

static nng_duration ms_until(int64_t deadline_us)
{
	int64_t left_ms = (deadline_us - cl_mono_us() + 999) / 1000;
	return (nng_duration)(left_ms < 1 ? 1 : left_ms);
}

/* Sends len bytes of an encoded request on c, giving up on its reply timeout_us from now.
 * 0, or CL_ENOMEM. */
static int channel_start(struct channel *c, const void *data, size_t len, int64_t timeout_us)
{
	nng_msg *m = NULL;
	if (nng_msg_alloc(&m, 0) != 0 || nng_msg_append(m, data, len) != 0) {
		nng_msg_free(m);
		return CL_ENOMEM;
	}
	/* One exchange at a time on a context: a REQ context sending again would cancel the
	 * request whose reply is awaited. */
	CL_ASSERT(c->phase == CHANNEL_IDLE);
	c->t_send_us = cl_mono_us();
	c->deadline_us = c->t_send_us + timeout_us;
	c->cancelled = false;
	c->phase = CHANNEL_SENDING;
	atomic_store(&c->done, false);
	nng_aio_set_msg(c->aio, m);
	nng_aio_set_timeout(c->aio, ms_until(c->deadline_us));
	nng_ctx_send(c->ctx, c->aio);
	return 0;
}

/* Gives up on c's exchange: its callback still runs, and channel_turn then says CL_ECLOSED. */
static void channel_cancel(struct channel *c)
{
	if (c->phase == CHANNEL_IDLE || c->cancelled)
		return;
	c->cancelled = true;
	nng_aio_cancel(c->aio);
}

/*
 * Moves c's exchange on after its aio finished: a sent request goes on to wait for its reply;
 * a reply is decoded into reply (the caller frees it) with *t_recv its arrival.  Returns
 * CHANNEL_BUSY while the exchange is under way, else 0, or CL_ECLOSED (cancelled),
 * CL_ETIMEDOUT, CL_EIO or a decoding error with err filled; c is idle again then.
 */
static int channel_turn(struct session *s, struct channel *c, struct cl_msg *reply, int64_t *t_recv,
			struct cl_err *err)
{
	if (c->phase == CHANNEL_IDLE || !atomic_exchange(&c->done, false))
		return CHANNEL_BUSY;
	int rc = nng_aio_result(c->aio);
	nng_msg *m = nng_aio_get_msg(c->aio);
	nng_aio_set_msg(c->aio, NULL);
	if (c->phase == CHANNEL_SENDING && rc == 0 && !c->cancelled) {
		c->phase = CHANNEL_WAITING;
		nng_aio_set_timeout(c->aio, ms_until(c->deadline_us));
		nng_ctx_recv(c->ctx, c->aio);
		return CHANNEL_BUSY;
	}
	bool sending = c->phase == CHANNEL_SENDING;
	c->phase = CHANNEL_IDLE;
	*t_recv = cl_mono_us();
	if (rc != 0 || sending) { /* sending: sent, but given up on before its reply */
		nng_msg_free(m);  /* a request not sent is still ours */
		if (c->cancelled)
			return cl_err_set(err, CL_ECLOSED, "%s given up", c->name);
		if (rc == NNG_ETIMEDOUT)
			return cl_err_set(err, CL_ETIMEDOUT, "%s: no %s in %lld ms", c->name,
					  sending ? "connection to the coordinator"
						  : "reply from the coordinator",
					  (long long)((*t_recv - c->t_send_us) / 1000));
		return cl_err_set(err, CL_EIO, "%s to coordinator failed: %s", c->name,
				  nng_strerror(rc));
	}
	rc = cl_wire_decode(nng_msg_body(m), nng_msg_len(m), reply, err);
	nng_msg_free(m);
	if (rc != 0)
		return cl_err_prefix(err, "bad reply from coordinator");
	s->last_reply_us = *t_recv;
	return 0;
}

/* Encodes m as this session's next request (run, agent, seq) and sends it on c. */
static int send_request(struct session *s, struct channel *c, struct cl_msg *m, int64_t timeout_us,
			struct cl_err *err)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	m->run = s->run;
	m->agent = s->agent_id;
	m->seq = ++s->seq;
	int rc = cl_wire_encode(m, &sb, err);
	if (rc == 0 && (rc = channel_start(c, sb.data, sb.size, timeout_us)) != 0)
		cl_err_set(err, rc, "out of memory for a %s", c->name);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

/* Sends m on c and waits for the reply (the join, before the session's loop); a stop gives
 * up at once with CL_ECLOSED. */
static int exchange(struct session *s, struct channel *c, struct cl_msg *m, struct cl_msg *reply,
		    int64_t *t_recv, struct cl_err *err)
{
	int rc = send_request(s, c, m, REPLY_TIMEOUT_US, err);
	while (rc == 0) {
		if (atomic_load(s->stop))
			channel_cancel(c);
		if ((rc = channel_turn(s, c, reply, t_recv, err)) != CHANNEL_BUSY)
			break;
		rc = 0;
		cl_wake_sleep(1000000); /* the aio's callback and the signal handler poke it */
	}
	return rc;
}

/* Every load this agent runs stopped: a generate job, a stage or warmup (cut), a gate. */
static void stop_load(struct session *s)
{
	cl_genjob_stop(s);
	cl_activity_stop(s, true);
	cl_probe_thread_stop(s);
}

/* Applies a new command (the next POLL, which goes at once, says it was). */
static void apply_command(struct session *s, struct cl_msg *reply)
{
	struct cl_msg_cmd *c = &reply->cmd;
	if (c->cmd == CL_CMD_NOOP || c->cmd_seq <= s->applied_seq)
		return;
	s->applied_seq = c->cmd_seq;
	CL_DEBUG("command %s (seq %llu)", cl_cmd_name(c->cmd), (unsigned long long)c->cmd_seq);
	switch (c->cmd) {
	case CL_CMD_PREPARE:
		cl_activity_prepare(s, reply);
		break;
	case CL_CMD_PROBE:
		cl_probe_thread_start(s, reply);
		break;
	case CL_CMD_WARMUP:
		cl_activity_warmup(s, c);
		break;
	case CL_CMD_START_AT:
		cl_activity_start_stage(s, c);
		break;
	case CL_CMD_STOP:
		/* cut: an interrupted run; the requests in flight are cut, not drained, so the
		 * final report goes at once whatever the target does with them. */
		if (s->act_engine && c->stop.stage == s->stage)
			cl_engine_stop(s->act_engine, c->stop.cut);
		break;
	case CL_CMD_ABORT:
		stop_load(s);
		cl_session_set_state(s, CL_AGENT_IDLE);
		break;
	case CL_CMD_QUIT:
		s->quit = true;
		break;
	case CL_CMD_BODIES:
		cl_activity_bodies(s, c);
		break;
	case CL_CMD_GENERATE:
		cl_genjob_start(s, c);
		break;
	case CL_CMD_LEASE:
		cl_genjob_lease(s, c);
		break;
	default:
		break;
	}
}

/*
 * Sleeps wait_us, and notes a stall when the wake-up comes CL_STALL_MIN_US or more late:
 * the control thread is the second witness of a frozen agent, beside the engine's event
 * loops (a stop or pause of the whole process delays both; docs/engine.md).  Only stalls
 * during a stage are kept: they are reported with its next report.
 */
static void sleep_watching(struct session *s, int64_t wait_us)
{
	int64_t due = cl_mono_us() + wait_us;
	cl_wake_sleep(wait_us); /* a reply, a stop or a finished gate pokes it */
	int64_t late = cl_mono_us() - due;
	if (late >= CL_STALL_MIN_US && s->act == ACT_STAGE)
		cl_stall_list_add(&s->stalls, due, late);
}

static void fill_poll(struct session *s, struct cl_msg *m, int64_t now)
{
	memset(m, 0, sizeof(*m));
	m->type = CL_MSG_POLL;
	m->poll.state = s->state;
	m->poll.applied_seq = s->applied_seq;
	int64_t cpu = cl_cpu_us();
	if (s->cpu_prev_at_us && now > s->cpu_prev_at_us)
		m->poll.cpu_pct =
		    100.0 * (double)(cpu - s->cpu_prev_us) / (double)(now - s->cpu_prev_at_us);
	s->cpu_prev_us = cpu;
	s->cpu_prev_at_us = now;
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	m->poll.rss_bytes = rss * sysconf(_SC_PAGESIZE);
	m->poll.inflight = s->engine ? cl_engine_inflight(s->engine) : 0;
	if (s->gen)
		m->poll.inflight = (int64_t)cl_gen_runner_inflight(s->gen);
	m->poll.t_send_us = now;
	int64_t off, rtt;
	if (cl_clock_est_get(&s->clock, &off, &rtt) && rtt > 0) {
		m->poll.clock_offset_us = off;
		m->poll.clock_rtt_us = rtt;
	}
	if (s->state == CL_AGENT_FAILED)
		m->poll.error = s->error;
}

static int hello(struct session *s, struct cl_err *err)
{
	char host[CL_WIRE_MAX_HOST + 1] = "unknown";
	if (s->o->name)
		snprintf(host, sizeof(host), "%s", s->o->name);
	else
		gethostname(host, sizeof(host) - 1);
	char *caps[2];
	size_t n_caps = 0;
	const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
	if (cv->features & CURL_VERSION_HTTP2)
		caps[n_caps++] = "http2";
	if (cv->features & CURL_VERSION_SSL)
		caps[n_caps++] = "tls";
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct cl_msg m = { .type = CL_MSG_HELLO };
	m.hello = (struct cl_msg_hello){
		.version = CHATLOAD_VERSION,
		.host = host,
		.workers = s->o->workers ? s->o->workers : (uint32_t)(cpus > 0 ? cpus : 1),
		.caps = caps,
		.n_caps = n_caps,
		.token = (char *)(s->o->token ? s->o->token : ""),
		.pid = getpid(),
		.t_send_us = cl_mono_us(),
	};
	struct cl_msg reply = { 0 };
	int64_t t_recv = 0;
	int rc = exchange(s, &s->polls, &m, &reply, &t_recv, err);
	if (rc != 0)
		return rc;
	if (reply.type == CL_MSG_REFUSE) {
		rc = cl_err_set(err, CL_EREFUSED, "coordinator refused this agent: %s",
				reply.refuse.reason);
	} else if (reply.type != CL_MSG_WELCOME) {
		rc = cl_err_set(err, CL_EPROTO, "expected WELCOME, got %s",
				cl_msg_type_name(reply.type) ? cl_msg_type_name(reply.type) : "?");
	} else {
		cl_clock_est_add(&s->clock, s->polls.t_send_us, reply.welcome.t_coord_recv_us,
				 reply.welcome.t_coord_us, t_recv);
		s->agent_id = reply.welcome.agent_id;
		snprintf(s->run, sizeof(s->run), "%s", reply.run ? reply.run : "");
		s->report_interval_us = reply.welcome.report_interval_us > 0
					    ? reply.welcome.report_interval_us
					    : 1000000;
	}
	cl_msg_free(&reply);
	return rc;
}

/*
 * Takes the reply to c's exchange once it came (*moved set): 0 with *reply filled (the caller
 * frees it, also on a failure), or the exchange's failure, logged for debugging (the caller
 * tries again) unless it was given up on (CL_ECLOSED).  CHANNEL_BUSY while it is under way.
 * With refused (what the coordinator did, "ended the session"), a REFUSE is logged as that
 * and freed here: CL_EREFUSED, the session is over; without, the caller reads it.
 */
static int take_reply(struct session *s, struct channel *c, struct cl_msg *reply, int64_t *t_recv,
		      bool *moved, const char *refused)
{
	struct cl_err err = { 0 };
	char msg[700];
	int rc = channel_turn(s, c, reply, t_recv, &err);
	if (rc == CHANNEL_BUSY)
		return rc;
	*moved = true;
	if (rc != 0 && rc != CL_ECLOSED)
		CL_DEBUG("%s", cl_err_format(&err, msg, sizeof(msg)));
	if (rc == 0 && refused && reply->type == CL_MSG_REFUSE) {
		CL_ERROR("coordinator %s: %s", refused, reply->refuse.reason);
		cl_msg_free(reply);
		return CL_EREFUSED;
	}
	return rc;
}

/*
 * The report channel's turn: takes the reply to the report in flight, and sends the oldest
 * queued one when the channel is free.  A report not acknowledged stays first in the queue
 * and goes again, with its seq.  CL_EREFUSED when the coordinator refused a report (the
 * session is over), else 0; *moved is set when a reply (or a failure) came.
 */
static int turn_reports(struct session *s, int64_t now, bool *moved)
{
	struct channel *c = &s->reports;
	if (c->phase != CHANNEL_IDLE) {
		struct cl_msg reply = { 0 };
		int64_t t_recv = 0;
		/* A refused report is the report queue's to say (which report). */
		int rc = take_reply(s, c, &reply, &t_recv, moved, NULL);
		if (rc == CHANNEL_BUSY)
			return 0;
		if (rc == 0) {
			struct cl_err err = { 0 };
			char msg[700];
			rc = cl_report_queue_answered(s, &reply, &err);
			if (rc == CL_EREFUSED)
				CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
			else if (rc != 0)
				CL_DEBUG("%s", cl_err_format(&err, msg, sizeof(msg)));
		}
		cl_msg_free(&reply);
		if (rc == CL_EREFUSED)
			return rc;
		if (rc != 0)
			c->next_us = t_recv + REPORT_RETRY_US;
	}
	struct pending_report *p = cl_report_queue_head(s);
	if (p && c->phase == CHANNEL_IDLE && now >= c->next_us && now >= p->not_before_us) {
		/* t_send_us says when it goes, this time (a resend is stamped again) */
		cl_wire_restamp(p->buf.data, p->t_send_at, cl_mono_us());
		if (channel_start(c, p->buf.data, p->buf.size, REPLY_TIMEOUT_US) != 0) {
			CL_ERROR("out of memory for the %s report", p->what);
			c->next_us = now + REPORT_RETRY_US;
		}
	}
	return 0;
}

/*
 * The answers channel's turn (a generate job's ANSWERS, a stage's REQUESTS): takes the reply
 * to the message in flight, and sends the pending one (or the next) when the channel is free.
 * A message not acknowledged goes again with its seq, so the coordinator writes each answer
 * or record once.  CL_EREFUSED when the
 * coordinator refused it (the session is over), else 0.
 */
static int turn_answers(struct session *s, int64_t now, bool *moved)
{
	struct channel *c = &s->answers;
	if (c->phase != CHANNEL_IDLE) {
		struct cl_msg reply = { 0 };
		int64_t t_recv = 0;
		int rc = take_reply(s, c, &reply, &t_recv, moved, "refused our answers");
		if (rc == CHANNEL_BUSY)
			return 0;
		if (rc == CL_EREFUSED)
			return rc;
		if (rc == 0 && reply.type == CL_MSG_ACK && s->ans_pending &&
		    reply.seq == s->ans_seq)
			cl_genjob_answered(s);
		else if (rc == 0 && reply.type == CL_MSG_ACK && s->req_pending &&
			 reply.seq == s->req_seq)
			cl_requests_answered(s);
		else
			c->next_us = t_recv + REPORT_RETRY_US;
		cl_msg_free(&reply);
	}
	if (c->phase != CHANNEL_IDLE || now < c->next_us)
		return 0;
	/* A generate job's answers, else a stage's request records: the two never share a
	 * run, so neither waits behind the other. */
	CL_ASSERT(!(s->ans_pending && s->req_pending));
	const msgpack_sbuffer *b = cl_genjob_next_answers(s) ? &s->ans_buf
				   : cl_requests_next(s)     ? &s->req_buf
							     : NULL;
	if (b && channel_start(c, b->data, b->size, REPLY_TIMEOUT_US) != 0)
		c->next_us = now + REPORT_RETRY_US;
	return 0;
}

/*
 * The POLL channel's turn: takes the reply to the POLL in flight and applies its command, and
 * sends the next POLL when the channel is free: at once after a command (the coordinator
 * holds a POLL with nothing to say for up to CL_WIRE_POLL_HOLD_US), POLL_GAP_US after the
 * previous one otherwise.  A POLL in flight whose state is stale is given up on and sent
 * again with the news.  CL_EREFUSED when the coordinator ended the session, else 0.
 */
static int turn_polls(struct session *s, int64_t now, bool *moved)
{
	struct channel *c = &s->polls;
	if (c->phase != CHANNEL_IDLE) {
		struct cl_msg reply = { 0 };
		int64_t t_recv = 0;
		int rc = take_reply(s, c, &reply, &t_recv, moved, "ended the session");
		if (rc == CHANNEL_BUSY) {
			if (s->state != s->poll_state)
				channel_cancel(c); /* news: ask again, with it */
			return 0;
		}
		if (rc == CL_EREFUSED)
			return rc;
		bool noop = true;
		if (rc == 0 && reply.type == CL_MSG_CMD) {
			cl_clock_est_add(&s->clock, c->t_send_us, reply.cmd.t_coord_recv_us,
					 reply.cmd.t_coord_us, t_recv);
			noop = reply.cmd.cmd == CL_CMD_NOOP;
			apply_command(s, &reply);
		} else if (rc == 0) {
			CL_DEBUG("unexpected %s in reply to a POLL",
				 cl_msg_type_name(reply.type) ? cl_msg_type_name(reply.type) : "?");
		} else if (rc == CL_ECLOSED) {
			noop = false; /* given up on for news: the next goes at once */
		}
		cl_msg_free(&reply);
		c->next_us = noop ? c->t_send_us + POLL_GAP_US : 0;
		now = cl_mono_us();
	}
	if (c->phase == CHANNEL_IDLE && !s->quit && now >= c->next_us) {
		struct cl_err err = { 0 };
		char msg[700];
		struct cl_msg m;
		fill_poll(s, &m, now);
		s->poll_state = s->state;
		if (send_request(s, c, &m, CL_WIRE_POLL_HOLD_US + REPLY_TIMEOUT_US, &err) != 0) {
			CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
			c->next_us = now + POLL_GAP_US;
		}
	}
	return 0;
}

/* When the loop must look again, at the latest: an interval's end, the next request due,
 * the silence deadline, or soon while a stage, warmup or gate runs. */
static int64_t next_wake(struct session *s, int64_t now)
{
	int64_t at = s->last_reply_us + CL_WIRE_AGENT_SILENCE_US + 1000;
	if (s->polls.phase == CHANNEL_IDLE && s->polls.next_us < at)
		at = s->polls.next_us;
	const struct pending_report *p = cl_report_queue_head(s);
	if (p && s->reports.phase == CHANNEL_IDLE) {
		int64_t go =
		    s->reports.next_us > p->not_before_us ? s->reports.next_us : p->not_before_us;
		if (go < at)
			at = go;
	}
	if (s->act != ACT_NONE || s->probe_running || s->gen || cl_requests_outstanding(s)) {
		if (now + ACTIVE_TICK_US < at)
			at = now + ACTIVE_TICK_US;
		int64_t due =
		    s->start_local_us + (int64_t)(s->interval + 1) * s->report_interval_us;
		if (s->act == ACT_STAGE && due < at)
			at = due;
	}
	return at;
}

/* Longest a stopped agent spends getting its last report to the coordinator. */
#define LEAVE_US 2000000

/*
 * Stopped by a signal (SIGTERM, SIGINT: the group of a `chatload run` stopped by its
 * supervisor, or a daemon stopped by its operator): the stage or warmup in progress is cut at
 * once and its final report, the cut requests counted, is sent and acknowledged before the
 * agent leaves, for LEAVE_US at most.  Before this the agent left without a word and the
 * coordinator heard nothing until it declared it lost, CL_WIRE_LOST_US later.
 */
static void leave(struct session *s)
{
	cl_genjob_stop(s);
	cl_probe_thread_stop(s);
	if (s->act == ACT_NONE) {
		cl_activity_stop(s, true);
		return;
	}
	CL_INFO("stopping: cutting the requests in flight and sending the last report");
	s->leaving = true;
	cl_engine_stop(s->act_engine, true);
	int64_t until = cl_mono_us() + LEAVE_US;
	for (;;) {
		int64_t now = cl_mono_us();
		cl_activity_pump(s, now); /* the final report, once the engine has cut */
		bool moved = false;
		if (turn_reports(s, now, &moved) != 0)
			break;
		if (s->act == ACT_NONE && !cl_report_queue_head(s))
			break; /* every report acknowledged */
		if (now >= until) {
			CL_WARN("stopping: the last report was not acknowledged within %d s",
				LEAVE_US / 1000000);
			break;
		}
		if (!moved)
			cl_wake_sleep(until - now < 20000 ? until - now : 20000);
	}
	cl_activity_stop(s, true);
}

void cl_session_cleanup(struct session *s)
{
	cl_probe_thread_stop(s);
	cl_genjob_stop(s);
	cl_activity_destroy(s);
	cl_requests_clear(s);
	if (s->req_sent)
		CL_INFO("request records acknowledged: %llu", (unsigned long long)s->req_sent);
	cl_msg_free(&s->prepare_msg);
	cl_msg_free(&s->probe_msg);
	cl_report_queue_clear(s);
	if (s->acc_ready)
		cl_metrics_destroy(&s->acc);
	s->acc_ready = false;
	channel_close(&s->polls);
	channel_close(&s->reports);
	channel_close(&s->answers);
	/* Bounded: a daemon must get back to its loop for the next run. */
	if (s->sock_open)
		cl_transport_close(s->sock, "the control socket");
	s->sock_open = false;
}

int cl_session_run(struct session *s)
{
	struct cl_err err = { 0 };
	char msg[700];
	int rc = nng_req0_open(&s->sock);
	if (rc != 0) {
		CL_ERROR("cannot open control socket: %s", nng_strerror(rc));
		return CL_ESYS;
	}
	s->sock_open = true;
	if ((rc = channel_open(s, &s->polls, "poll")) != 0 ||
	    (rc = channel_open(s, &s->reports, "report")) != 0 ||
	    (rc = channel_open(s, &s->answers, "answers")) != 0) {
		CL_ERROR("cannot open control socket: %s", nng_strerror(rc));
		return CL_ENOMEM;
	}
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, CL_WIRE_MAX_MSG);
	if ((rc = cl_transport_dial(s->sock, s->o->connect_url, &s->o->tls, s->o->insecure,
				    &err)) != 0) {
		CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
		return rc;
	}
	/* Join.  nng redials in the background; HELLO is retried until someone answers. */
	int64_t backoff_us = 200000;
	int64_t next_probe_us = cl_mono_us() + 3 * 1000000LL;
	for (;;) {
		if (atomic_load(s->stop))
			return CL_ECLOSED;
		rc = hello(s, &err);
		if (rc == 0)
			break;
		if (rc == CL_ECLOSED)
			return rc;
		if (rc == CL_EREFUSED) {
			/* The daemon's loop says it (once while it stays the same: it asks again
			 * every few seconds). */
			snprintf(s->refusal, sizeof(s->refusal), "%s",
				 cl_err_format(&err, msg, sizeof(msg)));
			return rc;
		}
		CL_DEBUG("waiting for coordinator at %s: %s", s->o->connect_url,
			 cl_err_format(&err, msg, sizeof(msg)));
		/* The background dialer keeps its errors to itself: every few seconds without
		 * an answer, dial once in the open and say what goes wrong. */
		if (cl_mono_us() >= next_probe_us) {
			struct cl_err perr = { 0 };
			if (cl_transport_probe_dial(s->o->connect_url, &s->o->tls, s->o->insecure,
						    2000, s->stop, &perr) != 0)
				CL_WARN("%s", cl_err_format(&perr, msg, sizeof(msg)));
			else
				CL_WARN("no answer from coordinator at %s yet: %s",
					s->o->connect_url, cl_err_format(&err, msg, sizeof(msg)));
			next_probe_us = cl_mono_us() + 10 * 1000000LL;
		}
		if (!cl_session_nap(s->stop, backoff_us))
			return CL_ECLOSED;
		if (backoff_us < 2000000)
			backoff_us *= 2;
	}
	/* the part after '/' is the session secret: not for logs */
	CL_INFO("joined run '%.*s' as agent %u", (int)strcspn(s->run, "/"), s->run, s->agent_id);
	cl_session_set_state(s, CL_AGENT_IDLE);
	s->last_reply_us = cl_mono_us();

	while (!s->quit) {
		int64_t now = cl_mono_us();
		if (atomic_load(s->stop)) {
			leave(s);
			return CL_ECLOSED;
		}
		if (now - s->last_reply_us > CL_WIRE_AGENT_SILENCE_US) {
			CL_ERROR("coordinator silent for %lld s: stopping all load",
				 (long long)((now - s->last_reply_us) / 1000000));
			stop_load(s);
			return CL_ETIMEDOUT;
		}
		cl_probe_thread_pump(s, now);
		cl_activity_pump(s, now);
		bool moved = false;
		if ((rc = turn_reports(s, now, &moved)) != 0 ||
		    (rc = turn_answers(s, now, &moved)) != 0 ||
		    (rc = turn_polls(s, now, &moved)) != 0) {
			cl_genjob_stop(s);
			cl_activity_stop(s, true);
			return rc;
		}
		if (moved)
			continue; /* a reply came: look again before sleeping */
		int64_t wait = next_wake(s, now) - cl_mono_us();
		if (wait > 0)
			sleep_watching(s, wait);
	}
	/* QUIT: end.  Closing the socket (cl_session_cleanup) is how the coordinator learns that
	 * QUIT arrived (cl_fleet_departed). */
	stop_load(s);
	return 0;
}
