/* One finished request of a benchmark stage as an agent keeps it and sends it back in
 * REQUESTS (the scenario's output.requests; docs/protocol.md).  Its own header so the engine,
 * which has no business with the rest of the wire, can fill it. */
#ifndef CHATLOAD_REQREC_H
#define CHATLOAD_REQREC_H

#include <stdbool.h>
#include <stdint.h>

#define CL_WIRE_MAX_REQ_ID  128 /* a request's X-Request-Id */
#define CL_WIRE_MAX_REQ_ERR 256 /* a request's error message */

/* Where a request's time went before its first byte, from libcurl's own timers of the transfer
 * (docs/engine.md, "Where the time went"): each a stage's own duration in µs, -1 when the
 * transfer never reached it.  A request on a reused connection spends 0 on the first three. */
struct cl_conn_times {
	int64_t dns_us;     /* name lookup (CURLINFO_NAMELOOKUP_TIME_T) */
	int64_t connect_us; /* TCP connect after the lookup (CONNECT_TIME_T - NAMELOOKUP_TIME_T) */
	int64_t tls_us;  /* TLS handshake after the connect (APPCONNECT_TIME_T - CONNECT_TIME_T) */
	int64_t send_us; /* connection ready -> request written (PRETRANSFER_TIME_T - the
			  * stage before); with the three above, the client's connection time */
	int64_t wait_us; /* request written -> first byte of the answer (STARTTRANSFER_TIME_T
			  * - PRETRANSFER_TIME_T): the server's wait */
};

/* Times are the agent's CLOCK_MONOTONIC (start_us) or durations from it; a duration the
 * request never reached (no first token, say) is -1 and travels absent. */
struct cl_req_record {
	uint32_t stage;                   /* the stage's index */
	char id[CL_WIRE_MAX_REQ_ID + 1];  /* the X-Request-Id it was sent with */
	bool in_window;                   /* started inside the measured window (not in a ramp) */
	int64_t start_us;                 /* handed to libcurl, agent clock */
	int64_t ttft_us, ttfc_us, e2e_us; /* from start_us; -1: not reached */
	uint32_t chunks;                  /* chunks that carried tokens (ITL samples + 1) */
	int64_t last_token_us;            /* from start_us to the last of them; -1: none */
	uint32_t http_status;             /* 0: no response */
	uint64_t prompt_tokens, output_tokens, reasoning_tokens;
	int64_t sent_us;           /* from start_us to libcurl about to send it; -1: never */
	int64_t ttfb_us;           /* from start_us to the answer's status line; -1: none */
	struct cl_conn_times conn; /* where the time to the first byte went */
	uint32_t connects;         /* connections the request opened (0: it reused one) */
	char status[32];           /* "completed" or the error class (cl_ctr_name) */
	char error[CL_WIRE_MAX_REQ_ERR + 1]; /* "" when none */
};

#endif
