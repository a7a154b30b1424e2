/* chatload-sim's connections: reading and framing HTTP/1.1 requests, dispatching them to the
 * API, and writing responses with a capped per-connection backlog. */
#ifndef CHATLOAD_SIM_CONN_H
#define CHATLOAD_SIM_CONN_H

#include "sim/sim.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Takes an accepted, non-blocking socket into a (pooled) connection and starts reading;
 * peer (may be NULL) is the client's address, kept for the truth log.  Returns false when out of
 * memory or events (fd is then still the caller's to close). */
bool cl_sim_conn_open(struct cl_sim *s, int fd, const struct sockaddr *peer);

/* True when c has no response in progress and nothing left to write. */
bool cl_sim_conn_idle(const struct cl_sim_conn *c);

/* Closes every open connection (cutting their streams) and frees the pool. */
void cl_sim_conn_free_pool(struct cl_sim *s);

/*
 * Writes n bytes on c: directly when nothing is queued, else (or for what the socket did
 * not take) into c's backlog, flushed when writable.  Returns 0, or CL_ECLOSED when the
 * peer is gone or CL_ETOOBIG when the backlog passed CL_SIM_BACKLOG_MAX; then the caller
 * closes c.  Never closes c itself.
 */
int cl_sim_conn_write(struct cl_sim_conn *c, const void *p, size_t n);

/*
 * Sends a whole response (status line, Content-Type application/json, Content-Length,
 * extra_headers (each ending "\r\n", may be NULL), body) and ends the request: the
 * connection closes afterwards unless the request was keep-alive.  Returns true when c is
 * still open; when false c must not be touched again.
 */
bool cl_sim_conn_respond(struct cl_sim_conn *c, int status, const char *extra_headers,
			 const char *body, size_t body_len);

/* As cl_sim_conn_respond with another Content-Type (e.g. the Prometheus text format's
 * "text/plain; version=0.0.4; charset=utf-8" for /metrics). */
bool cl_sim_conn_respond_typed(struct cl_sim_conn *c, int status, const char *content_type,
			       const char *extra_headers, const char *body, size_t body_len);

/* As cl_sim_conn_respond with an OpenAI-style error body (see cl_sim_render_error). */
bool cl_sim_conn_error(struct cl_sim_conn *c, int status, const char *extra_headers,
		       const char *message, const char *type, const char *code);

/*
 * Ends a response that the stream module wrote itself (the terminating chunk is sent):
 * closes c if the request asked for it or the server is draining, else serves any request
 * already buffered.  Returns true when c is still open.
 */
bool cl_sim_conn_done(struct cl_sim_conn *c);

/*
 * Ends a streamed response whose body is delimited by the connection's close
 * (--hold-after-done) without closing: c stays open, answers nothing more and counts as
 * idle for shutdown (closed at once when the server is draining).  Returns true when c is
 * still open.
 */
bool cl_sim_conn_hold(struct cl_sim_conn *c);

/* The "Keep-Alive: ...\r\n" header line a response on c carries (--close-after-answer
 * advertises llama.cpp's), or "" when c closes after this response anyway. */
const char *cl_sim_conn_keepalive_header(const struct cl_sim_conn *c);

/* Serves requests already buffered on c (after a response ended outside the read path). */
void cl_sim_conn_resume(struct cl_sim_conn *c);

/* Closes c now.  A stream still on it is ended with outcome ("client_gone", "cut") in the
 * truth log, or silently when outcome is NULL (its end was already logged). */
void cl_sim_conn_close(struct cl_sim_conn *c, const char *outcome);

/* "OK", "Not Found", ... for a status code. */
const char *cl_sim_http_reason(int status);

#endif
