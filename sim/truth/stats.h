/* chatload-sim's own timing statistics: how late each chunk was written against its
 * schedule, summarised at exit (--stats-file) for the benchmark and for people. */
#ifndef CHATLOAD_SIM_STATS_H
#define CHATLOAD_SIM_STATS_H

#include "chatload/err.h"

#include <stdint.h>

#define CL_SIM_LATE_FINE   100000 /* 1 µs buckets up to 100 ms ... */
#define CL_SIM_LATE_COARSE 100000 /* ... then 1 ms buckets up to 100 s; later ones overflow */

struct cl_sim_stats {
	uint64_t requests;    /* chat requests accepted */
	uint64_t rejected;    /* chat requests answered with an error status */
	uint64_t completed;   /* responses finished */
	uint64_t client_gone; /* clients that vanished mid-response */
	uint64_t cut;         /* responses cut at shutdown */
	uint64_t chunks;      /* token-bearing chunks written */
	int64_t spin_us;      /* spent waiting on the clock for a deadline < 20 µs away */
	uint64_t late_n;
	uint64_t late_over; /* lateness beyond the buckets */
	int64_t late_max_us;
	int64_t late_max_tick_us; /* max since the last periodic debug line */
	double late_sum_us;
	uint64_t late[CL_SIM_LATE_FINE + CL_SIM_LATE_COARSE];
};

/* Records that a write due at scheduled was issued at actual. Never allocates. */
void cl_sim_stats_late(struct cl_sim_stats *s, int64_t scheduled_us, int64_t actual_us);

/* Zeroes the chunk count and the lateness histogram (request counters stay). */
void cl_sim_stats_reset_chunks(struct cl_sim_stats *s);

/* Lateness at percentile p (0..100) in µs (1 µs resolution below 100 ms, 1 ms above);
 * the max when p falls in the overflow. */
int64_t cl_sim_stats_percentile(const struct cl_sim_stats *s, double p);

/* Writes the summary as one JSON object to path (temp + rename).  CL_EIO with err. */
int cl_sim_stats_write(const struct cl_sim_stats *s, const char *path, struct cl_err *err);

#endif
