/* bench_sim: how much load chatload-sim serves on one core, how exact its timing stays, and
 * how that compares with the bare-write roofline on the same machine (docs/simulator.md). */
#include "chatload/clock.h"
#include "chatload/units.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROOF_SOCKETS 1024
#define MAX_STREAMS  20000

/* An SSE event of the size the simulator writes for one token (HTTP chunk framing
 * included), so the roofline writes the same bytes per event. */
static const char roof_event[] =
    "d5\r\ndata: {\"id\":\"chatcmpl-sim-1\",\"object\":\"chat.completion.chunk\","
    "\"created\":1796224521,\"model\":\"chatload-sim\",\"choices\":[{\"index\":0,\"delta\":"
    "{\"content\":\" simulator\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n\r\n";

static int n_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* Pins the calling thread to cpu when the machine has more than one. */
static void pin(int cpu)
{
	if (n_cpus() < 2)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu % n_cpus(), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Niceness asked for the simulator and the load client threads (--nice); applied per thread
 * when permitted, so other work on a shared machine disturbs the figures less. */
static int g_nice = -10;

/* Extra simulator flags from --sim-arg (e.g. --tokens-per-chunk 4, --truth-log F). */
#define MAX_SIM_ARGS 32
static const char *g_sim_args[MAX_SIM_ARGS];
static int g_n_sim_args;

static void apply_nice(void)
{
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), g_nice) != 0)
		errno = 0; /* not permitted: run at the inherited priority */
}

static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int listen_loopback(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4096) ||
	    getsockname(fd, (struct sockaddr *)&a, &al)) {
		perror("bench_sim: listen");
		exit(1);
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_loopback(int port, bool nonblock)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (nonblock)
		set_nonblock(fd);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- the reader: one epoll thread draining sockets and counting SSE events ------------- */

struct reader {
	int ep;
	int n;
	int *fds;
	char *last; /* last byte seen per socket, to count "\n\n" split across reads */
	volatile bool stop;
	volatile uint64_t events;
	volatile uint64_t closed;
	int cpu;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	static char buf[1 << 16];
	struct epoll_event evs[256];
	pin(r->cpu);
	apply_nice();
	while (!r->stop) {
		int n = epoll_wait(r->ep, evs, 256, 50);
		for (int i = 0; i < n; i++) {
			int idx = (int)evs[i].data.u32;
			for (;;) {
				ssize_t got = recv(r->fds[idx], buf, sizeof(buf), 0);
				if (got < 0 && errno == EINTR)
					continue;
				if (got <= 0) {
					if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
						epoll_ctl(r->ep, EPOLL_CTL_DEL, r->fds[idx], NULL);
						r->closed++;
					}
					break;
				}
				uint64_t ev = 0;
				char prev = r->last[idx];
				for (ssize_t k = 0; k < got; k++) {
					if (buf[k] == '\n' && prev == '\n')
						ev++;
					prev = buf[k];
				}
				r->last[idx] = prev;
				r->events += ev;
				if (got < (ssize_t)sizeof(buf))
					break;
			}
		}
	}
	return NULL;
}

static void reader_init(struct reader *r, int n, int cpu)
{
	memset(r, 0, sizeof(*r));
	r->ep = epoll_create1(0);
	r->fds = calloc((size_t)n, sizeof(int));
	r->last = calloc((size_t)n, 1);
	r->n = n;
	r->cpu = cpu;
	if (r->ep < 0 || !r->fds || !r->last) {
		fprintf(stderr, "bench_sim: out of memory\n");
		exit(1);
	}
}

static void reader_add(struct reader *r, int idx, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)idx };
	r->fds[idx] = fd;
	epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* ---- roofline -------------------------------------------------------------------------- */

/* A C loop writing one SSE event per write() round-robin to ROOF_SOCKETS loopback sockets on
 * one core while the reader drains them on the other: the most a single-threaded server
 * doing one write per event can reach here. */
struct roof_result {
	double writes_per_s;     /* wall clock */
	double writes_per_cpu_s; /* per second of the writer thread's CPU time */
};

static int64_t thread_cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static struct roof_result roofline(double seconds)
{
	int port, lfd = listen_loopback(&port);
	int wfd[ROOF_SOCKETS];
	struct reader r;
	pthread_t th;
	reader_init(&r, ROOF_SOCKETS, 1);
	for (int i = 0; i < ROOF_SOCKETS; i++) {
		int c = connect_loopback(port, false);
		int a = accept(lfd, NULL, NULL);
		int one = 1;
		if (c < 0 || a < 0) {
			perror("bench_sim: roofline sockets");
			exit(1);
		}
		setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		set_nonblock(a);
		set_nonblock(c);
		wfd[i] = a;
		reader_add(&r, i, c);
	}
	pthread_create(&th, NULL, reader_main, &r);
	pin(0);
	apply_nice();
	uint64_t writes = 0, full = 0;
	int64_t t0 = cl_mono_ns(), end = t0 + (int64_t)(seconds * 1e9);
	int64_t cpu0 = thread_cpu_us();
	while (cl_mono_ns() < end) {
		for (int i = 0; i < ROOF_SOCKETS; i++) {
			ssize_t w = write(wfd[i], roof_event, sizeof(roof_event) - 1);
			if (w == (ssize_t)sizeof(roof_event) - 1)
				writes++;
			else
				full++;
		}
	}
	double el = (double)(cl_mono_ns() - t0) / 1e9;
	double cpu_s = (double)(thread_cpu_us() - cpu0) / 1e6;
	r.stop = true;
	pthread_join(th, NULL);
	for (int i = 0; i < ROOF_SOCKETS; i++) {
		close(wfd[i]);
		close(r.fds[i]);
	}
	close(lfd);
	close(r.ep);
	free(r.fds);
	free(r.last);
	struct roof_result res = { (double)writes / el, (double)writes / cpu_s };
	printf("roofline: %d sockets, %.0f writes/s on %.0f%% of a core = %.0f writes per "
	       "CPU-second (%.2f us CPU per event); %llu writes refused (socket full)\n",
	       ROOF_SOCKETS, res.writes_per_s, 100 * cpu_s / el, res.writes_per_cpu_s,
	       1e6 / res.writes_per_cpu_s, (unsigned long long)full);
	return res;
}

/* ---- the simulator under load ----------------------------------------------------------- */

struct simproc {
	pid_t pid;
	int port;
	char dir[256];
	char stats[300];
};

static int64_t proc_cpu_us(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0;
	/* fields after the command: state(3) ... utime(14) stime(15) */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 0;
	return (int64_t)((ut + st) * 1000000ULL / (unsigned long long)sysconf(_SC_CLK_TCK));
}

static void sim_start(struct simproc *sp, const char *bin, const char *itl, const char *ttft)
{
	char port_file[300];
	snprintf(sp->dir, sizeof(sp->dir), "/tmp/bench_sim.XXXXXX");
	if (!mkdtemp(sp->dir)) {
		perror("bench_sim: mkdtemp");
		exit(1);
	}
	snprintf(port_file, sizeof(port_file), "%s/port", sp->dir);
	snprintf(sp->stats, sizeof(sp->stats), "%s/stats.json", sp->dir);
	sp->pid = fork();
	if (sp->pid == 0) {
		pin(0);
		apply_nice();
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		if (!getenv("BENCH_SIM_STDERR"))
			dup2(devnull, 2); /* BENCH_SIM_STDERR=1 keeps the simulator's log */
		const char *av[64] = { bin,           "--listen",
				       "127.0.0.1:0", "--port-file",
				       port_file,     "--stats-file",
				       sp->stats,     "--ttft",
				       ttft,          "--itl",
				       itl,           "--grace",
				       "0",           "--max-connections",
				       "20000" };
		int ac = 15;
		for (int i = 0; i < g_n_sim_args; i++)
			av[ac++] = g_sim_args[i];
		av[ac] = NULL;
		execv(bin, (char *const *)av);
		perror("bench_sim: exec chatload-sim");
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(port_file, "r");
		if (f) {
			int ok = fscanf(f, "%d", &sp->port) == 1;
			fclose(f);
			if (ok)
				return;
		}
		usleep(10000);
	}
	fprintf(stderr, "bench_sim: chatload-sim did not start\n");
	kill(sp->pid, SIGKILL);
	exit(1);
}

/* Stops the simulator and reads its lateness summary from the stats file. */
static void sim_stop(struct simproc *sp, char *stats, size_t n)
{
	int st;
	kill(sp->pid, SIGTERM);
	waitpid(sp->pid, &st, 0);
	stats[0] = '\0';
	FILE *f = fopen(sp->stats, "r");
	if (f) {
		size_t got = fread(stats, 1, n - 1, f);
		stats[got] = '\0';
		fclose(f);
		unlink(sp->stats);
	}
	char port_file[300];
	snprintf(port_file, sizeof(port_file), "%s/port", sp->dir);
	unlink(port_file);
	rmdir(sp->dir);
}

static long long json_int(const char *text, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(text, pat);
	return p ? atoll(p + strlen(pat)) : -1;
}

struct load_result {
	double client_events_per_s;
	double sim_cpu;
	uint64_t closed;
	long long p50, p99, p999, max;
	long long sim_chunks;
	long long spin_us; /* of the simulator, from the stats reset to its exit */
	double window_s;
};

/* Opens `streams` streaming requests against the simulator (ramped, so the listen queue never
 * overflows), waits until every stream produced output, then measures a steady window. */
static struct load_result run_load(const char *bin, int streams, const char *itl, const char *ttft,
				   double window_s)
{
	struct simproc sp;
	struct reader r;
	pthread_t th;
	struct load_result res = { 0 };
	char req[512], body[256];
	char stats[2048];

	sim_start(&sp, bin, itl, ttft);
	reader_init(&r, streams, 1);
	int bl =
	    snprintf(body, sizeof(body),
		     "{\"model\":\"chatload-sim\",\"messages\":[{\"role\":\"user\",\"content\":"
		     "\"bench\"}],\"stream\":true,\"max_tokens\":1000000}");
	int rl = snprintf(req, sizeof(req),
			  "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
			  "application/json\r\nContent-Length: %d\r\n\r\n%s",
			  bl, body);
	pin(1);
	pthread_create(&th, NULL, reader_main, &r);
	/* Starts are spread evenly over whole intervals, as independent clients would be, so
	 * deadlines do not come in bursts; over at least 2 s, because accepting and parsing a
	 * request costs several chunks' worth of CPU and a faster ramp would leave the
	 * simulator behind its schedule before the measurement starts. */
	int64_t itl_us = 0;
	cl_parse_duration_us(itl, &itl_us, NULL);
	int64_t ramp_us = itl_us > 0 ? ((2000000 + itl_us - 1) / itl_us) * itl_us : 0;
	int64_t ramp_t0 = cl_mono_us();
	for (int i = 0; i < streams; i++) {
		int64_t due = ramp_t0 + ramp_us * i / streams;
		while (cl_mono_us() < due)
			usleep(50);
		int fd = connect_loopback(sp.port, false);
		if (fd < 0 || write(fd, req, (size_t)rl) != rl) {
			fprintf(stderr, "bench_sim: connect/send failed at stream %d: %s\n", i,
				strerror(errno));
			exit(1);
		}
		set_nonblock(fd);
		reader_add(&r, i, fd);
	}
	/* Let every stream reach steady state before measuring. */
	int64_t ramp_end = cl_mono_us() + 2000000;
	while (cl_mono_us() < ramp_end)
		usleep(10000);
	kill(sp.pid, SIGUSR1); /* restart the simulator's chunk statistics */
	usleep(50000);
	uint64_t e0 = r.events;
	int64_t c0 = proc_cpu_us(sp.pid), t0 = cl_mono_us();
	usleep((useconds_t)(window_s * 1e6));
	uint64_t e1 = r.events;
	int64_t c1 = proc_cpu_us(sp.pid), t1 = cl_mono_us();
	res.client_events_per_s = (double)(e1 - e0) * 1e6 / (double)(t1 - t0);
	res.sim_cpu = (double)(c1 - c0) / (double)(t1 - t0);
	res.closed = r.closed;
	sim_stop(&sp, stats, sizeof(stats));
	r.stop = true;
	pthread_join(th, NULL);
	for (int i = 0; i < streams; i++)
		close(r.fds[i]);
	close(r.ep);
	free(r.fds);
	free(r.last);
	res.p50 = json_int(stats, "p50");
	res.p99 = json_int(stats, "p99");
	res.p999 = json_int(stats, "p999");
	res.max = json_int(stats, "max");
	res.sim_chunks = json_int(stats, "chunks");
	res.spin_us = json_int(stats, "spin_us");
	res.window_s = (double)(t1 - t0) / 1e6;
	return res;
}

static void print_load(const char *name, int streams, const char *itl, const struct load_result *lr)
{
	double ev = lr->client_events_per_s;
	/* Spinning (waiting on the clock for a deadline under 20 us away) is CPU the loop
	 * would otherwise sleep through; shown apart so the cost of an event is not inflated.
	 * The spin total runs to the simulator's exit, a little past the window: an
	 * over-estimate, so the net figure errs high. */
	double spin_frac = lr->spin_us > 0 && lr->window_s > 0
			       ? (double)lr->spin_us / 1e6 / (lr->window_s + 0.2)
			       : 0;
	if (spin_frac > lr->sim_cpu)
		spin_frac = lr->sim_cpu;
	printf("%s: %d streams, itl %s: client received %.0f events/s; sim CPU %.0f%% of one "
	       "core, %.0f%% of it spinning (%.2f us per event, %.2f without the spin); lateness "
	       "p50 %lldus p99 %lldus p99.9 %lldus max %lldus; %llu connections closed early\n",
	       name, streams, itl, ev, lr->sim_cpu * 100,
	       lr->sim_cpu > 0 ? 100 * spin_frac / lr->sim_cpu : 0.0,
	       ev > 0 ? lr->sim_cpu * 1e6 / ev : 0.0,
	       ev > 0 ? (lr->sim_cpu - spin_frac) * 1e6 / ev : 0.0, lr->p50, lr->p99, lr->p999,
	       lr->max, (unsigned long long)lr->closed);
}

/* $CHATLOAD_SIM_BIN, else the build's chatload-sim (tests/bench/CMakeLists.txt). */
static const char *default_sim(void)
{
	const char *env = getenv("CHATLOAD_SIM_BIN");
	return env ? env : CHATLOAD_SIM_PATH;
}

int main(int argc, char **argv)
{
	const char *bin = default_sim();
	int streams = 10000;
	const char *itl = "100ms";
	double window = 5;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--sim") == 0 && i + 1 < argc)
			bin = argv[++i];
		else if (strcmp(argv[i], "--streams") == 0 && i + 1 < argc)
			streams = atoi(argv[++i]);
		else if (strcmp(argv[i], "--itl") == 0 && i + 1 < argc)
			itl = argv[++i];
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			window = atof(argv[++i]);
		else if (strcmp(argv[i], "--nice") == 0 && i + 1 < argc)
			g_nice = atoi(argv[++i]);
		else if (strcmp(argv[i], "--sim-arg") == 0 && i + 1 < argc &&
			 g_n_sim_args < MAX_SIM_ARGS)
			g_sim_args[g_n_sim_args++] = argv[++i];
		else {
			fprintf(stderr, "usage: bench_sim [--sim PATH] [--streams N (10000)] "
					"[--itl DUR (100ms)] [--seconds S (5)] [--nice N (-10)] "
					"[--sim-arg ARG]...\n");
			return 2;
		}
	}
	if (streams < 1 || streams > MAX_STREAMS || access(bin, X_OK) != 0) {
		fprintf(stderr, "bench_sim: need 1..%d streams and an executable '%s'\n",
			MAX_STREAMS, bin);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	errno = 0;
	int before = getpriority(PRIO_PROCESS, 0);
	bool nice_ok = setpriority(PRIO_PROCESS, 0, g_nice) == 0;
	setpriority(PRIO_PROCESS, 0, before);
	printf("bench_sim: %d CPUs; simulator pinned to CPU 0, load client to CPU 1; nice %d %s\n",
	       n_cpus(), g_nice, nice_ok ? "applied" : "not permitted (running at default)");

	struct roof_result roof = roofline(3);

	struct load_result target = run_load(bin, streams, itl, "100ms", window);
	print_load("target", streams, itl, &target);

	/* Saturation: 1024 streams asking for 1024 000 chunks/s, far more than one core
	 * writes, so every stream is always due and the heap serves them round-robin, one
	 * write per event, like the roofline loop.  Lateness grows without bound here by
	 * design; the figure is the throughput. */
	struct load_result sat = run_load(bin, ROOF_SOCKETS, "1ms", "0", window);
	print_load("saturation", ROOF_SOCKETS, "1ms", &sat);
	double sat_per_cpu_s = sat.sim_cpu > 0 ? sat.client_events_per_s / sat.sim_cpu : 0;
	printf("simulator at saturation: %.0f events/s = %.0f%% of the roofline's %.0f; per "
	       "CPU-second %.0f = %.0f%% of the roofline's %.0f\n",
	       sat.client_events_per_s, 100 * sat.client_events_per_s / roof.writes_per_s,
	       roof.writes_per_s, sat_per_cpu_s, 100 * sat_per_cpu_s / roof.writes_per_cpu_s,
	       roof.writes_per_cpu_s);
	return 0;
}
