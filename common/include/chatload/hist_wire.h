/* The histogram's msgpack form: a sparse encoding, and a hostile-input decoder that adds an
 * encoding into a histogram (kept apart from the core, as HdrHistogram_c keeps its log format). */
#ifndef CHATLOAD_HIST_WIRE_H
#define CHATLOAD_HIST_WIRE_H

#include "chatload/err.h"
#include "chatload/hist.h"

#include <msgpack.h>

/*
 * Sparse msgpack encoding: map {cfg:[lowest,highest,sigfigs], n: total, o: overflow,
 * min, max, sum, b:[idx0, count0, idx1-idx0, count1, ...]} (index deltas keep it small).
 * Returns 0, or CL_ENOMEM when the packer's buffer cannot grow.
 */
CL_MUST_CHECK int cl_hist_pack(const struct cl_hist *h, msgpack_packer *pk);
/*
 * Decodes obj and ADDS it into h (which must be initialised; an empty h is a plain decode).
 * Rejects (CL_EPARSE, message in err) a config different from h's, an index out of range
 * or not ascending, a count total that disagrees with n, wrong types.  Touches h only after
 * the whole encoding validated.
 */
CL_MUST_CHECK int cl_hist_unpack_add(struct cl_hist *h, const msgpack_object *obj,
				     struct cl_err *err);
/* Runs every check cl_hist_unpack_add makes, without touching h: lets a caller validate a
 * whole message before adding any of it (cl_metrics_unpack_add does). */
CL_MUST_CHECK int cl_hist_unpack_check(const struct cl_hist *h, const msgpack_object *obj,
				       struct cl_err *err);

#endif
