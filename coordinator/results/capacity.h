/* A capacity search's decisions, apart from the run: which level to probe next (doubling,
 * then bisecting), when the answer is bracketed, the knee of the throughput curve, and the
 * servers and agents a planned load needs.  Pure functions on plain structs. */
#ifndef CHATLOAD_CAPACITY_H
#define CHATLOAD_CAPACITY_H

#include "coordinator/scenario/scenario.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Probes one search may run: doubling from 1 to 10^6 takes 21, bisecting down to 1 another
 * 20; far more than any real search, so reaching it is a bug and stops the search. */
#define CL_CAPACITY_MAX_PROBES 64

/* How the search ended. */
enum cl_capacity_state {
	CL_CAP_RUNNING,    /* another probe is due */
	CL_CAP_FOUND,      /* bracketed within the tolerance: sustainable < limit <= upper */
	CL_CAP_AT_MAX,     /* even `max` met the SLOs: the limit is at or above it */
	CL_CAP_BELOW_FROM, /* nothing met them, down to the smallest level */
	CL_CAP_STOPPED,    /* a probe could not be trusted (client-bound, failed, interrupted) */
};

struct cl_capacity_probe {
	double level; /* streams, or requests per second */
	size_t stage; /* its stage index in the run */
	bool pass;    /* met every SLO of the search */
	bool trusted; /* false: its numbers say nothing about the server (the search stops) */
	double requests_per_s;
	double output_tokens_per_s;
};

struct cl_capacity {
	enum cl_load_mode over;
	double from, max, tolerance;
	bool relative; /* tolerance is a fraction of the upper bracket */
	double lo;     /* highest level that met the SLOs; 0: none yet */
	double hi;     /* lowest level that did not; 0: none yet */
	enum cl_capacity_state state;
	char stop_reason[160]; /* CL_CAP_STOPPED: why, for people */
	struct cl_capacity_probe probes[CL_CAPACITY_MAX_PROBES];
	size_t n;
};

/* Starts a search from its scenario entry. */
void cl_capacity_init(struct cl_capacity *c, const struct cl_scn_search *q);

/* The level to probe next into *level; false when the search has its answer (c->state says
 * which).  Levels are whole streams over concurrency; rates are rounded to 3 significant
 * digits when that keeps them strictly inside the bracket. */
bool cl_capacity_next(struct cl_capacity *c, double *level);

/* Files a probe's outcome (copied).  An untrusted probe stops the search with reason
 * (copied, may be NULL).  A probe past CL_CAPACITY_MAX_PROBES stops it too. */
void cl_capacity_record(struct cl_capacity *c, const struct cl_capacity_probe *p,
			const char *reason);

/* The bracket's width the tolerance allows, in the search's unit. */
double cl_capacity_tolerance_abs(const struct cl_capacity *c);

/*
 * The knee of a throughput curve (Kneedle, Satopää et al. 2011): with the points sorted by
 * level and both axes scaled to [0, 1], the point furthest above the line from the first to
 * the last, i.e. where throughput stops growing in proportion to load.  x and y have n
 * points in any order.  Returns the index of the knee, or -1 (fewer than 3 points, a flat
 * curve - every y within 10% of the highest - or one that never bends that way).
 */
long cl_capacity_knee(const double *x, const double *y, size_t n);

/* Capacity planning: what serving `want` (a rate of requests or output tokens per second)
 * takes, given what one server sustained and what the agents spent for it. */
struct cl_capacity_plan {
	double servers_exact; /* want / per_server */
	uint64_t servers;     /* rounded up */
	double streams; /* streams in flight that load keeps open (per server * servers_exact) */
	double agent_cpu_pct; /* the agents' CPU it takes, 100 = one core */
	uint64_t agents;      /* agents of the measured size, each kept under the client-bound
			       * CPU threshold; 0 when the CPU figures are unknown */
};

/* want and per_server in the same unit (> 0); streams_per_server the streams in flight at the
 * sustainable level; cpu_per_stream_pct and agent_capacity_pct (cores * 100 of one agent)
 * from the measurements, NAN or <= 0 when unknown.  False when want or per_server is not
 * positive. */
bool cl_capacity_plan(double want, double per_server, double streams_per_server,
		      double cpu_per_stream_pct, double agent_capacity_pct,
		      struct cl_capacity_plan *out);

#endif
