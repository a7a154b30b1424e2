/* libFuzzer target: the transcription decoder (client/stream/transcription.c), checked on
 * every input against the chat decoder's JSON verdict and jansson's tree
 * (tests/stream/transcription_oracle.h). */
#include <stdint.h>

#include "tests/stream/transcription_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	transcription_fuzz_one(data, size);
	return 0;
}
