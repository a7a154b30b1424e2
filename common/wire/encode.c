/* The wire encoder: struct cl_msg -> one msgpack map, field by field from the tables
 * (messages.c and those it names), then checked against the decoder's rules (cl_wire_check). */
#include "chatload/wire.h"

#include "internal.h"

#include <string.h>

static int encode(const struct cl_msg *m, msgpack_sbuffer *out, size_t *t_send_at,
		  struct cl_err *err)
{
	if (!m || !out)
		return cl_err_set(err, CL_EINVAL, "cannot encode: no message or no buffer");
	const char *tname = cl_msg_type_name((int)m->type);
	if (!tname)
		return cl_err_set(err, CL_EINVAL, "cannot encode message of unknown type %d",
				  (int)m->type);
	size_t start = out->size;
	struct enc e = {
		.err = err, .what = tname, .stamp = t_send_at != NULL, .out = out, .start = start
	};
	msgpack_packer_init(&e.pk, out, msgpack_sbuffer_write);

	/* One map: the envelope's fields, then the type's own (every union member starts where
	 * the first does). */
	const struct wire_table *body = cli_wire_msg_table(m->type);
	const void *own = &m->hello;
	if (body && body->check_enc)
		body->check_enc(&e, own);
	cli_wire_enc_map(&e, cli_wire_enc_count(&cli_wire_envelope, m) +
				 (body ? cli_wire_enc_count(body, own) : 0));
	cli_wire_enc_fields(&e, &cli_wire_envelope, m);
	if (body)
		cli_wire_enc_fields(&e, body, own);
	if (!e.rc) {
		/* The field counts above and the caps must agree with what was written; the
		 * pre-validator is cheap (one pass, no allocation) and proves it. */
		size_t n = out->size - start;
		struct cl_err cerr = { 0 };
		if (n > CL_WIRE_MAX_MSG)
			e.rc =
			    cl_err_set(err, CL_ETOOBIG,
				       "cannot encode %s: %zu bytes is larger than the %u allowed",
				       tname, n, CL_WIRE_MAX_MSG);
		else if (cl_wire_check(out->data + start, n, NULL, &cerr))
			e.rc = cl_err_set(err, cerr.code, "cannot encode %s: %s", tname, cerr.msg);
	}
	if (e.rc)
		out->size = start;
	else if (t_send_at)
		*t_send_at = e.t_send_at;
	return e.rc;
}

int cl_wire_encode(const struct cl_msg *m, msgpack_sbuffer *out, struct cl_err *err)
{
	return encode(m, out, NULL, err);
}

int cl_wire_encode_report(const struct cl_msg *m, msgpack_sbuffer *out, size_t *t_send_at,
			  struct cl_err *err)
{
	if (!m || m->type != CL_MSG_REPORT || !t_send_at)
		return cl_err_set(err, CL_EINVAL, "cannot encode: not a REPORT");
	return encode(m, out, t_send_at, err);
}

void cl_wire_restamp(void *msg, size_t t_send_at, int64_t t_send_us)
{
	unsigned char *p = (unsigned char *)msg + t_send_at;
	uint64_t v = (uint64_t)t_send_us;
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)(v & 0xff); /* msgpack is big-endian */
}

int cl_wire_pack_bodies(const struct cl_request_body *bodies, size_t n, msgpack_sbuffer *out,
			struct cl_err *err)
{
	size_t was = out->size;
	struct enc e = { .err = err, .what = "BODIES" };
	msgpack_packer_init(&e.pk, out, msgpack_sbuffer_write);
	cli_wire_enc_array_of(&e, "bodies", &cli_wire_body_table, bodies, sizeof(*bodies), n,
			      CL_WIRE_MAX_BODIES);
	if (!e.rc && out->size - was > CL_WIRE_MAX_MSG)
		cli_wire_enc_fail(&e, CL_ETOOBIG, "bodies",
				  "take %zu bytes, more than a message may (%u)", out->size - was,
				  (unsigned)CL_WIRE_MAX_MSG);
	if (e.rc)
		out->size = was;
	return e.rc;
}
