/* libFuzzer target: the embedding decoder (client/stream/), checked on every input against the
 * chat decoder's JSON verdict and jansson's tree (tests/stream/api_oracle.h). */
#include <stdint.h>

#include "tests/stream/api_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	api_fuzz_one(API_EMBEDDINGS, data, size);
	return 0;
}
