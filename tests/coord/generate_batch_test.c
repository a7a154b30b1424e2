/* coordinator/generate/: the Batch input's checking pass (errors at file:line:col, duplicates,
 * skip_invalid writing each bad line once), the sending pass (skips, the body with stream
 * added), and the output files (a half-written last line repaired, ids read back). */
#include "coordinator/generate/batch.h"

#include <jansson.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static const char *path_of(const char *name)
{
	static char p[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return strdup("");
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strdup(buf);
}

#define GOOD(id) "{\"custom_id\":\"" id "\",\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{\"messages\":[],\"temperature\":0.5}}\n"

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/cl_gen_test_%d", (int)getpid());
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s", dir, dir);
	return system(cmd);
}

static int teardown(void **state)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* Each bad line is named with its line and column; nothing is written without skip_invalid. */
static void test_scan_errors(void **state)
{
	static const struct {
		const char *line, *want;
	} cases[] = {
		{ "{\"custom_id\":\"x\",\"url\":\"/v1/chat/completions\",\"body\":{}", ":3:" },
		{ "[1,2]", ":3:1: a Batch line must be a JSON object" },
		{ "{\"url\":\"/v1/chat/completions\",\"body\":{}}", ":3:1: field 'custom_id' is missing" },
		{ "{\"custom_id\":\"c\",\"url\":\"/v1/embeddings\",\"body\":{}}",
		  ":3:18: field 'url' is '/v1/embeddings'" },
		{ "{\"custom_id\":\"c\",\"url\":\"/v1/chat/completions\",\"body\":[]}",
		  ":3:47: field 'body' must be a JSON object" },
		{ "{\"custom_id\":\"c\",\"method\":\"GET\",\"url\":\"/v1/chat/completions\",\"body\":{}}",
		  ":3:18: field 'method' must be \"POST\"" },
		{ "{\"custom_id\":\"a\",\"url\":\"/v1/chat/completions\",\"body\":{}}",
		  ":3:2: custom_id 'a' is used by an earlier line" },
		{ "{\"custom_id\":\"\",\"url\":\"/v1/chat/completions\",\"body\":{}}",
		  ":3:2: field 'custom_id' must be 1 to 500 bytes" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text), GOOD("a") "\n%s\n" GOOD("b"), cases[i].line);
		const char *in = path_of("in.jsonl");
		write_file(in, text);
		struct cl_gen_idset present = { 0 }, seen = { 0 };
		struct cl_gen_scan scan;
		struct cl_err err = { 0 };
		char msg[600];
		assert_int_equal(cl_gen_scan(in, &present, false, NULL, &seen, NULL, &scan, &err), CL_EINVAL);
		cl_err_format(&err, msg, sizeof(msg));
		if (!strstr(msg, cases[i].want))
			fail_msg("case %zu: '%s' does not contain '%s'", i, msg, cases[i].want);
		assert_non_null(strstr(msg, "in.jsonl"));
		cl_gen_idset_free(&seen);
	}
}

/* skip_invalid: bad lines go to errors once (a second pass finds them there); the sending
 * pass skips them, duplicates and ids already answered, and adds stream to the body. */
static void test_skip_and_resume(void **state)
{
	const char *in = path_of("in2.jsonl"), *out = path_of("out2.jsonl"),
		   *errs = path_of("err2.jsonl");
	write_file(in, GOOD("a") "not json\n" GOOD("b") GOOD("a") "\n" GOOD("c"));
	/* b already answered, and the output ends in a half-written line */
	write_file(out, "{\"id\":\"x\",\"custom_id\":\"b\",\"response\":null,\"error\":null}\n{\"id\":\"y\",\"cus");
	for (int pass = 0; pass < 2; pass++) {
		struct cl_gen_idset done = { 0 }, seen = { 0 };
		struct cl_gen_lineset send = { 0 };
		struct cl_gen_out o;
		struct cl_gen_scan scan;
		struct cl_err err = { 0 };
		assert_int_equal(cl_gen_out_open(&o, out, errs, &done, &err), 0);
		assert_int_equal(o.repaired_bytes, pass == 0 ? 14 : 0);
		assert_int_equal(cl_gen_scan(in, &done, true, &o, &seen, &send, &scan, &err), 0);
		assert_int_equal(scan.lines, 5);
		assert_int_equal(scan.valid, 3);
		assert_int_equal(scan.invalid, 2);
		assert_int_equal(scan.present, 1);
		assert_int_equal(scan.to_send, 2);
		assert_int_equal(send.n, 2); /* lines 1 and 6: not b (answered), not the second a */
		assert_true(cl_gen_lineset_has(&send, 1) && cl_gen_lineset_has(&send, 6));
		assert_int_equal(cl_gen_out_close(&o, &err), 0);
		struct cl_gen_reader r;
		assert_int_equal(cl_gen_reader_open(&r, in, &err), 0);
		struct cl_gen_line l;
		assert_int_equal(cl_gen_reader_next(&r, &send, &l, &err), 1);
		assert_string_equal(l.id, "a");
		assert_int_equal(l.line_no, 1);
		/* sent as written, the two fields first */
		assert_string_equal(l.body, "{\"stream\":true,\"stream_options\":{\"include_usage\":"
					    "true},\"messages\":[],\"temperature\":0.5}");
		cl_gen_line_free(&l);
		assert_int_equal(cl_gen_reader_next(&r, &send, &l, &err), 1);
		assert_string_equal(l.id, "c");
		assert_int_equal(l.line_no, 6);
		cl_gen_line_free(&l);
		assert_int_equal(cl_gen_reader_next(&r, &send, &l, &err), 0);
		cl_gen_reader_close(&r);
		cl_gen_lineset_free(&send);
		cl_gen_idset_free(&done);
		cl_gen_idset_free(&seen);
	}
	char *e = read_file(errs);
	/* two bad lines, written once over both passes: the malformed one by its line */
	int n = 0;
	for (char *p = e; *p; p++)
		n += *p == '\n';
	assert_int_equal(n, 2);
	assert_non_null(strstr(e, "\"line\":2"));
	assert_non_null(strstr(e, "in2.jsonl:4:2: custom_id 'a' is used"));
	free(e);
	char *o = read_file(out);
	assert_string_equal(o, "{\"id\":\"x\",\"custom_id\":\"b\",\"response\":null,\"error\":null}\n");
	free(o);
}

/* The body goes byte for byte as written (numbers, spacing, escapes, key order), with the
 * two stream fields put first, or as it is when it says both itself (a spool's); a body that
 * has stream or stream_options otherwise is re-serialized with them set, its other
 * stream_options kept. */
static void test_body_as_written(void **state)
{
	const char *in = path_of("in4.jsonl");
	write_file(in,
		   "{ \"url\": \"/v1/chat/completions\", \"body\" : { \"t\" : 0.7, \"s\": \"a\\\"}\\u00e9\", "
		   "\"n\": [1e2, {\"x\": \"]\"}] } , \"custom_id\": \"a\"}\n"
		   "{\"custom_id\":\"b\",\"url\":\"/v1/chat/completions\",\"body\":{ }}\n"
		   "{\"custom_id\":\"c\",\"url\":\"/v1/chat/completions\",\"body\":{\"stream\":false,"
		   "\"stream_options\":{\"x\":1},\"t\":1}}\n"
		   "{\"custom_id\":\"d\",\"url\":\"/v1/chat/completions\",\"body\": {\"t\": 0.7, "
		   "\"stream\":true,\"stream_options\":{ \"include_usage\" :true}} }\n"
		   "{\"custom_id\":\"e\",\"url\":\"/v1/chat/completions\",\"body\":{\"stream\":true,"
		   "\"stream_options\":{\"include_usage\":false}}}\n");
	struct cl_gen_reader r;
	struct cl_gen_line l;
	struct cl_err err = { 0 };
	assert_int_equal(cl_gen_reader_open(&r, in, &err), 0);
	assert_int_equal(cl_gen_reader_next(&r, NULL, &l, &err), 1);
	assert_string_equal(l.body, "{\"stream\":true,\"stream_options\":{\"include_usage\":true}, "
				    "\"t\" : 0.7, \"s\": \"a\\\"}\\u00e9\", \"n\": [1e2, {\"x\": \"]\"}] }");
	cl_gen_line_free(&l);
	assert_int_equal(cl_gen_reader_next(&r, NULL, &l, &err), 1);
	assert_string_equal(l.body, "{\"stream\":true,\"stream_options\":{\"include_usage\":true} }");
	cl_gen_line_free(&l);
	assert_int_equal(cl_gen_reader_next(&r, NULL, &l, &err), 1);
	assert_string_equal(l.body, "{\"stream\":true,\"stream_options\":{\"x\":1,\"include_usage\":"
				    "true},\"t\":1}");
	cl_gen_line_free(&l);
	assert_int_equal(cl_gen_reader_next(&r, NULL, &l, &err), 1);
	assert_string_equal(l.body, "{\"t\": 0.7, \"stream\":true,\"stream_options\":{ "
				    "\"include_usage\" :true}}");
	assert_int_equal(l.body_len, strlen(l.body));
	cl_gen_line_free(&l);
	assert_int_equal(cl_gen_reader_next(&r, NULL, &l, &err), 1);
	assert_string_equal(l.body, "{\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
	cl_gen_line_free(&l);
	cl_gen_reader_close(&r);
}

/* The spool: Batch lines written to a .tmp, renamed when committed, read back by the two
 * passes with each body as written; it never replaces the dataset or the errors file, a
 * record too long to send is named source:line, and an uncommitted spool is removed. */
static void test_spool(void **state)
{
	const char *src = path_of("data.jsonl");
	char out[256], errs[256], spool[256], tmp[300];
	snprintf(out, sizeof(out), "%s", path_of("gen.jsonl"));
	snprintf(errs, sizeof(errs), "%s", path_of("gen.errors.jsonl"));
	snprintf(spool, sizeof(spool), "%s", path_of("gen.input.jsonl"));
	snprintf(tmp, sizeof(tmp), "%s.tmp", spool);
	write_file(src, "x\n");
	struct cl_gen_spool sp;
	struct cl_err err = { 0 };
	assert_int_equal(cl_gen_spool_open(&sp, out, errs, src, &err), 0);
	assert_string_equal(sp.path, spool);
	const char *body = "{\"a\":0.7,\"stream\":true}";
	assert_int_equal(cl_gen_spool_add(&sp, 3, body, strlen(body), &err), 0);
	assert_int_equal(cl_gen_spool_add(&sp, 17, "{}", 2, &err), 0);
	assert_int_equal(access(tmp, F_OK), 0);
	assert_int_not_equal(access(spool, F_OK), 0); /* not before it is whole */
	char *big = malloc(CL_GEN_MAX_LINE);
	assert_non_null(big);
	memset(big, ' ', CL_GEN_MAX_LINE);
	assert_int_equal(cl_gen_spool_add(&sp, 99, big, CL_GEN_MAX_LINE - 60, &err), CL_EINVAL);
	free(big);
	assert_string_equal(err.file, src);
	assert_int_equal(err.line, 99);
	assert_int_equal(cl_gen_spool_commit(&sp, &err), 0);
	assert_int_not_equal(access(tmp, F_OK), 0);
	char *text = read_file(spool);
	assert_string_equal(text, "{\"custom_id\":\"3\",\"method\":\"POST\",\"url\":"
				  "\"/v1/chat/completions\",\"body\":{\"a\":0.7,\"stream\":true}}\n"
				  "{\"custom_id\":\"17\",\"method\":\"POST\",\"url\":"
				  "\"/v1/chat/completions\",\"body\":{}}\n");
	free(text);
	cl_gen_spool_close(&sp);
	assert_int_equal(access(spool, F_OK), 0); /* a committed spool stays */

	/* a spool that would be the dataset (or the errors file) is refused, nothing written */
	char data[256];
	snprintf(data, sizeof(data), "%s", path_of("ds.input.jsonl"));
	write_file(data, "keep me\n");
	assert_int_equal(cl_gen_spool_open(&sp, path_of("ds.jsonl"), errs, data, &err), CL_EINVAL);
	cl_gen_spool_close(&sp);
	text = read_file(data);
	assert_string_equal(text, "keep me\n");
	free(text);
	assert_int_equal(cl_gen_spool_open(&sp, path_of("e"), path_of("e.input.jsonl"), src, &err),
			 CL_EINVAL);
	cl_gen_spool_close(&sp);

	/* closed before its commit (a bad record): the half spool goes */
	assert_int_equal(cl_gen_spool_open(&sp, path_of("h.jsonl"), errs, src, &err), 0);
	assert_int_equal(cl_gen_spool_add(&sp, 1, "{}", 2, &err), 0);
	cl_gen_spool_close(&sp);
	assert_int_not_equal(access(path_of("h.input.jsonl.tmp"), F_OK), 0);
	assert_int_not_equal(access(path_of("h.input.jsonl"), F_OK), 0);
}

/* A success line is the Batch output shape; a body that is not an object is refused. */
static void test_output_lines(void **state)
{
	const char *out = path_of("out3.jsonl"), *errs = path_of("err3.jsonl");
	struct cl_gen_idset done = { 0 };
	struct cl_gen_out o;
	struct cl_err err = { 0 };
	assert_int_equal(cl_gen_out_open(&o, out, errs, &done, &err), 0);
	assert_int_equal(cl_gen_out_success(&o, "q1", 200, "q1/2", "{\"object\":\"chat.completion\"}",
					    &err),
			 0);
	assert_int_equal(cl_gen_out_success(&o, "q2", 200, "q2", "[1]", &err), CL_EINVAL);
	assert_int_equal(cl_gen_out_failure(&o, "q3", 400, "q3", "http_400", "bad", 0, &err), 0);
	/* a server's message cut inside a UTF-8 sequence ("é" is c3 a9), or not UTF-8 at all,
	 * is still written (the job would stop on a write it cannot make) */
	assert_int_equal(cl_gen_out_failure(&o, "q4", 200, "q4/2", "stream_error", "caf\xc3", 0,
					    &err),
			 0);
	assert_int_equal(cl_gen_out_failure(&o, "q5", 500, "q5", "http_500", "a\xff\xfe" "b", 0,
					    &err),
			 0);
	assert_int_equal(cl_gen_out_close(&o, &err), 0);
	json_error_t je;
	json_t *el = json_load_file(errs, JSON_DISABLE_EOF_CHECK, &je);
	assert_non_null(el);
	json_decref(el);
	FILE *ef = fopen(errs, "r");
	assert_non_null(ef);
	char eline[512];
	const char *want_msg[] = { "bad", "caf", "a??b" };
	for (int k = 0; k < 3; k++) {
		assert_non_null(fgets(eline, sizeof(eline), ef));
		json_t *e = json_loads(eline, 0, &je);
		assert_non_null(e);
		assert_string_equal(
		    json_string_value(json_object_get(json_object_get(e, "error"), "message")),
		    want_msg[k]);
		json_decref(e);
	}
	fclose(ef);
	json_t *l = json_load_file(out, 0, &je);
	assert_non_null(l);
	assert_string_equal(json_string_value(json_object_get(l, "custom_id")), "q1");
	json_t *resp = json_object_get(l, "response");
	assert_int_equal(json_integer_value(json_object_get(resp, "status_code")), 200);
	assert_string_equal(json_string_value(json_object_get(resp, "request_id")), "q1/2");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(resp, "body"), "object")),
	    "chat.completion");
	assert_true(json_is_null(json_object_get(l, "error")));
	json_decref(l);
	/* reopened: both ids are answered */
	assert_int_equal(cl_gen_out_open(&o, out, errs, &done, &err), 0);
	assert_true(cl_gen_idset_has(&done, "q1", 2));
	assert_true(cl_gen_idset_has(&done, "q3", 2));
	assert_false(cl_gen_idset_has(&done, "q2", 2));
	assert_int_equal(cl_gen_out_close(&o, &err), 0);
	cl_gen_idset_free(&done);
}

/* The set grows past its first table and never confuses the ids it holds. */
static void test_idset(void **state)
{
	struct cl_gen_idset s = { 0 };
	char id[32];
	for (int i = 0; i < 100000; i++) {
		int n = snprintf(id, sizeof(id), "id-%d", i);
		assert_int_equal(cl_gen_idset_add(&s, id, (size_t)n), 1);
	}
	for (int i = 0; i < 100000; i++) {
		int n = snprintf(id, sizeof(id), "id-%d", i);
		assert_int_equal(cl_gen_idset_add(&s, id, (size_t)n), 0);
		n = snprintf(id, sizeof(id), "other-%d", i);
		assert_false(cl_gen_idset_has(&s, id, (size_t)n));
	}
	assert_int_equal(s.n, 100000);
	cl_gen_idset_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_errors),
		cmocka_unit_test(test_skip_and_resume),
		cmocka_unit_test(test_body_as_written),
		cmocka_unit_test(test_spool),
		cmocka_unit_test(test_output_lines),
		cmocka_unit_test(test_idset),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
