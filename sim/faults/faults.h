/* chatload-sim's fault decisions: which fault (if any) a request gets, from --fault-schedule
 * or the seeded per-request random draw, and where in the stream it strikes. */
#ifndef CHATLOAD_SIM_FAULTS_H
#define CHATLOAD_SIM_FAULTS_H

#include "sim/config.h"

#include <stdint.h>

/*
 * The fault of request seq.  Always consumes exactly one draw from *rng (so the rest of the
 * request's random choices do not depend on the schedule); a schedule entry for seq wins
 * over the probabilities.  The probabilities are disjoint intervals of [0, 1): a request
 * gets at most one fault.
 */
enum cl_sim_fault cl_sim_fault_pick(const struct cl_sim_config *cfg, uint64_t seq, uint64_t *rng);

/* The token whose chunk a drop, malformed chunk or error chunk replaces or precedes:
 * --fault-at, else half the output; always inside [0, planned). */
uint32_t cl_sim_fault_token(const struct cl_sim_config *cfg, uint32_t planned);

/* The token whose chunk a stall delays: --stall-at clamped into [0, planned). */
uint32_t cl_sim_fault_stall_token(const struct cl_sim_config *cfg, uint32_t planned);

#endif
