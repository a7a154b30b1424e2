/* Child processes the coordinator owns (local agents, the built-in simulator): started,
 * watched and reaped on every exit path. */
#ifndef CHATLOAD_SPAWN_H
#define CHATLOAD_SPAWN_H

#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cl_child {
	pid_t pid;       /* 0: not started */
	bool exited;     /* reaped */
	int wait_status; /* waitpid status once exited */
	char name[64];   /* for messages: "agent 1", "simulator" */
};

/*
 * Starts argv[0] (a path) with argv, the current environment plus env_extra ("K=V" strings,
 * NULL-terminated, may be NULL).  The child gets SIGTERM if the coordinator dies
 * (PR_SET_PDEATHSIG), so no process outlives a crashed run.  stdout of the child goes to
 * stdout_fd when >= 0 (else inherited); stderr is inherited.  Non-blocking.
 */
int cl_child_start(struct cl_child *c, const char *name, char *const argv[],
		   char *const env_extra[], int stdout_fd, struct cl_err *err);

/* Reaps c without blocking; true when it has exited (then wait_status is valid). */
bool cl_child_poll(struct cl_child *c);

/* SIGTERM, waits up to grace_us, then SIGKILL and reaps.  Safe on never-started and
 * already-reaped children.  Blocks at most grace_us + a little. */
void cl_child_stop(struct cl_child *c, int64_t grace_us);

/* Describes how c ended ("exited with status 2", "killed by signal 9") into buf. */
char *cl_child_describe(const struct cl_child *c, char *buf, size_t n);

/*
 * Finds a sibling program (chatload-agent, chatload-sim), first match wins:
 *   1. $env_var (may be NULL) if set and non-empty: that path, which must be executable;
 *   2. next to this executable (the directory of /proc/self/exe): build/bin/ in a build
 *      tree, where the build puts all three programs, or the install directory;
 *   3. each directory on PATH.
 * No build-tree path is compiled in: a binary copied or installed elsewhere never falls back
 * silently to programs of the tree it was built in.  Writes the path into buf; CL_ENOTFOUND
 * with a message naming where it looked.
 */
int cl_find_program(const char *name, const char *env_var, char *buf, size_t n, struct cl_err *err);

/* Waits until path exists with a non-empty first line, up to timeout_us, giving up early
 * when watch (may be NULL) exits.  Reads that line into buf.  Blocks. */
int cl_wait_for_file_line(const char *path, int64_t timeout_us, struct cl_child *watch, char *buf,
			  size_t n, struct cl_err *err);

#endif
