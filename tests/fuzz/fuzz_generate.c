/* libFuzzer target: a generate job's answer assembled from a hostile stream.  The input is
 * an SSE response body; every event goes to cl_asm_feed, and whatever the events were, the
 * assembled chat.completion must be one JSON object with object "chat.completion". */
#include "agent/generate/assemble.h"
#include "client/stream/sse.h"

#include <jansson.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *ctx, const char *d, size_t len, unsigned flags)
{
	int code = 0;
	char why[256];
	cl_asm_feed(ctx, d, len, &code, why, sizeof(why));
	return 0; /* a bad chunk does not stop the fuzzing of the rest */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cl_asm *a = cl_asm_new();
	struct cl_sse_parser p;
	if (!a || cl_sse_init(&p, 1u << 16) != 0) {
		cl_asm_free(a);
		return 0;
	}
	/* in two feeds, split where the first byte says, so splits are fuzzed too */
	size_t cut = size ? data[0] % (size + 1) : 0;
	cl_sse_feed(&p, (const char *)data, cut, on_event, a);
	cl_sse_feed(&p, (const char *)data + cut, size - cut, on_event, a);
	char *text = cl_asm_result(a);
	if (text) {
		json_error_t je;
		json_t *root = json_loads(text, 0, &je);
		if (!json_is_object(root) ||
		    strcmp(json_string_value(json_object_get(root, "object")), "chat.completion") != 0)
			abort();
		json_decref(root);
		free(text);
	}
	cl_sse_destroy(&p);
	cl_asm_free(a);
	return 0;
}
