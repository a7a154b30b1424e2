/* chatload-sim's server (see server.h): the listening socket, accepting, signals and the
 * orderly shutdown, and building and tearing down the whole process state. */
#include "server.h"

#include "chatload/clock.h"
#include "chatload/log.h"
#include "conn.h"
#include "sim/sched/sched.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define ACCEPTS_PER_WAKEUP 256
#define FLUSH_INTERVAL_US  100000

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct cl_sim *s = arg;
	for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
		struct sockaddr_storage peer;
		socklen_t peer_len = sizeof(peer);
		int fd =
		    accept4(lfd, (struct sockaddr *)&peer, &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE) {
				/* Out of descriptors: shed one pending connection with the spare
				 * descriptor so the listener does not spin. */
				CL_WARN("out of file descriptors at %u connections", s->n_conns);
				if (s->spare_fd >= 0) {
					close(s->spare_fd);
					fd = accept(lfd, NULL, NULL);
					if (fd >= 0)
						close(fd);
					s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				}
			}
			return;
		}
		if (s->n_conns >= s->cfg->max_connections) {
			close(fd);
			continue;
		}
		if (!cl_sim_conn_open(s, fd, (const struct sockaddr *)&peer))
			close(fd);
	}
}

/* ---- shutdown ------------------------------------------------------------------------- */

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
	struct cl_sim *s = arg;
	CL_INFO("grace period over: cutting %u connections", s->n_conns);
	while (s->conns)
		cl_sim_conn_close(s->conns, "cut");
	event_base_loopbreak(s->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct cl_sim *s = arg;
	if (s->draining) {
		CL_INFO("second signal: exiting now");
		on_grace(-1, 0, s);
		return;
	}
	s->draining = true;
	CL_INFO("signal %d: draining %u connections (grace %lldms)", (int)sig, s->n_conns,
		(long long)(s->cfg->grace_us / 1000));
	if (s->ev_listen)
		event_del(s->ev_listen);
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		s->listen_fd = -1;
	}
	/* Requests still waiting for a batch slot never started decoding: cut them now. */
	while (s->q_head)
		cl_sim_conn_close(s->q_head->conn, "cut");
	/* Idle keep-alive connections have nothing to finish, and a request held by the hang
	 * fault would never finish. */
	struct cl_sim_conn *c = s->conns;
	while (c) {
		struct cl_sim_conn *next = c->next;
		if (cl_sim_conn_idle(c))
			cl_sim_conn_close(c, NULL);
		else if (c->st.phase == CL_SIM_PHASE_HANGING)
			cl_sim_conn_close(c, "cut");
		c = next;
	}
	if (s->n_conns == 0) {
		event_base_loopbreak(s->base);
		return;
	}
	struct timeval tv = { .tv_sec = s->cfg->grace_us / 1000000,
			      .tv_usec = s->cfg->grace_us % 1000000 };
	event_add(s->ev_grace, &tv);
}

/* SIGUSR1: start the chunk statistics afresh (a benchmark measures a steady window). */
static void on_reset_stats(evutil_socket_t sig, short what, void *arg)
{
	struct cl_sim *s = arg;
	cl_sim_stats_reset_chunks(&s->stats);
	s->chunks_at_tick = 0;
	CL_INFO("chunk statistics reset");
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct cl_sim *s = arg;
	/* Once a second, at debug level: what the loop did, for people watching a run. */
	if (++s->ticks % 10 == 0 && cl_log_level() <= CL_LOG_DEBUG) {
		CL_DEBUG("%llu chunks in the last second, max lateness %lldus, %u connections, %u "
			 "decoding, %u queued",
			 (unsigned long long)(s->stats.chunks - s->chunks_at_tick),
			 (long long)s->stats.late_max_tick_us, s->n_conns, s->active, s->queued);
		s->chunks_at_tick = s->stats.chunks;
		s->stats.late_max_tick_us = 0;
	}
	if (cl_sim_truth_flush(&s->truth))
		CL_WARN("cannot write truth log '%s': %s", s->cfg->truth_log, strerror(errno));
}

/* ---- setup ---------------------------------------------------------------------------- */

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			return in6->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

int cl_sim_write_port_file(const char *path, int port, struct cl_err *err)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%.4096s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		return cl_err_set(err, CL_EIO, "cannot write port file '%s': %s", tmp,
				  strerror(errno));
	int ok = fprintf(f, "%d\n", port) > 0;
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return cl_err_set(err, CL_EIO, "cannot write port file '%s': %s", path,
				  strerror(e));
	}
	return 0;
}

static int open_listener(struct cl_sim *s, struct cl_err *err)
{
	const struct cl_sim_config *cfg = s->cfg;
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(cfg->listen_host, cfg->listen_port, &hints, &res);
	if (rc != 0)
		return cl_err_set(err, CL_EINVAL, "cannot resolve listen address '%s': %s",
				  cfg->listen_host, gai_strerror(rc));
	if (!cfg->allow_remote && !is_loopback(res->ai_addr)) {
		freeaddrinfo(res);
		return cl_err_set(err, CL_EREFUSED,
				  "refusing to listen on non-loopback address '%s' (pass "
				  "--allow-remote to permit it)",
				  cfg->listen_host);
	}
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0) {
		rc = cl_err_set(err, CL_ESYS, "cannot create socket: %s", strerror(errno));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* --processes: every process listens on the same port and the kernel spreads the
	 * connections over their sockets, so no process accepts for another. */
	if (cfg->reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
		rc = cl_err_set(err, CL_ESYS, "cannot set SO_REUSEPORT: %s", strerror(errno));
		goto out;
	}
	if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
		rc = cl_err_set(err, CL_ESYS, "cannot listen on '%s:%s': %s", cfg->listen_host,
				cfg->listen_port, strerror(errno));
		goto out;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
		rc = cl_err_set(err, CL_ESYS, "getsockname failed: %s", strerror(errno));
		goto out;
	}
	s->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
						: ((struct sockaddr_in6 *)&ss)->sin6_port);
	s->listen_fd = fd;
	fd = -1;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return rc;
}

int cl_sim_server_init(struct cl_sim *s, const struct cl_sim_config *cfg, int64_t start_us,
		       struct cl_err *err)
{
	struct event_config *ec = NULL;
	int rc;

	s->inited = true;
	s->cfg = cfg;
	s->start_us = start_us;
	s->start_wall_s = cl_wall_us() / 1000000;
	s->listen_fd = -1;
	s->spare_fd = -1;
	s->truth.fd = -1;
	s->scratch = malloc(CL_SIM_SCRATCH);
	s->rbuf = malloc(CL_SIM_SCRATCH);
	if (!s->scratch || !s->rbuf)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	/* Touch them now, so the first chunk does not pay for the page faults. */
	memset(s->scratch, 0, CL_SIM_SCRATCH);
	memset(s->rbuf, 0, CL_SIM_SCRATCH);
	/* Wake-ups as close to the deadline as the kernel can (default slack is 50 µs). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if ((rc = cl_sim_truth_open(&s->truth, cfg->truth_log, err)))
		return rc;
	if (cl_sim_metrics_init(s) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory for the prefix cache");
	if ((rc = cl_sim_sched_init(s, err)))
		return rc;

	/* Precise timers (timerfd) give µs deadlines instead of epoll's ms; no cached time,
	 * so a timeout added late in a busy iteration is measured from the real now. */
	ec = event_config_new();
	if (!ec)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER | EVENT_BASE_FLAG_NO_CACHE_TIME);
	s->base = event_base_new_with_config(ec);
	event_config_free(ec);
	if (!s->base)
		return cl_err_set(err, CL_ESYS, "cannot create the event loop");

	if ((rc = open_listener(s, err)))
		return rc;
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->ev_listen = event_new(s->base, s->listen_fd, EV_READ | EV_PERSIST, on_accept, s);
	s->ev_sigterm = evsignal_new(s->base, SIGTERM, on_signal, s);
	s->ev_sigint = evsignal_new(s->base, SIGINT, on_signal, s);
	s->ev_sigusr1 = evsignal_new(s->base, SIGUSR1, on_reset_stats, s);
	s->ev_grace = evtimer_new(s->base, on_grace, s);
	s->ev_flush = event_new(s->base, -1, EV_PERSIST, on_flush, s);
	s->ev_timer = evtimer_new(s->base, cl_sim_sched_on_timer, s);
	if (!s->ev_listen || !s->ev_sigterm || !s->ev_sigint || !s->ev_sigusr1 || !s->ev_grace ||
	    !s->ev_flush || !s->ev_timer)
		return cl_err_set(err, CL_ENOMEM, "cannot create events");
	struct timeval flush_tv = { 0, FLUSH_INTERVAL_US };
	if (event_add(s->ev_listen, NULL) || event_add(s->ev_sigterm, NULL) ||
	    event_add(s->ev_sigint, NULL) || event_add(s->ev_sigusr1, NULL) ||
	    event_add(s->ev_flush, &flush_tv))
		return cl_err_set(err, CL_ESYS, "cannot register events");
	signal(SIGPIPE, SIG_IGN);

	if (cfg->port_file && (rc = cl_sim_write_port_file(cfg->port_file, s->port, err)))
		return rc;
	if (cfg->processes > 1)
		CL_INFO("process %u (of %u) listening on %s:%d (model %s)", cfg->process_index,
			cfg->processes, cfg->listen_host, s->port, cfg->models[0]);
	else
		CL_INFO("listening on %s:%d (model %s)", cfg->listen_host, s->port, cfg->models[0]);
	return 0;
}

int cl_sim_server_run(struct cl_sim *s)
{
	if (event_base_dispatch(s->base) < 0)
		return CL_ESYS;
	return 0;
}

void cl_sim_server_destroy(struct cl_sim *s)
{
	if (!s->inited)
		return;
	cl_sim_conn_free_pool(s);
	if (s->ev_listen)
		event_free(s->ev_listen);
	if (s->ev_sigterm)
		event_free(s->ev_sigterm);
	if (s->ev_sigint)
		event_free(s->ev_sigint);
	if (s->ev_sigusr1)
		event_free(s->ev_sigusr1);
	if (s->ev_grace)
		event_free(s->ev_grace);
	if (s->ev_flush)
		event_free(s->ev_flush);
	if (s->ev_timer)
		event_free(s->ev_timer);
	s->ev_listen = s->ev_sigterm = s->ev_sigint = s->ev_sigusr1 = NULL;
	s->ev_grace = s->ev_flush = NULL;
	s->ev_timer = NULL;
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	s->listen_fd = s->spare_fd = -1;
	if (s->base)
		event_base_free(s->base);
	s->base = NULL;
	cl_sim_sched_destroy(s);
	cl_sim_metrics_destroy(s);
	cl_sim_truth_close(&s->truth);
	s->inited = false;
	free(s->scratch);
	free(s->rbuf);
	s->scratch = s->rbuf = NULL;
}
