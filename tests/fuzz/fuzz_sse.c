/* libFuzzer target: the SSE parser under three splittings against the reference parser. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/stream/sse_ref.h"
#include "client/stream/chunk.h"
#include "client/stream/event.h"
#include "client/stream/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Feeds s in pieces: whole (step 0), fixed steps, or sizes drawn from seed.  Each piece is
 * its own exact-size heap block, so ASan catches a read past it and a zero-copy pointer
 * kept past the feed; 1-byte pieces reuse one block, whose changing content shows such a
 * pointer as a wrong event instead (and keeps the exec rate up).
 */
static void run(const char *s, size_t n, size_t max, size_t step, uint32_t seed,
		struct ev_list *out)
{
	struct cl_sse_parser p;
	char *one = malloc(1);
	if (!one || cl_sse_init(&p, max))
		abort();
	size_t i = 0;
	out->rc = 0;
	while (i < n) {
		size_t k = step;
		if (seed) {
			seed = seed * 1103515245u + 12345u;
			k = 1 + (seed >> 16) % 23;
		}
		if (k == 0 || k > n - i)
			k = n - i;
		char *piece = k == 1 ? one : malloc(k);
		if (!piece)
			abort();
		memcpy(piece, s + i, k);
		int rc = cl_sse_feed(&p, piece, k, ev_list_cb, out);
		if (piece != one)
			free(piece);
		i += k;
		if (rc) {
			out->rc = rc;
			break;
		}
	}
	out->pending = cl_sse_pending(&p);
	if (!out->rc)
		out->rc = cl_sse_finish(&p, ev_list_cb, out);
	if (p.cap > p.max)
		abort();
	cl_sse_destroy(&p);
	free(one);
}

static void same_or_die(const struct ev_list *a, const struct ev_list *b, const char *what)
{
	long d = ev_list_diff(a, b);
	if (d >= 0 || a->rc != b->rc || (!a->rc && a->pending != b->pending)) {
		fprintf(stderr, "%s: event %ld differs; events %zu/%zu rc %d/%d pending %d/%d\n",
			what, d, a->n, b->n, a->rc, b->rc, a->pending, b->pending);
		abort();
	}
}

/* Input: byte 0 picks the cap (0: the default), byte 1 the random split, the rest is the
 * stream. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t max = data[0] ? 1 + data[0] % 96 : 0;
	uint32_t seed = data[1] + 1u;
	const char *s = (const char *)data + 2;
	size_t n = size - 2;
	struct ev_list ref = { 0 }, whole = { 0 }, bytes = { 0 }, random = { 0 };

	sse_ref_parse(s, n, max ? max : CL_SSE_DEFAULT_MAX_EVENT_BYTES, &ref);
	run(s, n, max, 0, 0, &whole);
	run(s, n, max, 1, 0, &bytes);
	run(s, n, max, 0, seed, &random);
	same_or_die(&ref, &whole, "reference vs whole");
	same_or_die(&whole, &bytes, "whole vs 1-byte");
	same_or_die(&whole, &random, "whole vs random pieces");

	/* What the engine does next with each event: an event flagged as an error is never
	 * anything else, a document never an answer. */
	for (size_t i = 0; i < whole.n; i++) {
		struct cl_chunk c;
		int rc = cl_event_decode(CL_API_CHAT, whole.arena + whole.off[i], whole.len[i],
					 whole.flags[i], &c);
		/* CL_EPROTO: valid JSON that is not a chunk (stream/chunk.h) */
		if (rc != 0 && rc != CL_EPARSE && rc != CL_EPROTO)
			abort();
		if ((whole.flags[i] & (CL_SSE_ERROR_FIELD | CL_SSE_ERROR_EVENT)) &&
		    (rc || !c.is_error))
			abort();
		if ((whole.flags[i] & CL_SSE_DOCUMENT) && !rc && !c.is_error)
			abort();
	}
	ev_list_free(&ref);
	ev_list_free(&whole);
	ev_list_free(&bytes);
	ev_list_free(&random);
	return 0;
}
