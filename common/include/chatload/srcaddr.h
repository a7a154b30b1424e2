/* Source-address pools: the local addresses an agent's connections are bound to, so more
 * connections than one address's ephemeral ports can go to one target address and port
 * (docs/scenario.md, agents.source_addresses; chatload-agent --source-address). */
#ifndef CHATLOAD_SRCADDR_H
#define CHATLOAD_SRCADDR_H

#include "chatload/err.h"

#include <stddef.h>
#include <stdint.h>

#define CL_SRCADDR_MAX     256 /* addresses in one pool, CIDR blocks expanded */
#define CL_SRCADDR_TEXTMAX 46  /* INET6_ADDRSTRLEN */

struct cl_srcaddr_pool {
	size_t n;
	char addr[CL_SRCADDR_MAX][CL_SRCADDR_TEXTMAX]; /* numeric, as inet_ntop writes it */
};

/*
 * Adds spec to p: one numeric IPv4 or IPv6 address, or an IPv4 CIDR block A.B.C.D/LEN
 * (LEN 16..32) expanded to its host addresses (a /30 or wider block leaves out its first and
 * last address, the network and broadcast ones; /31 and /32 keep both).  An address already
 * in the pool is refused.  Pure: checks no interface.  0, or CL_EINVAL / CL_ERANGE (the pool
 * would pass CL_SRCADDR_MAX) with a message naming spec in err.
 */
int cl_srcaddr_add(struct cl_srcaddr_pool *p, const char *spec, struct cl_err *err);

/*
 * Whether addr is an address of this host: binds a TCP socket to addr, port 0, and closes
 * it.  0, or CL_EREFUSED with a message naming addr ("source address '10.9.9.9' is not an
 * address of this host (bind: Cannot assign requested address)").  Blocks briefly.
 */
int cl_srcaddr_check_local(const char *addr, struct cl_err *err);

/*
 * The ephemeral ports one source address has towards one destination address and port:
 * the size of /proc/sys/net/ipv4/ip_local_port_range.  0 when it cannot be read.
 */
uint32_t cl_srcaddr_ephemeral_ports(void);

#endif
