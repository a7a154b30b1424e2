/* Benchmark: the machine's baseline for a 1 ms timer.  Arms a CLOCK_MONOTONIC timerfd 1 ms
 * ahead (timer slack 1 ns) N times and prints how late each wake-up came (p50, p99, p999,
 * max): the scheduling noise that engine_timing_test's per-request TAIL bound leaves room for
 * (tests/engine/engine_timing_test.c).  Run it beside the load the tests run beside.
 *
 * usage: bench_wakeup [N]   (default 300)
 */
#include "chatload/clock.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 300;
	if (n < 1 || n > 10000000) {
		fprintf(stderr, "usage: bench_wakeup [N]   (1 to 10000000 wake-ups)\n");
		return 2;
	}
	int64_t *lag = calloc((size_t)n, sizeof(*lag));
	int fd = timerfd_create(CLOCK_MONOTONIC, 0);
	if (!lag || fd < 0) {
		perror("bench_wakeup");
		return 1;
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	long got = 0;
	for (; got < n; got++) {
		int64_t due = cl_mono_us() + 1000;
		struct itimerspec its = { .it_value = { .tv_sec = due / 1000000,
							.tv_nsec = (due % 1000000) * 1000 } };
		timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
		uint64_t x;
		if (read(fd, &x, sizeof(x)) != sizeof(x))
			break;
		lag[got] = cl_mono_us() - due;
	}
	close(fd);
	if (got == 0) {
		fprintf(stderr, "bench_wakeup: the timer never fired\n");
		free(lag);
		return 1;
	}
	qsort(lag, (size_t)got, sizeof(lag[0]), cmp_i64);
	printf("timerfd 1 ms wake-up lateness over %ld: p50 %lld p99 %lld p999 %lld max %lld us\n",
	       got, (long long)lag[got / 2], (long long)lag[got * 99 / 100],
	       (long long)lag[got * 999 / 1000], (long long)lag[got - 1]);
	free(lag);
	return 0;
}
