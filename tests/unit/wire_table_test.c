/* The wire codec's field tables are well formed: every table reachable from the envelope,
 * the messages and the commands has unique names, fits the engine's slots, and each entry
 * carries what its kind needs; a message's own fields never reuse an envelope name (they
 * share one map, so a clash would be read as "given twice").  Reads the private tables. */
#include "chatload/wire.h"

#include "common/wire/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static size_t checked;

static void check_table(const struct wire_table *t, const char *where)
{
	checked++;
	if (t->n == 0 || t->n > WIRE_MAX_FIELDS) {
		print_error("%s: %zu fields (1..%d)\n", where, t->n, WIRE_MAX_FIELDS);
		fail();
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct wire_field *f = &t->f[i];
		char at[256];
		snprintf(at, sizeof(at), "%s.%s", where, f->name ? f->name : "(null)");
		assert_non_null(f->name);
		for (size_t j = 0; j < i; j++)
			if (strcmp(t->f[j].name, f->name) == 0) {
				print_error("%s: the name is in the table twice\n", at);
				fail();
			}
		bool ok = true;
		switch (f->kind) {
		case WF_U32:
			ok = f->size == sizeof(uint32_t);
			break;
		case WF_U64:
			ok = f->size == sizeof(uint64_t);
			break;
		case WF_SIZE:
			ok = f->size == sizeof(size_t);
			break;
		case WF_I64:
			ok = f->size == sizeof(int64_t);
			break;
		case WF_DBL:
			ok = f->size == sizeof(double);
			break;
		case WF_BOOL:
			ok = f->size == sizeof(bool);
			break;
		case WF_ENUM:
			ok = f->size == 4 && f->names && f->lookup;
			break;
		case WF_STR:
			ok = f->size == sizeof(char *) && f->cap > 0;
			break;
		case WF_FSTR:
			ok = f->size >= 2;
			break;
		case WF_STRS:
			ok = f->size == sizeof(char **) && f->cap > 0 && f->max_n > 0;
			break;
		case WF_MAP:
			ok = f->sub && (!f->ptr || (f->size == sizeof(void *) && f->elem > 0));
			break;
		case WF_ARRAY:
			ok = f->sub && f->elem > 0 && f->max_n > 0;
			break;
		case WF_CUSTOM:
			ok = f->enc && f->dec;
			break;
		}
		if (f->send == SEND_IF && !f->send_if)
			ok = false;
		if (f->send == SEND_NONNEG && f->kind != WF_I64)
			ok = false;
		if (!ok) {
			print_error("%s: the entry lacks what its kind needs\n", at);
			fail();
		}
		if (f->sub)
			check_table(f->sub, at);
	}
}

static void test_tables(void **state)
{
	(void)state;
	check_table(&cli_wire_envelope, "envelope");
	for (int type = CL_MSG_NONE + 1; type < CL_MSG__COUNT; type++) {
		const struct wire_table *t = cli_wire_msg_table((enum cl_msg_type)type);
		if (!t)
			continue;
		check_table(t, cl_msg_type_name(type));
		for (size_t i = 0; i < t->n; i++)
			for (size_t j = 0; j < cli_wire_envelope.n; j++)
				if (strcmp(t->f[i].name, cli_wire_envelope.f[j].name) == 0) {
					print_error("%s.%s: an envelope field's name\n",
						    cl_msg_type_name(type), t->f[i].name);
					fail();
				}
	}
	for (int c = 0; c < CL_CMD__COUNT; c++) {
		const struct wire_table *t = cli_wire_args_table((enum cl_cmd)c);
		if (t)
			check_table(t, cl_cmd_name(c));
	}
	check_table(&cli_wire_body_table, "bodies[]");
	print_message("%zu tables checked\n", checked);
	assert_true(checked >= 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
