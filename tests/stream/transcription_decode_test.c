/* Tests of the transcription decoder (client/stream/transcription.c): OpenAI's and vLLM's
 * answers as their documentation and sources write them, wrong shapes, every truncation,
 * and a differential run of mutated answers against transcription_oracle.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chatload/err.h"
#include "transcription_oracle.h"

/* Decodes from an exact-size heap copy (ASan sees a read past the end); the oracle must
 * agree. */
static int dec(const char *s, size_t n, struct cl_transcription *t)
{
	char *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	memcpy(copy, s, n);
	int rc = cl_transcription_decode(copy, n, t);
	char detail[256];
	const char *bad = transcription_oracle_check(copy, n, rc, t, detail, sizeof(detail));
	if (bad)
		fail_msg("oracle: %s on '%.*s'", bad, (int)n, s);
	t->error_msg = t->error_msg ? s + (t->error_msg - copy) : NULL;
	free(copy);
	return rc;
}

static int dec_str(const char *s, struct cl_transcription *t)
{
	return dec(s, strlen(s), t);
}

/* OpenAI's json answer with its duration usage. */
static const char openai_json[] = "{\"text\":\"Imagine the wildest idea that you've ever had.\","
				  "\"usage\":{\"type\":\"duration\",\"seconds\":9}}";
/* vLLM's TranscriptionResponse (text, and usage on newer builds). */
static const char vllm_json[] = "{\"text\":\" And so my fellow Americans, ask not.\"}";
/* verbose_json: segments skipped. */
static const char verbose_json[] =
    "{\"task\":\"transcribe\",\"language\":\"english\",\"duration\":8.47,\"text\":\"The "
    "beach was a popular spot.\",\"segments\":[{\"id\":0,\"seek\":0,\"start\":0.0,\"end\":3.32,"
    "\"text\":\" The beach\",\"tokens\":[50364,440],\"temperature\":0.0}],\"usage\":{"
    "\"type\":\"duration\",\"seconds\":9}}";

static void test_answers(void **state)
{
	(void)state;
	struct cl_transcription t;
	assert_int_equal(dec_str(openai_json, &t), 0);
	assert_true(t.has_text);
	assert_int_equal(t.text_bytes, strlen("Imagine the wildest idea that you've ever had."));
	assert_int_equal(t.usage_seconds, 9);
	assert_int_equal(dec_str(vllm_json, &t), 0);
	assert_true(t.has_text);
	assert_int_equal(t.usage_seconds, -1);
	assert_int_equal(dec_str(verbose_json, &t), 0);
	assert_int_equal(t.usage_seconds, 9);
	assert_int_equal(dec_str("{\"error\":{\"code\":400,\"message\":\"no audio\"}}", &t), 0);
	assert_true(t.is_error);
	assert_int_equal(t.error_code, 400);
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "[]", "the answer is not a JSON object" },
		{ "{}", "the answer has neither text nor error" },
		{ "{\"text\":3}", "text is not a string" },
		{ "{\"text\":\"x\",\"usage\":[]}", "usage is not an object" },
		{ "{\"text\":\"x\",\"usage\":{\"seconds\":1.5}}",
		  "usage.seconds is not a non-negative integer" },
		{ "{\"text\":\"x\",\"error\":7}", "error is neither an object nor a string" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dec_str(bad[i].text, &t), CL_EPROTO);
		assert_string_equal(t.malformed, bad[i].why);
		assert_false(t.has_text);
	}
	assert_int_equal(dec_str("", &t), CL_EPARSE);
	assert_int_equal(dec_str("{\"text\":\"x\"} {}", &t), CL_EPARSE);
}

static void test_truncations(void **state)
{
	(void)state;
	const char *const all[] = { openai_json, vllm_json, verbose_json };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		for (size_t k = 0; k < strlen(all[i]); k++) {
			struct cl_transcription t;
			assert_int_equal(dec(all[i], k, &t), CL_EPARSE);
		}
}

static uint64_t rng_s = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng_s ^= rng_s << 13;
	rng_s ^= rng_s >> 7;
	rng_s ^= rng_s << 17;
	return rng_s;
}

static void mutate(char *s, size_t *n, size_t cap)
{
	static const char alphabet[] = "{}[]\",:0123456789.-eE \\untrlfa\"xyz";
	int k = 1 + (int)(rnd() % 3);
	while (k--) {
		size_t at = *n ? rnd() % *n : 0;
		switch (rnd() % 4) {
		case 0:
			if (*n)
				s[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
			break;
		case 1:
			if (*n + 1 < cap) {
				memmove(s + at + 1, s + at, *n - at);
				s[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
				(*n)++;
			}
			break;
		case 2:
			if (*n) {
				memmove(s + at, s + at + 1, *n - at - 1);
				(*n)--;
			}
			break;
		default:
			*n = at;
			break;
		}
	}
}

static void test_differential(void **state)
{
	(void)state;
	const char *const seeds[] = { openai_json, vllm_json, verbose_json,
				      "{\"error\":{\"code\":501,\"message\":\"no\"}}" };
	const size_t n_seeds = sizeof(seeds) / sizeof(seeds[0]);
	char buf[4096];
	size_t checked = 0, accepted = 0;
	for (size_t r = 0; r < 40000; r++) {
		size_t n = strlen(seeds[r % n_seeds]);
		memcpy(buf, seeds[r % n_seeds], n);
		if (r >= n_seeds)
			mutate(buf, &n, sizeof(buf));
		struct cl_transcription t;
		int rc = dec(buf, n, &t);
		checked++;
		accepted += rc != CL_EPARSE;
	}
	assert_true(accepted * 10 > checked);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_differential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
