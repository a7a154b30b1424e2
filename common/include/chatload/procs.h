/* N copies of a program's work, each a process of its own, under a supervisor that passes
 * stop signals on and never outlives a dead child silently (chatload-sim --processes,
 * chatload-agent --processes). */
#ifndef CHATLOAD_PROCS_H
#define CHATLOAD_PROCS_H

#include <stdint.h>

#define CL_PROCS_MAX 64

struct cl_procs {
	uint32_t n;       /* children, 1..CL_PROCS_MAX */
	const char *what; /* their name in messages, e.g. "process" */
	void *arg;        /* passed to the callbacks */
	/* In child i after fork: does the work and returns the exit code.  It must write a
	 * line (at most 15 bytes) to ready_fd and close it once it is ready, or close it
	 * unwritten when it fails to start. */
	int (*child)(void *arg, uint32_t i, int ready_fd);
	/* In the supervisor: child i said line.  Non-zero: it counts as not started.  May be
	 * NULL.  Children start one after the other, so child i + 1 may use what i said. */
	int (*ready)(void *arg, uint32_t i, const char *line);
	/* In the supervisor once every child is ready; non-zero stops them all (exit 1).  May
	 * be NULL. */
	int (*started)(void *arg);
};

/*
 * Forks p->n children one by one, each waited for until it says it is ready.  Each child
 * gets SIGTERM if the supervisor dies and runs in a process group of its own, so a signal
 * to the supervisor's group reaches it once, forwarded.  Then SIGTERM, SIGINT and SIGUSR1
 * to the supervisor go to every child; a child that fails (non-zero status or a signal)
 * before the supervisor was told to stop is reported and the others are stopped, while one
 * that exits 0 has simply finished.  Blocks until every child has ended and returns the
 * exit code: 0 when all exited 0; a child's own non-zero code when it failed to start; else
 * 1.  The caller must have no other threads.
 */
int cl_procs_run(const struct cl_procs *p);

#endif
