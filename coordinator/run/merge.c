/* The agents' reports during a run: each filed under its agent, and stage metrics merged
 * into per-interval rows (written once every agent has reported the interval) and the
 * stage's cumulative totals.
 *
 * Rows and time.  An agent's interval k covers [start + k*I, start + (k+1)*I) on its own
 * clock, where start is the stage's START_AT moved to that clock through the agent's
 * measured offset; so interval k is the same stretch of coordinator time on every agent,
 * and a row's t_s, (k+1)*I after START_AT, is when it was measured however late its reports
 * arrived.  Rows are written in index order, each once, when every agent still taking part
 * has reported up to it; intervals wait in a map keyed by index that holds the whole loss
 * window, so an agent that lags (a partition healed in time, a stall) delays rows but none
 * is dropped or merged into the wrong one.  An agent that could not cut its intervals on
 * time (its process was frozen) reports the intervals it missed as one delta, with their
 * true length in span_us: those intervals become one row whose interval_s is that length,
 * with every agent's data for them, rather than a burst in one row and gaps around it.
 */
#include "coordinator/run/internal.h"

#include "chatload/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct run_agent *agent_of(struct run *r, const struct cl_fleet_agent *a)
{
	return &r->agents[a->id - 1];
}

static void metrics_free(struct cl_metrics *m)
{
	cl_metrics_destroy(m);
	free(m);
}

int cli_run_intervals_init(struct run *r, struct run_stage *st)
{
	int64_t iv = r->s.agents.report_interval_us > 0 ? r->s.agents.report_interval_us : 1000000;
	/* Every interval of the loss window, plus the one being cut and one in flight (12 at
	 * the default 1 s interval, 102 at the shortest, 100 ms).  A slot is small: its
	 * metrics (~2.4 MiB of address space) are only held while its interval waits. */
	st->n_slots = (size_t)((CL_WIRE_LOST_US + iv - 1) / iv) + 2;
	st->slots = calloc(st->n_slots, sizeof(*st->slots));
	st->spare = calloc(st->n_slots, sizeof(*st->spare));
	st->n_spare = st->n_warm = 0;
	if (!st->slots || !st->spare)
		return CL_ENOMEM;
	for (size_t i = 0; i < st->n_slots; i++)
		st->slots[i].k = -1;
	return 0;
}

void cli_run_intervals_free(struct run_stage *st)
{
	for (size_t i = 0; st->slots && i < st->n_slots; i++)
		metrics_free(st->slots[i].m);
	for (size_t i = 0; st->spare && i < st->n_spare; i++)
		metrics_free(st->spare[i]);
	free(st->slots);
	free(st->spare);
	st->slots = NULL;
	st->spare = NULL;
	st->n_spare = st->n_warm = 0;
}

static struct run_slot *slot_of(struct run_stage *st, int64_t k)
{
	return &st->slots[(size_t)k % st->n_slots];
}

/* The slot for interval k, taken (with a spare record, or a new one) if free.  NULL when
 * out of memory.  The caller has made sure k is inside the window. */
static struct run_slot *slot_take(struct run_stage *st, int64_t k)
{
	struct run_slot *s = slot_of(st, k);
	if (s->k == k)
		return s;
	if (!s->m) {
		if (st->n_spare > 0) {
			s->m = st->spare[--st->n_spare]; /* a warm one first: they are on top */
			if (st->n_warm > 0)
				st->n_warm--;
		} else {
			struct cl_metrics *m = calloc(1, sizeof(*m));
			if (!m || cl_metrics_init(m) != 0) {
				free(m);
				return NULL;
			}
			s->m = m;
		}
	}
	s->k = k;
	s->group_end = k;
	s->n_health = 0;
	return s;
}

/* The last interval of the row that begins at k: k, or further when some agent reported
 * k together with later intervals (and so on, for lumps that overlap). */
static int64_t group_end(struct run_stage *st, int64_t k)
{
	int64_t end = k;
	for (int64_t j = k; j <= end && j < k + (int64_t)st->n_slots; j++) {
		const struct run_slot *s = slot_of(st, j);
		if (s->k == j && s->group_end > end)
			end = s->group_end;
	}
	return end;
}

/* Every this many intervals written, the record given back sheds its pages: the pages a
 * rare latency touched once would otherwise stay resident for the rest of the stage, and a
 * soak's RSS would creep up with each new outlier.  Odd, so records that take turns are
 * each trimmed in turn; ~1 min at 100 ms intervals. */
#define SLOT_TRIM_EVERY 601
/* Spares that keep their pages: a steady stage holds two or three intervals at once, so
 * the records it cycles through stay warm and a lag leaves at most this many behind. */
#define SPARES_WARM 2

/* Empties slot s and gives its record back to the spares. */
static void slot_release(struct run_stage *st, struct run_slot *s)
{
	if (s->m) {
		/* Records never outnumber slots, so the spares always have room. */
		bool periodic = ++st->n_released % SLOT_TRIM_EVERY == 0;
		if (st->n_warm < SPARES_WARM && !periodic) {
			cl_metrics_reset(s->m);
			st->spare[st->n_spare++] = s->m;
			st->n_warm++;
		} else {
			/* Beyond the few a steady stage cycles through, a spare is what a
			 * lagging agent made the stage hold: kept for the next lag, without its
			 * pages, and under the warm ones, so that they are taken first (taking a
			 * cold one while a warm one idles would keep both resident). */
			cl_metrics_trim(s->m);
			memmove(st->spare + 1, st->spare, st->n_spare * sizeof(*st->spare));
			st->spare[0] = s->m;
			st->n_spare++;
		}
		s->m = NULL;
	}
	s->k = -1;
	s->n_health = 0;
}

/* Writes intervals first..last as one row (one interval, or a lump's) and frees them. */
static void emit_row(struct run *r, struct run_stage *st, int64_t first, int64_t last)
{
	double interval_s = r->s.agents.report_interval_us / 1e6;
	struct run_slot *acc = NULL;
	/* Streams in flight at the row's end: its last interval's, not a sum over the row. */
	const struct run_slot *end = slot_of(st, last);
	int64_t active = end->k == last ? end->m->health.inflight : 0;
	/* Each agent's health over the row: its worst in any of the row's intervals. */
	struct cl_results_agent_health health[CL_FLEET_MAX_AGENTS];
	size_t n_health = 0;
	for (int64_t j = first; j <= last; j++) {
		const struct run_slot *s = slot_of(st, j);
		for (size_t h = 0; s->k == j && h < s->n_health; h++) {
			const struct cl_results_agent_health *in = &s->health[h];
			size_t at = 0;
			while (at < n_health && health[at].agent != in->agent)
				at++;
			if (at == n_health) {
				if (n_health == CL_FLEET_MAX_AGENTS)
					continue;
				health[n_health++] = *in;
				continue;
			}
			health[at].cpu_pct = fmax(health[at].cpu_pct, in->cpu_pct);
			health[at].loop_lag_p99_ms =
			    fmax(health[at].loop_lag_p99_ms, in->loop_lag_p99_ms);
			health[at].dispatch_lag_p99_ms =
			    fmax(health[at].dispatch_lag_p99_ms, in->dispatch_lag_p99_ms);
		}
	}
	for (int64_t j = first; j <= last; j++) {
		struct run_slot *s = slot_of(st, j);
		if (s->k != j)
			continue;
		int rc = acc ? cl_metrics_merge(acc->m, s->m) : 0;
		if (!acc)
			acc = s;
		else if (rc != 0)
			CL_ERROR("cannot merge the intervals of stage '%s': %s", st->scn->name,
				 cl_strerror(rc));
	}
	if (acc) {
		acc->m->health.inflight = active;
		double span_s = (double)(last - first + 1) * interval_s;
		const struct cl_metrics *m = acc->m;
		cl_results_add_interval_agents(r->res, st->index, (double)(last + 1) * interval_s,
					       m, span_s, health, n_health);
		st->last_req_s = m->ctr[CL_CTR_COMPLETED_IN_WINDOW] / span_s;
		st->last_tok_s = m->ctr[CL_CTR_OUTPUT_TOKENS] / span_s;
		const struct cl_hist *ttft = &m->lat[CL_LAT_TTFT];
		st->last_ttft_p50_ms =
		    cl_hist_count(ttft) ? cl_hist_percentile(ttft, 50) / 1e3 : NAN; /* "-" */
	}
	for (int64_t j = first; j <= last; j++) {
		struct run_slot *s = slot_of(st, j);
		if (s->k == j)
			slot_release(st, s);
	}
	st->next_emit = last + 1;
}

/* Whether every agent still taking part has reported up to interval k (a lost agent, or
 * one whose FINAL came, is waited for no longer). */
static bool all_reported(const struct run *r, int64_t k)
{
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct run_agent *ra = &r->agents[i];
		if (!ra->stage.participates || r->fleet.agents[i].live == CL_LIVE_LOST ||
		    ra->stage.final_seen)
			continue;
		if (ra->stage.last_interval < k)
			return false;
	}
	return true;
}

/* Writes every row all agents have reported, in order; with all, every row held. */
static void emit_ready(struct run *r, struct run_stage *st, bool all)
{
	for (;;) {
		int64_t k = st->next_emit;
		if (slot_of(st, k)->k != k) {
			/* Nothing held for k: written already, or no agent reported it (a report
			 * the agent could not keep).  Step over it once everyone is past it. */
			bool held = false;
			for (size_t i = 0; i < st->n_slots && !held; i++)
				held = st->slots[i].k > k;
			if (!held || (!all && !all_reported(r, k)))
				return;
			CL_DEBUG("stage '%s': no agent reported interval %lld", st->scn->name,
				 (long long)k);
			st->next_emit = k + 1;
			continue;
		}
		int64_t end = group_end(st, k);
		if (!all && !all_reported(r, end))
			return;
		emit_row(r, st, k, end);
	}
}

void cli_run_emit_intervals(struct run *r)
{
	if (r->st && r->st->slots)
		emit_ready(r, r->st, false);
}

/* Files the stalls an agent saw in its own loops, moved to the coordinator's clock with the
 * agent's offset estimate (0 for a local agent: the same clock). */
static void file_stalls(struct run *r, const struct cl_fleet_agent *a,
			const struct cl_msg_report *rep)
{
	struct run_agent *ra = agent_of(r, a);
	for (uint32_t i = 0; i < rep->stalls.n && i < CL_STALLS_MAX; i++) {
		const struct cl_stall *s = &rep->stalls.ep[i];
		int64_t start;
		if (__builtin_add_overflow(s->start_us, a->clock_offset_us, &start))
			continue; /* nonsense from the peer: no instant on our clock */
		CL_WARN("agent %u (%s) stalled for %.2f s in stage '%s': it could not run", a->id,
			a->label, s->length_us / 1e6, r->st->scn->name);
		cl_stall_list_add(&ra->stage.stalls, start, s->length_us);
	}
	uint32_t d = ra->stage.stalls.dropped;
	ra->stage.stalls.dropped =
	    d > UINT32_MAX - rep->stalls.dropped ? UINT32_MAX : d + rep->stalls.dropped;
}

/* Remembers what the report says about the agent's rate, for its blind window. */
static void note_rate(struct run_agent *ra, const struct cl_msg_report *rep)
{
	size_t at = (size_t)(ra->stage.n_reports++ % CL_RUN_RECENT);
	ra->stage.recent[at].completed = rep->metrics->ctr[CL_CTR_COMPLETED_IN_WINDOW];
	ra->stage.recent[at].output_tokens = rep->metrics->ctr[CL_CTR_OUTPUT_TOKENS];
	ra->stage.recent[at].span_us = rep->span_us;
}

/* Merges an interval report into the rows it covers: intervals k0..rep->interval, where
 * k0 follows the agent's previous report, or is later when span_us says the report covers
 * less (a report the agent could not keep). */
static void merge_interval(struct run *r, struct run_stage *st, struct run_agent *ra,
			   const struct cl_fleet_agent *a, const struct cl_msg_report *rep)
{
	int64_t iv = r->s.agents.report_interval_us;
	int64_t k1 = rep->interval;
	int64_t n_span = iv > 0 ? llround((double)rep->span_us / (double)iv) : 1;
	if (n_span < 1)
		n_span = 1;
	int64_t k0 = ra->stage.last_interval + 1;
	if (k1 - n_span + 1 > k0)
		k0 = k1 - n_span + 1;
	if (k1 > ra->stage.last_interval)
		ra->stage.last_interval = k1;
	if (k0 > k1)
		k0 = k1; /* an index it reported already: nonsense, keep it in one row */
	/* Beyond the window: the oldest held rows are written without whoever has not
	 * reported them (an agent silent that long would be lost by now). */
	while (k1 - k0 < (int64_t)st->n_slots && k1 - st->next_emit >= (int64_t)st->n_slots)
		emit_row(r, st, st->next_emit, group_end(st, st->next_emit));
	if (k0 < st->next_emit || k1 - k0 >= (int64_t)st->n_slots) {
		/* Its rows were written without it: beyond the loss window, or it came back
		 * from a silence the run had stopped waiting for.  The data stays in the
		 * stage's totals, not in rows that would then show a burst. */
		st->late_reports++;
		st->late_completed += rep->metrics->ctr[CL_CTR_COMPLETED_IN_WINDOW];
		CL_WARN("agent %u (%s): intervals %lld-%lld of stage '%s' arrived after their "
			"rows were written; counted in the stage's totals only",
			a->id, a->label, (long long)k0, (long long)k1, st->scn->name);
		return;
	}
	struct run_slot *last = NULL;
	for (int64_t j = k0; j <= k1; j++) {
		struct run_slot *s = slot_take(st, j);
		if (!s) {
			CL_ERROR("out of memory for the intervals of stage '%s'", st->scn->name);
			return;
		}
		if (s->group_end < k1)
			s->group_end = k1;
		last = s;
	}
	int rc = cl_metrics_merge(last->m, rep->metrics);
	if (rc != 0)
		CL_ERROR("cannot merge agent %u's interval into stage '%s': %s", a->id,
			 st->scn->name, cl_strerror(rc));
	if (last->n_health < CL_FLEET_MAX_AGENTS) {
		const struct cl_hist *loop = &rep->metrics->lat[CL_LAT_LOOP_LAG],
				     *queue = &rep->metrics->lat[CL_LAT_QUEUE];
		last->health[last->n_health++] = (struct cl_results_agent_health){
			.agent = a->id,
			.cpu_pct = rep->metrics->health.cpu_pct,
			.loop_lag_p99_ms =
			    cl_hist_count(loop) ? cl_hist_percentile(loop, 99) / 1e3 : NAN,
			.dispatch_lag_p99_ms =
			    cl_hist_count(queue) ? cl_hist_percentile(queue, 99) / 1e3 : NAN,
		};
	}
}

static void on_stage_report(struct run *r, struct cl_fleet_agent *a, struct cl_msg_report *rep)
{
	struct run_stage *st = r->st;
	struct run_agent *ra = agent_of(r, a);
	if (!st || rep->stage != st->index || !rep->metrics) {
		CL_WARN("agent %u sent a report for stage %u, which is not running; ignored", a->id,
			rep->stage);
		return;
	}
	int rc = cl_metrics_merge(&st->cum, rep->metrics);
	if (rc != 0)
		CL_ERROR("cannot merge agent %u's report into stage '%s': %s", a->id, st->scn->name,
			 cl_strerror(rc));
	ra->stage.span_us += rep->span_us;
	note_rate(ra, rep);
	file_stalls(r, a, rep);
	if (rep->start_skew_us > ra->worst_skew_us)
		ra->worst_skew_us = rep->start_skew_us;
	if (rep->error)
		CL_ERROR("agent %u (%s): %s", a->id, a->label, rep->error);
	if (rep->sources) { /* counts since the agent started: the latest replaces */
		free(ra->sources);
		ra->sources = rep->sources;
		rep->sources = NULL;
	}
	if (rep->kind == CL_REPORT_FINAL && rep->error && !ra->stage.left) {
		/* the agent stopped before the stage's end: its share is cut short */
		ra->stage.left = true;
		snprintf(ra->stage.left_why, sizeof(ra->stage.left_why), "%s", rep->error);
	}
	if (rep->kind == CL_REPORT_FINAL)
		ra->stage.final_seen = true;
	else
		merge_interval(r, st, ra, a, rep);
	emit_ready(r, st, false);
}

void cli_run_on_report(void *ctx, struct cl_fleet_agent *a, struct cl_msg_report *rep)
{
	struct run *r = ctx;
	struct run_agent *ra = agent_of(r, a);
	switch (rep->kind) {
	case CL_REPORT_PROBE:
		if (rep->readiness) {
			ra->probe.result = *rep->readiness;
			ra->probe.seen = true;
			ra->probe.final = rep->readiness->status != CL_READY_PENDING;
		}
		break;
	case CL_REPORT_WARMUP:
		if (rep->metrics && r->warm_ready && cl_metrics_merge(&r->warm, rep->metrics) != 0)
			CL_ERROR("cannot merge agent %u's warmup report", a->id);
		ra->warm.seen = true;
		break;
	case CL_REPORT_INTERVAL:
	case CL_REPORT_FINAL:
		on_stage_report(r, a, rep);
		break;
	default:
		break;
	}
}

void cli_run_flush_intervals(struct run *r)
{
	emit_ready(r, r->st, true);
}
