/* The field tables of the envelope and of each message (docs/protocol.md), and the custom
 * codecs of their parts that are not one plain value (the version, a REPORT's stamped time,
 * stalls, sources, metrics, an answer's error classes).  Each field is written here once;
 * table.c encodes, decodes and checks it. */
#include "chatload/wire.h"

#include "chatload/metrics_wire.h"

#include "common/src/metrics_int.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- Messages --------------------------------------------------------------------------- */

#define T struct cl_msg
static void enc_proto(struct enc *e, const struct wire_field *f, const void *st)
{
	if (!e->rc)
		cli_wire_enc_chk(e, msgpack_pack_uint64(&e->pk, CL_PROTO_VERSION));
}

/* The version first: a later version may change anything else. */
static int dec_proto(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		     void *st)
{
	T *m = st;
	uint64_t proto = 0;
	int rc = cli_wire_get_u64(d, f->name, v, true, UINT32_MAX, &proto);
	if (rc)
		return rc;
	m->proto = (uint32_t)proto;
	if (proto != CL_PROTO_VERSION)
		return cl_err_set(
		    d->err, CL_EVERSION,
		    "protocol version %llu is not supported (this side speaks version %d)",
		    (unsigned long long)proto, CL_PROTO_VERSION);
	return 0;
}

static void enc_type(struct enc *e, const struct wire_field *f, const void *st)
{
	const char *s = cl_msg_type_name((int)((const T *)st)->type);
	cli_wire_enc_str_val(e, f->name, s, strlen(s), 64, WSTR_NAME);
}

static int dec_type(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		    void *st)
{
	T *m = st;
	if (!v)
		return cli_wire_missing(d, f->name);
	int rc = cli_wire_check_str(d, f->name, v, 63, WSTR_NAME);
	if (rc)
		return rc;
	char tname[64];
	memcpy(tname, v->via.str.ptr, v->via.str.size);
	tname[v->via.str.size] = '\0';
	int type = cl_msg_type_from_name(tname);
	if (type <= CL_MSG_NONE)
		return cl_err_set(d->err, CL_EPROTO, "unknown message type '%s'", tname);
	m->type = (enum cl_msg_type)type;
	d->what = cl_msg_type_name(type);
	return 0;
}

static const struct wire_field envelope_fields[] = {
	FL(WF_CUSTOM, T, proto, .enc = enc_proto, .dec = dec_proto),
	FL(WF_CUSTOM, T, type, .enc = enc_type, .dec = dec_type),
	FL(WF_STR, T, run, .req = true, .cap = CL_WIRE_MAX_RUN, .text = WSTR_NAME),
	FL(WF_U32, T, agent, .req = true),
	FL(WF_U64, T, seq, .req = true),
};
const struct wire_table cli_wire_envelope = WIRE_TABLE(envelope_fields, NULL, NULL);
#undef T

#define T struct cl_msg_hello
static const struct wire_field hello_fields[] = {
	FL(WF_STR, T, version, .req = true, .cap = CL_WIRE_MAX_VERSION, .text = WSTR_NAME),
	FL(WF_STR, T, host, .req = true, .cap = CL_WIRE_MAX_HOST, .text = WSTR_NAME),
	FL(WF_U32, T, workers, .req = true),
	FL(WF_STRS, T, caps, .req = true, .n_off = offsetof(T, n_caps), .max_n = CL_WIRE_MAX_CAPS,
	   .cap = CL_WIRE_MAX_CAP, .text = WSTR_NAME),
	FL(WF_STR, T, token, .req = true, .cap = CL_WIRE_MAX_TOKEN, .text = WSTR_TEXT),
	FL(WF_I64, T, pid, .req = true, .min = INT64_MIN),
	FL(WF_I64, T, t_send_us, .req = true, .min = INT64_MIN),
};
static const struct wire_table hello_table = WIRE_TABLE(hello_fields, NULL, NULL);
#undef T

#define T struct cl_msg_poll
/* The clock estimate: clock_rtt_us 0 means none yet, then neither is sent. */
static bool has_clock(const void *st)
{
	return ((const T *)st)->clock_rtt_us > 0;
}

static const struct wire_field poll_fields[] = {
	FL(WF_ENUM, T, state, .req = true, .names = cl_agent_state_name,
	   .lookup = cl_agent_state_from_name),
	FL(WF_U64, T, applied_seq, .req = true),
	FL(WF_DBL, T, cpu_pct, .req = true),
	FL(WF_I64, T, rss_bytes, .req = true, .min = 0),
	FL(WF_I64, T, inflight, .req = true, .min = 0),
	FL(WF_I64, T, loop_lag_us, .req = true, .min = 0),
	FL(WF_I64, T, t_send_us, .req = true, .min = INT64_MIN),
	FL(WF_STR, T, error, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_ERROR, .text = WSTR_TEXT),
	FL(WF_I64, T, clock_offset_us, .send = SEND_IF, .send_if = has_clock, .min = INT64_MIN),
	FL(WF_I64, T, clock_rtt_us, .send = SEND_IF, .send_if = has_clock, .min = 0),
};
static const struct wire_table poll_table = WIRE_TABLE(poll_fields, NULL, NULL);
#undef T

/* REPORT.stalls: {start_us, length_us > 0} each. */
static const struct wire_field stall_fields[] = {
	FL(WF_I64, struct cl_stall, start_us, .req = true, .min = INT64_MIN),
	FL(WF_I64, struct cl_stall, length_us, .req = true, .min = 1),
};
static const struct wire_table stall_table = WIRE_TABLE(stall_fields, NULL, NULL);

/* REPORT.sources: {address, connections} each (an entry of cl_source_conns.e). */
#define SRC_AT(m) (offsetof(struct cl_source_conns, e[0].m) - offsetof(struct cl_source_conns, e))
static const struct wire_field source_fields[] = {
	{ .name = "address",
	  .kind = WF_FSTR,
	  .off = SRC_AT(address),
	  .size = CL_SRCADDR_TEXTMAX,
	  .req = true,
	  .text = WSTR_NAME },
	{ .name = "connections",
	  .kind = WF_U64,
	  .off = SRC_AT(connections),
	  .size = sizeof(uint64_t),
	  .req = true },
};
static const struct wire_table source_table = WIRE_TABLE(source_fields, NULL, NULL);

#define T struct cl_msg_report
static bool is_probe(const void *st)
{
	return ((const T *)st)->kind == CL_REPORT_PROBE;
}
static bool has_stalls(const void *st)
{
	return ((const T *)st)->stalls.n != 0;
}

static void enc_t_send(struct enc *e, const struct wire_field *f, const void *st)
{
	const T *r = st;
	if (e->stamp) {
		/* 0xd3 and 8 bytes, whatever the value: cl_wire_restamp rewrites them */
		e->t_send_at = e->out->size + 1 - e->start;
		if (!e->rc)
			cli_wire_enc_chk(e, msgpack_pack_fix_int64(&e->pk, r->t_send_us));
	} else if (!e->rc) {
		cli_wire_enc_chk(e, msgpack_pack_int64(&e->pk, r->t_send_us));
	}
}

static int dec_t_send(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		      void *st)
{
	return cli_wire_get_i64(d, f->name, v, true, INT64_MIN, &((T *)st)->t_send_us);
}

static void enc_stalls(struct enc *e, const struct wire_field *f, const void *st)
{
	const struct cl_stall_list *l = &((const T *)st)->stalls;
	cli_wire_enc_array_of(e, f->name, &stall_table, l->ep, sizeof(l->ep[0]), l->n,
			      CL_STALLS_MAX);
}

/* Absent: none.  Added, not copied: whatever order or overlap a peer sends, the list keeps
 * its invariant (sorted, disjoint). */
static int dec_stalls(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		      void *st)
{
	struct cl_stall_list *l = &((T *)st)->stalls;
	if (!v)
		return 0;
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, f->name, "an array", v);
	if (v->via.array.size > CL_STALLS_MAX)
		return cli_wire_bad(d, CL_ETOOBIG, f->name, "has too many entries (%u, max %d)",
				    v->via.array.size, CL_STALLS_MAX);
	for (uint32_t i = 0; i < v->via.array.size; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "%s[%u]", f->name, i);
		struct cl_stall s = { 0 };
		int rc = cli_wire_dec_map(d, nm, &stall_table, &v->via.array.ptr[i], true, &s);
		if (rc)
			return rc;
		cl_stall_list_add(l, s.start_us, s.length_us);
	}
	return 0;
}

static void enc_sources(struct enc *e, const struct wire_field *f, const void *st)
{
	const struct cl_source_conns *sc = ((const T *)st)->sources;
	cli_wire_enc_array_of(e, f->name, &source_table, sc->e, sizeof(sc->e[0]), sc->n,
			      CL_SRCADDR_MAX);
}

/* Absent: none. */
static int dec_sources(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		       void *st)
{
	if (!v)
		return 0;
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, f->name, "an array", v);
	if (v->via.array.size > CL_SRCADDR_MAX)
		return cli_wire_bad(d, CL_ETOOBIG, f->name, "has too many entries (%u, max %d)",
				    v->via.array.size, CL_SRCADDR_MAX);
	struct cl_source_conns *sc = calloc(1, sizeof(*sc));
	if (!sc)
		return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding sources");
	((T *)st)->sources = sc;
	for (uint32_t i = 0; i < v->via.array.size; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "%s[%u]", f->name, i);
		int rc =
		    cli_wire_dec_map(d, nm, &source_table, &v->via.array.ptr[i], true, &sc->e[i]);
		if (rc)
			return rc;
		sc->n = i + 1;
	}
	return 0;
}

static void enc_metrics(struct enc *e, const struct wire_field *f, const void *st)
{
	if (e->rc)
		return;
	int rc = cl_metrics_pack(((const T *)st)->metrics, &e->pk);
	if (rc)
		e->rc = cl_err_set(e->err, rc, "cannot encode %s: field 'metrics': %s", e->what,
				   cl_strerror(rc));
}

/* Last in the table: the record is a fixed few MiB, allocated only once all else passed. */
static int dec_metrics(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		       void *st)
{
	T *r = st;
	int rc = cli_wire_need_map(d, f->name, v, !is_probe(r));
	if (rc || !v)
		return rc;
	if (!(r->metrics = cli_metrics_take()))
		return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding metrics");
	struct cl_err merr = { 0 };
	rc = cl_metrics_unpack_add(r->metrics, v, &merr);
	if (rc)
		return cli_wire_bad(d, rc == CL_ENOMEM ? CL_ENOMEM : CL_EPROTO, f->name,
				    "is invalid: %s", merr.msg[0] ? merr.msg : cl_strerror(rc));
	return 0;
}

static void report_check_enc(struct enc *e, const void *st)
{
	const T *r = st;
	if (r->kind == CL_REPORT_PROBE && !r->readiness)
		cli_wire_enc_fail(e, CL_EINVAL, "readiness", "is required for a probe report");
	if (r->kind != CL_REPORT_PROBE && !r->metrics)
		cli_wire_enc_fail(e, CL_EINVAL, "metrics", "is required for a %s report",
				  cl_report_kind_name((int)r->kind));
}

static const struct wire_field report_fields[] = {
	FL(WF_ENUM, T, kind, .req = true, .names = cl_report_kind_name,
	   .lookup = cl_report_kind_from_name),
	FL(WF_U32, T, stage, .req = true),
	FL(WF_U32, T, interval, .req = true),
	FL(WF_I64, T, span_us, .min = 0),
	FL(WF_CUSTOM, T, t_send_us, .enc = enc_t_send, .dec = dec_t_send),
	FL(WF_STR, T, error, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_ERROR, .text = WSTR_TEXT),
	FL(WF_I64, T, start_skew_us, .send = SEND_NONZERO, .min = 0),
	FL(WF_CUSTOM, T, stalls, .send = SEND_IF, .send_if = has_stalls, .enc = enc_stalls,
	   .dec = dec_stalls),
	FLD(WF_U32, T, "stalls_dropped", stalls.dropped, .send = SEND_NONZERO),
	FL(WF_CUSTOM, T, sources, .send = SEND_NONZERO, .enc = enc_sources, .dec = dec_sources),
	FL(WF_MAP, T, readiness, .req_if = is_probe, .send = SEND_NONZERO, .ptr = true,
	   .elem = sizeof(struct cl_readiness_result), .sub = &cli_wire_readiness_table),
	FL(WF_CUSTOM, T, metrics, .send = SEND_NONZERO, .enc = enc_metrics, .dec = dec_metrics),
};
static const struct wire_table report_table = WIRE_TABLE(report_fields, report_check_enc, NULL);
#undef T

#define T struct cl_msg_welcome
static const struct wire_field welcome_fields[] = {
	FL(WF_U32, T, agent_id, .req = true),
	FL(WF_I64, T, report_interval_us, .req = true, .min = 1),
	FL(WF_I64, T, t_coord_us, .req = true, .min = INT64_MIN),
	FL(WF_I64, T, t_coord_recv_us, .min = INT64_MIN),
};
static const struct wire_table welcome_table = WIRE_TABLE(welcome_fields, NULL, NULL);
#undef T

#define T struct cl_msg_refuse
static const struct wire_field refuse_fields[] = {
	FL(WF_STR, T, reason, .req = true, .cap = CL_WIRE_MAX_REASON, .text = WSTR_TEXT),
};
static const struct wire_table refuse_table = WIRE_TABLE(refuse_fields, NULL, NULL);
#undef T

#define T struct cl_msg_cmd
static bool has_args(const void *st)
{
	return cli_wire_args_table(((const T *)st)->cmd) != NULL;
}

static void enc_cmd(struct enc *e, const struct wire_field *f, const void *st)
{
	int c = (int)((const T *)st)->cmd;
	const char *s = cl_cmd_name(c);
	if (!s)
		cli_wire_enc_fail(e, CL_EINVAL, f->name, "has an unknown value (%d)", c);
	cli_wire_enc_str_val(e, f->name, s ? s : "", s ? strlen(s) : 0, 64, WSTR_NAME);
}

/* Set before the arguments are decoded, so cl_msg_free knows what to free. */
static int dec_cmd(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		   void *st)
{
	if (!v)
		return cli_wire_missing(d, f->name);
	int rc = cli_wire_check_str(d, f->name, v, 63, WSTR_NAME);
	if (rc)
		return rc;
	char name[64];
	memcpy(name, v->via.str.ptr, v->via.str.size);
	name[v->via.str.size] = '\0';
	int cmd = cl_cmd_from_name(name);
	if (cmd < 0)
		return cli_wire_bad(d, CL_EPROTO, f->name, "has unknown command '%s'", name);
	((T *)st)->cmd = (enum cl_cmd)cmd;
	return 0;
}

static void enc_args(struct enc *e, const struct wire_field *f, const void *st)
{
	const T *c = st;
	size_t old = wire_path_push(&e->path, f->name);
	cli_wire_enc_table(e, cli_wire_args_table(c->cmd), &c->probe);
	wire_path_pop(&e->path, old);
}

static int dec_args(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		    void *st)
{
	T *c = st;
	const struct wire_table *t = cli_wire_args_table(c->cmd);
	if (!t)
		return 0; /* an `args` a later version adds to these is ignored */
	return cli_wire_dec_map(d, f->name, t, v, true, &c->probe);
}

static const struct wire_field cmd_fields[] = {
	FL(WF_CUSTOM, T, cmd, .enc = enc_cmd, .dec = dec_cmd),
	FL(WF_U64, T, cmd_seq, .req = true),
	FL(WF_I64, T, t_coord_us, .req = true, .min = INT64_MIN),
	FL(WF_I64, T, t_coord_recv_us, .min = INT64_MIN),
	FLD(WF_CUSTOM, T, "args", probe, .send = SEND_IF, .send_if = has_args, .enc = enc_args,
	    .dec = dec_args),
};
static const struct wire_table cmd_table = WIRE_TABLE(cmd_fields, NULL, NULL);
#undef T

#define T struct cl_gen_answer
static bool has_ttfc(const void *st)
{
	return ((const T *)st)->ttfc_us > 0;
}

static bool has_retries(const void *st)
{
	for (size_t k = 0; k < CL_GEN_ERR_CLASSES; k++)
		if (((const T *)st)->retries[k])
			return true;
	return false;
}

/* An answer's error class: the name of an error counter (cl_ctr_name). */
static int err_class(struct wire_dec *d, const char *name, const msgpack_object *v, int32_t *out)
{
	char q[64];
	int idx = cli_mpk_str_index(v, cl_ctr_name, CL_CTR__COUNT);
	if (idx < CL_CTR_FIRST_ERROR || idx > CL_CTR_LAST_ERROR)
		return cli_wire_bad(d, CL_EPROTO, name, "is not an error class (%s)",
				    cli_mpk_quote(v, q, sizeof(q)));
	*out = idx;
	return 0;
}

static void enc_class(struct enc *e, const struct wire_field *f, const void *st)
{
	const char *s = cl_ctr_name(((const T *)st)->err_class);
	cli_wire_enc_str_val(e, f->name, s ? s : "", s ? strlen(s) : 0, CL_WIRE_MAX_NAME,
			     WSTR_NAME);
}

static int dec_class(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		     void *st)
{
	return v ? err_class(d, f->name, v, &((T *)st)->err_class) : 0;
}

/* By the counter's name, as a REPORT's counters: the enum's order is no part of the
 * protocol. */
static void enc_retries(struct enc *e, const struct wire_field *f, const void *st)
{
	const T *a = st;
	size_t n = 0;
	for (size_t k = 0; k < CL_GEN_ERR_CLASSES; k++)
		n += a->retries[k] != 0;
	cli_wire_enc_map(e, n);
	for (size_t k = 0; k < CL_GEN_ERR_CLASSES && !e->rc; k++) {
		if (!a->retries[k])
			continue;
		cli_wire_enc_key(e, cl_ctr_name(CL_CTR_FIRST_ERROR + (int)k));
		if (!e->rc)
			cli_wire_enc_chk(e, msgpack_pack_uint64(&e->pk, a->retries[k]));
	}
}

/* A map of error class to count, whose sum is attempts - 1. */
static int dec_retries(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		       void *st)
{
	T *a = st;
	int rc = cli_wire_need_map(d, f->name, v, false);
	if (rc || !v)
		return rc;
	uint64_t sum = 0;
	for (uint32_t k = 0; k < v->via.map.size; k++) {
		int32_t c = CL_CTR_FIRST_ERROR;
		uint32_t n = 0;
		if ((rc = err_class(d, f->name, &v->via.map.ptr[k].key, &c)) ||
		    (rc = cli_wire_get_u32(d, f->name, &v->via.map.ptr[k].val, true, &n)))
			return rc;
		a->retries[c - CL_CTR_FIRST_ERROR] += n;
		sum += n;
	}
	if (sum >= a->attempts)
		return cli_wire_bad(d, CL_EPROTO, f->name,
				    "count %llu tries, more than attempts (%u) less the last",
				    (unsigned long long)sum, a->attempts);
	return 0;
}

static void answer_check_enc(struct enc *e, const void *st)
{
	const T *a = st;
	uint64_t sum = 0;
	for (size_t k = 0; k < CL_GEN_ERR_CLASSES; k++)
		sum += a->retries[k];
	if (a->attempts >= 1 && sum >= a->attempts)
		cli_wire_enc_fail(e, CL_EINVAL, "retries",
				  "count more tries than attempts less the last");
	if (a->err_class && (a->err_class < CL_CTR_FIRST_ERROR || a->err_class > CL_CTR_LAST_ERROR))
		cli_wire_enc_fail(e, CL_EINVAL, "class", "is not an error class (%d)",
				  (int)a->err_class);
}

static const struct wire_field answer_fields[] = {
	FL(WF_STR, T, id, .req = true, .cap = CL_WIRE_MAX_ID, .text = WSTR_NAME),
	FL(WF_U32, T, attempts, .req = true, .umin = 1),
	FL(WF_U32, T, status, .req = true),
	FL(WF_I64, T, ttft_us, .req = true, .min = 0),
	FL(WF_I64, T, total_us, .req = true, .min = 0),
	FL(WF_U32, T, output_tokens, .req = true),
	FL(WF_BOOL, T, retryable, .req = true),
	FL(WF_STR, T, request_id, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_NAME, .text = WSTR_NAME),
	FL(WF_STR, T, body, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_ANSWER, .text = WSTR_TEXT),
	FL(WF_STR, T, error, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_ERROR, .text = WSTR_TEXT),
	/* optional since the first version */
	FL(WF_I64, T, ttfc_us, .send = SEND_IF, .send_if = has_ttfc, .min = 0),
	FL(WF_U32, T, prompt_tokens, .send = SEND_NONZERO),
	FLD(WF_CUSTOM, T, "class", err_class, .send = SEND_NONZERO, .enc = enc_class,
	    .dec = dec_class),
	FL(WF_CUSTOM, T, retries, .send = SEND_IF, .send_if = has_retries, .enc = enc_retries,
	   .dec = dec_retries),
};
static const struct wire_table answer_table = WIRE_TABLE(answer_fields, answer_check_enc, NULL);
#undef T

#define T struct cl_msg_answers
static const struct wire_field answers_fields[] = {
	FL(WF_I64, T, t_send_us, .req = true, .min = INT64_MIN),
	FL(WF_ARRAY, T, answers, .req = true, .n_off = offsetof(T, n_answers),
	   .max_n = CL_WIRE_MAX_ITEMS, .elem = sizeof(struct cl_gen_answer), .sub = &answer_table),
};
static const struct wire_table answers_table = WIRE_TABLE(answers_fields, NULL, NULL);
#undef T

#define T struct cl_req_record
/* A duration that may be unknown: -1, absent on the wire. */
#define OPT_DUR .send = SEND_NONNEG, .min = 0, .absent_neg1 = true
static const struct wire_field record_fields[] = {
	FL(WF_U32, T, stage, .req = true),
	FL(WF_FSTR, T, id, .req = true, .text = WSTR_NAME),
	FL(WF_BOOL, T, in_window, .req = true),
	FL(WF_I64, T, start_us, .req = true, .min = INT64_MIN),
	FL(WF_I64, T, ttft_us, OPT_DUR),
	FL(WF_I64, T, ttfc_us, OPT_DUR),
	FL(WF_I64, T, e2e_us, OPT_DUR),
	FL(WF_U32, T, chunks, .req = true),
	FL(WF_I64, T, last_token_us, OPT_DUR),
	FL(WF_U32, T, http_status, .req = true),
	FL(WF_U64, T, prompt_tokens, .req = true),
	FL(WF_U64, T, output_tokens, .req = true),
	FL(WF_U64, T, reasoning_tokens, .req = true),
	FL(WF_FSTR, T, status, .req = true, .text = WSTR_NAME),
	FL(WF_FSTR, T, error, .send = SEND_NONZERO, .text = WSTR_TEXT),
	FL(WF_I64, T, sent_us, OPT_DUR),
	FL(WF_I64, T, ttfb_us, OPT_DUR),
	FLD(WF_I64, T, "dns_us", conn.dns_us, OPT_DUR),
	FLD(WF_I64, T, "connect_us", conn.connect_us, OPT_DUR),
	FLD(WF_I64, T, "tls_us", conn.tls_us, OPT_DUR),
	FLD(WF_I64, T, "send_us", conn.send_us, OPT_DUR),
	FLD(WF_I64, T, "wait_us", conn.wait_us, OPT_DUR),
	FL(WF_U32, T, connects, .send = SEND_NONZERO),
};
static const struct wire_table record_table = WIRE_TABLE(record_fields, NULL, NULL);
#undef OPT_DUR
#undef T

#define T struct cl_msg_requests
static const struct wire_field requests_fields[] = {
	FL(WF_I64, T, t_send_us, .req = true, .min = INT64_MIN),
	FL(WF_U64, T, dropped, .req = true),
	FL(WF_ARRAY, T, records, .req = true, .n_off = offsetof(T, n_records),
	   .max_n = CL_WIRE_MAX_ITEMS, .elem = sizeof(struct cl_req_record), .sub = &record_table),
};
static const struct wire_table requests_table = WIRE_TABLE(requests_fields, NULL, NULL);
#undef T

const struct wire_table *cli_wire_msg_table(enum cl_msg_type type)
{
	switch (type) {
	case CL_MSG_HELLO:
		return &hello_table;
	case CL_MSG_POLL:
		return &poll_table;
	case CL_MSG_REPORT:
		return &report_table;
	case CL_MSG_WELCOME:
		return &welcome_table;
	case CL_MSG_REFUSE:
		return &refuse_table;
	case CL_MSG_CMD:
		return &cmd_table;
	case CL_MSG_ANSWERS:
		return &answers_table;
	case CL_MSG_REQUESTS:
		return &requests_table;
	default:
		return NULL; /* ACK: the envelope is all */
	}
}
