/* What chatload validate's files share: the plan printed section by section
 * (validate_plan.c), the workload's section (validate_workload.c) and a generate job's input
 * check and section (validate_generate.c), called from the command (validate.c). Every
 * function prints to stdout; none writes a file. */
#ifndef CHATLOAD_CMD_VALIDATE_INT_H
#define CHATLOAD_CMD_VALIDATE_INT_H

#include "chatload/err.h"
#include "coordinator/generate/batch.h"
#include "coordinator/scenario/scenario.h"
#include "coordinator/workload/workload.h"

#include <stddef.h>
#include <stdint.h>

/* A duration as validate prints it: "0", else cl_format_duration_us's precise form in buf. */
const char *cli_validate_dur(int64_t us, char *buf, size_t n);

/* One SLO line, "  key: p99 of ttft <= 2 s (stage)", stage saying where it applies. */
void cli_validate_print_slo(const struct cl_scn_slo *o, const char *stage);

/* The resolved plan of a loaded scenario, every section with its defaults: st is what
 * rendering its workload gave (salt included), scan and first_bad what the generate check
 * found (zeroed when the scenario is no job). */
void cli_validate_print_plan(const struct cl_scenario *s, const struct cl_workload_stats *st,
			     const struct cl_gen_scan *scan, const struct cl_err *first_bad);

/* The workload section: the workload as written, its salt the rendering's tag (st->salt, ""
 * for none), then what reading it gave (st). */
void cli_validate_print_workload(const struct cl_scn_workload *w,
				 const struct cl_workload_stats *st);

/* workload.classes, each class's share of the rendered bodies p; nothing when it has none. */
void cli_validate_print_classes(const struct cl_scn_workload *w, const struct cl_workload_plan *p);

/* A generate job's input checked as chatload run checks it, with nothing written: 0, or
 * CL_EINVAL with err naming file:line:col, or CL_EIO / CL_ENOMEM.  With skip_invalid the
 * first bad line is left in first_bad. */
int cli_validate_check_generate(const struct cl_scenario *s, struct cl_gen_scan *scan,
				struct cl_err *first_bad, struct cl_err *err);

/* The generate section: the job's settings and what the input check found (scan, first_bad). */
void cli_validate_print_generate(const struct cl_scenario *s, const struct cl_gen_scan *scan,
				 const struct cl_err *first_bad);

#endif
