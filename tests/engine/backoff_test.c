/* The no-answer backoff rule (delays by streak, jitter range, cap) and the parked-slot heap. */
#include "agent/engine/backoff.h"

#include "chatload/rng.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static void delays_double_then_cap(void **state)
{
	assert_int_equal(cl_backoff_delay_us(0, 0.5), 0);
	/* u = 0 gives half the nominal delay, u -> 1 the whole of it. */
	int64_t nominal = CL_BACKOFF_BASE_US;
	for (uint32_t k = 1; k <= 40; k++) {
		int64_t lo = cl_backoff_delay_us(k, 0.0), hi = cl_backoff_delay_us(k, 0.999999);
		assert_int_equal(lo, nominal / 2);
		assert_in_range(hi, nominal - nominal / 1000, nominal);
		assert_in_range(cl_backoff_delay_us(k, 0.5), lo, hi);
		nominal = nominal * 2 > CL_BACKOFF_CAP_US ? CL_BACKOFF_CAP_US : nominal * 2;
	}
	assert_int_equal(cl_backoff_delay_us(UINT32_MAX, 0.0), CL_BACKOFF_CAP_US / 2);
	/* A bad u (NaN, out of range) is taken as 0, never a longer wait. */
	assert_int_equal(cl_backoff_delay_us(1, -1.0), CL_BACKOFF_BASE_US / 2);
	assert_int_equal(cl_backoff_delay_us(1, 1.0), CL_BACKOFF_BASE_US / 2);
}

static void heap_pops_in_time_order(void **state)
{
	struct cl_park_heap h = { 0 };
	enum { N = 1000 };
	assert_int_equal(cl_park_init(&h, N), 0);
	assert_true(cl_park_peek(&h) == INT64_MAX);
	uint64_t rs = 42;
	for (uint32_t i = 0; i < N; i++)
		cl_park_push(&h, i, (int64_t)(cl_splitmix64(&rs) % 5000));
	assert_int_equal(h.n, N);
	int64_t prev = -1;
	uint8_t seen[N] = { 0 };
	for (uint32_t i = 0; i < N; i++) {
		int64_t at = cl_park_peek(&h);
		assert_true(at >= prev);
		uint32_t s = cl_park_pop(&h);
		assert_true(s < N);
		assert_false(seen[s]);
		seen[s] = 1;
		prev = at;
	}
	assert_true(cl_park_peek(&h) == INT64_MAX);
	cl_park_destroy(&h);
	cl_park_destroy(&h); /* twice, and on zeroed: safe */
}

/* A slot is parked at most once, so a full heap is a bug: the push that would lose a user
 * stops the agent with the broken invariant named (CL_ASSERT), in a child. */
static void push_past_capacity_aborts(void **state)
{
	(void)state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		signal(SIGABRT, SIG_DFL);
		struct cl_park_heap h = { 0 };
		if (cl_park_init(&h, 2) != 0)
			_exit(3);
		cl_park_push(&h, 0, 1);
		cl_park_push(&h, 1, 2);
		cl_park_push(&h, 2, 3); /* a third slot in a heap of two */
		_exit(0);               /* not reached when the assertion holds the line */
	}
	close(fds[1]);
	char out[512];
	size_t len = 0;
	ssize_t r;
	while (len + 1 < sizeof(out) && (r = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	assert_non_null(strstr(out, "h->n < h->cap"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(delays_double_then_cap),
		cmocka_unit_test(heap_pops_in_time_order),
		cmocka_unit_test(push_past_capacity_aborts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
