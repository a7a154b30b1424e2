/* libFuzzer target: the rerank and score decoder (client/stream/rerank.c), checked on every
 * input against the chat decoder's JSON verdict and jansson's tree
 * (tests/stream/rerank_oracle.h). */
#include <stdint.h>

#include "tests/stream/rerank_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rerank_fuzz_one(data, size);
	return 0;
}
