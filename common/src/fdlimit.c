/* The descriptor limit (chatload/fdlimit.h). */
#include "chatload/fdlimit.h"

#include "chatload/log.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

uint64_t cl_fd_limit_raise(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t hard = rl.rlim_max;
		rl.rlim_cur = hard;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
			CL_WARN("cannot raise the open-file limit to %llu: %s",
				(unsigned long long)hard, strerror(errno));
			if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
				return 0;
		}
	}
	return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

uint32_t cl_fd_agent_streams(uint64_t fd_limit)
{
	if (fd_limit == 0 || fd_limit >= (uint64_t)CL_AGENT_MAX_STREAMS + CL_AGENT_FD_MARGIN)
		return CL_AGENT_MAX_STREAMS;
	return fd_limit > CL_AGENT_FD_MARGIN ? (uint32_t)(fd_limit - CL_AGENT_FD_MARGIN) : 1;
}
