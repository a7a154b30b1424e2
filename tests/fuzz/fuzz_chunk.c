/* libFuzzer target: the chunk decoder, checked against jansson on every input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/stream/chunk_oracle.h"
#include "chatload/err.h"
#include "client/stream/chunk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct cl_chunk c;
	struct oracle_result r;

	int rc = cl_chunk_decode(s, size, &c);
	if (rc != 0 && rc != CL_EPARSE && rc != CL_EPROTO)
		abort();
	if (!memchr(c.finish_reason, '\0', sizeof(c.finish_reason)))
		abort();
	if (c.content_bytes > size || c.reasoning_bytes > size)
		abort();
	if (c.tool_bytes > size)
		abort();
	/* Every kept tool-call piece lies inside the input (zero-copy). */
	for (uint32_t i = 0; i < c.n_tool_calls && i < CL_CHUNK_TOOLS_MAX; i++) {
		const struct cl_chunk_tool *t = &c.tools[i];
		const char *p[3] = { t->id, t->name, t->args };
		size_t n[3] = { t->id_len, t->name_len, t->args_len };
		for (int k = 0; k < 3; k++)
			if ((!p[k] && n[k]) || (p[k] && (p[k] < s || p[k] + n[k] > s + size)))
				abort();
	}
	oracle_check(s, size, rc, &c, &r);
	if (r.verdict == ORACLE_MISMATCH) {
		fprintf(stderr, "mismatch with jansson: %s\n", r.detail);
		abort();
	}
	return 0;
}
