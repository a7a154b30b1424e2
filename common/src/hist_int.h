/* What hist.c shares with hist_wire.c and nothing else. */
#ifndef CHATLOAD_HIST_INT_H
#define CHATLOAD_HIST_INT_H

#include "chatload/hist.h"

/* Widens h's occupied range to take counts[index] (which the caller makes non-zero). */
void cli_hist_occupy(struct cl_hist *h, int32_t index);

#endif
