/* Engine test harness: the simulator as a child process, engine setup, JSONL logs. */
#include "harness.h"

#include "chatload/clock.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int h_group_setup(void **state)
{
	(void)state;
	CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK) {
		fprintf(stderr, "curl_global_init: %s\n", curl_easy_strerror(rc));
		return -1;
	}
	return 0;
}

int h_group_teardown(void **state)
{
	(void)state;
	curl_global_cleanup();
	return 0;
}

int h_sim_start(struct h_sim *s, const char *const *args)
{
	memset(s, 0, sizeof(*s));
	s->pid = -1;
	const char *bin = getenv("CHATLOAD_SIM_BIN");
	if (!bin) {
		fprintf(stderr, "CHATLOAD_SIM_BIN is not set\n");
		return -1;
	}
	snprintf(s->dir, sizeof(s->dir), "/tmp/cl-engine-test-XXXXXX");
	if (!mkdtemp(s->dir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	snprintf(s->truth_path, sizeof(s->truth_path), "%s/truth.jsonl", s->dir);
	snprintf(s->port_path, sizeof(s->port_path), "%s/port", s->dir);

	const char *argv[96];
	size_t n = 0;
	argv[n++] = bin;
	argv[n++] = "--listen";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--port-file";
	argv[n++] = s->port_path;
	argv[n++] = "--truth-log";
	argv[n++] = s->truth_path;
	argv[n++] = "--grace";
	argv[n++] = "100ms";
	for (size_t i = 0; args && args[i] && n < 95; i++)
		argv[n++] = args[i];
	argv[n] = NULL;

	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		execv(bin, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	s->pid = pid;
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(s->port_path, "r");
		if (f) {
			int port = 0;
			if (fscanf(f, "%d", &port) == 1 && port > 0) {
				fclose(f);
				s->port = port;
				return 0;
			}
			fclose(f);
		}
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			fprintf(stderr, "chatload-sim exited early (status %d)\n", st);
			s->pid = -1;
			return -1;
		}
		cl_sleep_ns(10 * 1000000LL);
	}
	fprintf(stderr, "chatload-sim wrote no port within 5 s\n");
	h_sim_stop(s);
	return -1;
}

void h_sim_stop(struct h_sim *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	for (int i = 0; i < 300; i++) {
		int st;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->pid = -1;
			return;
		}
		cl_sleep_ns(10 * 1000000LL);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = -1;
}

void h_sim_cleanup(struct h_sim *s)
{
	h_sim_stop(s);
	if (!s->dir[0] || getenv("CHATLOAD_KEEP_TEST_FILES"))
		return;
	DIR *d = opendir(s->dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char p[600];
			snprintf(p, sizeof(p), "%s/%s", s->dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(s->dir);
	s->dir[0] = '\0';
}

int h_jsonl_load(struct h_jsonl *l, const char *path)
{
	memset(l, 0, sizeof(*l));
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t k;
	int rc = 0;
	while ((k = getline(&line, &cap, f)) > 0) {
		json_error_t je;
		json_t *o = json_loadb(line, (size_t)k, 0, &je);
		if (!o || !json_is_object(o)) {
			fprintf(stderr, "%s: bad line: %s (%s)\n", path, line, je.text);
			json_decref(o);
			rc = -1;
			break;
		}
		if (l->n == alloc) {
			alloc = alloc ? alloc * 2 : 256;
			l->rows = realloc(l->rows, alloc * sizeof(*l->rows));
		}
		l->rows[l->n++] = o;
	}
	free(line);
	fclose(f);
	return rc;
}

void h_jsonl_free(struct h_jsonl *l)
{
	for (size_t i = 0; i < l->n; i++)
		json_decref(l->rows[i]);
	free(l->rows);
	memset(l, 0, sizeof(*l));
}

json_t *h_jsonl_find(const struct h_jsonl *l, const char *key, const char *value)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *v = json_string_value(json_object_get(l->rows[i], key));
		if (v && strcmp(v, value) == 0)
			return l->rows[i];
	}
	return NULL;
}

int64_t h_int(json_t *o, const char *key, int64_t def)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

const char *h_str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

int h_engine_create(struct h_engine *he, const struct h_sim *sim, const struct h_engine_opts *o)
{
	memset(he, 0, sizeof(*he));
	struct h_engine_opts def = { 0 };
	if (!o)
		o = &def;
	char url[128];
	snprintf(url, sizeof(url), "%s://127.0.0.1:%d/v1", o->https ? "https" : "http",
		 o->port_override ? o->port_override : sim->port);
	he->target.base_url = strdup(url);
	he->target.model = strdup("chatload-sim");
	he->target.tls_verify = true;
	he->target.http2 = o->http2;
	he->target.api = o->api;
	he->target.api_key_env = o->api_key_env ? strdup(o->api_key_env) : NULL;
	he->target.connect_timeout_us = 2000000;

	char body[512];
	int n =
	    snprintf(body, sizeof(body),
		     "{\"model\":\"chatload-sim\",\"messages\":[{\"role\":\"user\",\"content\":"
		     "\"Write a haiku about load testing.\"}],\"stream\":true,\"max_tokens\":%u%s}",
		     o->max_tokens ? o->max_tokens : 16,
		     o->no_usage           ? ""
		     : o->continuous_usage ? ",\"stream_options\":{\"include_usage\":true,"
					     "\"continuous_usage_stats\":true}"
					   : ",\"stream_options\":{\"include_usage\":true}");
	he->workload.bodies = calloc(1, sizeof(*he->workload.bodies));
	he->workload.bodies[0].json = strdup(body);
	he->workload.bodies[0].len = (size_t)n;
	he->workload.bodies[0].inputs = o->inputs;
	he->workload.n_bodies = 1;
	he->workload.request_timeout_us = o->request_timeout_us ? o->request_timeout_us : 10000000;
	he->workload.max_tokens = o->max_tokens ? o->max_tokens : 16;

	snprintf(he->log_path, sizeof(he->log_path), "%s/requests.jsonl", sim->dir);
	struct cl_engine_cfg cfg = {
		.workers = o->workers ? o->workers : 1,
		.max_streams = o->max_streams ? o->max_streams : 256,
		.target = &he->target,
		.workload = &he->workload,
		.request_id_prefix = o->prefix ? o->prefix : "t",
		.request_log_path = he->log_path,
		.good_ttft_us = o->good_ttft_us,
		.good_tpot_us = o->good_tpot_us,
		.good_e2e_us = o->good_e2e_us,
	};
	struct cl_err err = { 0 };
	if (cl_engine_create(&cfg, &he->e, &err) != 0) {
		fprintf(stderr, "cl_engine_create: %s\n", err.msg);
		return -1;
	}
	return 0;
}

void h_engine_destroy(struct h_engine *he)
{
	cl_engine_destroy(he->e);
	he->e = NULL;
	cl_target_plan_free(&he->target);
	cl_workload_plan_free(&he->workload);
}

struct cl_stage_plan h_closed(uint32_t concurrency, uint64_t requests, int64_t duration_us)
{
	struct cl_stage_plan p = { 0 };
	p.mode = CL_MODE_CONCURRENCY;
	p.concurrency = concurrency;
	p.requests = requests;
	p.duration_us = duration_us;
	p.drain_timeout_us = 5000000;
	p.seed = 42;
	return p;
}

struct cl_stage_plan h_open(double rate, enum cl_arrival arrival, uint64_t requests,
			    int64_t duration_us)
{
	struct cl_stage_plan p = h_closed(0, requests, duration_us);
	p.mode = CL_MODE_RATE;
	p.rate_per_s = rate;
	p.arrival = arrival;
	p.gamma_shape = 1;
	return p;
}

int h_run(struct h_engine *he, const struct cl_stage_plan *p, int64_t lead_us, int64_t timeout_us,
	  struct cl_metrics *m)
{
	if (cl_metrics_init(m) != 0)
		return -1;
	struct cl_err err = { 0 };
	if (cl_engine_start(he->e, p, cl_mono_us() + lead_us, &err) != 0) {
		fprintf(stderr, "cl_engine_start: %s\n", err.msg);
		return -1;
	}
	int rc = cl_engine_wait(he->e, timeout_us);
	if (rc != 0) {
		fprintf(stderr, "cl_engine_wait: %s (state %s)\n", cl_strerror(rc),
			cl_engine_state_name(cl_engine_state(he->e)));
		return -1;
	}
	if (cl_engine_collect(he->e, m) != 0)
		return -1;
	return 0;
}

int h_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int h_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void *held_server_main(void *arg)
{
	struct h_held_server *hs = arg;
	static const char ev1[] = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
	static const char ev2[] = "data: [DONE]\n\n";
	char resp[512];
	int rn = snprintf(resp, sizeof(resp),
			  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			  "Transfer-Encoding: chunked\r\n\r\n%zx\r\n%s\r\n%zx\r\n%s\r\n",
			  sizeof(ev1) - 1, ev1, sizeof(ev2) - 1, ev2);
	for (int i = 0; i < hs->n; i++) {
		int fd = accept(hs->lfd, NULL, NULL);
		if (fd < 0)
			break;
		hs->fds[i] = fd;
		char buf[4096];
		size_t got = 0;
		/* The whole request: its head, then the Content-Length body. */
		while (got < sizeof(buf) - 1) {
			ssize_t k = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
			if (k <= 0)
				break;
			got += (size_t)k;
			buf[got] = '\0';
			char *end = strstr(buf, "\r\n\r\n");
			char *cl = strcasestr(buf, "content-length:");
			if (end && cl && got >= (size_t)(end + 4 - buf) + (size_t)atoi(cl + 15))
				break;
		}
		if (send(fd, resp, (size_t)rn, MSG_NOSIGNAL) < 0)
			break;
	}
	return NULL;
}

int h_held_server_start(struct h_held_server *hs, int n)
{
	memset(hs, 0, sizeof(*hs));
	for (int i = 0; i < 8; i++)
		hs->fds[i] = -1;
	hs->n = n < 8 ? n : 8;
	hs->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (hs->lfd < 0 || bind(hs->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(hs->lfd, 8) != 0 || getsockname(hs->lfd, (struct sockaddr *)&a, &al) != 0) {
		fprintf(stderr, "held server: cannot listen: %s\n", strerror(errno));
		return -1;
	}
	hs->port = ntohs(a.sin_port);
	if (pthread_create(&hs->thread, NULL, held_server_main, hs) != 0)
		return -1;
	hs->started = true;
	return 0;
}

void h_held_server_stop(struct h_held_server *hs)
{
	/* Wakes an accept still waiting for connections that will not come. */
	if (hs->lfd >= 0)
		shutdown(hs->lfd, SHUT_RDWR);
	if (hs->started)
		pthread_join(hs->thread, NULL);
	hs->started = false;
	for (int i = 0; i < 8; i++)
		if (hs->fds[i] >= 0)
			close(hs->fds[i]);
	if (hs->lfd >= 0)
		close(hs->lfd);
	hs->lfd = -1;
}
