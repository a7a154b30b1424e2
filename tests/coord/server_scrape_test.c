/* The scraper against a real socket: counter resets become restarts (never a negative rate),
 * and a page that is slow, huge, malformed or absent never holds up a mark for longer than
 * it was allowed to wait. */
#include "chatload/clock.h"
#include "chatload/err.h"
#include "coordinator/server/internal.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

/* ---- a one-page HTTP server on loopback, in a thread ---- */

enum mode { PAGE, SLOW, HUGE, GARBAGE, NOT_FOUND };

struct srv {
	int fd, port;
	enum mode mode;
	const char *page; /* PAGE: served as is; changed between scrapes by the test */
	pthread_mutex_t mu;
	pthread_t th;
	volatile int stop;
};

static void send_all(int c, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(c, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void answer(struct srv *s, int c)
{
	char req[2048];
	if (recv(c, req, sizeof(req), 0) <= 0)
		return;
	char head[256];
	pthread_mutex_lock(&s->mu);
	enum mode m = s->mode;
	const char *page = s->page;
	pthread_mutex_unlock(&s->mu);
	if (m == SLOW) {
		usleep(3000000); /* longer than the scrape timeout */
		return;
	}
	if (m == NOT_FOUND) {
		const char *r = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
		send_all(c, r, strlen(r));
		return;
	}
	if (m == HUGE) {
		size_t n = (size_t)CL_PROM_MAX_PAGE + 4096;
		snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
		send_all(c, head, strlen(head));
		char *big = malloc(n);
		memset(big, 'x', n);
		send_all(c, big, n);
		free(big);
		return;
	}
	const char *body = m == GARBAGE ? "\x01\x02 not { a page\n{{{\n" : page;
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
		 strlen(body));
	send_all(c, head, strlen(head));
	send_all(c, body, strlen(body));
}

static void *serve(void *arg)
{
	struct srv *s = arg;
	while (!s->stop) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			continue;
		answer(s, c);
		close(c);
	}
	return NULL;
}

static void srv_start(struct srv *s, enum mode m)
{
	memset(s, 0, sizeof(*s));
	s->mode = m;
	pthread_mutex_init(&s->mu, NULL);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->fd, 16), 0);
	assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	pthread_create(&s->th, NULL, serve, s);
}

static void srv_stop(struct srv *s)
{
	s->stop = 1;
	shutdown(s->fd, SHUT_RDWR);
	close(s->fd);
	pthread_join(s->th, NULL);
}

static void set_page(struct srv *s, const char *page)
{
	pthread_mutex_lock(&s->mu);
	s->page = page;
	pthread_mutex_unlock(&s->mu);
}

static struct cl_srv_scrape *scrape(const struct srv *s, int64_t interval_us)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", s->port);
	struct cl_srv_scrape *sc = NULL;
	struct cl_srv_scrape_opts o = { .url = url, .interval_us = interval_us, .quiet = true };
	assert_int_equal(cl_srv_scrape_start(&o, &sc, NULL), 0);
	return sc;
}

#define PAGE_FMT                                                                                   \
	"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting %s\n"                   \
	"# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total %s\n"     \
	"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total %s\n"           \
	"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total %s\n"

static void test_restart_is_counted_not_negative(void **state)
{
	(void)state;
	static char p1[512], p2[512], p3[512];
	snprintf(p1, sizeof(p1), PAGE_FMT, "2", "1000", "600", "5");
	snprintf(p2, sizeof(p2), PAGE_FMT, "4", "1400", "900", "7");
	/* the server restarted: every counter starts again from small values */
	snprintf(p3, sizeof(p3), PAGE_FMT, "0", "100", "50", "1");
	struct srv s;
	srv_start(&s, PAGE);
	set_page(&s, p1);
	struct cl_srv_scrape *sc = scrape(&s, 10000000); /* only the marks scrape */
	struct cl_srv_mark a, b;
	cl_srv_scrape_mark(sc, &a, 2000000);
	set_page(&s, p2);
	cl_srv_scrape_mark(sc, &b, 2000000);
	set_page(&s, p3);
	cl_srv_scrape_mark(sc, &b, 2000000);
	assert_true(b.scrapes_ok >= 3);
	assert_int_equal(b.restarts, 1);
	/* 1000 -> 1400, then from the restart's 100: 500 queries, 350 hits, 3 preemptions */
	assert_true(b.prefix_queries - a.prefix_queries == 500);
	assert_true(b.prefix_hits - a.prefix_hits == 350);
	assert_true(b.preemptions - a.preemptions == 3);
	json_t *j = cl_srv_scrape_stage_json(sc, &a, &b, 0, 0, 0);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "restarts")), 1);
	assert_true(fabs(json_real_value(json_object_get(j, "prefix_cache_hit_rate")) - 0.7) <
		    1e-9);
	assert_true(json_real_value(json_object_get(j, "preemptions")) == 3);
	assert_string_equal(json_string_value(json_object_get(j, "source")), "vllm");
	/* waiting was 4 and 0 in the window's points (the first point is a's) */
	json_t *w = json_object_get(j, "requests_waiting");
	assert_true(json_real_value(json_object_get(w, "max")) == 4);
	json_decref(j);
	cl_srv_scrape_stop(sc);
	srv_stop(&s);
}

/* A new process whose counters already passed the old one's values shows no drop: its
 * process_start_time_seconds tells, and the restart is placed in the timeline and listed. */
static void test_restart_by_start_time(void **state)
{
	(void)state;
	static char p1[768], p2[768], p3[768];
	const char *st = "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %s\n";
	char t1[96], t2[96];
	snprintf(t1, sizeof(t1), st, "1764850000.25");
	snprintf(t2, sizeof(t2), st, "1764850090.5");
	snprintf(p1, sizeof(p1), PAGE_FMT "%s", "0", "100", "10", "0", t1);
	snprintf(p2, sizeof(p2), PAGE_FMT "%s", "0", "200", "20", "0", t1);
	snprintf(p3, sizeof(p3), PAGE_FMT "%s", "0", "300", "30", "0", t2); /* counters rose */
	struct srv s;
	srv_start(&s, PAGE);
	set_page(&s, p1);
	struct cl_srv_scrape *sc = scrape(&s, 10000000);
	struct cl_srv_mark a, b;
	cl_srv_scrape_mark(sc, &a, 2000000);
	set_page(&s, p2);
	cl_srv_scrape_mark(sc, &b, 2000000);
	assert_int_equal(b.restarts, 0);
	set_page(&s, p3);
	cl_srv_scrape_mark(sc, &b, 2000000);
	assert_int_equal(b.restarts, 1);
	/* 100 -> 200, then the new process' 300 queries from its 0, not 300 - 200 */
	assert_true(b.prefix_queries - a.prefix_queries == 400);
	assert_true(b.prefix_hits - a.prefix_hits == 40);
	json_t *j = cl_srv_scrape_stage_json(sc, &a, &b, a.t_us, 0, 0);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "restarts")), 1);
	json_t *tl = json_object_get(j, "timeline");
	assert_int_equal(json_array_size(json_object_get(tl, "restarts_at_s")), 1);
	assert_int_equal(json_array_size(json_object_get(tl, "t_s")), 2); /* the points after a */
	json_decref(j);
	j = cl_srv_scrape_run_json(sc, "url", a.t_us);
	json_t *r = json_array_get(json_object_get(j, "restarts"), 0);
	assert_string_equal(json_string_value(json_object_get(r, "why")), "start_time");
	assert_int_equal(json_integer_value(json_object_get(j, "restarts_total")), 1);
	json_decref(j);
	cl_srv_scrape_stop(sc);
	srv_stop(&s);
}

/* llama.cpp's page: no counter of the vocabulary, no start time; its own counters fall back
 * when it restarts, and that is a restart too. */
static void test_restart_by_any_counter(void **state)
{
	(void)state;
	static const char p1[] = "# TYPE llamacpp:prompt_tokens_total counter\n"
				 "llamacpp:prompt_tokens_total 5000\n"
				 "# TYPE llamacpp:requests_processing gauge\n"
				 "llamacpp:requests_processing 2\n";
	/* an average typed as a counter goes down, the true counters up: no restart */
	static const char p2[] = "# TYPE llamacpp:prompt_tokens_total counter\n"
				 "llamacpp:prompt_tokens_total 6000\n"
				 "# TYPE llamacpp:n_busy_slots_per_decode counter\n"
				 "llamacpp:n_busy_slots_per_decode 1.5\n"
				 "# TYPE llamacpp:requests_processing gauge\n"
				 "llamacpp:requests_processing 2\n";
	static const char p2b[] = "# TYPE llamacpp:prompt_tokens_total counter\n"
				  "llamacpp:prompt_tokens_total 6100\n"
				  "# TYPE llamacpp:n_decode_total counter\n"
				  "llamacpp:n_decode_total 70\n"
				  "# TYPE llamacpp:n_busy_slots_per_decode counter\n"
				  "llamacpp:n_busy_slots_per_decode 1.2\n";
	static const char p2c[] = "# TYPE llamacpp:prompt_tokens_total counter\n"
				  "llamacpp:prompt_tokens_total 6200\n"
				  "# TYPE llamacpp:n_decode_total counter\n"
				  "llamacpp:n_decode_total 80\n"
				  "# TYPE llamacpp:n_busy_slots_per_decode counter\n"
				  "llamacpp:n_busy_slots_per_decode 1.1\n";
	static const char p3[] = "# TYPE llamacpp:prompt_tokens_total counter\n"
				 "llamacpp:prompt_tokens_total 40\n"
				 "# TYPE llamacpp:requests_processing gauge\n"
				 "llamacpp:requests_processing 1\n";
	struct srv s;
	srv_start(&s, PAGE);
	set_page(&s, p1);
	struct cl_srv_scrape *sc = scrape(&s, 10000000);
	struct cl_srv_mark a, b;
	cl_srv_scrape_mark(sc, &a, 2000000);
	set_page(&s, p2);
	cl_srv_scrape_mark(sc, &b, 2000000);
	set_page(&s, p2b);
	cl_srv_scrape_mark(sc, &b, 2000000);
	set_page(&s, p2c);
	cl_srv_scrape_mark(sc, &b, 2000000);
	assert_int_equal(b.restarts, 0);
	set_page(&s, p3);
	cl_srv_scrape_mark(sc, &b, 2000000);
	assert_int_equal(b.restarts, 1);
	json_t *j = cl_srv_scrape_run_json(sc, "auto", a.t_us);
	json_t *r = json_array_get(json_object_get(j, "restarts"), 0);
	assert_string_equal(json_string_value(json_object_get(r, "why")), "counter_reset");
	json_decref(j);
	cl_srv_scrape_stop(sc);
	srv_stop(&s);
}

/* A stage of more scrapes than the timeline keeps: every k-th point, each the largest gauge
 * of the k it stands for, so a one-scrape spike is not lost. */
static void test_timeline_stride(void **state)
{
	(void)state;
	static char calm[512], spike[512];
	snprintf(calm, sizeof(calm), PAGE_FMT, "3", "10", "5", "0");
	snprintf(spike, sizeof(spike), PAGE_FMT, "99", "10", "5", "0");
	struct srv s;
	srv_start(&s, PAGE);
	set_page(&s, calm);
	struct cl_srv_scrape *sc = scrape(&s, 10000000);
	struct cl_srv_mark a, b;
	cl_srv_scrape_mark(sc, &a, 2000000);
	b = a;
	/* > 1800 points: stride 2.  The test server may drop a connection among so many (a
	 * failed scrape makes no point), so the spike is scraped until one read it. */
	int retries = 20;
	for (size_t i = 0; i < 1900; i++) {
		uint32_t ok = b.scrapes_ok;
		set_page(&s, i == 1001 ? spike : calm);
		cl_srv_scrape_mark(sc, &b, 2000000);
		if (i == 1001 && b.scrapes_ok == ok && retries-- > 0)
			i--;
	}
	size_t n = b.point - a.point;
	assert_true(n > 1800 && n <= 3600);
	json_t *j = cl_srv_scrape_stage_json(sc, &a, &b, a.t_us, 0, 0);
	assert_non_null(j);
	json_t *tl = json_object_get(j, "timeline");
	assert_int_equal(json_integer_value(json_object_get(tl, "stride")), 2);
	json_t *w = json_object_get(tl, "waiting");
	assert_int_equal(json_array_size(w), (n + 1) / 2);
	assert_int_equal(json_array_size(json_object_get(tl, "t_s")), (n + 1) / 2);
	double max = 0;
	size_t i;
	json_t *v;
	json_array_foreach(w, i, v)
	{
		if (json_number_value(v) > max)
			max = json_number_value(v);
	}
	assert_true(max == 99);
	json_decref(j);
	cl_srv_scrape_stop(sc);
	srv_stop(&s);
}

/* Each bad server: a mark asked to wait 300 ms returns within about that, the scrape is
 * counted as failed (or its figures are null), and stopping takes at most one timeout. */
static void bad_server(enum mode m)
{
	struct srv s;
	srv_start(&s, m);
	struct cl_srv_scrape *sc = scrape(&s, 400000); /* timeout 200 ms */
	struct cl_srv_mark a, b;
	int64_t t0 = cl_mono_us();
	cl_srv_scrape_mark(sc, &a, 300000);
	assert_true(cl_mono_us() - t0 < 450000);
	usleep(900000);
	t0 = cl_mono_us();
	cl_srv_scrape_mark(sc, &b, 0);
	assert_true(cl_mono_us() - t0 < 50000); /* never waits on the network */
	json_t *j = cl_srv_scrape_stage_json(sc, &a, &b, 0, 0, 0);
	assert_non_null(j);
	if (m == GARBAGE) {
		/* a page that decodes to nothing: scraped, nothing recognised */
		assert_string_equal(json_string_value(json_object_get(j, "source")), "unknown");
	} else {
		assert_true(b.scrapes_failed > a.scrapes_failed);
		assert_true(json_is_null(json_object_get(j, "source")));
	}
	assert_true(json_is_null(json_object_get(j, "prefix_cache_hit_rate")));
	assert_true(json_is_null(json_object_get(json_object_get(j, "ttft_ms"), "p99")));
	json_decref(j);
	t0 = cl_mono_us();
	cl_srv_scrape_stop(sc);
	assert_true(cl_mono_us() - t0 < 400000);
	srv_stop(&s);
}

static void test_slow(void **state)
{
	(void)state;
	bad_server(SLOW);
}

static void test_huge(void **state)
{
	(void)state;
	bad_server(HUGE);
}

static void test_garbage(void **state)
{
	(void)state;
	bad_server(GARBAGE);
}

static void test_not_found(void **state)
{
	(void)state;
	bad_server(NOT_FOUND);
}

static void test_metrics_url(void **state)
{
	(void)state;
	char u[256];
	assert_int_equal(cl_srv_metrics_url("http://127.0.0.1:8000/v1", u, sizeof(u)), 0);
	assert_string_equal(u, "http://127.0.0.1:8000/metrics");
	assert_int_equal(cl_srv_metrics_url("https://h.example/x/v1?a=b#c", u, sizeof(u)), 0);
	assert_string_equal(u, "https://h.example/metrics");
	assert_int_equal(cl_srv_metrics_url("not a url", u, sizeof(u)), CL_EINVAL);
}

/* ---- the raw series (extra.c), fed pages directly ---- */

static void parse(const char *text, struct cl_prom_page *pg)
{
	memset(pg, 0, sizeof(*pg));
	assert_int_equal(cl_prom_parse(text, strlen(text), pg, NULL), 0);
}

/* At most CLI_SRV_MAX_XSERIES series, first seen first kept, series: names before the rest
 * of the page (though they come last), the dropped counted once a scrape and named. */
static void test_raw_series_bounded(void **state)
{
	(void)state;
	struct cl_srv_scrape sc = { .url = "http://e/metrics" };
	char *pat = strdup("z_*");
	bool found = false;
	sc.series = &pat;
	sc.n_series = 1;
	sc.series_found = &found;
	char *text = malloc(300 * 40 + 200);
	size_t o = 0;
	for (int i = 0; i < 300; i++)
		o += (size_t)sprintf(text + o, "g_%d{a=\"x\"} %d\n", i, i);
	o += (size_t)sprintf(text + o, "vllm:num_requests_running 3\nz_last 5\n");
	struct cl_prom_page pg;
	parse(text, &pg);
	const struct cl_prom_page *pages[] = { &pg };
	for (size_t pt = 0; pt < 3; pt++)
		cli_srv_extra_record(&sc, pages, 1, pt, (int64_t)pt * 1000, false);
	assert_true(found);
	/* the unnamed may fill the columns but the reserved ones, z_last's included */
	assert_int_equal(sc.n_xs, CLI_SRV_MAX_XSERIES - CLI_SRV_XRESERVED);
	assert_string_equal(sc.xs[0].name, "z_last");
	assert_true(sc.xs[0].asked);
	assert_int_equal(sc.x_dropped, 300 - (CLI_SRV_MAX_XSERIES - CLI_SRV_XRESERVED - 1));
	assert_int_equal(sc.n_xdrop_ex, CLI_SRV_XDROP_EX);
	assert_string_equal(sc.xdrop_ex[0], "g_223");
	for (size_t k = 0; k < sc.n_xs; k++) /* the vocabulary's own is not kept raw */
		assert_string_not_equal(sc.xs[k].name, "vllm:num_requests_running");
	cl_prom_page_free(&pg);
	free(text);
	sc.series = NULL; /* freed below by hand: extra_free frees what start allocated */
	sc.series_found = NULL;
	sc.n_series = 0;
	free(pat);
	cli_srv_extra_free(&sc);
}

/* Past CLI_SRV_XROWS scrapes the rows merge in pairs: memory stays put, and a stage whose
 * edges fall on rows still gets its counter's increase and its gauge's mean and max exactly. */
static void test_raw_series_compact(void **state)
{
	(void)state;
	struct cl_srv_scrape sc = { .url = "http://e/metrics" };
	char text[200];
	size_t n = 3 * CLI_SRV_XROWS;
	for (size_t pt = 0; pt < n; pt++) {
		snprintf(text, sizeof(text), "# TYPE c_total counter\nc_total %zu\ng_0 %zu\n",
			 2 * pt, pt % 8);
		struct cl_prom_page pg;
		parse(text, &pg);
		const struct cl_prom_page *pages[] = { &pg };
		cli_srv_extra_record(&sc, pages, 1, pt, (int64_t)(pt + 1) * 1000, false);
		cl_prom_page_free(&pg);
	}
	assert_int_equal(sc.n_xs, 2);
	assert_int_equal(sc.x_shift, 2);
	size_t a = CLI_SRV_XROWS, b = 2 * CLI_SRV_XROWS; /* on rows of 4 */
	json_t *j = cli_srv_extra_stage_json(&sc, a, b, (int64_t)(a + 1) * 1000, (int64_t)b * 1000);
	assert_non_null(j);
	assert_int_equal(json_array_size(j), 2);
	json_t *c = json_array_get(j, 0), *g = json_array_get(j, 1);
	assert_string_equal(json_string_value(json_object_get(c, "kind")), "counter");
	assert_true(json_number_value(json_object_get(c, "increase")) == 2.0 * (double)(b - a));
	assert_true(fabs(json_number_value(json_object_get(c, "per_s")) - 2000) < 1e-6);
	assert_string_equal(json_string_value(json_object_get(g, "kind")), "gauge");
	assert_true(json_number_value(json_object_get(g, "mean")) == 3.5);
	assert_true(json_number_value(json_object_get(g, "max")) == 7);
	json_decref(j);

	/* A series first seen this late gets a column of its own, empty before it: over the
	 * whole run its mean and max are its one value. */
	snprintf(text, sizeof(text), "late_g 5\n");
	struct cl_prom_page pg;
	parse(text, &pg);
	const struct cl_prom_page *pages[] = { &pg };
	cli_srv_extra_record(&sc, pages, 1, n, (int64_t)(n + 1) * 1000, false);
	cl_prom_page_free(&pg);
	j = cli_srv_extra_stage_json(&sc, 0, n + 1, 0, 0);
	assert_int_equal(json_array_size(j), 3);
	json_t *late = json_array_get(j, 2);
	assert_string_equal(json_string_value(json_object_get(late, "name")), "late_g");
	assert_true(json_number_value(json_object_get(late, "mean")) == 5);
	assert_true(json_number_value(json_object_get(late, "max")) == 5);
	json_decref(j);
	cli_srv_extra_free(&sc);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_is_counted_not_negative),
		cmocka_unit_test(test_restart_by_start_time),
		cmocka_unit_test(test_restart_by_any_counter),
		cmocka_unit_test(test_timeline_stride),
		cmocka_unit_test(test_slow),
		cmocka_unit_test(test_huge),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_metrics_url),
		cmocka_unit_test(test_raw_series_bounded),
		cmocka_unit_test(test_raw_series_compact),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
