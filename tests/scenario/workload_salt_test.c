/* Tests of the run's salt (workload.salt) as the workload renderer owns it: the tag a first
 * rendering makes and hands out in its stats, kept by a rendering again, none where the
 * scenario wants none, the plan's retag only where the bodies are no pool, and a class's own
 * prompts salted as the workload's are. */
#include "chatload/salt.h"
#include "coordinator/workload/workload.h"

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

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
		fail_msg("not JSON (%s): %s", jerr.text, text);
	return j;
}

static const char *str_at(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_string(v))
		fail_msg("%s is not a string", key);
	return json_string_value(v);
}

/* Every first-message content of w opens with "[tag] " (tag "": none opens with '['). */
static void assert_salted(const struct cl_workload_plan *w, const char *tag)
{
	char want[32];
	snprintf(want, sizeof(want), "[%s] ", tag);
	for (size_t i = 0; i < w->n_bodies; i++) {
		json_t *b = parse(w->bodies[i].json);
		json_t *first = json_array_get(json_object_get(b, "messages"), 0);
		const char *text = str_at(first, "content");
		if (tag[0])
			assert_true(strncmp(text, want, strlen(want)) == 0);
		else
			assert_true(text[0] != '[');
		json_decref(b);
	}
}

/* Renders s with stats st; fails the test on an error. */
static struct cl_workload_plan render_salted(const struct cl_scenario *s,
					     struct cl_workload_stats *st)
{
	struct cl_workload_plan w;
	struct cl_err err = { 0 };
	int rc = cl_workload_render_stats(s, "m", &w, st, &err);
	if (rc)
		fail_msg("render failed: %d %s", rc, err.msg);
	return w;
}

/* workload.salt is the rendering's: a new tag on a first rendering, the same one on a
 * rendering again with its stats, none for salt: none, a generate job or no stats; retag
 * (every request distinct past the bodies) only where the bodies are not a pool. */
static void test_salt(void **state)
{
	(void)state;
	char *prompts[] = { "one", "two" };
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = prompts;
	s.workload.n_prompts = 2;
	s.workload.system_prompt = "be brief";

	struct cl_workload_stats st = { 0 };
	struct cl_workload_plan w = render_salted(&s, &st);
	assert_true(cl_salt_valid(st.salt));
	assert_salted(&w, st.salt); /* the system message, first, carries it */
	assert_string_equal(w.retag, st.salt);
	char first[CL_SALT_TAG_SIZE];
	memcpy(first, st.salt, sizeof(first));
	cl_workload_plan_free(&w);

	w = render_salted(&s, &st); /* calibration's rendering again: the run's tag kept */
	assert_string_equal(st.salt, first);
	assert_salted(&w, first);
	cl_workload_plan_free(&w);

	struct cl_workload_stats fresh = { 0 }; /* another run: a tag of its own */
	w = render_salted(&s, &fresh);
	assert_true(cl_salt_valid(fresh.salt));
	assert_string_not_equal(fresh.salt, first);
	cl_workload_plan_free(&w);

	struct cl_err err = { 0 };
	assert_int_equal(cl_workload_render(&s, "m", &w, &err), 0); /* no stats: no salt */
	assert_salted(&w, "");
	assert_string_equal(w.retag, "");
	cl_workload_plan_free(&w);

	s.workload.salt_none = true;
	struct cl_workload_stats none = { 0 };
	w = render_salted(&s, &none);
	assert_string_equal(none.salt, "");
	assert_salted(&w, "");
	assert_string_equal(w.retag, "");
	cl_workload_plan_free(&w);
	s.workload.salt_none = false;

	/* salted but a pool: synthetic prompts of a given count, a shared prefix */
	struct cl_scenario pool = base_scenario();
	pool.workload.kind = CL_WORKLOAD_SYNTHETIC;
	pool.workload.synthetic_input = (struct cl_len_dist){ 20, 0, 20, 20 };
	pool.workload.synthetic_count = 4;
	pool.workload.synthetic_count_given = true;
	struct cl_workload_stats ps = { 0 };
	w = render_salted(&pool, &ps);
	assert_true(cl_salt_valid(ps.salt));
	assert_salted(&w, ps.salt);
	assert_string_equal(w.retag, "");
	cl_workload_plan_free(&w);
	pool.workload.synthetic_count_given = false;
	memset(&ps, 0, sizeof(ps));
	w = render_salted(&pool, &ps);
	assert_string_equal(w.retag, ps.salt); /* no count: every request its own */
	cl_workload_plan_free(&w);
	s.workload.shared_prefix_groups = 2;
	s.workload.shared_prefix_tokens = 8;
	memset(&ps, 0, sizeof(ps));
	w = render_salted(&s, &ps);
	assert_true(cl_salt_valid(ps.salt));
	assert_string_equal(w.retag, "");
	cl_workload_plan_free(&w);
}

/* A class's own prompts carry the run's tag as the workload's do. */
static void test_salt_classes(void **state)
{
	(void)state;
	char *base[] = { "b1" };
	char *own[] = { "own prompt" };
	struct cl_scn_class classes[] = {
		{ .name = "inline", .weight = 1, .prompts = own, .n_prompts = 1 },
		{ .name = "shared", .weight = 1 },
	};
	struct cl_scenario s = base_scenario();
	s.workload.kind = CL_WORKLOAD_PROMPTS;
	s.workload.prompts = base;
	s.workload.n_prompts = 1;
	s.workload.classes = classes;
	s.workload.n_classes = 2;
	struct cl_workload_stats st = { 0 };
	struct cl_workload_plan w = render_salted(&s, &st);
	assert_true(cl_salt_valid(st.salt));
	assert_int_equal(w.n_bodies, 2);
	assert_salted(&w, st.salt);
	cl_workload_plan_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_salt),
		cmocka_unit_test(test_salt_classes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
