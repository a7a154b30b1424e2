/* The readiness gate's outcome in words: phase names and the one-line verdict. */
#include "chatload/readiness.h"

#include "chatload/units.h"

#include <stdio.h>

const char *cl_readiness_phase_name(int phase)
{
	switch (phase) {
	case CL_READY_CONNECT:
		return "connect";
	case CL_READY_MODELS:
		return "/v1/models";
	case CL_READY_GENERATION:
		return "generation";
	default:
		return "?";
	}
}

void cl_readiness_describe(const struct cl_readiness_result *r, char *buf, size_t n)
{
	char a[32], b[32], c[32], d[32], e[32];
	if (!n)
		return;
	const int64_t *p = r->phase_passed_us;
	if (r->status == CL_READY_PASSED) {
		snprintf(
		    buf, n,
		    "ready after %s (connect at %s, models at %s, generation at %s; %u "
		    "generation attempt%s; probe ttft %s)",
		    cl_format_duration_us(r->elapsed_us, CL_DURATION_TENTHS, a, sizeof(a)),
		    cl_format_duration_us(p[CL_READY_CONNECT], CL_DURATION_TENTHS, b, sizeof(b)),
		    cl_format_duration_us(p[CL_READY_MODELS], CL_DURATION_TENTHS, c, sizeof(c)),
		    cl_format_duration_us(p[CL_READY_GENERATION], CL_DURATION_TENTHS, d, sizeof(d)),
		    r->attempts, r->attempts == 1 ? "" : "s",
		    cl_format_duration_us(r->probe_ttft_us, CL_DURATION_MILLIS, e, sizeof(e)));
		return;
	}
	const char *lead;
	switch (r->status) {
	case CL_READY_CANCELLED:
		lead = "readiness gate cancelled after";
		break;
	case CL_READY_PENDING:
		lead = "readiness gate still waiting after";
		break;
	default:
		lead = "target not ready after";
		break;
	}
	/* The last phase passed says how far the target got; earlier ones are implied. */
	char passed[64] = "";
	int last = -1;
	for (int i = 0; i < CL_READY__PHASES; i++)
		if (p[i] >= 0)
			last = i;
	if (last >= 0)
		snprintf(passed, sizeof(passed), "%s ok at %s; ", cl_readiness_phase_name(last),
			 cl_format_duration_us(p[last], CL_DURATION_TENTHS, b, sizeof(b)));
	const char *phase = cl_readiness_phase_name(r->phase);
	cl_format_duration_us(r->elapsed_us, CL_DURATION_TENTHS, a, sizeof(a));
	if (r->status == CL_READY_FATAL) {
		snprintf(buf, n, "%s %s (configuration error, not retried): %s%s: %s", lead, a,
			 passed, phase, r->last_error[0] ? r->last_error : "failed");
	} else if (r->failing_since_us >= 0 && r->last_error[0]) {
		snprintf(
		    buf, n, "%s %s: %s%s failing since %s: %s", lead, a, passed, phase,
		    cl_format_duration_us(r->failing_since_us, CL_DURATION_TENTHS, c, sizeof(c)),
		    r->last_error);
	} else {
		snprintf(buf, n, "%s %s: %s%s not finished", lead, a, passed, phase);
	}
}
