/* The coordinator<->agent wire protocol: message structs, the msgpack codec every message goes
 * through, hostile-input pre-validation, and the protocol's timing constants.  docs/protocol.md
 * is the authority on the format; this header is its C side. */
#ifndef CHATLOAD_WIRE_H
#define CHATLOAD_WIRE_H

#include "chatload/err.h"
#include "chatload/metrics.h"
#include "chatload/plan.h"
#include "chatload/readiness.h"
#include "chatload/srcaddr.h"
#include "chatload/reqrec.h"
#include "chatload/stall.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Constants ------------------------------------------------------------------------ */

/* The protocol version.  A message carrying any other `proto` is refused (CL_EVERSION). */
#define CL_PROTO_VERSION 1

/* Largest message either side accepts: set NNG_OPT_RECVMAXSZ to this before listening or
 * dialing (nng drops larger messages silently otherwise).  The encoder refuses to exceed it. */
#define CL_WIRE_MAX_MSG (64u << 20)
/* Deepest container nesting accepted (the top-level map is depth 1). */
#define CL_WIRE_MAX_DEPTH 16
/* Most msgpack objects (every scalar, string, array, map, key and value counts one) accepted
 * in one message.  Together with the per-container check this bounds what msgpack-c
 * allocates for a message to about 24 bytes per object, twice that at worst with its zone
 * chunk rounding (docs/protocol.md, "Hostile input"). */
#define CL_WIRE_MAX_OBJECTS (1u << 21)

/* Per-field caps, in bytes (strings) or entries (arrays).  Both the encoder and the decoder
 * enforce them, so whatever one side encodes the other decodes. */
#define CL_WIRE_MAX_RUN     256         /* run id */
#define CL_WIRE_MAX_VERSION 64          /* HELLO.version */
#define CL_WIRE_MAX_HOST    255         /* HELLO.host */
#define CL_WIRE_MAX_TOKEN   256         /* HELLO.token */
#define CL_WIRE_MAX_CAPS    32          /* HELLO.caps entries ... */
#define CL_WIRE_MAX_CAP     32          /* ... of at most this many bytes each */
#define CL_WIRE_MAX_REASON  1024        /* REFUSE.reason */
#define CL_WIRE_MAX_ERROR   1024        /* REPORT.error, POLL.error */
#define CL_WIRE_MAX_URL     2048        /* target.base_url */
#define CL_WIRE_MAX_NAME    256         /* target.model, target.api_key_env, stage.name */
#define CL_WIRE_MAX_PATH    4096        /* target.ca_file */
#define CL_WIRE_MAX_HEADERS 64          /* target.headers entries ... */
#define CL_WIRE_MAX_HEADER  8192        /* ... of at most this many bytes each */
#define CL_WIRE_MAX_BODIES  (1u << 18)  /* workload.bodies entries (262144) */
#define CL_WIRE_MAX_BODY    (16u << 20) /* one request body (JSON text), and probe/warmup bodies */
#define CL_WIRE_MAX_PROMPT  (1u << 20)  /* PROBE.prompt */
#define CL_WIRE_MAX_ITEMS   4096        /* LEASE.items, ANSWERS.answers, REQUESTS.records entries */
#define CL_WIRE_MAX_ID      512         /* a generate request's custom_id */
#define CL_WIRE_MAX_ANSWER  (16u << 20) /* one assembled chat.completion (JSON text) */

/* A workload too large for one message travels in parts (docs/protocol.md, BODIES). */
#define CL_WIRE_MAX_TOTAL_BODIES (1u << 20) /* workload.total_bodies: a workload in parts */
/* A workload is sent in parts of at most this many bytes of body text (one larger body
 * travels alone), so no message grows with the dataset (docs/protocol.md, BODIES). */
#define CL_WIRE_BODIES_PART_BYTES (1u << 20)
#define CL_WIRE_BODIES_PART_MAX   65536u /* ... and at most this many bodies */

/*
 * Timing of a session (docs/protocol.md, "Liveness").  The REQ resend time must exceed the
 * long-poll hold, or nng would resend every held POLL.
 */
#define CL_WIRE_RESEND_MS          2000     /* NNG_OPT_REQ_RESENDTIME on the agent's REQ socket */
#define CL_WIRE_POLL_HOLD_US       1000000  /* the coordinator holds a POLL at most this long */
#define CL_WIRE_POLL_HOLD_BATCH_US 20000    /* holds due within this of the oldest end with it */
#define CL_WIRE_MISSING_US         3000000  /* no request from an agent this long: `missing` */
#define CL_WIRE_LOST_US            10000000 /* ... this long: `lost` */
#define CL_WIRE_AGENT_SILENCE_US   10000000 /* no reply this long: the agent stops all load */

/* ---- Enumerations (their wire spellings are in docs/protocol.md) --------------------- */

/* Message types.  0 is no message, so a zeroed struct cl_msg is empty. */
enum cl_msg_type {
	CL_MSG_NONE = 0,
	CL_MSG_HELLO,    /* agent -> coordinator: join */
	CL_MSG_POLL,     /* agent -> coordinator: state, asks for the next command */
	CL_MSG_REPORT,   /* agent -> coordinator: a metrics delta or a gate result */
	CL_MSG_WELCOME,  /* reply to HELLO: accepted */
	CL_MSG_REFUSE,   /* reply to anything: refused, the session ends */
	CL_MSG_CMD,      /* reply to POLL: what to do */
	CL_MSG_ACK,      /* reply to REPORT and ANSWERS: received (envelope seq = the request's) */
	CL_MSG_ANSWERS,  /* agent -> coordinator: finished generation requests (generate jobs) */
	CL_MSG_REQUESTS, /* agent -> coordinator: per-request records of benchmark stages */
	CL_MSG__COUNT
};

/* What an agent is doing, as it says in POLL. */
enum cl_agent_state {
	CL_AGENT_IDLE = 0,
	CL_AGENT_PREPARING,
	CL_AGENT_READY,
	CL_AGENT_RUNNING,
	CL_AGENT_DRAINING,
	CL_AGENT_DONE,
	CL_AGENT_FAILED,
	CL_AGENT__COUNT
};

/* Commands carried by CMD. */
enum cl_cmd {
	CL_CMD_NOOP = 0, /* nothing new: never applied, its cmd_seq means nothing */
	CL_CMD_PROBE,    /* run the readiness gate, then REPORT kind probe */
	CL_CMD_WARMUP,   /* send warmup requests, then REPORT kind warmup */
	CL_CMD_PREPARE,  /* take the target and workload; set up connections and workers */
	CL_CMD_START_AT, /* start a stage at a coordinator-clock instant */
	CL_CMD_STOP,     /* end the stage's window now: drain, then REPORT final */
	CL_CMD_ABORT,    /* stop all load at once (no drain), go idle */
	CL_CMD_QUIT,     /* stop everything and exit */
	CL_CMD_BODIES,   /* the next part of a workload PREPARE began */
	CL_CMD_GENERATE, /* start a generate job: target, concurrency, retries */
	CL_CMD_LEASE,    /* more requests of the generate job: ids and bodies */
	CL_CMD__COUNT
};

/* What a REPORT carries. */
enum cl_report_kind {
	CL_REPORT_INTERVAL = 0, /* the delta of one reporting interval of a running stage */
	CL_REPORT_FINAL,        /* the stage's remaining delta after the drain; the stage's last */
	CL_REPORT_PROBE,        /* the readiness gate's result */
	CL_REPORT_WARMUP,       /* the warmup's metrics (excluded from results) */
	CL_REPORT__COUNT
};

/* Wire names ("HELLO", "START_AT", "running", "final"); NULL when out of range. */
const char *cl_msg_type_name(int type);
const char *cl_cmd_name(int cmd);
const char *cl_agent_state_name(int state);
const char *cl_report_kind_name(int kind);
/* Reverse lookups (exact, case-sensitive); -1 when unknown. */
int cl_msg_type_from_name(const char *name);
int cl_cmd_from_name(const char *name);
int cl_agent_state_from_name(const char *name);
int cl_report_kind_from_name(const char *name);

/* ---- Messages --------------------------------------------------------------------------
 *
 * Ownership.  Every pointer in a message is either owned by it or borrowed, as `owned` says:
 * - cl_wire_decode builds an owned message: every string, array, plan, metrics record and
 *   readiness result it points to was allocated for it, and cl_msg_free frees them.
 * - A message built to be encoded is normally not owned (owned == false, as when zeroed): it
 *   points at the caller's data (a plan, a metrics record, string literals), cl_wire_encode
 *   only reads it, and cl_msg_free leaves the pointees alone.  A caller that wants the message
 *   to own what it points to sets owned = true; then every pointer in it must be heap memory
 *   of the same shape as a decoded message's (a decoded message may be moved by struct copy,
 *   leaving the source zeroed).
 *
 * Strings are NUL-terminated and never contain a NUL byte.  In a decoded message a required
 * string is never NULL (it may be ""); an optional string is NULL when the field was absent.
 * When encoding, NULL for a required string is sent as "" and NULL for an optional one omits
 * the field.  Times named *_us are microseconds: t_send_us / t_recv_us are the agent's
 * CLOCK_MONOTONIC, t_coord_* the coordinator's (docs/protocol.md, "Clocks").
 */

/* HELLO: an agent asks to join (envelope agent 0, run "" or the run it was started for). */
struct cl_msg_hello {
	char *version; /* chatload version of the agent, e.g. "0.1.0" */
	char *host;    /* the agent's host name */
	uint32_t workers;
	char **caps; /* capabilities, e.g. "http2", "tls" */
	size_t n_caps;
	char *token; /* shared secret ("" when none); compare with cl_wire_token_equal */
	int64_t pid;
	int64_t t_send_us;
};

/* POLL: the agent's state; the reply is the oldest command it has not applied, or NOOP. */
struct cl_msg_poll {
	enum cl_agent_state state;
	uint64_t applied_seq; /* cmd_seq of the last command the agent applied (0: none) */
	double cpu_pct;       /* process CPU since the previous POLL, 100 = one core */
	int64_t rss_bytes;
	int64_t inflight; /* streams in flight */
	int64_t loop_lag_us;
	int64_t t_send_us;
	char *error; /* optional: why state is `failed` */
	/* optional: the agent's clock-offset estimate (coordinator - agent) and the rtt of the
	 * sample it came from; clock_rtt_us 0 means "no estimate yet" (then not sent) */
	int64_t clock_offset_us;
	int64_t clock_rtt_us;
};

/* ---- source addresses (issue 29) -------------------------------------------------------- */
/* REPORT.sources: connections an agent opened from each of its --source-address addresses
 * since its engine started (for this run), in its pool's order. */
struct cl_source_conns {
	uint32_t n; /* at most CL_SRCADDR_MAX */
	struct {
		char address[CL_SRCADDR_TEXTMAX];
		uint64_t connections;
	} e[CL_SRCADDR_MAX];
};

/* REPORT: measurements.  Reports are deltas since the previous report of the same stage. */
struct cl_msg_report {
	enum cl_report_kind kind;
	uint32_t stage;    /* stage index (probe: 0; warmup: the WARMUP stage's) */
	uint32_t interval; /* 0-based interval index; final: the number of intervals before it */
	int64_t span_us;   /* agent time the delta covers; 0 when unknown (optional on the wire) */
	struct cl_metrics *metrics;            /* required except for kind probe; NULL: absent */
	struct cl_readiness_result *readiness; /* required for kind probe; NULL: absent */
	int64_t t_send_us;
	char *error; /* optional: why the agent failed the stage */
	/* optional, first report of a stage: how late the agent's start was against START_AT
	 * (agent clock converted with its offset estimate); 0 when on time or unknown */
	int64_t start_skew_us;
	/* optional: the agent's own stalls since its previous report of the stage, start_us on
	 * the agent's clock (at most CL_STALLS_MAX; dropped counts those left out); empty when
	 * none (then not sent) */
	struct cl_stall_list stalls;
	/* optional, final reports of an agent with source addresses (cl_source_conns); NULL:
	 * absent.  Owned (freed by cl_msg_free) when the message is. */
	struct cl_source_conns *sources;
};

/* WELCOME: the coordinator accepted a HELLO.  The envelope's run is the run the agent joins. */
struct cl_msg_welcome {
	uint32_t agent_id; /* the agent's id from now on (also the envelope's agent) */
	int64_t report_interval_us;
	int64_t t_coord_us;      /* coordinator clock when the reply was sent */
	int64_t t_coord_recv_us; /* ... when the request arrived; 0: same as t_coord_us */
};

/* REFUSE: the coordinator will not serve this request; the session ends. */
struct cl_msg_refuse {
	char *reason; /* for people: "bad token", "version 0.2.0 does not match 0.1.0" */
};

/* PROBE: run the readiness gate (DESIGN §5) with these settings. */
struct cl_cmd_probe {
	int64_t timeout_us;
	int64_t request_timeout_us;
	uint32_t consecutive;
	int64_t backoff_initial_us;
	int64_t backoff_max_us;
	uint64_t seed;         /* backoff jitter seed */
	char *body_json;       /* optional: the rendered probe body */
	char *prompt;          /* optional: used to render a body when body_json is absent */
	uint32_t max_tokens;   /* ditto (0: the gate's default) */
	char *extra_body_json; /* optional: ditto */
	struct cl_target_plan *target; /* optional: NULL probes the target given by PREPARE */
};

/* WARMUP: warmup requests, excluded from results. */
struct cl_cmd_warmup {
	struct cl_stage_plan stage; /* this agent's share: requests, duration, concurrency */
	uint32_t max_tokens;
	int64_t request_timeout_us; /* 0: the workload's */
	char *body_json;            /* optional: NULL uses the prepared workload's bodies */
};

/* PREPARE: what to load and how (the pre-rendered bodies travel here, once). */
struct cl_cmd_prepare {
	struct cl_target_plan target;
	struct cl_workload_plan workload;
	bool requests; /* send every finished request's record back in REQUESTS (the
			* scenario's output.requests); on the wire only when true */
};

/* BODIES: bodies [offset, offset + n_bodies) of the workload the last PREPARE began. */
struct cl_cmd_bodies {
	uint64_t offset;
	struct cl_request_body *bodies;
	size_t n_bodies;
	/* Encoder only, optional: the "bodies" value already encoded by cl_wire_pack_bodies
	 * (borrowed), sent as it is instead of encoding bodies again, so a part sent to many
	 * agents is encoded once.  The decoder leaves it NULL. */
	const char *packed;
	size_t packed_len;
};

/* START_AT: run a stage from an instant on the coordinator's clock. */
struct cl_cmd_start_at {
	struct cl_stage_plan stage; /* this agent's share of the stage */
	int64_t start_at_coord_us;  /* convert with cl_clock_est_to_local */
};

/* STOP: end the window of a stage now (drain, then REPORT final).  cut: no drain; the
 * requests in flight are cut at once (an interrupted run), so the final report goes within
 * moments whatever the target is doing. */
struct cl_cmd_stop {
	uint32_t stage;
	bool cut;
};

/* GENERATE: run a generate job (docs/protocol.md): the requests come in LEASE commands, the
 * answers go back in ANSWERS. */
struct cl_cmd_generate {
	struct cl_target_plan target;
	uint32_t concurrency;  /* this agent's streams in flight at most (>= 1) */
	uint32_t max_attempts; /* tries of one request before its failure is final (>= 1) */
	int64_t request_timeout_us;
	int64_t backoff_initial_us; /* before the second try; doubled per try, up to max */
	int64_t backoff_max_us;
	double rate_per_s; /* this agent's tries started per second, evenly spaced; 0: as fast
			    * as concurrency allows */
};

/* One request of a generate job: its custom_id and the body as given (JSON object text). */
struct cl_gen_item {
	char *id;
	char *body;
	size_t body_len;
};

/* LEASE: more requests for the generate job the last GENERATE began. */
struct cl_cmd_lease {
	struct cl_gen_item *items;
	size_t n_items;
};

/* CMD: the reply to a POLL.  Commands are idempotent by cmd_seq: the agent applies one only
 * when cmd_seq > its applied_seq, so a resent or repeated reply does nothing twice. */
struct cl_msg_cmd {
	enum cl_cmd cmd;
	uint64_t cmd_seq;
	int64_t t_coord_us;      /* coordinator clock when the reply was sent */
	int64_t t_coord_recv_us; /* ... when the POLL arrived; 0: same as t_coord_us */
	union {                  /* selected by cmd; NOOP, ABORT and QUIT have no arguments */
		struct cl_cmd_probe probe;
		struct cl_cmd_warmup warmup;
		struct cl_cmd_prepare prepare;
		struct cl_cmd_start_at start_at;
		struct cl_cmd_stop stop;
		struct cl_cmd_bodies bodies;
		struct cl_cmd_generate generate;
		struct cl_cmd_lease lease;
	};
};

/* The error classes of a try, as a stage counts them (enum cl_ctr from CL_CTR_FIRST_ERROR to
 * CL_CTR_LAST_ERROR): a generate answer's retries are counted by them. */
#define CL_GEN_ERR_CLASSES (CL_CTR_LAST_ERROR - CL_CTR_FIRST_ERROR + 1)

/* One finished request of a generate job, as an agent sends it back. */
struct cl_gen_answer {
	char *id;          /* the custom_id */
	uint32_t attempts; /* tries made (>= 1) */
	uint32_t status;   /* the last try's HTTP status (0: no response) */
	char *request_id;  /* optional: the response's id ("chatcmpl-..."), for people */
	char *body;        /* optional: the assembled chat.completion (JSON object text) when
			    * the request succeeded */
	char *error;       /* optional: why it failed for good (body absent) */
	int64_t ttft_us, total_us; /* the successful try's timing; 0 when it failed */
	int64_t ttfc_us;           /* ... to its first content token or tool call (0: none) */
	uint32_t output_tokens;    /* usage.completion_tokens of the answer (0: failed) */
	uint32_t prompt_tokens;    /* usage.prompt_tokens of the answer (0: failed or none) */
	bool retryable;            /* the failure was of a retryable kind (the tries ran out) */
	int32_t err_class; /* failed: the last try's class (an enum cl_ctr error); 0 answered */
	/* The tries before the last that failed, by class: retries[k] counts class
	 * CL_CTR_FIRST_ERROR + k (their sum is attempts - 1). */
	uint32_t retries[CL_GEN_ERR_CLASSES];
};

/* ANSWERS: finished requests of a generate job.  Deduplicated by (agent, seq) as REPORT. */
struct cl_msg_answers {
	struct cl_gen_answer *answers;
	size_t n_answers;
	int64_t t_send_us;
};

/* REQUESTS: per-request records of benchmark stages.  Deduplicated by (agent, seq) as
 * REPORT.  dropped counts the records this agent has dropped so far in the run (its buffer
 * was full because the coordinator fell behind): cumulative, so a lost message loses no
 * count. */
struct cl_msg_requests {
	struct cl_req_record *records; /* decode: allocated; encode: borrowed */
	size_t n_records;
	uint64_t dropped;
	int64_t t_send_us;
};

/* One message: the envelope every message carries, and its type's fields. */
struct cl_msg {
	enum cl_msg_type type;
	uint32_t proto; /* decode: the peer's version; encode: ignored (CL_PROTO_VERSION sent) */
	char *run;      /* run id ("" until WELCOME) */
	uint32_t agent; /* agent id (0 until WELCOME) */
	uint64_t seq;   /* requests: the agent's request counter; replies: the request's seq */
	bool owned;     /* see "Ownership" above */
	union {         /* selected by type; ACK has no fields of its own */
		struct cl_msg_hello hello;
		struct cl_msg_poll poll;
		struct cl_msg_report report;
		struct cl_msg_welcome welcome;
		struct cl_msg_refuse refuse;
		struct cl_msg_cmd cmd;
		struct cl_msg_answers answers;
		struct cl_msg_requests requests;
	};
};

/*
 * Frees what m owns (everything it points to when m->owned, nothing otherwise) and zeroes
 * it.  Safe on NULL, zeroed, and partly decoded messages.
 */
void cl_msg_free(struct cl_msg *m);

/* ---- Codec ---------------------------------------------------------------------------- */

/*
 * Appends the msgpack encoding of m to out (an initialised sbuffer; normally empty, since
 * one nng message carries one encoding).  proto is always CL_PROTO_VERSION.  Checks what
 * the decoder would: enums in range, strings within their caps and without NUL bytes (or,
 * for names and headers, control characters), finite numbers, non-negative durations, and
 * finally the whole encoding through cl_wire_check; so anything it encodes, cl_wire_decode
 * accepts.  Returns 0; CL_EINVAL (a field named in err) or CL_ETOOBIG (over a cap or
 * CL_WIRE_MAX_MSG); CL_ENOMEM.  On failure out is restored to its previous size.
 * Does not block; allocates only in out.
 */
CL_MUST_CHECK int cl_wire_encode(const struct cl_msg *m, msgpack_sbuffer *out, struct cl_err *err);

/*
 * cl_wire_encode for a REPORT whose t_send_us is to be set when it goes out, not when it is
 * made: the field is written at a fixed width, and *t_send_at gets the offset of its 8 value
 * bytes from the start of the encoding, for cl_wire_restamp.  An agent encodes a report once
 * (a resend carries the same seq) but may send it later (its share of the report spread) and
 * more than once.  Same results as cl_wire_encode; CL_EINVAL for any other type.
 */
CL_MUST_CHECK int cl_wire_encode_report(const struct cl_msg *m, msgpack_sbuffer *out,
					size_t *t_send_at, struct cl_err *err);

/* Sets the t_send_us of an encoding made by cl_wire_encode_report (msg: its first byte). */
void cl_wire_restamp(void *msg, size_t t_send_at, int64_t t_send_us);

/*
 * Appends the encoding of a BODIES command's "bodies" value (an array of n bodies, with the
 * checks cl_wire_encode makes) to out, for struct cl_cmd_bodies.packed.  Returns 0, or
 * CL_EINVAL / CL_ETOOBIG / CL_ENOMEM with the field in err (out then keeps its old size).
 */
CL_MUST_CHECK int cl_wire_pack_bodies(const struct cl_request_body *bodies, size_t n,
				      msgpack_sbuffer *out, struct cl_err *err);

/*
 * Decodes one message from buf[0..len), which is treated as hostile.  In order:
 * 1. cl_wire_check on the raw bytes, before msgpack-c allocates anything;
 * 2. msgpack-c unpacks (allocating at most ~24 bytes per object, see docs/protocol.md);
 * 3. the top level must be a map; `proto` is read first and must equal CL_PROTO_VERSION;
 * 4. every field is type- and range-checked, strings against their caps; unknown keys are
 *    ignored, duplicate known keys refused.
 * out is overwritten (free a previous message first) and, on success, owned: release it
 * with cl_msg_free.  Returns 0, or fills err with a reason naming the field and returns
 * CL_EPARSE (not well-formed msgpack: truncated, trailing bytes, a count larger than the
 * bytes left, too deep), CL_ETOOBIG (len > CL_WIRE_MAX_MSG, too many objects, a string over
 * its cap), CL_EVERSION (proto differs: the message names both versions), CL_EPROTO (a
 * missing field, a wrong type, an unknown type/cmd/state/kind, a value out of range), or
 * CL_ENOMEM.  On failure out owns nothing; its proto, type and seq keep what was read, for
 * logging.  buf is not referenced after return.
 */
CL_MUST_CHECK int cl_wire_decode(const void *buf, size_t len, struct cl_msg *out,
				 struct cl_err *err);

/* What cl_wire_check saw. */
struct cl_wire_stats {
	uint64_t objects;   /* every msgpack object, map keys and values included */
	uint32_t max_depth; /* deepest container (top-level container = 1; 0: a bare scalar) */
};

/*
 * The pre-validator: walks the raw msgpack in buf once, allocating nothing, and accepts it
 * only if it is exactly one well-formed object (no truncation, no trailing bytes, no 0xc1),
 * no container claims more elements than the bytes left could hold (each needs >= 1 byte),
 * nesting is at most CL_WIRE_MAX_DEPTH, and there are at most CL_WIRE_MAX_OBJECTS objects.
 * Returns 0 (and fills st when not NULL), CL_EPARSE or CL_ETOOBIG with the byte offset in err.
 */
CL_MUST_CHECK int cl_wire_check(const void *buf, size_t len, struct cl_wire_stats *st,
				struct cl_err *err);

/* ---- Helpers the protocol prescribes --------------------------------------------------- */

/*
 * Compares a received token with the expected one in time that depends only on the length
 * of the expected token (never on where they differ).  NULL is treated as "".
 */
bool cl_wire_token_equal(const char *expected, const char *received);

/*
 * How long after an interval's end an agent sends that interval's report (docs/protocol.md,
 * §3): a fixed share, by agent id, of a quarter of the report interval, at most
 * CL_WIRE_REPORT_SPREAD_MAX_US.  Every agent cuts its intervals at the same instants; sent at
 * once, N reports reach the coordinator together and the last waits behind N - 1 merges.
 * The shares follow the golden-ratio sequence, so agents 1..N land evenly for any N.
 */
#define CL_WIRE_REPORT_SPREAD_MAX_US 250000
int64_t cl_wire_report_spread_us(int64_t report_interval_us, uint32_t agent_id);

/*
 * Clock-offset estimate from request/reply timestamps, NTP style: for a request sent at
 * t_send (agent clock), received at t_coord_recv and answered at t_coord (coordinator
 * clock), the reply received at t_recv (agent clock):
 *   rtt    = (t_recv - t_send) - (t_coord - t_coord_recv)
 *   offset = ((t_coord_recv - t_send) + (t_coord - t_recv)) / 2      (coordinator - agent)
 * which is t_coord - (t_send + t_recv) / 2 when the reply is immediate.  The estimate is the
 * sample with the lowest rtt among the last CL_CLOCK_EST_WINDOW (lowest rtt = least queueing
 * asymmetry; a window, so slow drift between the clocks is followed).  Fixed memory; a
 * zeroed struct is an empty estimator.
 */
#define CL_CLOCK_EST_WINDOW 32
struct cl_clock_est {
	int64_t rtt_us[CL_CLOCK_EST_WINDOW];
	int64_t offset_us[CL_CLOCK_EST_WINDOW];
	uint32_t n;     /* samples held (<= window) */
	uint32_t next;  /* ring position of the next sample */
	uint64_t total; /* samples ever added */
};

/* Adds one exchange; t_coord_recv_us 0 means "same as t_coord_us".  Samples with a negative
 * rtt (clock misuse) are ignored.  Returns true if the sample was kept. */
bool cl_clock_est_add(struct cl_clock_est *e, int64_t t_send_us, int64_t t_coord_recv_us,
		      int64_t t_coord_us, int64_t t_recv_us);
/* The current estimate: false when there is no sample yet.  rtt_us may be NULL. */
bool cl_clock_est_get(const struct cl_clock_est *e, int64_t *offset_us, int64_t *rtt_us);
/* Converts a coordinator-clock instant to the agent's clock with the current estimate
 * (coord_us itself when there is no sample). */
int64_t cl_clock_est_to_local(const struct cl_clock_est *e, int64_t coord_us);

#endif
