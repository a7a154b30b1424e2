/* Tests of readiness.c: the readiness verdict line and the phase names, from results made by
 * hand (the gate itself is tested against the simulator in tests/probe). */
#include "chatload/readiness.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MS  1000LL
#define SEC 1000000LL

/* The verdict line, from results made by hand. */
static void describe(void **state)
{
	struct cl_readiness_result r = { 0 };
	char v[1024];
	r.status = CL_READY_PASSED;
	r.phase = CL_READY_GENERATION;
	r.phase_passed_us[0] = 1200;
	r.phase_passed_us[1] = 2100 * MS;
	r.phase_passed_us[2] = 6200 * MS;
	r.elapsed_us = 6200 * MS;
	r.attempts = 3;
	r.probe_ttft_us = 101 * MS;
	cl_readiness_describe(&r, v, sizeof(v));
	assert_string_equal(v, "ready after 6.2s (connect at 0.0s, models at 2.1s, generation at "
			       "6.2s; 3 generation attempts; probe ttft 101ms)");

	r.status = CL_READY_TIMED_OUT;
	r.phase_passed_us[0] = 0;
	r.phase_passed_us[1] = 4 * SEC;
	r.phase_passed_us[2] = -1;
	r.elapsed_us = 15 * 60 * SEC + 20 * MS;
	r.failing_since_us = 12 * SEC;
	snprintf(r.last_error, sizeof(r.last_error), "HTTP 503 \"Loading model\"");
	cl_readiness_describe(&r, v, sizeof(v));
	assert_string_equal(v, "target not ready after 15m: /v1/models ok at 4.0s; generation "
			       "failing since 12.0s: HTTP 503 \"Loading model\"");

	r.status = CL_READY_FATAL;
	r.phase = CL_READY_MODELS;
	r.phase_passed_us[1] = -1;
	r.elapsed_us = 100 * MS;
	snprintf(r.last_error, sizeof(r.last_error),
		 "model 'x' is not listed; the server lists 'y'");
	cl_readiness_describe(&r, v, sizeof(v));
	assert_string_equal(v, "target not ready after 0.1s (configuration error, not retried): "
			       "connect ok at 0.0s; /v1/models: model 'x' is not listed; "
			       "the server lists 'y'");

	/* the buffer is never overrun */
	char small[16];
	cl_readiness_describe(&r, small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void phase_names(void **state)
{
	(void)state;
	assert_string_equal(cl_readiness_phase_name(CL_READY_CONNECT), "connect");
	assert_string_equal(cl_readiness_phase_name(CL_READY_MODELS), "/v1/models");
	assert_string_equal(cl_readiness_phase_name(CL_READY_GENERATION), "generation");
	assert_string_equal(cl_readiness_phase_name(CL_READY__PHASES), "?");
	assert_string_equal(cl_readiness_phase_name(-1), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(describe),
		cmocka_unit_test(phase_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
