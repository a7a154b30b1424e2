/* chatload bench: a run from flags alone. The flags become a scenario's YAML text, checked by
 * the scenario loader (a problem is reported against the flag that wrote its line), written as
 * scenario.yaml in the results folder, then run by exactly what `chatload run FILE` runs. */
#include "coordinator/cmd/bench_int.h"
#include "coordinator/cmd/commands.h"
#include "coordinator/cmd/run_int.h"
#include "coordinator/results/results.h"
#include "coordinator/run/run.h"
#include "coordinator/scenario/scenario.h"

#include "chatload/assert.h"
#include "chatload/buf.h"
#include "chatload/clock.h"
#include "chatload/err.h"
#include "chatload/exitcode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCENARIO_FILE "scenario.yaml"
#define HELP_INDENT   24 /* --help: where a flag's description starts */
#define HELP_WIDTH    92 /* --help: the widest line */

/* One flag: its names (the first is chatload's, the others aliases a user of another tool
 * types), its value's placeholder (NULL: takes none), what it does, and what the same thing is
 * called in vLLM's `vllm bench serve`, GuideLLM's `guidellm benchmark` and AIPerf's
 * `aiperf profile` (for --help; "-" where the tool has none). */
struct opt {
	enum bench_opt id;
	const char *names[4];
	const char *arg;
	const char *help;
	const char *vllm, *guidellm, *aiperf;
};

static const struct opt opts[] = {
	{ O_URL,
	  { "--url", "--base-url", "--target" },
	  "URL",
	  "the server's OpenAI-compatible base URL, normally ending in /v1 (required)",
	  "--base-url",
	  "--target",
	  "--url" },
	{ O_MODEL,
	  { "--model", "-m" },
	  "NAME",
	  "the model to ask for (default: the first one the server's /v1/models lists)",
	  "--model",
	  "--model",
	  "--model" },
	{ O_CONCURRENCY,
	  { "--concurrency", "--max-concurrency", "-c" },
	  "N[,N...]",
	  "streams in flight, one stage per value (default " DEFAULT_CONCURRENCY
	  "); with --rate, one value: the cap on requests in flight",
	  "--max-concurrency",
	  "--profile concurrent --rate",
	  "--concurrency" },
	{ O_RATE,
	  { "--rate", "--request-rate" },
	  "R[,R...]",
	  "open loop instead: requests started per second (2, 2/s, 120/m), one stage per value, "
	  "Poisson arrivals",
	  "--request-rate",
	  "--profile poisson --rate",
	  "--request-rate" },
	{ O_BURSTINESS,
	  { "--burstiness" },
	  "K",
	  "with --rate: gamma arrivals of shape K (below 1 burstier than Poisson)",
	  "--burstiness",
	  "-",
	  "-" },
	{ O_DURATION,
	  { "--duration", "--max-seconds", "--benchmark-duration" },
	  "DUR",
	  "each stage's measured window: 30s, 2m, or seconds (default " DEFAULT_DURATION ")",
	  "-",
	  "--max-seconds",
	  "--benchmark-duration" },
	{ O_REQUESTS,
	  { "--requests", "--num-prompts", "--max-requests", "--request-count" },
	  "N",
	  "or: each stage sends this many requests",
	  "--num-prompts",
	  "--max-requests",
	  "--request-count" },
	{ O_DATASET,
	  { "--dataset", "--dataset-path", "--input-file" },
	  "FILE",
	  "prompts from a file: JSONL with messages (OpenAI), with conversations (ShareGPT), "
	  "or one prompt a line",
	  "--dataset-path",
	  "--data FILE",
	  "--input-file" },
	{ O_INPUT_TOKENS,
	  { "--input-tokens", "--random-input-len", "--synthetic-input-tokens-mean", "--isl" },
	  "N",
	  "synthetic prompts of N tokens, none sent twice (default " DEFAULT_INPUT_TOKENS ")",
	  "--random-input-len",
	  "--data prompt_tokens=N",
	  "--synthetic-input-tokens-mean" },
	{ O_OUTPUT_TOKENS,
	  { "--output-tokens", "--random-output-len", "--output-tokens-mean", "--osl" },
	  "N",
	  "answers of N tokens, asked for with ignore_eos (default " DEFAULT_OUTPUT_TOKENS
	  "); with --dataset every request's max_tokens",
	  "--random-output-len",
	  "--data output_tokens=N",
	  "--output-tokens-mean" },
	{ O_API,
	  { "--api", "--endpoint-type" },
	  "API",
	  "chat, completions, responses, messages, embeddings, rerank, score or transcription "
	  "(default chat; transcription uploads 5 s synthetic clips)",
	  "--endpoint/--backend",
	  "-",
	  "--endpoint-type" },
	{ O_SEED,
	  { "--seed", "--random-seed" },
	  "N",
	  "seed of the synthetic prompts and lengths (default 1)",
	  "--seed",
	  "--random-seed",
	  "--random-seed" },
	{ O_IGNORE_EOS,
	  { "--ignore-eos" },
	  NULL,
	  "send ignore_eos on every request",
	  "--ignore-eos",
	  "-",
	  "-" },
	{ O_NO_IGNORE_EOS,
	  { "--no-ignore-eos" },
	  NULL,
	  "never send ignore_eos (a server that refuses unknown fields)",
	  "-",
	  "-",
	  "-" },
	{ O_API_KEY_ENV,
	  { "--api-key-env" },
	  "VAR",
	  "the environment variable holding an API key, sent as a bearer token",
	  "OPENAI_API_KEY",
	  "--backend-kwargs",
	  "--api-key" },
	{ O_WARMUP,
	  { "--warmup", "--num-warmups", "--warmup-request-count" },
	  "N|DUR",
	  "requests (or a duration) sent first and left out of the results (default " DEFAULT_WARMUP
	  "; 0: none)",
	  "--num-warmups",
	  "--warmup",
	  "--warmup-request-count" },
	{ O_READY_TIMEOUT,
	  { "--ready-timeout", "--ready-check-timeout-sec" },
	  "DUR",
	  "how long the readiness gate waits for the model to answer before exit 3 (default "
	  "15m; 0: no gate, then --model is needed)",
	  "--ready-check-timeout-sec",
	  "-",
	  "-" },
	{ O_SLO,
	  { "--slo" },
	  "K=V[,K=V...]",
	  "limits every stage must meet, else exit 99: ttft_p99=2s,itl_p99=100ms,error_rate=1%,"
	  "min_output_tokens_per_s=500 (the keys of a scenario's slo)",
	  "--goodput",
	  "-",
	  "--goodput" },
	{ O_AGENTS,
	  { "--agents" },
	  "N|auto",
	  "agent processes on this machine (default 2)",
	  "-",
	  "-",
	  "-" },
	{ O_AGENTS_LISTEN,
	  { "--agents-listen" },
	  "ADDR",
	  "where agents on other hosts dial in (tls+tcp://0.0.0.0:7700); they run "
	  "chatload-agent --connect",
	  "-",
	  "-",
	  "-" },
	{ O_AGENTS_EXPECT,
	  { "--agents-expect" },
	  "N",
	  "with --agents-listen: the remote agents to wait for",
	  "-",
	  "-",
	  "-" },
	{ O_AGENTS_TOKEN_FILE,
	  { "--agents-token-file" },
	  "FILE",
	  "with --agents-listen: the shared agent token (its first line)",
	  "-",
	  "-",
	  "-" },
	{ O_AGENTS_TLS_CERT,
	  { "--agents-tls-cert" },
	  "FILE",
	  "with a tls+tcp:// --agents-listen: this host's certificate",
	  "-",
	  "-",
	  "-" },
	{ O_AGENTS_TLS_KEY, { "--agents-tls-key" }, "FILE", "... and its key", "-", "-", "-" },
	{ O_INSECURE,
	  { "--insecure" },
	  NULL,
	  "allow a plaintext tcp:// --agents-listen off loopback",
	  "-",
	  "-",
	  "-" },
	{ O_CLIENT_BOUND,
	  { "--client-bound" },
	  "fail|warn",
	  "a stage whose numbers the client set fails the run (default), or only warns",
	  "-",
	  "-",
	  "-" },
	{ O_NAME,
	  { "--name", "--label" },
	  "NAME",
	  "names the run and its results folder (default " DEFAULT_NAME ")",
	  "--label",
	  "-",
	  "-" },
	{ O_OUT,
	  { "--out", "--result-dir", "--output-dir", "--artifact-dir" },
	  "DIR",
	  "the results folder (default results/<name>-<UTC time>/)",
	  "--result-dir",
	  "--output-dir",
	  "--artifact-dir" },
	{ O_METRICS_LISTEN,
	  { "--metrics-listen" },
	  "HOST:PORT",
	  "serve live Prometheus metrics during the run (as chatload run)",
	  "-",
	  "-",
	  "-" },
	{ O_WEB,
	  { "--web" },
	  "HOST:PORT",
	  "serve the live report page during the run (as chatload run)",
	  "-",
	  "-",
	  "-" },
	{ O_HELP, { "--help", "-h" }, NULL, "show this help", "-", "-", "-" },
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))
_Static_assert(N_OPTS == O__COUNT, "one entry per flag, in the order of enum bench_opt");

const char *cli_bench_flag_name(const struct bench_flags *f, enum bench_opt id)
{
	return f->given[id] ? f->given[id] : opts[id].names[0];
}

/* Writes text in words from column HELP_INDENT to HELP_WIDTH, the first line after head. */
static void wrap(FILE *out, const char *head, const char *text)
{
	int col = fprintf(out, "%s", head);
	const char *p = text;
	while (*p) {
		size_t len = strcspn(p, " ");
		if (col > HELP_INDENT && col + 1 + (int)len > HELP_WIDTH) {
			fputc('\n', out);
			col = 0;
		}
		if (col < HELP_INDENT)
			col += fprintf(out, "%*s", HELP_INDENT - col, "");
		else
			col += fprintf(out, " ");
		col += fprintf(out, "%.*s", (int)len, p);
		p += len;
		p += strspn(p, " ");
	}
	fputc('\n', out);
}

static void usage(FILE *out)
{
	fputs("usage: chatload bench --url URL [--model NAME]\n"
	      "                      [--concurrency N,N... | --rate R,R... [--concurrency N]]\n"
	      "                      [--duration DUR | --requests N]\n"
	      "                      [--dataset FILE | --input-tokens N] [--output-tokens N]\n"
	      "                      [--slo K=V,...] [--warmup N] [--out DIR] [FLAG...]\n\n"
	      "Measures a server from flags alone, for the common job: one stage per level, each\n"
	      "with its streams (or its request rate) for a duration or a number of requests.\n"
	      "The flags become a scenario, written as scenario.yaml in the results folder (its\n"
	      "path is printed) and run exactly as 'chatload run scenario.yaml' runs it: the\n"
	      "readiness gate, the warmup, the stages, the same tables and files and exit codes.\n"
	      "Run it again, edit it or schedule it: chatload run DIR/scenario.yaml.\n\n"
	      "  chatload bench --url http://127.0.0.1:8000/v1 --concurrency 1,8,16,32,64 "
	      "--duration 30s\n\n"
	      "flags (aliases after the first name; then vLLM's, GuideLLM's, AIPerf's name for "
	      "it):\n",
	      out);
	for (size_t i = 0; i < N_OPTS; i++) {
		const struct opt *o = &opts[i];
		char head[160], text[600];
		int w = snprintf(head, sizeof(head), "  %s%s%s", o->names[0], o->arg ? " " : "",
				 o->arg ? o->arg : "");
		if (w > HELP_INDENT - 2) {
			fprintf(out, "%s\n", head);
			head[0] = '\0';
		}
		wrap(out, head, o->help);
		size_t at = 0;
		text[0] = '\0';
		for (size_t k = 1; k < 4 && o->names[k]; k++)
			at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%s",
					       k > 1 ? ", " : "also ", o->names[k]);
		if (text[0])
			wrap(out, "", text);
		if (strcmp(o->vllm, "-") || strcmp(o->guidellm, "-") || strcmp(o->aiperf, "-")) {
			snprintf(text, sizeof(text), "vLLM %s | GuideLLM %s | AIPerf %s", o->vllm,
				 o->guidellm, o->aiperf);
			wrap(out, "", text);
		}
	}
	fputs("\nexit codes: 0 ok, 1 run failed or interrupted, 2 bad flags, 3 target not ready,\n"
	      "            99 an SLO breached\n"
	      "docs/bench.md has each flag's scenario key and the differences from those tools.\n",
	      out);
}

/* ---- reading the flags -------------------------------------------------------------------- */

static const struct opt *find_opt(const char *a, size_t len)
{
	for (size_t i = 0; i < N_OPTS; i++) {
		for (size_t k = 0; k < 4 && opts[i].names[k]; k++) {
			if (strlen(opts[i].names[k]) == len &&
			    strncmp(a, opts[i].names[k], len) == 0)
				return &opts[i];
		}
	}
	return NULL;
}

/* Reads argv into f: 0, 1 for --help (shown), or -1 (said why). */
static int read_flags(int argc, char **argv, struct bench_flags *f)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *eq = strchr(a, '=');
		size_t len = a[0] == '-' && a[1] == '-' && eq ? (size_t)(eq - a) : strlen(a);
		const struct opt *o = a[0] == '-' ? find_opt(a, len) : NULL;
		if (!o) {
			if (a[0] == '-')
				fprintf(stderr, "chatload bench: unknown flag '%.*s'\n", (int)len,
					a);
			else
				fprintf(
				    stderr,
				    "chatload bench: unexpected argument '%s' (every setting is a "
				    "flag; a scenario file is run with chatload run)\n",
				    a);
			fprintf(stderr, "'chatload bench --help' lists the flags\n");
			return -1;
		}
		if (o->id == O_HELP) {
			usage(stdout);
			return 1;
		}
		const char *v = NULL;
		if (o->arg) {
			if (len < strlen(a)) {
				v = a + len + 1;
			} else if (i + 1 < argc) {
				v = argv[++i];
			} else {
				fprintf(stderr, "chatload bench: %s needs a value (%s)\n", a,
					o->arg);
				return -1;
			}
		} else if (len < strlen(a)) {
			fprintf(stderr, "chatload bench: %.*s takes no value\n", (int)len, a);
			return -1;
		}
		if (f->given[o->id]) {
			fprintf(stderr, "chatload bench: %.*s given twice (as %s before)%s\n",
				(int)len, a, f->given[o->id],
				o->arg && strchr(o->arg, ',') ? "; give a list: a,b,c" : "");
			return -1;
		}
		if (v && (!v[0] || strlen(v) > CLI_BENCH_MAX_VALUE)) {
			fprintf(stderr,
				"chatload bench: %.*s needs a value of 1 to %d characters\n",
				(int)len, a, CLI_BENCH_MAX_VALUE);
			return -1;
		}
		for (const char *p = v; p && *p; p++) {
			if ((unsigned char)*p < 0x20 || *p == 0x7f) {
				fprintf(stderr, "chatload bench: %.*s has a control character\n",
					(int)len, a);
				return -1;
			}
		}
		/* the name as typed, without "=value", for messages */
		f->given[o->id] = o->names[0];
		for (size_t k = 0; k < 4 && o->names[k]; k++) {
			if (strlen(o->names[k]) == len && strncmp(a, o->names[k], len) == 0)
				f->given[o->id] = o->names[k];
		}
		f->val[o->id] = v ? v : "true";
	}
	return 0;
}

/* Flags that exclude or need each other. */
static int check_combinations(const struct bench_flags *f)
{
	static const struct {
		enum bench_opt a, b;
	} exclusive[] = {
		{ O_DURATION, O_REQUESTS },
		{ O_DATASET, O_INPUT_TOKENS },
		{ O_IGNORE_EOS, O_NO_IGNORE_EOS },
		{ O_AGENTS, O_AGENTS_LISTEN },
	};
	for (size_t i = 0; i < sizeof(exclusive) / sizeof(exclusive[0]); i++) {
		if (f->given[exclusive[i].a] && f->given[exclusive[i].b]) {
			fprintf(stderr, "chatload bench: %s and %s: give one or the other\n",
				f->given[exclusive[i].a], f->given[exclusive[i].b]);
			return -1;
		}
	}
	static const struct {
		enum bench_opt flag, needs;
	} needs[] = {
		{ O_BURSTINESS, O_RATE },
		{ O_AGENTS_EXPECT, O_AGENTS_LISTEN },
		{ O_AGENTS_TOKEN_FILE, O_AGENTS_LISTEN },
		{ O_AGENTS_TLS_CERT, O_AGENTS_LISTEN },
		{ O_AGENTS_TLS_KEY, O_AGENTS_LISTEN },
		{ O_AGENTS_LISTEN, O_AGENTS_EXPECT },
	};
	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		if (f->given[needs[i].flag] && !f->given[needs[i].needs]) {
			fprintf(stderr, "chatload bench: %s needs %s\n", f->given[needs[i].flag],
				opts[needs[i].needs].names[0]);
			return -1;
		}
	}
	if (!f->val[O_URL]) {
		fprintf(stderr, "chatload bench: --url is required (the server's base URL, e.g. "
				"http://127.0.0.1:8000/v1)\n");
		return -1;
	}
	const char *ag = f->val[O_AGENTS];
	if (ag && strcmp(ag, "auto") != 0 && strspn(ag, "0123456789") != strlen(ag)) {
		/* Agents dial the coordinator (docs/protocol.md), never the other way round, so
		 * a list of agents' addresses cannot be used: say what can. */
		fprintf(stderr,
			"chatload bench: %s '%s': expected a number of agents on this machine or "
			"'auto'; agents on other hosts dial in to this one: --agents-listen ADDR "
			"--agents-expect N here, and chatload-agent --connect ADDR on each host\n",
			f->given[O_AGENTS], ag);
		return -1;
	}
	return 0;
}

/* Writes the text as DIR/scenario.yaml: its path (malloc'd), or NULL (said). */
static char *write_scenario(const char *dir, const struct bench_text *t)
{
	size_t n = strlen(dir) + sizeof(SCENARIO_FILE) + 2;
	char *path = malloc(n);
	if (!path) {
		fprintf(stderr, "chatload bench: out of memory\n");
		return NULL;
	}
	snprintf(path, n, "%s/%s", dir, SCENARIO_FILE);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FILE *fp = fd < 0 ? NULL : fdopen(fd, "w");
	if (fp && fwrite(t->b.data, 1, t->b.len, fp) == t->b.len && fclose(fp) == 0)
		return path;
	fprintf(stderr, "chatload bench: cannot write '%s': %s\n", path, strerror(errno));
	if (fp)
		fclose(fp);
	else if (fd >= 0)
		close(fd);
	free(path);
	return NULL;
}

int cl_cmd_bench(int argc, char **argv)
{
	for (size_t i = 0; i < N_OPTS; i++)
		CL_ASSERT(opts[i].id == (enum bench_opt)i); /* opts[id] is the flag's entry */
	struct bench_flags f = { 0 };
	int r = read_flags(argc, argv, &f);
	if (r != 0)
		return r > 0 ? CL_EXIT_OK : CL_EXIT_USAGE;
	if (check_combinations(&f) != 0)
		return CL_EXIT_USAGE;
	struct bench_text t = { .tag = { -1 } };
	cl_buf_init(&t.b, CL_SCENARIO_MAX_BYTES);
	int code = CL_EXIT_USAGE;
	char *dir = NULL, *path = NULL;
	if (cli_bench_build(&t, &f, argc, argv) != 0 || cli_bench_check(&t, &f) != 0)
		goto out;
	struct cl_err err = { 0 };
	if (cl_results_make_dir(f.val[O_OUT], NULL, f.val[O_NAME] ? f.val[O_NAME] : DEFAULT_NAME,
				cl_wall_us(), &dir, &err) != 0) {
		char msg[900];
		fprintf(stderr, "chatload bench: cannot create the results folder: %s\n",
			cl_err_format(&err, msg, sizeof(msg)));
		code = CL_EXIT_FAILED;
		goto out;
	}
	if (!(path = write_scenario(dir, &t))) {
		code = CL_EXIT_FAILED;
		goto out;
	}
	fprintf(stderr,
		"chatload bench: scenario written to %s\n"
		"  (run it again: chatload run %s)\n",
		path, path);
	struct cl_run_opts o = {
		.scenario_path = path,
		.out_dir = dir,
		.argc = argc,
		.argv = argv,
		.insecure = f.val[O_INSECURE] != NULL,
		.metrics_listen = f.val[O_METRICS_LISTEN],
		.web_listen = f.val[O_WEB],
	};
	code = cli_cmd_run_opts(&o);
out:
	free(path);
	free(dir);
	cl_buf_free(&t.b);
	return code;
}
