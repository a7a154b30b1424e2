/* libFuzzer target: the Anthropic Messages decoder (client/stream/), checked on every input
 * against the chat decoder's JSON verdict and jansson's tree (tests/stream/api_oracle.h); and
 * as an event under every SSE flag, against cl_event_decode's rule. */
#include <stdint.h>

#include "tests/stream/api_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	api_fuzz_one(API_MESSAGES, data, size);
	api_fuzz_event(CL_API_MESSAGES, data, size);
	return 0;
}
