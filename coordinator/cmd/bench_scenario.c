/* chatload bench's scenario: the text its flags describe, each line remembering the flag that
 * wrote it, and that text checked by the scenario loader with each problem put to its flag. */
#include "coordinator/cmd/bench_int.h"
#include "coordinator/cmd/yaml_text_int.h"
#include "coordinator/scenario/scenario.h"

#include "chatload/err.h"
#include "chatload/plan.h"
#include "chatload/units.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS 64   /* values in --concurrency or --rate */
#define LINE_BYTES 4400 /* one formatted line: a value, its key, a note */

/* ---- checking values the loader cannot name the flag of ----------------------------------- */

static int bad(const struct bench_flags *f, enum bench_opt id, const char *why)
{
	fprintf(stderr, "chatload bench: %s '%s': %s\n", cli_bench_flag_name(f, id), f->val[id],
		why);
	return -1;
}

/* A comma-separated list of levels, each a count (1..CL_PLAN_CONCURRENCY_MAX) or a rate
 * (a bare number per second), written as YAML into out ("4" or "[1, 8, 16]"). */
static int levels(const struct bench_flags *f, enum bench_opt id, bool rate, char *out, size_t n)
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
static int duration(const struct bench_flags *f, enum bench_opt id, char *out, size_t n)
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
static int count(const struct bench_flags *f, enum bench_opt id, uint64_t max, bool zero_ok,
		 uint64_t *out)
{
	if (cl_parse_u64(f->val[id], max, out) != 0 || (*out == 0 && !zero_ok)) {
		char msg[80];
		snprintf(msg, sizeof(msg), "expected a whole number from %d to %llu",
			 zero_ok ? 0 : 1, (unsigned long long)max);
		return bad(f, id, msg);
	}
	return 0;
}

/* ---- writing the scenario ----------------------------------------------------------------- */

/* Appends one line (two when its note goes above it), remembering the flag behind it. */
static void emit(struct bench_text *t, int tag, const char *yaml, const char *note)
{
	char line[LINE_BYTES + 200];
	cli_yaml_line(line, sizeof(line), yaml, note);
	for (const char *p = line; *p; p++) {
		if (*p == '\n' && t->lines < CLI_BENCH_MAX_LINES)
			t->tag[++t->lines] = tag;
	}
	if (t->rc == 0)
		t->rc = cl_buf_puts(&t->b, line);
}

/* "  key: value" with the value quoted when YAML needs it. */
static void emit_kv(struct bench_text *t, int tag, const char *key, const char *value,
		    const char *note)
{
	char kv[LINE_BYTES];
	emit(t, tag, cli_yaml_key_value(key, value, kv, sizeof(kv)), note);
}

/* "# chatload bench --url ...": the command line, each argument printable as typed. */
static void emit_command(struct bench_text *t, int argc, char **argv)
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

/* "  key: /absolute/path" of a flag's file, so that the scenario names the same file from
 * wherever it is run again: 0, or -1 (said) when the file is not there. */
static int emit_path(struct bench_text *t, const struct bench_flags *f, enum bench_opt id,
		     const char *key, const char *note)
{
	char path[PATH_MAX];
	if (!realpath(f->val[id], path))
		return bad(f, id, strerror(errno));
	emit_kv(t, id, key, path, note);
	return 0;
}

/* The API named (CL_API_CHAT without a name; CL_API__COUNT for a name the loader will refuse,
 * naming --api). */
static enum cl_api api_of(const char *name)
{
	if (!name)
		return CL_API_CHAT;
	for (int a = 0; a < CL_API__COUNT; a++)
		if (cl_api_name((enum cl_api)a) && strcmp(cl_api_name((enum cl_api)a), name) == 0)
			return (enum cl_api)a;
	return CL_API__COUNT;
}

/* The workload section: a dataset or synthetic lengths (synthetic audio for a transcription),
 * the API, the seed, ignore_eos.  An output length goes only to the APIs that generate one
 * (chat, completions, responses, messages), unless asked for: the loader then names why. */
static int emit_workload(struct bench_text *t, const struct bench_flags *f)
{
	uint64_t n;
	emit(t, -1, "workload:", NULL);
	if (f->val[O_API])
		emit_kv(t, O_API, "  api: ", f->val[O_API], "the API every request uses");
	enum cl_api api = api_of(f->val[O_API]);
	bool generates = api == CL_API__COUNT || cl_api_streams(api);
	if (api == CL_API_TRANSCRIPTION && !f->val[O_DATASET]) {
		emit(t, -1, "  audio:", "synthetic speech-length clips, made on the agents");
		emit(t, -1, "    seconds: 5", "each clip's length");
	} else if (f->val[O_DATASET]) {
		if (emit_path(t, f, O_DATASET, "  dataset: ", "prompts from this file") != 0)
			return -1;
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
		if (generates || f->val[O_OUTPUT_TOKENS]) {
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

/* The stages: one entry, a sweep over the levels. vLLM's `--request-rate inf` (its default)
 * with `--max-concurrency N` is a closed loop of N streams: concurrency stages here. */
static int emit_stages(struct bench_text *t, const struct bench_flags *f)
{
	char list[LINE_BYTES], line[LINE_BYTES + 64];
	bool inf = f->val[O_RATE] && strcmp(f->val[O_RATE], "inf") == 0;
	if (inf && !f->val[O_CONCURRENCY])
		return bad(
		    f, O_RATE,
		    "an unbounded rate needs --concurrency N (the streams in flight); or give "
		    "rates such as 2,4,8");
	if (inf && f->val[O_BURSTINESS])
		return bad(f, O_BURSTINESS, "--burstiness shapes a finite --rate");
	emit(t, -1, "stages:", "one stage per level, each named for it (c8, r2, ...)");
	if (f->val[O_RATE] && !inf) {
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
		char d[CLI_BENCH_MAX_VALUE + 8] = DEFAULT_DURATION;
		if (f->val[O_DURATION] && duration(f, O_DURATION, d, sizeof(d)) != 0)
			return -1;
		emit_kv(t, O_DURATION, "    duration: ", d, "each stage's measured window");
	}
	return 0;
}

/* The warmup: N requests at up to 4 streams (enough to open connections and wake the
 * server, without the wait of N requests one at a time), a duration at 4, or none. */
static int emit_warmup(struct bench_text *t, const struct bench_flags *f)
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
		char d[CLI_BENCH_MAX_VALUE + 8];
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
static int emit_slo(struct bench_text *t, const struct bench_flags *f)
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

static int emit_agents(struct bench_text *t, const struct bench_flags *f)
{
	if (f->val[O_AGENTS]) {
		emit(t, -1, "agents:", NULL);
		emit_kv(t, O_AGENTS, "  local: ", f->val[O_AGENTS],
			"agent processes on this machine sending the load");
		return 0;
	}
	if (!f->val[O_AGENTS_LISTEN]) {
		emit(t, -1, "# agents: { local: 2 }", "the default: two agent processes here");
		return 0;
	}
	emit(t, -1, "agents:", NULL);
	emit_kv(t, O_AGENTS_LISTEN, "  listen: ", f->val[O_AGENTS_LISTEN], "where agents dial in");
	emit_kv(t, O_AGENTS_EXPECT, "  expect: ", f->val[O_AGENTS_EXPECT],
		"the agents to wait for");
	if (f->val[O_AGENTS_TOKEN_FILE] &&
	    emit_path(t, f, O_AGENTS_TOKEN_FILE, "  token_file: ", "the shared token") != 0)
		return -1;
	if (f->val[O_AGENTS_TLS_CERT] || f->val[O_AGENTS_TLS_KEY]) {
		emit(t, -1, "  tls:", NULL);
		if (f->val[O_AGENTS_TLS_CERT] &&
		    emit_path(t, f, O_AGENTS_TLS_CERT, "    cert: ", NULL) != 0)
			return -1;
		if (f->val[O_AGENTS_TLS_KEY] &&
		    emit_path(t, f, O_AGENTS_TLS_KEY, "    key: ", NULL) != 0)
			return -1;
	}
	return 0;
}

/* The readiness gate's timeout, or no gate (vLLM's --ready-check-timeout-sec 0). */
static int emit_readiness(struct bench_text *t, const struct bench_flags *f)
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
	char d[CLI_BENCH_MAX_VALUE + 8];
	if (duration(f, O_READY_TIMEOUT, d, sizeof(d)) != 0)
		return -1;
	emit(t, -1, "readiness:", "the gate before any load: the model answers, twice");
	emit_kv(t, O_READY_TIMEOUT, "  timeout: ", d, "given up after this long (exit 3)");
	return 0;
}

/* The whole scenario into t: 0, or -1 when a flag's value is wrong (said). */
int cli_bench_build(struct bench_text *t, const struct bench_flags *f, int argc, char **argv)
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
	if (emit_agents(t, f) != 0 || emit_readiness(t, f) != 0)
		return -1;
	if (emit_warmup(t, f) != 0 || emit_workload(t, f) != 0 || emit_stages(t, f) != 0 ||
	    emit_slo(t, f) != 0)
		return -1;
	if (f->val[O_CLIENT_BOUND])
		emit_kv(t, O_CLIENT_BOUND, "client_bound: ", f->val[O_CLIENT_BOUND],
			"a client-bound stage: fail the run, or warn");
	if (t->rc != 0 || t->lines >= CLI_BENCH_MAX_LINES) {
		fprintf(stderr, "chatload bench: cannot build the scenario: %s\n",
			t->rc ? cl_strerror(t->rc) : "too long");
		return -1;
	}
	return 0;
}

/* Loads the text as chatload run will: every problem printed against the flag behind its
 * line. 0, or -1 (said). */
int cli_bench_check(const struct bench_text *t, const struct bench_flags *f)
{
	struct cl_scenario s = { 0 };
	struct cl_diags diags = { 0 };
	int rc = cl_scenario_load_string(t->b.data, t->b.len, "chatload bench", NULL, &s, &diags);
	for (size_t i = 0; i < diags.n; i++) {
		const struct cl_err *e = &diags.items[i];
		int tag = e->line > 0 && (size_t)e->line <= t->lines ? t->tag[e->line] : -1;
		if (tag >= 0)
			fprintf(stderr, "chatload bench: %s '%s': %s\n",
				cli_bench_flag_name(f, tag), f->val[tag], e->msg);
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
