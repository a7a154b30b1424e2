/* libFuzzer target: the scenario loader (YAML, overrides, every section) on arbitrary input.
 * Seed it with the examples and the bad corpus: copy the files of scenarios/ and
 * tests/data/bad-scenarios/ into a directory CORPUS, then run
 *   fuzz_scenario -dict=tests/fuzz/fuzz_scenario.dict CORPUS */
#include "coordinator/scenario/scenario.h"
#include "scenario_invariants.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input is a scenario; leading lines "#set KEY=VALUE" also become --set overrides, so the
 * override path (copying shared alias nodes, creating keys) is fuzzed with the document.
 * Every call must end with either a valid scenario or diagnostics, never both, and free
 * cleanly (ASan checks the latter).
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *ov[5] = { 0 };
	size_t n_ov = 0, off = 0;
	while (n_ov < 4 && size - off > 5 && memcmp(text + off, "#set ", 5) == 0) {
		const char *nl = memchr(text + off, '\n', size - off);
		if (!nl)
			break;
		size_t len = (size_t)(nl - text - off - 5);
		char *s = malloc(len + 1);
		if (!s)
			abort();
		memcpy(s, text + off + 5, len);
		s[len] = '\0';
		if (strlen(s) != len) { /* a NUL inside: not representable as an argument */
			free(s);
			break;
		}
		ov[n_ov++] = s;
		off = (size_t)(nl - text) + 1;
	}

	struct cl_scenario s;
	struct cl_diags d = { 0 };
	int rc = cl_scenario_load_string(text, size, "fuzz/input.yaml", ov, &s, &d);
	if (rc == 0 && d.n != 0)
		abort(); /* success with errors reported */
	if (rc != 0 && d.n == 0 && d.dropped == 0)
		abort(); /* failure without a word to the user */
	if (rc == 0)
		fuzz_check_scenario(&s);
	cl_scenario_free(&s);
	cl_diags_free(&d);
	for (size_t i = 0; i < n_ov; i++)
		free((char *)ov[i]);
	return 0;
}
