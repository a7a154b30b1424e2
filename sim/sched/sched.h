/* chatload-sim's scheduler: one timer heap of stream deadlines behind one libevent timer,
 * and the capacity model (at most --max-batch streams decode, the rest wait in FIFO order). */
#ifndef CHATLOAD_SIM_SCHED_H
#define CHATLOAD_SIM_SCHED_H

#include "sim/sim.h"

/* Preallocates the heap for cfg->max_connections streams.  CL_ENOMEM. */
int cl_sim_sched_init(struct cl_sim *s, struct cl_err *err);
void cl_sim_sched_destroy(struct cl_sim *s);

/* Inserts st (st->deadline_us set) and re-arms the timer if it is the new earliest.
 * Never allocates (the heap holds one slot per connection). */
void cl_sim_sched_push(struct cl_sim *s, struct cl_sim_stream *st);

/* Removes st if it is in the heap. */
void cl_sim_sched_remove(struct cl_sim *s, struct cl_sim_stream *st);

/* The libevent timer callback: fires every stream whose deadline has come, in deadline
 * order, a bounded number per wakeup so sockets are still served, then re-arms. */
void cl_sim_sched_on_timer(int fd, short what, void *arg);

/* Gives st a batch slot now (start at now_us) or queues it when all are taken. */
void cl_sim_batch_admit(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us);

/* Frees one slot, as of free_at_us (the scheduled end of the stream that held it): the
 * longest-waiting stream starts at max(its arrival, free_at_us). */
void cl_sim_batch_release(struct cl_sim *s, int64_t free_at_us);

/* Takes a queued stream out of the wait queue (its client left). */
void cl_sim_batch_unqueue(struct cl_sim *s, struct cl_sim_stream *st);

/* itl + itl_per_active * (active - 1) + itl_growth * uptime in seconds: the token interval
 * with the current batch, now. */
int64_t cl_sim_sched_itl_us(const struct cl_sim *s);

#endif
