/* CL_ASSERT: a true condition costs nothing visible; a false one names itself and where it
 * broke on stderr, then aborts, whatever the log level. */
#include "chatload/assert.h"
#include "chatload/log.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static int g_calls;

static int counted(int v)
{
	g_calls++;
	return v;
}

static void test_true_passes_once(void **state)
{
	(void)state;
	g_calls = 0;
	CL_ASSERT(counted(1) == 1);
	/* the condition is evaluated exactly once */
	assert_int_equal(g_calls, 1);
}

/* Runs CL_ASSERT(n < 3) with n = 3 in a child whose stderr is a pipe; returns what it wrote
 * and how it ended. */
static void run_failing_child(char *out, size_t cap, int *status)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		signal(SIGABRT, SIG_DFL);
		cl_log_set_level(CL_LOG_QUIET); /* an assertion is heard even so */
		volatile int n = 3;
		CL_ASSERT(n < 3);
		_exit(0); /* not reached when the assertion works */
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t r;
	while (len + 1 < cap && (r = read(fds[0], out + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
}

static void test_false_names_itself_and_aborts(void **state)
{
	(void)state;
	char out[1024];
	int status = 0;
	run_failing_child(out, sizeof out, &status);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	assert_non_null(strstr(out, "assertion failed: n < 3 ("));
	assert_non_null(strstr(out, "assert_test.c:"));
	assert_non_null(strstr(out, "run_failing_child)\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_true_passes_once),
		cmocka_unit_test(test_false_names_itself_and_aborts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
