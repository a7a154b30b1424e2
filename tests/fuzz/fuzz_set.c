/* libFuzzer target: --set values over a scenario that has every section, so each override
 * reaches a converter (durations, sizes, rates, lists, SLOs, the simulator's options).
 * Input: up to 8 lines, each one "key.path=value" override. */
#include "coordinator/scenario/scenario.h"
#include "scenario_invariants.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base[] = "name: fuzz\n"
			   "target:\n"
			   "  url: http://127.0.0.1:8000/v1\n"
			   "  model: m\n"
			   "  api_key_env: KEY\n"
			   "  headers: { X-A: b }\n"
			   "  body: { temperature: 0.6 }\n"
			   "  server_metrics: { url: 'http://127.0.0.1:9400/metrics', interval: 500ms,\n"
			   "                    headers: { X-M: c }, series: [a_total, 'b:*'],\n"
			   "                    extra: ['http://127.0.0.1:9400/metrics'] }\n"
			   "agents: { local: 1 }\n"
			   "readiness: { timeout: 1m, request_timeout: 10s, consecutive: 1 }\n"
			   "warmup: { requests: 2, concurrency: 1 }\n"
			   "workload:\n"
			   "  prompts: [a, b]\n"
			   "  max_tokens: 16\n"
			   "stages:\n"
			   "  - { name: s1, concurrency: 2, requests: 4 }\n"
			   "  - { concurrency: [4, 8], duration: 10s, ramp: 1s }\n"
			   "  - { rate: 5, duration: 10s, arrival: gamma, gamma_shape: 0.5 }\n"
			   "slo: { ttft_p99: 2s, itl_p99: 100ms, error_rate: 1% }\n"
			   "estimate: { samples: [1000], from_stage: s1 }\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *ov[9] = { 0 };
	size_t n = 0, off = 0;
	char *copy = malloc(size + 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	copy[size] = '\0';
	if (strlen(copy) != size) { /* a NUL inside: not representable as an argument */
		free(copy);
		return 0;
	}
	while (n < 8 && off < size) {
		char *nl = strchr(copy + off, '\n');
		if (nl)
			*nl = '\0';
		ov[n++] = copy + off;
		if (!nl)
			break;
		off = (size_t)(nl - copy) + 1;
	}
	struct cl_scenario s;
	struct cl_diags d = { 0 };
	int rc = cl_scenario_load_string(base, sizeof(base) - 1, "fuzz/base.yaml", ov, &s, &d);
	if (rc == 0 && d.n != 0)
		abort(); /* success with errors reported */
	if (rc != 0 && d.n == 0 && d.dropped == 0)
		abort(); /* failure without a word to the user */
	if (rc == 0)
		fuzz_check_scenario(&s);
	cl_scenario_free(&s);
	cl_diags_free(&d);
	free(copy);
	return 0;
}
