/* sim_evhttp_probe: a measurement aid, not part of chatload-sim.  The smallest evhttp server
 * that streams chat.completion.chunk events on a timer, so bench_sim can compare evhttp's
 * cost per chunk with chatload-sim's own HTTP layer (docs/simulator.md, "Design choices").
 * Accepts the flags bench_sim passes (--listen is ignored: always 127.0.0.1:0; --port-file,
 * --ttft, --itl; the rest ignored).  No validation, no faults, no truth log. */
#include "chatload/clock.h"
#include "chatload/units.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct probe_stream {
	struct evhttp_request *req;
	struct event *timer;
	int64_t deadline_us;
	uint64_t sent;
	uint64_t seq;
};

static struct event_base *g_base;
static int64_t g_ttft_us = 100000, g_itl_us = 10000;
static uint64_t g_seq;

static void on_close(struct evhttp_connection *conn, void *arg)
{
	struct probe_stream *ps = arg;
	event_free(ps->timer);
	free(ps);
}

static void arm(struct probe_stream *ps)
{
	int64_t wait = ps->deadline_us - cl_mono_us();
	if (wait < 0)
		wait = 0;
	struct timeval tv = { wait / 1000000, wait % 1000000 };
	event_add(ps->timer, &tv);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct probe_stream *ps = arg;
	struct evbuffer *b = evbuffer_new();
	if (!b)
		return;
	evbuffer_add_printf(
	    b,
	    "data: {\"id\":\"chatcmpl-sim-%llu\",\"object\":\"chat.completion.chunk\","
	    "\"created\":1,\"model\":\"chatload-sim\",\"choices\":[{\"index\":0,"
	    "\"delta\":{\"content\":\" simulator\"},\"logprobs\":null,"
	    "\"finish_reason\":null}]}\n\n",
	    (unsigned long long)ps->seq);
	evhttp_send_reply_chunk(ps->req, b);
	evbuffer_free(b);
	ps->sent++;
	ps->deadline_us += g_itl_us;
	arm(ps);
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct probe_stream *ps = calloc(1, sizeof(*ps));
	if (!ps) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	ps->req = req;
	ps->seq = ++g_seq;
	ps->timer = evtimer_new(g_base, on_tick, ps);
	ps->deadline_us = cl_mono_us() + g_ttft_us;
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/event-stream");
	evhttp_send_reply_start(req, 200, "OK");
	evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_close, ps);
	arm(ps);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	event_base_loopbreak(g_base);
}

int main(int argc, char **argv)
{
	const char *port_file = NULL;
	struct cl_err err = { 0 };
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--port-file") == 0)
			port_file = argv[++i];
		else if (strcmp(argv[i], "--ttft") == 0)
			cl_parse_duration_us(argv[++i], &g_ttft_us, &err);
		else if (strcmp(argv[i], "--itl") == 0)
			cl_parse_duration_us(argv[++i], &g_itl_us, &err);
	}
	struct event_config *ec = event_config_new();
	event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER | EVENT_BASE_FLAG_NO_CACHE_TIME);
	g_base = event_base_new_with_config(ec);
	event_config_free(ec);
	struct evhttp *http = g_base ? evhttp_new(g_base) : NULL;
	struct evhttp_bound_socket *bs =
	    http ? evhttp_bind_socket_with_handle(http, "127.0.0.1", 0) : NULL;
	if (!bs) {
		fprintf(stderr, "sim_evhttp_probe: cannot listen\n");
		return 1;
	}
	evhttp_set_gencb(http, on_request, NULL);
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa, &sl);
	if (port_file) {
		char tmp[4200];
		snprintf(tmp, sizeof(tmp), "%.4096s.tmp", port_file);
		FILE *f = fopen(tmp, "w");
		if (!f || fprintf(f, "%d\n", ntohs(sa.sin_port)) < 0 || fclose(f) != 0 ||
		    rename(tmp, port_file) != 0) {
			fprintf(stderr, "sim_evhttp_probe: cannot write '%s'\n", port_file);
			return 1;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGUSR1, SIG_IGN); /* bench_sim's statistics reset */
	struct event *term = evsignal_new(g_base, SIGTERM, on_signal, NULL);
	event_add(term, NULL);
	event_base_dispatch(g_base);
	event_free(term);
	evhttp_free(http);
	event_base_free(g_base);
	return 0;
}
