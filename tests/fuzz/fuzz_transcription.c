/* libFuzzer target: the transcription decoder (client/stream/transcription.c), a whole answer
 * and a streamed event; whatever it keeps must point into its input. */
#include "chatload/plan.h"
#include "client/stream/event.h"
#include "client/stream/transcription.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	struct cl_transcription t;
	if (cl_transcription_decode(p, size, true, &t) == 0) {
		if (t.text && (t.text < p || t.text + t.text_len > p + size))
			abort();
		if (!t.has_text && !t.is_error)
			abort(); /* a whole answer is text or an error */
	}
	struct cl_chunk c;
	if (cl_event_decode(CL_API_TRANSCRIPTION, p, size, 0, &c) == 0 && c.content &&
	    (c.content < p || c.content + c.content_len > p + size))
		abort();
	return 0;
}
