/* The coordinator's side of the control channel: one REP socket that agents dial, the table
 * of agents in this run, their commands and liveness.  Single-threaded: the run loop calls
 * cl_fleet_serve, which answers HELLO and REPORT at once and holds a POLL until there is a
 * command for its agent or CL_WIRE_POLL_HOLD_US pass (long polls, docs/protocol.md). */
#ifndef CHATLOAD_FLEET_H
#define CHATLOAD_FLEET_H

#include "chatload/err.h"
#include "chatload/hist.h"
#include "coordinator/scenario/scenario.h"
#include "chatload/stall.h"
#include "chatload/transport.h"
#include "chatload/wire.h"

#include <stdbool.h>
#include <stdint.h>

#define CL_FLEET_MAX_AGENTS      CL_SCN_MAX_AGENTS /* scenario/scenario.h */
#define CL_FLEET_MAX_QUEUED_CMDS 16
#define CL_FLEET_MAX_LISTENERS   4

enum cl_fleet_liveness { CL_LIVE_OK, CL_LIVE_MISSING, CL_LIVE_LOST };

/* Why an agent was declared lost. */
enum cl_fleet_loss {
	CL_LOSS_NONE,
	CL_LOSS_SILENT,            /* nothing from it for CL_WIRE_LOST_US */
	CL_LOSS_COORDINATOR_STALL, /* this coordinator could not run for longer than an agent
				    * waits for a reply (CL_WIRE_AGENT_SILENCE_US): the agent
				    * stopped its load and left, as the protocol says it must */
};

/* Stalls of the coordinator itself the fleet keeps (the newest), for the run to file. */
#define CL_FLEET_OWN_STALLS 16

struct cl_fleet_agent {
	uint32_t id; /* 1-based, as told in WELCOME */
	/* The run id this agent was WELCOMEd with: the run's id plus a random suffix only this
	 * agent knows.  Every later message must carry it, so a peer that never presented the
	 * token cannot speak for the agent. */
	char session[CL_WIRE_MAX_RUN + 1];
	char host[CL_WIRE_MAX_HOST + 1]; /* as the agent named itself (host name or --name) */
	char peer[96];
	char address[64]; /* the peer's IP address, "" for a local (ipc) agent */
	/* How messages and results name the agent: "vm at 10.0.0.5" (two hosts both named vm
	 * stay apart), or the host name alone for a local agent. */
	char label[CL_WIRE_MAX_HOST + 80];
	char version[CL_WIRE_MAX_VERSION + 1];
	uint32_t workers;
	int64_t pid;
	int64_t joined_us;
	int64_t last_seen_us;
	enum cl_fleet_liveness live;
	/* The latest silence long enough to mark the agent missing that ended (it came back):
	 * from its last request before the silence to its first after (coordinator clock).
	 * returns counts such silences, so a caller can tell a new one. */
	int64_t silent_from_us, silent_until_us;
	uint32_t returns;
	bool gone;          /* handed QUIT: no longer expected */
	nng_pipe quit_pipe; /* the connection QUIT went out on */
	enum cl_agent_state state;
	char error[CL_WIRE_MAX_ERROR + 1];
	uint64_t applied_seq;
	double cpu_pct;
	int64_t rss_bytes;
	int64_t inflight;
	int64_t clock_offset_us; /* coordinator - agent, as the agent estimated it */
	int64_t rtt_us;
	uint64_t last_report_seq;   /* dedupe of resent REPORTs */
	uint64_t last_answers_seq;  /* ... and ANSWERS */
	uint64_t last_requests_seq; /* ... and REQUESTS */
	/* Silence the coordinator caused itself since last_seen_us (its own stalls): not counted
	 * against the agent's liveness. */
	int64_t credit_us;
	enum cl_fleet_loss lost_cause; /* CL_LOSS_NONE until live is CL_LIVE_LOST */
	int64_t lost_at_us;            /* when it was declared lost */
	/* commands not yet applied, oldest first; their pointees are the caller's */
	struct cl_msg_cmd cmds[CL_FLEET_MAX_QUEUED_CMDS];
	size_t n_cmds;
	/* The POLL held for this agent (NULL: none): its message, whose header routes the reply,
	 * its seq and arrival.  Holding agents are linked oldest first (cl_fleet.held_*). */
	nng_msg *held;
	uint64_t held_seq;
	int64_t held_recv_us;
	struct cl_fleet_agent *held_prev, *held_next;
};

struct cl_fleet;
struct cli_fleet_watch;
struct cli_fleet_peers;
/* Called for every new (not duplicate) REPORT.  rep and its metrics belong to the fleet and
 * are valid only during the call. */
typedef void (*cl_fleet_report_cb)(void *ctx, struct cl_fleet_agent *a, struct cl_msg_report *rep);
/* Called for every new (not duplicate) ANSWERS of a generate job, before it is ACKed; the
 * callback may take the answers' strings (setting them NULL).  Returns 0 to ACK, nonzero to
 * leave it unacknowledged (the agent sends it again: a write that failed is retried). */
typedef int (*cl_fleet_answers_cb)(void *ctx, struct cl_fleet_agent *a, struct cl_msg_answers *m);
/* Called for every new (not duplicate) REQUESTS (output.requests), before it is ACKed; m
 * belongs to the fleet.  Returns 0 to ACK, nonzero to leave it unacknowledged (the agent
 * sends it again). */
typedef int (*cl_fleet_requests_cb)(void *ctx, struct cl_fleet_agent *a,
				    const struct cl_msg_requests *m);

struct cl_fleet {
	nng_socket sock;
	bool open;
	char run[64];
	char token[CL_WIRE_MAX_TOKEN + 1];
	uint32_t max_agents;
	int64_t report_interval_us;
	struct cl_fleet_agent *agents; /* max_agents entries */
	size_t n;
	uint64_t next_cmd_seq;
	uint64_t rejected; /* malformed or refused messages */
	cl_fleet_report_cb on_report;
	cl_fleet_answers_cb on_answers;   /* NULL: ANSWERS are refused */
	cl_fleet_requests_cb on_requests; /* NULL: REQUESTS are refused */
	void *ctx;
	/* TLS listeners, whose refused handshakes are logged (nng counts them; no peer is
	 * known before a handshake succeeds) */
	struct {
		nng_listener l;
		char url[128];
		uint64_t refused; /* count already logged */
	} tls[CL_FLEET_MAX_LISTENERS];
	size_t n_tls;
	int64_t tls_checked_us;
	/* The coordinator's own stalls (fleet/watch.c): the newest CL_FLEET_OWN_STALLS, oldest
	 * first from own_stalls[n_own % CL_FLEET_OWN_STALLS]; n_own counts every one, so a
	 * reader can tell the new ones. */
	struct cl_stall own_stalls[CL_FLEET_OWN_STALLS];
	uint32_t n_own;
	int64_t stalled_until_us; /* end of the last one filed (overlaps are trimmed) */
	struct cli_fleet_watch *watch;
	struct cli_fleet_peers *peers;
	/* Agents whose POLL is held, oldest first: the head's hold ends first. */
	struct cl_fleet_agent *held_first, *held_last;
	uint64_t polls_held, polls_answered_early; /* holds begun; ... ended by a command */
	/* From an agent's send of a new REPORT to its merge, on this clock (the agent's send
	 * time moved by its clock offset): what the control channel adds to every report,
	 * queueing included.  Interval reports (spread over the interval by the agents) apart
	 * from the rest (final ones: every agent's at the stage's end at once).  Said when the
	 * fleet closes. */
	struct cl_hist report_lag[2]; /* [0] interval, [1] the rest */
	bool report_lag_ready;
};

/* Opens the socket.  token may be "" (no token).  f is zeroed first; cl_fleet_close is safe
 * after any failure. */
CL_MUST_CHECK int cl_fleet_open(struct cl_fleet *f, const char *run, const char *token,
				uint32_t max_agents, int64_t report_interval_us,
				struct cl_err *err);
/* Adds a listener (several may be added: ipc:// for local agents, tls+tcp:// for remote). */
int cl_fleet_listen(struct cl_fleet *f, const char *url, const struct cl_tls_opts *tls,
		    bool insecure, struct cl_err *err);
/*
 * Answers requests for up to for_us (at least one receive attempt), then updates liveness.
 * Blocks up to for_us.  A stall of the coordinator itself (its own wake-ups came
 * CL_STALL_MIN_US late) is filed in own_stalls and said; the agents' silence during it is
 * credited to them, and when it outlasted CL_WIRE_AGENT_SILENCE_US every agent that was
 * silent all along is declared lost with CL_LOSS_COORDINATOR_STALL at once, since by the
 * protocol it has stopped its load and left (docs/protocol.md, "Faults").
 */
void cl_fleet_serve(struct cl_fleet *f, int64_t for_us);
/* Queues cmd for agent i (index into agents), and answers its held POLL with it at once.
 * cmd is copied shallowly: whatever it points to must stay valid until the agent applied it.
 * Returns the cmd_seq given, 0 when the queue is full. */
uint64_t cl_fleet_send(struct cl_fleet *f, size_t i, const struct cl_msg_cmd *cmd);
/* How many more commands agent i's queue takes now. */
size_t cl_fleet_room(const struct cl_fleet *f, size_t i);
/* Removes every queued command of kind cmd, from every agent's queue (its cmd_seq is not
 * reused: an agent that would have applied it never sees it). */
void cl_fleet_unqueue(struct cl_fleet *f, enum cl_cmd cmd);
/* Queues cmd for every agent that is not lost or gone. */
void cl_fleet_broadcast(struct cl_fleet *f, const struct cl_msg_cmd *cmd);
/* Whether agent i has left: lost, or handed QUIT and its connection has closed since (an
 * agent closes it only once it has QUIT in hand, so a reply still in nng's queues is not
 * taken for one delivered). */
bool cl_fleet_departed(const struct cl_fleet *f, size_t i);
/* Agents neither lost nor gone. */
size_t cl_fleet_active(const struct cl_fleet *f);
/* Closes the socket and frees the table.  Safe on zeroed / failed fleets. */
void cl_fleet_close(struct cl_fleet *f);

const char *cl_fleet_liveness_name(enum cl_fleet_liveness l);

#endif
