/* PREPARE: the target and the workload to every agent, a large workload in bounded parts
 * (PREPARE carries the first, BODIES the rest), and the wait until every agent is ready. */
#include "run_internal.h"

#include "chatload/clock.h"
#include "chatload/exitcode.h"

#include <stdio.h>

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

/* Whether agent a takes part: joined, and neither lost nor gone. */
static bool present(const struct cl_fleet_agent *a)
{
	return a->live != CL_LIVE_LOST && !a->gone;
}

/* Queues what fits of agent i's remaining parts; *sent is the next body to send, *last the
 * cmd_seq of the latest command queued. */
static void feed(struct run *r, size_t i, size_t *sent, uint64_t *last)
{
	const struct cl_workload_plan *w = &r->workload;
	while (*sent < w->n_bodies) {
		size_t n = part_len(w, *sent);
		struct cl_msg_cmd c = { .cmd = CL_CMD_BODIES };
		c.bodies = (struct cl_cmd_bodies){ .offset = *sent,
						   .bodies = &w->bodies[*sent],
						   .n_bodies = n };
		uint64_t seq = cl_fleet_send(&r->fleet, i, &c);
		if (!seq)
			return; /* its queue is full: more after it has applied some */
		*last = seq;
		*sent += n;
	}
}

int cli_run_prepare(struct run *r)
{
	const struct cl_workload_plan *w = &r->workload;
	size_t n = r->fleet.n;
	size_t sent[CL_FLEET_MAX_AGENTS] = { 0 };
	uint64_t last[CL_FLEET_MAX_AGENTS] = { 0 };
	size_t first = part_len(w, 0);
	size_t parts = 1;
	for (size_t at = first; at < w->n_bodies; at += part_len(w, at))
		parts++;
	if (w->trace_stride && n > w->n_bodies) {
		cl_progress_note(&r->prog,
				 "a trace of %zu requests cannot be dealt out to %zu agents (each "
				 "replays every %zu-th request): use fewer agents",
				 w->n_bodies, n, n);
		r->exit_hint = CL_EXIT_FAILED;
		return CL_EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!present(&r->fleet.agents[i]))
			continue;
		struct cl_msg_cmd c = { .cmd = CL_CMD_PREPARE };
		c.prepare.target = r->target;
		c.prepare.workload = *w;
		c.prepare.workload.n_bodies = first;
		c.prepare.workload.total_bodies = w->n_bodies;
		/* Agents start at evenly spaced bodies, so they do not all send the same prompt
		 * first (which a prefix cache would serve from the first agent's work). */
		c.prepare.workload.first_body = w->n_bodies * i / n;
		/* A trace is dealt out: agent i replays requests i, i + n, ... (each at its own
		 * offset from START_AT), so together they replay it whole. */
		if (w->trace_stride) {
			c.prepare.workload.first_body = i;
			c.prepare.workload.trace_stride = (uint32_t)n;
		}
		if (!(last[i] = cl_fleet_send(&r->fleet, i, &c))) {
			cl_progress_note(&r->prog, "agent %u (%s) has too many commands pending",
					 r->fleet.agents[i].id, r->fleet.agents[i].host);
			r->exit_hint = CL_EXIT_FAILED;
			return CL_EIO;
		}
		sent[i] = first;
	}
	if (parts > 1)
		cl_progress_note(&r->prog, "sending %zu request bodies to each agent in %zu parts",
				 w->n_bodies, parts);
	/* Each part takes a poll round trip; a generous bound, as for the other phases. */
	int64_t deadline = cl_mono_us() + RUN_HANG_GRACE_US + (int64_t)parts * 5000000LL;
	for (;;) {
		bool ready = true;
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
			feed(r, i, &sent[i], &last[i]);
			if (sent[i] < w->n_bodies || a->applied_seq < last[i] ||
			    a->state != CL_AGENT_READY)
				ready = false;
		}
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
			cl_progress_note(&r->prog, "the agents did not get ready in time");
			r->exit_hint = CL_EXIT_FAILED;
			return CL_ETIMEDOUT;
		}
		cl_fleet_serve(&r->fleet, RUN_SERVE_US);
	}
}
