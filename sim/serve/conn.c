/* chatload-sim's connections (see conn.h): reading and framing requests, writing responses. */
#include "conn.h"

#include "sim/api/api.h"
#include "http.h"
#include "sim/api/render.h"
#include "sim/sched/sched.h"
#include "sim/sched/stream.h"

#include "chatload/assert.h"
#include "chatload/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define READS_PER_WAKEUP 16

static void process_input(struct cl_sim_conn *c);

const char *cl_sim_http_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 411:
		return "Length Required";
	case 413:
		return "Payload Too Large";
	case 414:
		return "URI Too Long";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Unknown";
	}
}

static void set_write_armed(struct cl_sim_conn *c, bool on)
{
	if (on == c->write_armed)
		return;
	if (on)
		event_add(c->ev_write, NULL);
	else
		event_del(c->ev_write);
	c->write_armed = on;
}

static bool backlog_empty(const struct cl_sim_conn *c)
{
	return c->out_off >= c->out.len;
}

static void maybe_finish_drain(struct cl_sim *s)
{
	if (s->draining && s->n_conns == 0)
		event_base_loopbreak(s->base);
}

void cl_sim_conn_close(struct cl_sim_conn *c, const char *outcome)
{
	struct cl_sim *s = c->sim;
	if (!c->in_use)
		return;
	if (c->st.phase != CL_SIM_PHASE_IDLE)
		cl_sim_stream_abort(s, &c->st, outcome);
	event_del(c->ev_read);
	event_del(c->ev_write);
	c->write_armed = false;
	close(c->fd);
	c->fd = -1;
	c->in_use = false;
	c->busy = false;
	cl_buf_free(&c->in);
	cl_buf_free(&c->out);
	cl_buf_free(&c->body);
	c->out_off = 0;
	/* unlink from the open list, push on the free list */
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = NULL;
	c->next = s->free_conns;
	s->free_conns = c;
	CL_ASSERT(s->n_conns > 0);
	s->n_conns--;
	maybe_finish_drain(s);
}

int cl_sim_conn_write(struct cl_sim_conn *c, const void *p, size_t n)
{
	const char *q = p;
	if (!backlog_empty(c)) {
		if (c->out.len - c->out_off + n > CL_SIM_BACKLOG_MAX)
			return CL_ETOOBIG;
		return cl_buf_append(&c->out, q, n) ? CL_ETOOBIG : 0;
	}
	ssize_t w;
	do
		w = send(c->fd, q, n, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w == (ssize_t)n)
		return 0;
	if (w < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return CL_ECLOSED;
		w = 0;
	}
	cl_buf_reset(&c->out);
	c->out_off = 0;
	if (cl_buf_append(&c->out, q + w, n - (size_t)w))
		return CL_ETOOBIG;
	set_write_armed(c, true);
	return 0;
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
	struct cl_sim_conn *c = arg;
	while (!backlog_empty(c)) {
		ssize_t w =
		    send(fd, c->out.data + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			cl_sim_conn_close(c, "client_gone");
			return;
		}
		c->out_off += (size_t)w;
		CL_ASSERT(c->out_off <= c->out.len); /* send took no more than it was given */
	}
	/* Drained: give back memory a large response grew, keep small buffers. */
	if (c->out.cap > 65536)
		cl_buf_free(&c->out);
	else
		cl_buf_reset(&c->out);
	c->out_off = 0;
	set_write_armed(c, false);
	if ((c->close_after || c->sim->draining) && (!c->busy || c->held))
		cl_sim_conn_close(c, NULL);
}

/* After a response: close, or serve what is already buffered. */
static bool end_request(struct cl_sim_conn *c)
{
	c->busy = false;
	c->continue_sent = false;
	if (!c->keep_alive || c->sim->draining)
		c->close_after = true;
	if (c->close_after) {
		if (backlog_empty(c)) {
			cl_sim_conn_close(c, NULL);
			return false;
		}
		/* stop reading; on_writable closes once the backlog is out */
		event_del(c->ev_read);
		return true;
	}
	/* llama.cpp closes after every answer although it advertised keep-alive; closing
	 * only once the next request is here makes the client lose that race every time. */
	if (c->sim->cfg->close_after_answer)
		c->close_on_next = true;
	return true;
}

const char *cl_sim_conn_keepalive_header(const struct cl_sim_conn *c)
{
	if (!c->sim->cfg->close_after_answer || !c->keep_alive || c->sim->draining)
		return "";
	return "Keep-Alive: timeout=5, max=100\r\n";
}

bool cl_sim_conn_hold(struct cl_sim_conn *c)
{
	if (c->sim->draining) {
		c->busy = false;
		c->close_after = true;
		if (backlog_empty(c)) {
			cl_sim_conn_close(c, NULL);
			return false;
		}
		return true;
	}
	/* busy stays set, so nothing more is parsed as a request; the client's close (or
	 * shutdown) ends the connection. */
	c->held = true;
	return true;
}

bool cl_sim_conn_respond(struct cl_sim_conn *c, int status, const char *extra_headers,
			 const char *body, size_t body_len)
{
	return cl_sim_conn_respond_typed(c, status, "application/json", extra_headers, body,
					 body_len);
}

bool cl_sim_conn_respond_typed(struct cl_sim_conn *c, int status, const char *content_type,
			       const char *extra_headers, const char *body, size_t body_len)
{
	char head[1024];
	bool closing = !c->keep_alive || c->sim->draining;
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nServer: chatload-sim\r\nContent-Type: "
			 "%s\r\nContent-Length: %zu\r\n%s%s%s\r\n",
			 status, cl_sim_http_reason(status), content_type, body_len,
			 extra_headers ? extra_headers : "", closing ? "Connection: close\r\n" : "",
			 cl_sim_conn_keepalive_header(c));
	if (n < 0 || (size_t)n >= sizeof(head)) {
		cl_sim_conn_close(c, "client_gone");
		return false;
	}
	if (cl_sim_conn_write(c, head, (size_t)n) ||
	    (body_len && cl_sim_conn_write(c, body, body_len))) {
		cl_sim_conn_close(c, "client_gone");
		return false;
	}
	return end_request(c);
}

bool cl_sim_conn_error(struct cl_sim_conn *c, int status, const char *extra_headers,
		       const char *message, const char *type, const char *code)
{
	struct cl_buf b = { .max = 4096 };
	bool alive;
	if (cl_sim_render_error(&b, message, type, code, status)) {
		cl_buf_free(&b);
		cl_sim_conn_close(c, "client_gone");
		return false;
	}
	alive = cl_sim_conn_respond(c, status, extra_headers, b.data, b.len);
	cl_buf_free(&b);
	return alive;
}

bool cl_sim_conn_done(struct cl_sim_conn *c)
{
	uint64_t gen = c->gen;
	if (!end_request(c))
		return false;
	if (c->in.len > 0)
		process_input(c);
	return c->in_use && c->gen == gen;
}

void cl_sim_conn_resume(struct cl_sim_conn *c)
{
	if (c->in_use && !c->busy && c->in.len > 0)
		process_input(c);
}

/* Answers a framing error and closes: the rest of the bytes cannot be trusted. */
static void framing_error(struct cl_sim_conn *c, int status, const char *msg)
{
	const char *code = status == 413   ? "body_too_large"
			   : status == 431 ? "header_too_large"
					   : "invalid_request";
	c->keep_alive = false;
	c->busy = true;
	cl_sim_conn_error(c, status, NULL, msg, "invalid_request_error", code);
}

static void consume(struct cl_sim_conn *c, size_t n)
{
	if (n >= c->in.len) {
		cl_buf_reset(&c->in);
		return;
	}
	memmove(c->in.data, c->in.data + n, c->in.len - n);
	c->in.len -= n;
	c->in.data[c->in.len] = '\0';
}

static void send_continue(struct cl_sim_conn *c, const struct cl_sim_http_req *req)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	if (!req->expect_continue || c->continue_sent)
		return;
	c->continue_sent = true;
	if (cl_sim_conn_write(c, cont, sizeof(cont) - 1))
		cl_sim_conn_close(c, NULL);
}

/* Parses and dispatches every complete request in c->in while no response is running. */
static void process_input(struct cl_sim_conn *c)
{
	struct cl_sim *s = c->sim;
	struct cl_sim_http_req req;
	while (c->in_use && !c->busy && !c->close_after && c->in.len > 0) {
		int rc = cl_sim_http_parse(c->in.data, c->in.len, &req);
		const char *body;
		size_t body_len, total;
		if (rc == 0)
			return;
		if (rc < 0) {
			framing_error(c, req.error_status, req.error_msg);
			return;
		}
		if (req.has_length && req.content_length > s->cfg->max_body) {
			framing_error(c, 413, "request body too large");
			return;
		}
		if (req.chunked) {
			size_t used = 0;
			c->body.max = s->cfg->max_body;
			rc = cl_sim_http_dechunk(c->in.data + req.head_len,
						 c->in.len - req.head_len, &c->body, &used);
			if (rc == CL_ETOOBIG) {
				framing_error(c, 413, "request body too large");
				return;
			}
			if (rc < 0) {
				framing_error(c, 400, "malformed chunked request body");
				return;
			}
			if (rc == 0) {
				send_continue(c, &req);
				return;
			}
			body = c->body.data ? c->body.data : "";
			body_len = c->body.len;
			total = req.head_len + used;
		} else {
			if (c->in.len - req.head_len < req.content_length) {
				send_continue(c, &req);
				return;
			}
			body = c->in.data + req.head_len;
			body_len = (size_t)req.content_length;
			total = req.head_len + body_len;
		}
		/* The request framed lies within what was read. */
		CL_ASSERT(total <= c->in.len);
		if (c->close_on_next) {
			/* --close-after-answer: the request is read whole (so the close is a FIN,
			 * not a reset) and never answered. */
			CL_DEBUG(
			    "closing a connection after its answer, as a request arrives on it");
			consume(c, total);
			cl_sim_conn_close(c, NULL);
			return;
		}
		c->keep_alive = req.keep_alive;
		c->busy = true;
		uint64_t gen = c->gen;
		cl_sim_api_handle(s, c, &req, body, body_len);
		if (!c->in_use || c->gen != gen)
			return;
		consume(c, total);
		cl_buf_reset(&c->body);
	}
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct cl_sim_conn *c = arg;
	struct cl_sim *s = c->sim;
	size_t cap = CL_SIM_HTTP_MAX_HEAD + s->cfg->max_body + 4096;
	for (int i = 0; i < READS_PER_WAKEUP; i++) {
		ssize_t n = recv(fd, s->rbuf, CL_SIM_SCRATCH, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			cl_sim_conn_close(c, "client_gone");
			return;
		}
		if (c->in.len + (size_t)n > cap || cl_buf_append(&c->in, s->rbuf, (size_t)n)) {
			/* More than any acceptable request: a misbehaving client. */
			if (!c->busy)
				framing_error(c, 413, "request too large");
			else
				cl_sim_conn_close(c, "client_gone");
			return;
		}
		if ((size_t)n < CL_SIM_SCRATCH)
			break;
	}
	if (!c->busy)
		process_input(c);
}

static struct cl_sim_conn *conn_get(struct cl_sim *s)
{
	struct cl_sim_conn *c = s->free_conns;
	if (c) {
		s->free_conns = c->next;
	} else {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->ev_read = event_new(s->base, -1, 0, on_readable, c);
		c->ev_write = event_new(s->base, -1, 0, on_writable, c);
		if (!c->ev_read || !c->ev_write) {
			if (c->ev_read)
				event_free(c->ev_read);
			if (c->ev_write)
				event_free(c->ev_write);
			free(c);
			return NULL;
		}
	}
	uint64_t gen = c->gen;
	struct event *r = c->ev_read, *w = c->ev_write;
	memset(c, 0, sizeof(*c));
	c->gen = gen + 1;
	c->ev_read = r;
	c->ev_write = w;
	c->sim = s;
	c->st.heap_idx = SIZE_MAX;
	c->st.conn = c;
	cl_buf_init(&c->in, 0);
	cl_buf_init(&c->out, 0);
	cl_buf_init(&c->body, s->cfg->max_body);
	return c;
}

/* The client's address as the truth log names it ("127.0.0.2"), once per connection: a
 * source-address pool is checked by what the server saw. */
static void peer_text(const struct sockaddr *sa, char *out, size_t n)
{
	out[0] = '\0';
	if (!sa)
		return;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)n);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
			  (socklen_t)n);
}

bool cl_sim_conn_open(struct cl_sim *s, int fd, const struct sockaddr *peer)
{
	int one = 1;
	/* Each SSE event must leave when it is written, not when Nagle decides. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct cl_sim_conn *c = conn_get(s);
	if (!c)
		return false;
	c->fd = fd;
	c->in_use = true;
	peer_text(peer, c->peer, sizeof(c->peer));
	event_assign(c->ev_read, s->base, fd, EV_READ | EV_PERSIST, on_readable, c);
	event_assign(c->ev_write, s->base, fd, EV_WRITE | EV_PERSIST, on_writable, c);
	if (event_add(c->ev_read, NULL) != 0) {
		c->in_use = false;
		c->fd = -1;
		c->next = s->free_conns;
		s->free_conns = c;
		return false;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	/* The timer heap holds one stream per connection up to this bound (sched.c). */
	CL_ASSERT(s->n_conns <= s->cfg->max_connections);
	return true;
}

bool cl_sim_conn_idle(const struct cl_sim_conn *c)
{
	return (!c->busy || c->held) && backlog_empty(c);
}

void cl_sim_conn_free_pool(struct cl_sim *s)
{
	while (s->conns)
		cl_sim_conn_close(s->conns, "cut");
	while (s->free_conns) {
		struct cl_sim_conn *c = s->free_conns;
		s->free_conns = c->next;
		event_free(c->ev_read);
		event_free(c->ev_write);
		free(c);
	}
}
