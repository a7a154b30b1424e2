/* Tests of the rerank and score decoder (client/stream/rerank.c): the answers of vLLM,
 * llama.cpp, TEI and Cohere as their sources write them, against hand-read values; wrong
 * shapes, each named; every truncation; and a differential run of mutated answers against
 * rerank_oracle.h (the chat decoder's JSON verdict, jansson's tree). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chatload/err.h"
#include "rerank_oracle.h"

/* Decodes from an exact-size heap copy so that ASan sees any read past the end, and fails
 * the test when the oracle disagrees. */
static int dec(const char *s, size_t n, struct cl_rerank *r)
{
	char *copy = malloc(n ? n : 1);
	assert_non_null(copy);
	memcpy(copy, s, n);
	int rc = cl_rerank_decode(copy, n, r);
	char detail[256];
	const char *bad = rerank_oracle_check(copy, n, rc, r, detail, sizeof(detail));
	if (bad)
		fail_msg("oracle: %s on '%.*s'", bad, (int)n, s);
	r->error_msg = r->error_msg ? s + (r->error_msg - copy) : NULL;
	free(copy);
	return rc;
}

static int dec_str(const char *s, struct cl_rerank *r)
{
	return dec(s, strlen(s), r);
}

/* llama.cpp's /v1/rerank (format_response_rerank, tools/server/utils.hpp): results of
 * {index, relevance_score}, usage of both counts. */
static const char llama_rerank[] =
    "{\"model\":\"gpt-3.5-turbo\",\"object\":\"list\",\"usage\":{\"prompt_tokens\":21,"
    "\"total_tokens\":21},\"results\":[{\"index\":0,\"relevance_score\":-5.125},"
    "{\"index\":1,\"relevance_score\":2.25},{\"index\":2,\"relevance_score\":-11}]}";
/* vLLM's /v1/rerank (RerankResponse): usage with total_tokens only, documents echoed. */
static const char vllm_rerank[] =
    "{\"id\":\"rerank-7d3c\",\"model\":\"BAAI/bge-reranker-base\",\"usage\":{"
    "\"total_tokens\":56},\"results\":[{\"index\":1,\"document\":{\"text\":\"The capital of "
    "France is Paris.\"},\"relevance_score\":0.99853515625},{\"index\":0,\"document\":{"
    "\"text\":\"The capital of Brazil is Brasilia.\"},\"relevance_score\":0.0005860328674316406}]}";
/* vLLM's /v1/score (ScoreResponse). */
static const char vllm_score[] =
    "{\"id\":\"score-request-1\",\"object\":\"list\",\"created\":1733456789,\"model\":"
    "\"BAAI/bge-reranker-v2-m3\",\"data\":[{\"index\":0,\"object\":\"score\",\"score\":"
    "0.0010},{\"index\":1,\"object\":\"score\",\"score\":1.0}],\"usage\":{\"prompt_tokens\":"
    "31,\"total_tokens\":31,\"completion_tokens\":0,\"prompt_tokens_details\":null}}";
/* TEI's /rerank (and llama.cpp's answer to a TEI-shaped request): a bare array. */
static const char tei_rerank[] =
    "[{\"index\":1,\"score\":0.9976},{\"index\":0,\"score\":0.0012,\"text\":\"x\"}]";
/* Cohere's /v2/rerank: no usage, meta.billed_units. */
static const char cohere_rerank[] =
    "{\"id\":\"07734bd2\",\"results\":[{\"index\":3,\"relevance_score\":0.999071},"
    "{\"index\":4,\"relevance_score\":0.7867867}],\"meta\":{\"api_version\":{\"version\":"
    "\"2\"},\"billed_units\":{\"search_units\":1}}}";

static void test_servers_answers(void **state)
{
	(void)state;
	struct cl_rerank r;
	assert_int_equal(dec_str(llama_rerank, &r), 0);
	assert_int_equal(r.n_results, 3);
	assert_true(r.has_usage);
	assert_int_equal(r.prompt_tokens, 21);
	assert_int_equal(r.total_tokens, 21);
	assert_false(r.is_error);

	assert_int_equal(dec_str(vllm_rerank, &r), 0);
	assert_int_equal(r.n_results, 2);
	assert_int_equal(r.prompt_tokens, -1);
	assert_int_equal(r.total_tokens, 56);

	assert_int_equal(dec_str(vllm_score, &r), 0);
	assert_int_equal(r.n_results, 2);
	assert_int_equal(r.prompt_tokens, 31);

	assert_int_equal(dec_str(tei_rerank, &r), 0);
	assert_int_equal(r.n_results, 2);
	assert_false(r.has_usage);
	assert_int_equal(r.total_tokens, -1);

	assert_int_equal(dec_str(cohere_rerank, &r), 0);
	assert_int_equal(r.n_results, 2);
	assert_false(r.has_usage);
}

static void test_errors_and_wrong_shapes(void **state)
{
	(void)state;
	struct cl_rerank r;
	assert_int_equal(dec_str("{\"error\":{\"code\":400,\"message\":\"this model does not "
				 "support reranking\"}}",
				 &r),
			 0);
	assert_true(r.is_error);
	assert_int_equal(r.error_code, 400);
	assert_non_null(r.error_msg);
	assert_int_equal(dec_str("{\"error\":\"Input validation error\"}", &r), 0);
	assert_true(r.is_error);
	/* vLLM's unwrapped ErrorResponse has none of the keys: the one reader of failures
	 * (error.c) is asked next, by the engine. */
	assert_int_equal(dec_str("{\"object\":\"error\",\"message\":\"x\",\"code\":400}", &r),
			 CL_EPROTO);
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "7", "the answer is neither a JSON object nor an array" },
		{ "{}", "the answer has neither results, data nor error" },
		{ "{\"results\":{}}", "results (or data) is not an array" },
		{ "{\"data\":\"x\"}", "results (or data) is not an array" },
		{ "{\"results\":[1]}", "a result is not an object" },
		{ "[{\"index\":0},[]]", "a result is not an object" },
		{ "{\"results\":[],\"usage\":[]}", "usage is not an object" },
		{ "{\"results\":[],\"usage\":{\"total_tokens\":-1}}",
		  "usage.total_tokens is not a non-negative integer" },
		{ "{\"results\":[],\"usage\":{\"prompt_tokens\":\"3\"}}",
		  "usage.prompt_tokens is not a non-negative integer" },
		{ "{\"results\":[],\"error\":5}", "error is neither an object nor a string" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(dec_str(bad[i].text, &r), CL_EPROTO);
		assert_string_equal(r.malformed, bad[i].why);
		assert_int_equal(r.n_results, 0); /* cleared: nothing of a wrong answer counts */
	}
	/* A repeated key's last value counts, as in jansson. */
	assert_int_equal(dec_str("{\"results\":[],\"usage\":{\"total_tokens\":\"x\","
				 "\"total_tokens\":4}}",
				 &r),
			 0);
	assert_int_equal(r.total_tokens, 4);
	assert_int_equal(dec_str("", &r), CL_EPARSE);
	assert_int_equal(dec_str("[", &r), CL_EPARSE);
	assert_int_equal(dec_str("[] x", &r), CL_EPARSE);
	assert_int_equal(dec_str("[DONE]", &r), CL_EPARSE);
}

/* Every prefix of every answer: no read past its end (ASan), and the oracle's verdict. */
static void test_truncations(void **state)
{
	(void)state;
	const char *const all[] = { llama_rerank, vllm_rerank, vllm_score, tei_rerank,
				    cohere_rerank };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		size_t n = strlen(all[i]);
		for (size_t k = 0; k < n; k++) {
			struct cl_rerank r;
			assert_int_equal(dec(all[i], k, &r), CL_EPARSE);
		}
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

/* Flips, insertions of JSON punctuation, deletions and truncations. */
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
	const char *const seeds[] = { llama_rerank,
				      vllm_rerank,
				      vllm_score,
				      tei_rerank,
				      cohere_rerank,
				      "{\"error\":{\"code\":501,\"message\":\"no\"}}",
				      "{\"results\":[],\"usage\":{\"prompt_tokens\":3,"
				      "\"total_tokens\":3}}" };
	const size_t n_seeds = sizeof(seeds) / sizeof(seeds[0]);
	char buf[4096];
	size_t checked = 0, accepted = 0, answers = 0;
	for (size_t r = 0; r < 60000; r++) {
		const char *seed = seeds[r % n_seeds];
		size_t n = strlen(seed);
		assert_true(n < sizeof(buf));
		memcpy(buf, seed, n);
		if (r >= n_seeds)
			mutate(buf, &n, sizeof(buf));
		struct cl_rerank a;
		int rc = dec(buf, n, &a); /* fails the test on a disagreement */
		checked++;
		accepted += rc != CL_EPARSE;
		answers += rc == 0;
	}
	/* The mutations must leave enough valid JSON, and answers, for the checks to mean
	 * something. */
	assert_true(accepted * 10 > checked);
	assert_true(answers * 20 > checked);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_servers_answers),
		cmocka_unit_test(test_errors_and_wrong_shapes),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_differential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
