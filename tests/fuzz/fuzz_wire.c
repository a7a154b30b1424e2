/* libFuzzer target for the wire decoder: anything that decodes must re-encode, re-decode,
 * and re-encode to the same bytes (nothing lost, nothing invented). */
#include "chatload/wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const struct cl_err *err)
{
	fprintf(stderr, "fuzz_wire: %s: %s\n", what, err ? err->msg : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cl_err err = { 0 };
	struct cl_msg m1, m2;
	int rc = cl_wire_decode(data, size, &m1, &err);
	if (rc) {
		/* A refusal owns nothing, and always says why. */
		if (m1.owned || err.msg[0] == '\0' || err.code != rc)
			die("refusal without a reason or with data", &err);
		cl_msg_free(&m1);
		return 0;
	}
	/* What decoded passed the pre-validator. */
	struct cl_wire_stats st;
	if (cl_wire_check(data, size, &st, &err) || st.max_depth > CL_WIRE_MAX_DEPTH)
		die("decoded but the pre-validator refuses it", &err);

	msgpack_sbuffer a, b;
	msgpack_sbuffer_init(&a);
	msgpack_sbuffer_init(&b);
	if (cl_wire_encode(&m1, &a, &err))
		die("re-encode of a decoded message failed", &err);
	if (cl_wire_decode(a.data, a.size, &m2, &err))
		die("re-decode of a re-encoded message failed", &err);
	if (m2.type != m1.type || m2.seq != m1.seq || m2.agent != m1.agent ||
	    strcmp(m2.run, m1.run) != 0)
		die("envelope changed in the round trip", NULL);
	if (cl_wire_encode(&m2, &b, &err))
		die("second re-encode failed", &err);
	if (a.size != b.size || memcmp(a.data, b.data, a.size) != 0)
		die("encodings of the same message differ", NULL);
	msgpack_sbuffer_destroy(&a);
	msgpack_sbuffer_destroy(&b);
	cl_msg_free(&m1);
	cl_msg_free(&m2);
	return 0;
}
