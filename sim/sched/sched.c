/* The timer heap and the batch capacity model of chatload-sim (see sched.h). */
#include "sched.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "stream.h"

#include <event2/event.h>
#include <stdlib.h>

/* Streams fired per timer wakeup before sockets get a turn (itl 0 must not starve I/O). */
#define FIRES_PER_WAKEUP 4096
/* When the next deadline is this close, wait for it on the clock instead of going back to
 * epoll: at 100 000 chunks/s deadlines are ~10 us apart, and a timerfd_settime plus an
 * epoll_wait per chunk would cost more than the wait and add wake-up latency. */
#define SPIN_US 20
/* ... and never hold the loop longer than this in one wakeup (spinning or behind schedule),
 * so sockets are served. */
#define WAKEUP_BUDGET_US 2000

int cl_sim_sched_init(struct cl_sim *s, struct cl_err *err)
{
	s->heap_cap = s->cfg->max_connections;
	s->heap = calloc(s->heap_cap, sizeof(*s->heap));
	if (!s->heap)
		return cl_err_set(err, CL_ENOMEM, "out of memory for %zu streams", s->heap_cap);
	return 0;
}

void cl_sim_sched_destroy(struct cl_sim *s)
{
	free(s->heap);
	s->heap = NULL;
	s->heap_len = s->heap_cap = 0;
}

static bool before(const struct cl_sim_stream *a, const struct cl_sim_stream *b)
{
	/* Ties go to the earlier request, so the firing order is deterministic. */
	return a->deadline_us < b->deadline_us ||
	       (a->deadline_us == b->deadline_us && a->seq < b->seq);
}

static void place(struct cl_sim *s, size_t i, struct cl_sim_stream *st)
{
	CL_ASSERT(i < s->heap_len);
	s->heap[i] = st;
	st->heap_idx = i;
}

static void sift_up(struct cl_sim *s, size_t i)
{
	struct cl_sim_stream *st = s->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(st, s->heap[parent]))
			break;
		place(s, i, s->heap[parent]);
		i = parent;
	}
	place(s, i, st);
}

static void sift_down(struct cl_sim *s, size_t i)
{
	struct cl_sim_stream *st = s->heap[i];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct cl_sim_stream *best = st;
		if (l < s->heap_len && before(s->heap[l], best)) {
			m = l;
			best = s->heap[l];
		}
		if (r < s->heap_len && before(s->heap[r], best))
			m = r;
		if (m == i)
			break;
		place(s, i, s->heap[m]);
		i = m;
	}
	place(s, i, st);
}

static void arm(struct cl_sim *s)
{
	if (s->heap_len == 0) {
		if (s->timer_armed_us) {
			event_del(s->ev_timer);
			s->timer_armed_us = 0;
		}
		return;
	}
	int64_t due = s->heap[0]->deadline_us;
	if (s->timer_armed_us && s->timer_armed_us <= due)
		return; /* already armed early enough; the callback re-arms */
	int64_t wait = due - cl_mono_us();
	if (wait < 0)
		wait = 0;
	struct timeval tv = { .tv_sec = wait / 1000000, .tv_usec = wait % 1000000 };
	event_add(s->ev_timer, &tv);
	s->timer_armed_us = due;
}

void cl_sim_sched_push(struct cl_sim *s, struct cl_sim_stream *st)
{
	/* One stream per connection and at most --max-connections connections (server.c
	 * refuses the next), so the heap never fills; a stream is in it once. */
	CL_ASSERT(s->heap_len < s->heap_cap);
	CL_ASSERT(st->heap_idx == SIZE_MAX);
	place(s, s->heap_len++, st);
	sift_up(s, st->heap_idx);
	if (!s->in_timer)
		arm(s);
}

void cl_sim_sched_remove(struct cl_sim *s, struct cl_sim_stream *st)
{
	size_t i = st->heap_idx;
	if (i == SIZE_MAX)
		return; /* not in the heap: queued, or being fired (popped) */
	CL_ASSERT(i < s->heap_len && s->heap[i] == st);
	st->heap_idx = SIZE_MAX;
	s->heap_len--;
	if (i < s->heap_len) {
		place(s, i, s->heap[s->heap_len]);
		sift_up(s, i);
		sift_down(s, s->heap[i]->heap_idx);
	}
	if (!s->in_timer)
		arm(s);
}

static struct cl_sim_stream *pop(struct cl_sim *s)
{
	CL_ASSERT(s->heap_len > 0);
	struct cl_sim_stream *st = s->heap[0];
	st->heap_idx = SIZE_MAX;
	s->heap_len--;
	if (s->heap_len > 0) {
		place(s, 0, s->heap[s->heap_len]);
		sift_down(s, 0);
	}
	return st;
}

void cl_sim_sched_on_timer(int fd, short what, void *arg)
{
	struct cl_sim *s = arg;
	s->timer_armed_us = 0;
	s->in_timer = true;
	int64_t now = cl_mono_us();
	int64_t budget_end = now + WAKEUP_BUDGET_US;
	for (int n = 0; n < FIRES_PER_WAKEUP && s->heap_len > 0; n++) {
		int64_t due = s->heap[0]->deadline_us;
		if (now > budget_end)
			break; /* behind schedule: still let sockets in every 2 ms */
		if (due > now) {
			if (due - now > SPIN_US || due > budget_end)
				break;
			int64_t spin_from = now;
			while ((now = cl_mono_us()) < due)
				;
			s->stats.spin_us += now - spin_from;
		}
		struct cl_sim_stream *st = pop(s);
		/* The heap's order, sampled at its root: nothing left is due before what fires. */
		CL_ASSERT(s->heap_len == 0 || !before(s->heap[0], st));
		cl_sim_stream_fire(s, st, now);
		now = cl_mono_us();
	}
	s->in_timer = false;
	arm(s);
}

int64_t cl_sim_sched_itl_us(const struct cl_sim *s)
{
	uint32_t others = s->active > 1 ? s->active - 1 : 0;
	int64_t itl = s->cfg->itl_us + s->cfg->itl_per_active_us * (int64_t)others;
	if (s->cfg->itl_growth_us) {
		/* A server that slows as it runs: growth per second of uptime. */
		double up_s = (cl_mono_us() - s->start_us) / 1e6;
		itl += (int64_t)(s->cfg->itl_growth_us * (up_s > 0 ? up_s : 0));
	}
	return itl;
}

void cl_sim_batch_admit(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us)
{
	CL_ASSERT(st->phase == CL_SIM_PHASE_IDLE);
	if (s->cfg->max_batch == 0 || s->active < s->cfg->max_batch) {
		s->active++;
		cl_sim_stream_start(s, st, now_us);
		return;
	}
	st->phase = CL_SIM_PHASE_QUEUED;
	/* vLLM's priority scheduling (--scheduling-policy priority): the queue is kept in
	 * (priority, arrival) order, a lower value first and first come first within one value
	 * (a request without a priority is 0, as in vLLM).  Found from the tail, so FIFO
	 * traffic inserts in O(1).  fcfs, vLLM's default, queues in arrival order. */
	struct cl_sim_stream *after = s->q_tail;
	while (s->cfg->priority_sched && after && after->priority > st->priority)
		after = after->qprev;
	st->qprev = after;
	st->qnext = after ? after->qnext : s->q_head;
	if (st->qnext)
		st->qnext->qprev = st;
	else
		s->q_tail = st;
	if (after)
		after->qnext = st;
	else
		s->q_head = st;
	s->queued++;
}

void cl_sim_batch_unqueue(struct cl_sim *s, struct cl_sim_stream *st)
{
	if (st->qprev)
		st->qprev->qnext = st->qnext;
	else if (s->q_head == st)
		s->q_head = st->qnext;
	if (st->qnext)
		st->qnext->qprev = st->qprev;
	else if (s->q_tail == st)
		s->q_tail = st->qprev;
	st->qprev = st->qnext = NULL;
	CL_ASSERT(s->queued > 0);
	s->queued--;
	CL_ASSERT((s->queued == 0) == (s->q_head == NULL));
}

void cl_sim_batch_release(struct cl_sim *s, int64_t free_at_us)
{
	/* Only a stream that holds a slot gives one back. */
	CL_ASSERT(s->active > 0);
	s->active--;
	struct cl_sim_stream *st = s->q_head;
	if (!st || s->draining)
		return;
	/* A stream waits only while every slot is taken. */
	CL_ASSERT(s->cfg->max_batch != 0 && s->active < s->cfg->max_batch);
	cl_sim_batch_unqueue(s, st);
	s->active++;
	cl_sim_stream_start(s, st, free_at_us > st->arrival_us ? free_at_us : st->arrival_us);
}
