/* Leveled logger to stderr, one write() per line so threads and processes do not interleave. */
#include "chatload/log.h"

#include "chatload/err.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *g_program = "chatload";
/* Read by every thread that logs: an atomic, relaxed (a level change need order nothing). */
static atomic_int g_level = CL_LOG_INFO;
static const char *const level_names[] = { "debug", "info", "warn", "error", "quiet" };

int cl_log_parse_level(const char *name, enum cl_log_level *out)
{
	for (int i = 0; i <= CL_LOG_QUIET; i++) {
		if (name && strcmp(name, level_names[i]) == 0) {
			*out = (enum cl_log_level)i;
			return 0;
		}
	}
	if (name && strcmp(name, "warning") == 0) {
		*out = CL_LOG_WARN;
		return 0;
	}
	return CL_EINVAL;
}

void cl_log_init(const char *program)
{
	if (program) {
		const char *slash = strrchr(program, '/');
		g_program = slash ? slash + 1 : program;
	}
	enum cl_log_level lvl;
	const char *env = getenv("CHATLOAD_LOG");
	if (env && cl_log_parse_level(env, &lvl) == 0)
		atomic_store_explicit(&g_level, lvl, memory_order_relaxed);
}

void cl_log_adjust(int delta)
{
	int l = atomic_load_explicit(&g_level, memory_order_relaxed) + delta;
	if (l < CL_LOG_DEBUG)
		l = CL_LOG_DEBUG;
	if (l > CL_LOG_QUIET)
		l = CL_LOG_QUIET;
	atomic_store_explicit(&g_level, l, memory_order_relaxed);
}

void cl_log_set_level(enum cl_log_level level)
{
	atomic_store_explicit(&g_level, level, memory_order_relaxed);
}
enum cl_log_level cl_log_level(void)
{
	return (enum cl_log_level)atomic_load_explicit(&g_level, memory_order_relaxed);
}

void cl_log(enum cl_log_level level, const char *fmt, ...)
{
	if ((int)level < atomic_load_explicit(&g_level, memory_order_relaxed) ||
	    level >= CL_LOG_QUIET)
		return;
	char line[2048];
	int n = snprintf(line, sizeof(line), "%s: %s: ", g_program, level_names[level]);
	if (n < 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w; /* nothing sensible to do if stderr is gone */
}
