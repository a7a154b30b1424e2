/* chatload-sim's flag parser: argv -> struct cl_sim_config through the shared option table. */
#include "config.h"

#include "chatload/sim_options.h"
#include "chatload/units.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_OPTS 96

static const char *const fault_names[CL_SIM_FAULT_COUNT] = {
	[CL_SIM_FAULT_NONE] = NULL,
	[CL_SIM_FAULT_500] = "500",
	[CL_SIM_FAULT_429] = "429",
	[CL_SIM_FAULT_DROP] = "drop",
	[CL_SIM_FAULT_MALFORMED] = "malformed",
	[CL_SIM_FAULT_ERROR_CHUNK] = "error-chunk",
	[CL_SIM_FAULT_NO_USAGE] = "no-usage",
	[CL_SIM_FAULT_NO_DONE] = "no-done",
	[CL_SIM_FAULT_STALL] = "stall",
	[CL_SIM_FAULT_WRONG_TYPE] = "wrong-type",
	[CL_SIM_FAULT_EMPTY] = "empty",
	[CL_SIM_FAULT_HANG] = "hang",
};

/* The option behind each fault probability, in enum order. */
static const char *const fault_flags[CL_SIM_FAULT_COUNT] = {
	[CL_SIM_FAULT_500] = "fault-500",
	[CL_SIM_FAULT_429] = "fault-429",
	[CL_SIM_FAULT_DROP] = "fault-drop",
	[CL_SIM_FAULT_MALFORMED] = "fault-malformed",
	[CL_SIM_FAULT_ERROR_CHUNK] = "fault-error-chunk",
	[CL_SIM_FAULT_NO_USAGE] = "fault-no-usage",
	[CL_SIM_FAULT_NO_DONE] = "fault-no-done",
	[CL_SIM_FAULT_STALL] = "fault-stall",
	[CL_SIM_FAULT_WRONG_TYPE] = "fault-wrong-type",
	[CL_SIM_FAULT_EMPTY] = "fault-empty",
	[CL_SIM_FAULT_HANG] = "fault-hang",
};

static const char *const dialect_names[CL_SIM_DIALECT_COUNT] = {
	[CL_SIM_DIALECT_VLLM] = "vllm",
	[CL_SIM_DIALECT_VLLM_LEGACY] = "vllm-legacy",
	[CL_SIM_DIALECT_LLAMACPP] = "llama.cpp-field",
	[CL_SIM_DIALECT_TGI] = "tgi",
	[CL_SIM_DIALECT_TGI_OPENAI] = "tgi-openai",
	[CL_SIM_DIALECT_OPENAI] = "openai-event",
	[CL_SIM_DIALECT_ANTHROPIC] = "anthropic",
	[CL_SIM_DIALECT_JSON_200] = "json-200",
};

static const char *const wrong_shape_names[] = {
	[CL_SIM_WRONG_CONTENT] = "content", [CL_SIM_WRONG_CHOICES] = "choices",
	[CL_SIM_WRONG_USAGE] = "usage",     [CL_SIM_WRONG_ARRAY] = "array",
	[CL_SIM_WRONG_ALL] = "all",         [CL_SIM_WRONG_ROTATE] = "rotate",
};

const char *cl_sim_dialect_name(enum cl_sim_dialect d)
{
	return (d >= 0 && d < CL_SIM_DIALECT_COUNT) ? dialect_names[d] : NULL;
}

const char *cl_sim_fault_name(enum cl_sim_fault f)
{
	return (f > CL_SIM_FAULT_NONE && f < CL_SIM_FAULT_COUNT) ? fault_names[f] : NULL;
}

/* Prints text word-wrapped to 100 columns from column col, continuation lines indented to
 * column col as well. */
static void print_wrapped(FILE *f, const char *text, int col)
{
	const char *p = text;
	int at = col;
	bool line_start = true;
	while (*p) {
		const char *sp = strchr(p, ' ');
		int wl = sp ? (int)(sp - p) : (int)strlen(p);
		if (!line_start && at + 1 + wl > 100) {
			fprintf(f, "\n%*s", col, "");
			at = col;
			line_start = true;
		}
		if (!line_start) {
			fputc(' ', f);
			at++;
		}
		fwrite(p, 1, (size_t)wl, f);
		at += wl;
		line_start = false;
		p += wl;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

void cl_sim_config_help(FILE *f)
{
	fprintf(f,
		"usage: chatload-sim [OPTION...]\n\n"
		"An OpenAI-compatible streaming chat completions server with exact, configurable\n"
		"timing, readiness phases and injected faults (see docs/simulator.md).\n\n"
		"Options (--name VALUE or --name=VALUE):\n");
	for (size_t i = 0; i < cl_sim_options_count; i++) {
		const struct cl_sim_option *o = &cl_sim_options[i];
		char left[64], help[512];
		snprintf(left, sizeof(left), "--%s%s%s", o->name, o->metavar ? " " : "",
			 o->metavar ? o->metavar : "");
		snprintf(help, sizeof(help), "%s%s%s%s", o->help, o->def ? " (default " : "",
			 o->def ? o->def : "", o->def ? ")" : "");
		fprintf(f, "  %-24s ", left);
		print_wrapped(f, help, 27);
	}
	fprintf(f, "  %-24s %s\n  %-24s %s\n\n", "-h, --help", "show this help and exit",
		"--version", "show the version and exit");
	fprintf(f,
		"Durations: 500us, 20ms, 1.5s, 2m.  Sizes: 512, 64KiB, 1MiB.\n"
		"Endpoints: POST /v1/chat/completions, /v1/completions, /v1/responses (streamed),\n"
		"  /v1/embeddings, /v1/rerank, /v1/score, GET /v1/models, GET /v1/models/ID,\n"
		"GET /health.  Logging: CHATLOAD_LOG=debug|info|warn|error|quiet (stderr).\n"
		"Signals: SIGTERM/SIGINT stop accepting, let decoding streams finish within\n"
		"--grace, cut the rest, flush the truth log and exit 0.  SIGUSR1 restarts the\n"
		"chunk lateness statistics (for benchmarks).\n");
}

/* Looks a value up by option name (the name must be in the table). */
static const char *val(const char *const *vals, const char *name)
{
	const struct cl_sim_option *o = cl_sim_option_find(name);
	return o ? vals[o - cl_sim_options] : NULL;
}

static int get_duration(const char *const *vals, const char *name, int64_t *out, struct cl_err *err)
{
	const char *v = val(vals, name);
	if (!v)
		return 0;
	int rc = cl_parse_duration_us(v, out, err);
	if (rc)
		cl_err_prefix(err, "--%s", name);
	return rc;
}

static int get_u32(const char *const *vals, const char *name, uint32_t max, uint32_t *out,
		   struct cl_err *err)
{
	const char *v = val(vals, name);
	uint64_t x;
	if (!v)
		return 0;
	int rc = cl_parse_u64(v, max, &x);
	if (rc == CL_ERANGE)
		return cl_err_set(err, rc, "--%s: '%s' is out of range (at most %u)", name, v, max);
	if (rc)
		return cl_err_set(err, rc, "--%s: '%s' is not a non-negative integer", name, v);
	*out = (uint32_t)x;
	return 0;
}

static int get_prob(const char *const *vals, const char *name, double max, double *out,
		    struct cl_err *err)
{
	const char *v = val(vals, name);
	double x;
	if (!v)
		return 0;
	if (cl_parse_double(v, &x) != 0 || x < 0 || x > max)
		return cl_err_set(err, CL_EINVAL, "--%s: '%s' is not a number in [0, %g]", name, v,
				  max);
	*out = x;
	return 0;
}

/* Splits "A<sep>B" into two u32s. */
static int parse_pair(const char *text, char sep, uint64_t *a, uint64_t *b, bool real, double *da,
		      double *db)
{
	char left[32], right[32];
	const char *s = strchr(text, sep);
	if (!s || (size_t)(s - text) >= sizeof(left) || strlen(s + 1) >= sizeof(right))
		return CL_EINVAL;
	memcpy(left, text, (size_t)(s - text));
	left[s - text] = '\0';
	strcpy(right, s + 1);
	if (real)
		return (cl_parse_double(left, da) || cl_parse_double(right, db)) ? CL_EINVAL : 0;
	return (cl_parse_u64(left, CL_SIM_MAX_OUTPUT, a) ||
		cl_parse_u64(right, CL_SIM_MAX_OUTPUT, b))
		   ? CL_EINVAL
		   : 0;
}

static int parse_output_tokens(struct cl_sim_config *cfg, const char *v, struct cl_err *err)
{
	uint64_t a = 0, b = 0;
	double da = 0, db = 0;
	if (strcmp(v, "request") == 0) {
		cfg->len_kind = CL_SIM_LEN_REQUEST;
		return 0;
	}
	if (strncmp(v, "uniform:", 8) == 0) {
		if (parse_pair(v + 8, '-', &a, &b, false, NULL, NULL) || a < 1 || b < a)
			goto bad;
		cfg->len_kind = CL_SIM_LEN_UNIFORM;
		cfg->len_a = (uint32_t)a;
		cfg->len_b = (uint32_t)b;
		return 0;
	}
	if (strncmp(v, "normal:", 7) == 0) {
		if (parse_pair(v + 7, ',', NULL, NULL, true, &da, &db) || da < 1 || db < 0 ||
		    da > CL_SIM_MAX_OUTPUT)
			goto bad;
		cfg->len_kind = CL_SIM_LEN_NORMAL;
		cfg->len_mean = da;
		cfg->len_sd = db;
		return 0;
	}
	if (cl_parse_u64(v, CL_SIM_MAX_OUTPUT, &a) == 0 && a >= 1) {
		cfg->len_kind = CL_SIM_LEN_FIXED;
		cfg->len_a = (uint32_t)a;
		return 0;
	}
bad:
	return cl_err_set(
	    err, CL_EINVAL,
	    "--output-tokens: invalid '%s' (expected request, N >= 1, uniform:MIN-MAX "
	    "or normal:MEAN,SD)",
	    v);
}

static int parse_models(struct cl_sim_config *cfg, const char *v, struct cl_err *err)
{
	const char *p = v;
	cfg->n_models = 0;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == 0 || n >= CL_SIM_MODEL_MAX)
			return cl_err_set(err, CL_EINVAL, "--model: invalid name list '%s'", v);
		if (cfg->n_models == CL_SIM_MAX_MODELS)
			return cl_err_set(err, CL_ERANGE, "--model: at most %d models",
					  CL_SIM_MAX_MODELS);
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)p[i];
			/* The name is copied into JSON and headers verbatim: keep it plain. */
			if (ch < 0x21 || ch == '"' || ch == '\\' || ch == 0x7f)
				return cl_err_set(err, CL_EINVAL,
						  "--model: invalid character in '%.*s'", (int)n,
						  p);
		}
		memcpy(cfg->models[cfg->n_models], p, n);
		cfg->models[cfg->n_models][n] = '\0';
		cfg->n_models++;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static int parse_schedule(struct cl_sim_config *cfg, const char *v, struct cl_err *err)
{
	const char *p = v;
	cfg->n_schedule = 0;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char item[64], num[32];
		const char *at;
		uint64_t seq;
		enum cl_sim_fault f = CL_SIM_FAULT_NONE;
		if (n == 0 || n >= sizeof(item))
			goto bad;
		memcpy(item, p, n);
		item[n] = '\0';
		at = strchr(item, '@');
		if (!at || strlen(at + 1) >= sizeof(num))
			goto bad;
		strcpy(num, at + 1);
		for (int i = 1; i < CL_SIM_FAULT_COUNT; i++) {
			size_t l = strlen(fault_names[i]);
			if ((size_t)(at - item) == l && strncmp(item, fault_names[i], l) == 0)
				f = (enum cl_sim_fault)i;
		}
		if (f == CL_SIM_FAULT_NONE || cl_parse_u64(num, UINT64_MAX, &seq) || seq == 0)
			goto bad;
		if (cfg->n_schedule == CL_SIM_MAX_SCHEDULE)
			return cl_err_set(err, CL_ERANGE, "--fault-schedule: at most %d entries",
					  CL_SIM_MAX_SCHEDULE);
		cfg->schedule[cfg->n_schedule].seq = seq;
		cfg->schedule[cfg->n_schedule].fault = f;
		cfg->n_schedule++;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
bad:
	return cl_err_set(err, CL_EINVAL,
			  "--fault-schedule: invalid '%s' (expected NAME@N[,NAME@N...], e.g. "
			  "drop@2,500@5)",
			  v);
}

/* Splits "host:port", "[v6]:port" into cfg->listen_host / listen_port. */
static int parse_listen(struct cl_sim_config *cfg, const char *v, struct cl_err *err)
{
	const char *host = v, *port;
	size_t host_len;
	if (v[0] == '[') {
		const char *close = strchr(v, ']');
		if (!close || close[1] != ':')
			goto bad;
		host = v + 1;
		host_len = (size_t)(close - host);
		port = close + 2;
	} else {
		const char *colon = strrchr(v, ':');
		if (!colon)
			goto bad;
		host_len = (size_t)(colon - v);
		port = colon + 1;
	}
	uint64_t pn;
	if (host_len == 0 || host_len >= sizeof(cfg->listen_host) ||
	    cl_parse_u64(port, 65535, &pn) != 0)
		goto bad;
	memcpy(cfg->listen_host, host, host_len);
	cfg->listen_host[host_len] = '\0';
	snprintf(cfg->listen_port, sizeof(cfg->listen_port), "%u", (unsigned)pn);
	return 0;
bad:
	return cl_err_set(err, CL_EINVAL,
			  "--listen: invalid address '%s' (expected HOST:PORT or [V6]:PORT)", v);
}

/* Suggests the option nearest to an unknown name (shared prefix), or NULL. */
static const char *nearest_option(const char *name)
{
	const char *best = NULL;
	size_t best_len = 2;
	for (size_t i = 0; i < cl_sim_options_count; i++) {
		const char *o = cl_sim_options[i].name;
		size_t l = 0;
		while (o[l] && name[l] && o[l] == name[l])
			l++;
		if (l > best_len) {
			best_len = l;
			best = o;
		}
	}
	return best;
}

static int collect(const char **vals, int argc, char **argv, struct cl_err *err)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char name[64];
		const char *eq, *value = NULL;
		size_t n;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			cl_sim_config_help(stdout);
			return 1;
		}
		if (strcmp(a, "--version") == 0) {
			printf("chatload-sim %s\n", CHATLOAD_VERSION);
			return 1;
		}
		if (strncmp(a, "--", 2) != 0)
			return cl_err_set(err, CL_EINVAL, "unexpected argument '%s'", a);
		a += 2;
		eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		if (n >= sizeof(name))
			return cl_err_set(err, CL_EINVAL, "unknown option '--%s'", a);
		memcpy(name, a, n);
		name[n] = '\0';
		const struct cl_sim_option *o = cl_sim_option_find(name);
		if (!o) {
			const char *near = nearest_option(name);
			if (near)
				return cl_err_set(err, CL_EINVAL,
						  "unknown option '--%s' (did you mean '--%s'?)",
						  name, near);
			return cl_err_set(err, CL_EINVAL, "unknown option '--%s'", name);
		}
		if (eq) {
			value = eq + 1;
		} else if (o->kind == CL_SIMOPT_BOOL) {
			value = "true";
		} else {
			if (i + 1 >= argc)
				return cl_err_set(err, CL_EINVAL,
						  "option '--%s' needs a value (%s)", o->name,
						  o->metavar ? o->metavar : "VALUE");
			value = argv[++i];
		}
		vals[o - cl_sim_options] = value;
	}
	return 0;
}
/* --kv-cache-tokens is read with the other counts; these two say what /metrics looks like. */
static int parse_metrics_flags(struct cl_sim_config *cfg, const char *const *vals,
			       struct cl_err *err)
{
	bool off = false;
	const char *v = val(vals, "no-prefix-cache");
	if (v && cl_parse_bool(v, &off))
		return cl_err_set(err, CL_EINVAL, "--no-prefix-cache: '%s' is not a boolean", v);
	cfg->prefix_cache = !off;
	bool timings = false;
	if ((v = val(vals, "cache-timings")) && cl_parse_bool(v, &timings))
		return cl_err_set(err, CL_EINVAL, "--cache-timings: '%s' is not a boolean", v);
	cfg->cache_timings = timings;
	if ((v = val(vals, "ttft-buckets"))) {
		/* Seconds, ascending, at most 40: finer bounds than vLLM's where a test needs
		 * the server's percentiles to the millisecond. */
		char item[32];
		for (const char *p = v; *p;) {
			size_t n = strcspn(p, ",");
			double d = 0;
			bool ok = n > 0 && n < sizeof(item);
			if (ok) {
				memcpy(item, p, n);
				item[n] = '\0';
				ok = cl_parse_double(item, &d) == 0 && d > 0 && d < 1e6 &&
				     cfg->n_ttft_buckets < 40 &&
				     (!cfg->n_ttft_buckets ||
				      d > cfg->ttft_buckets[cfg->n_ttft_buckets - 1]);
			}
			if (!ok)
				return cl_err_set(err, CL_EINVAL,
						  "--ttft-buckets: '%s' is not up to 40 ascending "
						  "positive seconds separated by commas",
						  v);
			cfg->ttft_buckets[cfg->n_ttft_buckets++] = d;
			p += n + (p[n] == ',');
		}
	}
	v = val(vals, "transcription-stream");
	if (strcmp(v, "vllm") != 0 && strcmp(v, "openai") != 0)
		return cl_err_set(err, CL_EINVAL,
				  "--transcription-stream: '%s' is none of vllm, openai", v);
	cfg->transcription_openai = strcmp(v, "openai") == 0;
	v = val(vals, "metrics-names");
	if (strcmp(v, "vllm") == 0)
		cfg->metrics_names = CL_SIM_NAMES_VLLM;
	else if (strcmp(v, "sglang") == 0)
		cfg->metrics_names = CL_SIM_NAMES_SGLANG;
	else if (strcmp(v, "llamacpp") == 0)
		cfg->metrics_names = CL_SIM_NAMES_LLAMACPP;
	else
		return cl_err_set(err, CL_EINVAL,
				  "--metrics-names: '%s' is none of vllm, sglang, llamacpp", v);
	return 0;
}

/* --name as a boolean into *out (left as it is when the flag is absent). */
static int get_bool(const char *const *vals, const char *name, bool *out, struct cl_err *err)
{
	const char *v = val(vals, name);
	if (v && cl_parse_bool(v, out))
		return cl_err_set(err, CL_EINVAL, "--%s: '%s' is not a boolean", name, v);
	return 0;
}

/* The server itself: where it listens, its files, its limits, its processes, its models. */
static int parse_server(struct cl_sim_config *cfg, const char *const *vals, struct cl_err *err)
{
	int rc;
	if ((rc = parse_listen(cfg, val(vals, "listen"), err)) ||
	    (rc = get_bool(vals, "allow-remote", &cfg->allow_remote, err)) ||
	    (rc = get_bool(vals, "no-tokenize", &cfg->no_tokenize, err)) ||
	    (rc = get_bool(vals, "word-tokens", &cfg->word_tokens, err)) ||
	    (rc = get_bool(vals, "no-ignore-eos", &cfg->no_ignore_eos, err)) ||
	    (rc = get_bool(vals, "retry-after-date", &cfg->retry_after_date, err)))
		return rc;
	cfg->port_file = val(vals, "port-file");
	cfg->truth_log = val(vals, "truth-log");
	cfg->stats_file = val(vals, "stats-file");
	if ((rc = cl_parse_size(val(vals, "max-body"), &cfg->max_body, err)))
		return cl_err_prefix(err, "--max-body");
	if (cfg->max_body > (1ull << 30))
		return cl_err_set(err, CL_ERANGE, "--max-body: at most 1GiB");
	if ((rc = get_u32(vals, "max-connections", 1000000, &cfg->max_connections, err)))
		return rc;
	if (cfg->max_connections < 1)
		return cl_err_set(err, CL_ERANGE, "--max-connections: must be at least 1");
	if ((rc = get_duration(vals, "grace", &cfg->grace_us, err)))
		return rc;
	if ((rc = get_u32(vals, "processes", CL_SIM_MAX_PROCESSES, &cfg->processes, err)))
		return rc;
	if (cfg->processes < 1)
		return cl_err_set(err, CL_ERANGE, "--processes: must be at least 1");
	if ((rc = parse_models(cfg, val(vals, "model"), err)))
		return rc;
	cfg->api_key = val(vals, "api-key");
	cfg->reasoning_field = val(vals, "reasoning-field");
	if (strcmp(cfg->reasoning_field, "reasoning_content") != 0 &&
	    strcmp(cfg->reasoning_field, "reasoning") != 0)
		return cl_err_set(
		    err, CL_EINVAL,
		    "--reasoning-field: '%s' is neither reasoning_content nor reasoning",
		    cfg->reasoning_field);
	return 0;
}

/* What an answer is and how long it takes: the timing model, lengths, chunks, the seed,
 * tool calls (docs/simulator.md, "Timing model", "Tool calls"). */
static int parse_answers(struct cl_sim_config *cfg, const char *const *vals, struct cl_err *err)
{
	int rc;
	if ((rc = get_duration(vals, "ttft", &cfg->ttft_us, err)) ||
	    (rc = get_duration(vals, "itl", &cfg->itl_us, err)) ||
	    (rc = get_duration(vals, "prefill-per-token", &cfg->prefill_per_token_us, err)) ||
	    (rc = get_duration(vals, "embedding-per-token", &cfg->embedding_per_token_us, err)) ||
	    (rc = get_duration(vals, "rerank-per-token", &cfg->rerank_per_token_us, err)) ||
	    (rc = get_duration(vals, "audio-per-second", &cfg->audio_per_second_us, err)) ||
	    (rc = get_duration(vals, "itl-per-active", &cfg->itl_per_active_us, err)) ||
	    (rc = get_duration(vals, "itl-growth", &cfg->itl_growth_us, err)) ||
	    (rc = get_duration(vals, "loading-for", &cfg->loading_for_us, err)) ||
	    (rc = get_duration(vals, "chat-ready-after", &cfg->chat_ready_after_us, err)) ||
	    (rc = get_duration(vals, "stall-for", &cfg->stall_for_us, err)))
		return rc;
	if ((rc = parse_output_tokens(cfg, val(vals, "output-tokens"), err)))
		return rc;
	const char *policy = val(vals, "scheduling-policy");
	if (strcmp(policy, "fcfs") != 0 && strcmp(policy, "priority") != 0)
		return cl_err_set(err, CL_EINVAL,
				  "--scheduling-policy: '%s' is neither fcfs nor priority", policy);
	cfg->priority_sched = strcmp(policy, "priority") == 0;
	if ((rc = get_u32(vals, "reasoning-tokens", CL_SIM_MAX_OUTPUT, &cfg->reasoning_tokens,
			  err)) ||
	    (rc = get_u32(vals, "tokens-per-chunk", CL_SIM_MAX_TPC, &cfg->tokens_per_chunk, err)) ||
	    (rc = get_u32(vals, "max-batch", 1000000, &cfg->max_batch, err)) ||
	    (rc = get_u32(vals, "embedding-dim", 65536, &cfg->embedding_dim, err)) ||
	    (rc = get_u32(vals, "kv-cache-tokens", UINT32_MAX - 1, &cfg->kv_cache_tokens, err)) ||
	    (rc = get_u32(vals, "chars-per-token", 64, &cfg->chars_per_token, err)) ||
	    (rc = get_u32(vals, "template-tokens", 100000, &cfg->template_tokens, err)) ||
	    (rc = get_u32(vals, "image-tokens", 100000, &cfg->image_tokens, err)) ||
	    (rc = get_u32(vals, "retry-after", 86400, &cfg->retry_after_s, err)) ||
	    (rc = get_u32(vals, "stall-at", CL_SIM_MAX_OUTPUT, &cfg->stall_at, err)))
		return rc;
	if (cfg->embedding_dim == 0)
		return cl_err_set(err, CL_EINVAL, "--embedding-dim: must be at least 1");
	if (cfg->tokens_per_chunk < 1)
		return cl_err_set(err, CL_ERANGE, "--tokens-per-chunk: must be at least 1");
	if ((rc = get_prob(vals, "jitter", 1.0, &cfg->jitter, err)))
		return rc;
	const char *v = val(vals, "seed");
	if (cl_parse_u64(v, UINT64_MAX, &cfg->seed))
		return cl_err_set(err, CL_EINVAL, "--seed: '%s' is not a non-negative integer", v);
	if ((rc = get_prob(vals, "tool-call-rate", 1.0, &cfg->tool_call_rate, err)) ||
	    (rc = get_bool(vals, "no-tools", &cfg->no_tools, err)))
		return rc;
	return 0;
}

/* How the error-chunk fault says its failure: --error-dialect, --error-code,
 * --error-message (docs/simulator.md, "Error dialects"). */
static int parse_error_words(struct cl_sim_config *cfg, const char *const *vals, struct cl_err *err)
{
	int rc;
	const char *v = val(vals, "error-dialect");
	int d;
	for (d = 0; d < CL_SIM_DIALECT_COUNT && strcmp(v, dialect_names[d]) != 0; d++)
		;
	if (d == CL_SIM_DIALECT_COUNT)
		return cl_err_set(err, CL_EINVAL,
				  "--error-dialect: '%s' is none of vllm, vllm-legacy, "
				  "llama.cpp-field, tgi, tgi-openai, openai-event, anthropic, "
				  "json-200",
				  v);
	cfg->error_dialect = (enum cl_sim_dialect)d;
	if ((rc = get_u32(vals, "error-code", 599, &cfg->error_code, err)))
		return rc;
	if (cfg->error_code < 400)
		return cl_err_set(err, CL_ERANGE,
				  "--error-code: %u is not an error status (400..599)",
				  cfg->error_code);
	cfg->error_message = val(vals, "error-message");
	size_t n = strlen(cfg->error_message);
	if (n == 0 || n > 1024)
		return cl_err_set(err, CL_EINVAL,
				  "--error-message: must be 1 to 1024 bytes, got %zu", n);
	return 0;
}

/* What goes wrong on purpose: injected faults, their schedule, malformed shapes, closes
 * (docs/simulator.md, "Faults"). */
static int parse_faults(struct cl_sim_config *cfg, const char *const *vals, struct cl_err *err)
{
	int rc;
	const char *v;
	uint64_t u;
	cfg->fault_at = -1;
	if ((v = val(vals, "fault-at"))) {
		if (cl_parse_u64(v, CL_SIM_MAX_OUTPUT, &u))
			return cl_err_set(err, CL_EINVAL, "--fault-at: '%s' is not a token count",
					  v);
		cfg->fault_at = (int64_t)u;
	}
	double total = 0;
	for (int f = 1; f < CL_SIM_FAULT_COUNT; f++) {
		if ((rc = get_prob(vals, fault_flags[f], 1.0, &cfg->fault_p[f], err)))
			return rc;
		total += cfg->fault_p[f];
	}
	/* One uniform draw picks at most one fault, so the intervals must fit in [0, 1]. */
	if (total > 1.0 + 1e-9)
		return cl_err_set(err, CL_ERANGE,
				  "fault probabilities add up to %g (at most 1: a request gets at "
				  "most one fault)",
				  total);
	if ((v = val(vals, "fault-schedule")) && (rc = parse_schedule(cfg, v, err)))
		return rc;
	v = val(vals, "wrong-type-shape");
	size_t n_shapes = sizeof(wrong_shape_names) / sizeof(wrong_shape_names[0]), k;
	for (k = 0; k < n_shapes && strcmp(v, wrong_shape_names[k]) != 0; k++)
		;
	if (k == n_shapes)
		return cl_err_set(err, CL_EINVAL,
				  "--wrong-type-shape: '%s' is none of content, choices, usage, "
				  "array, all, rotate",
				  v);
	cfg->wrong_shape = (enum cl_sim_wrong_shape)k;
	if ((rc = get_bool(vals, "close-after-answer", &cfg->close_after_answer, err)) ||
	    (rc = get_bool(vals, "hold-after-done", &cfg->hold_after_done, err)))
		return rc;
	return parse_error_words(cfg, vals, err);
}

int cl_sim_config_parse(struct cl_sim_config *cfg, int argc, char **argv, struct cl_err *err)
{
	const char *vals[MAX_OPTS] = { 0 };
	int rc;

	if (cl_sim_options_count > MAX_OPTS)
		return cl_err_set(err, CL_ERANGE, "option table too large");
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < cl_sim_options_count; i++)
		vals[i] = cl_sim_options[i].def;
	if ((rc = collect(vals, argc, argv, err)) || (rc = parse_server(cfg, vals, err)) ||
	    (rc = parse_answers(cfg, vals, err)) || (rc = parse_faults(cfg, vals, err)) ||
	    (rc = parse_metrics_flags(cfg, vals, err)))
		return rc;
	return 0;
}
