/* The agent's engines and what they run: PREPARE builds the engine, WARMUP and START_AT
 * start an activity on it, and its interval and final reports are queued as it goes. */

#include "agent/daemon/activity.h"
#include "agent/daemon/allow.h"
#include "agent/daemon/report_queue.h"
#include "agent/daemon/requests.h"

#include "chatload/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cl_activity_stop(struct session *s, bool cut_now)
{
	if (s->act_engine) {
		cl_engine_stop(s->act_engine, cut_now);
		cl_engine_wait(s->act_engine, 15 * 1000000LL);
	}
	s->act = ACT_NONE;
	s->act_engine = NULL;
}

void cl_activity_destroy(struct session *s)
{
	cl_activity_stop(s, true);
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
		.allow = s->o->allow,
		.source = s->o->source,
		/* Only the stages' engine keeps records: a warmup's own engine never does. */
		.request_records =
		    s->prepare_msg.cmd.prepare.requests && w == &s->prepare_msg.cmd.prepare.workload
			? CL_REQUESTS_RING
			: 0,
	};
	struct cl_engine *e = NULL;
	struct cl_err err = { 0 };
	if (cl_engine_create(&cfg, &e, &err) != 0) {
		char msg[600];
		cl_session_fail(s, "cannot start the load engine: %s",
				cl_err_format(&err, msg, sizeof(msg)));
		return NULL;
	}
	return e;
}

/* The whole workload is here: the engine, then ready. */
static void finish_prepare(struct session *s)
{
	const struct cl_target_plan *t = &s->prepare_msg.cmd.prepare.target;
	s->engine = make_engine(s, &s->prepare_msg.cmd.prepare.workload);
	if (!s->engine)
		return;
	s->prepared = true;
	cl_session_set_state(s, CL_AGENT_READY);
	CL_INFO("prepared: target %s, model %s, %zu request bodies", t->base_url,
		t->model ? t->model : "?", s->prepare_msg.cmd.prepare.workload.n_bodies);
}

void cl_activity_prepare(struct session *s, struct cl_msg *reply)
{
	char why[600];
	cl_activity_destroy(s);
	cl_msg_free(&s->prepare_msg);
	s->prepared = false;
	/* Take ownership of the decoded plan: the reply is zeroed so it is not freed twice. */
	s->prepare_msg = *reply;
	memset(reply, 0, sizeof(*reply));
	const struct cl_target_plan *t = &s->prepare_msg.cmd.prepare.target;
	if (!cl_agent_plan_allowed(s->o, t, why, sizeof(why))) {
		cl_session_fail(s, "%s", why);
		return;
	}
	struct cl_workload_plan *w = &s->prepare_msg.cmd.prepare.workload;
	if (w->total_bodies > w->n_bodies) {
		/* The rest follows in BODIES commands; room for all of it now, so the parts
		 * only move pointers. */
		struct cl_request_body *b = realloc(w->bodies, w->total_bodies * sizeof(*b));
		if (!b) {
			cl_session_fail(s, "out of memory for %zu request bodies", w->total_bodies);
			return;
		}
		w->bodies = b;
		cl_session_set_state(s, CL_AGENT_PREPARING);
		CL_INFO("preparing: %zu of %zu request bodies received", w->n_bodies,
			w->total_bodies);
		return;
	}
	finish_prepare(s);
}

void cl_activity_bodies(struct session *s, struct cl_msg_cmd *c)
{
	struct cl_workload_plan *w = &s->prepare_msg.cmd.prepare.workload;
	struct cl_cmd_bodies *p = &c->bodies;
	if (s->prepared || s->state != CL_AGENT_PREPARING || w->n_bodies >= w->total_bodies) {
		cl_session_fail(s, "BODIES without a PREPARE that awaits them");
		return;
	}
	if (p->offset != w->n_bodies || p->n_bodies > w->total_bodies - w->n_bodies) {
		cl_session_fail(
		    s, "BODIES at %llu with %zu bodies, expected bodies from %zu of %zu",
		    (unsigned long long)p->offset, p->n_bodies, w->n_bodies, w->total_bodies);
		return;
	}
	/* Take the decoded bodies: the command keeps an empty array. */
	for (size_t i = 0; i < p->n_bodies; i++) {
		w->bodies[w->n_bodies++] = p->bodies[i];
		p->bodies[i].json = NULL;
	}
	if (w->n_bodies == w->total_bodies)
		finish_prepare(s);
}

static void begin(struct session *s, enum activity act, struct cl_engine *e,
		  const struct cl_stage_plan *share, int64_t start_local_us)
{
	struct cl_err err = { 0 };
	if (!s->acc_ready) {
		if (cl_metrics_init(&s->acc) != 0) {
			cl_session_fail(s, "out of memory for metrics");
			return;
		}
		s->acc_ready = true;
	}
	/* Anything left over from an earlier activity is not this one's. */
	cl_metrics_reset(&s->acc);
	cl_engine_collect(e, &s->acc);
	cl_metrics_reset(&s->acc);
	struct cl_stall_list old = { 0 };
	cl_engine_take_stalls(e, &old);
	memset(&s->stalls, 0, sizeof(s->stalls));
	/* The client abandons a stage's requests (workload.cancel), never a warmup's: set
	 * before the workers can start any. */
	cl_engine_cancel_requests(e, act == ACT_STAGE);
	if (cl_engine_start(e, share, start_local_us, &err) != 0) {
		char msg[600];
		cl_session_fail(s, "cannot start stage %u: %s", share->index,
				cl_err_format(&err, msg, sizeof(msg)));
		return;
	}
	/* Records are kept for a stage's requests, never a warmup's (on the same engine). */
	cl_engine_record_requests(e, act == ACT_STAGE);
	s->act = act;
	s->act_engine = e;
	s->stage = share->index;
	s->final_wait_until_us = 0;
	s->interval = 0;
	s->start_local_us = start_local_us;
	int64_t late = cl_mono_us() - start_local_us;
	s->start_skew_us = late > 0 ? late : 0;
	s->interval_start_us = start_local_us > cl_mono_us() ? start_local_us : cl_mono_us();
	cl_session_set_state(s, CL_AGENT_RUNNING);
}

void cl_activity_warmup(struct session *s, struct cl_msg_cmd *c)
{
	if (!s->prepared) {
		cl_session_fail(s, "WARMUP before PREPARE");
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
			cl_session_fail(s, "out of memory");
			return;
		}
		s->warm_body.len = strlen(s->warm_body.json);
		s->warm_workload = s->prepare_msg.cmd.prepare.workload;
		s->warm_workload.bodies = &s->warm_body;
		s->warm_workload.n_bodies = 1;
		s->warm_workload.trace_stride = 0; /* the warmup replays nothing */
		/* ... and is of no request class: none of a class's headers, no class records */
		s->warm_workload.classes = NULL;
		s->warm_workload.n_classes = 0;
		/* Its one body is the warmup's own, not the workload's: sending it again and
		 * again is no repeat of the run's requests. */
		s->warm_workload.share = SIZE_MAX;
		if (c->warmup.request_timeout_us)
			s->warm_workload.request_timeout_us = c->warmup.request_timeout_us;
		s->warm_engine = e = make_engine(s, &s->warm_workload);
		if (!e)
			return;
	}
	begin(s, ACT_WARMUP, e, &c->warmup.stage, cl_mono_us());
}

void cl_activity_start_stage(struct session *s, struct cl_msg_cmd *c)
{
	if (!s->prepared) {
		cl_session_fail(s, "START_AT before PREPARE");
		return;
	}
	begin(s, ACT_STAGE, s->engine, &c->start_at.stage,
	      cl_clock_est_to_local(&s->clock, c->start_at.start_at_coord_us));
}

/* The stage's stalls since the last report: the engine's loops' and the control thread's,
 * merged (one freeze is seen by all of them), each said in the log. */
static void take_stalls(struct session *s, struct cl_stall_list *into)
{
	cl_engine_take_stalls(s->act_engine, into);
	cl_stall_list_merge(into, &s->stalls);
	memset(&s->stalls, 0, sizeof(s->stalls));
	for (uint32_t i = 0; i < into->n; i++)
		CL_WARN("stage %u: this agent stalled for %.2f s, %.2f s into the stage (its loops "
			"could not run): the stage's numbers there describe this client",
			s->stage, into->ep[i].length_us / 1e6,
			(into->ep[i].start_us - s->start_local_us) / 1e6);
	if (into->dropped)
		CL_WARN("stage %u: %u more stalls not listed", s->stage, into->dropped);
}

/* Longest a stage's final report waits for its request records' acknowledgement. */
#define FINAL_WAIT_US 10000000

/* Intervals between trims of the report's record (~1 min at 100 ms). */
#define ACC_TRIM_EVERY 600

void cl_activity_pump(struct session *s, int64_t now)
{
	if (s->act == ACT_NONE)
		return;
	enum cl_engine_state es = cl_engine_state(s->act_engine);
	bool done = es == CL_ENGINE_DONE;
	if (es == CL_ENGINE_DRAINING)
		cl_session_set_state(s, CL_AGENT_DRAINING);
	/* Interval k covers [start + k*I, start + (k+1)*I) on this agent's clock, so every
	 * agent's interval k is the same stretch of time, however late a report goes out. */
	bool interval_due =
	    s->act == ACT_STAGE &&
	    now >= s->start_local_us + (int64_t)(s->interval + 1) * s->report_interval_us;
	if (!done && !interval_due)
		return;
	/* With output.requests the final report waits until every record of the stage has
	 * been acknowledged, so the coordinator has them all when it closes the stage; for
	 * 10 s at most, after which the rest still follow but the stage is not held up.  An
	 * agent that is leaving (a signal) does not wait: the report is what must get out. */
	if (done && s->act == ACT_STAGE && cl_requests_outstanding(s) && !s->leaving) {
		if (!s->final_wait_until_us)
			s->final_wait_until_us = now + FINAL_WAIT_US;
		if (now < s->final_wait_until_us)
			return;
		CL_WARN(
		    "stage %u: %zu request records not yet acknowledged after %d s; sending the "
		    "final report without waiting for them",
		    s->stage, cl_requests_outstanding(s), FINAL_WAIT_US / 1000000);
	}
	/* The record is reused all stage: every ACC_TRIM_EVERY intervals it also gives back
	 * the pages rare latencies touched (cl_metrics_trim), so a soak's RSS stays flat. */
	if (++s->acc_uses % ACC_TRIM_EVERY == 0)
		cl_metrics_trim(&s->acc);
	else
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
	if (s->act == ACT_STAGE)
		take_stalls(s, &rep.stalls);
	if (!done) {
		/* After a stall (SIGSTOP, a starved host) several intervals may have ended: the
		 * delta goes under the last of them and numbering resumes in step with the
		 * others, instead of lagging behind them for the rest of the stage. */
		uint32_t ended = (uint32_t)((now - s->start_local_us) / s->report_interval_us);
		rep.kind = CL_REPORT_INTERVAL;
		rep.interval = ended - 1;
		cl_report_queue_push(s, &rep, "interval");
		s->interval = ended;
		s->interval_start_us = now;
		return;
	}
	rep.kind = s->act == ACT_WARMUP ? CL_REPORT_WARMUP : CL_REPORT_FINAL;
	/* A signal stopped this agent before the stage's end: the coordinator must know its
	 * share was cut short, not finished (docs/protocol.md, "STOP"). */
	if (s->leaving)
		rep.error = "stopped by a signal: its requests in flight were cut";
	/* A final report says how many connections each source address has carried so far:
	 * the coordinator keeps the latest (results' agents[].source_addresses).  Encoded
	 * before push returns, so one record of the control thread serves every report. */
	static struct cl_source_conns sources;
	const struct cl_srcaddr_pool *pool = s->o->source;
	if (rep.kind == CL_REPORT_FINAL && pool && pool->n) {
		sources.n = (uint32_t)pool->n;
		for (size_t i = 0; i < pool->n; i++) {
			snprintf(sources.e[i].address, sizeof(sources.e[i].address), "%s",
				 pool->addr[i]);
			sources.e[i].connections = cl_engine_source_connections(s->act_engine, i);
		}
		rep.sources = &sources;
	}
	cl_report_queue_push(s, &rep, s->act == ACT_WARMUP ? "warmup" : "final");
	s->act = ACT_NONE;
	s->act_engine = NULL;
	cl_session_set_state(s, CL_AGENT_DONE);
}
