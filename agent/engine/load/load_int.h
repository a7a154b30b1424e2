/* The load models' one interface: what a worker starts in a stage, and when. */
#ifndef CHATLOAD_ENGINE_LOAD_INT_H
#define CHATLOAD_ENGINE_LOAD_INT_H

#include "agent/engine/internal.h"

#include <stdbool.h>
#include <stdint.h>

/* After a request could not be started (out of memory), a model waits this long before it
 * tries again (st->retry_us). */
#define CL_LOAD_START_RETRY_US 10000

/*
 * A load model (docs/engine.md, "Load models"), one per file as k6's lib/executor/ has them:
 * the closed loop at a concurrency (closed.c), the open loop at a rate (rate.c) and trace
 * replay (trace.c); the open loop's mechanics, which the last two share, are in open.c.
 * stage.c runs a stage's phases (waiting, ramping, running, draining) and asks the stage's
 * model, chosen when it begins, what to start.  Every hook runs on the worker's thread and
 * reads the stage from w->st; none blocks.
 */
struct cli_load_model {
	const char *name;
	/* Arrivals keep their own pace whatever the answers (the open loop): a request that got
	 * no answer is not backed off (park.c), and arrivals due inside the window still start
	 * when the loop sees its end late. */
	bool open;
	/* Prepares the model's part of w->st (the plan and times are set) for a stage whose first
	 * phase_frac of a constant gap is skipped and whose rate ramps from r0.  false: this
	 * worker has nothing to start in the stage (it is done at once). */
	bool (*begin)(struct cl_worker *w, double phase_frac, double r0);
	/* Starts every request due by now_us that may start (cl_stage_may_start), waking the
	 * parked slots whose wait is over; on a failed start sets st->retry_us and returns. */
	void (*pump)(struct cl_worker *w, int64_t now_us);
	/* The next moment pump could start something (INT64_MAX: none): only starts that could
	 * happen then count (a time in the past that cannot be acted on would spin the loop),
	 * none before st->retry_us. */
	int64_t (*next_due)(const struct cl_worker *w);
	/* The window has closed (st->win_end_us set, nothing more starts) as of now_us: settles
	 * what the model still owed, such as arrivals that never started. */
	void (*close)(struct cl_worker *w, int64_t now_us);
};

extern const struct cli_load_model cli_load_closed, cli_load_rate, cli_load_trace;

/* The earlier and the later of two times. */
static inline int64_t cl_earlier(int64_t a, int64_t b)
{
	return a < b ? a : b;
}
static inline int64_t cl_later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* open.c: the open loop's mechanics, given where its arrivals come from. */
struct cli_arrival_src {
	/* The next arrival's intended start (INT64_MAX: none), and moving past it. */
	int64_t (*peek)(const struct cl_worker *w);
	void (*advance)(struct cl_worker *w);
	/* The body the next arrival sends; NULL: the next in order (conv.c decides).  NULL
	 * hook: always the next in order. */
	const struct cl_request_body *(*body)(const struct cl_worker *w);
};
/* Sets the stage's in-flight cap: the worker's slots, or the plan's concurrency below it. */
void cli_open_begin(struct cl_worker *w);
/* Starts the arrivals due by now_us in order, each intended at its own time; over the cap
 * an arrival waits, its time kept (the queue is implicit: arrivals are made lazily). */
void cli_open_pump(struct cl_worker *w, int64_t now_us, const struct cli_arrival_src *src);
int64_t cli_open_next_due(const struct cl_worker *w, const struct cli_arrival_src *src);
/* Counts the arrivals due inside the window still waiting behind the cap as unsent backlog,
 * and starts no more. */
void cli_open_close(struct cl_worker *w, int64_t now_us, const struct cli_arrival_src *src);

#endif
