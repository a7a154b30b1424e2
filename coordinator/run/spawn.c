/* Starting, watching and stopping the coordinator's child processes. */
#include "coordinator/run/spawn.h"

#include "chatload/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* environ with env_extra's NAME=VALUE entries put in (replacing a variable of the same name),
 * as one array for execve; the strings are shared, only the array is allocated. */
static char **child_env(char *const env_extra[])
{
	size_t n_env = 0, n_extra = 0;
	while (environ && environ[n_env])
		n_env++;
	while (env_extra && env_extra[n_extra])
		n_extra++;
	char **envp = calloc(n_env + n_extra + 1, sizeof(*envp));
	if (!envp)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < n_env; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t klen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		bool replaced = false;
		for (size_t j = 0; j < n_extra && !replaced; j++)
			replaced = strncmp(env_extra[j], environ[i], klen) == 0 &&
				   env_extra[j][klen] == '=';
		if (!replaced)
			envp[n++] = environ[i];
	}
	for (size_t j = 0; j < n_extra; j++)
		envp[n++] = env_extra[j];
	envp[n] = NULL;
	return envp;
}

int cl_child_start(struct cl_child *c, const char *name, char *const argv[],
		   char *const env_extra[], int stdout_fd, struct cl_err *err)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	/* The child's environment is built here, before fork: between fork and exec the child
	 * may call only async-signal-safe functions.  putenv there allocated, and when another
	 * thread (the /metrics scraper, nng's) held the allocator's lock at the fork, as
	 * AddressSanitizer's allocator does not reset it, the child hung before exec and the
	 * agent never joined. */
	char **envp = child_env(env_extra);
	if (!envp)
		return cl_err_set(err, CL_ENOMEM, "cannot start %s: out of memory", name);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		free(envp);
		return cl_err_set(err, CL_ESYS, "cannot start %s: fork: %s", name, strerror(errno));
	}
	if (pid == 0) {
		/* Child: only async-signal-safe work until exec. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127); /* the parent died before prctl took effect */
		if (stdout_fd >= 0)
			dup2(stdout_fd, STDOUT_FILENO);
		execve(argv[0], argv, envp);
		char msg[512];
		int len = snprintf(msg, sizeof(msg), "chatload: cannot run '%s': %s\n", argv[0],
				   strerror(errno));
		if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0)
			_exit(127);
		_exit(127);
	}
	free(envp);
	c->pid = pid;
	return 0;
}

bool cl_child_poll(struct cl_child *c)
{
	if (!c->pid || c->exited)
		return c->exited;
	int st;
	pid_t r = waitpid(c->pid, &st, WNOHANG);
	if (r == c->pid) {
		c->exited = true;
		c->wait_status = st;
	}
	return c->exited;
}

void cl_child_stop(struct cl_child *c, int64_t grace_us)
{
	if (!c || !c->pid || cl_child_poll(c))
		return;
	kill(c->pid, SIGTERM);
	int64_t deadline = cl_mono_us() + grace_us;
	while (cl_mono_us() < deadline) {
		if (cl_child_poll(c))
			return;
		cl_sleep_ns(5 * 1000 * 1000);
	}
	kill(c->pid, SIGKILL);
	int st;
	if (waitpid(c->pid, &st, 0) == c->pid) {
		c->exited = true;
		c->wait_status = st;
	}
}

char *cl_child_describe(const struct cl_child *c, char *buf, size_t n)
{
	if (!c->exited)
		snprintf(buf, n, "%s is running", c->name);
	else if (WIFEXITED(c->wait_status))
		snprintf(buf, n, "%s exited with status %d", c->name, WEXITSTATUS(c->wait_status));
	else if (WIFSIGNALED(c->wait_status))
		snprintf(buf, n, "%s was killed by signal %d", c->name, WTERMSIG(c->wait_status));
	else
		snprintf(buf, n, "%s ended", c->name);
	return buf;
}

static bool executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int cl_find_program(const char *name, const char *env_var, char *buf, size_t n, struct cl_err *err)
{
	const char *env = env_var ? getenv(env_var) : NULL;
	if (env && *env) {
		if (!executable(env))
			return cl_err_set(err, CL_ENOTFOUND, "%s='%s' is not an executable file",
					  env_var, env);
		snprintf(buf, n, "%s", env);
		return 0;
	}
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len > 0) {
		self[len] = '\0';
		char *slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		/* Side by side: build/bin in the build tree, or where they were installed. */
		snprintf(buf, n, "%s/%s", self, name);
		if (executable(buf))
			return 0;
	}
	const char *path = getenv("PATH");
	while (path && *path) {
		const char *colon = strchr(path, ':');
		size_t dl = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(buf, n, "%.*s/%s", (int)dl, path, name);
		if (dl && executable(buf))
			return 0;
		path = colon ? colon + 1 : NULL;
	}
	return cl_err_set(err, CL_ENOTFOUND,
			  "cannot find '%s' (looked in $%s, next to chatload and on PATH)", name,
			  env_var ? env_var : "");
}

int cl_wait_for_file_line(const char *path, int64_t timeout_us, struct cl_child *watch, char *buf,
			  size_t n, struct cl_err *err)
{
	int64_t deadline = cl_mono_us() + timeout_us;
	for (;;) {
		FILE *f = fopen(path, "r");
		if (f) {
			bool ok = fgets(buf, (int)n, f) != NULL;
			fclose(f);
			if (ok) {
				buf[strcspn(buf, "\r\n")] = '\0';
				if (buf[0])
					return 0;
			}
		}
		if (watch && cl_child_poll(watch)) {
			char how[128];
			return cl_err_set(err, CL_ECLOSED, "%s before writing '%s'",
					  cl_child_describe(watch, how, sizeof(how)), path);
		}
		if (cl_mono_us() >= deadline)
			return cl_err_set(err, CL_ETIMEDOUT, "timed out waiting for '%s'", path);
		cl_sleep_ns(10 * 1000 * 1000);
	}
}
