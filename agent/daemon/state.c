/* What every module of the daemon may do to the session beyond its own fields: fail it, or
 * move the agent's state with what that state means asserted (see state.h). */
#include "agent/daemon/state.h"

#include "chatload/assert.h"
#include "chatload/log.h"

#include <stdarg.h>
#include <stdio.h>

void cl_session_fail(struct session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	s->state = CL_AGENT_FAILED;
	CL_ERROR("%s", s->error);
}

void cl_session_set_state(struct session *s, enum cl_agent_state st)
{
	switch (st) {
	case CL_AGENT_READY:
		/* the coordinator sends WARMUP and START_AT to a ready agent: they need the engine
		 */
		CL_ASSERT(s->prepared && s->engine);
		break;
	case CL_AGENT_RUNNING:
		/* a running agent reports: what it runs is the engine under way or the runner */
		CL_ASSERT((s->act != ACT_NONE && s->act_engine) || s->gen);
		break;
	case CL_AGENT_DRAINING:
		CL_ASSERT(s->act != ACT_NONE && s->act_engine);
		break;
	case CL_AGENT_DONE:
		/* the final report is queued and nothing runs: the next START_AT may begin */
		CL_ASSERT(s->act == ACT_NONE && !s->act_engine);
		break;
	case CL_AGENT_FAILED:
		CL_ASSERT(!"a failure goes through cl_session_fail, which says why");
		break;
	default:
		CL_ASSERT((unsigned)st < CL_AGENT__COUNT);
		break;
	}
	s->state = st;
}
