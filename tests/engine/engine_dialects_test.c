/* The engine against each server's way of saying "this request failed" (issue 40): a canned
 * server on loopback answers every request with one fixture of tests/data/streams/ (the table
 * in docs/stream-decoding.md), and no request is ever completed: each is a stream_error with
 * the server's message and code in its sample, a bare [DONE] is an empty_answer, and an
 * answer that carried reasoning only stays a completed no_content.  The simulator's own
 * error-chunk fault (vLLM's data: {"error":...}) is tested in engine_faults_test. */
#include "harness.h"

#include "chatload/buf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"

/* A server that answers every request on 127.0.0.1 with one canned response: the fixture's
 * status line and Content-Type, a Content-Length, the body, then the connection's close. */
struct canned {
	int fd, port;
	pthread_t thread;
	atomic_bool stop;
	char *response;
	size_t response_len;
	atomic_int served;
};

/* Reads the request's headers and body (Content-Length) so that the answer follows it. */
static void read_request(int c)
{
	char buf[8192];
	size_t have = 0;
	for (;;) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		if (poll(&p, 1, 2000) <= 0)
			return;
		ssize_t k = recv(c, buf + have, sizeof(buf) - 1 - have, 0);
		if (k <= 0)
			return;
		have += (size_t)k;
		buf[have] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		const char *cl = strcasestr(buf, "content-length:");
		size_t want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
		if (have >= want || have >= sizeof(buf) - 1)
			return;
	}
}

static void *serve(void *arg)
{
	struct canned *s = arg;
	while (!atomic_load(&s->stop)) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			continue;
		read_request(c);
		/* Counted before the answer goes out: the engine may end the request (an error
		 * event stops it at once) before this thread's send returns. */
		atomic_fetch_add(&s->served, 1);
		size_t off = 0;
		while (off < s->response_len) {
			ssize_t k = send(c, s->response + off, s->response_len - off, MSG_NOSIGNAL);
			if (k <= 0)
				break;
			off += (size_t)k;
		}
		shutdown(c, SHUT_WR);
		close(c);
	}
	return NULL;
}

static void canned_listen(struct canned *s);

/* Starts the server answering with response, a whole HTTP/1.1 response. */
static void canned_start_text(struct canned *s, const char *response)
{
	s->response = strdup(response);
	assert_non_null(s->response);
	s->response_len = strlen(response);
	canned_listen(s);
}

/* Starts the server on fixture `name` (an .http file: status line, headers, blank line,
 * body). */
static void canned_start(struct canned *s, const char *name)
{
	const char *dir = getenv("CHATLOAD_TEST_DATA");
	char path[1024];
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/streams/%s", dir, name);
	struct cl_buf b;
	cl_buf_init(&b, 1 << 20);
	assert_int_equal(cl_buf_read_file(&b, path), 0);
	const char *eol = memchr(b.data, '\n', b.len);
	assert_non_null(eol);
	size_t status_len = (size_t)(eol - b.data);
	if (status_len && b.data[status_len - 1] == '\r')
		status_len--;
	const char *body = strstr(b.data, "\r\n\r\n");
	body = body ? body + 4 : strstr(b.data, "\n\n") + 2;
	size_t body_len = b.len - (size_t)(body - b.data);
	const char *ct = strcasestr(b.data, "content-type:");
	assert_true(ct && ct < body);
	const char *ct_end = strpbrk(ct, "\r\n");
	s->response = malloc(body_len + 512);
	assert_non_null(s->response);
	int n = snprintf(s->response, 512,
			 "%.*s\r\n%.*s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 (int)status_len, b.data, (int)(ct_end - ct), ct, body_len);
	memcpy(s->response + n, body, body_len);
	s->response_len = (size_t)n + body_len;
	cl_buf_free(&b);
	canned_listen(s);
}

static void canned_listen(struct canned *s)
{
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
	assert_int_equal(listen(s->fd, 16), 0);
	s->port = ntohs(a.sin_port);
	atomic_store(&s->stop, false);
	atomic_store(&s->served, 0);
	assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void canned_stop(struct canned *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	close(s->fd);
	free(s->response);
}

static uint64_t errors(const struct cl_metrics *m)
{
	uint64_t n = 0;
	for (int i = CL_CTR_FIRST_ERROR; i <= CL_CTR_LAST_ERROR; i++)
		n += m->ctr[i];
	return n;
}

/* Runs N requests at concurrency 1 against fixture `file` under api; *m gets the metrics. */
static void run_against(const char *file, enum cl_api api, uint64_t n, struct cl_metrics *m)
{
	struct canned srv;
	canned_start(&srv, file);
	struct h_sim nosim = { .pid = -1 };
	snprintf(nosim.dir, sizeof(nosim.dir), "/tmp/cl-engine-test-XXXXXX");
	assert_non_null(mkdtemp(nosim.dir));
	struct h_engine he;
	struct h_engine_opts o = { .workers = 1, .port_override = srv.port, .api = api };
	assert_int_equal(h_engine_create(&he, &nosim, &o), 0);
	struct cl_stage_plan p = h_closed(1, n, 0);
	assert_int_equal(h_run(&he, &p, 0, 20000000, m), 0);
	printf("  %-42s %-11s: %llu started, %llu completed, %llu errors", file, cl_api_name(api),
	       (unsigned long long)m->ctr[CL_CTR_STARTED],
	       (unsigned long long)m->ctr[CL_CTR_COMPLETED], (unsigned long long)errors(m));
	for (int i = CL_CTR_FIRST_ERROR; i <= CL_CTR_LAST_ERROR; i++)
		if (m->ctr[i])
			printf(" %s=%llu", cl_ctr_name(i), (unsigned long long)m->ctr[i]);
	printf("\n    sample: %s\n", m->n_err_samples ? m->err_samples[0].body : "-");
	assert_int_equal(atomic_load(&srv.served), (int)n);
	assert_int_equal(cl_engine_inflight(he.e), 0);
	h_engine_destroy(&he);
	h_sim_cleanup(&nosim);
	canned_stop(&srv);
}

/* Each dialect: every request an error of the class named, the server's words (and code)
 * in the samples, nothing completed, no_content untouched. */
static void test_each_dialect(void **state)
{
	static const struct {
		const char *file;
		enum cl_api api;
		int cls;
		const char *words; /* in every sample */
	} rows[] = {
		{ "llama.cpp-b4748-error-in-stream.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "(code 400) after the response headers, before any token: the request exceeds "
		  "the available context size. try increasing the context size or enable "
		  "context shift" },
		{ "llama.cpp-b4748-error-in-stream.http", CL_API_COMPLETIONS,
		  CL_CTR_ERR_STREAM_ERROR, "available context size" },
		{ "llama.cpp-after-16109-error-in-stream.http", CL_API_CHAT,
		  CL_CTR_ERR_STREAM_ERROR,
		  "(code 400) after the response headers, before any token: request (180 tokens) "
		  "exceeds the available context size (128 tokens)" },
		{ "vllm-0.9-error-in-stream.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "(code 400) after the response headers, before any token: This model's "
		  "maximum context length is 2048 tokens" },
		{ "vllm-0.10-error-in-stream.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "EngineCore encountered an issue" },
		{ "vllm-errorresponse-unwrapped-event.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "(code 404) after the response headers, before any token: The model `tiny` does "
		  "not exist." },
		{ "sglang-error-in-stream.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "longer than the model" },
		{ "tgi-error-in-stream.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "Input validation error" },
		{ "litellm-proxy-error-in-stream.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "(code 429) after the response headers, before any token: "
		  "litellm.RateLimitError" },
		{ "openai-chat-error-in-stream.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "after 1 token chunk: The server had an error" },
		{ "openai-responses-error-event.http", CL_API_RESPONSES, CL_CTR_ERR_STREAM_ERROR,
		  "Something went wrong" },
		{ "openai-responses-failed.http", CL_API_RESPONSES, CL_CTR_ERR_STREAM_ERROR,
		  "failed to generate a response" },
		{ "anthropic-error-event.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "Overloaded" },
		{ "gateway-json-error-200.http", CL_API_CHAT, CL_CTR_ERR_STREAM_ERROR,
		  "(code 400) after the response headers, before any token: Request too large" },
		{ "gateway-json-error-200.http", CL_API_EMBEDDINGS, CL_CTR_ERR_STREAM_ERROR,
		  "(code 400) after the response headers, before any token: Request too large" },
		{ "vllm-errorresponse-200.http", CL_API_EMBEDDINGS, CL_CTR_ERR_STREAM_ERROR,
		  "(code 400) after the response headers, before any token: input is too long" },
		{ "empty-answer-done-only.http", CL_API_CHAT, CL_CTR_ERR_EMPTY_ANSWER,
		  "ended at data: [DONE] without a token, a finish_reason or usage" },
		{ "vllm-0.9-error-body.http", CL_API_CHAT, CL_CTR_ERR_HTTP_4XX,
		  "maximum context length" },
		{ "tgi-error-body.http", CL_API_CHAT, CL_CTR_ERR_HTTP_4XX,
		  "Input validation error" },
		{ "ollama-v1-error-body.http", CL_API_CHAT, CL_CTR_ERR_HTTP_4XX, "not found" },
	};
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct cl_metrics m;
		run_against(rows[r].file, rows[r].api, 3, &m);
		assert_int_equal(m.ctr[CL_CTR_STARTED], 3);
		assert_int_equal(m.ctr[CL_CTR_COMPLETED], 0);
		assert_int_equal(m.ctr[rows[r].cls], 3);
		assert_int_equal(errors(&m), 3);
		assert_int_equal(m.ctr[CL_CTR_NO_CONTENT], 0);
		assert_int_equal(m.n_err_samples, 3);
		for (uint32_t i = 0; i < m.n_err_samples; i++) {
			assert_int_equal(m.err_samples[i].ctr, rows[r].cls);
			if (!strstr(m.err_samples[i].body, rows[r].words))
				fail_msg("%s: sample \"%s\" lacks \"%s\"", rows[r].file,
					 m.err_samples[i].body, rows[r].words);
		}
		cl_metrics_destroy(&m);
	}
}

/* A JSON body that is no error, sent to a streamed request: malformed, saying why. */
static void test_document_not_a_stream(void **state)
{
	struct cl_metrics m;
	run_against("llama.cpp-b4748-chat-nonstream.http", CL_API_CHAT, 2, &m);
	assert_int_equal(m.ctr[CL_CTR_ERR_STREAM_MALFORMED], 2);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 0);
	assert_non_null(strstr(m.err_samples[0].body,
			       "the server sent one JSON document, not an event stream: {"));
	cl_metrics_destroy(&m);
}

/* What still counts as an answer: reasoning only is a completed no_content; a finish_reason
 * alone (a stop matched at the first token) is completed and not no_content; a stream that
 * ends cleanly without [DONE] and without anything is an empty answer too. */
static void test_what_counts(void **state)
{
	struct cl_metrics m;
	run_against("reasoning-only-done.http", CL_API_CHAT, 2, &m);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 2);
	assert_int_equal(m.ctr[CL_CTR_NO_CONTENT], 2);
	assert_int_equal(errors(&m), 0);
	cl_metrics_destroy(&m);

	run_against("finish-only-done.http", CL_API_CHAT, 2, &m);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 2);
	assert_int_equal(m.ctr[CL_CTR_NO_CONTENT], 0);
	assert_int_equal(m.ctr[CL_CTR_GOOD], 0);
	assert_int_equal(errors(&m), 0);
	cl_metrics_destroy(&m);

	run_against("empty-answer-no-done.http", CL_API_CHAT, 2, &m);
	assert_int_equal(m.ctr[CL_CTR_ERR_EMPTY_ANSWER], 2);
	assert_int_equal(m.ctr[CL_CTR_COMPLETED], 0);
	cl_metrics_destroy(&m);
}

/* A body that sends n embeddings inputs wants n vectors: an answer with another count is
 * malformed, saying both counts; with as many it is completed.  The count rides in the body
 * the engine copies from the plan (cl_request_body.inputs), which a copy field by field once
 * dropped, so this check never ran. */
static void test_embeddings_vectors_for_inputs(void **state)
{
	static const char one_vector[] =
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 139\r\n"
	    "Connection: close\r\n\r\n"
	    "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
	    "\"embedding\":[0.25,0.5]}],\"model\":\"m\",\"usage\":{\"prompt_tokens\":2,"
	    "\"total_tokens\":2}}";
	for (uint32_t inputs = 1; inputs <= 2; inputs++) {
		struct canned srv;
		canned_start_text(&srv, one_vector);
		struct h_sim nosim = { .pid = -1 };
		snprintf(nosim.dir, sizeof(nosim.dir), "/tmp/cl-engine-test-XXXXXX");
		assert_non_null(mkdtemp(nosim.dir));
		struct h_engine he;
		struct h_engine_opts o = { .workers = 1,
					   .port_override = srv.port,
					   .api = CL_API_EMBEDDINGS,
					   .inputs = inputs };
		assert_int_equal(h_engine_create(&he, &nosim, &o), 0);
		struct cl_stage_plan p = h_closed(1, 2, 0);
		struct cl_metrics m;
		assert_int_equal(h_run(&he, &p, 0, 20000000, &m), 0);
		printf("  one vector for %u input(s): %llu completed, %llu malformed\n", inputs,
		       (unsigned long long)m.ctr[CL_CTR_COMPLETED],
		       (unsigned long long)m.ctr[CL_CTR_ERR_STREAM_MALFORMED]);
		if (inputs == 1) {
			assert_int_equal(m.ctr[CL_CTR_COMPLETED], 2);
			assert_int_equal(errors(&m), 0);
		} else {
			assert_int_equal(m.ctr[CL_CTR_COMPLETED], 0);
			assert_int_equal(m.ctr[CL_CTR_ERR_STREAM_MALFORMED], 2);
			assert_true(m.n_err_samples > 0);
			if (!strstr(m.err_samples[0].body, "1 vectors for 2 inputs"))
				fail_msg("sample \"%s\" lacks the counts", m.err_samples[0].body);
		}
		cl_metrics_destroy(&m);
		h_engine_destroy(&he);
		h_sim_cleanup(&nosim);
		canned_stop(&srv);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_dialect),
		cmocka_unit_test(test_document_not_a_stream),
		cmocka_unit_test(test_what_counts),
		cmocka_unit_test(test_embeddings_vectors_for_inputs),
	};
	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
