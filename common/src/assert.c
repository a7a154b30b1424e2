/* The failing side of CL_ASSERT: say which invariant broke and where, then abort. */
#include "chatload/assert.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void cl_assert_fail(const char *cond, const char *file, int line, const char *func)
{
	/* One write, so the line stays whole beside other threads' logging; stderr directly,
	 * not cl_log, so a quiet log level cannot hide it. */
	char msg[512];
	int n = snprintf(msg, sizeof msg, "%s: assertion failed: %s (%s:%d, %s)\n",
			 program_invocation_short_name, cond, file, line, func);
	if (n > (int)sizeof msg - 1) {
		n = (int)sizeof msg - 1;
		msg[n - 1] = '\n';
	}
	if (n > 0) {
		ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
		(void)w;
	}
	abort();
}
