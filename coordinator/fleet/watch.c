/* The coordinator's watch on its own stalls: a thread that notices when it wakes up late. */
#include "coordinator/fleet/internal.h"

#include "chatload/err.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCH_TICK_US 100000

struct cli_fleet_watch {
	pthread_t thread;
	atomic_int stop;
	pthread_mutex_t mu;
	struct cl_stall_list pending; /* under mu */
};

static int64_t clock_us(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *watch_main(void *arg)
{
	struct cli_fleet_watch *w = arg;
	while (!atomic_load(&w->stop)) {
		int64_t due = clock_us(CLOCK_MONOTONIC) + WATCH_TICK_US;
		int64_t due_boot = clock_us(CLOCK_BOOTTIME) + WATCH_TICK_US;
		struct timespec ts = { 0, WATCH_TICK_US * 1000 };
		while (nanosleep(&ts, &ts) != 0)
			;
		/* Monotonic time stands still while the machine sleeps; boot time does not, and
		 * the agents' clocks ran on all the same. */
		int64_t late = clock_us(CLOCK_MONOTONIC) - due;
		int64_t late_boot = clock_us(CLOCK_BOOTTIME) - due_boot;
		if (late_boot > late)
			late = late_boot;
		if (late >= CL_STALL_MIN_US)
			cli_fleet_watch_note(w, due, late);
	}
	return NULL;
}

int cli_fleet_watch_start(struct cli_fleet_watch **out)
{
	*out = NULL;
	struct cli_fleet_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return CL_ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		pthread_mutex_destroy(&w->mu);
		free(w);
		return CL_ESYS;
	}
	*out = w;
	return 0;
}

void cli_fleet_watch_note(struct cli_fleet_watch *w, int64_t start_us, int64_t length_us)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	cl_stall_list_add(&w->pending, start_us, length_us);
	pthread_mutex_unlock(&w->mu);
}

uint32_t cli_fleet_watch_take(struct cli_fleet_watch *w, struct cl_stall_list *out)
{
	memset(out, 0, sizeof(*out));
	if (!w)
		return 0;
	pthread_mutex_lock(&w->mu);
	*out = w->pending;
	memset(&w->pending, 0, sizeof(w->pending));
	pthread_mutex_unlock(&w->mu);
	return out->n;
}

void cli_fleet_watch_stop(struct cli_fleet_watch *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, 1);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
