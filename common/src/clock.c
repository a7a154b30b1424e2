/* Monotonic, wall and CPU clocks. */
#include "chatload/clock.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

static int64_t read_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t cl_mono_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}
int64_t cl_mono_us(void)
{
	return read_ns(CLOCK_MONOTONIC) / 1000;
}
int64_t cl_wall_us(void)
{
	return read_ns(CLOCK_REALTIME) / 1000;
}
int64_t cl_cpu_us(void)
{
	return read_ns(CLOCK_PROCESS_CPUTIME_ID) / 1000;
}

char *cl_wall_iso8601(int64_t wall_us, char *buf, size_t n)
{
	time_t secs = (time_t)(wall_us / 1000000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)((wall_us / 1000) % 1000));
	return buf;
}

char *cl_wall_stamp(int64_t wall_us, char *buf, size_t n)
{
	time_t secs = (time_t)(wall_us / 1000000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	snprintf(buf, n, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec);
	return buf;
}

void cl_sleep_ns(int64_t ns)
{
	if (ns <= 0)
		return;
	struct timespec ts = { .tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}
