/* libFuzzer target: the dataset reader (JSONL of OpenAI or ShareGPT records, or plain text)
 * and the trace reader (Mooncake or Azure JSONL) through cl_workload_render, the code that turns a
 * user's file into request bodies.  The first byte picks the declared format, the second the record
 * limit; the rest is the file, held in a memfd so no disk is touched. */
#include "coordinator/scenario/scenario.h"
#include "coordinator/workload/workload.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	int fd = memfd_create("dataset", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	size_t off = 0;
	while (off < size - 2) {
		ssize_t k = write(fd, data + 2 + off, size - 2 - off);
		if (k <= 0)
			abort();
		off += (size_t)k;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	struct cl_scenario s;
	memset(&s, 0, sizeof(s));
	/* A first byte of 4 (mod 5) reads the file as a trace (Mooncake or Azure JSONL). */
	bool trace = data[0] % 5 == 4;
	s.workload.kind = trace ? CL_WORKLOAD_TRACE : CL_WORKLOAD_DATASET;
	s.workload.dataset = trace ? NULL : path;
	s.workload.trace = trace ? path : NULL;
	s.workload.trace_speedup = 1 + (data[1] & 3);
	s.workload.dataset_format = (enum cl_dataset_format)(data[0] % 5 % 4);
	s.workload.dataset_limit = trace ? 0 : data[1] % 8;
	s.workload.max_tokens = 16;
	s.workload.system_prompt = data[1] & 0x80 ? "be brief" : NULL;

	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	int rc = cl_workload_render(&s, "m", &w, &err);
	if (rc != 0) {
		if (!err.msg[0] || w.bodies || w.n_bodies)
			abort(); /* refused without a reason, or with bodies left */
	} else {
		if (w.n_bodies == 0 ||
		    (s.workload.dataset_limit && w.n_bodies > s.workload.dataset_limit))
			abort();
		for (size_t i = 0; i < w.n_bodies; i++) {
			/* every body is one JSON object of the length it claims, streaming */
			json_t *b = json_loadb(w.bodies[i].json, w.bodies[i].len, 0, NULL);
			if (!json_is_object(b) || strlen(w.bodies[i].json) != w.bodies[i].len ||
			    !json_is_true(json_object_get(b, "stream")) ||
			    !json_is_array(json_object_get(b, "messages")))
				abort();
			json_decref(b);
			/* a trace's starts are in order, from 0 */
			if (trace && (w.bodies[i].at_us < 0 ||
				      (i && w.bodies[i].at_us < w.bodies[i - 1].at_us)))
				abort();
		}
		cl_workload_plan_free(&w);
	}
	close(fd);
	return 0;
}
