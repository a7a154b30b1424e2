/* The wire encoder refuses what the decoder refuses: every unsigned field whose table entry
 * bounds it (max, or a least value umin) is pushed one past its bound in each golden message
 * of tests/data/wire/ that carries it, once in the C struct (cl_wire_encode must refuse it,
 * naming the field) and once in the decoded msgpack tree packed again (cl_wire_decode must
 * refuse it, naming the field).  Every bounded entry of every table must be reached both
 * ways by some golden, so a bound added later is held here too.  Reads the private tables. */
#include "chatload/wire.h"

#include "common/wire/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *const goldens[] = {
	"hello",	  "poll_full",	     "report_probe",	 "welcome",	  "cmd_probe_full",
	"cmd_warmup_full", "cmd_prepare_full", "cmd_start_at",	 "cmd_stop_cut",  "cmd_bodies",
	"cmd_generate",	  "cmd_lease",	     "answers",		 "requests",
};

/* Each bounded entry seen, and whether each side refused it past its bound. */
struct seen {
	const struct wire_field *f;
	bool enc, dec;
};
static struct seen seen[128];
static size_t n_seen;

static struct seen *seen_of(const struct wire_field *f)
{
	for (size_t i = 0; i < n_seen; i++)
		if (seen[i].f == f)
			return &seen[i];
	assert_true(n_seen < sizeof(seen) / sizeof(seen[0]));
	seen[n_seen].f = f;
	return &seen[n_seen++];
}

static bool bounded(const struct wire_field *f)
{
	return (f->kind == WF_U32 || f->kind == WF_U64 || f->kind == WF_SIZE) &&
	       (f->max || f->umin);
}

/* The golden being worked on: its decoded struct and its msgpack tree. */
struct golden {
	const char *name;
	struct cl_msg *m;
	msgpack_object *top;
};

static void store(const struct wire_field *f, void *p, uint64_t v)
{
	if (f->kind == WF_U32)
		*(uint32_t *)p = (uint32_t)v;
	else if (f->kind == WF_SIZE)
		*(size_t *)p = (size_t)v;
	else
		*(uint64_t *)p = v;
}

/* The values just outside the entry's bounds (at most two). */
static size_t outside(const struct wire_field *f, uint64_t out[2])
{
	size_t n = 0;
	if (f->umin)
		out[n++] = f->umin - 1;
	if (f->max && f->max < (f->kind == WF_U32 ? UINT32_MAX : UINT64_MAX))
		out[n++] = f->max + 1;
	return n;
}

static void expect_named(const char *side, const struct golden *g, const struct wire_field *f,
			 uint64_t v, int rc, const struct cl_err *err)
{
	char want[80];
	snprintf(want, sizeof(want), "%s'", f->name);
	if (rc == 0 || !strstr(err->msg, want)) {
		print_error("%s: %s %s=%llu: rc %d, \"%s\" (want a refusal naming %s)\n", g->name,
			    side, f->name, (unsigned long long)v, rc, err->msg, f->name);
		fail();
	}
}

static void probe_enc(struct golden *g, const struct wire_field *f, void *p)
{
	uint64_t vals[2];
	size_t n = outside(f, vals);
	unsigned char was[8];
	memcpy(was, p, f->size);
	for (size_t i = 0; i < n; i++) {
		store(f, p, vals[i]);
		msgpack_sbuffer sb;
		msgpack_sbuffer_init(&sb);
		struct cl_err err = { 0 };
		int rc = cl_wire_encode(g->m, &sb, &err);
		msgpack_sbuffer_destroy(&sb);
		memcpy(p, was, f->size);
		expect_named("encode", g, f, vals[i], rc, &err);
	}
	seen_of(f)->enc = true;
}

static void probe_dec(struct golden *g, const struct wire_field *f, msgpack_object *v)
{
	if (!v || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return;
	uint64_t vals[2];
	size_t n = outside(f, vals);
	msgpack_object was = *v;
	for (size_t i = 0; i < n; i++) {
		v->via.u64 = vals[i];
		msgpack_sbuffer sb;
		msgpack_sbuffer_init(&sb);
		msgpack_packer pk;
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		assert_int_equal(msgpack_pack_object(&pk, *g->top), 0);
		struct cl_msg m;
		struct cl_err err = { 0 };
		int rc = cl_wire_decode(sb.data, sb.size, &m, &err);
		if (!rc)
			cl_msg_free(&m);
		msgpack_sbuffer_destroy(&sb);
		*v = was;
		expect_named("decode", g, f, vals[i], rc, &err);
	}
	seen_of(f)->dec = true;
}

static msgpack_object *value_of(msgpack_object *map, const char *name)
{
	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t k = 0; k < map->via.map.size; k++) {
		const msgpack_object *key = &map->via.map.ptr[k].key;
		if (key->type == MSGPACK_OBJECT_STR && key->via.str.size == strlen(name) &&
		    memcmp(key->via.str.ptr, name, key->via.str.size) == 0)
			return &map->via.map.ptr[k].val;
	}
	return NULL;
}

/* Walks t over the struct st and, beside it, the map obj the golden holds for it. */
static void walk(struct golden *g, const struct wire_table *t, void *st, msgpack_object *obj)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct wire_field *f = &t->f[i];
		char *p = (char *)st + f->off;
		msgpack_object *v = value_of(obj, f->name);
		if (bounded(f)) {
			probe_enc(g, f, p);
			probe_dec(g, f, v);
		} else if (f->kind == WF_MAP) {
			void *sub = f->ptr ? *(void **)p : p;
			if (sub)
				walk(g, f->sub, sub, v);
		} else if (f->kind == WF_ARRAY) {
			size_t n = *(size_t *)((char *)st + f->n_off);
			void *base = *(void **)p;
			if (n && base)
				walk(g, f->sub, base,
				     v && v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size
					 ? &v->via.array.ptr[0]
					 : NULL);
		} else if (f->kind == WF_CUSTOM && t == cli_wire_msg_table(CL_MSG_CMD) &&
			   strcmp(f->name, "args") == 0) {
			const struct wire_table *args =
			    cli_wire_args_table(((struct cl_msg_cmd *)st)->cmd);
			if (args)
				walk(g, args, p, v);
		}
	}
}

/* Every bounded entry of t and of the tables below it. */
static void all_bounded(const struct wire_table *t, const struct wire_field **out, size_t *n)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct wire_field *f = &t->f[i];
		if (bounded(f)) {
			bool dup = false;
			for (size_t j = 0; j < *n; j++)
				dup = dup || out[j] == f;
			if (!dup) {
				assert_true(*n < 128);
				out[(*n)++] = f;
			}
		}
		if (f->sub)
			all_bounded(f->sub, out, n);
	}
}

static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
	*n = b ? fread(b, 1, (size_t)len, f) : 0;
	fclose(f);
	return b;
}

static void test_bounds_both_ways(void **state)
{
	(void)state;
	const char *data = getenv("CHATLOAD_TEST_DATA");
	if (!data)
		skip();
	for (size_t i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/wire/%s.msgpack", data, goldens[i]);
		size_t n = 0;
		unsigned char *b = slurp(path, &n);
		if (!b) {
			print_error("no golden %s\n", path);
			fail();
		}
		struct cl_msg m;
		struct cl_err err = { 0 };
		if (cl_wire_decode(b, n, &m, &err)) {
			print_error("%s: %s\n", goldens[i], err.msg);
			fail();
		}
		msgpack_unpacked up;
		msgpack_unpacked_init(&up);
		size_t off = 0;
		assert_int_equal(msgpack_unpack_next(&up, (const char *)b, n, &off),
				 MSGPACK_UNPACK_SUCCESS);
		struct golden g = { .name = goldens[i], .m = &m, .top = &up.data };
		walk(&g, &cli_wire_envelope, &m, &up.data);
		const struct wire_table *own = cli_wire_msg_table(m.type);
		if (own)
			walk(&g, own, &m.hello, &up.data);
		msgpack_unpacked_destroy(&up);
		cl_msg_free(&m);
		free(b);
	}

	/* Every bounded entry reached both ways. */
	const struct wire_field *all[128];
	size_t n_all = 0;
	all_bounded(&cli_wire_envelope, all, &n_all);
	for (int type = CL_MSG_NONE + 1; type < CL_MSG__COUNT; type++)
		if (cli_wire_msg_table((enum cl_msg_type)type))
			all_bounded(cli_wire_msg_table((enum cl_msg_type)type), all, &n_all);
	for (int c = 0; c < CL_CMD__COUNT; c++)
		if (cli_wire_args_table((enum cl_cmd)c))
			all_bounded(cli_wire_args_table((enum cl_cmd)c), all, &n_all);
	all_bounded(&cli_wire_body_table, all, &n_all);
	size_t missed = 0;
	for (size_t i = 0; i < n_all; i++) {
		struct seen *s = seen_of(all[i]);
		if (!s->enc || !s->dec) {
			print_error("bounded field '%s' was not pushed past its bound %s%s\n",
				    all[i]->name, s->enc ? "" : "[encode]",
				    s->dec ? "" : "[decode]");
			missed++;
		}
	}
	print_message("%zu bounded fields refused past their bounds by both sides\n", n_all);
	assert_int_equal(missed, 0);
	assert_true(n_all >= 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds_both_ways),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
