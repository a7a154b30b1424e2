/* chatload bench: a run from flags alone. The flags become a scenario's YAML text, checked by
 * the scenario loader (a problem is reported against the flag that wrote its line), written as
 * scenario.yaml in the results folder, then run by exactly what `chatload run FILE` runs. */
#include "coordinator/cmd/commands.h"
#include "coordinator/cmd/run_int.h"
#include "coordinator/cmd/yaml_text_int.h"
#include "coordinator/results/results.h"
#include "coordinator/run/run.h"
#include "coordinator/scenario/scenario.h"

#include "chatload/assert.h"
#include "chatload/buf.h"
#include "chatload/clock.h"
#include "chatload/err.h"
#include "chatload/exitcode.h"
#include "chatload/plan.h"
#include "chatload/units.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCENARIO_FILE "scenario.yaml"
#define MAX_LINES     256  /* lines of the scenario text; it writes about 40 */
#define MAX_LEVELS    64   /* values in --concurrency or --rate */
#define MAX_VALUE     2048 /* characters of one flag's value */
#define LINE_BYTES    4400 /* one formatted line: a value, its key, a note */
#define HELP_INDENT   24   /* --help: where a flag's description starts */
#define HELP_WIDTH    92   /* --help: the widest line */

#define DEFAULT_CONCURRENCY   "1,8,16,32,64"
#define DEFAULT_DURATION      "30s"
#define DEFAULT_INPUT_TOKENS  "1024"
#define DEFAULT_OUTPUT_TOKENS "128"
#define DEFAULT_WARMUP        "8"
#define DEFAULT_NAME          "bench"

enum opt_id {
	O_URL,
	O_MODEL,
	O_CONCURRENCY,
	O_RATE,
	O_BURSTINESS,
	O_DURATION,
	O_REQUESTS,
	O_DATASET,
	O_INPUT_TOKENS,
	O_OUTPUT_TOKENS,
	O_API,
	O_SEED,
	O_IGNORE_EOS,
	O_NO_IGNORE_EOS,
	O_API_KEY_ENV,
	O_WARMUP,
	O_READY_TIMEOUT,
	O_SLO,
	O_AGENTS,
	O_AGENTS_LISTEN,
	O_AGENTS_EXPECT,
	O_AGENTS_TOKEN_FILE,
	O_AGENTS_TLS_CERT,
	O_AGENTS_TLS_KEY,
	O_INSECURE,
	O_CLIENT_BOUND,
	O_NAME,
	O_OUT,
	O_METRICS_LISTEN,
	O_WEB,
	O_HELP,
	O__COUNT
};

/* One flag: its names (the first is chatload's, the others aliases a user of another tool
 * types), its value's placeholder (NULL: takes none), what it does, and what the same thing is
 * called in vLLM's `vllm bench serve`, GuideLLM's `guidellm benchmark` and AIPerf's
 * `aiperf profile` (for --help; "-" where the tool has none). */
struct opt {
	enum opt_id id;
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
	  "chat, completions, responses or embeddings (default chat)",
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
_Static_assert(N_OPTS == O__COUNT, "one entry per flag, in the order of enum opt_id");

/* What the command line said: each flag's value and the name it was given by. */
struct flags {
	const char *val[O__COUNT];
	const char *given[O__COUNT]; /* the spelling typed, for messages; NULL: not given */
};

/* The scenario text as it is built, with the flag behind each line (-1: none) so that a
 * loader's complaint about a line can name the flag. */
struct text {
	struct cl_buf b;
	int tag[MAX_LINES + 1];
	size_t lines;
	int rc;
};

static const char *flag_name(const struct flags *f, enum opt_id id)
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
static int read_flags(int argc, char **argv, struct flags *f)
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
		if (v && (!v[0] || strlen(v) > MAX_VALUE)) {
			fprintf(stderr,
				"chatload bench: %.*s needs a value of 1 to %d characters\n",
				(int)len, a, MAX_VALUE);
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

/* ---- checking values the loader cannot name the flag of ----------------------------------- */

static int bad(const struct flags *f, enum opt_id id, const char *why)
{
	fprintf(stderr, "chatload bench: %s '%s': %s\n", flag_name(f, id), f->val[id], why);
	return -1;
}

/* A comma-separated list of levels, each a count (1..CL_PLAN_CONCURRENCY_MAX) or a rate
 * (a bare number per second), written as YAML into out ("4" or "[1, 8, 16]"). */
static int levels(const struct flags *f, enum opt_id id, bool rate, char *out, size_t n)
{
	const char *p = f->val[id];
	size_t at = 0, count = 0;
	char item[64];
	out[0] = '\0';
	while (*p) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof(item) - 3)
			return bad(f, id,
				   rate ? "expected rates such as 2,4,8 or 2/s,120/m"
					: "expected counts such as 1,8,16");
		memcpy(item, p, len);
		item[len] = '\0';
		if (++count > MAX_LEVELS)
			return bad(f, id, "more than 64 values");
		char msg[sizeof(((struct cl_err *)0)->msg) + 160];
		if (rate) {
			if (!strchr(item, '/'))
				strcat(item, "/s");
			double per_s;
			struct cl_err err = { 0 };
			if (cl_parse_rate(item, &per_s, &err) != 0) {
				snprintf(msg, sizeof(msg), "'%.*s' is not a rate (%s)", (int)len, p,
					 err.msg);
				return bad(f, id, msg);
			}
		} else {
			uint64_t c;
			if (cl_parse_u64(item, CL_PLAN_CONCURRENCY_MAX, &c) != 0 || c == 0) {
				snprintf(msg, sizeof(msg),
					 "'%s' is not a count of streams from 1 to %u", item,
					 CL_PLAN_CONCURRENCY_MAX);
				return bad(f, id, msg);
			}
		}
		at += (size_t)snprintf(out + at, n - at, "%s%s", count > 1 ? ", " : "", item);
		p += len;
		if (*p == ',' && !*++p)
			return bad(f, id, "a list ends with a comma");
	}
	if (count > 1) {
		char tmp[LINE_BYTES];
		snprintf(tmp, sizeof(tmp), "[%s]", out);
		snprintf(out, n, "%s", tmp);
	}
	return (int)count;
}

/* A duration for a scenario: "30s" as written, a bare number of seconds given a unit. */
static int duration(const struct flags *f, enum opt_id id, char *out, size_t n)
{
	const char *v = f->val[id];
	double secs;
	if (cl_parse_double(v, &secs) == 0)
		snprintf(out, n, "%ss", v);
	else
		snprintf(out, n, "%s", v);
	int64_t us;
	struct cl_err err = { 0 };
	if (cl_parse_duration_us(out, &us, &err) != 0 || us <= 0) {
		char msg[600];
		snprintf(msg, sizeof(msg), "not a duration such as 30s, 2m or 90 (seconds)%s%s",
			 err.msg[0] ? ": " : "", err.msg);
		return bad(f, id, msg);
	}
	return 0;
}

/* A count from 1 (0 when zero_ok) to max. */
static int count(const struct flags *f, enum opt_id id, uint64_t max, bool zero_ok, uint64_t *out)
{
	if (cl_parse_u64(f->val[id], max, out) != 0 || (*out == 0 && !zero_ok)) {
		char msg[80];
		snprintf(msg, sizeof(msg), "expected a whole number from %d to %llu",
			 zero_ok ? 0 : 1, (unsigned long long)max);
		return bad(f, id, msg);
	}
	return 0;
}

/* Flags that exclude or need each other. */
static int check_combinations(const struct flags *f)
{
	static const struct {
		enum opt_id a, b;
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
		enum opt_id flag, needs;
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

/* ---- writing the scenario ----------------------------------------------------------------- */

/* Appends one line (two when its note goes above it), remembering the flag behind it. */
static void emit(struct text *t, int tag, const char *yaml, const char *note)
{
	char line[LINE_BYTES + 200];
	cli_yaml_line(line, sizeof(line), yaml, note);
	for (const char *p = line; *p; p++) {
		if (*p == '\n' && t->lines < MAX_LINES)
			t->tag[++t->lines] = tag;
	}
	if (t->rc == 0)
		t->rc = cl_buf_puts(&t->b, line);
}

/* "  key: value" with the value quoted when YAML needs it. */
static void emit_kv(struct text *t, int tag, const char *key, const char *value, const char *note)
{
	char kv[LINE_BYTES];
	emit(t, tag, cli_yaml_key_value(key, value, kv, sizeof(kv)), note);
}

/* "# chatload bench --url ...": the command line, each argument printable as typed. */
static void emit_command(struct text *t, int argc, char **argv)
{
	char line[LINE_BYTES];
	size_t at = (size_t)snprintf(line, sizeof(line), "#   chatload");
	for (int i = 0; i < argc && at + 8 < sizeof(line); i++) {
		bool plain = argv[i][0] &&
			     strspn(argv[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
					     "OPQRSTUVWXYZ0123456789-_.,/:=%@+") == strlen(argv[i]);
		at += (size_t)snprintf(line + at, sizeof(line) - at, plain ? " %s" : " '%s'",
				       argv[i]);
	}
	emit(t, -1, line, NULL);
}

/* The workload section: a dataset or synthetic lengths, the API, the seed, ignore_eos. */
static int emit_workload(struct text *t, const struct flags *f)
{
	uint64_t n;
	emit(t, -1, "workload:", NULL);
	if (f->val[O_API])
		emit_kv(t, O_API, "  api: ", f->val[O_API], "the API every request uses");
	bool embeddings = f->val[O_API] && strcmp(f->val[O_API], "embeddings") == 0;
	if (f->val[O_DATASET]) {
		char path[PATH_MAX];
		if (!realpath(f->val[O_DATASET], path))
			return bad(f, O_DATASET, strerror(errno));
		emit_kv(t, O_DATASET, "  dataset: ", path, "prompts from this file");
		if (f->val[O_OUTPUT_TOKENS]) {
			if (count(f, O_OUTPUT_TOKENS, 10000000, false, &n) != 0)
				return -1;
			emit_kv(t, O_OUTPUT_TOKENS, "  max_tokens: ", f->val[O_OUTPUT_TOKENS],
				"every answer's length");
			emit(t, O_OUTPUT_TOKENS, "  dataset_output_tokens: max_tokens",
			     "rather than each record's own");
		}
	} else {
		const char *in =
		    f->val[O_INPUT_TOKENS] ? f->val[O_INPUT_TOKENS] : DEFAULT_INPUT_TOKENS;
		emit(t, -1, "  synthetic:", "generated prompts; none is sent twice in a run");
		if (f->val[O_INPUT_TOKENS] && count(f, O_INPUT_TOKENS, 10000000, false, &n) != 0)
			return -1;
		emit_kv(t, O_INPUT_TOKENS, "    input_tokens: ", in, "each prompt's length");
		if (!embeddings || f->val[O_OUTPUT_TOKENS]) {
			const char *out = f->val[O_OUTPUT_TOKENS] ? f->val[O_OUTPUT_TOKENS]
								  : DEFAULT_OUTPUT_TOKENS;
			if (f->val[O_OUTPUT_TOKENS] &&
			    count(f, O_OUTPUT_TOKENS, 10000000, false, &n) != 0)
				return -1;
			emit_kv(t, O_OUTPUT_TOKENS, "    output_tokens: ", out,
				"each answer's length (sent with ignore_eos)");
		}
	}
	if (f->val[O_SEED])
		emit_kv(t, O_SEED, "  seed: ", f->val[O_SEED], "seed of prompts and lengths");
	if (f->val[O_IGNORE_EOS])
		emit(t, O_IGNORE_EOS, "  ignore_eos: true", "on every request");
	if (f->val[O_NO_IGNORE_EOS])
		emit(t, O_NO_IGNORE_EOS, "  ignore_eos: false", "on no request");
	return 0;
}

/* The stages: one entry, a sweep over the levels. */
static int emit_stages(struct text *t, const struct flags *f)
{
	char list[LINE_BYTES], line[LINE_BYTES + 64];
	emit(t, -1, "stages:", "one stage per level, each named for it (c8, r2, ...)");
	if (f->val[O_RATE]) {
		if (levels(f, O_RATE, true, list, sizeof(list)) < 0)
			return -1;
		snprintf(line, sizeof(line), "  - rate: %s", list);
		emit(t, O_RATE, line, "requests started per second, whatever the server does");
		if (f->val[O_CONCURRENCY]) {
			int k = levels(f, O_CONCURRENCY, false, list, sizeof(list));
			if (k < 0)
				return -1;
			if (k > 1)
				return bad(f, O_CONCURRENCY,
					   "with --rate, one value: the cap on requests in flight");
			snprintf(line, sizeof(line), "    max_concurrency: %s", list);
			emit(t, O_CONCURRENCY, line, "never more in flight than this");
		}
		if (f->val[O_BURSTINESS])
			emit_kv(t, O_BURSTINESS, "    burstiness: ", f->val[O_BURSTINESS],
				"gamma arrivals of this shape");
	} else {
		if (!f->val[O_CONCURRENCY])
			snprintf(list, sizeof(list), "[1, 8, 16, 32, 64]");
		else if (levels(f, O_CONCURRENCY, false, list, sizeof(list)) < 0)
			return -1;
		snprintf(line, sizeof(line), "  - concurrency: %s", list);
		emit(t, O_CONCURRENCY, line, "streams in flight, each starting the next request");
	}
	if (f->val[O_REQUESTS]) {
		uint64_t r;
		if (count(f, O_REQUESTS, UINT32_MAX, false, &r) != 0)
			return -1;
		emit_kv(t, O_REQUESTS, "    requests: ", f->val[O_REQUESTS],
			"each stage's requests");
	} else {
		char d[MAX_VALUE + 8] = DEFAULT_DURATION;
		if (f->val[O_DURATION] && duration(f, O_DURATION, d, sizeof(d)) != 0)
			return -1;
		emit_kv(t, O_DURATION, "    duration: ", d, "each stage's measured window");
	}
	return 0;
}

/* The warmup: N requests at up to 4 streams (enough to open connections and wake the
 * server, without the wait of N requests one at a time), a duration at 4, or none. */
static int emit_warmup(struct text *t, const struct flags *f)
{
	const char *w = f->val[O_WARMUP] ? f->val[O_WARMUP] : DEFAULT_WARMUP;
	uint64_t n = 0, conc = 4;
	char line[LINE_BYTES];
	if (strspn(w, "0123456789") == strlen(w)) {
		if (f->val[O_WARMUP] && count(f, O_WARMUP, UINT32_MAX, true, &n) != 0)
			return -1;
		n = strtoull(w, NULL, 10);
		if (n == 0) {
			emit(t, O_WARMUP, "# warmup: none", NULL);
			return 0;
		}
		emit(t, -1, "warmup:", "sent first, left out of the results");
		snprintf(line, sizeof(line), "  requests: %s", w);
		emit(t, O_WARMUP, line, NULL);
		conc = conc < n ? conc : n;
	} else {
		char d[MAX_VALUE + 8];
		if (duration(f, O_WARMUP, d, sizeof(d)) != 0)
			return -1;
		emit(t, -1, "warmup:", "sent first, left out of the results");
		emit_kv(t, O_WARMUP, "  duration: ", d, NULL);
	}
	snprintf(line, sizeof(line), "  concurrency: %llu", (unsigned long long)conc);
	emit(t, O_WARMUP, line, NULL);
	return 0;
}

/* --slo k=v,k=v: one line each, so that the loader's verdict on a key names it. */
static int emit_slo(struct text *t, const struct flags *f)
{
	const char *p = f->val[O_SLO];
	if (!p)
		return 0;
	emit(t, -1, "slo:", "limits for every stage; a breach: exit 99");
	while (*p) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		char key[128], val[128], line[300];
		if (!eq || eq == p || eq + 1 == p + len || (size_t)(eq - p) >= sizeof(key) ||
		    (size_t)(p + len - eq) > sizeof(val))
			return bad(f, O_SLO,
				   "expected KEY=LIMIT pairs such as ttft_p99=2s,error_rate=1%");
		snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
		snprintf(val, sizeof(val), "%.*s", (int)(p + len - eq - 1), eq + 1);
		if (strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(key) ||
		    strspn(val,
			   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.%") !=
			strlen(val)) {
			char msg[400];
			snprintf(msg, sizeof(msg),
				 "'%.*s' is not KEY=LIMIT (a key such as ttft_p99, a "
				 "limit such as 2s, 1%% or 500)",
				 (int)len, p);
			return bad(f, O_SLO, msg);
		}
		snprintf(line, sizeof(line), "  %s: %s", key, val);
		emit(t, O_SLO, line, NULL);
		p += len;
		if (*p == ',' && !*++p)
			return bad(f, O_SLO, "a list ends with a comma");
	}
	return 0;
}

static void emit_agents(struct text *t, const struct flags *f)
{
	if (f->val[O_AGENTS]) {
		emit(t, -1, "agents:", NULL);
		emit_kv(t, O_AGENTS, "  local: ", f->val[O_AGENTS],
			"agent processes on this machine sending the load");
		return;
	}
	if (!f->val[O_AGENTS_LISTEN]) {
		emit(t, -1, "# agents: { local: 2 }", "the default: two agent processes here");
		return;
	}
	emit(t, -1, "agents:", NULL);
	emit_kv(t, O_AGENTS_LISTEN, "  listen: ", f->val[O_AGENTS_LISTEN], "where agents dial in");
	emit_kv(t, O_AGENTS_EXPECT, "  expect: ", f->val[O_AGENTS_EXPECT],
		"the agents to wait for");
	if (f->val[O_AGENTS_TOKEN_FILE])
		emit_kv(t, O_AGENTS_TOKEN_FILE, "  token_file: ", f->val[O_AGENTS_TOKEN_FILE],
			"the shared token");
	if (f->val[O_AGENTS_TLS_CERT] || f->val[O_AGENTS_TLS_KEY]) {
		emit(t, -1, "  tls:", NULL);
		if (f->val[O_AGENTS_TLS_CERT])
			emit_kv(t, O_AGENTS_TLS_CERT, "    cert: ", f->val[O_AGENTS_TLS_CERT],
				NULL);
		if (f->val[O_AGENTS_TLS_KEY])
			emit_kv(t, O_AGENTS_TLS_KEY, "    key: ", f->val[O_AGENTS_TLS_KEY], NULL);
	}
}

/* The readiness gate's timeout, or no gate (vLLM's --ready-check-timeout-sec 0). */
static int emit_readiness(struct text *t, const struct flags *f)
{
	const char *v = f->val[O_READY_TIMEOUT];
	if (!v)
		return 0;
	if (strspn(v, "0.") == strlen(v) || strcmp(v, "0s") == 0) {
		/* The gate is what finds the model when none is named. */
		if (!f->val[O_MODEL])
			return bad(f, O_READY_TIMEOUT,
				   "no readiness gate needs --model (the gate is what asks "
				   "/v1/models for it)");
		emit(t, O_READY_TIMEOUT, "readiness: false", "no gate: the load starts at once");
		return 0;
	}
	char d[MAX_VALUE + 8];
	if (duration(f, O_READY_TIMEOUT, d, sizeof(d)) != 0)
		return -1;
	emit(t, -1, "readiness:", "the gate before any load: the model answers, twice");
	emit_kv(t, O_READY_TIMEOUT, "  timeout: ", d, "given up after this long (exit 3)");
	return 0;
}

/* The whole scenario into t: 0, or -1 when a flag's value is wrong (said). */
static int build(struct text *t, const struct flags *f, int argc, char **argv)
{
	emit(t, -1, "# Written by chatload bench from its flags:", NULL);
	emit_command(t, argc, argv);
	emit(t, -1, "# Run it again (or edit it first: every key is in docs/scenario.md) with",
	     NULL);
	emit(t, -1, "#   chatload run THIS-FILE", NULL);
	emit(t, -1, "", NULL);
	emit_kv(t, O_NAME, "name: ", f->val[O_NAME] ? f->val[O_NAME] : DEFAULT_NAME,
		"names the run and its results folder");
	emit(t, -1, "target:", NULL);
	emit_kv(t, O_URL, "  url: ", f->val[O_URL], "the server's OpenAI-compatible base URL");
	if (f->val[O_MODEL])
		emit_kv(t, O_MODEL, "  model: ", f->val[O_MODEL],
			"the model named in every request");
	else
		emit(t, -1, "  # model: left out", "the readiness gate takes the first one listed");
	if (f->val[O_API_KEY_ENV])
		emit_kv(t, O_API_KEY_ENV, "  api_key_env: ", f->val[O_API_KEY_ENV],
			"the variable holding the API key");
	emit_agents(t, f);
	if (emit_readiness(t, f) != 0)
		return -1;
	if (emit_warmup(t, f) != 0 || emit_workload(t, f) != 0 || emit_stages(t, f) != 0 ||
	    emit_slo(t, f) != 0)
		return -1;
	if (f->val[O_CLIENT_BOUND])
		emit_kv(t, O_CLIENT_BOUND, "client_bound: ", f->val[O_CLIENT_BOUND],
			"a client-bound stage: fail the run, or warn");
	if (t->rc != 0 || t->lines >= MAX_LINES) {
		fprintf(stderr, "chatload bench: cannot build the scenario: %s\n",
			t->rc ? cl_strerror(t->rc) : "too long");
		return -1;
	}
	return 0;
}

/* Loads the text as chatload run will: every problem printed against the flag behind its
 * line. 0, or -1 (said). */
static int check(const struct text *t, const struct flags *f)
{
	struct cl_scenario s = { 0 };
	struct cl_diags diags = { 0 };
	int rc = cl_scenario_load_string(t->b.data, t->b.len, "chatload bench", NULL, &s, &diags);
	for (size_t i = 0; i < diags.n; i++) {
		const struct cl_err *e = &diags.items[i];
		int tag = e->line > 0 && (size_t)e->line <= t->lines ? t->tag[e->line] : -1;
		if (tag >= 0)
			fprintf(stderr, "chatload bench: %s '%s': %s\n", flag_name(f, tag),
				f->val[tag], e->msg);
		else
			fprintf(stderr,
				"chatload bench: the scenario built from the flags, line %d: "
				"%s\n",
				e->line, e->msg);
	}
	if (rc != 0 && diags.n == 0)
		fprintf(stderr, "chatload bench: the scenario built from the flags: %s\n",
			cl_strerror(rc));
	cl_diags_free(&diags);
	cl_scenario_free(&s);
	return rc == 0 ? 0 : -1;
}

/* Writes the text as DIR/scenario.yaml: its path (malloc'd), or NULL (said). */
static char *write_scenario(const char *dir, const struct text *t)
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
		CL_ASSERT(opts[i].id == (enum opt_id)i); /* opts[id] is the flag's entry */
	struct flags f = { 0 };
	int r = read_flags(argc, argv, &f);
	if (r != 0)
		return r > 0 ? CL_EXIT_OK : CL_EXIT_USAGE;
	if (check_combinations(&f) != 0)
		return CL_EXIT_USAGE;
	struct text t = { .tag = { -1 } };
	cl_buf_init(&t.b, CL_SCENARIO_MAX_BYTES);
	int code = CL_EXIT_USAGE;
	char *dir = NULL, *path = NULL;
	if (build(&t, &f, argc, argv) != 0 || check(&t, &f) != 0)
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
