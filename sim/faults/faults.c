/* Fault decisions of chatload-sim (see faults.h). */
#include "faults.h"

#include "chatload/rng.h"

enum cl_sim_fault cl_sim_fault_pick(const struct cl_sim_config *cfg, uint64_t seq, uint64_t *rng)
{
	double u = cl_splitmix_frac(rng);
	for (size_t i = 0; i < cfg->n_schedule; i++)
		if (cfg->schedule[i].seq == seq)
			return cfg->schedule[i].fault;
	double edge = 0;
	for (int f = 1; f < CL_SIM_FAULT_COUNT; f++) {
		edge += cfg->fault_p[f];
		if (cfg->fault_p[f] > 0 && u < edge)
			return (enum cl_sim_fault)f;
	}
	return CL_SIM_FAULT_NONE;
}

static uint32_t clamp(int64_t tok, uint32_t planned)
{
	if (planned == 0 || tok < 0)
		return 0;
	return tok >= planned ? planned - 1 : (uint32_t)tok;
}

uint32_t cl_sim_fault_token(const struct cl_sim_config *cfg, uint32_t planned)
{
	return clamp(cfg->fault_at >= 0 ? cfg->fault_at : planned / 2, planned);
}

uint32_t cl_sim_fault_stall_token(const struct cl_sim_config *cfg, uint32_t planned)
{
	return clamp(cfg->stall_at, planned);
}
