/* bench_h2: the engine's CPU per SSE event over HTTP/1.1 and HTTP/2 at high concurrency, through
 * nghttpx (h2c and TLS frontends) in front of chatload-sim on this machine, so every mode takes
 * the same path.  Prints figures; not a test.  See docs/engine.md ("HTTP/2") for the reading. */
#include "agent/engine/engine.h"

#include "chatload/clock.h"
#include "chatload/metrics.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BODY_FMT                                                                                   \
	"{\"model\":\"chatload-sim\",\"messages\":[{\"role\":\"user\",\"content\":"                \
	"\"Explain how HTTP/2 multiplexing changes a load generator's cost.\"}],\"stream\":true,"  \
	"\"max_tokens\":%d,\"stream_options\":{\"include_usage\":true}}"

static char dir[128];

/* Starts argv as a child that dies with us; returns its pid, -1 on failure. */
static pid_t spawn(char *const argv[], bool quiet)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (quiet) {
			FILE *f = freopen("/dev/null", "w", stdout);
			f = freopen("/dev/null", "w", stderr);
			(void)f;
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int run_wait(char *const argv[])
{
	int st = 0;
	pid_t pid = spawn(argv, true);
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &al) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static bool port_open(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port) };
	bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static bool wait_port(int port)
{
	for (int i = 0; i < 500; i++) {
		if (port_open(port))
			return true;
		cl_sleep_ns(10 * 1000000LL);
	}
	return false;
}

struct mode {
	const char *name;
	bool tls, http2;
};

struct result {
	double cpu_pct, wall_s, us_per_event, events_per_s;
	uint64_t chunks, completed, errors, connections, h2;
	double ttft_p50_ms, ttft_p99_ms;
};

static int run_mode(const struct mode *md, int port, const char *ca, uint32_t conc,
		    uint32_t workers, uint32_t streams, int tokens, int64_t ramp_us, int64_t dur_us,
		    struct result *r)
{
	memset(r, 0, sizeof(*r));
	char url[96], body[512];
	snprintf(url, sizeof(url), "%s://127.0.0.1:%d/v1", md->tls ? "https" : "http", port);
	int bl = snprintf(body, sizeof(body), BODY_FMT, tokens);
	struct cl_target_plan tp = { .base_url = url,
				     .http2 = md->http2,
				     .http2_streams = streams,
				     .tls_verify = true,
				     .ca_file = (char *)ca,
				     .connect_timeout_us = 10000000 };
	struct cl_request_body b = { .json = body, .len = (size_t)bl };
	struct cl_workload_plan wp = { .bodies = &b,
				       .n_bodies = 1,
				       .request_timeout_us = 60000000 };
	struct cl_engine_cfg cfg = { .workers = workers,
				     .max_streams = conc + workers * 8,
				     .target = &tp,
				     .workload = &wp,
				     .request_id_prefix = "h" };
	struct cl_engine *e;
	struct cl_err err = { 0 };
	if (cl_engine_create(&cfg, &e, &err) != 0) {
		fprintf(stderr, "bench_h2: %s\n", err.msg);
		return -1;
	}
	struct cl_stage_plan p = { .mode = CL_MODE_CONCURRENCY,
				   .concurrency = conc,
				   .duration_us = dur_us,
				   .ramp_us = ramp_us,
				   .drain_timeout_us = 0,
				   .seed = 1 };
	struct cl_metrics ramp, m;
	if (cl_metrics_init(&ramp) != 0 || cl_metrics_init(&m) != 0) {
		fprintf(stderr, "bench_h2: out of memory\n");
		return 1;
	}
	int64_t t0 = cl_mono_us();
	if (cl_engine_start(e, &p, t0, &err) != 0) {
		fprintf(stderr, "bench_h2: %s\n", err.msg);
		cl_engine_destroy(e);
		return -1;
	}
	/* The ramp opens the connections; the measured interval is the steady state after it
	 * (its first second skipped, so the ramp's last streams are flowing). */
	while (cl_mono_us() < t0 + ramp_us + 1000000)
		cl_sleep_ns(20 * 1000000LL);
	cl_engine_collect(e, &ramp);
	int64_t w0 = cl_mono_us();
	while (cl_mono_us() < t0 + ramp_us + dur_us - 50000)
		cl_sleep_ns(20 * 1000000LL);
	cl_engine_collect(e, &m);
	r->wall_s = (double)(cl_mono_us() - w0) / 1e6;
	r->cpu_pct = m.health.cpu_pct;
	r->chunks = m.ctr[CL_CTR_CHUNKS];
	r->completed = m.ctr[CL_CTR_COMPLETED] + ramp.ctr[CL_CTR_COMPLETED];
	r->h2 = m.ctr[CL_CTR_COMPLETED_H2] + ramp.ctr[CL_CTR_COMPLETED_H2];
	for (int i = CL_CTR_FIRST_ERROR; i <= CL_CTR_LAST_ERROR; i++)
		r->errors += m.ctr[i] + ramp.ctr[i];
	r->events_per_s = (double)r->chunks / r->wall_s;
	r->us_per_event = r->chunks ? r->cpu_pct / 100.0 * r->wall_s * 1e6 / (double)r->chunks : 0;
	r->ttft_p50_ms = cl_hist_percentile(&m.lat[CL_LAT_TTFT], 50) / 1000.0;
	r->ttft_p99_ms = cl_hist_percentile(&m.lat[CL_LAT_TTFT], 99) / 1000.0;
	cl_engine_stop(e, true);
	cl_engine_wait(e, 10000000);
	/* Connections are counted per finished request (CURLINFO_NUM_CONNECTS): every request
	 * has finished by now, those started in the ramp included. */
	cl_engine_collect(e, &m);
	r->connections = m.ctr[CL_CTR_CONNECTIONS_OPENED] + ramp.ctr[CL_CTR_CONNECTIONS_OPENED];
	cl_metrics_destroy(&ramp);
	cl_metrics_destroy(&m);
	cl_engine_destroy(e);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_h2 [--sim PATH] [-c CONCURRENCY] [-w WORKERS] [--streams S] "
			"[--itl-ms N] [--tokens N] [--dur S] [--ramp S]\n");
}

int main(int argc, char **argv)
{
	const char *sim =
	    getenv("CHATLOAD_SIM_BIN") ? getenv("CHATLOAD_SIM_BIN") : CHATLOAD_SIM_PATH;
	uint32_t conc = 1024, workers = 2, streams = 100;
	int itl_ms = 50, tokens = 60;
	double dur_s = 6, ramp_s = 3;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			usage();
			return 2;
		}
		if (strcmp(a, "--sim") == 0)
			sim = v;
		else if (strcmp(a, "-c") == 0)
			conc = (uint32_t)atoi(v);
		else if (strcmp(a, "-w") == 0)
			workers = (uint32_t)atoi(v);
		else if (strcmp(a, "--streams") == 0)
			streams = (uint32_t)atoi(v);
		else if (strcmp(a, "--itl-ms") == 0)
			itl_ms = atoi(v);
		else if (strcmp(a, "--tokens") == 0)
			tokens = atoi(v);
		else if (strcmp(a, "--dur") == 0)
			dur_s = atof(v);
		else if (strcmp(a, "--ramp") == 0)
			ramp_s = atof(v);
		else {
			usage();
			return 2;
		}
		i++;
	}
	curl_global_init(CURL_GLOBAL_ALL);
	snprintf(dir, sizeof(dir), "/tmp/bench-h2-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	char key[192], cert[192], portf[192], itl[32], tok[32], simport[16];
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(portf, sizeof(portf), "%s/sim.port", dir);
	char *req[] = { "openssl",
			"req",
			"-x509",
			"-newkey",
			"ec",
			"-pkeyopt",
			"ec_paramgen_curve:prime256v1",
			"-nodes",
			"-keyout",
			key,
			"-out",
			cert,
			"-days",
			"1",
			"-subj",
			"/CN=127.0.0.1",
			"-addext",
			"subjectAltName=IP:127.0.0.1",
			NULL };
	if (run_wait(req) != 0) {
		fprintf(stderr, "bench_h2: openssl could not make a certificate\n");
		return 1;
	}
	snprintf(itl, sizeof(itl), "%dms", itl_ms);
	snprintf(tok, sizeof(tok), "%d", tokens);
	char *simv[] = { (char *)sim, "--listen", "127.0.0.1:0", "--port-file", portf,
			 "--ttft",    "100ms",    "--itl",       itl,           "--output-tokens",
			 tok,         "--grace",  "0",           NULL };
	pid_t simpid = spawn(simv, true);
	int sp = 0;
	for (int i = 0; i < 500 && sp <= 0; i++) {
		FILE *f = fopen(portf, "r");
		if (f) {
			if (fscanf(f, "%d", &sp) != 1)
				sp = 0;
			fclose(f);
		}
		cl_sleep_ns(10 * 1000000LL);
	}
	if (sp <= 0) {
		fprintf(stderr, "bench_h2: chatload-sim did not start (%s)\n", sim);
		return 1;
	}
	snprintf(simport, sizeof(simport), "%d", sp);
	int p_clear = free_port(), p_tls = free_port();
	char f1[64], f2[64], back[64];
	snprintf(f1, sizeof(f1), "-f127.0.0.1,%d;no-tls", p_clear);
	snprintf(f2, sizeof(f2), "-f127.0.0.1,%d", p_tls);
	snprintf(back, sizeof(back), "-b127.0.0.1,%d", sp);
	char *ngv[] = { "nghttpx",   "--conf=/dev/null",
			f1,          f2,
			back,        "--workers=1",
			"--no-ocsp", "-L",
			"ERROR",     key,
			cert,        NULL };
	pid_t ngpid = spawn(ngv, true);
	if (!wait_port(p_clear) || !wait_port(p_tls)) {
		fprintf(stderr, "bench_h2: nghttpx did not start (deploy/install-deps.sh)\n");
		kill(simpid, SIGKILL);
		return 1;
	}
	printf("bench_h2: c=%u, %u workers, %u streams per h2 connection, sim ttft 100ms itl %dms "
	       "%d tokens, through nghttpx (1 worker); libcurl %s\n",
	       conc, workers, streams, itl_ms, tokens, curl_version_info(CURLVERSION_NOW)->version);
	printf("%-24s %8s %10s %9s %9s %11s %9s %9s %7s\n", "mode", "conns", "events/s", "cpu %",
	       "us/event", "completed", "h2", "ttft p50", "p99");
	static const struct mode modes[] = {
		{ "http/1.1 cleartext", false, false },
		{ "h2c prior knowledge", false, true },
		{ "http/1.1 TLS", true, false },
		{ "h2 TLS (ALPN)", true, true },
	};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct result r;
		if (run_mode(&modes[i], modes[i].tls ? p_tls : p_clear, cert, conc, workers,
			     streams, tokens, (int64_t)(ramp_s * 1e6), (int64_t)(dur_s * 1e6),
			     &r) != 0)
			continue;
		printf("%-24s %8llu %10.0f %9.1f %9.2f %11llu %9llu %9.1f %7.1f%s\n", modes[i].name,
		       (unsigned long long)r.connections, r.events_per_s, r.cpu_pct, r.us_per_event,
		       (unsigned long long)r.completed, (unsigned long long)r.h2, r.ttft_p50_ms,
		       r.ttft_p99_ms, r.errors ? "  (errors!)" : "");
		fflush(stdout);
	}
	kill(ngpid, SIGTERM);
	kill(simpid, SIGTERM);
	waitpid(ngpid, NULL, 0);
	waitpid(simpid, NULL, 0);
	unlink(key);
	unlink(cert);
	unlink(portf);
	rmdir(dir);
	curl_global_cleanup();
	return 0;
}
