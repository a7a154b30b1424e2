/* Student's t quantiles: the multipliers of a two-sided 95 % and 99 % interval from a few
 * values.  results/ci.c uses them for stages[].ci95; report/ (compare's significance,
 * history's band) reads them here, so the one table serves both. */
#ifndef CHATLOAD_RESULTS_CI_H
#define CHATLOAD_RESULTS_CI_H

#include <stddef.h>

/* The 97.5 % and 99.5 % quantiles of Student's t with df >= 1 degrees of freedom (tabled to
 * 30, then rounded up to the next tabled 40, 60, 120, infinity); NaN for df 0. */
double cl_ci_t975(size_t df);
double cl_ci_t995(size_t df);

#endif
