/* Test-only program: builds a run's results through the real results API from synthetic
 * traffic recorded into real metrics, and writes them (all formats) to a directory, for the
 * Python integration tests (results.json by results/, then results.csv, report.md and
 * report.html by report/, as the run asks for them).  Prints the terminal table as `run` does;
 * exits with the run's exit code (111 when the fixture itself fails).
 *
 * usage: results_fixture OUTDIR [--scale F] [--breach] [--interrupt] [--kill-after-stage N]
 *                               [--client-bound] [--stall] [--warn] [--rate] [--intervals N]
 *                               [--seed N]
 *   --scale F   latencies times F, throughput divided by F (F > 1 is a regression)
 *   --breach    adds an SLO the c16 stage breaks (exit 99)
 *   --interrupt the c8 stage is interrupted after two intervals (exit 1, complete: false)
 *   --kill-after-stage N  SIGKILLs itself two intervals into stage N+1
 *   --client-bound  the c16 stage's dispatch lag is 75 ms (client-bound: exit 1)
 *   --stall     agent 2 stalls 4.2 s into the c8 stage for 1.5 s, and the coordinator
 *               saw agent 1 go missing in it (client-bound: exit 1)
 *   --warn      the scenario says client_bound: warn (a client-bound stage only warns)
 *   --rate      open-loop stages (5, 10, 20, 40 requests/s) instead of concurrency
 *   --intervals N  report intervals per stage (default 5)
 */
#include "coord_metrics.h"
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"

#include "chatload/exitcode.h"
#include "chatload/units.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define FIXTURE_FAILED 111
#define INTERVALS      5

static int die(const char *what, const struct cl_err *err)
{
	fprintf(stderr, "results_fixture: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
	return FIXTURE_FAILED;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	double scale = 1.0;
	bool breach = false, interrupt = false, client_bound = false, rate = false;
	bool stall = false, warn_only = false;
	int intervals = 5;
	long kill_after = -1;
	uint64_t seed = 20261202;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
			if (cl_parse_double(argv[++i], &scale) != 0 || scale <= 0)
				return die("bad --scale", NULL);
		} else if (strcmp(argv[i], "--breach") == 0) {
			breach = true;
		} else if (strcmp(argv[i], "--interrupt") == 0) {
			interrupt = true;
		} else if (strcmp(argv[i], "--client-bound") == 0) {
			client_bound = true;
		} else if (strcmp(argv[i], "--stall") == 0) {
			stall = true;
		} else if (strcmp(argv[i], "--warn") == 0) {
			warn_only = true;
		} else if (strcmp(argv[i], "--rate") == 0) {
			rate = true;
		} else if (strcmp(argv[i], "--intervals") == 0 && i + 1 < argc) {
			int64_t v;
			if (cl_parse_i64(argv[++i], 2, 100000, &v) != 0)
				return die("bad --intervals", NULL);
			intervals = (int)v;
		} else if (strcmp(argv[i], "--kill-after-stage") == 0 && i + 1 < argc) {
			int64_t v;
			if (cl_parse_i64(argv[++i], 0, 3, &v) != 0)
				return die("bad --kill-after-stage", NULL);
			kill_after = (long)v;
		} else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
			if (cl_parse_u64(argv[++i], UINT64_MAX, &seed) != 0)
				return die("bad --seed", NULL);
		} else if (argv[i][0] != '-' && !dir) {
			dir = argv[i];
		} else {
			fprintf(stderr, "results_fixture: unknown argument '%s'\n", argv[i]);
			return FIXTURE_FAILED;
		}
	}
	if (!dir)
		return die("usage: results_fixture OUTDIR [options]", NULL);

	struct cl_scenario s;
	const uint32_t conc[] = { 1, 4, 8, 16 };
	tm_scenario(&s, "fixture-sweep", conc, 4);
	s.file = "scenarios/fixture-sweep.yaml";
	s.stages[0].duration_us = 0;
	s.stages[0].requests = 8;
	for (size_t i = 0; rate && i < s.n_stages; i++) {
		char name[32];
		snprintf(name, sizeof(name), "r%u/s", 5u << i);
		free(s.stages[i].name);
		s.stages[i].name = strdup(name);
		s.stages[i].mode = CL_MODE_RATE;
		s.stages[i].arrival = CL_ARRIVAL_POISSON;
		s.stages[i].rate_per_s = 5 << i;
		s.stages[i].concurrency = 0;
	}
	tm_add_slo(&s, "ttft_p99", CL_SLO_LATENCY, CL_LAT_TTFT, 99, 2e6, NULL);
	tm_add_slo(&s, "itl_p99", CL_SLO_LATENCY, CL_LAT_ITL, 99, 100e3, NULL);
	tm_add_slo(&s, "error_rate", CL_SLO_ERROR_RATE, 0, 0, 0.05, NULL);
	tm_add_slo(&s, "min_output_tokens_per_s", CL_SLO_MIN_OUTPUT_TPS, 0, 0, 10,
		   s.stages[1].name);
	if (breach)
		tm_add_slo(&s, "ttft_p50", CL_SLO_LATENCY, CL_LAT_TTFT, 50, 100e3, "c16");
	static uint64_t samples[] = { 100000, 500000, 900000 };
	s.estimate.samples = malloc(sizeof(samples));
	memcpy(s.estimate.samples, samples, sizeof(samples));
	s.estimate.n_samples = 3;
	s.estimate.from_stage = strdup("8");
	if (warn_only)
		s.client_bound = CL_CLIENT_BOUND_WARN;

	struct cl_results *r = NULL;
	struct cl_err err = { 0 };
	if (cl_results_create(&s, NULL, argc, argv, dir, &r, &err) != 0)
		return die("cannot create results", &err);

	struct cl_readiness_result rr = { .status = 1,
					  .phase = 2,
					  .attempts = 2,
					  .phase_passed_us = { 1200, 41000, 1350000 },
					  .probe_ttft_us = 92000,
					  .probe_total_us = 130000,
					  .elapsed_us = 1350000,
					  .failing_since_us = -1 };
	snprintf(rr.model, sizeof(rr.model), "fixture-model");
	cl_results_set_readiness(r, &rr);
	struct cl_results_agent agents[] = { { 1, "127.0.0.1", 2, -35, 120, false, "10.0.0.5", NULL },
					     { 2, "127.0.0.1", 2, 18, 95, false, "10.0.0.6", NULL } };
	cl_results_set_agents(r, agents, 2);

	struct cl_metrics warm = { 0 }, iv = { 0 }, cum = { 0 };
	if (cl_metrics_init(&warm) || cl_metrics_init(&iv) || cl_metrics_init(&cum))
		return die("out of memory", NULL);
	struct tm_traffic wt = { .requests = 2,
				 .ttft_ms = 300,
				 .itl_ms = 12,
				 .output_tokens = 16,
				 .prompt_tokens = 20,
				 .tokens_per_chunk = 1,
				 .queue_ms = 0.1 };
	tm_record(&warm, &seed, &wt);
	cl_results_set_warmup(r, &warm);

	bool complete = true;
	for (size_t st = 0; st < s.n_stages; st++) {
		/* Closed loop: about 1.25 completions per stream and second; open loop: the rate.
		 */
		double c = conc[st];
		double per_interval = rate ? s.stages[st].rate_per_s / scale : c * 1.25 / scale;
		struct tm_traffic t = {
			.requests = per_interval >= 1 ? (uint32_t)(per_interval + 0.5) : 1,
			.errors_5xx = 0,
			.ttft_ms = 80 * (1 + c / 16) * scale,
			.itl_ms = 10 * (1 + c / 32) * scale,
			.output_tokens = 64,
			.prompt_tokens = 180,
			.tokens_per_chunk = st == 3 ? 2 : 1,
			.queue_ms = client_bound && st == 3 ? 75 : 0.15,
			.good_ttft_ms = 200,
			.cpu_pct = 20 + 6 * c,
			.cpu_capacity_pct = 200,
			.inflight = (int64_t)c,
		};
		cl_metrics_reset(&cum);
		int n = intervals;
		bool stop = interrupt && st == 2;
		if (stop || (kill_after >= 0 && (long)st == kill_after + 1))
			n = 2;
		for (int k = 0; k < n; k++) {
			cl_metrics_reset(&iv);
			struct tm_traffic ti = t;
			/* A burst of errors mid-stage, so the timeline shows something. */
			if (st == 3 && k == 2)
				ti.errors_5xx = 2;
			ti.inflight = k == 0 ? (int64_t)(c / 2) : (int64_t)c;
			/* A slow drift, so long timelines have a shape. */
			if (intervals > 5)
				ti.ttft_ms *= 1 + 0.25 * sin(k / 20.0);
			tm_record(&iv, &seed, &ti);
			if (cl_results_add_interval(r, st, k + 1.0, &iv, 1.0) != 0)
				return die("cannot add an interval", NULL);
			if (cl_metrics_merge(&cum, &iv) != 0)
				return die("cannot merge an interval", NULL);
		}
		if (kill_after >= 0 && (long)st == kill_after + 1) {
			fflush(stdout);
			raise(SIGKILL);
		}
		if (stall && st == 2) {
			const struct cl_results_stall st_list[] = {
				{ 2, "127.0.0.2", 4.2, 1.5, false, false },
				{ 1, "127.0.0.1", 1.0, 3.4, true, false },
				{ 0, NULL, 6.0, 0.6, true, true }, /* the coordinator's own */
			};
			if (cl_results_add_stalls(r, st, st_list, 3, 0, 0) != 0)
				return die("cannot add stalls", NULL);
			/* and a lost agent's load no report covers */
			const struct cl_results_blind blind = {
				.agent = 2,
				.host = "127.0.0.2",
				.cause = "silent",
				.from_s = 7.0,
				.to_s = 9.0,
				.rate_basis_s = 3.0,
				.requests_per_s = 10.0,
				.output_tokens_per_s = 640.0,
			};
			if (cl_results_add_unaccounted(r, st, &blind) != 0)
				return die("cannot add unaccounted load", NULL);
		}
		enum cl_stage_status status = stop ? CL_STAGE_INTERRUPTED : CL_STAGE_OK;
		if (cl_results_finish_stage(r, st, &s.stages[st], &cum, n, status,
					    stop ? "interrupted by SIGINT" : NULL) != 0)
			return die("cannot finish a stage", NULL);
		if (stop) {
			complete = false;
			break;
		}
	}
	int code = FIXTURE_FAILED;
	if (cl_results_finish(r, complete, CL_EXIT_OK, &code) != 0)
		return die(cl_results_last_error(r), NULL);
	/* The report files, as the run writes them after results.json (run/run.c). */
	if (cl_report_write_files(cl_results_doc(r), dir,
				  CL_REPORT_FILE(CL_REPORT_CSV) | CL_REPORT_FILE(CL_REPORT_MD) |
				      CL_REPORT_FILE(CL_REPORT_HTML),
				  &err) != 0)
		return die("cannot write the reports", &err);
	cl_report_render(cl_results_doc(r), CL_REPORT_TABLE, stdout);
	cl_metrics_destroy(&warm);
	cl_metrics_destroy(&iv);
	cl_metrics_destroy(&cum);
	cl_results_destroy(r);
	s.file = NULL;
	tm_scenario_free(&s);
	return code;
}
