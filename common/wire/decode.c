/* The wire decoder: hostile bytes -> pre-validated (check.c) -> msgpack-c -> the fields of the
 * envelope and of the message's type, each by its table (plans.c, commands.c, messages.c) ->
 * cl_msg. */
#include "chatload/wire.h"

#include "internal.h"

#include <string.h>

static int decode(struct wire_dec *d, const msgpack_object *top, struct cl_msg *m)
{
	if (top->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(d->err, CL_EPROTO, "message is %s, not a map",
				  cli_mpk_type_word(top));
	/* The envelope first (its proto before anything: a later version may change anything
	 * else), then the type's own fields from the same map. */
	int rc = cli_wire_dec_table(d, &cli_wire_envelope, top, m);
	if (rc)
		return rc;
	const struct wire_table *body = cli_wire_msg_table(m->type);
	return body ? cli_wire_dec_table(d, body, top, &m->hello) : 0;
}

int cl_wire_decode(const void *buf, size_t len, struct cl_msg *out, struct cl_err *err)
{
	if (!out)
		return cl_err_set(err, CL_EINVAL, "cannot decode: no message");
	memset(out, 0, sizeof(*out));
	out->owned = true;
	msgpack_unpacked up;
	msgpack_unpacked_init(&up); /* allocates nothing until msgpack_unpack_next */
	int rc = cl_wire_check(buf, len, NULL, err);
	if (rc)
		goto out;

	size_t off = 0;
	msgpack_unpack_return ur = msgpack_unpack_next(&up, buf, len, &off);
	if (ur != MSGPACK_UNPACK_SUCCESS || off != len) {
		/* Only reachable if msgpack-c is stricter than the pre-validator (or out of
		 * memory); either way the message is refused. */
		rc = ur == MSGPACK_UNPACK_NOMEM_ERROR
			 ? cl_err_set(err, CL_ENOMEM, "out of memory unpacking message")
			 : cl_err_set(err, CL_EPARSE, "malformed msgpack (unpack returned %d)",
				      (int)ur);
		goto out;
	}
	struct wire_dec d = { .err = err };
	rc = decode(&d, &up.data, out);
out:
	msgpack_unpacked_destroy(&up);
	if (rc) {
		/* Keep the plain envelope values for the caller's log line. */
		uint32_t proto = out->proto;
		enum cl_msg_type type = out->type;
		uint32_t agent = out->agent;
		uint64_t seq = out->seq;
		cl_msg_free(out);
		out->proto = proto;
		out->type = type;
		out->agent = agent;
		out->seq = seq;
	}
	return rc;
}
