/* chatload-sim --processes: starting N servers on one port and supervising them (procs.h). */
#include "procs.h"

#include "chatload/log.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

/* What the child i runs with: the parent's config, its own files and seed. */
static void child_config(struct cl_sim_config *c, const struct cl_sim_config *cfg, uint32_t i,
			 char *truth, char *stats, size_t n)
{
	*c = *cfg;
	c->process_index = i;
	c->reuse_port = true;
	c->port_file = NULL; /* the supervisor writes it once all listen */
	c->seed = cfg->seed + i;
	if (cfg->truth_log) {
		snprintf(truth, n, "%s.%u", cfg->truth_log, i);
		c->truth_log = truth;
	}
	if (cfg->stats_file) {
		snprintf(stats, n, "%s.%u", cfg->stats_file, i);
		c->stats_file = stats;
	}
}

/* In the child after fork: runs the server and never returns. */
static void run_child(const struct cl_sim_config *cfg, uint32_t i, cl_sim_serve_fn serve,
		      const sigset_t *old_mask, pid_t parent, int ready_fd)
{
	static char truth[4200], stats[4200], name[48];
	struct cl_sim_config c;
	/* A supervisor killed outright (SIGKILL) must not leave servers behind. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	/* A group of its own: a terminal's Ctrl-C or a kill of the supervisor's group reaches
	 * the servers once, forwarded, and not also directly, which would be a second signal
	 * (cut at once) instead of a drain. */
	setpgid(0, 0);
	sigprocmask(SIG_SETMASK, old_mask, NULL);
	snprintf(name, sizeof(name), "chatload-sim.%u", i);
	cl_log_init(name);
	child_config(&c, cfg, i, truth, stats, sizeof(truth));
	exit(serve(&c, ready_fd));
}

static void signal_all(struct proc *p, uint32_t n, int sig)
{
	for (uint32_t i = 0; i < n; i++)
		if (p[i].pid > 0)
			kill(p[i].pid, sig);
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

/* Reads the port a child wrote on its ready pipe; 0 when it closed the pipe unwritten. */
static int read_port(int fd)
{
	char buf[16];
	size_t got = 0;
	for (;;) {
		ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(buf) - 1)
			break;
	}
	buf[got] = '\0';
	return got ? atoi(buf) : 0;
}

/* Stops every child still running and reaps them all. */
static void stop_all(struct proc *p, uint32_t n)
{
	signal_all(p, n, SIGTERM);
	for (uint32_t i = 0; i < n; i++) {
		if (p[i].pid > 0 && waitpid(p[i].pid, &p[i].status, 0) == p[i].pid)
			p[i].pid = 0;
	}
}

/* Reaps the children that ended; returns how many are still running.  A child that ends
 * before the supervisor was told to stop fails the simulator, and the rest are stopped. */
static uint32_t reap(struct proc *p, uint32_t n, bool *stopping, bool *failed)
{
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (uint32_t i = 0; i < n; i++) {
			if (p[i].pid != pid)
				continue;
			p[i].pid = 0;
			p[i].status = st;
			char how[64];
			if (!*stopping) {
				CL_ERROR("process %u (pid %d) %s while serving: stopping the others",
					 i, (int)pid, describe(st, how, sizeof(how)));
				*failed = *stopping = true;
				signal_all(p, n, SIGTERM);
			} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				CL_ERROR("process %u (pid %d) %s", i, (int)pid,
					 describe(st, how, sizeof(how)));
				*failed = true;
			}
		}
	}
	uint32_t alive = 0;
	for (uint32_t i = 0; i < n; i++)
		alive += p[i].pid > 0;
	return alive;
}

int cl_sim_procs_run(struct cl_sim_config *cfg, cl_sim_serve_fn serve)
{
	uint32_t n = cfg->processes;
	struct proc p[CL_SIM_MAX_PROCESSES] = { 0 };
	sigset_t set, old;
	struct cl_err err = { 0 };
	char msg[512];
	int code = 1;

	/* The signals wait in the mask until sigwaitinfo below takes them, so one sent while
	 * the children start is still forwarded; each child restores the old mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid_t self = getpid();
	for (uint32_t i = 0; i < n; i++) {
		int pipefd[2];
		if (pipe2(pipefd, O_CLOEXEC) != 0) {
			CL_ERROR("cannot start process %u: pipe: %s", i, strerror(errno));
			goto fail;
		}
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0) {
			CL_ERROR("cannot start process %u: fork: %s", i, strerror(errno));
			close(pipefd[0]);
			close(pipefd[1]);
			goto fail;
		}
		if (pid == 0) {
			close(pipefd[0]);
			run_child(cfg, i, serve, &old, self, pipefd[1]);
		}
		close(pipefd[1]);
		p[i].pid = pid;
		int port = read_port(pipefd[0]);
		close(pipefd[0]);
		if (port <= 0) {
			/* It failed before listening and said why on stderr: its exit code is
			 * the simulator's (2 for a bad flag, 1 for a busy port). */
			int st = 0;
			waitpid(pid, &st, 0);
			p[i].pid = 0;
			code = WIFEXITED(st) && WEXITSTATUS(st) != 0 ? WEXITSTATUS(st) : 1;
			if (i > 0)
				CL_ERROR("process %u did not start: stopping the others", i);
			goto fail_code;
		}
		/* Process 0 resolved a port 0: the others join that port. */
		snprintf(cfg->listen_port, sizeof(cfg->listen_port), "%d", port);
	}
	if (cfg->port_file &&
	    cl_sim_write_port_file(cfg->port_file, atoi(cfg->listen_port), &err) != 0) {
		CL_ERROR("%s", cl_err_format(&err, msg, sizeof(msg)));
		goto fail;
	}
	CL_INFO("%u processes listening on %s:%s", n, cfg->listen_host, cfg->listen_port);

	bool stopping = false, failed = false;
	while (reap(p, n, &stopping, &failed) > 0) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig == SIGTERM || sig == SIGINT) {
			/* A second signal reaches the children too: they then cut at once. */
			stopping = true;
			signal_all(p, n, sig);
		} else if (sig == SIGUSR1) {
			signal_all(p, n, SIGUSR1);
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return failed ? 1 : 0;
fail:
	code = 1;
fail_code:
	stop_all(p, n);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}
