/* Benchmark: how late a busy machine wakes a thread.  One thread re-arms a CLOCK_MONOTONIC
 * timerfd 10 ms ahead, as an engine worker's pacing timer is while a stage runs; another
 * sleeps 100 ms at a time, as the agent's control thread does between polls.  Prints the
 * distribution of their lateness, the figures behind CL_STALL_MIN_US (docs/engine.md,
 * "Client stalls"): run it beside whatever load the machine is meant to stand.
 *
 * usage: bench_timer_lag [SECONDS]   (default 60)
 */
#include "chatload/clock.h"
#include "chatload/stall.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

struct probe {
	const char *name;
	int64_t period_us;
	bool timerfd; /* else nanosleep */
	int64_t seconds;
	int64_t *late_us;
	size_t n, cap;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void *run(void *arg)
{
	struct probe *p = arg;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* as the engine's workers */
	int fd = p->timerfd ? timerfd_create(CLOCK_MONOTONIC, 0) : -1;
	int64_t end = cl_mono_us() + p->seconds * 1000000;
	while (p->n < p->cap) {
		int64_t due = cl_mono_us() + p->period_us;
		if (fd >= 0) {
			struct itimerspec its;
			memset(&its, 0, sizeof(its));
			its.it_value.tv_sec = due / 1000000;
			its.it_value.tv_nsec = (long)(due % 1000000) * 1000;
			timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
			uint64_t x;
			if (read(fd, &x, sizeof(x)) != (ssize_t)sizeof(x))
				break;
		} else {
			cl_sleep_ns(p->period_us * 1000);
		}
		int64_t now = cl_mono_us();
		p->late_us[p->n++] = now > due ? now - due : 0;
		if (now >= end)
			break;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void report(struct probe *p)
{
	if (p->n == 0)
		return;
	qsort(p->late_us, p->n, sizeof(*p->late_us), cmp_i64);
	size_t over50 = 0, over100 = 0, stalls = 0;
	for (size_t i = 0; i < p->n; i++) {
		over50 += p->late_us[i] > 50000;
		over100 += p->late_us[i] > 100000;
		stalls += p->late_us[i] >= CL_STALL_MIN_US;
	}
#define AT(q) ((double)p->late_us[(size_t)((double)(p->n - 1) * (q))] / 1000.0)
	printf("%-22s n=%zu  p50 %.2f  p99 %.2f  p99.9 %.2f  p99.99 %.2f  max %.2f ms;  "
	       "> 50 ms: %zu, > 100 ms: %zu, stalls (>= %d ms): %zu\n",
	       p->name, p->n, AT(0.5), AT(0.99), AT(0.999), AT(0.9999),
	       (double)p->late_us[p->n - 1] / 1000.0, over50, over100, CL_STALL_MIN_US / 1000,
	       stalls);
#undef AT
}

int main(int argc, char **argv)
{
	int64_t seconds = argc > 1 ? atoll(argv[1]) : 60;
	if (seconds <= 0 || seconds > 86400) {
		fprintf(stderr, "usage: bench_timer_lag [SECONDS]\n");
		return 2;
	}
	struct probe p[2] = {
		{ .name = "timerfd every 10 ms", .period_us = 10000, .timerfd = true },
		{ .name = "sleep 100 ms", .period_us = 100000, .timerfd = false },
	};
	pthread_t t[2];
	for (int i = 0; i < 2; i++) {
		p[i].seconds = seconds;
		p[i].cap = (size_t)(seconds * 1000000 / p[i].period_us) + 16;
		p[i].late_us = calloc(p[i].cap, sizeof(*p[i].late_us));
		if (!p[i].late_us || pthread_create(&t[i], NULL, run, &p[i]) != 0) {
			fprintf(stderr, "bench_timer_lag: cannot start a probe\n");
			return 1;
		}
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		report(&p[i]);
		free(p[i].late_us);
	}
	return 0;
}
