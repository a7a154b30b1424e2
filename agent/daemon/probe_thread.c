/* PROBE: the readiness gate run on a thread of its own (it blocks for minutes), its progress
 * handed to the control loop under a mutex and its result when it has finished. */

#include "agent/daemon/probe_thread.h"
#include "agent/daemon/allow.h"
#include "agent/daemon/report_queue.h"
#include "agent/daemon/wake.h"

#include "chatload/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Runs on the gate's thread after every attempt: keeps the latest state for the control
 * loop, which sends it on as an interim PROBE report (status pending). */
static void probe_progress(void *ctx, const struct cl_readiness_result *now, int64_t next_us)
{
	struct session *s = ctx;
	pthread_mutex_lock(&s->probe_mu);
	s->probe_now = *now;
	s->probe_news = true;
	pthread_mutex_unlock(&s->probe_mu);
	cl_wake_poke(); /* a phase that passed is sent on at once (cl_probe_thread_pump) */
}

/*
 * Several endpoints (target.urls): the gate runs on each in turn, each with the whole
 * readiness timeout, and stops at the first that does not pass; its URL leads the error, so
 * the run's failure names the endpoint.  When all pass, the first's result (the model it
 * found) is the agent's.
 */
static void probe_endpoints(struct session *s)
{
	const struct cl_target_plan *t = s->probe_cfg.target;
	struct cl_readiness_result first = { 0 };
	for (size_t i = 0; i < t->n_endpoints; i++) {
		struct cl_target_plan one = *t; /* shallow: only the base URL differs */
		one.base_url = t->endpoints[i];
		one.endpoints = NULL;
		one.n_endpoints = 0;
		struct cl_probe_cfg cfg = s->probe_cfg;
		cfg.target = &one;
		int rc = cl_probe_run(&cfg, probe_progress, s, &s->probe_cancel, &s->probe_res);
		if (rc != 0) {
			char msg[sizeof(s->probe_res.last_error)];
			int n = snprintf(
			    msg, sizeof(msg), "endpoint %zu %s: %s", i + 1, t->endpoints[i],
			    s->probe_res.last_error[0] ? s->probe_res.last_error : "not ready");
			if (n >= (int)sizeof(msg)) /* the server's words cut: say so */
				memcpy(msg + sizeof(msg) - 4, "...", 4);
			memcpy(s->probe_res.last_error, msg, sizeof(msg));
			return;
		}
		if (i == 0)
			first = s->probe_res;
		else
			CL_INFO("readiness gate: endpoint %zu %s ready", i + 1, t->endpoints[i]);
	}
	s->probe_res = first;
}

static void *probe_main(void *arg)
{
	struct session *s = arg;
	if (s->probe_cfg.target->n_endpoints)
		probe_endpoints(s);
	else
		cl_probe_run(&s->probe_cfg, probe_progress, s, &s->probe_cancel, &s->probe_res);
	atomic_store(&s->probe_done, 1);
	cl_wake_poke(); /* the control loop sends the result at once */
	return NULL;
}

void cl_probe_thread_start(struct session *s, struct cl_msg *reply)
{
	cl_probe_thread_stop(s);
	cl_msg_free(&s->probe_msg);
	s->probe_msg = *reply;
	memset(reply, 0, sizeof(*reply));
	const struct cl_cmd_probe *p = &s->probe_msg.cmd.probe;
	const struct cl_target_plan *t = p->target;
	if (!t && s->prepared)
		t = &s->prepare_msg.cmd.prepare.target;
	if (!t) {
		cl_session_fail(s, "PROBE without a target (and no PREPARE before it)");
		return;
	}
	char why[600];
	if (!cl_agent_plan_allowed(s->o, t, why, sizeof(why))) {
		cl_session_fail(s, "%s", why);
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
		.allow = s->o->allow,
	};
	memset(&s->probe_res, 0, sizeof(s->probe_res));
	s->probe_sent_phase = CL_READY_CONNECT;
	atomic_store(&s->probe_cancel, 0);
	atomic_store(&s->probe_done, 0);
	if (pthread_create(&s->probe_thread, NULL, probe_main, s) != 0) {
		cl_session_fail(s, "cannot start the readiness gate thread: %s", strerror(errno));
		return;
	}
	s->probe_running = true;
	cl_session_set_state(s, CL_AGENT_PREPARING);
	CL_INFO("readiness gate started for %s", t->base_url);
}

void cl_probe_thread_pump(struct session *s, int64_t now)
{
	/* Progress goes at most every 2 s, but a phase that passed goes at once: the
	 * coordinator's "waiting for connect" must not outlive the connect. */
	bool moved = false;
	if (s->probe_running && !atomic_load(&s->probe_done)) {
		pthread_mutex_lock(&s->probe_mu);
		moved = s->probe_news && s->probe_now.phase != s->probe_sent_phase;
		pthread_mutex_unlock(&s->probe_mu);
	}
	if (s->probe_running && !atomic_load(&s->probe_done) &&
	    (moved || now - s->probe_last_sent_us >= 2000000)) {
		struct cl_readiness_result snap;
		bool news;
		pthread_mutex_lock(&s->probe_mu);
		snap = s->probe_now;
		news = s->probe_news;
		s->probe_news = false;
		pthread_mutex_unlock(&s->probe_mu);
		if (news && snap.status == CL_READY_PENDING) {
			s->probe_sent_phase = snap.phase;
			struct cl_msg_report rep = { .kind = CL_REPORT_PROBE,
						     .readiness = &snap,
						     .t_send_us = now };
			cl_report_queue_push(s, &rep, "probe progress");
			s->probe_last_sent_us = now;
		}
	}
	if (s->probe_running && atomic_load(&s->probe_done)) {
		pthread_join(s->probe_thread, NULL);
		s->probe_running = false;
		struct cl_msg_report rep = { .kind = CL_REPORT_PROBE,
					     .readiness = &s->probe_res,
					     .t_send_us = now };
		cl_report_queue_push(s, &rep, "probe");
		cl_session_set_state(s, CL_AGENT_IDLE);
	}
}

void cl_probe_thread_stop(struct session *s)
{
	if (!s->probe_running)
		return;
	atomic_store(&s->probe_cancel, 1);
	pthread_join(s->probe_thread, NULL);
	s->probe_running = false;
}
