/* Tests of what the workload asks for and how it is arranged: synthetic output lengths,
 * records' own lengths, ignore_eos, the dataset filter, shuffle and limit, shared prefixes,
 * the token estimate, and putting the model found into rendered bodies. */
#include "coordinator/workload/workload.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char tmp_dir[PATH_MAX];

static const char *tmp_path(const char *name)
{
	static char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	return path;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

/* A scenario with the loader's defaults for what matters here. */
static struct cl_scenario base(void)
{
	struct cl_scenario s;
	memset(&s, 0, sizeof(s));
	s.workload.max_tokens = 256;
	s.workload.request_timeout_us = 600000000;
	s.workload.seed = 1;
	s.workload.synthetic_count = 64;
	s.workload.ignore_eos = -1;
	s.workload.dataset_output = CL_DATASET_OUTPUT_RECORD;
	s.workload.salt_none = true; /* the lengths as built (workload_test's test_salt: the tag) */
	return s;
}

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	if (!j)
		fail_msg("not JSON (%s): %s", jerr.text, text);
	return j;
}

static struct cl_workload_plan render(const struct cl_scenario *s, struct cl_workload_stats *st)
{
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	char msg[1024];
	int rc = cl_workload_render_stats(s, "m", &w, st, &err);
	if (rc)
		fail_msg("render failed: %d %s", rc, cl_err_format(&err, msg, sizeof(msg)));
	return w;
}

static bool has_ignore_eos(const char *json)
{
	json_t *b = parse(json);
	bool on = json_is_true(json_object_get(b, "ignore_eos"));
	json_decref(b);
	return on;
}

static const char *user_text(json_t *b)
{
	json_t *msgs = json_object_get(b, "messages");
	for (size_t i = 0; i < json_array_size(msgs); i++) {
		json_t *m = json_array_get(msgs, i);
		if (strcmp(json_string_value(json_object_get(m, "role")), "user") == 0)
			return json_string_value(json_object_get(m, "content"));
	}
	return "";
}

static void test_estimate(void **state)
{
	assert_int_equal(cl_workload_tokens_estimate("", 0), 0);
	assert_int_equal(cl_workload_tokens_estimate("abcd", 4), 1);
	assert_int_equal(cl_workload_tokens_estimate("abcde", 5), 2);
	/* code points, not bytes: four two-byte letters are one token */
	assert_int_equal(cl_workload_tokens_estimate("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8), 1);
}

/* Output lengths drawn per prompt: inside the bounds, spread, centred, in every body's
 * max_tokens, with ignore_eos; the same for a seed; the prompts unchanged by them. */
static void test_synthetic_output(void **state)
{
	struct cl_scenario s = base();
	s.workload.kind = CL_WORKLOAD_SYNTHETIC;
	s.workload.synthetic_count = 400;
	s.workload.synthetic_input = (struct cl_len_dist){ 40, 0, 1, 40 };
	s.workload.synthetic_output = (struct cl_len_dist){ 300, 60, 100, 500 };
	struct cl_workload_stats st;
	struct cl_workload_plan w = render(&s, &st);
	assert_int_equal(w.n_bodies, 400);
	double sum = 0, sq = 0;
	for (size_t i = 0; i < w.n_bodies; i++) {
		uint32_t k = w.bodies[i].max_tokens;
		if (k < 100 || k > 500)
			fail_msg("body %zu asks for %u tokens, outside [100, 500]", i, k);
		json_t *b = parse(w.bodies[i].json);
		assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), k);
		assert_true(json_is_true(json_object_get(b, "ignore_eos")));
		json_decref(b);
		sum += k;
		sq += (double)k * k;
	}
	double mean = sum / 400, sd = sqrt(sq / 400 - mean * mean);
	/* standard error of the mean: 60 / sqrt(400) = 3 tokens; allow 4 of them */
	if (fabs(mean - 300) > 12)
		fail_msg("mean output %.1f, wanted 300 +- 12", mean);
	if (sd < 45 || sd > 75)
		fail_msg("output stddev %.1f, wanted about 60", sd);
	assert_int_equal(st.own_length, 400);
	assert_int_equal(st.ignore_eos, 400);
	assert_int_equal(st.requested_sum, (uint64_t)sum);

	/* The same prompts without output lengths: they have a sequence of their own. */
	struct cl_scenario s2 = s;
	s2.workload.synthetic_output = (struct cl_len_dist){ 0 };
	struct cl_workload_plan w2 = render(&s2, NULL);
	for (size_t i = 0; i < w.n_bodies; i++) {
		json_t *a = parse(w.bodies[i].json), *b = parse(w2.bodies[i].json);
		assert_string_equal(user_text(a), user_text(b));
		assert_false(json_is_true(json_object_get(b, "ignore_eos")));
		assert_int_equal(w2.bodies[i].max_tokens, 256);
		json_decref(a);
		json_decref(b);
	}
	cl_workload_plan_free(&w2);

	/* ignore_eos: false sends none, the lengths stay */
	s2 = s;
	s2.workload.ignore_eos = 0;
	w2 = render(&s2, &st);
	assert_int_equal(st.ignore_eos, 0);
	assert_false(has_ignore_eos(w2.bodies[0].json));
	assert_int_equal(w2.bodies[7].max_tokens, w.bodies[7].max_tokens);
	cl_workload_plan_free(&w2);
	cl_workload_plan_free(&w);
}

/* Records' own lengths: an OpenAI record's max_tokens, else its reference answer; a ShareGPT
 * answer; dataset_output_tokens: max_tokens turns them off; a bad max_tokens is refused
 * with its line and column. */
static void test_record_lengths(void **state)
{
	const char *path = tmp_path("lengths.jsonl");
	write_text(path,
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_tokens\":77}\n"
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"b\"},"
		   "{\"role\":\"assistant\",\"content\":\"twelve chars\"}]}\n"
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"c\"}]}\n"
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"d\"}],"
		   "\"max_completion_tokens\":5,\"max_tokens\":9}\n");
	struct cl_scenario s = base();
	s.workload.kind = CL_WORKLOAD_DATASET;
	s.workload.dataset = (char *)path;
	struct cl_workload_stats st;
	struct cl_workload_plan w = render(&s, &st);
	assert_int_equal(w.n_bodies, 4);
	assert_int_equal(w.bodies[0].max_tokens, 77);
	assert_int_equal(w.bodies[1].max_tokens, 3); /* 12 characters */
	assert_int_equal(w.bodies[2].max_tokens, 256);
	assert_int_equal(w.bodies[3].max_tokens, 5);
	assert_true(has_ignore_eos(w.bodies[0].json));
	assert_false(has_ignore_eos(w.bodies[2].json)); /* no length of its own */
	assert_int_equal(st.own_length, 3);
	assert_int_equal(st.requested_min, 3);
	assert_int_equal(st.requested_max, 256);
	cl_workload_plan_free(&w);

	s.workload.dataset_output = CL_DATASET_OUTPUT_MAX_TOKENS;
	w = render(&s, &st);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(w.bodies[i].max_tokens, 256);
	assert_int_equal(st.ignore_eos, 0);
	cl_workload_plan_free(&w);

	write_text(path,
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}\n"
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_tokens\":0}\n");
	s.workload.dataset_output = CL_DATASET_OUTPUT_RECORD;
	struct cl_err err = { 0 };
	char msg[1024];
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_EPARSE);
	cl_err_format(&err, msg, sizeof(msg));
	char want[PATH_MAX + 128];
	snprintf(want, sizeof(want), "%s:2:1: 'max_tokens' must be an integer from 1 to 10000000",
		 path);
	assert_string_equal(msg, want);
}

/* The filter keeps records by estimated lengths; a filter that keeps none is an error. */
static void test_filter(void **state)
{
	const char *path = tmp_path("filter.jsonl");
	/* prompts of 1, 2, 3, 4 tokens; answers of 10, 2, 20, none */
	write_text(path,
		   "{\"conversations\":[{\"from\":\"human\",\"value\":\"aaaa\"},"
		   "{\"from\":\"gpt\",\"value\":\"0123456789012345678901234567890123456789\"}]}\n"
		   "{\"conversations\":[{\"from\":\"human\",\"value\":\"aaaabbbb\"},"
		   "{\"from\":\"gpt\",\"value\":\"01234567\"}]}\n"
		   "{\"conversations\":[{\"from\":\"human\",\"value\":\"aaaabbbbcccc\"},"
		   "{\"from\":\"gpt\",\"value\":\"0123456789012345678901234567890123456789"
		   "0123456789012345678901234567890123456789\"}]}\n"
		   "{\"conversations\":[{\"from\":\"human\",\"value\":\"aaaabbbbccccdddd\"}]}\n");
	struct cl_scenario s = base();
	s.workload.kind = CL_WORKLOAD_DATASET;
	s.workload.dataset = (char *)path;
	s.workload.dataset_filter = (struct cl_dataset_filter){ .min_input = 2, .max_output = 15 };
	struct cl_workload_stats st;
	struct cl_workload_plan w = render(&s, &st);
	/* record 1: input 1 < 2; record 3: output 20 > 15; record 4 has no output length */
	assert_int_equal(st.records, 4);
	assert_int_equal(st.filtered, 2);
	assert_int_equal(w.n_bodies, 2);
	assert_int_equal(w.bodies[0].max_tokens, 2);
	assert_int_equal(w.bodies[1].max_tokens, 256);
	cl_workload_plan_free(&w);

	s.workload.dataset_filter = (struct cl_dataset_filter){ .min_input = 100 };
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_EINVAL);
	assert_non_null(strstr(err.msg, "leaves none of its 4 records"));
}

/* A shuffle is a permutation fixed by the seed; the limit then keeps N of any records. */
static void test_shuffle_limit(void **state)
{
	const char *path = tmp_path("shuffle.txt");
	char text[4096] = "";
	for (int i = 0; i < 100; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "prompt %03d\n", i);
	write_text(path, text);
	struct cl_scenario s = base();
	s.workload.kind = CL_WORKLOAD_DATASET;
	s.workload.dataset = (char *)path;
	s.workload.dataset_shuffle = true;
	struct cl_workload_plan a = render(&s, NULL), b = render(&s, NULL);
	assert_int_equal(a.n_bodies, 100);
	bool seen[100] = { false };
	size_t moved = 0;
	for (size_t i = 0; i < 100; i++) {
		assert_string_equal(a.bodies[i].json, b.bodies[i].json); /* same seed, same order */
		json_t *j = parse(a.bodies[i].json);
		int k = atoi(user_text(j) + 7);
		json_decref(j);
		assert_false(seen[k]);
		seen[k] = true;
		moved += (size_t)k != i;
	}
	assert_true(moved > 80);
	cl_workload_plan_free(&b);

	s.workload.seed = 2;
	b = render(&s, NULL);
	size_t same = 0;
	for (size_t i = 0; i < 100; i++)
		same += strcmp(a.bodies[i].json, b.bodies[i].json) == 0;
	assert_true(same < 20);
	cl_workload_plan_free(&b);

	/* the limit keeps the first N of the shuffled order, read from the whole file */
	s.workload.seed = 1;
	s.workload.dataset_limit = 10;
	struct cl_workload_stats st;
	b = render(&s, &st);
	assert_int_equal(b.n_bodies, 10);
	assert_int_equal(st.records, 100);
	assert_int_equal(st.limited, 90);
	for (size_t i = 0; i < 10; i++)
		assert_string_equal(a.bodies[i].json, b.bodies[i].json);
	cl_workload_plan_free(&b);
	cl_workload_plan_free(&a);
}

/* Request i starts with group (i mod N)'s prefix: the same text within a group, different
 * from the first character between groups, about the tokens asked for. */
static void test_shared_prefix(void **state)
{
	struct cl_scenario s = base();
	char *prompts[] = { "one", "two", "three", "four", "five", "six", "seven" };
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 7;
	s.workload.system_prompt = "sys";
	s.workload.shared_prefix_groups = 3;
	s.workload.shared_prefix_tokens = 100;
	struct cl_workload_stats st;
	struct cl_workload_plan w = render(&s, &st);
	assert_int_equal(st.prefix_groups, 3);
	char *prefix[3] = { NULL };
	for (size_t i = 0; i < 7; i++) {
		json_t *b = parse(w.bodies[i].json);
		const char *u = user_text(b);
		const char *sep = strstr(u, "\n\n");
		assert_non_null(sep);
		assert_string_equal(sep + 2, prompts[i]);
		size_t plen = (size_t)(sep - u);
		assert_in_range(plen, 390,
				400); /* 100 tokens of 4 characters, trailing space cut */
		if (!prefix[i % 3])
			prefix[i % 3] = strndup(u, plen);
		else
			assert_memory_equal(prefix[i % 3], u, plen);
		assert_int_equal(w.bodies[i].prompt_chars, 3 + plen + 2 + strlen(prompts[i]));
		json_decref(b);
	}
	assert_true(prefix[0][0] == '[' && strncmp(prefix[0], prefix[1], 8) != 0);
	assert_true(strncmp(prefix[1], prefix[2], 8) != 0);
	for (int g = 0; g < 3; g++)
		free(prefix[g]);
	cl_workload_plan_free(&w);
}

/* Bodies rendered for a stand-in model get the real one; anything else is refused whole. */
static void test_set_model(void **state)
{
	struct cl_scenario s = base();
	char *prompts[] = { "a", "b" };
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 2;
	struct cl_workload_plan w = render(&s, NULL);
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_plan_set_model(&w, "m", "kimi \"k2\"", &err), 0);
	for (size_t i = 0; i < 2; i++) {
		json_t *b = parse(w.bodies[i].json);
		assert_string_equal(json_string_value(json_object_get(b, "model")), "kimi \"k2\"");
		assert_int_equal(w.bodies[i].len, strlen(w.bodies[i].json));
		json_decref(b);
	}
	char *before = strdup(w.bodies[1].json);
	assert_int_equal(cl_workload_plan_set_model(&w, "other", "x", &err), CL_EINVAL);
	assert_string_equal(w.bodies[1].json, before);
	free(before);
	cl_workload_plan_free(&w);
}

/* Splices a history into turn body b the way the engine does; returns malloc'd JSON text. */
static char *splice(const struct cl_request_body *b, const char *hist)
{
	size_t hl = strlen(hist);
	char *out = malloc(b->len + hl + 1);
	assert_non_null(out);
	memcpy(out, b->json, b->hist_at);
	memcpy(out + b->hist_at, hist, hl);
	memcpy(out + b->hist_at + hl, b->json + b->hist_at, b->len - b->hist_at + 1);
	return out;
}

/* Conversations: consecutive turns, each a body whose history place and user message are
 * marked; the shared prefix opens turn 1 only; a new model moves the history's place. */
static void test_multi_turn(void **state)
{
	struct cl_scenario s = base();
	s.workload.kind = CL_WORKLOAD_SYNTHETIC;
	s.workload.synthetic_input = (struct cl_len_dist){ .mean = 10, .min = 1, .max = 10 };
	s.workload.synthetic_count = 3;
	s.workload.multi_turn = true;
	s.workload.turns = (struct cl_len_dist){ .mean = 3, .min = 3, .max = 3 };
	s.workload.think_time_us = 250000;
	s.workload.system_prompt = "be \"brief\"";
	s.workload.shared_prefix_groups = 1;
	s.workload.shared_prefix_tokens = 5;
	struct cl_workload_plan w = render(&s, NULL);
	assert_int_equal(w.n_bodies, 9);
	assert_int_equal(w.think_time_us, 250000);
	assert_int_equal(cl_workload_plan_set_model(&w, "m", "a longer model", NULL), 0);
	for (size_t i = 0; i < 9; i++) {
		const struct cl_request_body *b = &w.bodies[i];
		assert_int_equal(b->turn, i % 3 + 1);
		assert_int_equal(b->len, strlen(b->json));
		/* Without history the body is the turn alone: system, then its user message. */
		json_t *j = parse(b->json);
		json_t *msgs = json_object_get(j, "messages");
		assert_int_equal(json_array_size(msgs), 2);
		assert_string_equal(json_string_value(json_object_get(j, "model")),
				    "a longer model");
		const char *u = user_text(j);
		char head[16];
		snprintf(head, sizeof(head), "%zu.%zu:", i / 3 + 1, i % 3 + 1);
		/* The prefix ("[group 1] ...") on turn 1, the turn's own text on the others. */
		assert_true(b->turn == 1 ? strncmp(u, "[group 1]", 9) == 0
					 : strncmp(u, head, strlen(head)) == 0);
		/* The marked user message is exactly that message object. */
		json_t *um = json_loadb(b->json + b->hist_at, b->user_len, 0, NULL);
		assert_non_null(um);
		assert_true(json_equal(um, json_array_get(msgs, 1)));
		json_decref(um);
		/* With a history spliced in, the body is valid JSON with the history in order. */
		char *full = splice(b, "{\"role\":\"user\",\"content\":\"q\"},"
				       "{\"role\":\"assistant\",\"content\":\"a \\\"b\\\"\"},");
		json_t *f = parse(full);
		json_t *fm = json_object_get(f, "messages");
		assert_int_equal(json_array_size(fm), 4);
		assert_string_equal(
		    json_string_value(json_object_get(json_array_get(fm, 0), "role")), "system");
		assert_string_equal(
		    json_string_value(json_object_get(json_array_get(fm, 2), "content")),
		    "a \"b\"");
		assert_true(json_equal(json_array_get(fm, 3), json_array_get(msgs, 1)));
		json_decref(f);
		free(full);
		json_decref(j);
	}
	cl_workload_plan_free(&w);
}

/* Renders a trace file of the given text; returns the error code, err filled. */
static int render_trace(const char *text, double speedup, struct cl_workload_plan *w,
			struct cl_err *err)
{
	struct cl_scenario s = base();
	write_text(tmp_path("trace.jsonl"), text);
	s.workload.kind = CL_WORKLOAD_TRACE;
	s.workload.trace = (char *)tmp_path("trace.jsonl");
	s.workload.trace_speedup = speedup;
	return cl_workload_render_stats(&s, "m", w, NULL, err);
}

/* Traces: offsets from the first record over the speedup, lengths asked for, prompts built
 * to the input length, hash ids shared as prefixes; bad records named by line. */
static void test_trace(void **state)
{
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	assert_int_equal(
	    render_trace("{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 7, "
			 "\"hash_ids\": [5, 6]}\n\n"
			 "{\"timestamp\": 1250, \"input_length\": 520, \"output_length\": 9, "
			 "\"hash_ids\": [5, 9]}\n",
			 2, &w, &err),
	    0);
	assert_int_equal(w.n_bodies, 2);
	assert_int_equal(w.trace_stride, 1);
	assert_int_equal(w.bodies[0].at_us, 0);
	assert_int_equal(w.bodies[1].at_us, 125000); /* 250 ms at speedup 2 */
	assert_int_equal(w.bodies[0].max_tokens, 7);
	assert_true(has_ignore_eos(w.bodies[1].json));
	json_t *a = parse(w.bodies[0].json), *b = parse(w.bodies[1].json);
	const char *ua = user_text(a), *ub = user_text(b);
	/* Both start with block [5]'s 512 tokens (2048 characters, trailing space cut). */
	assert_true(strncmp(ua, "[5]", 3) == 0);
	size_t common = 0;
	while (ua[common] && ua[common] == ub[common])
		common++;
	assert_in_range(common, 2000, 2050);
	assert_in_range(cl_workload_tokens_estimate(ua, strlen(ua)), 598, 602);
	json_decref(a);
	json_decref(b);
	cl_workload_plan_free(&w);

	/* Azure's shape: a date and time, fractions of a second kept. */
	assert_int_equal(
	    render_trace("{\"TIMESTAMP\": \"2023-11-16 18:15:46.6805900\", \"ContextTokens\": 4, "
			 "\"GeneratedTokens\": 3}\n"
			 "{\"TIMESTAMP\": \"2023-11-16 18:15:48.0000000\", \"ContextTokens\": 4, "
			 "\"GeneratedTokens\": 3}\n",
			 1, &w, &err),
	    0);
	assert_int_equal(w.bodies[1].at_us, 1319410);
	cl_workload_plan_free(&w);

	struct {
		const char *text, *msg;
		int line;
	} bad[] = {
		{ "{\"timestamp\": 5, \"input_length\": 4, \"output_length\": 3}\n"
		  "{\"timestamp\": 4, \"input_length\": 4, \"output_length\": 3}\n",
		  "back in time", 2 },
		{ "{\"ts\": 5}\n", "neither a Mooncake", 1 },
		{ "{\"timestamp\": 5, \"input_length\": 0, \"output_length\": 3}\n",
		  "'input_length' must be", 1 },
		{ "{\"TIMESTAMP\": \"yesterday\", \"ContextTokens\": 4, \"GeneratedTokens\": 3}\n",
		  "'TIMESTAMP' must be", 1 },
		{ "\n{\"timestamp\": 5,\n", "invalid JSON", 2 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(render_trace(bad[i].text, 1, &w, &err), CL_EPARSE);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].msg);
		assert_int_equal(err.line, bad[i].line);
		assert_true(err.col >= 1);
	}
}

static int setup(void **state)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/workload_lengths_test.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(tmp_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	const char *names[] = { "lengths.jsonl", "filter.jsonl", "shuffle.txt", "trace.jsonl" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(tmp_path(names[i]));
	rmdir(tmp_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate),       cmocka_unit_test(test_synthetic_output),
		cmocka_unit_test(test_record_lengths), cmocka_unit_test(test_filter),
		cmocka_unit_test(test_shuffle_limit),  cmocka_unit_test(test_shared_prefix),
		cmocka_unit_test(test_set_model),      cmocka_unit_test(test_multi_turn),
		cmocka_unit_test(test_trace),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
