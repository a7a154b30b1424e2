/* The field tables of each command's arguments (CMD.args, docs/protocol.md), on the plan
 * tables of plans.c.  Each field is written here once; table.c encodes, decodes and checks
 * it. */
#include "chatload/wire.h"

#include "internal.h"

#include <math.h>
#include <string.h>

/* ---- Command arguments ------------------------------------------------------------------ */

#define T struct cl_cmd_probe
static const struct wire_field probe_fields[] = {
	FL(WF_I64, T, timeout_us, .req = true, .min = 0),
	FL(WF_I64, T, request_timeout_us, .req = true, .min = 0),
	FL(WF_U32, T, consecutive, .req = true),
	FL(WF_I64, T, backoff_initial_us, .req = true, .min = 0),
	FL(WF_I64, T, backoff_max_us, .req = true, .min = 0),
	FL(WF_U64, T, seed),
	FL(WF_STR, T, body_json, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_BODY, .text = WSTR_TEXT),
	FL(WF_STR, T, prompt, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_PROMPT, .text = WSTR_TEXT),
	FL(WF_U32, T, max_tokens),
	FL(WF_STR, T, extra_body_json, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_BODY,
	   .text = WSTR_TEXT),
	FL(WF_MAP, T, target, .send = SEND_NONZERO, .ptr = true,
	   .elem = sizeof(struct cl_target_plan), .sub = &cli_wire_target_table),
};
static const struct wire_table probe_table = WIRE_TABLE(probe_fields, NULL, NULL);
#undef T

#define T struct cl_cmd_warmup
static const struct wire_field warmup_fields[] = {
	FL(WF_MAP, T, stage, .req = true, .sub = &cli_wire_stage_table),
	FL(WF_U32, T, max_tokens, .req = true),
	FL(WF_I64, T, request_timeout_us, .min = 0),
	FL(WF_STR, T, body_json, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_BODY, .text = WSTR_TEXT),
};
static const struct wire_table warmup_table = WIRE_TABLE(warmup_fields, NULL, NULL);
#undef T

#define T struct cl_cmd_prepare
static const struct wire_field prepare_fields[] = {
	FL(WF_MAP, T, target, .req = true, .sub = &cli_wire_target_table),
	FL(WF_MAP, T, workload, .req = true, .sub = &cli_wire_workload_table),
	FL(WF_BOOL, T, requests, .send = SEND_NONZERO),
};
static const struct wire_table prepare_table = WIRE_TABLE(prepare_fields, NULL, NULL);
#undef T

#define T struct cl_cmd_start_at
static const struct wire_field start_at_fields[] = {
	FL(WF_MAP, T, stage, .req = true, .sub = &cli_wire_stage_table),
	FL(WF_I64, T, start_at_coord_us, .req = true, .min = INT64_MIN),
};
static const struct wire_table start_at_table = WIRE_TABLE(start_at_fields, NULL, NULL);
#undef T

#define T struct cl_cmd_stop
static const struct wire_field stop_fields[] = {
	FL(WF_U32, T, stage, .req = true),
	/* "cut" only when set: a plain STOP stays the one-key map it always was */
	FL(WF_BOOL, T, cut, .send = SEND_NONZERO),
};
static const struct wire_table stop_table = WIRE_TABLE(stop_fields, NULL, NULL);
#undef T

#define T struct cl_cmd_bodies
static void enc_bodies(struct enc *e, const struct wire_field *f, const void *st)
{
	const T *b = st;
	if (b->packed) /* encoded (and checked) once by cl_wire_pack_bodies, for every agent */
		cli_wire_enc_chk(e, e->pk.callback(e->pk.data, b->packed, b->packed_len));
	else
		cli_wire_enc_array_of(e, f->name, &cli_wire_body_table, b->bodies,
				      sizeof(*b->bodies), b->n_bodies, CL_WIRE_MAX_BODIES);
}

static int dec_bodies(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		      void *st)
{
	T *b = st;
	return cli_wire_dec_array_of(d, f->name, &cli_wire_body_table, v, CL_WIRE_MAX_BODIES,
				     sizeof(*b->bodies), (void **)&b->bodies, &b->n_bodies);
}

static const struct wire_field bodies_fields[] = {
	FL(WF_U64, T, offset, .req = true, .max = CL_WIRE_MAX_TOTAL_BODIES),
	FL(WF_CUSTOM, T, bodies, .enc = enc_bodies, .dec = dec_bodies),
};
static const struct wire_table bodies_table = WIRE_TABLE(bodies_fields, NULL, NULL);
#undef T

#define T struct cl_cmd_generate
static void generate_check_enc(struct enc *e, const void *st)
{
	const T *g = st;
	if (g->concurrency < 1 || g->max_attempts < 1)
		cli_wire_enc_fail(e, CL_EINVAL, "concurrency",
				  "and max_attempts must be at least 1");
}

static int generate_check_dec(struct wire_dec *d, const struct wire_table *tab,
			      const msgpack_object *const *v, void *st)
{
	T *g = st;
	if (!(g->rate_per_s >= 0) || !isfinite(g->rate_per_s))
		return cli_wire_bad(d, CL_EPROTO, "rate_per_s", "must be a finite number >= 0");
	if (g->concurrency < 1 || g->max_attempts < 1)
		return cli_wire_bad(d, CL_EPROTO,
				    g->concurrency < 1 ? "concurrency" : "max_attempts",
				    "must be at least 1");
	return 0;
}

static const struct wire_field generate_fields[] = {
	FL(WF_MAP, T, target, .req = true, .sub = &cli_wire_target_table),
	FL(WF_U32, T, concurrency, .req = true),
	FL(WF_U32, T, max_attempts, .req = true),
	FL(WF_I64, T, request_timeout_us, .req = true, .min = 0),
	FL(WF_I64, T, backoff_initial_us, .req = true, .min = 0),
	FL(WF_I64, T, backoff_max_us, .req = true, .min = 0),
	FL(WF_DBL, T, rate_per_s),
};
static const struct wire_table generate_table =
    WIRE_TABLE(generate_fields, generate_check_enc, generate_check_dec);
#undef T

#define T struct cl_gen_item
static const struct wire_field item_fields[] = {
	FL(WF_STR, T, id, .req = true, .cap = CL_WIRE_MAX_ID, .text = WSTR_NAME),
	FL(WF_STR, T, body, .req = true, .cap = CL_WIRE_MAX_BODY, .text = WSTR_TEXT,
	   .has_len = true, .len_off = offsetof(T, body_len)),
};
static const struct wire_table item_table = WIRE_TABLE(item_fields, NULL, NULL);
#undef T

#define T struct cl_cmd_lease
static const struct wire_field lease_fields[] = {
	FL(WF_ARRAY, T, items, .req = true, .n_off = offsetof(T, n_items),
	   .max_n = CL_WIRE_MAX_ITEMS, .elem = sizeof(struct cl_gen_item), .sub = &item_table),
};
static const struct wire_table lease_table = WIRE_TABLE(lease_fields, NULL, NULL);
#undef T

/* The arguments of a command; NULL for those without (NOOP, ABORT, QUIT). */
const struct wire_table *cli_wire_args_table(enum cl_cmd c)
{
	switch (c) {
	case CL_CMD_PROBE:
		return &probe_table;
	case CL_CMD_WARMUP:
		return &warmup_table;
	case CL_CMD_PREPARE:
		return &prepare_table;
	case CL_CMD_START_AT:
		return &start_at_table;
	case CL_CMD_STOP:
		return &stop_table;
	case CL_CMD_BODIES:
		return &bodies_table;
	case CL_CMD_GENERATE:
		return &generate_table;
	case CL_CMD_LEASE:
		return &lease_table;
	default:
		return NULL;
	}
}
