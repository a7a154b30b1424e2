/* The control thread's wake-up pipe (see wake.h). */
#include "agent/daemon/wake.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

static int g_fd[2] = { -1, -1 };

int cl_wake_open(void)
{
	if (g_fd[0] >= 0)
		return 0;
	if (pipe2(g_fd, O_NONBLOCK | O_CLOEXEC) != 0) {
		g_fd[0] = g_fd[1] = -1;
		return -errno;
	}
	return 0;
}

void cl_wake_poke(void)
{
	int saved = errno; /* a signal handler must leave errno as it found it */
	if (g_fd[1] >= 0) {
		char b = 1;
		/* A full pipe already holds a poke: nothing is lost. */
		if (write(g_fd[1], &b, 1) < 0) {
		}
	}
	errno = saved;
}

void cl_wake_sleep(int64_t us)
{
	if (us < 0)
		us = 0;
	if (us > 3600000000LL)
		us = 3600000000LL; /* an hour: callers loop */
	int ms = (int)((us + 999) / 1000);
	/* Before cl_wake_open the fd is -1, which poll() ignores: a plain sleep. */
	struct pollfd p = { .fd = g_fd[0], .events = POLLIN };
	if (poll(&p, 1, ms) > 0) {
		char buf[64];
		while (read(g_fd[0], buf, sizeof(buf)) > 0)
			;
	}
}
