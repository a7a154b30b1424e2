/* The measurement record's msgpack form: what a REPORT carries, encoded and decoded (hostile
 * input) apart from the record itself. */
#ifndef CHATLOAD_METRICS_WIRE_H
#define CHATLOAD_METRICS_WIRE_H

#include "chatload/err.h"
#include "chatload/metrics.h"

#include <msgpack.h>

/* Encodes m as a msgpack map {lat:{name:hist}, cnt:{...}, ctr:{name:n}, health:{...},
 * errs:[...]}, omitting empty histograms and zero counters. */
CL_MUST_CHECK int cl_metrics_pack(const struct cl_metrics *m, msgpack_packer *pk);
/* Decodes into an initialised m (values added to what m holds, so decoding a delta into an
 * accumulator merges it).  Hostile input: every type and index is checked; unknown metric
 * names are rejected.  All or nothing: the whole record is validated before any of it is
 * added, so on error m is unchanged; fills err. */
CL_MUST_CHECK int cl_metrics_unpack_add(struct cl_metrics *m, const msgpack_object *obj,
					struct cl_err *err);

#endif
