/* chatload probe: runs the readiness gate alone from this machine and prints its verdict. */
#include "coordinator/cmd/commands.h"

#include "client/probe/readiness.h"

#include "chatload/exitcode.h"
#include "chatload/log.h"
#include "chatload/units.h"
#include "chatload/body_json.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_HEADERS 64

static atomic_int probe_cancel;

static void on_signal(int sig)
{
	(void)sig;
	probe_cancel = 1;
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: chatload probe --url URL [--model M] [--timeout D] [--request-timeout D]\n"
	    "                      [--consecutive N] [--prompt TEXT] [--max-tokens N]\n"
	    "                      [--body JSON] [--api-key-env VAR] [--header 'Name: value']...\n"
	    "                      [--connect-timeout D] [--backoff-initial D] [--backoff-max D]\n"
	    "                      [--api chat|completions|responses|embeddings|messages|\n"
	    "                             rerank|score|transcription]\n"
	    "                      [--insecure] [-q]\n"
	    "\n"
	    "Runs the readiness gate against URL from this machine and prints one verdict line\n"
	    "on stdout.  The gate passes when, in order: a TCP connection to URL's host and port\n"
	    "works; GET URL/models answers 200 and lists the model (any model when none is\n"
	    "named: the first is used); and N streamed chat completions in a row succeed (HTTP\n"
	    "200, at least one token, [DONE]).  Not yet (503 'Loading model', connection refused,\n"
	    "timeouts, 5xx, 429, empty streams) is retried with exponential backoff and full\n"
	    "jitter; 400/401/403/404/405/413/422 or a model the server does not list stop at "
	    "once.\n"
	    "\n"
	    "options:\n"
	    "  --url URL             base URL of the API, e.g. http://127.0.0.1:8000/v1 "
	    "(required)\n"
	    "  --model M             model to wait for (default: the first /models lists)\n"
	    "  --timeout D           give up after D in total (default 15m)\n"
	    "  --request-timeout D   limit on each generation attempt (default 5m)\n"
	    "  --consecutive N       successful generations in a row needed (default 2)\n"
	    "  --prompt TEXT         probe prompt (default \"%s\")\n"
	    "  --max-tokens N        max_tokens of the probe (default %u)\n"
	    "  --body JSON           extra request fields merged into the probe body, e.g.\n"
	    "                        '{\"chat_template_kwargs\":{\"enable_thinking\":false}}'\n"
	    "                        (a null removes a field; \"stream\" stays true)\n"
	    "  --api-key-env VAR     send 'Authorization: Bearer $VAR' (the key is never printed;\n"
	    "                        with --api messages also as x-api-key)\n"
	    "  --header H            extra request header 'Name: value' (repeatable)\n"
	    "  --connect-timeout D   limit on each TCP connect (default 10s)\n"
	    "  --backoff-initial D   first wait after a failure (default 1s)\n"
	    "  --backoff-max D       longest wait between attempts (default 30s)\n"
	    "  --api A               the API probed, as workload.api: chat (default), "
	    "completions,\n"
	    "                        responses, embeddings, messages, rerank, score or\n"
	    "                        transcription\n"
	    "  --insecure            do not verify the server's TLS certificate\n"
	    "  -q, --quiet           no progress lines on stderr, only the verdict\n"
	    "  -h, --help            show this help\n"
	    "\n"
	    "Durations: 500ms, 90s, 2m, 1h30m.  Progress goes to stderr while waiting (one\n"
	    "updating line on a terminal).\n"
	    "exit codes: 0 ready, 3 not ready (timed out or a configuration error),\n"
	    "            2 usage error, 1 interrupted\n",
	    CL_PROBE_DEFAULT_PROMPT, CL_PROBE_DEFAULT_MAX_TOKENS);
}

struct progress {
	bool tty;
	bool quiet;
	bool line_open;                 /* a terminal line is being updated */
	int64_t seen[CL_READY__PHASES]; /* phase pass times already shown */
	uint32_t oks;                   /* generations succeeded so far */
};

static void show(struct progress *p, const char *line)
{
	if (p->tty) {
		fprintf(stderr, "\r\033[Kchatload probe: %s", line);
		fflush(stderr);
		p->line_open = true;
	} else {
		CL_INFO("probe: %s", line);
	}
}

static void on_progress(void *ctx, const struct cl_readiness_result *r, int64_t next_us)
{
	struct progress *p = ctx;
	char line[900], e[32], e2[32], w[64];
	if (p->quiet || (next_us < 0 && r->status != CL_READY_PENDING))
		return; /* the verdict says how it ended */
	cl_format_duration_us(r->elapsed_us, CL_DURATION_TENTHS, e, sizeof(e));
	if (next_us < 0)
		snprintf(w, sizeof(w), "no time left for another attempt");
	else
		snprintf(w, sizeof(w), "next attempt in %s",
			 cl_format_duration_us(next_us, CL_DURATION_TENTHS, e2, sizeof(e2)));
	if (r->failing_since_us >= 0) {
		char since[32];
		p->oks = 0;
		snprintf(line, sizeof(line), "%s, %s elapsed (failing since %s): %s; %s",
			 cl_readiness_phase_name(r->phase), e,
			 cl_format_duration_us(r->failing_since_us, CL_DURATION_TENTHS, since,
					       sizeof(since)),
			 r->last_error, w);
		show(p, line);
		return;
	}
	for (int i = 0; i < CL_READY__PHASES; i++) {
		if (r->phase_passed_us[i] >= 0 && p->seen[i] < 0) {
			p->seen[i] = r->phase_passed_us[i];
			if (i == CL_READY_MODELS)
				snprintf(line, sizeof(line), "%s ok at %s (model '%s')",
					 cl_readiness_phase_name(i), e, r->model);
			else
				snprintf(line, sizeof(line), "%s ok at %s",
					 cl_readiness_phase_name(i), e);
			show(p, line);
			return;
		}
	}
	p->oks++;
	snprintf(line, sizeof(line), "generation ok at %s (%u in a row; probe ttft %lldms)", e,
		 p->oks, (long long)((r->probe_ttft_us + 500) / 1000));
	show(p, line);
}

static int bad_usage(const char *fmt, const char *arg) __attribute__((format(printf, 1, 0)));

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "chatload probe: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(see 'chatload probe --help')\n");
	return CL_EXIT_USAGE;
}

static int parse_duration(const char *flag, const char *text, int64_t *out)
{
	struct cl_err err = { 0 };
	if (cl_parse_duration_us(text, out, &err) != 0 || *out <= 0) {
		fprintf(stderr, "chatload probe: %s: %s\n", flag,
			err.msg[0] ? err.msg : "must be a positive duration");
		return -1;
	}
	return 0;
}

enum {
	OPT_URL = 256,
	OPT_MODEL,
	OPT_TIMEOUT,
	OPT_REQ_TIMEOUT,
	OPT_CONSECUTIVE,
	OPT_PROMPT,
	OPT_MAX_TOKENS,
	OPT_BODY,
	OPT_KEY_ENV,
	OPT_HEADER,
	OPT_CONNECT_TIMEOUT,
	OPT_BACKOFF_INITIAL,
	OPT_BACKOFF_MAX,
	OPT_INSECURE,
	OPT_API,
};

/* What the command line asks for; cfg.target points at target. */
struct probe_args {
	struct cl_target_plan target;
	struct cl_probe_cfg cfg;
	struct progress prog;
	char *headers[MAX_HEADERS];
	const char *url;
};

#define GO_ON (-1) /* a parsing step's answer when the command goes on */

/* Applies option c (its value in optarg) to a: GO_ON, or the exit code that ends the
 * command (help shown, or a usage error said). */
static int apply_option(struct probe_args *a, int c, char **argv)
{
	struct cl_err err = { 0 };
	uint64_t u;
	switch (c) {
	case OPT_URL:
		a->url = optarg;
		break;
	case OPT_MODEL:
		a->target.model = optarg;
		break;
	case OPT_TIMEOUT:
		if (parse_duration("--timeout", optarg, &a->cfg.timeout_us))
			return CL_EXIT_USAGE;
		break;
	case OPT_REQ_TIMEOUT:
		if (parse_duration("--request-timeout", optarg, &a->cfg.request_timeout_us))
			return CL_EXIT_USAGE;
		break;
	case OPT_CONNECT_TIMEOUT:
		if (parse_duration("--connect-timeout", optarg, &a->target.connect_timeout_us))
			return CL_EXIT_USAGE;
		break;
	case OPT_BACKOFF_INITIAL:
		if (parse_duration("--backoff-initial", optarg, &a->cfg.backoff_initial_us))
			return CL_EXIT_USAGE;
		break;
	case OPT_BACKOFF_MAX:
		if (parse_duration("--backoff-max", optarg, &a->cfg.backoff_max_us))
			return CL_EXIT_USAGE;
		break;
	case OPT_CONSECUTIVE:
		if (cl_parse_u64(optarg, 1000, &u) != 0 || u == 0)
			return bad_usage(
			    "--consecutive must be an integer from 1 to 1000, not '%s'", optarg);
		a->cfg.consecutive = (uint32_t)u;
		break;
	case OPT_MAX_TOKENS:
		if (cl_parse_u64(optarg, 10000000, &u) != 0 || u == 0)
			return bad_usage("--max-tokens must be a positive integer, not '%s'",
					 optarg);
		a->cfg.max_tokens = (uint32_t)u;
		break;
	case OPT_PROMPT:
		a->cfg.prompt = optarg;
		break;
	case OPT_BODY: {
		char *check = NULL;
		if (cl_body_json_probe("m", "p", 1, optarg, &check, &err) != 0)
			return bad_usage("--body: %s", err.msg);
		free(check);
		a->cfg.extra_body_json = optarg;
		break;
	}
	case OPT_KEY_ENV:
		a->target.api_key_env = optarg;
		break;
	case OPT_HEADER:
		if (!strchr(optarg, ':'))
			return bad_usage("--header must be 'Name: value', not '%s'", optarg);
		if (a->target.n_headers == MAX_HEADERS)
			return bad_usage("%s", "too many --header options");
		a->headers[a->target.n_headers++] = optarg;
		break;
	case OPT_INSECURE:
		a->target.tls_verify = false;
		break;
	case OPT_API: {
		bool found = false;
		for (int i = 0; i < CL_API__COUNT && !found; i++) {
			const char *name = cl_api_name((enum cl_api)i);
			if (name && strcmp(optarg, name) == 0) {
				a->target.api = (enum cl_api)i;
				found = true;
			}
		}
		if (!found)
			return bad_usage("--api must be chat, completions, responses, embeddings, "
					 "messages, rerank, score or transcription, not '%s'",
					 optarg);
		break;
	}
	case 'q':
		a->prog.quiet = true;
		break;
	case 'h':
		usage(stdout);
		return CL_EXIT_OK;
	case ':':
		return bad_usage("option '%s' needs a value", argv[optind - 1]);
	default:
		return bad_usage("unknown option '%s'", argv[optind - 1]);
	}
	return GO_ON;
}

/* Parses the command line into a: GO_ON, or the exit code that ends the command. */
static int parse_args(int argc, char **argv, struct probe_args *a)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, OPT_URL },
		{ "model", required_argument, NULL, OPT_MODEL },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "request-timeout", required_argument, NULL, OPT_REQ_TIMEOUT },
		{ "consecutive", required_argument, NULL, OPT_CONSECUTIVE },
		{ "prompt", required_argument, NULL, OPT_PROMPT },
		{ "max-tokens", required_argument, NULL, OPT_MAX_TOKENS },
		{ "body", required_argument, NULL, OPT_BODY },
		{ "api-key-env", required_argument, NULL, OPT_KEY_ENV },
		{ "header", required_argument, NULL, OPT_HEADER },
		{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
		{ "backoff-initial", required_argument, NULL, OPT_BACKOFF_INITIAL },
		{ "backoff-max", required_argument, NULL, OPT_BACKOFF_MAX },
		{ "insecure", no_argument, NULL, OPT_INSECURE },
		{ "api", required_argument, NULL, OPT_API },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, code;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
		if ((code = apply_option(a, c, argv)) != GO_ON)
			return code;
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!a->url)
		return bad_usage("%s", "--url is required");
	if (strncmp(a->url, "http://", 7) != 0 && strncmp(a->url, "https://", 8) != 0)
		return bad_usage("--url must start with http:// or https://, not '%s'", a->url);
	return GO_ON;
}

/* Runs the gate (Ctrl-C cancels it), prints its verdict, and returns the exit code. */
static int run_gate(struct probe_args *a)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	struct cl_readiness_result r;
	int rc = cl_probe_run(&a->cfg, on_progress, &a->prog, &probe_cancel, &r);
	if (a->prog.line_open) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	char verdict[1024];
	cl_readiness_describe(&r, verdict, sizeof(verdict));
	printf("%s\n", verdict);
	fflush(stdout);
	switch (rc) {
	case 0:
		return CL_EXIT_OK;
	case CL_ECLOSED:
		return CL_EXIT_FAILED;
	default:
		return CL_EXIT_NOT_READY;
	}
}

int cl_cmd_probe(int argc, char **argv)
{
	struct probe_args a = { .target = { .tls_verify = true },
				.prog = { .tty = isatty(STDERR_FILENO) } };
	a.cfg.target = &a.target;
	int code = parse_args(argc, argv, &a);
	if (code != GO_ON)
		return code;
	a.target.headers = a.target.n_headers ? a.headers : NULL;
	a.target.base_url = strdup(a.url);
	if (!a.target.base_url) {
		fprintf(stderr, "chatload probe: out of memory\n");
		return CL_EXIT_FAILED;
	}
	size_t ul = strlen(a.target.base_url);
	while (ul > 8 && a.target.base_url[ul - 1] == '/')
		a.target.base_url[--ul] = '\0';
	if (cl_log_level() > CL_LOG_INFO)
		a.prog.quiet = true;
	for (int i = 0; i < CL_READY__PHASES; i++)
		a.prog.seen[i] = -1;
	code = run_gate(&a);
	free(a.target.base_url);
	return code;
}
