/* The agent's control loop: one session per run over an nng REQ socket (HELLO, then POLL /
 * REPORT), applying commands to the engine and the readiness gate. */
#include "control.h"

#include "engine/engine.h"
#include "probe/readiness.h"

#include "chatload/clock.h"
#include "chatload/log.h"
#include "chatload/wire.h"

#include <curl/curl.h>
#include <errno.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* How often an idle or running agent polls.  Short polls (the coordinator answers at once)
 * keep the coordinator single-threaded; see docs/protocol.md. */
#define POLL_EVERY_US       100000
#define REPLY_TIMEOUT_MS    3000
#define MAX_PENDING_REPORTS 64

enum activity { ACT_NONE, ACT_STAGE, ACT_WARMUP };

struct pending_report {
	msgpack_sbuffer buf;
	uint64_t seq;
	char what[32];
};

struct session {
	const struct cl_agent_opts *o;
	volatile sig_atomic_t *stop;
	nng_socket sock;
	bool sock_open;
	uint64_t seq;
	uint32_t agent_id;
	char run[CL_WIRE_MAX_RUN + 1];
	int64_t report_interval_us;
	struct cl_clock_est clock;
	int64_t last_reply_us;
	uint64_t applied_seq;
	enum cl_agent_state state;
	char error[CL_WIRE_MAX_ERROR];
	bool quit;   /* QUIT received */
	bool failed; /* the session ended badly */

	/* PREPARE */
	struct cl_msg prepare_msg; /* owns the decoded target and workload */
	bool prepared;
	struct cl_engine *engine;

	/* stage or warmup in progress */
	enum activity act;
	struct cl_engine *act_engine; /* engine running it (engine, or warm_engine) */
	struct cl_engine *warm_engine;
	struct cl_workload_plan warm_workload;
	struct cl_request_body warm_body;
	uint32_t stage;
	uint32_t interval;
	int64_t interval_start_us;
	int64_t start_local_us;
	int64_t start_skew_us; /* how late START_AT was applied; sent with the first report */
	struct cl_metrics acc;
	bool acc_ready;

	/* PROBE, run on its own thread because the gate blocks */
	pthread_t probe_thread;
	bool probe_running;
	volatile int probe_cancel;
	volatile int probe_done;
	struct cl_msg probe_msg; /* owns the probe settings */
	struct cl_probe_cfg probe_cfg;
	struct cl_readiness_result probe_res;
	/* progress of a running gate, handed over from its thread */
	pthread_mutex_t probe_mu;
	struct cl_readiness_result probe_now;
	bool probe_news;
	int64_t probe_last_sent_us;

	/* reports waiting for their ACK, oldest first */
	struct pending_report q[MAX_PENDING_REPORTS];
	size_t q_head, q_len;

	int64_t cpu_prev_us, cpu_prev_at_us;
};

bool cl_agent_target_allowed(const struct cl_agent_opts *o, const char *base_url, char *why,
			     size_t n)
{
	if (!o->n_allow)
		return true;
	const char *p = strstr(base_url, "://");
	p = p ? p + 3 : base_url;
	size_t hostport_len = strcspn(p, "/?#");
	char hostport[512];
	if (hostport_len >= sizeof(hostport))
		hostport_len = sizeof(hostport) - 1;
	memcpy(hostport, p, hostport_len);
	hostport[hostport_len] = '\0';
	char host[512];
	snprintf(host, sizeof(host), "%s", hostport);
	/* Split off the port, minding [v6]:port. */
	char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
	const char *port = NULL;
	if (colon) {
		if (host[0] == '[')
			colon++;
		*colon = '\0';
		port = colon + 1;
	}
	if (!port)
		port = strncmp(base_url, "https", 5) == 0 ? "443" : "80";
	char with_port[600];
	snprintf(with_port, sizeof(with_port), "%s:%s", host, port);
	for (size_t i = 0; i < o->n_allow; i++) {
		if (strcasecmp(o->allow[i], host) == 0 || strcasecmp(o->allow[i], with_port) == 0)
			return true;
	}
	snprintf(why, n, "target '%s' is not in this agent's --allow-target list", with_port);
	return false;
}

/* ---- requests ----------------------------------------------------------------------- */

/* Sets option (a send or receive timeout) to REPLY_TIMEOUT_MS, or less when the silence
 * deadline comes sooner. */
static void bound_wait(struct session *s, const char *option)
{
	int64_t left_ms = REPLY_TIMEOUT_MS;
	if (s->last_reply_us) {
		left_ms = (s->last_reply_us + CL_WIRE_AGENT_SILENCE_US - cl_mono_us()) / 1000 + 1;
		if (left_ms > REPLY_TIMEOUT_MS)
			left_ms = REPLY_TIMEOUT_MS;
		if (left_ms < 1)
			left_ms = 1;
	}
	nng_socket_set_ms(s->sock, option, (nng_duration)left_ms);
}

static int send_bytes(struct session *s, const void *data, size_t len, struct cl_msg *reply,
		      int64_t *t_send, int64_t *t_recv, struct cl_err *err)
{
	*t_send = cl_mono_us();
	/* Never wait past the silence deadline, neither for a connection to send on nor for
	 * the reply: a dead coordinator must stop the load after CL_WIRE_AGENT_SILENCE_US, not
	 * after the next whole 3 s timeout. */
	bound_wait(s, NNG_OPT_SENDTIMEO);
	int rc = nng_send(s->sock, (void *)data, len, 0);
	if (rc != 0)
		return cl_err_set(err, CL_EIO, "send to coordinator failed: %s", nng_strerror(rc));
	void *buf = NULL;
	size_t n = 0;
	bound_wait(s, NNG_OPT_RECVTIMEO);
	rc = nng_recv(s->sock, &buf, &n, NNG_FLAG_ALLOC);
	*t_recv = cl_mono_us();
	if (rc == NNG_ETIMEDOUT)
		return cl_err_set(err, CL_ETIMEDOUT, "no reply from coordinator in %d ms",
				  REPLY_TIMEOUT_MS);
	if (rc != 0)
		return cl_err_set(err, CL_EIO, "receive from coordinator failed: %s",
				  nng_strerror(rc));
	rc = cl_wire_decode(buf, n, reply, err);
	nng_free(buf, n);
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
		rc = send_bytes(s, sb.data, sb.size, reply, &t_send, &t_recv, err);
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

/* Queues a report (encoded now, so a resend after a lost ACK carries the same seq and is
 * deduplicated by the coordinator). */
static void queue_report(struct session *s, struct cl_msg_report *rep, const char *what)
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

static int flush_one_report(struct session *s, struct cl_err *err)
{
	struct pending_report *p = &s->q[s->q_head];
	struct cl_msg reply = { 0 };
	int64_t t_send, t_recv;
	int rc = send_bytes(s, p->buf.data, p->buf.size, &reply, &t_send, &t_recv, err);
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

/* ---- engine, warmup and probe -------------------------------------------------------- */

static void fail(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	s->state = CL_AGENT_FAILED;
	CL_ERROR("%s", s->error);
}

static void stop_activity(struct session *s, bool cut_now)
{
	if (s->act_engine) {
		cl_engine_stop(s->act_engine, cut_now);
		cl_engine_wait(s->act_engine, 15 * 1000000LL);
	}
	s->act = ACT_NONE;
	s->act_engine = NULL;
}

static void stop_probe(struct session *s)
{
	if (!s->probe_running)
		return;
	s->probe_cancel = 1;
	pthread_join(s->probe_thread, NULL);
	s->probe_running = false;
}

static void destroy_engines(struct session *s)
{
	stop_activity(s, true);
	cl_engine_destroy(s->engine);
	s->engine = NULL;
	cl_engine_destroy(s->warm_engine);
	s->warm_engine = NULL;
	free(s->warm_body.json);
	memset(&s->warm_body, 0, sizeof(s->warm_body));
}

static struct cl_engine *make_engine(struct session *s, const struct cl_workload_plan *w)
{
	char prefix[CL_ENGINE_MAX_PREFIX + 1];
	if (s->o->id_prefix)
		snprintf(prefix, sizeof(prefix), "%s", s->o->id_prefix);
	else
		snprintf(prefix, sizeof(prefix), "a%u", s->agent_id);
	struct cl_engine_cfg cfg = {
		.workers = s->o->workers,
		.target = &s->prepare_msg.cmd.prepare.target,
		.workload = w,
		.request_id_prefix = prefix,
		.request_log_path = s->o->request_log,
	};
	struct cl_engine *e = NULL;
	struct cl_err err = { 0 };
	if (cl_engine_create(&cfg, &e, &err) != 0) {
		char msg[600];
		fail(s, "cannot start the load engine: %s", cl_err_format(&err, msg, sizeof(msg)));
		return NULL;
	}
	return e;
}

static void apply_prepare(struct session *s, struct cl_msg *reply)
{
	char why[600];
	destroy_engines(s);
	cl_msg_free(&s->prepare_msg);
	s->prepared = false;
	/* Take ownership of the decoded plan: the reply is zeroed so it is not freed twice. */
	s->prepare_msg = *reply;
	memset(reply, 0, sizeof(*reply));
	const struct cl_target_plan *t = &s->prepare_msg.cmd.prepare.target;
	if (!cl_agent_target_allowed(s->o, t->base_url, why, sizeof(why))) {
		fail(s, "%s", why);
		return;
	}
	s->engine = make_engine(s, &s->prepare_msg.cmd.prepare.workload);
	if (!s->engine)
		return;
	s->prepared = true;
	s->state = CL_AGENT_READY;
	CL_INFO("prepared: target %s, model %s, %zu request bodies", t->base_url,
		t->model ? t->model : "?", s->prepare_msg.cmd.prepare.workload.n_bodies);
}

static void begin(struct session *s, enum activity act, struct cl_engine *e,
		  const struct cl_stage_plan *share, int64_t start_local_us)
{
	struct cl_err err = { 0 };
	if (!s->acc_ready) {
		if (cl_metrics_init(&s->acc) != 0) {
			fail(s, "out of memory for metrics");
			return;
		}
		s->acc_ready = true;
	}
	/* Anything left over from an earlier activity is not this one's. */
	cl_metrics_reset(&s->acc);
	cl_engine_collect(e, &s->acc);
	cl_metrics_reset(&s->acc);
	if (cl_engine_start(e, share, start_local_us, &err) != 0) {
		char msg[600];
		fail(s, "cannot start stage %u: %s", share->index,
		     cl_err_format(&err, msg, sizeof(msg)));
		return;
	}
	s->act = act;
	s->act_engine = e;
	s->stage = share->index;
	s->interval = 0;
	s->start_local_us = start_local_us;
	int64_t late = cl_mono_us() - start_local_us;
	s->start_skew_us = late > 0 ? late : 0;
	s->interval_start_us = start_local_us > cl_mono_us() ? start_local_us : cl_mono_us();
	s->state = CL_AGENT_RUNNING;
}

static void apply_warmup(struct session *s, struct cl_msg_cmd *c)
{
	if (!s->prepared) {
		fail(s, "WARMUP before PREPARE");
		return;
	}
	struct cl_engine *e = s->engine;
	if (c->warmup.body_json) {
		/* Warmup has its own body (max_tokens, thinking switched off...): its own engine.
		 */
		cl_engine_destroy(s->warm_engine);
		free(s->warm_body.json);
		s->warm_body.json = strdup(c->warmup.body_json);
		if (!s->warm_body.json) {
			fail(s, "out of memory");
			return;
		}
		s->warm_body.len = strlen(s->warm_body.json);
		s->warm_workload = s->prepare_msg.cmd.prepare.workload;
		s->warm_workload.bodies = &s->warm_body;
		s->warm_workload.n_bodies = 1;
		if (c->warmup.request_timeout_us)
			s->warm_workload.request_timeout_us = c->warmup.request_timeout_us;
		s->warm_engine = e = make_engine(s, &s->warm_workload);
		if (!e)
			return;
	}
	begin(s, ACT_WARMUP, e, &c->warmup.stage, cl_mono_us());
}

/* Runs on the gate's thread after every attempt: keeps the latest state for the control
 * loop, which sends it on as an interim PROBE report (status pending). */
static void probe_progress(void *ctx, const struct cl_readiness_result *now, int64_t next_us)
{
	struct session *s = ctx;
	pthread_mutex_lock(&s->probe_mu);
	s->probe_now = *now;
	s->probe_news = true;
	pthread_mutex_unlock(&s->probe_mu);
}

static void *probe_main(void *arg)
{
	struct session *s = arg;
	cl_probe_run(&s->probe_cfg, probe_progress, s, &s->probe_cancel, &s->probe_res);
	s->probe_done = 1;
	return NULL;
}

static void apply_probe(struct session *s, struct cl_msg *reply)
{
	stop_probe(s);
	cl_msg_free(&s->probe_msg);
	s->probe_msg = *reply;
	memset(reply, 0, sizeof(*reply));
	const struct cl_cmd_probe *p = &s->probe_msg.cmd.probe;
	const struct cl_target_plan *t = p->target;
	if (!t && s->prepared)
		t = &s->prepare_msg.cmd.prepare.target;
	if (!t) {
		fail(s, "PROBE without a target (and no PREPARE before it)");
		return;
	}
	char why[600];
	if (!cl_agent_target_allowed(s->o, t->base_url, why, sizeof(why))) {
		fail(s, "%s", why);
		return;
	}
	s->probe_cfg = (struct cl_probe_cfg){
		.target = t,
		.timeout_us = p->timeout_us,
		.request_timeout_us = p->request_timeout_us,
		.consecutive = p->consecutive,
		.body_json = p->body_json,
		.prompt = p->prompt,
		.max_tokens = p->max_tokens,
		.extra_body_json = p->extra_body_json,
		.backoff_initial_us = p->backoff_initial_us,
		.backoff_max_us = p->backoff_max_us,
		.seed = p->seed + s->agent_id,
	};
	memset(&s->probe_res, 0, sizeof(s->probe_res));
	s->probe_cancel = 0;
	s->probe_done = 0;
	if (pthread_create(&s->probe_thread, NULL, probe_main, s) != 0) {
		fail(s, "cannot start the readiness gate thread: %s", strerror(errno));
		return;
	}
	s->probe_running = true;
	s->state = CL_AGENT_PREPARING;
	CL_INFO("readiness gate started for %s", t->base_url);
}

static void apply_command(struct session *s, struct cl_msg *reply)
{
	struct cl_msg_cmd *c = &reply->cmd;
	if (c->cmd == CL_CMD_NOOP || c->cmd_seq <= s->applied_seq)
		return;
	s->applied_seq = c->cmd_seq;
	CL_DEBUG("command %s (seq %llu)", cl_cmd_name(c->cmd), (unsigned long long)c->cmd_seq);
	switch (c->cmd) {
	case CL_CMD_PREPARE:
		apply_prepare(s, reply);
		break;
	case CL_CMD_PROBE:
		apply_probe(s, reply);
		break;
	case CL_CMD_WARMUP:
		apply_warmup(s, c);
		break;
	case CL_CMD_START_AT:
		if (!s->prepared) {
			fail(s, "START_AT before PREPARE");
			break;
		}
		begin(s, ACT_STAGE, s->engine, &c->start_at.stage,
		      cl_clock_est_to_local(&s->clock, c->start_at.start_at_coord_us));
		break;
	case CL_CMD_STOP:
		if (s->act_engine && c->stop.stage == s->stage)
			cl_engine_stop(s->act_engine, false);
		break;
	case CL_CMD_ABORT:
		stop_activity(s, true);
		stop_probe(s);
		s->state = CL_AGENT_IDLE;
		break;
	case CL_CMD_QUIT:
		s->quit = true;
		break;
	default:
		break;
	}
}

/* Sends the stage's delta when an interval has passed, and the final one when it ended. */
static void pump_activity(struct session *s, int64_t now)
{
	if (s->probe_running && !s->probe_done && now - s->probe_last_sent_us >= 2000000) {
		struct cl_readiness_result snap;
		bool news;
		pthread_mutex_lock(&s->probe_mu);
		snap = s->probe_now;
		news = s->probe_news;
		s->probe_news = false;
		pthread_mutex_unlock(&s->probe_mu);
		if (news && snap.status == CL_READY_PENDING) {
			struct cl_msg_report rep = { .kind = CL_REPORT_PROBE,
						     .readiness = &snap,
						     .t_send_us = now };
			queue_report(s, &rep, "probe progress");
			s->probe_last_sent_us = now;
		}
	}
	if (s->probe_running && s->probe_done) {
		pthread_join(s->probe_thread, NULL);
		s->probe_running = false;
		struct cl_msg_report rep = { .kind = CL_REPORT_PROBE,
					     .readiness = &s->probe_res,
					     .t_send_us = now };
		queue_report(s, &rep, "probe");
		s->state = CL_AGENT_IDLE;
	}
	if (s->act == ACT_NONE)
		return;
	enum cl_engine_state es = cl_engine_state(s->act_engine);
	bool done = es == CL_ENGINE_DONE;
	if (es == CL_ENGINE_DRAINING)
		s->state = CL_AGENT_DRAINING;
	/* Interval k covers [start + k*I, start + (k+1)*I) on this agent's clock, so every
	 * agent's interval k is the same stretch of time, however late a report goes out. */
	bool interval_due =
	    s->act == ACT_STAGE &&
	    now >= s->start_local_us + (int64_t)(s->interval + 1) * s->report_interval_us;
	if (!done && !interval_due)
		return;
	cl_metrics_reset(&s->acc);
	cl_engine_collect(s->act_engine, &s->acc);
	struct cl_msg_report rep = {
		.stage = s->stage,
		.interval = s->interval,
		.span_us = now - s->interval_start_us,
		.metrics = &s->acc,
		.t_send_us = now,
		.start_skew_us = s->start_skew_us,
	};
	s->start_skew_us = 0; /* once per stage */
	if (!done) {
		/* After a stall (SIGSTOP, a starved host) several intervals may have ended: the
		 * delta goes under the last of them and numbering resumes in step with the
		 * others, instead of lagging behind them for the rest of the stage. */
		uint32_t ended = (uint32_t)((now - s->start_local_us) / s->report_interval_us);
		rep.kind = CL_REPORT_INTERVAL;
		rep.interval = ended - 1;
		queue_report(s, &rep, "interval");
		s->interval = ended;
		s->interval_start_us = now;
		return;
	}
	rep.kind = s->act == ACT_WARMUP ? CL_REPORT_WARMUP : CL_REPORT_FINAL;
	queue_report(s, &rep, s->act == ACT_WARMUP ? "warmup" : "final");
	s->act = ACT_NONE;
	s->act_engine = NULL;
	s->state = CL_AGENT_DONE;
}

/* ---- the session ---------------------------------------------------------------------- */

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

static void session_cleanup(struct session *s)
{
	stop_probe(s);
	destroy_engines(s);
	cl_msg_free(&s->prepare_msg);
	cl_msg_free(&s->probe_msg);
	while (s->q_len) {
		msgpack_sbuffer_destroy(&s->q[s->q_head].buf);
		s->q_head = (s->q_head + 1) % MAX_PENDING_REPORTS;
		s->q_len--;
	}
	if (s->acc_ready)
		cl_metrics_destroy(&s->acc);
	s->acc_ready = false;
	if (s->sock_open)
		nng_close(s->sock);
	s->sock_open = false;
}

/* One session: dial, HELLO until welcomed, then POLL/REPORT until QUIT, silence or stop.
 * Returns 0 after QUIT, CL_ETIMEDOUT after silence, CL_EREFUSED, or another error. */
static int session_run(struct session *s)
{
	struct cl_err err = { 0 };
	char msg[700];
	int rc = nng_req0_open(&s->sock);
	if (rc != 0) {
		CL_ERROR("cannot open control socket: %s", nng_strerror(rc));
		return CL_ESYS;
	}
	s->sock_open = true;
	nng_socket_set_ms(s->sock, NNG_OPT_REQ_RESENDTIME, CL_WIRE_RESEND_MS);
	nng_socket_set_ms(s->sock, NNG_OPT_RECVTIMEO, REPLY_TIMEOUT_MS);
	nng_socket_set_ms(s->sock, NNG_OPT_SENDTIMEO, REPLY_TIMEOUT_MS);
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
		if (*s->stop)
			return CL_ECLOSED;
		rc = hello(s, &err);
		if (rc == 0)
			break;
		if (rc == CL_EREFUSED) {
			CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
			return rc;
		}
		CL_DEBUG("waiting for coordinator at %s: %s", s->o->connect_url,
			 cl_err_format(&err, msg, sizeof(msg)));
		/* The background dialer keeps its errors to itself: every few seconds without
		 * an answer, dial once in the open and say what goes wrong. */
		if (cl_mono_us() >= next_probe_us) {
			struct cl_err perr = { 0 };
			if (cl_transport_probe_dial(s->o->connect_url, &s->o->tls, s->o->insecure,
						    2000, &perr) != 0)
				CL_WARN("%s", cl_err_format(&perr, msg, sizeof(msg)));
			else
				CL_WARN("no answer from coordinator at %s yet: %s",
					s->o->connect_url, cl_err_format(&err, msg, sizeof(msg)));
			next_probe_us = cl_mono_us() + 10 * 1000000LL;
		}
		cl_sleep_ns(backoff_us * 1000);
		if (backoff_us < 2000000)
			backoff_us *= 2;
	}
	/* the part after '/' is the session secret: not for logs */
	CL_INFO("joined run '%.*s' as agent %u", (int)strcspn(s->run, "/"), s->run, s->agent_id);
	s->state = CL_AGENT_IDLE;
	s->last_reply_us = cl_mono_us();

	while (!s->quit) {
		int64_t now = cl_mono_us();
		if (*s->stop) {
			stop_activity(s, true);
			stop_probe(s);
			return CL_ECLOSED;
		}
		if (now - s->last_reply_us > CL_WIRE_AGENT_SILENCE_US) {
			CL_ERROR("coordinator silent for %lld s: stopping all load",
				 (long long)((now - s->last_reply_us) / 1000000));
			stop_activity(s, true);
			stop_probe(s);
			return CL_ETIMEDOUT;
		}
		pump_activity(s, now);
		if (s->q_len) {
			rc = flush_one_report(s, &err);
			if (rc == CL_EREFUSED) {
				CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
				stop_activity(s, true);
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
			stop_activity(s, true);
			return CL_EREFUSED;
		}
		if (rc == 0 && reply.type == CL_MSG_CMD)
			apply_command(s, &reply);
		else if (rc != 0)
			CL_DEBUG("%s", cl_err_format(&err, msg, sizeof(msg)));
		cl_msg_free(&reply);
		if (!s->q_len && !s->quit) {
			int64_t wait = POLL_EVERY_US - (cl_mono_us() - now);
			if (wait > 0)
				cl_sleep_ns(wait * 1000);
		}
	}
	/* QUIT: tell the coordinator we are going (best effort), then end. */
	stop_activity(s, true);
	stop_probe(s);
	return 0;
}

int cl_agent_serve(const struct cl_agent_opts *o, volatile sig_atomic_t *stop)
{
	int code = 0;
	for (;;) {
		struct session *s = calloc(1, sizeof(*s));
		if (!s) {
			CL_ERROR("out of memory");
			code = 1;
			break;
		}
		s->o = o;
		s->stop = stop;
		pthread_mutex_init(&s->probe_mu, NULL);
		int rc = session_run(s);
		bool failed = s->state == CL_AGENT_FAILED;
		session_cleanup(s);
		pthread_mutex_destroy(&s->probe_mu);
		free(s);
		if (*stop)
			break;
		if (o->once) {
			code = (rc == 0 && !failed) ? 0 : 1;
			break;
		}
		if (rc == 0)
			CL_INFO("run finished; waiting for the next one");
		cl_sleep_ns(rc == CL_EREFUSED ? 5000000000LL : 500000000LL);
	}
	return code;
}
