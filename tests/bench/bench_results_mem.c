/* bench_results_mem: how much memory results.json's kept interval rows hold, by agents and
 * stages (issue 30: a coordinator for 1,000 agents or a sweep of 20 stages should not need
 * a multiple of one stage's memory).  Builds the real document through the real API
 * (cl_results_add_interval_agents, as run/merge.c calls it) for each case and prints the
 * heap it holds once the rows are kept (glibc's mallinfo2: bytes in use, before and
 * after).  A benchmark: it prints figures and asserts nothing.
 *
 *     bench_results_mem [--intervals 1800] [--agents 0,2,10,100,1000] [--stages 1]
 */
#include "tests/coord/coord_metrics.h"
#include "coordinator/results/results.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* The heap a run of n_stages stages of `intervals` rows with n_agents agents holds. */
static double measure(size_t n_stages, size_t intervals, uint32_t n_agents)
{
	char tmpl[] = "/tmp/bench-results-mem-XXXXXX";
	char *dir = mkdtemp(tmpl);
	if (!dir) {
		perror("mkdtemp");
		exit(1);
	}
	uint32_t *conc = calloc(n_stages, sizeof(*conc));
	for (size_t i = 0; i < n_stages; i++)
		conc[i] = (uint32_t)(i + 1);
	struct cl_scenario s;
	tm_scenario(&s, "mem", conc, n_stages);
	struct cl_metrics iv = { 0 };
	struct cl_results_agent_health *h = calloc(n_agents ? n_agents : 1, sizeof(*h));
	if (!h || cl_metrics_init(&iv) != 0) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	uint64_t seed = 7;
	const struct tm_traffic t = { .requests = 40, .ttft_ms = 120, .itl_ms = 12,
				      .output_tokens = 32, .prompt_tokens = 100,
				      .tokens_per_chunk = 1, .cpu_pct = 40,
				      .cpu_capacity_pct = 200, .inflight = 4 };
	tm_record(&iv, &seed, &t);
	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	size_t before = in_use();
	if (cl_results_create(&s, NULL, 0, NULL, dir, &r, &err) != 0) {
		fprintf(stderr, "cl_results_create: %s\n", err.msg);
		exit(1);
	}
	for (size_t st = 0; st < n_stages; st++) {
		for (size_t k = 0; k < intervals; k++) {
			for (uint32_t a = 0; a < n_agents; a++)
				h[a] = (struct cl_results_agent_health){
					.agent = a + 1,
					.cpu_pct = 10 + tm_unit(&seed) * 30,
					.loop_lag_p99_ms = tm_unit(&seed) * 3,
					.dispatch_lag_p99_ms = tm_unit(&seed) * 4,
				};
			if (cl_results_add_interval_agents(r, st, 0.1 * (double)(k + 1), &iv, 0.1, h,
							   n_agents) != 0) {
				fprintf(stderr, "cl_results_add_interval_agents failed\n");
				exit(1);
			}
		}
		if (cl_results_finish_stage(r, st, &s.stages[st], &iv, 0.1 * (double)intervals,
					    CL_STAGE_OK, NULL) != 0) {
			fprintf(stderr, "cl_results_finish_stage failed\n");
			exit(1);
		}
	}
	double mib = ((double)in_use() - (double)before) / (1024.0 * 1024.0);
	cl_results_destroy(r);
	cl_metrics_destroy(&iv);
	tm_scenario_free(&s);
	free(conc);
	free(h);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return mib;
}

int main(int argc, char **argv)
{
	size_t intervals = CL_RESULTS_MAX_INTERVALS, stages = 1;
	const char *agents = "0,2,10,100,1000";
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--intervals") == 0)
			intervals = strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--agents") == 0)
			agents = argv[i + 1];
		else if (strcmp(argv[i], "--stages") == 0)
			stages = strtoul(argv[i + 1], NULL, 10);
		else {
			fprintf(stderr, "usage: %s [--intervals N] [--agents A,B,...] [--stages N]\n",
				argv[0]);
			return 2;
		}
	}
	printf("results document held: %zu stage(s) of %zu intervals each (a kept row lists at "
	       "most %d agents; finished stages keep %d rows in all)\n",
	       stages, intervals, CL_RESULTS_AGENTS_KEPT, CL_RESULTS_MAX_FINISHED_INTERVALS);
	printf("%8s  %12s  %14s\n", "agents", "heap MiB", "KiB per interval");
	char *list = strdup(agents);
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		uint32_t n = (uint32_t)strtoul(tok, NULL, 10);
		double mib = measure(stages, intervals, n);
		printf("%8u  %12.1f  %14.2f\n", n, mib,
		       mib * 1024.0 / (double)(stages * intervals));
		fflush(stdout);
	}
	free(list);
	return 0;
}
