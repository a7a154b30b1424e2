/* The agent's session with a coordinator over an nng REQ socket: join with HELLO, then POLL
 * (carrying the agent's state) and send queued REPORTs, applying the commands the replies
 * carry, until QUIT, silence or a stop. */
#include "session.h"
#include "wake.h"

#include "chatload/log.h"
#include "chatload/transport.h"

#include <curl/curl.h>
#include <nng/protocol/reqrep0/req.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* How often an idle or running agent polls.  Short polls (the coordinator answers at once)
 * keep the coordinator single-threaded; see docs/protocol.md. */
#define POLL_EVERY_US    100000
#define REPLY_TIMEOUT_MS 3000

/* How far past the end of a stage's interval a wait for the coordinator may run: the loop
 * cuts the interval when the wait ends (cl_activity_pump). */
#define INTERVAL_CUT_SLACK_US 100000

/*
 * How long the next send or receive may wait: REPLY_TIMEOUT_MS, or less when the silence
 * deadline comes sooner, or, while a stage runs, the end of its current interval (plus
 * INTERVAL_CUT_SLACK_US).  The last bound is what keeps the interval series whole through a
 * silent control link: without it a partition held the loop in one 3 s wait after another
 * and several seconds were filed as one interval (docs/protocol.md, "Faults").  An abandoned
 * REPORT is sent again with the same seq; an abandoned POLL is simply followed by another.
 */
static nng_duration bounded_wait_ms(struct session *s)
{
	int64_t now = cl_mono_us();
	int64_t left_us = REPLY_TIMEOUT_MS * 1000LL;
	if (s->last_reply_us && s->last_reply_us + CL_WIRE_AGENT_SILENCE_US - now < left_us)
		left_us = s->last_reply_us + CL_WIRE_AGENT_SILENCE_US - now;
	if (s->act == ACT_STAGE && s->report_interval_us > 0) {
		int64_t due =
		    s->start_local_us + (int64_t)(s->interval + 1) * s->report_interval_us;
		if (due + INTERVAL_CUT_SLACK_US - now < left_us)
			left_us = due + INTERVAL_CUT_SLACK_US - now;
	}
	int64_t left_ms = left_us / 1000 + 1;
	if (left_ms < 1)
		left_ms = 1;
	return (nng_duration)left_ms;
}

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

static void on_aio_done(void *arg)
{
	struct aio_wait *w = arg;
	atomic_store(&w->done, true);
	cl_wake_poke();
}

/*
 * Starts op on the session's aio and waits for it on the control thread's wake-up (wake.h),
 * which its callback and a stop's signal handler poke; a stop cancels it (nng's own blocking
 * calls wait out their whole timeout, which kept an idle agent from exiting on SIGTERM for
 * seconds).  Returns the nng result, NNG_ECANCELED when stopped.
 */
static int run_aio(struct session *s, void (*op)(nng_socket, nng_aio *), nng_duration timeout_ms)
{
	struct aio_wait *w = &s->aio_wait;
	bool cancelled = false;
	atomic_store(&w->done, false);
	nng_aio_set_timeout(s->aio, timeout_ms);
	op(s->sock, s->aio);
	while (!atomic_load(&w->done)) {
		if (!cancelled && atomic_load(s->stop)) {
			cancelled = true;
			nng_aio_cancel(s->aio); /* the callback still runs, with NNG_ECANCELED */
			continue;
		}
		cl_wake_sleep(1000000);
	}
	/* An operation that finished before the cancel reached it stands (a sent message is
	 * nng's, a received one ours to free). */
	int rc = nng_aio_result(s->aio);
	return rc != 0 && cancelled ? NNG_ECANCELED : rc;
}

int cl_session_send(struct session *s, const void *data, size_t len, struct cl_msg *reply,
		    int64_t *t_send, int64_t *t_recv, struct cl_err *err)
{
	*t_send = cl_mono_us();
	nng_msg *m = NULL;
	if (nng_msg_alloc(&m, 0) != 0 || nng_msg_append(m, data, len) != 0) {
		nng_msg_free(m);
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	}
	/* Never wait past the silence deadline, neither for a connection to send on nor for
	 * the reply: a dead coordinator must stop the load after CL_WIRE_AGENT_SILENCE_US, not
	 * after the next whole 3 s timeout. */
	nng_aio_set_msg(s->aio, m);
	int rc = run_aio(s, nng_send_aio, bounded_wait_ms(s));
	if (rc != 0) {
		nng_msg_free(nng_aio_get_msg(s->aio)); /* not sent: still ours */
		nng_aio_set_msg(s->aio, NULL);
		if (rc == NNG_ECANCELED)
			return cl_err_set(err, CL_ECLOSED, "stopped");
		return cl_err_set(err, CL_EIO, "send to coordinator failed: %s", nng_strerror(rc));
	}
	rc = run_aio(s, nng_recv_aio, bounded_wait_ms(s));
	*t_recv = cl_mono_us();
	if (rc == NNG_ECANCELED)
		return cl_err_set(err, CL_ECLOSED, "stopped");
	if (rc == NNG_ETIMEDOUT)
		return cl_err_set(err, CL_ETIMEDOUT, "no reply from coordinator in %lld ms",
				  (long long)((*t_recv - *t_send) / 1000));
	if (rc != 0)
		return cl_err_set(err, CL_EIO, "receive from coordinator failed: %s",
				  nng_strerror(rc));
	m = nng_aio_get_msg(s->aio);
	nng_aio_set_msg(s->aio, NULL);
	rc = cl_wire_decode(nng_msg_body(m), nng_msg_len(m), reply, err);
	nng_msg_free(m);
	if (rc != 0)
		return cl_err_prefix(err, "bad reply from coordinator");
	s->last_reply_us = *t_recv;
	return 0;
}

static int exchange(struct session *s, struct cl_msg *req, struct cl_msg *reply, struct cl_err *err)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	req->run = s->run;
	req->agent = s->agent_id;
	req->seq = ++s->seq;
	int rc = cl_wire_encode(req, &sb, err);
	int64_t t_send = 0, t_recv = 0;
	if (rc == 0)
		rc = cl_session_send(s, sb.data, sb.size, reply, &t_send, &t_recv, err);
	msgpack_sbuffer_destroy(&sb);
	if (rc == 0) {
		if (reply->type == CL_MSG_CMD)
			cl_clock_est_add(&s->clock, t_send, reply->cmd.t_coord_recv_us,
					 reply->cmd.t_coord_us, t_recv);
		else if (reply->type == CL_MSG_WELCOME)
			cl_clock_est_add(&s->clock, t_send, reply->welcome.t_coord_recv_us,
					 reply->welcome.t_coord_us, t_recv);
	}
	return rc;
}

void cl_session_fail(struct session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	s->state = CL_AGENT_FAILED;
	CL_ERROR("%s", s->error);
}

/* Applies a new command; returns whether the workload is still arriving in parts (more
 * follow at once, so the agent polls again without its pause). */
static bool apply_command(struct session *s, struct cl_msg *reply)
{
	struct cl_msg_cmd *c = &reply->cmd;
	if (c->cmd == CL_CMD_NOOP || c->cmd_seq <= s->applied_seq)
		return false;
	s->applied_seq = c->cmd_seq;
	CL_DEBUG("command %s (seq %llu)", cl_cmd_name(c->cmd), (unsigned long long)c->cmd_seq);
	switch (c->cmd) {
	case CL_CMD_PREPARE:
		cl_activity_prepare(s, reply);
		return s->state == CL_AGENT_PREPARING;
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
		if (s->act_engine && c->stop.stage == s->stage)
			cl_engine_stop(s->act_engine, false);
		break;
	case CL_CMD_ABORT:
		cl_activity_stop(s, true);
		cl_probe_thread_stop(s);
		s->state = CL_AGENT_IDLE;
		break;
	case CL_CMD_QUIT:
		s->quit = true;
		break;
	case CL_CMD_BODIES:
		cl_activity_bodies(s, c);
		return s->state == CL_AGENT_PREPARING;
	default:
		break;
	}
	return false;
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
	if (!cl_session_nap(s->stop, wait_us))
		return; /* stopping: the loop ends at its next turn */
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
	int rc = exchange(s, &m, &reply, err);
	if (rc != 0)
		return rc;
	if (reply.type == CL_MSG_REFUSE) {
		rc = cl_err_set(err, CL_EREFUSED, "coordinator refused this agent: %s",
				reply.refuse.reason);
	} else if (reply.type != CL_MSG_WELCOME) {
		rc = cl_err_set(err, CL_EPROTO, "expected WELCOME, got %s",
				cl_msg_type_name(reply.type) ? cl_msg_type_name(reply.type) : "?");
	} else {
		s->agent_id = reply.welcome.agent_id;
		snprintf(s->run, sizeof(s->run), "%s", reply.run ? reply.run : "");
		s->report_interval_us = reply.welcome.report_interval_us > 0
					    ? reply.welcome.report_interval_us
					    : 1000000;
	}
	cl_msg_free(&reply);
	return rc;
}

void cl_session_cleanup(struct session *s)
{
	cl_probe_thread_stop(s);
	cl_activity_destroy(s);
	cl_msg_free(&s->prepare_msg);
	cl_msg_free(&s->probe_msg);
	cl_report_queue_clear(s);
	if (s->acc_ready)
		cl_metrics_destroy(&s->acc);
	s->acc_ready = false;
	if (s->aio) {
		nng_aio_stop(s->aio);
		nng_msg_free(nng_aio_get_msg(s->aio));
		nng_aio_free(s->aio);
	}
	s->aio = NULL;
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
	atomic_init(&s->aio_wait.done, false);
	if ((rc = nng_aio_alloc(&s->aio, on_aio_done, &s->aio_wait)) != 0) {
		CL_ERROR("cannot open control socket: %s", nng_strerror(rc));
		return CL_ENOMEM;
	}
	nng_socket_set_ms(s->sock, NNG_OPT_REQ_RESENDTIME, CL_WIRE_RESEND_MS);
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
	s->state = CL_AGENT_IDLE;
	s->last_reply_us = cl_mono_us();

	while (!s->quit) {
		int64_t now = cl_mono_us();
		if (atomic_load(s->stop)) {
			cl_activity_stop(s, true);
			cl_probe_thread_stop(s);
			return CL_ECLOSED;
		}
		if (now - s->last_reply_us > CL_WIRE_AGENT_SILENCE_US) {
			CL_ERROR("coordinator silent for %lld s: stopping all load",
				 (long long)((now - s->last_reply_us) / 1000000));
			cl_activity_stop(s, true);
			cl_probe_thread_stop(s);
			return CL_ETIMEDOUT;
		}
		cl_probe_thread_pump(s, now);
		cl_activity_pump(s, now);
		if (s->q_len) {
			rc = cl_report_queue_flush_one(s, &err);
			if (rc == CL_EREFUSED) {
				CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
				cl_activity_stop(s, true);
				return rc;
			}
			if (rc != 0)
				CL_DEBUG("%s", cl_err_format(&err, msg, sizeof(msg)));
			continue; /* reports first, then the next POLL */
		}
		struct cl_msg m, reply = { 0 };
		fill_poll(s, &m, now);
		rc = exchange(s, &m, &reply, &err);
		if (rc == 0 && reply.type == CL_MSG_REFUSE) {
			CL_ERROR("coordinator ended the session: %s", reply.refuse.reason);
			cl_msg_free(&reply);
			cl_activity_stop(s, true);
			return CL_EREFUSED;
		}
		bool more = false;
		if (rc == 0 && reply.type == CL_MSG_CMD)
			more = apply_command(s, &reply);
		else if (rc != 0)
			CL_DEBUG("%s", cl_err_format(&err, msg, sizeof(msg)));
		cl_msg_free(&reply);
		if (!s->q_len && !s->quit && !more) {
			int64_t wait = POLL_EVERY_US - (cl_mono_us() - now);
			if (wait > 0)
				sleep_watching(s, wait);
		}
	}
	/* QUIT: tell the coordinator we are going (best effort), then end. */
	cl_activity_stop(s, true);
	cl_probe_thread_stop(s);
	return 0;
}
