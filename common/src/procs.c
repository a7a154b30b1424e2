/* N processes under one supervisor (chatload/procs.h). */
#include "chatload/procs.h"

#include "chatload/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct proc {
	pid_t pid; /* 0: not started or reaped */
	int status;
};

/* In the child after fork: runs its work and never returns. */
static void run_child(const struct cl_procs *p, uint32_t i, const sigset_t *old_mask, pid_t parent,
		      int ready_fd)
{
	/* A supervisor killed outright (SIGKILL) must not leave children behind. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	/* A group of its own: a terminal's Ctrl-C or a kill of the supervisor's group reaches
	 * the child once, forwarded, and not also directly, which would be a second signal
	 * (for the simulator: cut at once) instead of a drain. */
	setpgid(0, 0);
	sigprocmask(SIG_SETMASK, old_mask, NULL);
	exit(p->child(p->arg, i, ready_fd));
}

static void signal_all(struct proc *k, uint32_t n, int sig)
{
	for (uint32_t i = 0; i < n; i++)
		if (k[i].pid > 0)
			kill(k[i].pid, sig);
}

static const char *describe(int status, char *buf, size_t n)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, n, "ended");
	return buf;
}

/* Reads the line a child wrote on its ready pipe into buf; false when it closed the pipe
 * unwritten. */
static bool read_ready(int fd, char *buf, size_t n)
{
	size_t got = 0;
	for (;;) {
		ssize_t r = read(fd, buf + got, n - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == n - 1)
			break;
	}
	buf[got] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return got > 0;
}

/* Stops every child still running and reaps them all. */
static void stop_all(struct proc *k, uint32_t n)
{
	signal_all(k, n, SIGTERM);
	for (uint32_t i = 0; i < n; i++) {
		if (k[i].pid > 0 && waitpid(k[i].pid, &k[i].status, 0) == k[i].pid)
			k[i].pid = 0;
	}
}

/* Reaps the children that ended; returns how many still run.  One that fails (a non-zero
 * status, a signal) before the supervisor was told to stop fails the whole, and the rest are
 * stopped; one that exits 0 has finished its work. */
static uint32_t reap(const struct cl_procs *p, struct proc *k, bool *stopping, bool *failed)
{
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (uint32_t i = 0; i < p->n; i++) {
			if (k[i].pid != pid)
				continue;
			k[i].pid = 0;
			k[i].status = st;
			char how[64];
			if (!*stopping && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
				/* Its work is done (an agent's --once run): the others go on. */
				CL_INFO("%s %u (pid %d) finished", p->what, i, (int)pid);
			} else if (!*stopping) {
				CL_ERROR("%s %u (pid %d) %s while serving: stopping the others",
					 p->what, i, (int)pid, describe(st, how, sizeof(how)));
				*failed = *stopping = true;
				signal_all(k, p->n, SIGTERM);
			} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				CL_ERROR("%s %u (pid %d) %s", p->what, i, (int)pid,
					 describe(st, how, sizeof(how)));
				*failed = true;
			}
		}
	}
	uint32_t alive = 0;
	for (uint32_t i = 0; i < p->n; i++)
		alive += k[i].pid > 0;
	return alive;
}

/* Starts child i and waits until it is ready: 0, or the exit code to end with. */
static int start_one(const struct cl_procs *p, struct proc *k, uint32_t i, const sigset_t *old)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) != 0) {
		CL_ERROR("cannot start %s %u: pipe: %s", p->what, i, strerror(errno));
		return 1;
	}
	pid_t self = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		CL_ERROR("cannot start %s %u: fork: %s", p->what, i, strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return 1;
	}
	if (pid == 0) {
		close(pipefd[0]);
		run_child(p, i, old, self, pipefd[1]);
	}
	close(pipefd[1]);
	k[i].pid = pid;
	char line[16];
	bool ok = read_ready(pipefd[0], line, sizeof(line));
	close(pipefd[0]);
	if (ok && (!p->ready || p->ready(p->arg, i, line) == 0))
		return 0;
	if (ok) {
		CL_ERROR("%s %u said '%s' when it started", p->what, i, line);
		return 1;
	}
	/* It failed before it was ready and said why on stderr: its exit code is the whole's
	 * (2 for a bad flag). */
	int st = 0;
	waitpid(pid, &st, 0);
	k[i].pid = 0;
	if (i > 0)
		CL_ERROR("%s %u did not start: stopping the others", p->what, i);
	return WIFEXITED(st) && WEXITSTATUS(st) != 0 ? WEXITSTATUS(st) : 1;
}

int cl_procs_run(const struct cl_procs *p)
{
	struct proc k[CL_PROCS_MAX] = { 0 };
	sigset_t set, old;
	int code = 1;
	if (p->n < 1 || p->n > CL_PROCS_MAX)
		return 1;

	/* The signals wait in the mask until sigwaitinfo below takes them, so one sent while
	 * the children start is still forwarded; each child restores the old mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	for (uint32_t i = 0; i < p->n; i++) {
		if ((code = start_one(p, k, i, &old)) != 0)
			goto fail;
	}
	if (p->started && p->started(p->arg) != 0) {
		code = 1;
		goto fail;
	}

	bool stopping = false, failed = false;
	while (reap(p, k, &stopping, &failed) > 0) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig == SIGTERM || sig == SIGINT) {
			/* A second signal reaches the children too: the simulator then cuts. */
			stopping = true;
			signal_all(k, p->n, sig);
		} else if (sig == SIGUSR1) {
			signal_all(k, p->n, SIGUSR1);
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return failed ? 1 : 0;
fail:
	stop_all(k, p->n);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}
