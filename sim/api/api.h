/* chatload-sim's API: routes a parsed request to /health, /v1/models or
 * /v1/chat/completions, applying readiness phases, authentication and request faults. */
#ifndef CHATLOAD_SIM_API_H
#define CHATLOAD_SIM_API_H

#include "sim/serve/http.h"
#include "sim/sim.h"

/*
 * Handles one complete request on c (c->busy is set).  Either answers at once (through
 * cl_sim_conn_respond, which may close c) or starts a stream that answers later.  body is
 * valid only during the call.
 */
void cl_sim_api_handle(struct cl_sim *s, struct cl_sim_conn *c, const struct cl_sim_http_req *req,
		       const char *body, size_t body_len);

#endif
