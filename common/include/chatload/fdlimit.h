/* The descriptor limit: every stream, agent connection or simulated client is a socket. */
#ifndef CHATLOAD_FDLIMIT_H
#define CHATLOAD_FDLIMIT_H

#include <stdint.h>

/* Raises the soft RLIMIT_NOFILE to the hard one (a login shell's soft 1,024 is far below
 * what a load generator holds); warns when it cannot.  Returns the soft limit now in force,
 * UINT64_MAX for none, 0 when it cannot be read. */
uint64_t cl_fd_limit_raise(void);

#endif
