/* The descriptor limit: every stream, agent connection or simulated client is a socket. */
#ifndef CHATLOAD_FDLIMIT_H
#define CHATLOAD_FDLIMIT_H

#include <stdint.h>

/* Raises the soft RLIMIT_NOFILE to the hard one (a login shell's soft 1,024 is far below
 * what a load generator holds); warns when it cannot.  Returns the soft limit now in force,
 * UINT64_MAX for none, 0 when it cannot be read. */
uint64_t cl_fd_limit_raise(void);

/* ---- streams per agent (issue 29) ------------------------------------------------------ */
#define CL_AGENT_MAX_STREAMS 16384u /* stream slots an agent's engine preallocates */
/* descriptors an agent keeps beside its streams: the control socket, epoll and timer fds,
 * logs, libcurl's */
#define CL_AGENT_FD_MARGIN 512u

/* Streams one agent process can hold: its engine's slots, and one descriptor per stream
 * under a limit of fd_limit less CL_AGENT_FD_MARGIN (fd_limit 0: unknown, slots only). */
uint32_t cl_fd_agent_streams(uint64_t fd_limit);

#endif
