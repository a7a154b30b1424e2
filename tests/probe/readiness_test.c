/* Tests of the readiness gate against the real chatload-sim, started as a child process on an
 * ephemeral loopback port: phase timing, not-yet vs fatal, deadlines, cancellation, verdicts. */
#include "client/probe/probe_http.h"
#include "client/probe/readiness.h"

#include "chatload/clock.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define MS  1000LL
#define SEC 1000000LL

#define assert_contains(hay, needle)                                                               \
	do {                                                                                       \
		const char *h_ = (hay), *n_ = (needle);                                            \
		if (!h_ || !strstr(h_, n_))                                                        \
			fail_msg("expected \"%s\" in \"%s\"", n_, h_ ? h_ : "(null)");             \
	} while (0)

/* lo <= v <= hi, printing all three. */
#define assert_between(v, lo, hi)                                                                  \
	do {                                                                                       \
		long long v_ = (v), lo_ = (lo), hi_ = (hi);                                        \
		if (v_ < lo_ || v_ > hi_)                                                          \
			fail_msg("%s = %lld, wanted [%lld, %lld]", #v, v_, lo_, hi_);              \
	} while (0)

static char tmp_dir[PATH_MAX];

struct sim;
static struct sim *running[4]; /* stopped by the per-test teardown if a test fails early */

struct sim {
	pid_t pid;
	int port;
	int64_t spawned_us; /* monotonic, just before fork */
	char url[64];
	char log[PATH_MAX + 32];
};

/* Starts chatload-sim with the given extra flags (NULL-terminated) and waits for its port. */
static void sim_start(struct sim *s, ...)
{
	const char *bin = getenv("CHATLOAD_SIM_BIN");
	if (!bin)
		fail_msg("CHATLOAD_SIM_BIN is not set");
	static int n;
	char port_file[PATH_MAX + 32];
	snprintf(port_file, sizeof(port_file), "%s/port.%d", tmp_dir, ++n);
	snprintf(s->log, sizeof(s->log), "%s/sim.%d.log", tmp_dir, n);
	const char *argv[64] = { bin,       "--listen", "127.0.0.1:0", "--port-file",
				 port_file, "--grace",  "100ms" };
	int argc = 7;
	va_list ap;
	va_start(ap, s);
	const char *a;
	while ((a = va_arg(ap, const char *)) && argc < 62)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	s->spawned_us = cl_mono_us();
	s->pid = fork();
	assert_true(s->pid >= 0);
	for (size_t i = 0; s->pid > 0 && i < sizeof(running) / sizeof(running[0]); i++)
		if (!running[i]) {
			running[i] = s;
			break;
		}
	if (s->pid == 0) {
		FILE *f = freopen(s->log, "w", stderr);
		(void)f;
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(port_file, "r");
		if (f) {
			int ok = fscanf(f, "%d", &s->port) == 1;
			fclose(f);
			unlink(port_file);
			if (ok) {
				snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d/v1", s->port);
				return;
			}
		}
		int status;
		if (waitpid(s->pid, &status, WNOHANG) == s->pid)
			fail_msg("chatload-sim exited (status %d) before listening; see %s", status,
				 s->log);
		usleep(10000);
	}
	fail_msg("chatload-sim wrote no port file within 5s; see %s", s->log);
}

static void sim_stop(struct sim *s)
{
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i] == s)
			running[i] = NULL;
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	for (int i = 0; i < 300; i++) {
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			return;
		}
		usleep(10000);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

/* A port nothing listens on: bound once by us, then closed. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static struct cl_target_plan target_for(const char *url, const char *model)
{
	struct cl_target_plan t = { 0 };
	t.base_url = (char *)url;
	t.model = (char *)model;
	t.tls_verify = true;
	return t;
}

/* Short waits so phase times are known to within about a second. */
static struct cl_probe_cfg cfg_for(const struct cl_target_plan *t, int64_t timeout_us)
{
	struct cl_probe_cfg c = { 0 };
	c.target = t;
	c.timeout_us = timeout_us;
	c.request_timeout_us = 5 * SEC;
	c.backoff_initial_us = 100 * MS;
	c.backoff_max_us = 1 * SEC;
	c.max_tokens = 4;
	c.seed = 42;
	return c;
}

struct counter {
	unsigned calls;
	int64_t max_next_us;
	atomic_int *cancel_on_failure;
};

static void count_progress(void *ctx, const struct cl_readiness_result *now, int64_t next_us)
{
	struct counter *c = ctx;
	c->calls++;
	if (next_us > c->max_next_us)
		c->max_next_us = next_us;
	if (c->cancel_on_failure && now->failing_since_us >= 0)
		atomic_store(c->cancel_on_failure, 1);
}

static void print_verdict(const struct cl_readiness_result *r)
{
	char v[1024];
	cl_readiness_describe(r, v, sizeof(v));
	print_message("verdict: %s\n", v);
}

/* Models load at 2s, generation works from 6s: each phase's pass time is recorded. */
static void test_phases_pass_in_order(void **state)
{
	struct sim s;
	sim_start(&s, "--loading-for", "2s", "--chat-ready-after", "6s", "--ttft", "20ms", "--itl",
		  "1ms", NULL);
	struct cl_target_plan t = target_for(s.url, NULL);
	struct cl_probe_cfg cfg = cfg_for(&t, 30 * SEC);
	struct cl_readiness_result r;
	struct counter cnt = { 0 };
	int64_t start = cl_mono_us();
	int rc = cl_probe_run(&cfg, count_progress, &cnt, NULL, &r);
	/* the simulator's clock started after the fork and before its port file appeared */
	int64_t offset = start - s.spawned_us;
	sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, 0);
	assert_int_equal(r.status, CL_READY_PASSED);
	assert_int_equal(r.phase, CL_READY_GENERATION);
	assert_string_equal(r.model, "chatload-sim"); /* no model named: the first listed */
	assert_between(r.phase_passed_us[CL_READY_CONNECT], 0, 500 * MS);
	/* A phase passes at most one backoff cap (1s) plus an attempt after it becomes possible,
	 * and never before. */
	assert_between(r.phase_passed_us[CL_READY_MODELS], 2 * SEC - offset, 3 * SEC + 300 * MS);
	assert_between(r.phase_passed_us[CL_READY_GENERATION], 6 * SEC - offset,
		       7 * SEC + 500 * MS);
	assert_true(r.attempts >= 3); /* 503s first, then 2 successes in a row */
	assert_between(r.elapsed_us, r.phase_passed_us[CL_READY_GENERATION],
		       r.phase_passed_us[CL_READY_GENERATION] + 100 * MS);
	assert_between(r.probe_ttft_us, 15 * MS, 1 * SEC);
	assert_true(r.probe_total_us >= r.probe_ttft_us);
	assert_contains(r.last_error, "HTTP 503"); /* the last error seen is kept */
	assert_true(cnt.calls >= r.attempts + 2);
	assert_between(cnt.max_next_us, 1, 1 * SEC);
	char v[1024];
	cl_readiness_describe(&r, v, sizeof(v));
	assert_contains(v, "ready after ");
	assert_contains(v, "attempts; probe ttft ");
}

/* Waits asked for before the next attempt, apart for the early phases and for generation. */
struct waits {
	int64_t early_max_us, gen_max_us;
	unsigned early, gen;
};

static void record_waits(void *ctx, const struct cl_readiness_result *now, int64_t next_us)
{
	struct waits *w = ctx;
	if (next_us <= 0 || now->status != CL_READY_PENDING)
		return;
	if (now->phase == CL_READY_GENERATION) {
		w->gen++;
		w->gen_max_us = next_us > w->gen_max_us ? next_us : w->gen_max_us;
	} else {
		w->early++;
		w->early_max_us = next_us > w->early_max_us ? next_us : w->early_max_us;
	}
}

/* With a long readiness.backoff (4s..8s), /v1/models is still polled on its own short cap
 * (1s): the gate sees the model loaded within that cap plus an attempt, while generation
 * attempts keep the long backoff. */
static void test_early_phases_short_cap(void **state)
{
	struct sim s;
	sim_start(&s, "--loading-for", "3s", "--chat-ready-after", "1h", NULL);
	struct cl_target_plan t = target_for(s.url, NULL);
	struct cl_probe_cfg cfg = cfg_for(&t, 12 * SEC);
	cfg.backoff_initial_us = 4 * SEC;
	cfg.backoff_max_us = 8 * SEC;
	struct cl_readiness_result r;
	struct waits w = { 0 };
	int64_t start = cl_mono_us();
	int rc = cl_probe_run(&cfg, record_waits, &w, NULL, &r);
	int64_t offset = start - s.spawned_us;
	sim_stop(&s);
	print_verdict(&r);
	print_message("early waits %u (max %lld us), generation waits %u (max %lld us)\n", w.early,
		      (long long)w.early_max_us, w.gen, (long long)w.gen_max_us);
	assert_int_equal(rc, CL_ETIMEDOUT);
	assert_true(w.early >= 2);
	assert_between(w.early_max_us, 1, CL_PROBE_EARLY_BACKOFF_MAX_US);
	assert_between(r.phase_passed_us[CL_READY_MODELS], 3 * SEC - offset,
		       3 * SEC + CL_PROBE_EARLY_BACKOFF_MAX_US + 300 * MS);
	/* Generation fails from 3s to the deadline at 12s: its waits are drawn from 4s and 8s
	 * ceilings, not the early cap (each draw is under 1s with a chance of 1 in 4 or 8, and
	 * small draws make more of them). */
	assert_true(w.gen >= 1);
	assert_true(w.gen_max_us > CL_PROBE_EARLY_BACKOFF_MAX_US);
}

/* A target that never becomes ready: the gate gives up at the deadline, not long after. */
static void test_never_ready_times_out(void **state)
{
	struct sim s;
	sim_start(&s, "--chat-ready-after", "1h", NULL);
	struct cl_target_plan t = target_for(s.url, "chatload-sim");
	struct cl_probe_cfg cfg = cfg_for(&t, 4 * SEC);
	struct cl_readiness_result r;
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, CL_ETIMEDOUT);
	assert_int_equal(r.status, CL_READY_TIMED_OUT);
	assert_int_equal(r.phase, CL_READY_GENERATION);
	assert_between(r.elapsed_us, 4 * SEC, 4 * SEC + 400 * MS);
	assert_between(r.phase_passed_us[CL_READY_MODELS], 0, 500 * MS);
	assert_int_equal(r.phase_passed_us[CL_READY_GENERATION], -1);
	assert_true(r.attempts > 1);
	assert_contains(r.last_error, "HTTP 503");
	assert_between(r.failing_since_us, 0, 500 * MS);
	char v[1024];
	cl_readiness_describe(&r, v, sizeof(v));
	assert_contains(v, "target not ready after 4.");
	assert_contains(v, ": /v1/models ok at ");
	assert_contains(v, "; generation failing since ");
	assert_contains(v, "HTTP 503");
}

/* Naming a model the server does not serve is a configuration error: stop at once, and say
 * which models it does serve. */
static void test_wrong_model_is_fatal(void **state)
{
	struct sim s;
	sim_start(&s, "--model", "alpha,beta", NULL);
	struct cl_target_plan t = target_for(s.url, "gamma");
	struct cl_probe_cfg cfg = cfg_for(&t, 30 * SEC);
	struct cl_readiness_result r;
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	print_verdict(&r);
	assert_int_equal(rc, CL_EREFUSED);
	assert_int_equal(r.status, CL_READY_FATAL);
	assert_int_equal(r.phase, CL_READY_MODELS);
	assert_between(r.elapsed_us, 0, 2 * SEC);
	assert_contains(r.last_error, "model 'gamma' is not listed");
	assert_contains(r.last_error, "'alpha', 'beta'");
	char v[1024];
	cl_readiness_describe(&r, v, sizeof(v));
	assert_contains(v, "(configuration error, not retried)");

	/* the second listed model is found too */
	t.model = "beta";
	rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	sim_stop(&s);
	assert_int_equal(rc, 0);
	assert_string_equal(r.model, "beta");
}

/* 401 without the key (or with a wrong one) is fatal with the server's message; the right
 * key passes; a key variable that is not set fails before any request. */
static void test_api_key(void **state)
{
	struct sim s;
	sim_start(&s, "--api-key", "sekrit", "--ttft", "5ms", "--itl", "1ms", NULL);
	struct cl_target_plan t = target_for(s.url, NULL);
	struct cl_probe_cfg cfg = cfg_for(&t, 30 * SEC);
	struct cl_readiness_result r;

	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	print_verdict(&r);
	assert_int_equal(rc, CL_EREFUSED);
	assert_int_equal(r.status, CL_READY_FATAL);
	assert_between(r.elapsed_us, 0, 2 * SEC);
	assert_contains(r.last_error, "HTTP 401 \""); /* a message was extracted */
	assert_contains(r.last_error, "no API key sent");

	setenv("CL_PROBE_TEST_KEY", "wrong", 1);
	t.api_key_env = "CL_PROBE_TEST_KEY";
	rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	assert_int_equal(rc, CL_EREFUSED);
	assert_contains(r.last_error, "HTTP 401");

	setenv("CL_PROBE_TEST_KEY", "sekrit", 1);
	rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	print_verdict(&r);
	assert_int_equal(rc, 0);
	sim_stop(&s);

	unsetenv("CL_PROBE_TEST_KEY_UNSET");
	t.api_key_env = "CL_PROBE_TEST_KEY_UNSET";
	rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	assert_int_equal(rc, CL_EREFUSED);
	assert_contains(r.last_error, "environment variable 'CL_PROBE_TEST_KEY_UNSET'");
	assert_int_equal(r.phase_passed_us[CL_READY_CONNECT], -1);
}

/* Nothing listening: "connection refused", retried with backoff until the deadline. */
static void test_connection_refused(void **state)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", free_port());
	struct cl_target_plan t = target_for(url, "m");
	struct cl_probe_cfg cfg = cfg_for(&t, 2 * SEC);
	cfg.backoff_max_us = 300 * MS;
	struct cl_readiness_result r;
	struct counter cnt = { 0 };
	int rc = cl_probe_run(&cfg, count_progress, &cnt, NULL, &r);
	print_verdict(&r);
	assert_int_equal(rc, CL_ETIMEDOUT);
	assert_int_equal(r.status, CL_READY_TIMED_OUT);
	assert_int_equal(r.phase, CL_READY_CONNECT);
	assert_string_equal(r.last_error, "connection refused");
	assert_between(r.elapsed_us, 2 * SEC, 2 * SEC + 300 * MS);
	assert_int_equal(r.attempts, 0);
	for (int i = 0; i < CL_READY__PHASES; i++)
		assert_int_equal(r.phase_passed_us[i], -1);
	assert_true(cnt.calls >= 4); /* retried, not given up after one */
	assert_between(cnt.max_next_us, 1, 300 * MS);
	char v[1024];
	cl_readiness_describe(&r, v, sizeof(v));
	assert_contains(v, "target not ready after 2.");
	assert_contains(v, "connect failing since 0.0s: connection refused");
}

/* A thinking model streams reasoning first: that counts as tokens, and TTFT is recorded. */
static void test_thinking_model(void **state)
{
	struct sim s;
	sim_start(&s, "--reasoning-tokens", "50", "--ttft", "50ms", "--itl", "1ms", NULL);
	struct cl_target_plan t = target_for(s.url, "chatload-sim");
	struct cl_probe_cfg cfg = cfg_for(&t, 20 * SEC);
	cfg.max_tokens = 16; /* all reasoning: the answer never starts */
	struct cl_readiness_result r;
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, 0);
	assert_int_equal(r.attempts, 2);
	assert_between(r.probe_ttft_us, 45 * MS, 1 * SEC);
	assert_true(r.probe_total_us >= r.probe_ttft_us);
	assert_int_equal(r.last_error[0], '\0');
}

/* A failure between successes resets the count: 500 on the 2nd request needs 4 in all. */
static void test_failure_resets_consecutive(void **state)
{
	struct sim s;
	sim_start(&s, "--fault-schedule", "500@2", "--ttft", "5ms", "--itl", "1ms", NULL);
	struct cl_target_plan t = target_for(s.url, NULL);
	struct cl_probe_cfg cfg = cfg_for(&t, 20 * SEC);
	struct cl_readiness_result r;
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, 0);
	assert_int_equal(r.attempts, 4);
	assert_contains(r.last_error, "HTTP 500");
}

/* Broken streams are "not yet", each with its own reason. */
static void test_bad_streams_retry(void **state)
{
	static const struct {
		const char *flag, *want;
	} cases[] = {
		{ "--fault-malformed", "malformed chunk in stream" },
		{ "--fault-error-chunk", "error in stream" },
		{ "--fault-drop", "" /* curl's words for a cut connection vary */ },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sim s;
		sim_start(&s, cases[i].flag, "1", "--ttft", "5ms", "--itl", "1ms", NULL);
		struct cl_target_plan t = target_for(s.url, NULL);
		struct cl_probe_cfg cfg = cfg_for(&t, 700 * MS);
		cfg.max_tokens = 8;
		cfg.backoff_max_us = 200 * MS;
		struct cl_readiness_result r;
		int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
		sim_stop(&s);
		print_verdict(&r);
		assert_int_equal(rc, CL_ETIMEDOUT);
		assert_int_equal(r.phase, CL_READY_GENERATION);
		assert_true(r.attempts >= 2);
		assert_true(r.last_error[0] != '\0');
		assert_contains(r.last_error, cases[i].want);
	}
}

/* Each generation attempt is limited by request_timeout. */
static void test_request_timeout(void **state)
{
	struct sim s;
	sim_start(&s, "--ttft", "3s", NULL);
	struct cl_target_plan t = target_for(s.url, NULL);
	struct cl_probe_cfg cfg = cfg_for(&t, 1500 * MS);
	cfg.request_timeout_us = 300 * MS;
	cfg.backoff_max_us = 100 * MS;
	struct cl_readiness_result r;
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, CL_ETIMEDOUT);
	assert_int_equal(r.phase, CL_READY_GENERATION);
	assert_true(r.attempts >= 2);
	assert_string_equal(r.last_error, "timed out after 0.3s");
	assert_between(r.elapsed_us, 1500 * MS, 1900 * MS);
}

static void *cancel_later(void *arg)
{
	usleep(300000);
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

/* Cancelling stops the gate during a wait and during a request. */
static void test_cancel(void **state)
{
	struct sim s;
	sim_start(&s, "--chat-ready-after", "1h", NULL);
	struct cl_target_plan t = target_for(s.url, NULL);
	struct cl_probe_cfg cfg = cfg_for(&t, 20 * SEC);
	cfg.backoff_initial_us = cfg.backoff_max_us = 10 * SEC;
	atomic_int cancel = 0;
	struct counter cnt = { .cancel_on_failure = &cancel };
	struct cl_readiness_result r;
	int rc = cl_probe_run(&cfg, count_progress, &cnt, &cancel, &r);
	sim_stop(&s);
	assert_int_equal(rc, CL_ECLOSED);
	assert_int_equal(r.status, CL_READY_CANCELLED);
	assert_between(r.elapsed_us, 0, 1 * SEC); /* not the 10s backoff */

	sim_start(&s, "--ttft", "10s", NULL);
	t = target_for(s.url, NULL);
	cfg = cfg_for(&t, 20 * SEC);
	atomic_store(&cancel, 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, cancel_later, (void *)&cancel), 0);
	rc = cl_probe_run(&cfg, NULL, NULL, &cancel, &r);
	pthread_join(th, NULL);
	sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, CL_ECLOSED);
	assert_int_equal(r.phase, CL_READY_GENERATION);
	assert_between(r.elapsed_us, 300 * MS, 2 * SEC); /* not the 10s TTFT */
	char v[1024];
	cl_readiness_describe(&r, v, sizeof(v));
	assert_contains(v, "readiness gate cancelled after ");
}

/* A caller-rendered body is sent as given. */
static void test_explicit_body(void **state)
{
	struct sim s;
	sim_start(&s, "--model", "served", "--ttft", "5ms", "--itl", "1ms", NULL);
	struct cl_target_plan t = target_for(s.url, NULL);
	struct cl_probe_cfg cfg = cfg_for(&t, 10 * SEC);
	cfg.body_json =
	    "{\"model\":\"served\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"max_tokens\":3,\"stream\":true}";
	struct cl_readiness_result r;
	assert_int_equal(cl_probe_run(&cfg, NULL, NULL, NULL, &r), 0);
	/* a body naming a model the server does not know is refused (404), not retried */
	cfg.body_json =
	    "{\"model\":\"other\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"max_tokens\":3,\"stream\":true}";
	int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
	sim_stop(&s);
	print_verdict(&r);
	assert_int_equal(rc, CL_EREFUSED);
	assert_int_equal(r.phase, CL_READY_GENERATION);
	assert_contains(r.last_error, "HTTP 404");
	assert_between(r.elapsed_us, 0, 2 * SEC);
}

/* ---- a canned HTTP server, for answers chatload-sim does not give ------------------------ */

/* Answers GET /v1/models and POST /v1/chat/completions with fixed raw responses, one request
 * per connection, on a thread of its own. */
struct canned {
	const char *models; /* full raw HTTP response */
	const char *chat;
	int fd;
	int port;
	atomic_int stop;
	pthread_t th;
	char url[64];
};

static void serve_one(struct canned *c, int fd)
{
	char req[16384];
	size_t n = 0;
	char *end = NULL;
	while (n < sizeof(req) - 1 && !end) {
		ssize_t r = recv(fd, req + n, sizeof(req) - 1 - n, 0);
		if (r <= 0)
			return;
		n += (size_t)r;
		req[n] = '\0';
		end = strstr(req, "\r\n\r\n");
	}
	if (!end)
		return;
	const char *cl = strcasestr(req, "content-length:");
	size_t body = cl ? strtoul(cl + 15, NULL, 10) : 0;
	while (n < (size_t)(end + 4 - req) + body && n < sizeof(req) - 1) {
		ssize_t r = recv(fd, req + n, sizeof(req) - 1 - n, 0);
		if (r <= 0)
			return;
		n += (size_t)r;
	}
	const char *resp = strncmp(req, "GET /v1/models", 14) == 0 ? c->models : c->chat;
	size_t len = strlen(resp), off = 0;
	while (off < len) {
		ssize_t w = send(fd, resp + off, len - off, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static void *canned_main(void *arg)
{
	struct canned *c = arg;
	while (!atomic_load(&c->stop)) {
		struct timeval tv = { 0, 50000 };
		fd_set rd;
		FD_ZERO(&rd);
		FD_SET(c->fd, &rd);
		if (select(c->fd + 1, &rd, NULL, NULL, &tv) <= 0)
			continue;
		int fd = accept(c->fd, NULL, NULL);
		if (fd < 0)
			continue;
		serve_one(c, fd);
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	return NULL;
}

static void canned_start(struct canned *c, const char *models, const char *chat)
{
	memset(c, 0, sizeof(*c));
	c->models = models;
	c->chat = chat;
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int one = 1;
	setsockopt(c->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(c->fd, 16), 0);
	assert_int_equal(getsockname(c->fd, (struct sockaddr *)&sa, &len), 0);
	c->port = ntohs(sa.sin_port);
	snprintf(c->url, sizeof(c->url), "http://127.0.0.1:%d/v1", c->port);
	assert_int_equal(pthread_create(&c->th, NULL, canned_main, c), 0);
}

static void canned_stop(struct canned *c)
{
	atomic_store(&c->stop, 1);
	pthread_join(c->th, NULL);
	close(c->fd);
}

#define MODELS_OK                                                                                  \
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"           \
	"{\"object\":\"list\",\"data\":[{\"object\":\"model\"},{\"id\":\"second\"}]}"
#define SSE_HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
#define CHUNK(delta, finish)                                                                       \
	"data: {\"choices\":[{\"index\":0,\"delta\":" delta ",\"finish_reason\":" finish "}]}\n\n"

/* Answers real servers give and the simulator does not: each classified as it should be. */
static void test_classification(void **state)
{
	static const struct {
		const char *models, *chat;
		int rc;
		const char *want;
	} cases[] = {
		/* an HTML page where the model list should be: the URL is wrong */
		{ "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
		  "<html>web ui</html>",
		  "", CL_EREFUSED, "answer is not an OpenAI model list" },
		{ "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"data\":[]}", "", CL_ETIMEDOUT,
		  "no models listed yet" },
		{ "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n", "", CL_EREFUSED,
		  "HTTP 404 (is the URL right? it usually ends in /v1)" },
		/* a server that ignores "stream": true */
		{ MODELS_OK,
		  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		  "{\"choices\":[{\"message\":{\"content\":\"OK\"}}]}",
		  CL_EREFUSED, "response is not an event stream (Content-Type: application/json)" },
		{ MODELS_OK,
		  "HTTP/1.1 302 Found\r\nLocation: https://127.0.0.1/v1/chat/completions\r\n"
		  "Connection: close\r\n\r\n",
		  CL_EREFUSED, "HTTP 302 redirect to 'https://127.0.0.1/v1/chat/completions'" },
		{ MODELS_OK,
		  "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"
		  "{\"object\":\"error\",\"message\":\"max_tokens must be at least 1\"}",
		  CL_EREFUSED, "HTTP 400 \"max_tokens must be at least 1\"" },
		{ MODELS_OK,
		  "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
		  "{\"error\":{\"message\":\"Rate limit reached\"}}",
		  CL_ETIMEDOUT, "HTTP 429 \"Rate limit reached\"" },
		/* a role chunk and [DONE], no token */
		{ MODELS_OK, SSE_HEAD CHUNK("{\"role\":\"assistant\"}", "null") "data: [DONE]\n\n",
		  CL_ETIMEDOUT, "stream ended without tokens" },
		/* tokens, then the connection ends with no finish_reason and no [DONE] */
		{ MODELS_OK, SSE_HEAD CHUNK("{\"content\":\"OK\"}", "null"), CL_ETIMEDOUT,
		  "stream ended without [DONE]" },
		/* ... or ends inside an event */
		{ MODELS_OK, SSE_HEAD CHUNK("{\"content\":\"OK\"}", "\"stop\"") "data: {\"cho",
		  CL_ETIMEDOUT, "stream ended without [DONE]" },
		/* a finish_reason and a clean end pass without [DONE] (some servers omit it) */
		{ MODELS_OK, SSE_HEAD CHUNK("{\"content\":\"OK\"}", "\"stop\""), 0, "" },
		{ MODELS_OK, SSE_HEAD "data: {not json}\n\n", CL_ETIMEDOUT,
		  "malformed chunk in stream: '{not json}'" },
		/* The server's own words, whatever its dialect (issue 40); a 4xx in the stream
		 * is the request's fault and ends the gate at once, a 5xx or 429 is waited on.
		 * llama.cpp b4748's `error:` field, then [DONE]: */
		{ MODELS_OK,
		  SSE_HEAD "error: {\"code\":400,\"message\":\"the request exceeds the available "
			   "context size. try increasing the context size or enable context "
			   "shift\",\"type\":\"invalid_request_error\"}\n\ndata: [DONE]\n\n",
		  CL_EREFUSED,
		  "error in stream (code 400): \"the request exceeds the available context size" },
		/* ... and its 503 while loading, or a 500 of the KV cache, pass by waiting */
		{ MODELS_OK,
		  SSE_HEAD "error: {\"code\":503,\"message\":\"Loading model\",\"type\":"
			   "\"unavailable_error\"}\n\ndata: [DONE]\n\n",
		  CL_ETIMEDOUT, "error in stream (code 503): \"Loading model\"" },
		/* TGI: no code, its error_type says validation */
		{ MODELS_OK,
		  SSE_HEAD "data:{\"error\":\"Input validation error: `inputs` tokens + "
			   "`max_new_tokens` must be <= 2048\",\"error_type\":\"validation\"}\n\n",
		  CL_EREFUSED, "error in stream: \"Input validation error: `inputs` tokens" },
		/* vLLM's ErrorResponse as an event, unwrapped: an unknown model */
		{ MODELS_OK,
		  SSE_HEAD "data: {\"object\":\"error\",\"message\":\"The model `x` does not "
			   "exist.\",\"type\":\"NotFoundError\",\"param\":null,\"code\":404}\n\n",
		  CL_EREFUSED, "error in stream (code 404): \"The model `x` does not exist.\"" },
		/* Anthropic's event: error, overloaded: the server's state */
		{ MODELS_OK,
		  SSE_HEAD "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
			   "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		  CL_ETIMEDOUT, "error in stream: \"Overloaded\"" },
		/* a JSON error body with status 200 to a streamed request */
		{ MODELS_OK,
		  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		  "{\"error\":{\"message\":\"context length exceeded\",\"type\":"
		  "\"invalid_request_error\",\"code\":\"400\"}}",
		  CL_EREFUSED, "error in stream (code 400): \"context length exceeded\"" },
		{ MODELS_OK,
		  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		  "{\"error\":{\"message\":\"upstream \\\"gpu-3\\\" busy\",\"code\":500}}",
		  CL_ETIMEDOUT, "error in stream (code 500): \"upstream \"gpu-3\" busy\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct canned c;
		canned_start(&c, cases[i].models, cases[i].chat);
		struct cl_target_plan t = target_for(c.url, NULL);
		struct cl_probe_cfg cfg = cfg_for(&t, 600 * MS);
		cfg.backoff_max_us = 100 * MS;
		struct cl_readiness_result r;
		int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
		canned_stop(&c);
		print_verdict(&r);
		if (rc != cases[i].rc)
			fail_msg("case %zu: rc %d, wanted %d (%s)", i, rc, cases[i].rc,
				 r.last_error);
		assert_contains(r.last_error, cases[i].want);
		if (rc == CL_EREFUSED)
			assert_between(r.elapsed_us, 0,
				       300 * MS); /* at once, not at the deadline */
		if (rc == 0)
			assert_string_equal(r.model, "second"); /* the first entry with an id */
	}
}

/* An embeddings answer that is a failure, in any dialect: quoted, and fatal for a 4xx. */
static void test_embeddings_errors(void **state)
{
	static const struct {
		const char *chat;
		int rc;
		const char *want;
	} cases[] = {
		{ "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		  "{\"object\":\"error\",\"message\":\"input is too long\",\"type\":"
		  "\"BadRequestError\",\"param\":null,\"code\":400}",
		  CL_EREFUSED, "error in the embeddings answer (code 400): \"input is too long\"" },
		{ "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		  "{\"error\":{\"message\":\"Loading model\",\"code\":503}}",
		  CL_ETIMEDOUT, "error in the embeddings answer (code 503): \"Loading model\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct canned c;
		canned_start(&c, MODELS_OK, cases[i].chat);
		struct cl_target_plan t = target_for(c.url, NULL);
		t.api = CL_API_EMBEDDINGS;
		struct cl_probe_cfg cfg = cfg_for(&t, 600 * MS);
		cfg.backoff_max_us = 100 * MS;
		struct cl_readiness_result r;
		int rc = cl_probe_run(&cfg, NULL, NULL, NULL, &r);
		canned_stop(&c);
		print_verdict(&r);
		if (rc != cases[i].rc)
			fail_msg("case %zu: rc %d, wanted %d (%s)", i, rc, cases[i].rc,
				 r.last_error);
		assert_contains(r.last_error, cases[i].want);
	}
}

/* Server messages are pulled out of the error bodies servers really send. */
static void test_error_text(void **state)
{
	char out[256];
	static const struct {
		long status;
		const char *body, *want;
	} cases[] = {
		{ 503,
		  "{\"error\":{\"message\":\"Loading model\",\"type\":\"unavailable_error\","
		  "\"code\":503}}",
		  "HTTP 503 \"Loading model\"" },
		{ 400,
		  "{\"object\":\"error\",\"message\":\"max_tokens is too large\",\"code\":400}",
		  "HTTP 400 \"max_tokens is too large\"" },
		{ 422, "{\"error\":\"Input validation error\",\"error_type\":\"validation\"}",
		  "HTTP 422 \"Input validation error\"" },
		{ 422, "{\"detail\":[{\"loc\":[\"body\"],\"msg\":\"field required\"}]}",
		  "HTTP 422 \"field required\"" },
		{ 502, "<html><body>Bad Gateway</body></html>", "HTTP 502" },
		{ 500, "plain text\nsecond line", "HTTP 500 \"plain text\"" },
		{ 500, "", "HTTP 500" },
		{ 404, "{\"error\":{\"code\":404}}", "HTTP 404" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cli_probe_http_error_text(cases[i].status, cases[i].body, strlen(cases[i].body),
					  out, sizeof(out));
		assert_string_equal(out, cases[i].want);
	}
	/* long messages are cut, at a character boundary, with "..." */
	char body[600];
	snprintf(body, sizeof(body), "{\"message\":\"");
	for (int i = 0; i < 150; i++)
		strcat(body, "é");
	strcat(body, "\"}");
	cli_probe_http_error_text(500, body, strlen(body), out, sizeof(out));
	size_t len = strlen(out);
	assert_true(len < 220);
	assert_int_equal(memcmp(out + len - 4, "...\"", 4), 0);
	assert_int_equal((unsigned char)out[len - 5], 0xA9); /* ends on a whole "é" */

	/* whatever the body, the output stays inside its buffer and is one line (under ASan
	 * an overrun would stop the test) */
	uint64_t x = 88172645463325252ull;
	char junk[700], small[64];
	for (int round = 0; round < 3000; round++) {
		size_t n = 0;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t want = x % sizeof(junk);
		static const char pieces[] = "{\"error\":{\"message\":\"\\\n\r<\xc3\xa9\xff a}]";
		while (n < want) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			junk[n++] =
			    (x & 1) ? pieces[(x >> 8) % (sizeof(pieces) - 1)] : (char)(x >> 16);
		}
		cli_probe_http_error_text(500, junk, n, small, sizeof(small));
		assert_true(strlen(small) < sizeof(small));
		assert_null(strchr(small, '\n'));
	}
}

static int setup(void **state)
{
	/* as a program's main() does: the gate never initialises libcurl */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -1;
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/readiness_test.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(tmp_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	/* only the logs of the simulators that ran are left in it */
	DIR *d = opendir(tmp_dir);
	struct dirent *e;
	char path[PATH_MAX + 300];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmp_dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	curl_global_cleanup();
	return rmdir(tmp_dir) == 0 ? 0 : -1;
}

/* Stops whatever simulator a failed test left running. */
static int stop_sims(void **state)
{
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
		if (running[i])
			sim_stop(running[i]);
	return 0;
}

#define T(fn) cmocka_unit_test_teardown(fn, stop_sims)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_error_text),
		T(test_phases_pass_in_order),
		T(test_early_phases_short_cap),
		T(test_never_ready_times_out),
		T(test_wrong_model_is_fatal),
		T(test_api_key),
		T(test_connection_refused),
		T(test_thinking_model),
		T(test_failure_resets_consecutive),
		T(test_bad_streams_retry),
		T(test_request_timeout),
		T(test_cancel),
		T(test_explicit_body),
		T(test_classification),
		T(test_embeddings_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
