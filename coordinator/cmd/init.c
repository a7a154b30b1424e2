/* chatload init: writes a commented scenario to start from, for one of five jobs (a concurrency
 * sweep, a soak, a capacity search, a generate job, agents on several hosts), with the keys a
 * user must change marked "# CHANGE:". */
#include "coordinator/cmd/commands.h"
#include "coordinator/cmd/yaml_text_int.h"

#include "chatload/exitcode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_URL "http://127.0.0.1:8000/v1"

/* One line of a template: YAML (or a whole-line comment) and the comment that follows it.
 * A note starting "CHANGE:" marks a value the user must make their own. */
struct tline {
	const char *text;
	const char *note;
};

/* The target section goes where a template has this line: it is written from --url and
 * --model (target_block), not kept as text. */
static const char target_marker[] = "target:";

/* How to go on, the same for every kind, after each kind's own first lines. */
static const char *const howto[] = {
	"# Change the lines marked \"# CHANGE:\", then check the plan (every default shown) and "
	"run it:",
	"#   chatload validate FILE && chatload run FILE",
	"# Every key is in docs/scenario.md.",
	"",
	NULL,
};

static const char *const sweep_head[] = {
	"# How do throughput, time to first token and inter-token latency change from 1 to 64 "
	"streams",
	"# in flight, and where is the knee? A concurrency sweep against your server.",
	NULL,
};

static const struct tline sweep_lines[] = {
	{ "name: sweep", "names the run and its results folder" },
	{ "", NULL },
	{ target_marker, NULL },
	{ "", NULL },
	{ "agents: { local: 2 }", "agent processes on this machine sending the load" },
	{ "", NULL },
	{ "readiness:", "the gate before any load: the model answers, twice in a row" },
	{ "  timeout: 15m", "a large model can take this long to load (exit 3 after)" },
	{ "  request_timeout: 5m", "each probe request" },
	{ "", NULL },
	{ "warmup: { requests: 8, concurrency: 4 }", "sent first, left out of the results" },
	{ "", NULL },
	{ "workload:", NULL },
	{ "  synthetic:", "generated prompts; none is sent twice in a run" },
	{ "    input_tokens: { mean: 1000, stddev: 200, min: 200, max: 2000 }",
	  "CHANGE: your prompts' lengths" },
	{ "    output_tokens: { mean: 256, stddev: 64, min: 32, max: 512 }",
	  "CHANGE: answers' lengths" },
	{ "  # dataset: prompts.jsonl", "or your own prompts (JSONL) in place of synthetic" },
	{ "  # ignore_eos: false", "for a server that refuses the field (OpenAI's own)" },
	{ "  request_timeout: 10m", "each request" },
	{ "  drain_timeout: 1m", "requests running at a stage's end may finish this long" },
	{ "", NULL },
	{ "stages:", "each level a stage (c1 ... c64): its streams for 2 minutes" },
	{ "  - { concurrency: [1, 2, 4, 8, 16, 32, 64], duration: 2m, ramp: 10s }", NULL },
	{ "", NULL },
	{ "slo:", "CHANGE: your limits; a breach makes the run exit 99" },
	{ "  ttft_p99: 2s", "99th percentile of time to first token" },
	{ "  itl_p99: 100ms", "99th percentile of the time between tokens" },
	{ "  error_rate: 1%", "failed requests among all" },
	{ "", NULL },
	{ "estimate: { samples: [100000, 500000] }",
	  "how long batch jobs of this many requests take" },
	{ "output: { formats: [json, csv, md, html] }", "written to results/<name>-<UTC time>/" },
	{ NULL, NULL },
};

static const char *const soak_head[] = {
	"# Does the server hold a steady load through the night: does latency drift, do errors "
	"creep in,",
	"# does throughput sag? A soak at one load, judged on SLOs and on drift between its "
	"first "
	"and",
	"# last half hour. deploy/nightly.sh runs it each night; chatload history judges the "
	"nights.",
	NULL,
};

static const struct tline soak_lines[] = {
	{ "name: soak", "names the run and its results folder" },
	{ "", NULL },
	{ target_marker, NULL },
	{ "", NULL },
	{ "agents:", NULL },
	{ "  local: 2", "agent processes on this machine sending the load" },
	{ "  on_loss: fail", "a lost agent fails the run (results so far are kept)" },
	{ "  report_interval: 5s", "fewer, larger reports over a long run" },
	{ "", NULL },
	{ "readiness: { timeout: 15m }", "wait this long for the model to load (exit 3 after)" },
	{ "warmup: { requests: 32, concurrency: 8 }", "sent first, left out of the results" },
	{ "", NULL },
	{ "workload:", NULL },
	{ "  synthetic:", "generated prompts; none is sent twice in a run" },
	{ "    input_tokens: { mean: 1000, stddev: 200, min: 200, max: 2000 }",
	  "CHANGE: your prompts' lengths" },
	{ "    output_tokens: { mean: 256, stddev: 64, min: 32, max: 512 }",
	  "CHANGE: answers' lengths" },
	{ "  request_timeout: 5m", "each request" },
	{ "  drain_timeout: 1m", "requests running at the end may finish this long" },
	{ "", NULL },
	{ "stages:", NULL },
	{ "  - { name: soak, concurrency: 32, duration: 8h, ramp: 2m }",
	  "CHANGE: the night's load and length" },
	{ "", NULL },
	{ "slo:", "CHANGE: your limits; a breach makes the run exit 99" },
	{ "  ttft_p99: 3s", "99th percentile of time to first token" },
	{ "  itl_p99: 150ms", "99th percentile of the time between tokens" },
	{ "  error_rate: 0.5%", "failed requests among all" },
	{ "  min_output_tokens_per_s: 200", "output tokens per second at least" },
	{ "  abort_on_breach: { intervals: 12 }",
	  "stop at once after a minute of breach (12 x 5 s)" },
	{ "  max_drift:", "the last window against the first; more fails the run" },
	{ "    ttft_p99: 25%", "TTFT p99 may rise this much" },
	{ "    itl_p99: 25%", "ITL p99 may rise this much" },
	{ "    output_tokens_per_s: 10%", "output tokens/s may fall this much" },
	{ "    error_rate: 0.5%", "the error rate may rise this many points" },
	{ "    window: 30m", "the length of both windows" },
	{ NULL, NULL },
};

static const char *const capacity_head[] = {
	"# How many streams can one server take within its SLOs, and how many servers and agents "
	"does",
	"# the load you must serve need? A capacity search: the streams double until a probe "
	"breaks",
	"# an SLO, then bisect; results.json's capacity holds the answer and the plan.",
	NULL,
};

static const struct tline capacity_lines[] = {
	{ "name: capacity", "names the run and its results folder" },
	{ "", NULL },
	{ target_marker, NULL },
	{ "", NULL },
	{ "agents: { local: 2 }", "agent processes on this machine sending the load" },
	{ "readiness: { timeout: 15m }", "wait this long for the model to load (exit 3 after)" },
	{ "warmup: { requests: 8, concurrency: 4 }", "sent first, left out of the results" },
	{ "", NULL },
	{ "workload:", NULL },
	{ "  synthetic:", "generated prompts; none is sent twice in a run" },
	{ "    input_tokens: { mean: 1000, stddev: 200, min: 200, max: 2000 }",
	  "CHANGE: your prompts' lengths" },
	{ "    output_tokens: { mean: 256, stddev: 64, min: 32, max: 512 }",
	  "CHANGE: answers' lengths" },
	{ "  request_timeout: 10m", "each request" },
	{ "  drain_timeout: 1m", "requests running at a probe's end may finish this long" },
	{ "", NULL },
	{ "stages:", NULL },
	{ "  - name: cap", "each probe is a stage of its own: cap-c1, cap-c2, ..." },
	{ "    search:", NULL },
	{ "      over: concurrency", "streams in flight (or rate: requests per second)" },
	{ "      from: 1", "the first level probed" },
	{ "      max: 256", "CHANGE: the highest level probed" },
	{ "      tolerance: 5%", "stop when the bracket is this narrow" },
	{ "      probe_duration: 1m", "each probe's measured window, at least" },
	{ "      ramp: 10s", "each probe's ramp before its window" },
	{ "      slo:", "CHANGE: what a probe must meet to be sustainable" },
	{ "        ttft_p99: 2s", "99th percentile of time to first token" },
	{ "        itl_p99: 100ms", "99th percentile of the time between tokens" },
	{ "        error_rate: 1%", "failed requests among all" },
	{ "", NULL },
	{ "plan: { requests_per_s: 50 }", "CHANGE: the load to plan servers and agents for" },
	{ "estimate: { samples: [100000] }", "how long a batch job of this many requests takes" },
	{ NULL, NULL },
};

static const char *const generate_head[] = {
	"# How long does a batch of requests take, and what did the model answer? A generate "
	"job: every",
	"# request of an OpenAI Batch file sent once, each whole answer appended to the output. "
	"Run it",
	"# again after a crash or a kill and it sends only what is not answered yet.",
	"# The input must exist before validate and run; one line of it looks like:",
	"#   {\"custom_id\": \"q1\", \"method\": \"POST\", \"url\": \"/v1/chat/completions\",",
	"#    \"body\": {\"model\": \"MODEL\", \"messages\": [{\"role\": \"user\", \"content\": "
	"\"Hi\"}]}}",
	NULL,
};

static const struct tline generate_lines[] = {
	{ "name: generate", "names the run and its results folder" },
	{ "", NULL },
	{ target_marker, NULL },
	{ "", NULL },
	{ "agents: { local: 2 }", "agent processes on this machine sending the requests" },
	{ "readiness: { timeout: 15m }", "wait this long for the model to load (exit 3 after)" },
	{ "workload: { request_timeout: 15m }", "each try of a request: long answers need long" },
	{ "", NULL },
	{ "generate:", NULL },
	{ "  input: requests.jsonl", "CHANGE: your Batch input, relative to this file" },
	{ "  output: answers.jsonl", "answers appended, one Batch output line each" },
	{ "  errors: errors.jsonl", "requests that failed for good, with the server's words" },
	{ "  concurrency: 64", "CHANGE: streams in flight over all agents" },
	{ "  # rate: 20/s", "or start this many tries a second (concurrency a cap)" },
	{ "  max_attempts: 4", "tries of a request that failed for a retryable reason" },
	{ "  backoff_initial: 1s", "the wait before the second try, doubled per try ..." },
	{ "  backoff_max: 30s", "... up to this" },
	{ "  skip_invalid: false", "a bad input line stops the job before anything is sent" },
	{ "  # input_format: openai", "a dataset (openai, sharegpt, text) in place of Batch" },
	{ NULL, NULL },
};

static const char *const fleet_head[] = {
	"# What does the server do under more load than one machine can send? Agents on several "
	"client",
	"# hosts dial in to this one over TLS with a shared token; the run starts when all have "
	"joined.",
	"# First (README, \"Running on several hosts\"), on this host: a CA, its certificate, a "
	"token:",
	"#   /usr/share/chatload/make-certs.sh -d /etc/chatload THIS-HOST THIS-HOST-ADDRESS",
	"#   openssl rand -hex 32 > /etc/chatload/token && chmod 0600 /etc/chatload/token",
	"# then on each client host, with ca.pem and token copied there:",
	"#   chatload-agent --connect tls+tcp://THIS-HOST:7700 --tls-ca /etc/chatload/ca.pem \\",
	"#       --token-file /etc/chatload/token --allow-target SERVER-HOST:PORT",
	NULL,
};

static const struct tline fleet_lines[] = {
	{ "name: fleet", "names the run and its results folder" },
	{ "", NULL },
	{ target_marker, NULL },
	{ "", NULL },
	{ "agents:", NULL },
	{ "  local: 0", "no agent here: the client hosts send the load" },
	{ "  listen: tls+tcp://0.0.0.0:7700", "CHANGE: where agents dial in (open this port)" },
	{ "  expect: 2", "CHANGE: the agents to wait for" },
	{ "  join_timeout: 2m", "fail if they have not all joined by then" },
	{ "  token_file: /etc/chatload/token", "CHANGE: the shared token (its first line)" },
	{ "  tls:", NULL },
	{ "    cert: /etc/chatload/coordinator.pem", "CHANGE: this host's certificate" },
	{ "    key: /etc/chatload/coordinator.key", "CHANGE: its key" },
	{ "    # ca: /etc/chatload/ca.pem", "also ask agents for certificates (mutual TLS)" },
	{ "  on_loss: fail", "a lost agent fails the run (results so far are kept)" },
	{ "", NULL },
	{ "readiness: { timeout: 15m }",
	  "each agent's gate; the model may take this long to load" },
	{ "warmup: { requests: 16, concurrency: 8 }", "sent first, left out of the results" },
	{ "", NULL },
	{ "workload:", NULL },
	{ "  synthetic:", "generated prompts; none is sent twice in a run" },
	{ "    input_tokens: { mean: 1000, stddev: 200, min: 200, max: 2000 }",
	  "CHANGE: your prompts' lengths" },
	{ "    output_tokens: { mean: 256, stddev: 64, min: 32, max: 512 }",
	  "CHANGE: answers' lengths" },
	{ "  request_timeout: 10m", "each request" },
	{ "  drain_timeout: 1m", "requests running at a stage's end may finish this long" },
	{ "", NULL },
	{ "stages:", "spread over the agents by their worker threads" },
	{ "  - { concurrency: [64, 128, 256], duration: 2m, ramp: 10s }", "CHANGE: the levels" },
	{ "", NULL },
	{ "slo:", "CHANGE: your limits; a breach makes the run exit 99" },
	{ "  ttft_p99: 2s", "99th percentile of time to first token" },
	{ "  itl_p99: 100ms", "99th percentile of the time between tokens" },
	{ "  error_rate: 1%", "failed requests among all" },
	{ NULL, NULL },
};

struct kind {
	const char *name;
	const char *summary;     /* for --help */
	const char *const *head; /* what the job answers, and how; the how-to follows */
	const struct tline *lines;
	const char *model_note; /* target.model's comment when --model gave it */
};

static const struct kind kinds[] = {
	{ "sweep", "a concurrency sweep, 1 to 64 streams, with SLOs", sweep_head, sweep_lines,
	  "the model named in every request" },
	{ "soak", "a night at one load, with SLOs and drift limits", soak_head, soak_lines,
	  "the model named in every request" },
	{ "capacity", "a capacity search within SLOs, and a fleet plan", capacity_head,
	  capacity_lines, "the model named in every request" },
	{ "generate", "a generate job over an OpenAI Batch input", generate_head, generate_lines,
	  "the readiness gate's; each input line's body names its own" },
	{ "fleet", "agents on several hosts over TLS (listen, expect, token, tls)", fleet_head,
	  fleet_lines, "the model named in every request" },
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static void usage(FILE *out)
{
	fputs("usage: chatload init KIND [-o FILE] [--url URL] [--model M] [--force]\n\n"
	      "Writes a commented scenario to start from: each key says what it means, and the\n"
	      "keys you must make your own (the URL, the model, the lengths, a path, the SLO\n"
	      "limits) are marked '# CHANGE:'. 'chatload validate' accepts it as written.\n\n"
	      "kinds:\n",
	      out);
	for (size_t i = 0; i < N_KINDS; i++)
		fprintf(out, "  %-10s %s\n", kinds[i].name, kinds[i].summary);
	fputs("\noptions:\n"
	      "  -o FILE      write to FILE (refused when it exists) instead of standard output\n"
	      "  --force      overwrite FILE\n"
	      "  --url URL    the server's base URL (default " DEFAULT_URL ", to change)\n"
	      "  --model M    the model to ask for (default: none written; the readiness gate\n"
	      "               takes the first one /v1/models lists)\n"
	      "  -h, --help   show this help\n\n"
	      "exit codes: 0 written, 1 cannot write FILE, 2 bad usage or FILE exists\n",
	      out);
}

/* Writes one line: text, then its note aligned (coordinator/cmd/yaml_text.c). */
static void put_line(FILE *f, const char *text, const char *note)
{
	char line[8600];
	fputs(cli_yaml_line(line, sizeof(line), text, note), f);
}

/* The target section from --url and --model: what they gave is written as given, what they
 * did not is a placeholder marked to change. */
static void target_block(FILE *f, const struct kind *k, const char *url, const char *model)
{
	char line[4200];
	put_line(f, "target:", NULL);
	put_line(f, cli_yaml_key_value("  url: ", url ? url : DEFAULT_URL, line, sizeof(line)),
		 url ? "the server's OpenAI-compatible base URL"
		     : "CHANGE: your server's OpenAI-compatible base URL");
	if (model)
		put_line(f, cli_yaml_key_value("  model: ", model, line, sizeof(line)),
			 k->model_note);
	else
		put_line(f, "  # model: MODEL-NAME",
			 "CHANGE: the served model; left out, the gate finds it");
	put_line(f, "  # api_key_env: OPENAI_API_KEY", "the variable holding an API key, if any");
	if (strcmp(k->name, "generate") != 0)
		put_line(f, "  # body: { temperature: 0.6 }", "fields merged into every request");
}

/* The whole template; 0, or -1 when the stream failed. */
static int write_template(FILE *f, const struct kind *k, const char *url, const char *model)
{
	for (const char *const *h = k->head; *h; h++)
		put_line(f, *h, NULL);
	for (const char *const *h = howto; *h; h++)
		put_line(f, *h, NULL);
	for (const struct tline *l = k->lines; l->text; l++) {
		if (l->text == target_marker)
			target_block(f, k, url, model);
		else
			put_line(f, l->text, l->note);
	}
	return ferror(f) ? -1 : 0;
}

/* A flag's value refused when YAML or a scenario could not carry it: 0, or -1 (said). */
static int check_value(const char *flag, const char *v)
{
	if (!v[0] || strlen(v) > 2048) {
		fprintf(stderr, "chatload init: %s must be 1 to 2048 characters\n", flag);
		return -1;
	}
	for (const char *p = v; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "chatload init: %s has a control character\n", flag);
			return -1;
		}
	}
	if (strcmp(flag, "--url") == 0 && strncmp(v, "http://", 7) != 0 &&
	    strncmp(v, "https://", 8) != 0) {
		fprintf(stderr,
			"chatload init: --url '%s' must start with http:// or https:// (the "
			"server's base URL, e.g. " DEFAULT_URL ")\n",
			v);
		return -1;
	}
	return 0;
}

static void unknown_kind(const char *kind)
{
	fprintf(stderr, "chatload init: unknown kind '%s' (expected one of:", kind);
	for (size_t i = 0; i < N_KINDS; i++)
		fprintf(stderr, " %s", kinds[i].name);
	fprintf(stderr, ")\n");
	usage(stderr);
}

/* Writes the template to path: a new file, or with force any file. */
static int write_file(const char *path, bool force, const struct kind *k, const char *url,
		      const char *model)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), 0644);
	if (fd < 0 && errno == EEXIST) {
		fprintf(stderr, "chatload init: '%s' exists: pass --force to overwrite it\n", path);
		return CL_EXIT_USAGE;
	}
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "chatload init: cannot write '%s': %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return CL_EXIT_FAILED;
	}
	int rc = write_template(f, k, url, model);
	if (fclose(f) != 0 || rc != 0) {
		fprintf(stderr, "chatload init: cannot write '%s': %s\n", path, strerror(errno));
		/* A file this call made holds half a template: remove it.  One --force opened
		 * was there before (perhaps not a regular file at all): it is not ours to remove.
		 */
		if (!force)
			unlink(path);
		return CL_EXIT_FAILED;
	}
	fprintf(stderr,
		"wrote '%s' (a %s scenario): change the lines marked '# CHANGE:', then\n"
		"  chatload validate %s\n",
		path, k->name, path);
	return CL_EXIT_OK;
}

int cl_cmd_init(int argc, char **argv)
{
	const char *kind = NULL, *out = NULL, *url = NULL, *model = NULL;
	bool force = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **value = NULL;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return CL_EXIT_OK;
		} else if (strcmp(a, "--force") == 0 || strcmp(a, "-f") == 0) {
			force = true;
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			value = &out;
		} else if (strcmp(a, "--url") == 0) {
			value = &url;
		} else if (strcmp(a, "--model") == 0) {
			value = &model;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "chatload init: unknown option '%s'\n", a);
			usage(stderr);
			return CL_EXIT_USAGE;
		} else if (kind) {
			fprintf(stderr, "chatload init: one kind at a time ('%s', then '%s')\n",
				kind, a);
			return CL_EXIT_USAGE;
		} else {
			kind = a;
		}
		if (value && i + 1 >= argc) {
			fprintf(stderr, "chatload init: '%s' needs a value\n", a);
			return CL_EXIT_USAGE;
		}
		if (value) {
			*value = argv[++i];
			if (value != &out && check_value(a, *value) != 0)
				return CL_EXIT_USAGE;
		}
	}
	if (!kind) {
		fprintf(stderr, "chatload init: no kind given\n");
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	const struct kind *k = NULL;
	for (size_t i = 0; i < N_KINDS && !k; i++) {
		if (strcmp(kind, kinds[i].name) == 0)
			k = &kinds[i];
	}
	if (!k) {
		unknown_kind(kind);
		return CL_EXIT_USAGE;
	}
	if (out)
		return write_file(out, force, k, url, model);
	if (write_template(stdout, k, url, model) != 0 || fflush(stdout) != 0) {
		fprintf(stderr, "chatload init: cannot write to standard output: %s\n",
			strerror(errno));
		return CL_EXIT_FAILED;
	}
	return CL_EXIT_OK;
}
