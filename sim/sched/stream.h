/* chatload-sim's streams: the timing of each chunk, what it carries, the faults that hit
 * mid-stream, and the truth-log line when a response ends. */
#ifndef CHATLOAD_SIM_STREAM_H
#define CHATLOAD_SIM_STREAM_H

#include "sim/sim.h"

/*
 * Starts the response to an accepted chat request whose fields the API filled in
 * (st->conn set, phase IDLE): sends the SSE headers for a streamed request, then asks the
 * capacity model for a slot.  Returns false when the connection was lost (then closed).
 */
bool cl_sim_stream_begin(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us);

/*
 * Answers an accepted streamed request whose error-chunk fault speaks json-200: status 200,
 * application/json, the dialect's error body at once instead of a stream (a body has no
 * middle for --fault-at to name).  Logged as failed.  Returns true when c is still open.
 */
bool cl_sim_stream_fail_at_once(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us);

/*
 * Holds an accepted request with the hang fault: nothing is ever sent on its connection (no
 * headers, no byte) and nothing more is read from it as a request; it takes no batch slot.
 * It ends when the client leaves (truth log "client_gone") or at shutdown, when it is cut
 * at once ("cut"), logged failed with http_status 0.
 */
void cl_sim_stream_hang(struct cl_sim *s, struct cl_sim_stream *st);

/* Called by the capacity model when st gets its slot at start_us: schedules the first
 * chunk at start + ttft (+ prefill) + (tokens in it - 1) * itl. */
void cl_sim_stream_start(struct cl_sim *s, struct cl_sim_stream *st, int64_t start_us);

/* Called by the timer when st's deadline has come (now_us >= deadline): writes the chunk,
 * then schedules the next one or ends the response. */
void cl_sim_stream_fire(struct cl_sim *s, struct cl_sim_stream *st, int64_t now_us);

/* Ends st early (the client left, or shutdown cut it): leaves the heap or the queue,
 * frees its slot, logs it with outcome (NULL: already logged). */
void cl_sim_stream_abort(struct cl_sim *s, struct cl_sim_stream *st, const char *outcome);

/* Logs a request that got an error status and no stream (400, 401, 404, 429, 500, 503). */
void cl_sim_stream_log_rejected(struct cl_sim *s, const struct cl_sim_stream *st, int status);

#endif
