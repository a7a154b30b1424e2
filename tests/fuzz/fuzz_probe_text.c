/* libFuzzer target: the readiness probe's reading of a server's error body (JSON in the
 * shapes servers use, or text): the message quoted to the user is one printable line that
 * fits its buffer, whatever the server sent. */
#include "client/probe/probe_http.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t sizes[] = { 400, 64, 12, 1 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		char *out = malloc(sizes[k]);
		if (!out)
			abort();
		cli_probe_http_error_text(503, (const char *)data, size, out, sizes[k]);
		size_t n = strnlen(out, sizes[k]);
		if (n == sizes[k])
			abort(); /* not terminated */
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)out[i];
			if (c < 0x20 || c == 0x7f)
				abort(); /* a line break or control character reached the message */
		}
		free(out);
	}
	return 0;
}
