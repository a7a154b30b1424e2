/* The agent's side of the control channel: dial the coordinator, join a run, obey its
 * commands, drive the engine and the readiness gate, and report measurements. */
#ifndef CHATLOAD_AGENT_DAEMON_CONTROL_H
#define CHATLOAD_AGENT_DAEMON_CONTROL_H

#include "client/http/allow.h"

#include "chatload/exitcode.h"
#include "chatload/srcaddr.h"
#include "chatload/transport.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cl_agent_opts {
	const char *connect_url;
	const char *token; /* shared secret ("" or NULL: none) */
	struct cl_tls_opts tls;
	bool insecure;                     /* allow plaintext tcp:// off loopback */
	const struct cl_allow_list *allow; /* targets this agent may load; empty: any */
	uint32_t workers;                  /* engine worker threads; 0: online CPUs */
	bool once;                         /* exit when the first session ends (local agents) */
	const char *request_log;           /* optional per-request JSONL log (debugging, tests) */
	const char *id_prefix;             /* X-Request-Id prefix; NULL: the host name */
	const char *name; /* how the coordinator names this agent; NULL: the host name */
	const struct cl_srcaddr_pool *source; /* --source-address: addresses the engine's
					       * connections bind to in turn; empty: any */
};

/*
 * Serves runs until *stop becomes nonzero (SIGTERM/SIGINT; an atomic because the handler may
 * run on another thread), or, with opts->once, until the first session ends.  A
 * coordinator that goes silent for CL_WIRE_AGENT_SILENCE_US gets all load stopped and the
 * session dropped; the agent then redials.  Blocks.  Returns the process exit code:
 * CL_EXIT_OK after a clean QUIT or a stop, CL_EXIT_FAILED when a --once session failed or
 * memory ran out.
 */
enum cl_exit cl_agent_serve(const struct cl_agent_opts *opts, atomic_int *stop);

#endif
