/* Wire protocol basics: enum names, message release, constant-time token compare, clock offset. */
#include "chatload/wire.h"

#include "common/src/metrics_int.h"

#include <stdlib.h>
#include <string.h>

static const char *const type_names[CL_MSG__COUNT] = {
	[CL_MSG_HELLO] = "HELLO",     [CL_MSG_POLL] = "POLL",       [CL_MSG_REPORT] = "REPORT",
	[CL_MSG_WELCOME] = "WELCOME", [CL_MSG_REFUSE] = "REFUSE",   [CL_MSG_CMD] = "CMD",
	[CL_MSG_ACK] = "ACK",         [CL_MSG_ANSWERS] = "ANSWERS", [CL_MSG_REQUESTS] = "REQUESTS",
};

static const char *const cmd_names[CL_CMD__COUNT] = {
	[CL_CMD_NOOP] = "NOOP",         [CL_CMD_PROBE] = "PROBE",       [CL_CMD_WARMUP] = "WARMUP",
	[CL_CMD_PREPARE] = "PREPARE",   [CL_CMD_START_AT] = "START_AT", [CL_CMD_STOP] = "STOP",
	[CL_CMD_ABORT] = "ABORT",       [CL_CMD_QUIT] = "QUIT",         [CL_CMD_BODIES] = "BODIES",
	[CL_CMD_GENERATE] = "GENERATE", [CL_CMD_LEASE] = "LEASE",
};

static const char *const state_names[CL_AGENT__COUNT] = {
	[CL_AGENT_IDLE] = "idle",         [CL_AGENT_PREPARING] = "preparing",
	[CL_AGENT_READY] = "ready",       [CL_AGENT_RUNNING] = "running",
	[CL_AGENT_DRAINING] = "draining", [CL_AGENT_DONE] = "done",
	[CL_AGENT_FAILED] = "failed",
};

static const char *const kind_names[CL_REPORT__COUNT] = {
	[CL_REPORT_INTERVAL] = "interval",
	[CL_REPORT_FINAL] = "final",
	[CL_REPORT_PROBE] = "probe",
	[CL_REPORT_WARMUP] = "warmup",
};

static const char *name_of(const char *const *names, int n, int i)
{
	return i >= 0 && i < n ? names[i] : NULL;
}

static int index_of(const char *const *names, int n, const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < n; i++) {
		if (names[i] && strcmp(names[i], name) == 0)
			return i;
	}
	return -1;
}

const char *cl_msg_type_name(int type)
{
	return name_of(type_names, CL_MSG__COUNT, type);
}

const char *cl_cmd_name(int cmd)
{
	return name_of(cmd_names, CL_CMD__COUNT, cmd);
}

const char *cl_agent_state_name(int state)
{
	return name_of(state_names, CL_AGENT__COUNT, state);
}

const char *cl_report_kind_name(int kind)
{
	return name_of(kind_names, CL_REPORT__COUNT, kind);
}

int cl_msg_type_from_name(const char *name)
{
	return index_of(type_names, CL_MSG__COUNT, name);
}

int cl_cmd_from_name(const char *name)
{
	return index_of(cmd_names, CL_CMD__COUNT, name);
}

int cl_agent_state_from_name(const char *name)
{
	return index_of(state_names, CL_AGENT__COUNT, name);
}

int cl_report_kind_from_name(const char *name)
{
	return index_of(kind_names, CL_REPORT__COUNT, name);
}

static void free_cmd(struct cl_msg_cmd *c)
{
	switch (c->cmd) {
	case CL_CMD_PROBE:
		free(c->probe.body_json);
		free(c->probe.prompt);
		free(c->probe.extra_body_json);
		if (c->probe.target) {
			cl_target_plan_free(c->probe.target);
			free(c->probe.target);
		}
		break;
	case CL_CMD_WARMUP:
		cl_stage_plan_free(&c->warmup.stage);
		free(c->warmup.body_json);
		break;
	case CL_CMD_PREPARE:
		cl_target_plan_free(&c->prepare.target);
		cl_workload_plan_free(&c->prepare.workload);
		break;
	case CL_CMD_START_AT:
		cl_stage_plan_free(&c->start_at.stage);
		break;
	case CL_CMD_BODIES:
		for (size_t i = 0; c->bodies.bodies && i < c->bodies.n_bodies; i++)
			free(c->bodies.bodies[i].json);
		free(c->bodies.bodies);
		break;
	case CL_CMD_GENERATE:
		cl_target_plan_free(&c->generate.target);
		break;
	case CL_CMD_LEASE:
		for (size_t i = 0; c->lease.items && i < c->lease.n_items; i++) {
			free(c->lease.items[i].id);
			free(c->lease.items[i].body);
		}
		free(c->lease.items);
		break;
	default:
		break;
	}
}

void cl_msg_free(struct cl_msg *m)
{
	if (!m)
		return;
	if (!m->owned)
		goto out;
	free(m->run);
	switch (m->type) {
	case CL_MSG_HELLO:
		free(m->hello.version);
		free(m->hello.host);
		for (size_t i = 0; m->hello.caps && i < m->hello.n_caps; i++)
			free(m->hello.caps[i]);
		free(m->hello.caps);
		free(m->hello.token);
		break;
	case CL_MSG_POLL:
		free(m->poll.error);
		break;
	case CL_MSG_REPORT:
		cli_metrics_give(m->report.metrics);
		free(m->report.readiness);
		free(m->report.sources);
		free(m->report.error);
		break;
	case CL_MSG_REFUSE:
		free(m->refuse.reason);
		break;
	case CL_MSG_CMD:
		free_cmd(&m->cmd);
		break;
	case CL_MSG_ANSWERS:
		for (size_t i = 0; m->answers.answers && i < m->answers.n_answers; i++) {
			struct cl_gen_answer *a = &m->answers.answers[i];
			free(a->id);
			free(a->request_id);
			free(a->body);
			free(a->error);
		}
		free(m->answers.answers);
		break;
	case CL_MSG_REQUESTS:
		free(m->requests.records);
		break;
	default:
		break;
	}
out:
	memset(m, 0, sizeof(*m));
}

int64_t cl_wire_report_spread_us(int64_t report_interval_us, uint32_t agent_id)
{
	int64_t spread = report_interval_us / 4;
	if (spread > CL_WIRE_REPORT_SPREAD_MAX_US)
		spread = CL_WIRE_REPORT_SPREAD_MAX_US;
	double frac = (double)agent_id * 0.6180339887498949;
	frac -= (double)(int64_t)frac;
	return spread > 0 ? (int64_t)(frac * (double)spread) : 0;
}

bool cl_wire_token_equal(const char *expected, const char *received)
{
	if (!expected)
		expected = "";
	if (!received)
		received = "";
	size_t n = strlen(expected);
	/*
	 * Walk the whole expected token whatever the input: the received bytes are read up to
	 * their terminator and then held at 0, so neither where they differ nor the received
	 * length changes the work done.  (strlen(received) is not taken, for the same reason.)
	 */
	volatile unsigned char acc = 0;
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char r = (unsigned char)received[j];
		acc |= (unsigned char)expected[i] ^ r;
		j += r != 0; /* stays on the terminator once reached */
	}
	acc |= (unsigned char)received[j]; /* received is longer than expected */
	return acc == 0;
}

bool cl_clock_est_add(struct cl_clock_est *e, int64_t t_send_us, int64_t t_coord_recv_us,
		      int64_t t_coord_us, int64_t t_recv_us)
{
	if (!t_coord_recv_us)
		t_coord_recv_us = t_coord_us;
	int64_t held = t_coord_us - t_coord_recv_us;
	int64_t rtt = (t_recv_us - t_send_us) - held;
	if (t_recv_us < t_send_us || held < 0 || rtt < 0)
		return false;
	int64_t offset = ((t_coord_recv_us - t_send_us) + (t_coord_us - t_recv_us)) / 2;
	e->rtt_us[e->next] = rtt;
	e->offset_us[e->next] = offset;
	e->next = (e->next + 1) % CL_CLOCK_EST_WINDOW;
	if (e->n < CL_CLOCK_EST_WINDOW)
		e->n++;
	e->total++;
	return true;
}

bool cl_clock_est_get(const struct cl_clock_est *e, int64_t *offset_us, int64_t *rtt_us)
{
	if (!e || e->n == 0)
		return false;
	/* Oldest to newest, so that of equal round trips the newest sample wins. */
	uint32_t first = (e->next + CL_CLOCK_EST_WINDOW - e->n) % CL_CLOCK_EST_WINDOW;
	uint32_t best = first;
	for (uint32_t k = 1; k < e->n; k++) {
		uint32_t i = (first + k) % CL_CLOCK_EST_WINDOW;
		if (e->rtt_us[i] <= e->rtt_us[best])
			best = i;
	}
	if (offset_us)
		*offset_us = e->offset_us[best];
	if (rtt_us)
		*rtt_us = e->rtt_us[best];
	return true;
}

int64_t cl_clock_est_to_local(const struct cl_clock_est *e, int64_t coord_us)
{
	int64_t off;
	if (!cl_clock_est_get(e, &off, NULL))
		return coord_us;
	return coord_us - off;
}
