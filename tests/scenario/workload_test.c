/* Tests of request-body rendering: every workload source, the merge rules, bad datasets
 * (refused with their line numbers) and the caps. */
#include "coordinator/workload/internal.h"
#include "coordinator/workload/workload.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define assert_contains(hay, needle)                                                               \
	do {                                                                                       \
		const char *h_ = (hay), *n_ = (needle);                                            \
		if (!h_ || !strstr(h_, n_))                                                        \
			fail_msg("expected \"%s\" in \"%s\"", n_, h_ ? h_ : "(null)");             \
	} while (0)

static char data_dir[PATH_MAX];
static char tmp_dir[PATH_MAX];

static const char *dataset(const char *name)
{
	static char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/datasets/%s", data_dir, name);
	return path;
}

static const char *tmp_path(const char *name)
{
	static char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	return path;
}

static void write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* A scenario as the loader would leave it, with the defaults that matter here. */
static struct cl_scenario base_scenario(void)
{
	struct cl_scenario s;
	memset(&s, 0, sizeof(s));
	s.workload.max_tokens = 256;
	s.workload.request_timeout_us = 600000000;
	s.workload.seed = 1;
	s.workload.synthetic_count = 64;
	return s;
}

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	if (!j)
		fail_msg("rendered body is not JSON: %s: %s", jerr.text, text);
	return j;
}

static const char *str_at(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_string(v))
		fail_msg("'%s' is not a string", key);
	return json_string_value(v);
}

/* messages[i].role / .content (content must be a string). */
static void assert_message(json_t *body, size_t i, const char *role, const char *content)
{
	json_t *m = json_array_get(json_object_get(body, "messages"), i);
	if (!m)
		fail_msg("messages[%zu] missing", i);
	assert_string_equal(str_at(m, "role"), role);
	assert_string_equal(str_at(m, "content"), content);
}

static size_t n_messages(json_t *body)
{
	return json_array_size(json_object_get(body, "messages"));
}

/* The fields every body has, with no extra body merged. */
static void assert_standard_fields(json_t *body, const char *model, int64_t max_tokens)
{
	assert_string_equal(str_at(body, "model"), model);
	assert_int_equal(json_integer_value(json_object_get(body, "max_tokens")), max_tokens);
	assert_true(json_is_true(json_object_get(body, "stream")));
	json_t *opts = json_object_get(body, "stream_options");
	assert_true(json_is_true(json_object_get(opts, "include_usage")));
}

static void test_inline_prompts(void **state)
{
	char *prompts[] = { "Write a Python quicksort.", "Explain entanglement.", "Grüße, ☃" };
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 3;
	s.workload.system_prompt = "Be brief.";
	s.workload.max_tokens = 4096;
	s.workload.request_timeout_us = 900000000;
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "kimi-k2", &w, &err), 0);
	assert_int_equal(w.n_bodies, 3);
	assert_int_equal(w.max_tokens, 4096);
	assert_int_equal(w.request_timeout_us, 900000000);
	for (size_t i = 0; i < 3; i++) {
		const char *js = w.bodies[i].json;
		assert_int_equal(w.bodies[i].len, strlen(js));
		/* compact, and our keys in a fixed order */
		assert_contains(js, "{\"model\":\"kimi-k2\",\"messages\":[{\"role\":\"system\"");
		assert_contains(js, "\"max_tokens\":4096,\"stream\":true,"
				    "\"stream_options\":{\"include_usage\":true}}");
		json_t *b = parse(js);
		assert_standard_fields(b, "kimi-k2", 4096);
		assert_int_equal(n_messages(b), 2);
		assert_message(b, 0, "system", "Be brief.");
		assert_message(b, 1, "user", prompts[i]);
		assert_int_equal(w.bodies[i].prompt_chars,
				 strlen(prompts[i]) + strlen("Be brief."));
		json_decref(b);
	}
	cl_workload_plan_free(&w);

	/* no system prompt: a single user message; max_tokens 0 leaves it to the server */
	s.workload.system_prompt = NULL;
	s.workload.max_tokens = 0;
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	json_t *b = parse(w.bodies[2].json);
	assert_int_equal(n_messages(b), 1);
	assert_message(b, 0, "user", "Grüße, ☃");
	assert_null(json_object_get(b, "max_tokens"));
	assert_int_equal(w.bodies[2].prompt_chars, strlen("Grüße, ☃"));
	json_decref(b);
	cl_workload_plan_free(&w);
}

static void test_empty_prompts_and_no_model(void **state)
{
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_EINVAL);
	assert_contains(err.msg, "workload.prompts is empty");
	assert_null(w.bodies);
	assert_int_equal(w.n_bodies, 0);

	char *prompts[] = { "hi" };
	s.workload.prompts = prompts;
	s.workload.n_prompts = 1;
	assert_int_equal(cl_workload_render(&s, NULL, &w, &err), CL_EINVAL);
	assert_contains(err.msg, "model");

	char bad[] = { 'o', 'k', (char)0xC3, 0 }; /* truncated UTF-8 sequence */
	char *bad_prompts[] = { "fine", bad };
	s.workload.prompts = bad_prompts;
	s.workload.n_prompts = 2;
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_EINVAL);
	assert_contains(err.msg, "workload.prompts[1]: prompt is not valid UTF-8");
	assert_null(w.bodies);
}

static void test_merge_rules(void **state)
{
	char *prompts[] = { "hello" };
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 1;
	s.target.body_json =
	    "{\"temperature\":0.6,\"stream\":false,\"max_tokens\":null,"
	    "\"max_completion_tokens\":99,\"stream_options\":{\"continuous_usage_stats\":true},"
	    "\"chat_template_kwargs\":{\"enable_thinking\":false},\"model\":\"served-name\"}";
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	const char *js = w.bodies[0].json;
	/* a decimal the user wrote comes out as written, not 0.59999999999999998 */
	assert_contains(js, "\"temperature\":0.6,");
	json_t *b = parse(js);
	/* the scenario's keys win ... */
	assert_string_equal(str_at(b, "model"), "served-name");
	assert_int_equal(json_integer_value(json_object_get(b, "max_completion_tokens")), 99);
	/* ... a null removes ours ... */
	assert_null(json_object_get(b, "max_tokens"));
	/* ... objects merge key by key ... */
	json_t *opts = json_object_get(b, "stream_options");
	assert_true(json_is_true(json_object_get(opts, "include_usage")));
	assert_true(json_is_true(json_object_get(opts, "continuous_usage_stats")));
	assert_true(json_is_false(
	    json_object_get(json_object_get(b, "chat_template_kwargs"), "enable_thinking")));
	/* ... except stream, which stays true */
	assert_true(json_is_true(json_object_get(b, "stream")));
	json_decref(b);
	cl_workload_plan_free(&w);

	/* include_usage can be turned off explicitly (then the engine counts chunks) */
	s.target.body_json = "{\"stream_options\":{\"include_usage\":false},\"stream\":null}";
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	b = parse(w.bodies[0].json);
	assert_true(
	    json_is_false(json_object_get(json_object_get(b, "stream_options"), "include_usage")));
	assert_true(json_is_true(json_object_get(b, "stream")));
	json_decref(b);
	cl_workload_plan_free(&w);

	s.target.body_json = "[1,2]";
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_EINVAL);
	assert_contains(err.msg, "target.body must be a JSON object");
	s.target.body_json = "{\"temperature\":";
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_EINVAL);
	assert_contains(err.msg, "target.body is not valid JSON");
	assert_null(w.bodies);
}

static struct cl_workload_plan render_dataset(const char *path, enum cl_dataset_format fmt,
					      uint32_t limit, const char *system, int want_rc,
					      struct cl_err *err)
{
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_DATASET;
	s.workload.dataset = (char *)path;
	s.workload.dataset_format = fmt;
	s.workload.dataset_limit = limit;
	s.workload.system_prompt = (char *)system;
	struct cl_workload_plan w;
	cl_err_clear(err);
	int rc = cl_workload_render(&s, "m", &w, err);
	if (rc != want_rc) {
		char msg[1024];
		fail_msg("render '%s': rc %d, wanted %d (%s)", path, rc, want_rc,
			 cl_err_format(err, msg, sizeof(msg)));
	}
	if (rc) {
		assert_null(w.bodies);
		assert_int_equal(w.n_bodies, 0);
	}
	return w;
}

static void test_dataset_openai(void **state)
{
	struct cl_err err;
	struct cl_workload_plan w =
	    render_dataset(dataset("openai.jsonl"), CL_DATASET_AUTO, 0, "Default system.", 0, &err);
	assert_int_equal(w.n_bodies, 4); /* the blank line is skipped */

	json_t *b = parse(w.bodies[0].json);
	assert_standard_fields(b, "m", 256);
	assert_int_equal(n_messages(b), 2); /* system_prompt added: the record has none */
	assert_message(b, 0, "system", "Default system.");
	assert_message(b, 1, "user", "What is the capital of France?");
	json_decref(b);

	/* the record's own system message wins; the trailing answer is dropped, earlier turns
	 * are kept as context */
	b = parse(w.bodies[1].json);
	assert_int_equal(n_messages(b), 4);
	assert_message(b, 0, "system", "You are terse.");
	assert_message(b, 1, "user", "Name a prime.");
	assert_message(b, 2, "assistant", "7");
	assert_message(b, 3, "user", "Another one.");
	assert_int_equal(w.bodies[1].prompt_chars,
			 strlen("You are terse.Name a prime.7Another one."));
	assert_null(json_object_get(b, "id"));
	json_decref(b);

	/* array content is passed through; its text parts are counted */
	b = parse(w.bodies[2].json);
	json_t *content =
	    json_object_get(json_array_get(json_object_get(b, "messages"), 1), "content");
	assert_true(json_is_array(content));
	assert_int_equal(json_array_size(content), 2);
	assert_int_equal(w.bodies[2].prompt_chars, strlen("Default system.Describe a cat."));
	assert_null(json_object_get(b, "id")); /* record fields other than messages are not sent */
	json_decref(b);

	b = parse(w.bodies[3].json); /* CRLF line */
	assert_message(b, 1, "user", "Windows line ending.");
	json_decref(b);
	cl_workload_plan_free(&w);
}

static void test_dataset_sharegpt(void **state)
{
	struct cl_err err;
	struct cl_workload_plan w = render_dataset(dataset("sharegpt.jsonl"), CL_DATASET_AUTO, 0,
						   "Default system.", 0, &err);
	assert_int_equal(w.n_bodies, 3);
	json_t *b = parse(w.bodies[0].json);
	/* It asks for its answer's length: "Rain taps the window", 20 characters, 5 tokens. */
	assert_standard_fields(b, "m", 5);
	assert_int_equal(w.bodies[0].max_tokens, 5);
	assert_int_equal(n_messages(b), 2);
	assert_message(b, 0, "system", "Default system.");
	assert_message(b, 1, "user", "Write a haiku about rain.");
	json_decref(b);
	assert_int_equal(w.bodies[1].max_tokens, 2);   /* "Bonjour" */
	assert_int_equal(w.bodies[2].max_tokens, 256); /* no answer after its human turn */

	b = parse(w.bodies[1].json); /* its system turn, then the FIRST human turn only */
	assert_int_equal(n_messages(b), 2);
	assert_message(b, 0, "system", "Answer in French.");
	assert_message(b, 1, "user", "Hello?");
	assert_int_equal(w.bodies[1].prompt_chars, strlen("Answer in French.Hello?"));
	json_decref(b);

	b = parse(w.bodies[2].json); /* top-level system; a leading gpt turn is skipped */
	assert_message(b, 0, "system", "Top-level system.");
	assert_message(b, 1, "user", "Then me.");
	json_decref(b);
	cl_workload_plan_free(&w);

	/* forced format works the same */
	w = render_dataset(dataset("sharegpt.jsonl"), CL_DATASET_SHAREGPT, 0, NULL, 0, &err);
	assert_int_equal(w.n_bodies, 3);
	b = parse(w.bodies[0].json);
	assert_int_equal(n_messages(b), 1);
	json_decref(b);
	cl_workload_plan_free(&w);
}

static void test_dataset_text(void **state)
{
	struct cl_err err;
	struct cl_workload_plan w =
	    render_dataset(dataset("prompts.txt"), CL_DATASET_AUTO, 0, NULL, 0, &err);
	assert_int_equal(w.n_bodies, 3); /* blank and whitespace-only lines are skipped */
	const char *want[] = { "First prompt line.", "Second prompt: {not json}",
			       "Third prompt, no final newline" };
	for (size_t i = 0; i < 3; i++) {
		json_t *b = parse(w.bodies[i].json);
		assert_standard_fields(b, "m", 256);
		assert_int_equal(n_messages(b), 1);
		/* no byte order mark, no \r */
		assert_message(b, 0, "user", want[i]);
		assert_int_equal(w.bodies[i].prompt_chars, strlen(want[i]));
		json_decref(b);
	}
	cl_workload_plan_free(&w);

	/* a JSONL file forced to text: each line is a prompt as written */
	w = render_dataset(dataset("sharegpt.jsonl"), CL_DATASET_TEXT, 0, "sys", 0, &err);
	assert_int_equal(w.n_bodies, 3);
	json_t *b = parse(w.bodies[0].json);
	assert_message(b, 0, "system", "sys");
	assert_contains(str_at(json_array_get(json_object_get(b, "messages"), 1), "content"),
			"{\"id\":\"a\",\"conversations\"");
	json_decref(b);
	cl_workload_plan_free(&w);
}

static void test_dataset_limit(void **state)
{
	struct cl_err err;
	struct cl_workload_plan w =
	    render_dataset(dataset("openai.jsonl"), CL_DATASET_AUTO, 2, NULL, 0, &err);
	assert_int_equal(w.n_bodies, 2);
	cl_workload_plan_free(&w);
	/* the limit stops reading: a broken line after it is never reached */
	w = render_dataset(dataset("bad-json.jsonl"), CL_DATASET_AUTO, 2, NULL, 0, &err);
	assert_int_equal(w.n_bodies, 2);
	cl_workload_plan_free(&w);
	/* a limit above the record count takes them all */
	w = render_dataset(dataset("prompts.txt"), CL_DATASET_TEXT, 100, NULL, 0, &err);
	assert_int_equal(w.n_bodies, 3);
	cl_workload_plan_free(&w);
}

/* Renders a bad dataset and checks the code, the line and a piece of the message. */
static void expect_bad(const char *path, enum cl_dataset_format fmt, int code, int line,
		       const char *msg)
{
	struct cl_err err;
	render_dataset(path, fmt, 0, NULL, code, &err);
	char text[1024];
	cl_err_format(&err, text, sizeof(text));
	assert_int_equal(err.line, line);
	assert_contains(text, msg);
	if (line > 0) {
		char where[PATH_MAX + 80];
		snprintf(where, sizeof(where), "%s:%d", path, line);
		assert_contains(text, where);
	}
}

static void test_bad_datasets(void **state)
{
	expect_bad(dataset("bad-json.jsonl"), CL_DATASET_AUTO, CL_EPARSE, 3, "invalid JSON");
	expect_bad(dataset("bad-mixed.jsonl"), CL_DATASET_AUTO, CL_EPARSE, 2,
		   "record has no 'messages' array");
	expect_bad(dataset("bad-no-user.jsonl"), CL_DATASET_AUTO, CL_EPARSE, 3,
		   "no message with role 'user'");
	expect_bad(dataset("bad-no-human.jsonl"), CL_DATASET_AUTO, CL_EPARSE, 2,
		   "conversation has no turn from 'human'");
	expect_bad(dataset("bad-turn-type.jsonl"), CL_DATASET_AUTO, CL_EPARSE, 1,
		   "conversations[0] must be an object with string 'from' and 'value'");
	expect_bad(dataset("bad-array.json"), CL_DATASET_AUTO, CL_EPARSE, 1, "JSON array");
	expect_bad(dataset("bad-unknown.jsonl"), CL_DATASET_AUTO, CL_EPARSE, 1,
		   "neither 'messages' (OpenAI) nor 'conversations' (ShareGPT)");
	expect_bad(dataset("bad-not-object.jsonl"), CL_DATASET_AUTO, CL_EPARSE, 2,
		   "record is not a JSON object");
	/* a forced format that does not match the file */
	expect_bad(dataset("sharegpt.jsonl"), CL_DATASET_OPENAI, CL_EPARSE, 1,
		   "record has no 'messages' array");
	expect_bad(dataset("prompts.txt"), CL_DATASET_SHAREGPT, CL_EPARSE, 1, "invalid JSON");
	expect_bad(dataset("no-such-file.jsonl"), CL_DATASET_AUTO, CL_EIO, 0,
		   "cannot open dataset '");
	expect_bad(data_dir, CL_DATASET_AUTO, CL_EIO, 0, "Is a directory");

	write_file(tmp_path("empty.txt"), "\n  \n\n", 4);
	expect_bad(tmp_path("empty.txt"), CL_DATASET_AUTO, CL_EINVAL, 0, "has no prompts");

	static const char bad_utf8[] = "fine\nnot \xff\xfe utf-8\n";
	write_file(tmp_path("bad-utf8.txt"), bad_utf8, sizeof(bad_utf8) - 1);
	expect_bad(tmp_path("bad-utf8.txt"), CL_DATASET_AUTO, CL_EPARSE, 2, "not valid UTF-8");

	static const char nul[] = "fine\nnul \0 inside\n";
	write_file(tmp_path("nul.txt"), nul, sizeof(nul) - 1);
	expect_bad(tmp_path("nul.txt"), CL_DATASET_TEXT, CL_EPARSE, 2, "NUL byte");
}

static void test_caps(void **state)
{
	/* a line over the line cap, after a good one */
	size_t n = CL_WORKLOAD_MAX_LINE_BYTES + 10;
	char *big = malloc(n + 16);
	assert_non_null(big);
	memcpy(big, "short line\n", 11);
	memset(big + 11, 'x', n);
	big[11 + n] = '\n';
	write_file(tmp_path("long-line.txt"), big, n + 12);
	free(big);
	expect_bad(tmp_path("long-line.txt"), CL_DATASET_AUTO, CL_ETOOBIG, 2, "longer than 8 MiB");
	unlink(tmp_path("long-line.txt"));

	/* a file over the size cap is refused before it is read (sparse: costs no disk) */
	FILE *f = fopen(tmp_path("huge.txt"), "wb");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), (off_t)CL_WORKLOAD_MAX_FILE_BYTES + 1), 0);
	fclose(f);
	expect_bad(tmp_path("huge.txt"), CL_DATASET_AUTO, CL_ETOOBIG, 0,
		   "more than the 256 MiB cap");
	unlink(tmp_path("huge.txt"));
}

static struct cl_workload_plan render_synth(uint32_t count, double mean, double sd, uint32_t lo,
					    uint32_t hi, uint64_t seed)
{
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_SYNTHETIC;
	s.workload.synthetic_count = count;
	s.workload.synthetic_input = (struct cl_len_dist){ mean, sd, lo, hi };
	s.workload.seed = seed;
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	int rc = cl_workload_render(&s, "m", &w, &err);
	if (rc)
		fail_msg("synthetic render failed: %d %s", rc, err.msg);
	return w;
}

static const char *user_content(json_t *b)
{
	json_t *msgs = json_object_get(b, "messages");
	return str_at(json_array_get(msgs, json_array_size(msgs) - 1), "content");
}

static void test_synthetic(void **state)
{
	struct cl_workload_plan w = render_synth(50, 100, 30, 20, 200, 7);
	assert_int_equal(w.n_bodies, 50);
	uint32_t shortest = UINT32_MAX, longest = 0;
	double sum = 0;
	for (size_t i = 0; i < w.n_bodies; i++) {
		json_t *b = parse(w.bodies[i].json);
		assert_standard_fields(b, "m", 256);
		const char *p = user_content(b);
		size_t len = strlen(p);
		assert_int_equal(w.bodies[i].prompt_chars, len);
		/* about 4 characters per token, inside [min, max] */
		if (len < 20 * 4 || len > 200 * 4)
			fail_msg("prompt %zu is %zu chars, outside [80, 800]", i, len);
		/* each starts with its own number */
		char want[32];
		snprintf(want, sizeof(want), "%zu: ", i + 1);
		if (strncmp(p, want, strlen(want)) != 0)
			fail_msg("prompt %zu starts \"%.12s\", wanted \"%s\"", i, p, want);
		/* words from the vocabulary: lower-case letters and single spaces */
		for (const char *q = p + strlen(want); *q; q++)
			if (!((*q >= 'a' && *q <= 'z') || (*q == ' ' && q[1] != ' ')))
				fail_msg("prompt %zu has '%c' at %zu", i, *q, (size_t)(q - p));
		shortest = len < shortest ? len : shortest;
		longest = len > longest ? len : longest;
		sum += len;
		json_decref(b);
	}
	/* lengths are spread (sd 30 tokens), and centred on the mean (standard error ~4 tokens) */
	assert_true(longest - shortest > 30 * 4);
	double mean_tokens = sum / w.n_bodies / 4;
	if (mean_tokens < 85 || mean_tokens > 115)
		fail_msg("mean length %.1f tokens, wanted about 100", mean_tokens);

	/* the same seed gives the same prompts; another seed does not */
	struct cl_workload_plan again = render_synth(50, 100, 30, 20, 200, 7);
	struct cl_workload_plan other = render_synth(50, 100, 30, 20, 200, 8);
	size_t same = 0;
	for (size_t i = 0; i < 50; i++) {
		assert_string_equal(w.bodies[i].json, again.bodies[i].json);
		same += strcmp(w.bodies[i].json, other.bodies[i].json) == 0;
	}
	assert_int_equal(same, 0);
	cl_workload_plan_free(&w);
	cl_workload_plan_free(&again);
	cl_workload_plan_free(&other);

	/* stddev 0: every prompt exactly mean * 4 characters */
	w = render_synth(5, 64, 0, 1, 0, 3);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(w.bodies[i].prompt_chars, 256);
	cl_workload_plan_free(&w);

	/* clamping: a mean far above max gives max */
	w = render_synth(4, 5000, 10, 1, 50, 3);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(w.bodies[i].prompt_chars, 200);
	cl_workload_plan_free(&w);
}

static void test_synthetic_errors(void **state)
{
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_SYNTHETIC;
	s.workload.synthetic_input = (struct cl_len_dist){ 100, 10, 300, 200 };
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_EINVAL);
	assert_contains(err.msg, "min 300 is above max 200");
	s.workload.synthetic_input =
	    (struct cl_len_dist){ 100, 10, 1, CL_WORKLOAD_MAX_SYNTH_TOKENS + 1 };
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_ERANGE);
	assert_contains(err.msg, "above the cap");
	s.workload.synthetic_input = (struct cl_len_dist){ 100, 10, 1, 200 };
	s.workload.synthetic_count = 0;
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), CL_EINVAL);
	assert_contains(err.msg, "synthetic.count must be positive");
	assert_null(w.bodies);
}

/* workload.api: each API's body from the same prompts (docs/scenario.md, "APIs"). */
static void test_api_bodies(void **state)
{
	char *prompts[] = { "one", "two", "three", "four", "five" };
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 5;
	s.workload.max_tokens = 32;
	struct cl_workload_plan w;
	struct cl_err err = { 0 };

	s.workload.system_prompt = "Be brief.";
	s.workload.api = CL_API_COMPLETIONS;
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	assert_int_equal(w.n_bodies, 5);
	assert_string_equal(w.bodies[0].json,
			    "{\"model\":\"m\",\"prompt\":\"Be brief.\\n\\none\",\"max_tokens\":32,"
			    "\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
	assert_int_equal(w.bodies[0].inputs, 0);
	cl_workload_plan_free(&w);

	s.workload.api = CL_API_RESPONSES;
	s.workload.ignore_eos = 1;
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	assert_string_equal(w.bodies[1].json,
			    "{\"model\":\"m\",\"input\":[{\"role\":\"system\",\"content\":"
			    "\"Be brief.\"},{\"role\":\"user\",\"content\":\"two\"}],"
			    "\"max_output_tokens\":32,\"ignore_eos\":true,\"stream\":true}");
	cl_workload_plan_free(&w);

	/* messages (Anthropic): the system prompt apart, max_tokens, no stream_options */
	s.workload.api = CL_API_MESSAGES;
	s.workload.ignore_eos = -1;
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	assert_string_equal(w.bodies[2].json,
			    "{\"model\":\"m\",\"system\":\"Be brief.\",\"messages\":[{\"role\":"
			    "\"user\",\"content\":\"three\"}],\"max_tokens\":32,\"stream\":true}");
	cl_workload_plan_free(&w);
	/* without a system prompt there is no "system"; a probe with no length gets the
	 * default Anthropic requires, and a target.body thinking goes as it is */
	char *mjs = NULL;
	assert_int_equal(cl_body_json_probe_api(CL_API_MESSAGES, "m", "hi", 0,
						"{\"thinking\":{\"type\":\"disabled\"}}", &mjs,
						&err),
			 0);
	assert_string_equal(mjs, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
				 "\"hi\"}],\"max_tokens\":4096,\"stream\":true,\"thinking\":{"
				 "\"type\":\"disabled\"}}");
	free(mjs);

	/* embeddings: batches of 2 in order, the last one short; no length, no stream */
	s.workload.system_prompt = NULL;
	s.workload.ignore_eos = -1;
	s.workload.api = CL_API_EMBEDDINGS;
	s.workload.embedding_batch = 2;
	s.target.body_json = "{\"stream\":true,\"encoding_format\":\"float\"}";
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	assert_int_equal(w.n_bodies, 3);
	assert_string_equal(w.bodies[0].json, "{\"model\":\"m\",\"input\":[\"one\",\"two\"],"
					      "\"encoding_format\":\"float\"}");
	assert_string_equal(w.bodies[2].json,
			    "{\"model\":\"m\",\"input\":[\"five\"],\"encoding_format\":\"float\"}");
	assert_int_equal(w.bodies[0].inputs, 2);
	assert_int_equal(w.bodies[2].inputs, 1);
	assert_int_equal(w.bodies[0].max_tokens, 0);
	cl_workload_plan_free(&w);

	char *js = NULL;
	assert_int_equal(cl_body_json_probe_api(CL_API_EMBEDDINGS, "m", "hi", 16, NULL, &js, &err),
			 0);
	assert_string_equal(js, "{\"model\":\"m\",\"input\":[\"hi\"]}");
	free(js);
}

/* workload.tools: count definitions in every body, each with a JSON-schema parameters object
 * whose required q the simulator's calls fill; deterministic from the seed; target.body's keys
 * win; the plan carries the loop only with multi_turn. */
static void test_tools_bodies(void **state)
{
	(void)state;
	char *prompts[] = { "one", "two" };
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 2;
	s.workload.tools_count = 3;
	s.workload.tools_choice = CL_TOOL_CHOICE_REQUIRED;
	s.workload.tools_result_tokens = 64;
	s.workload.tools_max_rounds = 2;
	struct cl_workload_plan w, w2;
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	assert_int_equal(w.tool_result_tokens, 0); /* no multi_turn: no loop */
	for (size_t b = 0; b < w.n_bodies; b++) {
		json_t *body = parse(w.bodies[b].json);
		json_t *tools = json_object_get(body, "tools");
		assert_int_equal(json_array_size(tools), 3);
		assert_string_equal(str_at(body, "tool_choice"), "required");
		size_t i;
		json_t *t;
		json_array_foreach(tools, i, t)
		{
			json_t *fn = json_object_get(t, "function");
			assert_string_equal(str_at(t, "type"), "function");
			char suffix[32];
			snprintf(suffix, sizeof(suffix), "_%zu", i);
			const char *name = str_at(fn, "name");
			assert_non_null(strstr(name, suffix));
			assert_non_null(json_object_get(fn, "description"));
			json_t *params = json_object_get(fn, "parameters");
			assert_string_equal(str_at(params, "type"), "object");
			assert_true(json_is_object(
			    json_object_get(json_object_get(params, "properties"), "q")));
		}
		json_decref(body);
	}
	/* the same seed, the same tools */
	assert_int_equal(cl_workload_render(&s, "m", &w2, &err), 0);
	assert_string_equal(w.bodies[0].json, w2.bodies[0].json);
	cl_workload_plan_free(&w2);
	cl_workload_plan_free(&w);

	/* A dataset record's own tools replace the synthetic ones in its body only. */
	static const char records[] =
	    "{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],\"tools\":[{\"type\":"
	    "\"function\",\"function\":{\"name\":\"own_tool\",\"description\":\"d\"}}]}\n"
	    "{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}\n";
	write_file(tmp_path("tools.jsonl"), records, sizeof(records) - 1);
	struct cl_scenario d = s;
	d.workload.kind = CL_WORKLOAD_DATASET;
	d.workload.dataset = (char *)tmp_path("tools.jsonl");
	d.workload.prompts = NULL;
	d.workload.n_prompts = 0;
	assert_int_equal(cl_workload_render(&d, "m", &w, &err), 0);
	assert_int_equal(w.n_bodies, 2);
	json_t *own = parse(w.bodies[0].json), *syn = parse(w.bodies[1].json);
	json_t *ot = json_object_get(own, "tools");
	assert_int_equal(json_array_size(ot), 1);
	assert_string_equal(str_at(json_object_get(json_array_get(ot, 0), "function"), "name"),
			    "own_tool");
	assert_string_equal(str_at(own, "tool_choice"), "required");
	assert_int_equal(json_array_size(json_object_get(syn, "tools")), 3);
	json_decref(own);
	json_decref(syn);
	cl_workload_plan_free(&w);

	/* target.body's tool_choice replaces ours; a null there removes the tools */
	s.target.body_json = "{\"tool_choice\":\"none\",\"tools\":null}";
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	json_t *body = parse(w.bodies[0].json);
	assert_string_equal(str_at(body, "tool_choice"), "none");
	assert_null(json_object_get(body, "tools"));
	json_decref(body);
	cl_workload_plan_free(&w);
}

static void test_render_probe(void **state)
{
	char *js = NULL;
	struct cl_err err = { 0 };
	assert_int_equal(cl_body_json_probe("qwen3", "Say just OK", 16, NULL, &js, &err), 0);
	assert_string_equal(js, "{\"model\":\"qwen3\",\"messages\":[{\"role\":\"user\",\"content\":"
				"\"Say just OK\"}],\"max_tokens\":16,\"stream\":true,"
				"\"stream_options\":{\"include_usage\":true}}");
	free(js);

	/* readiness.body over target.body, then over the probe body */
	char *extra = NULL;
	assert_int_equal(
	    cl_body_json_merge_text("{\"temperature\":0.6,\"max_tokens\":5,\"top_p\":0.9}",
				    "{\"chat_template_kwargs\":{\"enable_thinking\":false},"
				    "\"top_p\":null,\"stream\":false}",
				    &extra, &err),
	    0);
	assert_int_equal(cl_body_json_probe("qwen3", "Say just OK", 16, extra, &js, &err), 0);
	json_t *b = parse(js);
	assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 5);
	assert_null(json_object_get(b, "top_p")); /* the null survived composition */
	assert_true(json_is_true(json_object_get(b, "stream")));
	assert_true(json_is_false(
	    json_object_get(json_object_get(b, "chat_template_kwargs"), "enable_thinking")));
	assert_contains(js, "\"temperature\":0.6");
	json_decref(b);
	free(js);
	free(extra);

	assert_int_equal(cl_body_json_probe("m", "p", 1, "\"text\"", &js, &err), CL_EINVAL);
	assert_contains(err.msg, "probe body must be a JSON object");
	assert_null(js);
	assert_int_equal(cl_body_json_probe(NULL, "p", 1, NULL, &js, &err), CL_EINVAL);
	assert_int_equal(cl_body_json_probe("m", "\xff", 1, NULL, &js, &err), CL_EINVAL);
	assert_contains(err.msg, "not valid UTF-8");
}

static void test_merge_json(void **state)
{
	char *out = (char *)1;
	struct cl_err err = { 0 };
	assert_int_equal(cl_body_json_merge_text(NULL, NULL, &out, &err), 0);
	assert_null(out);
	assert_int_equal(cl_body_json_merge_text("{\"a\":1}", NULL, &out, &err), 0);
	assert_string_equal(out, "{\"a\":1}");
	free(out);
	assert_int_equal(cl_body_json_merge_text(NULL, "{\"b\":null}", &out, &err), 0);
	assert_string_equal(out, "{\"b\":null}");
	free(out);
	assert_int_equal(cl_body_json_merge_text("{\"a\":{\"x\":1,\"y\":2},\"b\":3}",
						 "{\"a\":{\"y\":20,\"z\":30},\"b\":[1]}", &out,
						 &err),
			 0);
	assert_string_equal(out, "{\"a\":{\"x\":1,\"y\":20,\"z\":30},\"b\":[1]}");
	free(out);
	assert_int_equal(cl_body_json_merge_text("{\"a\":1}", "nope", &out, &err), CL_EINVAL);
	assert_contains(err.msg, "override body is not valid JSON");
	assert_null(out);
	assert_int_equal(cl_body_json_merge_text("3", "{}", &out, &err), CL_EINVAL);
	assert_contains(err.msg, "base body must be a JSON object");
}

static int setup(void **state)
{
	const char *d = getenv("CHATLOAD_TEST_DATA");
	snprintf(data_dir, sizeof(data_dir), "%s", d ? d : "tests/data");
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/workload_test.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp_dir))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	const char *names[] = { "empty.txt", "bad-utf8.txt", "nul.txt", "long-line.txt",
				"huge.txt", "tools.jsonl" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(tmp_path(names[i]));
	rmdir(tmp_dir);
	return 0;
}

/* workload.classes with rerank: a class's length, ignore_eos and stream stay out of a body
 * answered whole (a score is no generation), its model and priority go in. */
static void test_classes_rerank_bodies(void **state)
{
	(void)state;
	char *prompts[] = { "q1", "d1", "d2", "q2", "d3", "d4" };
	struct cl_scn_class classes[] = {
		{ .name = "fast", .weight = 1, .model = "rr-a", .priority = 1,
		  .priority_set = true, .output_tokens = 8 },
		{ .name = "slow", .weight = 1, .max_tokens = 99 },
	};
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 6;
	s.workload.api = CL_API_RERANK;
	s.workload.documents = 2;
	s.workload.classes = classes;
	s.workload.n_classes = 2;
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "base-model", &w, &err), 0);
	assert_true(w.n_bodies >= 2);
	for (size_t i = 0; i < w.n_bodies; i++) {
		json_t *b = parse(w.bodies[i].json);
		assert_non_null(json_object_get(b, "query"));
		assert_int_equal(json_array_size(json_object_get(b, "documents")), 2);
		assert_null(json_object_get(b, "stream"));
		assert_null(json_object_get(b, "max_tokens"));
		assert_null(json_object_get(b, "ignore_eos"));
		assert_int_equal(w.bodies[i].max_tokens, 0);
		if (w.bodies[i].cls == 0) {
			assert_string_equal(str_at(b, "model"), "rr-a");
			assert_int_equal(json_integer_value(json_object_get(b, "priority")), 1);
		}
		json_decref(b);
	}
	cl_workload_plan_free(&w);
}

/* workload.classes: one prompt, weights 2:1:1 repeat the pool to 4 bodies tagged chat, batch,
 * base, chat (the one furthest behind its share goes next); each body has its class's model,
 * priority, length and keys; putting the gate's model in keeps a class's own; the plan
 * carries each class's headers after X-Chatload-Class. */
static void test_classes_bodies(void **state)
{
	(void)state;
	char *prompts[] = { "Hello there." };
	char *hdr[] = { "X-Tenant: acme" };
	struct cl_scn_class classes[] = {
		{ .name = "chat", .weight = 2, .model = "lora-a", .priority = 0,
		  .priority_set = true, .output_tokens = 8, .headers = hdr, .n_headers = 1 },
		{ .name = "batch", .weight = 1, .model = "lora-b", .priority = -3,
		  .priority_set = true, .max_tokens = 99, .body_json = "{\"temperature\":0.5}" },
		{ .name = "base", .weight = 1 },
	};
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 1;
	s.workload.classes = classes;
	s.workload.n_classes = 3;
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "base-model", &w, &err), 0);
	assert_int_equal(w.n_bodies, 4);
	static const uint32_t want[] = { 0, 1, 2, 0 };
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(w.bodies[i].cls, want[i]);
	json_t *b = parse(w.bodies[0].json);
	assert_string_equal(str_at(b, "model"), "lora-a");
	assert_int_equal(json_integer_value(json_object_get(b, "priority")), 0);
	assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 8);
	assert_true(json_is_true(json_object_get(b, "ignore_eos")));
	assert_null(json_object_get(b, "temperature"));
	json_decref(b);
	b = parse(w.bodies[1].json);
	assert_string_equal(str_at(b, "model"), "lora-b");
	assert_int_equal(json_integer_value(json_object_get(b, "priority")), -3);
	assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 99);
	assert_null(json_object_get(b, "ignore_eos"));
	assert_true(json_real_value(json_object_get(b, "temperature")) == 0.5);
	json_decref(b);
	assert_int_equal(w.bodies[1].max_tokens, 99);
	b = parse(w.bodies[2].json);
	assert_string_equal(str_at(b, "model"), "base-model");
	assert_null(json_object_get(b, "priority"));
	assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 256);
	json_decref(b);
	/* the model the gate finds goes into the base class's bodies only */
	assert_int_equal(cl_workload_plan_set_model(&w, "base-model", "found", &err), 0);
	assert_contains(w.bodies[2].json, "{\"model\":\"found\",");
	assert_contains(w.bodies[0].json, "{\"model\":\"lora-a\",");
	assert_int_equal(w.n_classes, 3);
	assert_string_equal(w.classes[0].name, "chat");
	assert_int_equal(w.classes[0].n_headers, 2);
	assert_string_equal(w.classes[0].headers[0], "X-Chatload-Class: chat");
	assert_string_equal(w.classes[0].headers[1], "X-Tenant: acme");
	assert_int_equal(w.classes[2].n_headers, 1);
	cl_workload_plan_free(&w);

	/* six prompts: copied twice (round 4 / gcd(6, 4)), 6, 3 and 3 of the 12 */
	char *six[] = { "a", "b", "c", "d", "e", "f" };
	s.workload.prompts = six;
	s.workload.n_prompts = 6;
	assert_int_equal(cl_workload_render(&s, "base-model", &w, &err), 0);
	assert_int_equal(w.n_bodies, 12);
	size_t per[3] = { 0 };
	for (size_t i = 0; i < w.n_bodies; i++)
		per[w.bodies[i].cls]++;
	assert_int_equal(per[0], 6);
	assert_int_equal(per[1], 3);
	assert_int_equal(per[2], 3);
	cl_workload_plan_free(&w);

	/* synthetic prompts without a pool (every request distinct): weights 3:2 make 65
	 * prompts of the 64, none copied, 39 and 26 */
	classes[0].weight = 3;
	classes[1].weight = 2;
	s.workload.n_classes = 2;
	s.workload.kind = CL_WORKLOAD_SYNTHETIC;
	s.workload.synthetic_input = (struct cl_len_dist){ .mean = 20, .min = 10, .max = 30 };
	s.workload.synthetic_count = 64;
	assert_int_equal(cl_workload_render(&s, "base-model", &w, &err), 0);
	assert_int_equal(w.n_bodies, 65);
	per[0] = per[1] = 0;
	for (size_t i = 0; i < w.n_bodies; i++) {
		per[w.bodies[i].cls]++;
		for (size_t j = 0; j < i; j++) /* the class's keys aside, no prompt twice */
			assert_true(w.bodies[i].prompt_chars != w.bodies[j].prompt_chars ||
				    strcmp(strstr(w.bodies[i].json, "\"messages\""),
					   strstr(w.bodies[j].json, "\"messages\"")) != 0);
	}
	assert_int_equal(per[0], 39);
	assert_int_equal(per[1], 26);
	cl_workload_plan_free(&w);
}

/* Classes with prompts of their own: a class's inline prompts, another's synthetic prompts of
 * its input_tokens, and a class on the workload's prompts; each body is its class's, every
 * pool gone through, the counts exact by weight. */
static void test_classes_own_prompts(void **state)
{
	(void)state;
	char *base[] = { "b1", "b2", "b3" };
	char *own[] = { "own prompt one", "own prompt two" };
	struct cl_scn_class classes[] = {
		{ .name = "inline", .weight = 1, .prompts = own, .n_prompts = 2 },
		{ .name = "long", .weight = 1, .input_tokens = 100 },
		{ .name = "shared", .weight = 2 },
	};
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = base;
	s.workload.n_prompts = 3;
	s.workload.classes = classes;
	s.workload.n_classes = 3;
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	/* the shared class needs its 3 prompts at half the bodies: 6, a whole number of rounds
	 * (4): 8 */
	assert_int_equal(w.n_bodies, 8);
	size_t per[3] = { 0 };
	bool seen_own[2] = { false, false }, seen_base[3] = { false, false, false };
	for (size_t i = 0; i < w.n_bodies; i++) {
		const struct cl_request_body *b = &w.bodies[i];
		per[b->cls]++;
		if (b->cls == 0) {
			bool one = strstr(b->json, "own prompt one") != NULL;
			assert_true(one || strstr(b->json, "own prompt two"));
			seen_own[!one] = true;
		} else if (b->cls == 1) {
			/* 100 tokens of synthetic text: about 400 characters */
			assert_true(b->prompt_chars >= 390 && b->prompt_chars <= 420);
		} else {
			for (size_t k = 0; k < 3; k++)
				if (strstr(b->json, base[k]))
					seen_base[k] = true;
			assert_null(strstr(b->json, "own prompt"));
		}
	}
	assert_int_equal(per[0], 2);
	assert_int_equal(per[1], 2);
	assert_int_equal(per[2], 4);
	assert_true(seen_own[0] && seen_own[1]);
	assert_true(seen_base[0] && seen_base[1] && seen_base[2]);
	cl_workload_plan_free(&w);

	/* a class's own dataset (format auto: text, one prompt a line), read whole */
	classes[0].prompts = NULL;
	classes[0].n_prompts = 0;
	classes[0].dataset = (char *)dataset("prompts.txt");
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0);
	size_t from_file = 0;
	for (size_t i = 0; i < w.n_bodies; i++)
		from_file += w.bodies[i].cls == 0;
	/* 3 prompts (blank lines skipped) at a quarter of the bodies: 12 */
	assert_int_equal(w.n_bodies, 12);
	assert_int_equal(from_file, 3);
	cl_workload_plan_free(&w);
}

/* The order alone: exact counts by largest remainder, and every prefix within one of its
 * share. */
static void test_class_order(void **state)
{
	(void)state;
	const uint32_t weights[] = { 5, 3, 1, 0 };
	uint32_t order[1000];
	assert_int_equal(cli_workload_class_order(weights, 4, 1000, order), 0);
	size_t taken[4] = { 0 };
	for (size_t i = 0; i < 1000; i++) {
		taken[order[i]]++;
		for (size_t k = 0; k < 4; k++) {
			double share = (double)weights[k] / 9.0 * (double)(i + 1);
			assert_true(fabs((double)taken[k] - share) <= 1.0 + 1e-9);
		}
	}
	assert_int_equal(taken[0], 556);
	assert_int_equal(taken[1], 333);
	assert_int_equal(taken[2], 111);
	assert_int_equal(taken[3], 0);
	assert_int_equal(cli_workload_class_order(weights, 0, 10, order), CL_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inline_prompts),
		cmocka_unit_test(test_empty_prompts_and_no_model),
		cmocka_unit_test(test_merge_rules),
		cmocka_unit_test(test_dataset_openai),
		cmocka_unit_test(test_dataset_sharegpt),
		cmocka_unit_test(test_dataset_text),
		cmocka_unit_test(test_dataset_limit),
		cmocka_unit_test(test_bad_datasets),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_synthetic_errors),
		cmocka_unit_test(test_render_probe),
		cmocka_unit_test(test_api_bodies), cmocka_unit_test(test_tools_bodies),
		cmocka_unit_test(test_merge_json), cmocka_unit_test(test_classes_bodies),
		cmocka_unit_test(test_class_order), cmocka_unit_test(test_classes_own_prompts),
		cmocka_unit_test(test_classes_rerank_bodies),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
