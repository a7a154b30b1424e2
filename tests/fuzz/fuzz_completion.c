/* libFuzzer target: the completion decoder (client/stream/), checked on every input against the
 * chat decoder's JSON verdict and jansson's tree (tests/stream/api_oracle.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../stream/api_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct cl_chunk c;
	struct cl_embedding e;
	char detail[256];
	int rc = api_decode(API_TEXT, s, size, &c, &e);
	if (!memchr(c.finish_reason, '\0', sizeof(c.finish_reason)))
		abort();
	if (c.content_bytes > size || c.reasoning_bytes > size)
		abort();
	if (c.content && (c.content < s || c.content + c.content_len > s + size))
		abort();
	if (e.error_msg && (e.error_msg < s || e.error_msg + e.error_msg_len > s + size))
		abort();
	const char *bad = api_oracle_check(API_TEXT, s, size, rc, &c, &e, detail, sizeof(detail));
	if (bad) {
		fprintf(stderr, "oracle: %s\n", bad);
		abort();
	}
	return 0;
}
