/* The agent's side of a generate job: the requests the coordinator leased, sent with up to
 * `concurrency` streams in flight on a thread of their own (one libcurl multi), each tried
 * until it succeeds, fails for good or runs out of attempts, its answer assembled from the
 * stream and handed back to the control thread for ANSWERS. */
#ifndef CHATLOAD_GENERATE_RUNNER_H
#define CHATLOAD_GENERATE_RUNNER_H

#include "client/http/allow.h"

#include "chatload/err.h"
#include "chatload/plan.h"
#include "chatload/wire.h"

#include <stddef.h>
#include <stdint.h>

struct cl_gen_runner_cfg {
	const struct cl_target_plan *target; /* copied into the runner's own form */
	const struct cl_allow_list *allow;   /* --allow-target (empty: any) */
	uint32_t concurrency;                /* streams in flight at most */
	uint32_t max_attempts;               /* tries of one request */
	int64_t request_timeout_us;          /* one try, whole (0: none) */
	int64_t backoff_initial_us, backoff_max_us;
	double rate_per_s; /* tries started per second, evenly spaced (retries too); 0: none */
	uint64_t seed;     /* backoff jitter */
	/* Called (on the runner's thread) after an answer is queued, NULL: none.  Must not
	 * block or call back into the runner. */
	void (*notify)(void);
};

struct cl_gen_runner;

/* Checks the target and starts the runner's thread.  0, or CL_EREFUSED / CL_EINVAL (the
 * target) / CL_ENOMEM / CL_ESYS with err filled. */
int cl_gen_runner_start(const struct cl_gen_runner_cfg *cfg, struct cl_gen_runner **out,
			struct cl_err *err);
/* Sets the tries started per second from now on (0: as fast as concurrency allows), as the
 * next turn of the thread sees it (within 200 ms).  Non-blocking. */
void cl_gen_runner_set_rate(struct cl_gen_runner *r, double rate_per_s);
/* Queues n requests: takes their id and body strings (set to NULL in items).  Does not
 * block beyond a mutex.  0 or CL_ENOMEM (nothing taken). */
int cl_gen_runner_add(struct cl_gen_runner *r, struct cl_gen_item *items, size_t n);
/* Moves up to max finished answers (and at most about max_bytes of bodies, one at least)
 * into out; the caller owns their strings.  Returns how many. */
size_t cl_gen_runner_take(struct cl_gen_runner *r, struct cl_gen_answer *out, size_t max,
			  size_t max_bytes);
/* Requests held: queued, waiting for a retry or in flight, and answers not yet taken. */
size_t cl_gen_runner_held(struct cl_gen_runner *r);
/* Streams in flight now. */
size_t cl_gen_runner_inflight(struct cl_gen_runner *r);
/* Stops the thread (requests in flight are cut, nothing more is answered) and frees
 * everything, answers not taken too.  Accepts NULL. */
void cl_gen_runner_stop(struct cl_gen_runner *r);
/* Frees one answer's strings (those cl_gen_runner_take gave). */
void cl_gen_answer_free(struct cl_gen_answer *a);

#endif
