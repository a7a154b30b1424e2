/* Which endpoint a request goes to when a target has several (target.urls): a pure function
 * of the route, a turn counter, the requests each endpoint has in flight and a session key. */
#ifndef CHATLOAD_ENGINE_ROUTE_H
#define CHATLOAD_ENGINE_ROUTE_H

#include "chatload/plan.h"

#include <stdint.h>

/*
 * Returns the endpoint (0..n-1) for one request; n >= 1 (1: always 0).
 * - CL_ROUTE_ROUND_ROBIN: turn % n (the caller's counter advances once per request).
 * - CL_ROUTE_LEAST_OUTSTANDING: the endpoint with the fewest requests in flight
 *   (outstanding[0..n-1]); of equals, the first at or after turn % n, so ties rotate.
 * - CL_ROUTE_SESSION_HASH: a mix of key modulo n: the same key (a conversation's id) always
 *   gives the same endpoint, and distinct keys spread evenly.
 * Never blocks, never allocates.
 */
uint32_t cl_route_pick(enum cl_route route, uint32_t n, uint64_t turn, const int64_t *outstanding,
		       uint64_t key);

/* FNV-1a 64 of s (len bytes): the session key of an id. */
uint64_t cl_route_key(const char *s, size_t len);

#endif
