/* Tests of the run's per-agent records in a phase (run/phase.c): who must finish, who broke
 * the fleet, and how a stage is shared out, on a fleet table built by hand. */
#include "coordinator/run/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define N 3

struct fixture {
	struct run r;
	struct cl_fleet_agent agents[N];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	assert_non_null(fx);
	for (size_t i = 0; i < N; i++) {
		fx->agents[i].id = (uint32_t)i + 1;
		fx->agents[i].workers = (uint32_t)i + 1;
		fx->agents[i].live = CL_LIVE_OK;
		snprintf(fx->agents[i].host, sizeof(fx->agents[i].host), "h%zu", i + 1);
		snprintf(fx->agents[i].label, sizeof(fx->agents[i].label), "h%zu at 10.0.0.%zu",
			 i + 1, i + 1);
	}
	fx->r.fleet.agents = fx->agents;
	fx->r.fleet.n = N;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	for (size_t i = 0; i < CL_FLEET_MAX_AGENTS; i++)
		cl_stage_plan_free(&fx->r.agents[i].share);
	free(fx);
	return 0;
}

static void test_all_finished(void **state)
{
	struct fixture *fx = *state;
	struct run *r = &fx->r;
	/* The gate waits for every agent, a stage only for its participants. */
	assert_false(cli_run_all_finished(r, RUN_PHASE_READINESS));
	assert_true(cli_run_all_finished(r, RUN_PHASE_STAGE));
	r->agents[0].stage.participates = true;
	r->agents[2].stage.participates = true;
	r->agents[0].stage.final_seen = true;
	assert_false(cli_run_all_finished(r, RUN_PHASE_STAGE));
	r->agents[2].stage.final_seen = true;
	assert_true(cli_run_all_finished(r, RUN_PHASE_STAGE));
	assert_true(cli_run_all_finished(r, RUN_PHASE_WARMUP));
	r->agents[1].warm.participates = true;
	assert_false(cli_run_all_finished(r, RUN_PHASE_WARMUP));
	r->agents[1].warm.seen = true;
	assert_true(cli_run_all_finished(r, RUN_PHASE_WARMUP));
	for (size_t i = 0; i < N; i++)
		r->agents[i].probe.final = true;
	assert_true(cli_run_all_finished(r, RUN_PHASE_READINESS));
}

static void test_fleet_broken(void **state)
{
	struct fixture *fx = *state;
	struct run *r = &fx->r;
	char why[200];
	size_t who = 99;
	assert_int_equal(cli_run_fleet_broken(r, RUN_PHASE_READINESS, &who, why, sizeof(why)),
			 RUN_FLEET_WHOLE);
	fx->agents[1].live = CL_LIVE_LOST;
	/* Lost, but not in the stage: the stage does not care. */
	r->agents[0].stage.participates = true;
	assert_int_equal(cli_run_fleet_broken(r, RUN_PHASE_STAGE, &who, why, sizeof(why)),
			 RUN_FLEET_WHOLE);
	assert_int_equal(cli_run_fleet_broken(r, RUN_PHASE_READINESS, &who, why, sizeof(why)),
			 RUN_FLEET_LOST);
	assert_int_equal(who, 1);
	assert_string_equal(why, "agent 2 (h2 at 10.0.0.2) was lost: nothing came from it for 10 s "
				 "(a partition, a crash or "
				 "a frozen host)");
	/* Lost because the coordinator itself could not run: said so, not put on the agent. */
	fx->agents[1].lost_cause = CL_LOSS_COORDINATOR_STALL;
	assert_int_equal(cli_run_fleet_broken(r, RUN_PHASE_READINESS, &who, why, sizeof(why)),
			 RUN_FLEET_LOST);
	assert_non_null(strstr(why, "this coordinator could not run for longer than the 10 s"));
	fx->agents[2].state = CL_AGENT_FAILED;
	snprintf(fx->agents[2].error, sizeof(fx->agents[2].error), "out of sockets");
	r->agents[2].stage.participates = true;
	assert_int_equal(cli_run_fleet_broken(r, RUN_PHASE_STAGE, &who, why, sizeof(why)),
			 RUN_FLEET_FAILED);
	assert_int_equal(who, 2);
	assert_string_equal(why, "agent 3 (h3 at 10.0.0.3) failed: out of sockets");
}

static void test_split_shares(void **state)
{
	struct fixture *fx = *state;
	struct run *r = &fx->r;
	struct cl_stage_plan whole = { .name = "c6",
				       .mode = CL_MODE_CONCURRENCY,
				       .concurrency = 6 };
	/* Workers 1, 2, 3: the shares follow them. */
	assert_int_equal(cli_run_split_shares(r, &whole), 0);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(r->agents[i].share.concurrency, i + 1);
		assert_string_equal(r->agents[i].share.name, "c6");
		assert_true(cli_run_has_share(r, i, &whole));
	}
	/* A lost agent gets nothing; the next split replaces (and frees) the last one. */
	fx->agents[2].live = CL_LIVE_LOST;
	assert_int_equal(cli_run_split_shares(r, &whole), 0);
	assert_int_equal(r->agents[0].share.concurrency + r->agents[1].share.concurrency, 6);
	assert_int_equal(r->agents[2].share.concurrency, 0);
	assert_false(cli_run_has_share(r, 2, &whole));
	/* A request-bound stage: an agent with no requests has no share. */
	struct cl_stage_plan few = {
		.name = "r1", .mode = CL_MODE_CONCURRENCY, .concurrency = 1, .requests = 1
	};
	assert_int_equal(cli_run_split_shares(r, &few), 0);
	size_t with = 0;
	for (size_t i = 0; i < N; i++)
		with += cli_run_has_share(r, i, &few);
	assert_int_equal(with, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_all_finished, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_broken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_shares, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
