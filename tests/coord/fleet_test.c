/* Tests of the coordinator's fleet over a real nng socket: joining, refusals (token, version,
 * garbage, a lost agent back), command delivery by seq, long polls (held, answered by a
 * command or at the hold's end, superseded), report de-duplication, liveness and the
 * coordinator's own stalls. */
#include "coordinator/fleet/fleet.h"
#include "coordinator/fleet/internal.h"

#include "chatload/clock.h"
#include "chatload/wire.h"

#include <nng/protocol/reqrep0/req.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

struct fixture {
	struct cl_fleet f;
	nng_socket req;
	char url[128];
	int reports;
	uint32_t last_stage;
	char session[CL_WIRE_MAX_RUN + 1]; /* the run id WELCOME gave: run + secret */
};

static void count_report(void *ctx, struct cl_fleet_agent *a, struct cl_msg_report *rep)
{
	struct fixture *fx = ctx;
	fx->reports++;
	fx->last_stage = rep->stage;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct cl_err err = { 0 };
	snprintf(fx->url, sizeof(fx->url), "ipc:///tmp/chatload-fleet-test-%d.ipc", (int)getpid());
	assert_int_equal(cl_fleet_open(&fx->f, "run-1", "s3cret", 2, 1000000, &err), 0);
	assert_int_equal(cl_fleet_listen(&fx->f, fx->url, NULL, false, &err), 0);
	fx->f.on_report = count_report;
	fx->f.ctx = fx;
	assert_int_equal(nng_req0_open(&fx->req), 0);
	nng_socket_set_ms(fx->req, NNG_OPT_RECVTIMEO, 3000);
	assert_int_equal(nng_dial(fx->req, fx->url, NULL, 0), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	nng_close(fx->req);
	cl_fleet_close(&fx->f);
	free(fx);
	return 0;
}

/* Serves the fleet until a reply reaches the agent's REQ socket (a held POLL takes up to
 * CL_WIRE_POLL_HOLD_US), at most 3 s; decodes it into out. */
static void serve_until_reply(struct fixture *fx, struct cl_msg *out)
{
	void *rbuf = NULL;
	size_t rlen = 0;
	int rc = NNG_EAGAIN;
	int64_t until = cl_mono_us() + 3000000;
	while (rc == NNG_EAGAIN && cl_mono_us() < until) {
		cl_fleet_serve(&fx->f, 20000);
		rc = nng_recv(fx->req, &rbuf, &rlen, NNG_FLAG_ALLOC | NNG_FLAG_NONBLOCK);
	}
	assert_int_equal(rc, 0);
	struct cl_err err = { 0 };
	rc = cl_wire_decode(rbuf, rlen, out, &err);
	nng_free(rbuf, rlen);
	assert_int_equal(rc, 0);
}

/* Sends raw bytes as the agent, lets the fleet answer, decodes the reply into out. */
static void roundtrip_raw(struct fixture *fx, const void *buf, size_t len, struct cl_msg *out)
{
	assert_int_equal(nng_send(fx->req, (void *)buf, len, 0), 0);
	serve_until_reply(fx, out);
}

static void encode(const struct cl_msg *m, msgpack_sbuffer *sb)
{
	struct cl_err err = { 0 };
	msgpack_sbuffer_init(sb);
	assert_int_equal(cl_wire_encode(m, sb, &err), 0);
}

static void roundtrip(struct fixture *fx, const struct cl_msg *m, struct cl_msg *out)
{
	msgpack_sbuffer sb;
	encode(m, &sb);
	roundtrip_raw(fx, sb.data, sb.size, out);
	msgpack_sbuffer_destroy(&sb);
}

static void hello(struct fixture *fx, const char *version, const char *token, int64_t pid,
		  struct cl_msg *out)
{
	struct cl_msg m = { .type = CL_MSG_HELLO, .run = "", .seq = 1 };
	m.hello = (struct cl_msg_hello){ .version = (char *)version,
					 .host = "testhost",
					 .workers = 3,
					 .token = (char *)token,
					 .pid = pid,
					 .t_send_us = cl_mono_us() };
	roundtrip(fx, &m, out);
	if (out->type == CL_MSG_WELCOME)
		snprintf(fx->session, sizeof(fx->session), "%s", out->run);
}

static void test_join(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", 101, &r);
	assert_int_equal(r.type, CL_MSG_WELCOME);
	assert_int_equal(r.welcome.agent_id, 1);
	/* The run id plus a per-agent secret that every later message must carry. */
	assert_int_equal(strncmp(r.run, "run-1/", 6), 0);
	assert_int_equal(strlen(r.run), 6 + 32);
	assert_int_equal(r.welcome.report_interval_us, 1000000);
	cl_msg_free(&r);
	assert_int_equal(fx->f.n, 1);
	assert_string_equal(fx->f.agents[0].host, "testhost");
	/* Over ipc there is no address: a local agent is named by its host alone. */
	assert_string_equal(fx->f.agents[0].address, "");
	assert_string_equal(fx->f.agents[0].label, "testhost");
	assert_int_equal(fx->f.agents[0].workers, 3);
	/* The same HELLO again (a lost WELCOME) is the same agent, not a second one. */
	hello(fx, CHATLOAD_VERSION, "s3cret", 101, &r);
	assert_int_equal(r.type, CL_MSG_WELCOME);
	assert_int_equal(r.welcome.agent_id, 1);
	cl_msg_free(&r);
	assert_int_equal(fx->f.n, 1);
}

static void test_bad_token(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "wrong", 102, &r);
	assert_int_equal(r.type, CL_MSG_REFUSE);
	assert_non_null(strstr(r.refuse.reason, "bad token"));
	cl_msg_free(&r);
	assert_int_equal(fx->f.n, 0);
}

static void test_bad_version(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, "0.0.1", "s3cret", 103, &r);
	assert_int_equal(r.type, CL_MSG_REFUSE);
	assert_non_null(strstr(r.refuse.reason, "0.0.1"));
	assert_non_null(strstr(r.refuse.reason, CHATLOAD_VERSION));
	cl_msg_free(&r);
	assert_int_equal(fx->f.n, 0);
}

static void test_garbage_then_join(void **state)
{
	struct fixture *fx = *state;
	static const unsigned char junk[] = { 0xdd, 0xff, 0x00, 0x00, 0x00 };
	struct cl_msg r = { 0 };
	roundtrip_raw(fx, junk, sizeof(junk), &r);
	assert_int_equal(r.type, CL_MSG_REFUSE);
	assert_non_null(strstr(r.refuse.reason, "malformed"));
	cl_msg_free(&r);
	assert_int_equal(fx->f.rejected, 1);
	/* The fleet goes on serving. */
	hello(fx, CHATLOAD_VERSION, "s3cret", 104, &r);
	assert_int_equal(r.type, CL_MSG_WELCOME);
	cl_msg_free(&r);
}

static void poll_once(struct fixture *fx, uint64_t applied, uint64_t seq, struct cl_msg *out)
{
	struct cl_msg m = { .type = CL_MSG_POLL, .run = fx->session, .agent = 1, .seq = seq };
	m.poll.state = CL_AGENT_IDLE;
	m.poll.applied_seq = applied;
	m.poll.t_send_us = cl_mono_us();
	roundtrip(fx, &m, out);
}

static void send_poll(struct fixture *fx, nng_ctx ctx, enum cl_agent_state st, uint64_t seq)
{
	struct cl_msg m = { .type = CL_MSG_POLL, .run = fx->session, .agent = 1, .seq = seq };
	m.poll.state = st;
	m.poll.t_send_us = cl_mono_us();
	msgpack_sbuffer sb;
	encode(&m, &sb);
	nng_msg *msg = NULL;
	assert_int_equal(nng_msg_alloc(&msg, 0), 0);
	assert_int_equal(nng_msg_append(msg, sb.data, sb.size), 0);
	msgpack_sbuffer_destroy(&sb);
	nng_aio *aio = NULL; /* nng 1.5 has no nng_ctx_sendmsg */
	assert_int_equal(nng_aio_alloc(&aio, NULL, NULL), 0);
	nng_aio_set_msg(aio, msg);
	nng_ctx_send(ctx, aio);
	nng_aio_wait(aio);
	assert_int_equal(nng_aio_result(aio), 0);
	nng_aio_free(aio);
}

/* A receive on a REQ context, waited for by looking (a receive that times out would end
 * the request: nng's REQ drops a request whose receive is cancelled). */
struct await {
	nng_aio *aio;
	atomic_bool done;
};

static void on_await(void *arg)
{
	struct await *w = arg;
	atomic_store(&w->done, true);
}

static void await_reply(nng_ctx ctx, struct await *w)
{
	atomic_init(&w->done, false);
	assert_int_equal(nng_aio_alloc(&w->aio, on_await, w), 0);
	nng_aio_set_timeout(w->aio, 10000);
	nng_ctx_recv(ctx, w->aio);
}

/* Whether the reply came; decoded into out when it did. */
static bool await_take(struct await *w, struct cl_msg *out)
{
	if (!atomic_load(&w->done))
		return false;
	assert_int_equal(nng_aio_result(w->aio), 0);
	nng_msg *msg = nng_aio_get_msg(w->aio);
	struct cl_err err = { 0 };
	int rc = cl_wire_decode(nng_msg_body(msg), nng_msg_len(msg), out, &err);
	nng_msg_free(msg);
	assert_int_equal(rc, 0);
	return true;
}

static void await_end(struct await *w)
{
	nng_aio_free(w->aio); /* cancels a receive still waiting */
}

/* Sends a POLL on ctx and starts waiting for its reply on w. */
static void poll_on(struct fixture *fx, nng_ctx ctx, enum cl_agent_state st, uint64_t seq,
		    struct await *w)
{
	send_poll(fx, ctx, st, seq);
	await_reply(ctx, w);
}

/* Waits up to 2 s, without serving the fleet, for the reply on w. */
static void await_without_serving(struct await *w, struct cl_msg *out)
{
	int64_t until = cl_mono_us() + 2000000;
	while (!await_take(w, out) && cl_mono_us() < until)
		cl_sleep_ns(1000000);
	assert_int_equal(out->type, CL_MSG_CMD);
}

/* Serves the fleet until it holds `held` POLLs in all (at most 3 s: a loaded machine may be
 * slow to deliver them), then 200 ms more. */
static void serve_until_held(struct fixture *fx, uint64_t held)
{
	int64_t until = cl_mono_us() + 3000000;
	while (fx->f.polls_held < held && cl_mono_us() < until)
		cl_fleet_serve(&fx->f, 20000);
	assert_int_equal(fx->f.polls_held, held);
	cl_fleet_serve(&fx->f, 200000);
}

/* Joins as the agent with this pid (agent 1 of a fresh fleet). */
static void join(struct fixture *fx, int64_t pid)
{
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", pid, &r);
	assert_int_equal(r.type, CL_MSG_WELCOME);
	cl_msg_free(&r);
}

/* A POLL with nothing to say is held: not answered while the fleet serves, answered as soon
 * as a command is queued for its agent (without another turn of serve), and the reply says
 * how long it was held. */
static void test_poll_held_until_command(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	join(fx, 114);
	nng_ctx ctx;
	struct await w;
	assert_int_equal(nng_ctx_open(&ctx, fx->req), 0);
	poll_on(fx, ctx, CL_AGENT_IDLE, 2, &w);
	serve_until_held(fx, 1);
	assert_false(await_take(&w, &r));
	assert_ptr_equal(fx->f.held_first, &fx->f.agents[0]);
	int64_t arrived = fx->f.agents[0].held_recv_us;
	struct cl_msg_cmd stop = { .cmd = CL_CMD_STOP };
	int64_t queued = cl_mono_us();
	uint64_t seq = cl_fleet_send(&fx->f, 0, &stop);
	await_without_serving(&w, &r);
	assert_int_equal(r.seq, 2);
	assert_int_equal(r.cmd.cmd, CL_CMD_STOP);
	assert_int_equal(r.cmd.cmd_seq, seq);
	/* it says when the POLL came and that it was answered when the command was queued */
	assert_true(r.cmd.t_coord_recv_us == arrived);
	assert_true(r.cmd.t_coord_us >= queued && queued - arrived >= 200000);
	assert_int_equal(fx->f.polls_answered_early, 1);
	assert_null(fx->f.held_first);
	cl_msg_free(&r);
	await_end(&w);
	nng_ctx_close(ctx);
}

/* A held POLL is answered NOOP when its hold is over: not before, not much after. */
static void test_poll_hold_ends_with_noop(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	join(fx, 115);
	nng_ctx ctx;
	struct await w;
	assert_int_equal(nng_ctx_open(&ctx, fx->req), 0);
	poll_on(fx, ctx, CL_AGENT_IDLE, 2, &w);
	bool got = false;
	int64_t until = cl_mono_us() + 3000000;
	while (!got && cl_mono_us() < until) {
		cl_fleet_serve(&fx->f, 50000);
		got = await_take(&w, &r);
	}
	assert_true(got);
	assert_int_equal(r.cmd.cmd, CL_CMD_NOOP);
	int64_t held = r.cmd.t_coord_us - r.cmd.t_coord_recv_us;
	assert_true(held >= CL_WIRE_POLL_HOLD_US - CL_WIRE_POLL_HOLD_BATCH_US);
	assert_true(held < CL_WIRE_POLL_HOLD_US + 1000000); /* + a loaded machine's delay */
	cl_msg_free(&r);
	await_end(&w);
	nng_ctx_close(ctx);
}

/* A newer POLL from the same agent (its state changed) replaces the one held: the old is
 * dropped unanswered, the new one carries the state and gets the next command. */
static void test_newer_poll_replaces_held(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	join(fx, 116);
	nng_ctx old, news;
	struct await wold, wnews;
	assert_int_equal(nng_ctx_open(&old, fx->req), 0);
	assert_int_equal(nng_ctx_open(&news, fx->req), 0);
	poll_on(fx, old, CL_AGENT_PREPARING, 2, &wold);
	serve_until_held(fx, 1);
	poll_on(fx, news, CL_AGENT_READY, 3, &wnews);
	serve_until_held(fx, 2);
	assert_int_equal(fx->f.agents[0].state, CL_AGENT_READY);
	struct cl_msg_cmd warm = { .cmd = CL_CMD_WARMUP };
	cl_fleet_send(&fx->f, 0, &warm);
	await_without_serving(&wnews, &r);
	assert_int_equal(r.seq, 3);
	assert_int_equal(r.cmd.cmd, CL_CMD_WARMUP);
	cl_msg_free(&r);
	cl_fleet_serve(&fx->f, 1200000); /* past the first POLL's hold */
	assert_false(await_take(&wold, &r));
	await_end(&wold);
	await_end(&wnews);
	nng_ctx_close(old);
	nng_ctx_close(news);
}

static void test_commands_by_seq(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", 105, &r);
	cl_msg_free(&r);
	poll_once(fx, 0, 2, &r);
	assert_int_equal(r.type, CL_MSG_CMD);
	assert_int_equal(r.cmd.cmd, CL_CMD_NOOP);
	assert_true(r.cmd.t_coord_us >= r.cmd.t_coord_recv_us);
	cl_msg_free(&r);
	struct cl_msg_cmd stop = { .cmd = CL_CMD_STOP };
	stop.stop.stage = 3;
	uint64_t s1 = cl_fleet_send(&fx->f, 0, &stop);
	struct cl_msg_cmd quit = { .cmd = CL_CMD_ABORT };
	uint64_t s2 = cl_fleet_send(&fx->f, 0, &quit);
	assert_true(s2 > s1);
	/* Not applied yet: the oldest is repeated until the agent says it applied it. */
	for (int i = 0; i < 2; i++) {
		poll_once(fx, 0, 3 + i, &r);
		assert_int_equal(r.cmd.cmd, CL_CMD_STOP);
		assert_int_equal(r.cmd.cmd_seq, s1);
		assert_int_equal(r.cmd.stop.stage, 3);
		cl_msg_free(&r);
	}
	poll_once(fx, s1, 5, &r);
	assert_int_equal(r.cmd.cmd, CL_CMD_ABORT);
	assert_int_equal(r.cmd.cmd_seq, s2);
	cl_msg_free(&r);
	poll_once(fx, s2, 6, &r);
	assert_int_equal(r.cmd.cmd, CL_CMD_NOOP);
	cl_msg_free(&r);
}

static void test_duplicate_report_counted_once(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", 106, &r);
	cl_msg_free(&r);
	struct cl_metrics m;
	assert_int_equal(cl_metrics_init(&m), 0);
	m.ctr[CL_CTR_COMPLETED] = 7;
	struct cl_msg rep = { .type = CL_MSG_REPORT, .run = fx->session, .agent = 1, .seq = 9 };
	rep.report = (struct cl_msg_report){
		.kind = CL_REPORT_INTERVAL, .stage = 2, .metrics = &m, .t_send_us = cl_mono_us()
	};
	msgpack_sbuffer sb;
	encode(&rep, &sb);
	for (int i = 0; i < 3; i++) { /* what a REQ resend looks like: the same bytes */
		roundtrip_raw(fx, sb.data, sb.size, &r);
		assert_int_equal(r.type, CL_MSG_ACK);
		assert_int_equal(r.seq, 9);
		cl_msg_free(&r);
	}
	msgpack_sbuffer_destroy(&sb);
	assert_int_equal(fx->reports, 1);
	assert_int_equal(fx->last_stage, 2);
	/* A late, older report is not counted either. */
	rep.seq = 8;
	roundtrip(fx, &rep, &r);
	assert_int_equal(r.type, CL_MSG_ACK);
	cl_msg_free(&r);
	assert_int_equal(fx->reports, 1);
	cl_metrics_destroy(&m);
}

static void test_unknown_agent_refused(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	poll_once(fx, 0, 2, &r); /* nobody joined */
	assert_int_equal(r.type, CL_MSG_REFUSE);
	assert_non_null(strstr(r.refuse.reason, "unknown agent"));
	cl_msg_free(&r);
}

static void test_forged_session_refused(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", 108, &r);
	cl_msg_free(&r);
	/* A peer that knows the run's name and the agent id but never presented the token. */
	snprintf(fx->session, sizeof(fx->session), "run-1");
	poll_once(fx, 0, 2, &r);
	assert_int_equal(r.type, CL_MSG_REFUSE);
	assert_non_null(strstr(r.refuse.reason, "unknown agent"));
	assert_string_equal(r.run, ""); /* and a refusal gives nothing away */
	cl_msg_free(&r);
	assert_int_equal(fx->f.agents[0].state, CL_AGENT_IDLE);
}

static void test_missing_after_silence(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", 107, &r);
	cl_msg_free(&r);
	assert_int_equal(fx->f.agents[0].live, CL_LIVE_OK);
	int64_t until = cl_mono_us() + CL_WIRE_MISSING_US + 300000;
	while (cl_mono_us() < until)
		cl_fleet_serve(&fx->f, 100000);
	assert_int_equal(fx->f.agents[0].live, CL_LIVE_MISSING);
	poll_once(fx, 0, 2, &r); /* it speaks again: back to ok */
	cl_msg_free(&r);
	assert_int_equal(fx->f.agents[0].live, CL_LIVE_OK);
}

/* A lost agent that asks to join again (the same process: host and pid) is told why it may
 * not, and a newcomer to a full run with a lost agent is told it may join the next run. */
static void test_lost_agent_back_told_why(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", 109, &r);
	cl_msg_free(&r);
	hello(fx, CHATLOAD_VERSION, "s3cret", 110, &r);
	cl_msg_free(&r);
	assert_int_equal(fx->f.n, 2);
	/* what update_liveness does after CL_WIRE_LOST_US of silence */
	fx->f.agents[0].live = CL_LIVE_LOST;
	fx->f.agents[0].lost_cause = CL_LOSS_SILENT;
	fx->f.agents[0].lost_at_us = cl_mono_us();
	hello(fx, CHATLOAD_VERSION, "s3cret", 109, &r);
	assert_int_equal(r.type, CL_MSG_REFUSE);
	assert_non_null(strstr(r.refuse.reason, "agent 1 (testhost) was declared lost in run "
						"'run-1' after 10 s without a word from it"));
	assert_non_null(strstr(r.refuse.reason, "may join the next one"));
	assert_null(strstr(r.refuse.reason, "already has"));
	cl_msg_free(&r);
	hello(fx, CHATLOAD_VERSION, "s3cret", 111, &r);
	assert_int_equal(r.type, CL_MSG_REFUSE);
	assert_non_null(strstr(r.refuse.reason, "does not take new ones (1 of them lost)"));
	cl_msg_free(&r);
	assert_int_equal(fx->f.n, 2);
}

/* The coordinator's own stall (as its watch reports one) is not the agents' silence: the
 * silence inside it is credited to them. */
static void test_own_stall_credited(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", 112, &r);
	cl_msg_free(&r);
	struct cl_fleet_agent *a = &fx->f.agents[0];
	int64_t now = cl_mono_us();
	a->last_seen_us = now - 5000000; /* silent 5 s, of which we were stalled 4.8 s */
	cli_fleet_watch_note(fx->f.watch, now - 4900000, 4800000);
	cl_fleet_serve(&fx->f, 50000);
	assert_int_equal(a->live, CL_LIVE_OK);
	assert_int_equal(fx->f.n_own, 1);
	assert_true(fx->f.own_stalls[0].length_us >= 4800000);
}

/* A stall longer than an agent waits for a reply: every agent silent since before it is
 * lost, as caused by the coordinator, at once, and told so if it asks to join again. */
static void test_own_stall_longer_than_agents_wait(void **state)
{
	struct fixture *fx = *state;
	struct cl_msg r = { 0 };
	hello(fx, CHATLOAD_VERSION, "s3cret", 113, &r);
	cl_msg_free(&r);
	struct cl_fleet_agent *a = &fx->f.agents[0];
	int64_t now = cl_mono_us();
	a->last_seen_us = now - 13000000;
	cli_fleet_watch_note(fx->f.watch, now - 12500000, 12400000);
	cl_fleet_serve(&fx->f, 50000);
	assert_int_equal(a->live, CL_LIVE_LOST);
	assert_int_equal(a->lost_cause, CL_LOSS_COORDINATOR_STALL);
	assert_int_equal(fx->f.n_own, 1);
	hello(fx, CHATLOAD_VERSION, "s3cret", 113, &r);
	assert_int_equal(r.type, CL_MSG_REFUSE);
	assert_non_null(strstr(r.refuse.reason, "when this coordinator could not run"));
	cl_msg_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_join, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_then_join, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commands_by_seq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poll_held_until_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poll_hold_ends_with_noop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_poll_replaces_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_report_counted_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_agent_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged_session_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_after_silence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_agent_back_told_why, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_stall_credited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_stall_longer_than_agents_wait, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
