/* Setting up a run's processes: the built-in simulator, the control socket, local agents;
 * waiting for the fleet to join; and tearing it all down on every exit path. */
#include "coordinator/run/internal.h"

#include "chatload/clock.h"
#include "chatload/fdlimit.h"
#include "chatload/log.h"
#include "chatload/sim_options.h"
#include "chatload/srcaddr.h"
#include "chatload/units.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define MAX_SIM_ARGS 160

int cli_run_start_simulator(struct run *r, struct cl_err *err)
{
	char bin[4096];
	int rc = cl_find_program("chatload-sim", "CHATLOAD_SIM_BIN", bin, sizeof(bin), err);
	if (rc != 0)
		return rc;
	const char *dir = cl_results_dir(r->res);
	char port_file[4200], log_file[4200];
	snprintf(port_file, sizeof(port_file), "%s/simulator.port", dir);
	snprintf(log_file, sizeof(log_file), "%s/simulator.log", dir);
	unlink(port_file);

	char *argv[MAX_SIM_ARGS];
	size_t n = 0;
	argv[n++] = bin;
	argv[n++] = "--listen";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--port-file";
	argv[n++] = port_file;
	char flags[64][80];
	for (size_t i = 0; i < r->s.target.n_sim && n + 3 < MAX_SIM_ARGS && i < 64; i++) {
		const struct cl_sim_kv *kv = &r->s.target.sim[i];
		const struct cl_sim_option *opt = cl_sim_option_find(kv->key);
		if (!opt)
			continue; /* the loader already refused unknown keys */
		snprintf(flags[i], sizeof(flags[i]), "--%s", opt->name);
		if (opt->kind == CL_SIMOPT_BOOL) {
			bool on = false;
			if (cl_parse_bool(kv->value, &on) == 0 && on)
				argv[n++] = flags[i];
			continue;
		}
		argv[n++] = flags[i];
		argv[n++] = kv->value;
	}
	/* A transcription uploads its audio whole: room for the longest form chatload makes
	 * (an hour of 16 kHz audio, 115 MB) rather than the simulator's 1 MiB default. */
	if (r->s.workload.api == CL_API_TRANSCRIPTION && n + 3 < MAX_SIM_ARGS) {
		argv[n++] = "--max-body";
		argv[n++] = "128MiB";
	}
	argv[n] = NULL;

	int log_fd = open(log_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (log_fd < 0)
		return cl_err_set(err, CL_EIO, "cannot create '%s': %s", log_file, strerror(errno));
	/* The simulator's stderr goes to its log too: it is not the user's concern unless it
	 * fails, and then the error says where to look. */
	int saved = dup(STDERR_FILENO);
	dup2(log_fd, STDERR_FILENO);
	rc = cl_child_start(&r->sim, "simulator", argv, NULL, log_fd, err);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(log_fd);
	if (rc != 0)
		return rc;
	char port[32];
	rc = cl_wait_for_file_line(port_file, 10 * 1000000LL, &r->sim, port, sizeof(port), err);
	if (rc != 0)
		return cl_err_prefix(err, "built-in simulator did not start (see '%s')", log_file);
	snprintf(r->sim_url, sizeof(r->sim_url), "http://127.0.0.1:%s/v1", port);
	CL_INFO("built-in simulator listening at %s", r->sim_url);
	return 0;
}

static void random_hex(char *out, size_t n_bytes)
{
	unsigned char b[32];
	if (n_bytes > sizeof(b))
		n_bytes = sizeof(b);
	if (getrandom(b, n_bytes, 0) != (ssize_t)n_bytes) {
		/* No entropy: still unique per process, and local agents only. */
		uint64_t x = (uint64_t)cl_wall_us() ^ ((uint64_t)getpid() << 32);
		for (size_t i = 0; i < n_bytes; i++, x = x * 6364136223846793005ULL + 1)
			b[i] = (unsigned char)(x >> 56);
	}
	for (size_t i = 0; i < n_bytes; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int read_token(struct run *r, struct cl_err *err)
{
	const struct cl_scn_agents *ag = &r->s.agents;
	if (ag->token_env) {
		const char *v = getenv(ag->token_env);
		if (!v || !*v)
			return cl_err_set(err, CL_EINVAL,
					  "agents.token_env names '%s', which is not set",
					  ag->token_env);
		snprintf(r->token, sizeof(r->token), "%s", v);
		return 0;
	}
	if (ag->token_file) {
		FILE *f = fopen(ag->token_file, "r");
		if (!f)
			return cl_err_set(err, CL_EIO, "cannot read agents.token_file '%s': %s",
					  ag->token_file, strerror(errno));
		if (!fgets(r->token, sizeof(r->token), f))
			r->token[0] = '\0';
		fclose(f);
		r->token[strcspn(r->token, "\r\n")] = '\0';
		return 0;
	}
	/* No operator token: a fresh random one, which local agents get from the environment.
	 * Remote agents then cannot join, which is right: they need a token to be trusted. */
	random_hex(r->token, 16);
	if (ag->listen && ag->expect)
		CL_WARN("agents.listen without agents.token_env or token_file: remote agents "
			"cannot authenticate");
	return 0;
}

/* agents.source_addresses, before any agent starts (the loader checked each address is this
 * host's): the pool must hold the largest stage's streams, each a connection from one
 * address to the one target address and port. */
static int check_source_pool(const struct run *r, struct cl_err *err)
{
	const struct cl_srcaddr_pool *p = r->s.agents.source;
	if (!p || !p->n)
		return 0;
	if (!r->s.agents.local)
		return cl_err_set(err, CL_EINVAL,
				  "agents.source_addresses applies to local agents (agents.local); "
				  "a remote agent takes --source-address");
	uint32_t ports = cl_srcaddr_ephemeral_ports();
	if (!ports)
		return 0; /* no /proc: nothing to count with */
	uint64_t room = (uint64_t)p->n * ports;
	for (size_t i = 0; i < r->s.n_stages; i++) {
		const struct cl_scn_stage *st = &r->s.stages[i];
		/* Linux looks for a free port of a connect() bound to an address by scanning
		 * the range: at 20,000 connections an address (71 % of the range) agents
		 * stalled 60-100 s opening them, at 5,000 (18 %) not at all (bench_scale,
		 * docs/testing.md). */
		if (st->concurrency <= room && st->concurrency > room / 2)
			CL_WARN("stage '%s' holds %u streams over %zu source addresses: %llu an "
				"address, more than half of its %u ephemeral ports, where opening "
				"connections slows (docs/testing.md, bench_scale): add addresses",
				st->name ? st->name : "?", st->concurrency, p->n,
				(unsigned long long)((st->concurrency + p->n - 1) / p->n), ports);
		if (st->concurrency > room)
			return cl_err_set(
			    err, CL_EINVAL,
			    "stage '%s' holds %u streams, but agents.source_addresses gives %zu "
			    "addresses x %u ephemeral ports (net.ipv4.ip_local_port_range) = %llu "
			    "connections to one target address and port: add addresses",
			    st->name ? st->name : "?", st->concurrency, p->n, ports,
			    (unsigned long long)room);
	}
	return 0;
}

/* The most streams any stage holds at once (a rate stage's cap; 0 when none says). */
static uint32_t largest_stage(const struct run *r, const char **name)
{
	uint32_t most = 0;
	*name = "?";
	for (size_t i = 0; i < r->s.n_stages; i++) {
		if (r->s.stages[i].concurrency > most) {
			most = r->s.stages[i].concurrency;
			*name = r->s.stages[i].name ? r->s.stages[i].name : "?";
		}
	}
	return most;
}

/* How many streams the fleet can hold, against the largest stage, before any agent starts:
 * `agents.local: auto` is decided here (as many local agents as the largest stage needs at
 * what one agent can hold, the cores shared among them), and a stage the fleet cannot hold
 * is refused with the arithmetic instead of failing on the agents when it starts.  Local
 * agents inherit this process's descriptor limit; a remote one is counted at its engine's
 * slots, the most it can hold whatever its limit. */
static int size_fleet(struct run *r, struct cl_err *err)
{
	const char *name;
	uint32_t streams = largest_stage(r, &name);
	uint64_t fds = cl_fd_limit_raise();
	uint32_t per_local = cl_fd_agent_streams(fds);
	struct cl_scn_agents *ag = &r->s.agents;
	if (ag->local_auto) {
		uint64_t want = streams ? ((uint64_t)streams + per_local - 1) / per_local : 1;
		if (want > CL_RUN_MAX_LOCAL)
			return cl_err_set(
			    err, CL_EINVAL,
			    "agents.local: auto: stage '%s' holds %u streams, %llu local agents of "
			    "%u streams each (descriptor limit %llu less %u kept), more than the "
			    "%d "
			    "one host may start: add remote agents (agents.listen)",
			    name, streams, (unsigned long long)want, per_local,
			    (unsigned long long)fds, CL_AGENT_FD_MARGIN, CL_RUN_MAX_LOCAL);
		ag->local = (uint32_t)(want < 2 ? 2 : want);
		if (!ag->workers) {
			long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
			uint32_t cores = ncpu > 0 ? (uint32_t)ncpu : 1;
			ag->workers = cores / ag->local ? cores / ag->local : 1;
		}
		CL_INFO("agents.local: auto: %u local agents of %u workers (largest stage '%s', "
			"%u streams; %u streams per agent)",
			ag->local, ag->workers, name, streams, per_local);
	}
	uint64_t room =
	    (uint64_t)ag->local * per_local + (uint64_t)ag->expect * CL_AGENT_MAX_STREAMS;
	if (streams > room) {
		char remote[96] = "";
		if (ag->expect)
			snprintf(remote, sizeof(remote), " + %u remote agents x %u streams",
				 ag->expect, CL_AGENT_MAX_STREAMS);
		return cl_err_set(err, CL_EINVAL,
				  "stage '%s' holds %u streams, but %u local agents x %u streams "
				  "(the engine's %u slots, or the descriptor limit %llu less %u "
				  "kept)%s = %llu: add agents (agents.local: auto starts enough)",
				  name, streams, ag->local, per_local, CL_AGENT_MAX_STREAMS,
				  (unsigned long long)fds, CL_AGENT_FD_MARGIN, remote,
				  (unsigned long long)room);
	}
	return 0;
}

int cli_run_start_fleet(struct run *r, struct cl_err *err)
{
	int rc = check_source_pool(r, err);
	if (rc != 0)
		return rc;
	if ((rc = size_fleet(r, err)) != 0)
		return rc;
	if ((rc = read_token(r, err)) != 0)
		return rc;
	char run_id[64];
	char stamp[32];
	snprintf(run_id, sizeof(run_id), "%s-%s", r->s.name ? r->s.name : "run",
		 cl_wall_stamp(cl_wall_us(), stamp, sizeof(stamp)));
	r->expect = r->s.agents.local + r->s.agents.expect;
	if (r->expect == 0)
		return cl_err_set(err, CL_EINVAL, "no agents: set agents.local or agents.expect");
	if (r->s.agents.local > CL_RUN_MAX_LOCAL)
		return cl_err_set(err, CL_EINVAL, "agents.local is %u, at most %d",
				  r->s.agents.local, CL_RUN_MAX_LOCAL);
	if ((rc = cl_fleet_open(&r->fleet, run_id, r->token, r->expect,
				r->s.agents.report_interval_us, err)) != 0)
		return rc;
	/* One connection per agent, besides the run's files and children. */
	uint64_t fds = cl_fd_limit_raise();
	if (fds && fds < (uint64_t)r->expect + 64)
		CL_WARN("the descriptor limit is %llu for %u agents: some will not connect "
			"(raise it with ulimit -n or LimitNOFILE=)",
			(unsigned long long)fds, r->expect);
	r->fleet.on_report = cli_run_on_report;
	r->fleet.ctx = r;
	if (r->s.agents.local) {
		snprintf(r->ipc_path, sizeof(r->ipc_path), "/tmp/chatload-%d-%s.ipc", (int)getpid(),
			 r->token + 24);
		snprintf(r->ipc_url, sizeof(r->ipc_url), "ipc://%s", r->ipc_path);
		if ((rc = cl_fleet_listen(&r->fleet, r->ipc_url, NULL, false, err)) != 0)
			return rc;
	}
	if (r->s.agents.listen) {
		/* The listener's files come from the scenario's agents.tls section; agents are the
		 * peers that dial it. */
		static const struct cl_tls_words words = { .self = "the coordinator",
							   .peer = "an agent",
							   .ca = "agents.tls.ca",
							   .cert = "agents.tls.cert",
							   .key = "agents.tls.key" };
		struct cl_tls_opts tls = { .ca_file = r->s.agents.tls_ca,
					   .cert_file = r->s.agents.tls_cert,
					   .key_file = r->s.agents.tls_key,
					   .words = &words };
		bool insecure = r->o->insecure || getenv("CHATLOAD_INSECURE") != NULL;
		if ((rc = cl_fleet_listen(&r->fleet, r->s.agents.listen, &tls, insecure, err)) != 0)
			return rc;
		CL_INFO("waiting for %u remote agents on %s", r->s.agents.expect,
			r->s.agents.listen);
	}
	if (!r->s.agents.local)
		return 0;
	char bin[4096];
	if ((rc = cl_find_program("chatload-agent", "CHATLOAD_AGENT_BIN", bin, sizeof(bin), err)))
		return rc;
	static char token_env[128];
	snprintf(token_env, sizeof(token_env), "CHATLOAD_TOKEN=%s", r->token);
	char *env[] = { token_env, NULL };
	char workers[16];
	snprintf(workers, sizeof(workers), "%u", r->s.agents.workers);
	const struct cl_srcaddr_pool *src = r->s.agents.source;
	size_t n_src = src ? src->n : 0;
	char **argv = calloc(8 + 2 * n_src, sizeof(*argv));
	if (!argv)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < r->s.agents.local; i++) {
		char name[32];
		snprintf(name, sizeof(name), "local agent %u", i + 1);
		size_t n = 0;
		argv[n++] = bin;
		argv[n++] = "--connect";
		argv[n++] = r->ipc_url;
		argv[n++] = "--once";
		if (r->s.agents.workers) {
			argv[n++] = "--workers";
			argv[n++] = workers;
		}
		/* Every agent gets the whole pool, each starting at another address, so the
		 * first streams of all agents do not crowd the first address. */
		for (size_t k = 0; k < n_src; k++) {
			argv[n++] = "--source-address";
			argv[n++] = (char *)src->addr[(i + k) % n_src];
		}
		argv[n] = NULL;
		if ((rc = cl_child_start(&r->local[i], name, argv, env, -1, err)) != 0)
			break;
		r->n_local++;
	}
	free(argv);
	return rc;
}

int cli_run_wait_for_agents(struct run *r, struct cl_err *err)
{
	int64_t deadline = cl_mono_us() + r->s.agents.join_timeout_us;
	while (r->fleet.n < r->expect) {
		if (atomic_load(r->o->stop))
			return cl_err_set(err, CL_ECLOSED, "interrupted while waiting for agents");
		for (size_t i = 0; i < r->n_local; i++) {
			if (cl_child_poll(&r->local[i])) {
				char how[128];
				return cl_err_set(
				    err, CL_ECLOSED, "%s before joining",
				    cl_child_describe(&r->local[i], how, sizeof(how)));
			}
		}
		if (cl_mono_us() >= deadline) {
			char joined[1024] = "";
			size_t len = 0;
			for (size_t i = 0; i < r->fleet.n && len < sizeof(joined) - 64; i++)
				len += (size_t)snprintf(joined + len, sizeof(joined) - len, "%s%s",
							i ? ", " : "", r->fleet.agents[i].label);
			char t[32];
			return cl_err_set(err, CL_ETIMEDOUT,
					  "only %zu of %u agents joined within %s (joined: %s); "
					  "missing %u",
					  r->fleet.n, r->expect,
					  cl_format_duration_us(r->s.agents.join_timeout_us,
								CL_DURATION_PRECISE, t, sizeof(t)),
					  len ? joined : "none", r->expect - (uint32_t)r->fleet.n);
		}
		cl_fleet_serve(&r->fleet, 100000);
	}
	CL_INFO("%zu agents joined", r->fleet.n);
	return 0;
}

void cli_run_record_agents(struct run *r)
{
	struct cl_results_agent ag[CL_FLEET_MAX_AGENTS];
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		ag[i] = (struct cl_results_agent){
			.id = a->id,
			.host = a->host,
			.address = a->address[0] ? a->address : NULL,
			.workers = a->workers,
			.clock_offset_us = a->clock_offset_us,
			.start_skew_us = r->agents[i].worst_skew_us,
			.lost = a->live == CL_LIVE_LOST,
			.sources = r->agents[i].sources,
		};
	}
	cl_results_set_agents(r->res, ag, r->fleet.n);
}

void cli_run_stop_processes(struct run *r)
{
	/* Tell every agent to quit and give them a moment to hear it (each closes its
	 * connection when it has), then make sure. */
	if (r->fleet.open && r->fleet.n) {
		struct cl_msg_cmd quit = { .cmd = CL_CMD_QUIT };
		cl_fleet_broadcast(&r->fleet, &quit);
		int64_t deadline = cl_mono_us() + 1500000;
		while (cl_mono_us() < deadline) {
			bool all = true;
			for (size_t i = 0; i < r->fleet.n; i++)
				all = all && cl_fleet_departed(&r->fleet, i);
			if (all)
				break;
			cl_fleet_serve(&r->fleet, 50000);
		}
	}
	for (size_t i = 0; i < r->n_local; i++)
		cl_child_stop(&r->local[i], 3000000);
	cl_child_stop(&r->sim, 6000000);
	if (r->ipc_path[0])
		unlink(r->ipc_path);
}
