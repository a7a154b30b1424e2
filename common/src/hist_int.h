/* What hist.c shares with hist_wire.c and nothing else. */
#ifndef CHATLOAD_HIST_INT_H
#define CHATLOAD_HIST_INT_H

#include "chatload/hist.h"

/* Widens h's occupied range to take counts[index] (which the caller makes non-zero).
 * Inline: cl_hist_record, on the agent's per-chunk path, calls it. */
static inline void cli_hist_occupy(struct cl_hist *h, int32_t index)
{
	if (index < h->nz_lo)
		h->nz_lo = index;
	if (index >= h->nz_hi)
		h->nz_hi = index + 1;
}

#endif
