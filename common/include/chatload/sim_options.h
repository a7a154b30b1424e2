/* The simulator's settings, one table shared by chatload-sim's flag parser and the scenario
 * loader's `target.simulator:` block, so the two can never disagree. */
#ifndef CHATLOAD_SIM_OPTIONS_H
#define CHATLOAD_SIM_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

enum cl_simopt_kind {
	CL_SIMOPT_DURATION, /* "200ms" */
	CL_SIMOPT_INT,      /* non-negative integer */
	CL_SIMOPT_FLOAT,    /* non-negative real (probabilities: 0..1) */
	CL_SIMOPT_STRING,
	CL_SIMOPT_BOOL, /* flag without a value; in YAML true/false */
};

struct cl_sim_option {
	const char *name; /* flag name without "--", words joined by '-' */
	enum cl_simopt_kind kind;
	const char *metavar; /* shown in --help, e.g. "DUR" */
	const char *def;     /* default as text, NULL: none */
	const char *help;    /* one line */
	bool scenario;       /* may appear under target.simulator (false: process-level) */
};

/* Options the table holds at most: a scenario's check of repeated keys keeps one slot per
 * option (coordinator/scenario/simulator.c), so the table is held under it at compile time. */
#define CL_SIM_OPTIONS_MAX 128

extern const struct cl_sim_option cl_sim_options[];
extern const size_t cl_sim_options_count;

/* Finds an option by name; '_' and '-' are equivalent ("output_tokens").  NULL if none. */
const struct cl_sim_option *cl_sim_option_find(const char *name);

#endif
