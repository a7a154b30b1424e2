/* Shedding the slots a burst left idle (agent/engine/idle.c): which free slots give their
 * handle back, in what order, and that the look is at most once a second. The slots are
 * real ones (real curl handles, the engine's own destroy); only the worker around them is
 * built by hand, as a stage would leave it. */
#include "agent/engine/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define SEC 1000000LL
#define NOW (1000 * SEC)

struct fixture {
	struct cl_worker w;
	struct cl_slot slots[6];
	uint32_t stack[6];
};

/* Slot i as a stage leaves it: used (a handle) and freed at freed_us, or never used. */
static void used(struct fixture *f, uint32_t i, int64_t freed_us)
{
	struct cl_slot *s = &f->slots[i];
	s->w = &f->w;
	s->index = i;
	s->easy = curl_easy_init();
	assert_non_null(s->easy);
	s->freed_us = freed_us;
}

static void push(struct fixture *f, uint32_t i)
{
	f->stack[f->w.nfree++] = i;
}

static struct fixture *setup(void)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->w.slots = f->slots;
	f->w.nslots = 6;
	f->w.free_stack = f->stack;
	return f;
}

static void teardown(struct fixture *f)
{
	for (uint32_t i = 0; i < 6; i++)
		cli_slot_destroy(&f->slots[i]);
	free(f);
}

static void sheds_the_idle_and_keeps_the_warm(void **state)
{
	(void)state;
	struct fixture *f = setup();
	/* Bottom up: two never used, then freed 40 s, 16 s, 14 s and 1 s ago. */
	push(f, 5);
	push(f, 4);
	used(f, 0, NOW - 40 * SEC);
	push(f, 0);
	used(f, 1, NOW - 16 * SEC);
	push(f, 1);
	used(f, 2, NOW - 14 * SEC);
	push(f, 2);
	used(f, 3, NOW - 1 * SEC);
	push(f, 3);

	assert_int_equal(cli_worker_shed_idle(&f->w, NOW), 2);
	/* A second trim is due when libcurl has closed the burst's idle connections. */
	assert_true(f->w.trim_again_us >= NOW + 118 * SEC);
	assert_null(f->slots[0].easy);
	assert_null(f->slots[1].easy);
	assert_non_null(f->slots[2].easy); /* 14 s: not yet */
	assert_non_null(f->slots[3].easy);
	/* The stack itself is unchanged: a shed slot is still free, only cold. */
	assert_int_equal(f->w.nfree, 6);
	assert_non_null(f->slots[0].w);

	/* Within the second, no second look; after it, the 14 s one has passed 15 s. */
	assert_int_equal(cli_worker_shed_idle(&f->w, NOW + SEC / 2), 0);
	assert_non_null(f->slots[2].easy);
	assert_int_equal(cli_worker_shed_idle(&f->w, NOW + 2 * SEC), 1);
	assert_null(f->slots[2].easy);
	assert_non_null(f->slots[3].easy);
	teardown(f);
}

static void nothing_to_shed_when_all_are_warm_or_never_used(void **state)
{
	(void)state;
	struct fixture *f = setup();
	push(f, 5);
	push(f, 4);
	assert_int_equal(cli_worker_shed_idle(&f->w, NOW), 0);
	used(f, 0, NOW - 2 * SEC);
	push(f, 0);
	assert_int_equal(cli_worker_shed_idle(&f->w, NOW + 2 * SEC), 0);
	assert_non_null(f->slots[0].easy);
	teardown(f);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sheds_the_idle_and_keeps_the_warm),
	    cmocka_unit_test(nothing_to_shed_when_all_are_warm_or_never_used),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
