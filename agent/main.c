/* chatload-agent: the load-generating daemon; parses flags and serves runs (control.c). */
#include "agent/daemon/control.h"
#include "agent/daemon/wake.h"

#include "chatload/buf.h"
#include "chatload/exitcode.h"
#include "chatload/log.h"
#include "chatload/procs.h"
#include "chatload/units.h"
#include "chatload/wire.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Set by SIGINT/SIGTERM, read by the control loop on the main thread.  A signal sent to the
 * process may run its handler on any thread that does not block it (the readiness gate's
 * thread does not), so this is an atomic, not a volatile sig_atomic_t; a lock-free one is
 * safe to store to from a handler.
 */
static atomic_int g_stop;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag must be lock-free for the handler");

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&g_stop, 1);
	cl_wake_poke(); /* the control thread sleeps on it */
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: chatload-agent --connect URL [options]\n\n"
	    "Dials a chatload coordinator, runs the load it is given, reports histograms.\n"
	    "Serves one run at a time and then waits for the next (a daemon), unless --once.\n\n"
	    "  --connect URL        coordinator address: tls+tcp://HOST:PORT, "
	    "tcp://127.0.0.1:PORT,\n"
	    "                       ipc:///path\n"
	    "  --token-file F       shared token (first line of F); or env CHATLOAD_TOKEN\n"
	    "  --tls-ca F           CA that signed the coordinator's certificate (tls+tcp)\n"
	    "  --tls-cert F         this agent's certificate, when the coordinator wants one\n"
	    "  --tls-key F          its private key\n"
	    "  --tls-server-name N  name to verify in the coordinator's certificate\n"
	    "  --allow-target H[:P] only load this host (and port; repeatable): a name, an IPv4\n"
	    "                       address or [IPv6]; default: any target\n"
	    "  --workers N          worker threads (default: online CPUs)\n"
	    "  --processes N        serve from N agent processes (1..64), each joining the\n"
	    "                       coordinator as an agent of its own (same --name)\n"
	    "  --source-address A   bind the load's connections to the local address A, each\n"
	    "                       stream to the next address of the pool (repeatable; an IPv4\n"
	    "                       block A.B.C.D/LEN adds its host addresses)\n"
	    "  --insecure           allow plaintext tcp:// off loopback\n"
	    "  --once               exit when the first run ends\n"
	    "  --request-log F      write one JSON line per request (debugging)\n"
	    "  --id-prefix P        X-Request-Id prefix (default a<agent id>)\n"
	    "  --name N             how the coordinator names this agent (default: host name;\n"
	    "                       it adds the address it sees: 'N at 10.0.0.5')\n"
	    "  -v, -q               more or less logging (or CHATLOAD_LOG=debug|info|warn|error)\n"
	    "  --version, --help\n");
}

/* A name the coordinator can print: printable ASCII, no quotes or backslashes. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > CL_WIRE_MAX_HOST)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x21 || c > 0x7e || c == '"' || c == '\\' || c == '\'')
			return false;
	}
	return true;
}

static int read_token(const char *path, char *buf, size_t n)
{
	struct cl_buf b;
	cl_buf_init(&b, 4096);
	if (cl_buf_read_file(&b, path) != 0) {
		fprintf(stderr, "chatload-agent: cannot read token file '%s': %s\n", path,
			strerror(errno));
		cl_buf_free(&b);
		return -1;
	}
	b.data[strcspn(b.data, "\r\n")] = '\0';
	snprintf(buf, n, "%s", b.data);
	cl_buf_free(&b);
	return 0;
}

enum {
	O_CONNECT = 256,
	O_TOKEN_FILE,
	O_CA,
	O_CERT,
	O_KEY,
	O_SNI,
	O_ALLOW,
	O_WORKERS,
	O_INSECURE,
	O_ONCE,
	O_REQLOG,
	O_PREFIX,
	O_VERSION,
	O_NAME,
	O_SOURCE,
	O_PROCESSES
};
static const struct option longopts[] = {
	{ "connect", required_argument, NULL, O_CONNECT },
	{ "token-file", required_argument, NULL, O_TOKEN_FILE },
	{ "tls-ca", required_argument, NULL, O_CA },
	{ "tls-cert", required_argument, NULL, O_CERT },
	{ "tls-key", required_argument, NULL, O_KEY },
	{ "tls-server-name", required_argument, NULL, O_SNI },
	{ "allow-target", required_argument, NULL, O_ALLOW },
	{ "workers", required_argument, NULL, O_WORKERS },
	{ "insecure", no_argument, NULL, O_INSECURE },
	{ "once", no_argument, NULL, O_ONCE },
	{ "request-log", required_argument, NULL, O_REQLOG },
	{ "id-prefix", required_argument, NULL, O_PREFIX },
	{ "version", no_argument, NULL, O_VERSION },
	{ "name", required_argument, NULL, O_NAME },
	{ "source-address", required_argument, NULL, O_SOURCE },
	{ "processes", required_argument, NULL, O_PROCESSES },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* What the flags fill in and main hands to the daemon: the options point into them. */
static char token[512];
static struct cl_allow_list allow;
static struct cl_srcaddr_pool source;
static uint32_t n_processes = 1;

/* parse_flags and apply_flag: go on to serve (any other value is the exit code). */
#define GO_ON (-1)

/* How TLS messages name the ends and the files: the agent dials the coordinator, which
 * holds its own certificate and CA in the scenario's agents.tls section. */
static const struct cl_tls_words agent_tls_words = {
	.self = "this agent",
	.peer = "the coordinator",
	.ca = "--tls-ca",
	.cert = "--tls-cert",
	.key = "--tls-key",
	.server_name = "--tls-server-name",
	.peer_cert = "agents.tls.cert",
	.peer_ca = "agents.tls.ca",
};

/* Applies one flag c (its argument arg) to o: GO_ON, or the exit code of a bad value or a
 * flag that ends the program (--version, --help). */
static int apply_flag(int c, const char *arg, struct cl_agent_opts *o)
{
	struct cl_err aerr = { 0 };
	int64_t v;
	switch (c) {
	case O_CONNECT:
		o->connect_url = arg;
		break;
	case O_TOKEN_FILE:
		if (read_token(arg, token, sizeof(token)) != 0)
			return CL_EXIT_USAGE;
		o->token = token;
		break;
	case O_CA:
		o->tls.ca_file = arg;
		break;
	case O_CERT:
		o->tls.cert_file = arg;
		break;
	case O_KEY:
		o->tls.key_file = arg;
		break;
	case O_SNI:
		o->tls.server_name = arg;
		break;
	case O_ALLOW:
		/* Parsed by libcurl like a target's host, so both are compared as libcurl sees
		 * them. */
		if (allow.n == 256) {
			fprintf(stderr, "chatload-agent: too many --allow-target entries\n");
			return CL_EXIT_USAGE;
		}
		if (cl_allow_list_add(&allow, arg, &aerr) != 0) {
			fprintf(stderr, "chatload-agent: %s\n", aerr.msg);
			return CL_EXIT_USAGE;
		}
		break;
	case O_SOURCE:
		/* Checked at once: an address this host does not have would fail every
		 * connection of the run, so it is a bad flag, not a run's error. */
		{
			size_t before = source.n;
			if (cl_srcaddr_add(&source, arg, &aerr) != 0) {
				fprintf(stderr, "chatload-agent: --source-address: %s\n", aerr.msg);
				return CL_EXIT_USAGE;
			}
			for (size_t i = before; i < source.n; i++) {
				if (cl_srcaddr_check_local(source.addr[i], &aerr) != 0) {
					fprintf(stderr, "chatload-agent: --source-address: %s\n",
						aerr.msg);
					return CL_EXIT_USAGE;
				}
			}
		}
		break;
	case O_PROCESSES:
		if (cl_parse_i64(arg, 1, CL_PROCS_MAX, &v) != 0) {
			fprintf(stderr, "chatload-agent: --processes must be 1..%d, got '%s'\n",
				CL_PROCS_MAX, arg);
			return CL_EXIT_USAGE;
		}
		n_processes = (uint32_t)v;
		break;
	case O_WORKERS:
		if (cl_parse_i64(arg, 1, 1024, &v) != 0) {
			fprintf(stderr, "chatload-agent: --workers must be 1..1024, got '%s'\n",
				arg);
			return CL_EXIT_USAGE;
		}
		o->workers = (uint32_t)v;
		break;
	case O_INSECURE:
		o->insecure = true;
		break;
	case O_ONCE:
		o->once = true;
		break;
	case O_REQLOG:
		o->request_log = arg;
		break;
	case O_PREFIX:
		o->id_prefix = arg;
		break;
	case O_NAME:
		if (!name_ok(arg)) {
			fprintf(stderr,
				"chatload-agent: --name must be 1-%d printable characters, got "
				"'%s'\n",
				CL_WIRE_MAX_HOST, arg);
			return CL_EXIT_USAGE;
		}
		o->name = arg;
		break;
	case O_VERSION:
		printf("chatload-agent %s\n", CHATLOAD_VERSION);
		return CL_EXIT_OK;
	case 'h':
		usage(stdout);
		return CL_EXIT_OK;
	case 'v':
		cl_log_adjust(-1);
		break;
	case 'q':
		cl_log_adjust(+1);
		break;
	default:
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	return GO_ON;
}

/* Fills o from the command line and checks what the flags say together (an address is
 * required and must be one this agent may dial): GO_ON, or the exit code. */
static int parse_flags(int argc, char **argv, struct cl_agent_opts *o)
{
	int c;
	while ((c = getopt_long(argc, argv, "hvq", longopts, NULL)) != -1) {
		int rc = apply_flag(c, optarg, o);
		if (rc != GO_ON)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "chatload-agent: unexpected argument '%s'\n", argv[optind]);
		return CL_EXIT_USAGE;
	}
	if (!o->connect_url) {
		fprintf(stderr, "chatload-agent: --connect URL is required\n");
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	if (!o->token) {
		const char *env = getenv("CHATLOAD_TOKEN");
		o->token = env ? env : "";
	}
	o->allow = &allow;
	o->source = &source;
	struct cl_err err = { 0 };
	if (cl_transport_check_dial(o->connect_url, &o->tls, o->insecure, &err) != 0) {
		char msg[700];
		fprintf(stderr, "chatload-agent: %s\n", cl_err_format(&err, msg, sizeof(msg)));
		return CL_EXIT_USAGE;
	}
	return GO_ON;
}

/* Sets up what the whole process shares (the wake-up pipe, signal handlers, libcurl), then
 * serves runs as o says until the daemon ends; returns the exit code. */
static int serve(const struct cl_agent_opts *o)
{
	int wrc = cl_wake_open();
	if (wrc != 0) {
		fprintf(stderr, "chatload-agent: cannot create its wake-up pipe: %s\n",
			strerror(-wrc));
		return CL_EXIT_FAILED;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Once for the whole process, before any thread starts: the engine and the readiness
	 * gate use libcurl but never initialise it. */
	CURLcode crc = curl_global_init(CURL_GLOBAL_DEFAULT);
	if (crc != CURLE_OK) {
		fprintf(stderr, "chatload-agent: cannot initialise libcurl: %s\n",
			curl_easy_strerror(crc));
		return CL_EXIT_FAILED;
	}
	int code = cl_agent_serve(o, &g_stop);
	curl_global_cleanup();
	return code;
}

/* --processes: child i serves as an agent of its own.  Its request log and X-Request-Id
 * prefix get ".<i>", so neither is shared; it is ready at once (joining is its own
 * business, and a child that cannot join ends, which the supervisor reports). */
static int serve_child(void *arg, uint32_t i, int ready_fd)
{
	static char log_path[4200], prefix[80], name[48];
	struct cl_agent_opts o = *(const struct cl_agent_opts *)arg;
	snprintf(name, sizeof(name), "chatload-agent.%u", i);
	cl_log_init(name);
	if (o.request_log) {
		snprintf(log_path, sizeof(log_path), "%s.%u", o.request_log, i);
		o.request_log = log_path;
	}
	if (o.id_prefix) {
		snprintf(prefix, sizeof(prefix), "%s.%u", o.id_prefix, i);
		o.id_prefix = prefix;
	}
	if (write(ready_fd, "1\n", 2) != 2)
		CL_WARN("cannot tell the supervisor this process started");
	close(ready_fd);
	return serve(&o);
}

int main(int argc, char **argv)
{
	cl_log_init(argv[0]);
	struct cl_agent_opts o = { .tls.words = &agent_tls_words };
	int code = parse_flags(argc, argv, &o);
	if (code == GO_ON && n_processes > 1) {
		struct cl_procs p = {
			.n = n_processes, .what = "agent process", .arg = &o, .child = serve_child
		};
		code = cl_procs_run(&p);
	} else if (code == GO_ON) {
		code = serve(&o);
	}
	cl_allow_list_free(&allow);
	return code;
}
