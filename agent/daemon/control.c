/* The agent daemon's top-level loop: one session per run (session.c), the next dialled when
 * one ends, until a stop or, with --once, the first session's end. */

#include "agent/daemon/control.h"
#include "agent/daemon/session.h"

#include "chatload/clock.h"
#include "chatload/log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum cl_exit cl_agent_serve(const struct cl_agent_opts *o, atomic_int *stop)
{
	enum cl_exit code = CL_EXIT_OK;
	/* The last refusal said: a coordinator that keeps refusing (a run that declared this
	 * agent lost, or that is full) is asked again every 5 s, and saying so every time
	 * drowns the one line that matters. */
	char refused[CL_WIRE_MAX_REASON + 64] = "";
	for (;;) {
		struct session *s = calloc(1, sizeof(*s));
		if (!s) {
			CL_ERROR("out of memory");
			code = CL_EXIT_FAILED;
			break;
		}
		s->o = o;
		s->stop = stop;
		pthread_mutex_init(&s->probe_mu, NULL);
		int rc = cl_session_run(s);
		bool failed = s->state == CL_AGENT_FAILED;
		if (s->refusal[0] && strcmp(s->refusal, refused) != 0) {
			CL_ERROR("%s%s", s->refusal,
				 o->once ? "" : " (asking again every 5 s; said once)");
			snprintf(refused, sizeof(refused), "%s", s->refusal);
		} else if (s->refusal[0]) {
			CL_DEBUG("%s", s->refusal);
		} else {
			refused[0] = '\0'; /* it joined: a later refusal is news again */
		}
		cl_session_cleanup(s);
		pthread_mutex_destroy(&s->probe_mu);
		free(s);
		if (atomic_load(stop))
			break;
		if (o->once) {
			code = (rc == 0 && !failed) ? CL_EXIT_OK : CL_EXIT_FAILED;
			break;
		}
		if (rc == 0)
			CL_INFO("run finished; waiting for the next one");
		if (!cl_session_nap(stop, rc == CL_EREFUSED ? 5000000000LL / 1000 : 500000))
			break;
	}
	return code;
}
