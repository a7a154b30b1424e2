/* What the wire decoder accepts and refuses, and what it says, pinned: every byte of each
 * golden message of tests/data/wire/ (but the two whose bulk is a metrics record, which
 * hist_wire's tests cover) is set in turn to 0xc0 (nil) and the result decoded.  Each outcome
 * (the error code and message, or the size and hash of the message encoded again) is written
 * as a line, consecutive repeats once, and compared with tests/data/wire/refusals.expect,
 * captured from the decoder before it became table-driven (issue 41).
 * CHATLOAD_WIRE_GOLDEN_WRITE=DIR writes DIR/refusals.expect instead of comparing. */
#include "chatload/wire.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *const goldens[] = {
	"hello",
	"poll_min",
	"poll_full",
	"report_probe",
	"welcome",
	"refuse",
	"ack",
	"cmd_noop",
	"cmd_abort",
	"cmd_quit",
	"cmd_probe_min",
	"cmd_probe_full",
	"cmd_warmup_min",
	"cmd_warmup_full",
	"cmd_prepare_min",
	"cmd_prepare_full",
	"cmd_start_at",
	"cmd_stop",
	"cmd_stop_cut",
	"cmd_bodies",
	"cmd_generate",
	"cmd_lease",
	"answers",
	"requests",
};

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ull;
	}
	return h;
}

static void outcome(const unsigned char *b, size_t n, char *line, size_t cap)
{
	struct cl_err err = { 0 };
	struct cl_msg m;
	int rc = cl_wire_decode(b, n, &m, &err);
	if (rc) {
		snprintf(line, cap, "rc=%d %s", rc, err.msg);
		return;
	}
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	struct cl_err e2 = { 0 };
	int r2 = cl_wire_encode(&m, &sb, &e2);
	snprintf(line, cap, "ok %s enc=%d %zu %016llx", cl_msg_type_name(m.type), r2, sb.size,
		 (unsigned long long)fnv(sb.data, sb.size));
	msgpack_sbuffer_destroy(&sb);
	cl_msg_free(&m);
}

static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(len > 0 ? (size_t)len + 1 : 1);
	*n = b ? fread(b, 1, (size_t)len, f) : 0;
	fclose(f);
	if (b)
		b[*n] = '\0';
	return b;
}

static void test_refusals(void **state)
{
	(void)state;
	const char *write_dir = getenv("CHATLOAD_WIRE_GOLDEN_WRITE");
	const char *data = getenv("CHATLOAD_TEST_DATA");
	if (!data)
		skip();
	size_t cap = 1 << 20, len = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	out[0] = '\0';
	size_t lines = 0;
	for (size_t g = 0; g < sizeof(goldens) / sizeof(goldens[0]); g++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/wire/%s.msgpack", data, goldens[g]);
		size_t n = 0;
		unsigned char *b = slurp(path, &n);
		if (!b) {
			print_error("no golden %s\n", path);
			fail();
		}
		char prev[700] = "", line[700];
		for (size_t i = 0; i < n; i++) {
			unsigned char was = b[i];
			b[i] = 0xc0;
			outcome(b, n, line, sizeof(line));
			b[i] = was;
			if (strcmp(line, prev) == 0)
				continue;
			snprintf(prev, sizeof(prev), "%s", line);
			size_t need = strlen(goldens[g]) + strlen(line) + 24;
			while (len + need >= cap) {
				cap *= 2;
				out = realloc(out, cap);
				assert_non_null(out);
			}
			len += (size_t)snprintf(out + len, cap - len, "%s@%zu %s\n", goldens[g], i,
						line);
			lines++;
		}
		free(b);
	}
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", write_dir ? write_dir : data,
		 write_dir ? "refusals.expect" : "wire/refusals.expect");
	if (write_dir) {
		FILE *f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(out, 1, len, f), len);
		fclose(f);
		free(out);
		return;
	}
	size_t wn = 0;
	char *want = (char *)slurp(path, &wn);
	if (!want) {
		print_error("no %s\n", path);
		fail();
	}
	print_message("%zu outcomes of one-byte changes compared\n", lines);
	if (wn != len || memcmp(want, out, len) != 0) {
		/* Say the first line that differs, both sides. */
		size_t at = 0, line_at = 0;
		while (at < len && at < wn && want[at] == out[at])
			if (out[at++] == '\n')
				line_at = at;
		print_error("differs from %s at line starting:\n  want: %.200s\n  got:  %.200s\n",
			    path, want + line_at, out + line_at);
		fail();
	}
	free(want);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
