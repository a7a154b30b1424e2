/* PREPARE: the target and the workload to every agent, a large workload in bounded parts
 * (PREPARE carries the plan, BODIES the bodies, each part encoded once for all agents), and
 * the wait until every agent is ready. */
#include "coordinator/run/internal.h"

#include "chatload/clock.h"
#include "chatload/exitcode.h"

#include <stdio.h>
#include <stdlib.h>

/* While the parts travel the fleet is served in short turns, so an agent that has applied
 * its queue finds the next parts queued at once. */
#define PREPARE_SERVE_US 20000
/* Parts queued for one agent at a time: enough to keep it busy between two turns, few enough
 * that encoding the next ones (once, for all agents) is a short pause for the coordinator
 * and only a window of the workload is held encoded. */
#define PREPARE_PARTS_AHEAD 4
/* Encoding parts stops for a turn after this long, so the agents' polls are answered. */
#define PREPARE_PACK_SLICE_US 50000

/* One BODIES part: bodies [from, from + n), and their encoding while some agent may still
 * be sent it. */
struct part {
	size_t from, n;
	msgpack_sbuffer packed;
	bool have; /* packed holds the encoding */
};

struct parts {
	struct part *p;
	size_t n;
	size_t freed; /* parts [0, freed) have no encoding any more */
};

/* How many bodies from `from` make one part: up to CL_WIRE_BODIES_PART_BYTES of body text
 * (at least one body) and CL_WIRE_BODIES_PART_MAX bodies. */
static size_t part_len(const struct cl_workload_plan *w, size_t from)
{
	size_t n = 0, bytes = 0;
	while (from + n < w->n_bodies && n < CL_WIRE_BODIES_PART_MAX &&
	       (n == 0 || bytes + w->bodies[from + n].len <= CL_WIRE_BODIES_PART_BYTES))
		bytes += w->bodies[from + n++].len;
	return n;
}

static int parts_split(const struct cl_workload_plan *w, struct parts *ps)
{
	size_t n = 0;
	for (size_t at = 0; at < w->n_bodies; at += part_len(w, at))
		n++;
	ps->p = calloc(n ? n : 1, sizeof(*ps->p));
	if (!ps->p)
		return CL_ENOMEM;
	ps->n = n;
	size_t at = 0;
	for (size_t k = 0; k < n; k++) {
		ps->p[k].from = at;
		ps->p[k].n = part_len(w, at);
		at += ps->p[k].n;
	}
	return 0;
}

static void part_drop(struct part *p)
{
	if (p->have)
		msgpack_sbuffer_destroy(&p->packed);
	p->have = false;
}

static void parts_free(struct parts *ps)
{
	for (size_t k = 0; k < ps->n; k++)
		part_drop(&ps->p[k]);
	free(ps->p);
	ps->p = NULL;
	ps->n = 0;
}

/* Whether agent a takes part: joined, and neither lost nor gone. */
static bool present(const struct cl_fleet_agent *a)
{
	return a->live != CL_LIVE_LOST && !a->gone;
}

/* Queues what fits of agent i's remaining parts, encoding each part the first time any agent
 * needs it (until pack_until); *next is agent i's next part, *last the cmd_seq of the latest
 * command queued. */
static int feed(struct run *r, struct parts *ps, size_t i, size_t *next, uint64_t *last,
		int64_t pack_until)
{
	const struct cl_workload_plan *w = &r->workload;
	while (*next < ps->n &&
	       cl_fleet_room(&r->fleet, i) > CL_FLEET_MAX_QUEUED_CMDS - PREPARE_PARTS_AHEAD) {
		struct part *p = &ps->p[*next];
		if (!p->have && cl_mono_us() > pack_until)
			break;
		if (!p->have) {
			struct cl_err err = { 0 };
			char msg[600];
			msgpack_sbuffer_init(&p->packed);
			p->have = true;
			if (cl_wire_pack_bodies(&w->bodies[p->from], p->n, &p->packed, &err) != 0) {
				cl_progress_note(
				    &r->prog, "cannot send request bodies %zu..%zu: %s", p->from,
				    p->from + p->n - 1, cl_err_format(&err, msg, sizeof(msg)));
				return CL_EIO;
			}
		}
		struct cl_msg_cmd c = { .cmd = CL_CMD_BODIES };
		c.bodies = (struct cl_cmd_bodies){ .offset = p->from,
						   .bodies = &w->bodies[p->from],
						   .n_bodies = p->n,
						   .packed = p->packed.data,
						   .packed_len = p->packed.size };
		*last = cl_fleet_send(&r->fleet, i, &c);
		++*next;
	}
	return 0;
}

/* Frees the encodings that no agent's queue holds any more and every present agent has been
 * given, so at most a window of parts is held at once. */
static void parts_trim(struct run *r, struct parts *ps, const size_t *next)
{
	size_t lowest = ps->n;
	for (size_t i = 0; i < r->fleet.n; i++) {
		if (present(&r->fleet.agents[i]) && next[i] < lowest)
			lowest = next[i];
	}
	for (size_t k = ps->freed; k < lowest; k++) {
		struct part *p = &ps->p[k];
		if (!p->have) {
			ps->freed += ps->freed == k;
			continue;
		}
		bool held = false;
		for (size_t i = 0; i < r->fleet.n && !held; i++) {
			const struct cl_fleet_agent *a = &r->fleet.agents[i];
			for (size_t q = 0; q < a->n_cmds && !held; q++)
				held = a->cmds[q].cmd == CL_CMD_BODIES &&
				       a->cmds[q].cmd_seq > a->applied_seq &&
				       a->cmds[q].bodies.packed == p->packed.data;
		}
		if (held)
			continue;
		part_drop(p);
		ps->freed += ps->freed == k;
	}
}

static int wait_ready(struct run *r, struct parts *ps, size_t *next, uint64_t *last)
{
	size_t n = r->fleet.n;
	/* However large the workload and the fleet, some agent applies a command or moves on
	 * every few seconds: the wait gives up when none has for RUN_HANG_GRACE_US. */
	int64_t deadline = cl_mono_us() + RUN_HANG_GRACE_US;
	uint64_t progress = 0;
	for (;;) {
		bool ready = true;
		uint64_t now_progress = 0;
		int64_t pack_until = cl_mono_us() + PREPARE_PACK_SLICE_US;
		for (size_t i = 0; i < n; i++) {
			struct cl_fleet_agent *a = &r->fleet.agents[i];
			if (!present(a))
				continue;
			if (a->state == CL_AGENT_FAILED) {
				cl_progress_note(&r->prog, "agent %u (%s) failed to prepare: %s",
						 a->id, a->label,
						 a->error[0] ? a->error : "no reason given");
				r->exit_hint = CL_EXIT_FAILED;
				return CL_EIO;
			}
			if (feed(r, ps, i, &next[i], &last[i], pack_until) != 0) {
				r->exit_hint = CL_EXIT_FAILED;
				return CL_EIO;
			}
			if (next[i] < ps->n || a->applied_seq < last[i] ||
			    a->state != CL_AGENT_READY)
				ready = false;
			now_progress += a->applied_seq + (uint64_t)a->state;
		}
		if (now_progress != progress) {
			progress = now_progress;
			deadline = cl_mono_us() + RUN_HANG_GRACE_US;
		}
		parts_trim(r, ps, next);
		if (ready)
			return 0;
		if (atomic_load(r->o->stop)) {
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ECLOSED;
		}
		for (size_t i = 0; i < n; i++) {
			const struct cl_fleet_agent *a = &r->fleet.agents[i];
			if (a->live == CL_LIVE_LOST && r->s.agents.on_loss == CL_ON_LOSS_FAIL &&
			    !a->gone) {
				cl_progress_note(&r->prog, "agent %u (%s) was lost while preparing",
						 a->id, a->label);
				r->exit_hint = CL_EXIT_FAILED;
				return CL_EIO;
			}
		}
		if (cl_mono_us() > deadline) {
			cl_progress_note(&r->prog,
					 "the agents did not get ready: none made progress "
					 "for %lld s",
					 RUN_HANG_GRACE_US / 1000000);
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ETIMEDOUT;
		}
		cl_fleet_serve(&r->fleet, ps->n ? PREPARE_SERVE_US : RUN_SERVE_US);
	}
}

int cli_run_prepare(struct run *r)
{
	const struct cl_workload_plan *w = &r->workload;
	size_t n = r->fleet.n;
	size_t next[CL_FLEET_MAX_AGENTS] = { 0 };
	uint64_t last[CL_FLEET_MAX_AGENTS] = { 0 };
	if (w->trace_stride && n > w->n_bodies) {
		cl_progress_note(&r->prog,
				 "a trace of %zu requests cannot be dealt out to %zu agents (each "
				 "replays every %zu-th request): use fewer agents",
				 w->n_bodies, n, n);
		r->exit_hint = CL_EXIT_FAILED;
		return CL_EINVAL;
	}
	/* A workload that fits one part travels inside PREPARE; a larger one entirely in
	 * BODIES parts, so every body is encoded once however many agents there are. */
	struct parts ps = { 0 };
	bool in_parts = part_len(w, 0) < w->n_bodies;
	if (in_parts && parts_split(w, &ps) != 0) {
		cl_progress_note(&r->prog, "out of memory splitting the workload into parts");
		r->exit_hint = CL_EXIT_FAILED;
		return CL_ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (!present(&r->fleet.agents[i]))
			continue;
		struct cl_msg_cmd c = { .cmd = CL_CMD_PREPARE };
		c.prepare.target = r->target;
		c.prepare.requests = r->s.output.requests;
		c.prepare.workload = *w;
		c.prepare.workload.n_bodies = in_parts ? 0 : w->n_bodies;
		c.prepare.workload.bodies = in_parts ? NULL : w->bodies;
		c.prepare.workload.total_bodies = w->n_bodies;
		/* Agents start at evenly spaced bodies, so they do not all send the same prompt
		 * first (which a prefix cache would serve from the first agent's work). */
		c.prepare.workload.first_body = w->n_bodies * i / n;
		/* ... and each goes through its own share of them first, so no body is sent
		 * twice in a run while any is unsent (docs/engine.md, "Which body"). */
		c.prepare.workload.share = w->n_bodies * (i + 1) / n - w->n_bodies * i / n;
		c.prepare.workload.per_stage = r->s.workload.order_per_stage;
		/* A trace is dealt out: agent i replays requests i, i + n, ... (each at its own
		 * offset from START_AT), so together they replay it whole. */
		if (w->trace_stride) {
			c.prepare.workload.first_body = i;
			c.prepare.workload.trace_stride = (uint32_t)n;
			c.prepare.workload.share = 0;
		}
		if (!(last[i] = cl_fleet_send(&r->fleet, i, &c))) {
			cl_progress_note(&r->prog, "agent %u (%s) has too many commands pending",
					 r->fleet.agents[i].id, r->fleet.agents[i].host);
			r->exit_hint = CL_EXIT_FAILED;
			rc = CL_EIO;
		}
	}
	if (!rc && in_parts)
		cl_progress_note(&r->prog, "sending %zu request bodies to each agent in %zu parts",
				 w->n_bodies, ps.n);
	if (!rc)
		rc = wait_ready(r, &ps, next, last);
	/* No queue may keep a part whose encoding is freed (an agent that failed or was lost
	 * keeps its queue, and the run goes on serving the fleet). */
	if (in_parts)
		cl_fleet_unqueue(&r->fleet, CL_CMD_BODIES);
	parts_free(&ps);
	return rc;
}
