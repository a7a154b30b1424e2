/* Benchmark of the stream decoder: ns per chunk decode (vs jansson) and SSE feed MB/s at 1-byte
 * and 4 KiB splits.  Prints figures; asserts nothing (run by hand, not by ctest).
 * Usage: bench_stream [FIXTURE_DIR]  (default: tests/data/streams next to this source). */
#include "chatload/buf.h"
#include "chatload/clock.h"
#include "chatload/err.h"
#include "client/stream/chunk.h"
#include "client/stream/event.h"
#include "client/stream/sse.h"

#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const files[] = {
	"crlf-comment-error-midstream.sse",   "llama.cpp-b4748-chat-stream.sse",
	"openai-style-multitoken-chunks.sse", "openai-style-reasoning-field.sse",
	"openai-style-reasoning.sse",         "vllm-style-continuous-usage.sse",
	"synthetic-cr-multiline-cut.sse",
};

/* A typical vLLM content chunk, about 300 bytes. */
static const char vllm_chunk[] =
    "{\"id\":\"chatcmpl-8f3c2a1b9e7d4c6f8a0b1c2d3e4f5a6b\",\"object\":\"chat.completion.chunk\","
    "\"created\":1733000000,\"model\":\"moonshotai/Kimi-K2-Instruct-0905\",\"choices\":[{"
    "\"index\":0,\"delta\":{\"content\":\" the quick brown fox\"},\"logprobs\":null,"
    "\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null,"
    "\"system_fingerprint\":\"fp_44709d6fcb\"}";

struct events {
	char *data[256];
	size_t len[256];
	size_t n, bytes;
};

static int collect(void *ctx, const char *d, size_t n, unsigned flags)
{
	struct events *e = ctx;
	if (e->n < 256) {
		e->data[e->n] = malloc(n);
		if (!e->data[e->n])
			return CL_ENOMEM;
		memcpy(e->data[e->n], d, n);
		e->len[e->n++] = n;
		e->bytes += n;
	}
	return 0;
}

static size_t sink_events;
static int count_event(void *ctx, const char *d, size_t n, unsigned flags)
{
	sink_events++;
	return 0;
}

static int decode_event(void *ctx, const char *d, size_t n, unsigned flags)
{
	struct cl_chunk c;
	/* The engine's path: the flags first, then the chat decoder. */
	sink_events += cl_event_decode(CL_API_CHAT, d, n, flags, &c) == 0 && (c.has_content || c.done);
	return 0;
}

/* Reads the fields we read, with jansson, for a like-for-like figure. */
static int jansson_decode(const char *d, size_t n)
{
	json_t *root = json_loadb(d, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!root)
		return -1;
	int got = 0;
	json_t *ch = json_array_get(json_object_get(root, "choices"), 0);
	json_t *content = json_object_get(json_object_get(ch, "delta"), "content");
	got += json_is_string(content) && json_string_length(content) > 0;
	got += json_is_object(json_object_get(root, "usage"));
	json_decref(root);
	return got;
}

static double feed_mb_s(const char *s, size_t n, size_t step, cl_sse_event_cb cb, size_t *nev)
{
	struct cl_sse_parser p;
	if (cl_sse_init(&p, 0))
		exit(1);
	sink_events = 0;
	int64_t t0 = cl_mono_ns();
	for (size_t i = 0; i < n; i += step)
		if (cl_sse_feed(&p, s + i, n - i < step ? n - i : step, cb, NULL))
			exit(1);
	int64_t dt = cl_mono_ns() - t0;
	cl_sse_destroy(&p);
	*nev = sink_events;
	return (double)n / 1e6 / ((double)dt / 1e9);
}

int main(int argc, char **argv)
{
	char srcdir[1024], dir[1200], path[1400];
	struct events ev = { 0 };
	struct cl_buf all;

	snprintf(srcdir, sizeof(srcdir), "%s", __FILE__);
	snprintf(dir, sizeof(dir), "%s/../data/streams", dirname(srcdir));
	if (argc > 1)
		snprintf(dir, sizeof(dir), "%s", argv[1]);

	cl_buf_init(&all, 0);
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct cl_buf b;
		struct cl_sse_parser p;
		snprintf(path, sizeof(path), "%s/%s", dir, files[f]);
		cl_buf_init(&b, 1 << 20);
		if (cl_buf_read_file(&b, path)) {
			fprintf(stderr, "cannot read '%s'\n", path);
			return 1;
		}
		if (cl_sse_init(&p, 0) || cl_sse_feed(&p, b.data, b.len, collect, &ev))
			return 1;
		cl_sse_destroy(&p);
		/* A blank line after each file, so a cut-off last event ends there. */
		if (cl_buf_append(&all, b.data, b.len) || cl_buf_append(&all, "\n\n", 2))
			return 1;
		cl_buf_free(&b);
	}
	printf("fixtures: %zu events, %zu data bytes (mean %.0f bytes/event)\n", ev.n, ev.bytes,
	       (double)ev.bytes / (double)ev.n);

	/* Chunk decode: every fixture event, many rounds. */
	const int rounds = 20000;
	volatile size_t sink = 0;
	int64_t t0 = cl_mono_ns();
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < ev.n; i++) {
			struct cl_chunk c;
			sink +=
			    (size_t)cl_chunk_decode(ev.data[i], ev.len[i], &c) + c.content_bytes;
		}
	double ns = (double)(cl_mono_ns() - t0) / ((double)rounds * (double)ev.n);
	printf("cl_chunk_decode, fixture events: %.0f ns/chunk, %.2f ns/byte\n", ns,
	       ns * (double)ev.n / (double)ev.bytes);

	const int reps = 2000000;
	size_t vlen = sizeof(vllm_chunk) - 1;
	t0 = cl_mono_ns();
	for (int r = 0; r < reps; r++) {
		struct cl_chunk c;
		sink += (size_t)cl_chunk_decode(vllm_chunk, vlen, &c) + c.content_bytes;
	}
	ns = (double)(cl_mono_ns() - t0) / reps;
	printf("cl_chunk_decode, %zu-byte vLLM content chunk: %.0f ns/chunk\n", vlen, ns);

	/* The same chunk through the engine's entry (flags 0): what every event pays besides. */
	t0 = cl_mono_ns();
	for (int r = 0; r < reps; r++) {
		struct cl_chunk c;
		sink += (size_t)cl_event_decode(CL_API_CHAT, vllm_chunk, vlen, 0, &c) +
			c.content_bytes;
	}
	ns = (double)(cl_mono_ns() - t0) / reps;
	printf("cl_event_decode, the same chunk: %.0f ns/chunk\n", ns);

	const int jreps = 200000;
	t0 = cl_mono_ns();
	for (int r = 0; r < jreps; r++)
		sink += (size_t)jansson_decode(vllm_chunk, vlen);
	ns = (double)(cl_mono_ns() - t0) / jreps;
	printf("jansson json_loadb + field reads, same chunk: %.0f ns/chunk (for comparison)\n",
	       ns);

	/* SSE feed: the fixtures repeated to about 16 MiB. */
	struct cl_buf big;
	cl_buf_init(&big, 0);
	while (big.len < (16u << 20))
		if (cl_buf_append(&big, all.data, all.len) != 0)
			return 1;
	size_t nev;
	double mbs = feed_mb_s(big.data, big.len, 4096, count_event, &nev);
	printf("cl_sse_feed, 4 KiB pieces: %.0f MB/s (%zu events, %.0f ns/event)\n", mbs, nev,
	       (double)big.len * 1e3 / mbs / (double)nev);
	mbs = feed_mb_s(big.data, big.len, 1, count_event, &nev);
	printf("cl_sse_feed, 1-byte pieces: %.1f MB/s (%zu events)\n", mbs, nev);
	mbs = feed_mb_s(big.data, big.len, 4096, decode_event, &nev);
	printf("cl_sse_feed + cl_event_decode, 4 KiB pieces: %.0f MB/s (%.0f ns/event)\n", mbs,
	       (double)big.len * 1e3 / mbs / (double)nev);

	for (size_t i = 0; i < ev.n; i++)
		free(ev.data[i]);
	cl_buf_free(&all);
	cl_buf_free(&big);
	return sink == 0xdeadbeef;
}
