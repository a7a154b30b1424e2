/* What every loaded scenario guarantees the rest of chatload, checked by the scenario fuzz
 * targets (fuzz_scenario, fuzz_set) on each input the loader accepts. */
#ifndef CHATLOAD_FUZZ_SCENARIO_INVARIANTS_H
#define CHATLOAD_FUZZ_SCENARIO_INVARIANTS_H

#include "coordinator/scenario/scenario.h"

#include <stdlib.h>

/* Aborts (a finding) when s breaks one of the invariants. */
static inline void fuzz_check_scenario(const struct cl_scenario *s)
{
	if (!s->name || s->n_stages == 0 || (!s->target.url) == !s->target.simulator)
		abort();
	for (size_t i = 0; i < s->n_stages; i++) {
		const struct cl_scn_stage *st = &s->stages[i];
		if (!st->name || (!st->duration_us) == (!st->requests))
			abort();
		if (st->search) { /* probes come later: the search's own bounds hold */
			const struct cl_scn_search *q = st->search;
			if (!(q->from > 0) || !(q->max >= q->from) || !(q->tolerance > 0) ||
			    q->probe_duration_us <= 0 || !q->n_slos)
				abort();
			continue;
		}
		if (st->mode == CL_MODE_CONCURRENCY && st->concurrency == 0)
			abort();
		if (st->mode == CL_MODE_RATE && !(st->rate_per_s > 0))
			abort();
	}
}

#endif
