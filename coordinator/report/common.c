/* The cells every report format shares: the stage summary row and its columns (so the
 * terminal, Markdown and HTML tables show the same cells), the probes and server rows, the
 * server's notes, the images' cost in words, the verdict and the exit code in words. */
#include "coordinator/report/internal.h"
#include "coordinator/results/results.h"

#include "chatload/err.h"
#include "chatload/exitcode.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *const cli_rp_col_names[RP__COLS] = {
	"stage",         "load",          "status",     "req/s",       "out tok/s",
	"TTFT p50 ms",   "TTFT p99 ms",   "ITL p50 ms", "ITL p99 ms",  "TPOT p50 ms",
	"E2E p50 ms",    "errors",        "no content", "TTFC p50 ms", "TTFC p99 ms",
	"content tok/s", "cached prompt", "inputs/s",   "input tok/s", "E2E p99 ms",
	"tool calls",    "docs/s",        "cancelled",  "audio s/s",   "RTF p50",
	"RTF p99",
};
const bool cli_rp_col_numeric[RP__COLS] = { false, true, false, true, true, true, true, true, true,
					    true,  true, true,  true, true, true, true, true, true,
					    true,  true, true,  true, true, true, true, true };

/* Display order: the thinking-model columns sit beside TTFT and the output rate they
 * qualify. */
static const int col_order[] = {
	RP_STAGE,  RP_LOAD,   RP_STATUS,    RP_RPS,        RP_OTPS,      RP_CONTENT_TPS, RP_TTFT50,
	RP_TTFT99, RP_CACHED, RP_TTFC50,    RP_TTFC99,     RP_ITL50,     RP_ITL99,       RP_TPOT50,
	RP_E2E50,  RP_ERRORS, RP_NOCONTENT, RP_TOOL_CALLS, RP_CANCELLED,
};
/* An embeddings run: no output, no chunks, so no TTFT, ITL or TPOT; what it has instead. */
static const int col_order_embeddings[] = {
	RP_STAGE,    RP_LOAD,  RP_STATUS, RP_RPS,    RP_INPUTS_PS,
	RP_INTOK_PS, RP_E2E50, RP_E2E99,  RP_ERRORS, RP_CANCELLED,
};
/* A rerank or score run: req/s is queries/s; documents and tokens per second beside it. */
static const int col_order_scoring[] = {
	RP_STAGE,    RP_LOAD,  RP_STATUS, RP_RPS,    RP_DOCS_PS,
	RP_INTOK_PS, RP_E2E50, RP_E2E99,  RP_ERRORS, RP_CANCELLED,
};

/* A transcription run: the audio's rate and real-time factor beside latency; TTFT (the first
 * text) stays for a streamed one. */
static const int col_order_audio[] = {
	RP_STAGE,  RP_LOAD,   RP_STATUS, RP_RPS,   RP_AUDIO_PS, RP_RTF50,     RP_RTF99,
	RP_TTFT50, RP_TTFT99, RP_E2E50,  RP_E2E99, RP_ERRORS,   RP_CANCELLED,
};

bool cli_rp_audio(const json_t *stages)
{
	size_t i;
	const json_t *s;
	bool audio = json_array_size(stages) > 0;
	json_array_foreach(stages, i, s)
	{
		audio &= json_is_object(json_object_get(s, "audio"));
	}
	return audio;
}

bool cli_rp_thinking(const json_t *stages)
{
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		if (cl_results_num(s, "tokens.reasoning") > 0)
			return true;
	}
	return false;
}

/* Whether every stage has an object named key. */
static bool every_stage_has(const json_t *stages, const char *key)
{
	size_t i;
	const json_t *s;
	bool all = json_array_size(stages) > 0;
	json_array_foreach(stages, i, s)
	{
		all &= json_is_object(json_object_get(s, key));
	}
	return all;
}

bool cli_rp_embeddings(const json_t *stages)
{
	return every_stage_has(stages, "embeddings") || every_stage_has(stages, "rerank");
}

size_t cli_rp_columns(const json_t *stages, int cols[RP__COLS])
{
	bool no_content = false;
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		no_content |= cl_results_num(s, "requests.no_content") > 0;
	}
	bool thinking = cli_rp_thinking(stages);
	bool cached = false, tool_calls = false, cancelled = false;
	json_array_foreach(stages, i, s)
	{
		cached |= cl_results_num(s, "tokens.cached_prompt_tokens") > 0;
		tool_calls |= cl_results_num(s, "requests.tool_calls") > 0;
		cancelled |= cl_results_num(s, "requests.cancelled") > 0;
	}
	size_t n = 0;
	if (every_stage_has(stages, "rerank")) {
		for (size_t k = 0; k < sizeof(col_order_scoring) / sizeof(int); k++) {
			if (col_order_scoring[k] != RP_CANCELLED || cancelled)
				cols[n++] = col_order_scoring[k];
		}
		return n;
	}
	if (cli_rp_embeddings(stages)) {
		for (size_t k = 0; k < sizeof(col_order_embeddings) / sizeof(int); k++) {
			if (col_order_embeddings[k] != RP_CANCELLED || cancelled)
				cols[n++] = col_order_embeddings[k];
		}
		return n;
	}
	if (cli_rp_audio(stages)) {
		bool ttft = false;
		json_array_foreach(stages, i, s)
		{
			ttft |= cl_results_num(s, "latency_ms.ttft.count") > 0;
		}
		for (size_t k = 0; k < sizeof(col_order_audio) / sizeof(int); k++) {
			int c = col_order_audio[k];
			if ((c == RP_TTFT50 || c == RP_TTFT99) && !ttft)
				continue;
			if (c == RP_CANCELLED && !cancelled)
				continue;
			cols[n++] = c;
		}
		return n;
	}
	for (size_t k = 0; k < sizeof(col_order) / sizeof(col_order[0]); k++) {
		int c = col_order[k];
		if (c == RP_NOCONTENT && !no_content)
			continue;
		if ((c == RP_TTFC50 || c == RP_TTFC99 || c == RP_CONTENT_TPS) && !thinking)
			continue;
		if (c == RP_CACHED && !cached)
			continue;
		if (c == RP_TOOL_CALLS && !tool_calls)
			continue;
		if (c == RP_CANCELLED && !cancelled)
			continue;
		cols[n++] = c;
	}
	return n;
}

const char *cli_rp_check_name(const json_t *check, char *buf, size_t n)
{
	const char *cls = cl_results_str(check, "class", NULL);
	if (cls)
		snprintf(buf, n, "%s (class %s)", cl_results_str(check, "slo", "-"), cls);
	else
		snprintf(buf, n, "%s", cl_results_str(check, "slo", "-"));
	return buf;
}

const char *cli_rp_verdict_word(const json_t *doc)
{
	const json_t *pass = cl_results_get(doc, "verdict.pass");
	double evaluated = cl_results_num(doc, "verdict.evaluated");
	if (!json_is_boolean(pass))
		return "-";
	if (json_is_true(pass) && evaluated == 0)
		return "NO SLO";
	return json_is_true(pass) ? "PASS" : "FAIL";
}

char *cli_rp_exit_text(char *buf, size_t n, const json_t *doc)
{
	const json_t *code = json_object_get(doc, "exit_code");
	if (!json_is_integer(code)) {
		snprintf(buf, n, "- (run not finished)");
		return buf;
	}
	json_int_t c = json_integer_value(code);
	/* A complete run with no failed stage fails only for a client-bound stage: say so. */
	bool bound = false, failed = false;
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		bound |= json_is_true(cl_results_get(s, "client.client_bound"));
		failed |= strcmp(cl_results_str(s, "status", ""), "failed") == 0;
	}
	if (c == CL_EXIT_FAILED && bound && !failed &&
	    json_is_true(json_object_get(doc, "complete")) &&
	    strcmp(cl_results_str(doc, "scenario.client_bound", "fail"), "warn") != 0) {
		snprintf(buf, n, "%lld (client-bound)", (long long)c);
		return buf;
	}
	const char *what = c == CL_EXIT_OK           ? "ok"
			   : c == CL_EXIT_FAILED     ? "run failed"
			   : c == CL_EXIT_USAGE      ? "bad input"
			   : c == CL_EXIT_NOT_READY  ? "target not ready"
			   : c == CL_EXIT_SLO_BREACH ? "SLO breached"
						     : "unknown";
	snprintf(buf, n, "%lld (%s)", (long long)c, what);
	return buf;
}

char *cli_rp_stage_load(const json_t *stage, char *buf, size_t n)
{
	const json_t *mode = json_object_get(stage, "mode");
	const json_t *c = json_object_get(stage, "concurrency");
	const json_t *rate = json_object_get(stage, "rate");
	if (json_is_string(mode) && strcmp(json_string_value(mode), "rate") == 0 &&
	    json_is_number(rate)) {
		if (json_is_integer(c) && json_integer_value(c) > 0)
			snprintf(buf, n, "%g/s (max %lld)", json_number_value(rate),
				 (long long)json_integer_value(c));
		else
			snprintf(buf, n, "%g/s", json_number_value(rate));
	} else if (json_is_integer(c)) {
		snprintf(buf, n, "c=%lld", (long long)json_integer_value(c));
	} else {
		snprintf(buf, n, "-");
	}
	return buf;
}

/* Appends " ±h" to the cells whose figure has a 95 % interval (stages[].ci95), in the
 * cell's own precision, so "812.4 ±9.6" reads as the value and its uncertainty. */
static void add_ci(const json_t *s, struct cli_rp_row *row)
{
	static const struct {
		int col;
		const char *figure;
		bool rate;
	} cis[] = { { RP_RPS, "requests_per_s", true },  { RP_OTPS, "output_tokens_per_s", true },
		    { RP_TTFT50, "ttft_p50_ms", false }, { RP_TTFT99, "ttft_p99_ms", false },
		    { RP_ITL50, "itl_p50_ms", false },   { RP_ITL99, "itl_p99_ms", false },
		    { RP_TPOT50, "tpot_p50_ms", false }, { RP_E2E50, "e2e_p50_ms", false } };
	const json_t *ci = json_object_get(s, "ci95");
	if (!json_is_object(ci))
		return;
	for (size_t i = 0; i < sizeof(cis) / sizeof(cis[0]); i++) {
		double h = cl_results_num(json_object_get(ci, cis[i].figure), "half");
		char *cell = row->cell[cis[i].col];
		size_t len = strlen(cell);
		if (!isfinite(h) || strcmp(cell, "-") == 0 || len + 24 >= RP_CELL_MAX)
			continue;
		char hb[32];
		if (cis[i].rate)
			cli_rp_fmt_rate(hb, sizeof(hb), h);
		else
			cli_rp_fmt_ms(hb, sizeof(hb), h);
		snprintf(cell + len, RP_CELL_MAX - len, " \xc2\xb1%s", hb);
	}
}

void cli_rp_stage_row(const json_t *s, struct cli_rp_row *row)
{
	static const struct {
		int col;
		const char *path;
	} ms[] = { { RP_E2E99, "latency_ms.e2e.p99" },   { RP_TTFT50, "latency_ms.ttft.p50" },
		   { RP_TTFT99, "latency_ms.ttft.p99" }, { RP_ITL50, "latency_ms.itl.p50" },
		   { RP_ITL99, "latency_ms.itl.p99" },   { RP_TPOT50, "latency_ms.tpot.p50" },
		   { RP_E2E50, "latency_ms.e2e.p50" },   { RP_TTFC50, "latency_ms.ttfc.p50" },
		   { RP_TTFC99, "latency_ms.ttfc.p99" } };
	memset(row, 0, sizeof(*row));
	snprintf(row->cell[RP_STAGE], RP_CELL_MAX, "%s", cl_results_str(s, "name", "-"));
	cli_rp_stage_load(s, row->cell[RP_LOAD], RP_CELL_MAX);
	const char *status = cl_results_str(s, "status", "-");
	bool bound = json_is_true(cl_results_get(s, "client.client_bound"));
	snprintf(row->cell[RP_STATUS], RP_CELL_MAX, "%s%s", status, bound ? " (client-bound)" : "");
	cli_rp_fmt_rate(row->cell[RP_RPS], RP_CELL_MAX,
			cl_results_num(s, "throughput.requests_per_s"));
	cli_rp_fmt_rate(row->cell[RP_OTPS], RP_CELL_MAX,
			cl_results_num(s, "throughput.output_tokens_per_s"));
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
		cli_rp_fmt_ms(row->cell[ms[i].col], RP_CELL_MAX, cl_results_num(s, ms[i].path));
	/* What a reader of the answer sees: output tokens less the reasoning. */
	cli_rp_fmt_rate(
	    row->cell[RP_CONTENT_TPS], RP_CELL_MAX,
	    (cl_results_num(s, "tokens.output") - cl_results_num(s, "tokens.reasoning")) /
		cl_results_num(s, "duration_s"));
	add_ci(s, row);
	/* The share of prompt tokens the server took from its cache: a high one means TTFT
	 * measured the cache, not a new user's prefill. */
	double cached = cl_results_num(s, "tokens.cached_prompt_ratio");
	if (isfinite(cached))
		cli_rp_fmt_pct(row->cell[RP_CACHED], RP_CELL_MAX, cached * 100);
	else
		cli_rp_fmt(row->cell[RP_CACHED], RP_CELL_MAX, NAN, 0);
	cli_rp_fmt_rate(row->cell[RP_INPUTS_PS], RP_CELL_MAX,
			cl_results_num(s, "embeddings.inputs_per_s"));
	/* Input tokens: an embedding's, or the tokens a rerank or score read. */
	bool scoring = json_is_object(json_object_get(s, "rerank"));
	cli_rp_fmt_rate(
	    row->cell[RP_INTOK_PS], RP_CELL_MAX,
	    cl_results_num(s, scoring ? "rerank.tokens_per_s" : "embeddings.input_tokens_per_s"));
	cli_rp_fmt_rate(row->cell[RP_DOCS_PS], RP_CELL_MAX,
			cl_results_num(s, "rerank.documents_per_s"));
	double errors = cl_results_num(s, "requests.errors_total");
	double rate = cl_results_num(s, "requests.error_rate");
	if (isfinite(errors) && errors > 0 && isfinite(rate))
		snprintf(row->cell[RP_ERRORS], RP_CELL_MAX, "%.0f (%s)", errors,
			 cli_rp_fmt_pct((char[32]){ 0 }, 32, rate * 100));
	else
		cli_rp_fmt_count(row->cell[RP_ERRORS], RP_CELL_MAX, errors);
	double no_content = cl_results_num(s, "requests.no_content");
	double completed = cl_results_num(s, "requests.completed");
	if (isfinite(no_content) && no_content > 0 && completed > 0)
		snprintf(row->cell[RP_NOCONTENT], RP_CELL_MAX, "%.0f (%s)", no_content,
			 cli_rp_fmt_pct((char[32]){ 0 }, 32, 100 * no_content / completed));
	else
		cli_rp_fmt_count(row->cell[RP_NOCONTENT], RP_CELL_MAX, no_content);
	cli_rp_fmt_count(row->cell[RP_TOOL_CALLS], RP_CELL_MAX,
			 cl_results_num(s, "requests.tool_calls"));
	cli_rp_fmt_rate(row->cell[RP_AUDIO_PS], RP_CELL_MAX,
			cl_results_num(s, "audio.seconds_per_s"));
	cli_rp_fmt(row->cell[RP_RTF50], RP_CELL_MAX, cl_results_num(s, "audio.rtf.p50"), 3);
	cli_rp_fmt(row->cell[RP_RTF99], RP_CELL_MAX, cl_results_num(s, "audio.rtf.p99"), 3);
	/* Abandoned requests, with their share of those started. */
	double cancelled = cl_results_num(s, "requests.cancelled");
	double started = cl_results_num(s, "requests.started");
	if (isfinite(cancelled) && cancelled > 0 && started > 0)
		snprintf(row->cell[RP_CANCELLED], RP_CELL_MAX, "%.0f (%s)", cancelled,
			 cli_rp_fmt_pct((char[32]){ 0 }, 32, 100 * cancelled / started));
	else
		cli_rp_fmt_count(row->cell[RP_CANCELLED], RP_CELL_MAX, cancelled);
}

const char *const cli_rp_probe_cols[RP_PROBE_COLS] = { "probe",      "level",     "result",
						       "req/s",      "out tok/s", "TTFT p99 ms",
						       "ITL p99 ms", "breached" };
const bool cli_rp_probe_numeric[RP_PROBE_COLS] = {
	false, true, false, true, true, true, true, false
};

void cli_rp_probe_row(const json_t *p, char cell[RP_PROBE_COLS][RP_CELL_MAX])
{
	snprintf(cell[0], RP_CELL_MAX, "%s", cl_results_str(p, "stage", "-"));
	cli_rp_fmt_count(cell[1], RP_CELL_MAX, cl_results_num(p, "level"));
	if (!json_is_true(json_object_get(p, "trusted")))
		snprintf(cell[2], RP_CELL_MAX, "not trusted");
	else
		snprintf(cell[2], RP_CELL_MAX, "%s",
			 json_is_true(json_object_get(p, "pass")) ? "meets SLOs" : "breaks SLOs");
	cli_rp_fmt_rate(cell[3], RP_CELL_MAX, cl_results_num(p, "requests_per_s"));
	cli_rp_fmt_rate(cell[4], RP_CELL_MAX, cl_results_num(p, "output_tokens_per_s"));
	cli_rp_fmt_ms(cell[5], RP_CELL_MAX, cl_results_num(p, "ttft_p99_ms"));
	cli_rp_fmt_ms(cell[6], RP_CELL_MAX, cl_results_num(p, "itl_p99_ms"));
	size_t o = 0, i;
	const json_t *b;
	cell[7][0] = '\0';
	json_array_foreach(json_object_get(p, "breaches"), i, b)
	{
		if (o < RP_CELL_MAX)
			o += (size_t)snprintf(cell[7] + o, RP_CELL_MAX - o, "%s%s", i ? ", " : "",
					      json_is_string(b) ? json_string_value(b) : "?");
	}
	if (!cell[7][0])
		snprintf(cell[7], RP_CELL_MAX, "-");
}

const char *const cli_rp_server_cols[RP_SERVER_COLS] = {
	"stage",
	"source",
	"running mean/max",
	"waiting mean/max",
	"KV usage max",
	"prefix hit rate",
	"preemptions",
	"server TTFT p50/p99 ms",
	"queue p99 ms",
	"client cached prompt",
	"aborted / client cancelled",
};
const bool cli_rp_server_numeric[RP_SERVER_COLS] = { false, false, true, true, true, true,
						     true,  true,  true, true, true };

static void pair(char *cell, const json_t *o, const char *a, const char *b, int decimals)
{
	char x[32], y[32];
	double u = cl_results_num(o, a), v = cl_results_num(o, b);
	if (isnan(u) && isnan(v))
		snprintf(cell, RP_CELL_MAX, "-");
	else
		snprintf(cell, RP_CELL_MAX, "%s / %s", cli_rp_fmt(x, sizeof(x), u, decimals),
			 cli_rp_fmt(y, sizeof(y), v, decimals));
}

static void pct_cell(char *cell, double v)
{
	if (isnan(v))
		snprintf(cell, RP_CELL_MAX, "-");
	else
		snprintf(cell, RP_CELL_MAX, "%.0f %%", v * 100);
}

bool cli_rp_server_row(const json_t *st, char cell[RP_SERVER_COLS][RP_CELL_MAX])
{
	const json_t *s = json_object_get(st, "server");
	if (!json_is_object(s))
		return false;
	snprintf(cell[0], RP_CELL_MAX, "%s", cl_results_str(st, "name", "-"));
	snprintf(cell[1], RP_CELL_MAX, "%s", cl_results_str(s, "source", "unavailable"));
	pair(cell[2], s, "requests_running.mean", "requests_running.max", 1);
	pair(cell[3], s, "requests_waiting.mean", "requests_waiting.max", 1);
	pct_cell(cell[4], cl_results_num(s, "kv_cache_usage.max"));
	pct_cell(cell[5], cl_results_num(s, "prefix_cache_hit_rate"));
	cli_rp_fmt(cell[6], RP_CELL_MAX, cl_results_num(s, "preemptions"), 0);
	pair(cell[7], s, "ttft_ms.p50", "ttft_ms.p99", 1);
	cli_rp_fmt(cell[8], RP_CELL_MAX, cl_results_num(s, "queue_time_ms.p99"), 1);
	pct_cell(cell[9], cl_results_num(st, "tokens.cached_prompt_ratio"));
	/* The requests the server aborted for a client gone away, beside those chatload
	 * abandoned (workload.cancel): "-" for a figure not known. */
	char x[32], y[32];
	double ab = cl_results_num(s, "aborted_requests");
	double cancelled = cl_results_num(st, "requests.cancelled");
	snprintf(cell[10], RP_CELL_MAX, "%s / %s", cli_rp_fmt(x, sizeof(x), ab, 0),
		 cli_rp_fmt(y, sizeof(y), isnan(cancelled) ? 0 : cancelled, 0));
	return true;
}

/* Appends to a line being built; past its size the rest is cut. */
static void addf(char *buf, size_t n, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void addf(char *buf, size_t n, size_t *o, const char *fmt, ...)
{
	if (*o >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *o, n - *o, fmt, ap);
	va_end(ap);
	*o = k < 0 ? n : *o + (size_t)k;
}

void cli_rp_server_notes(const json_t *doc, void (*emit)(void *arg, const char *line), void *arg)
{
	char line[1024];
	const json_t *sm = json_object_get(doc, "server_metrics");
	const char *err = cl_results_str(sm, "error", NULL);
	if (json_is_false(json_object_get(sm, "available")) && err) {
		snprintf(line, sizeof(line), "the server's metrics at '%s' could not be read: %s",
			 cl_results_str(sm, "url", "-"), err);
		emit(arg, line);
	}
	size_t i, j;
	const json_t *st, *v;
	json_array_foreach(json_object_get(sm, "extra"), i, v)
	{
		const char *e = cl_results_str(v, "error", NULL);
		if (!json_is_object(v) || !e)
			continue;
		snprintf(line, sizeof(line), "the exporter at '%s' %s: %s",
			 cl_results_str(v, "url", "-"),
			 json_is_false(json_object_get(v, "available")) ? "could not be read"
									: "was read in part",
			 e);
		emit(arg, line);
	}
	json_array_foreach(json_object_get(doc, "stages"), i, st)
	{
		const json_t *srv = json_object_get(st, "server");
		const json_t *at =
		    json_object_get(json_object_get(srv, "timeline"), "restarts_at_s");
		size_t o = 0;
		json_array_foreach(at, j, v)
		{
			if (j == 0)
				addf(line, sizeof(line), &o, "server restart in stage '%s' at",
				     cl_results_str(st, "name", "-"));
			addf(line, sizeof(line), &o, "%s t=%.1f s", j ? "," : "",
			     json_number_value(v));
		}
		if (o) {
			addf(line, sizeof(line), &o,
			     " (its counters went on from the new process' values)");
			emit(arg, line);
		}
		o = 0;
		if (isfinite(cl_results_num(srv, "gpu_utilization.mean")) ||
		    isfinite(cl_results_num(srv, "gpu_memory_used_bytes.max"))) {
			char a[32], b[32], c[32];
			snprintf(
			    line, sizeof(line),
			    "GPU in stage '%s': utilisation mean %s, max %s; memory used max "
			    "%s GiB",
			    cl_results_str(st, "name", "-"),
			    cli_rp_fmt(a, sizeof(a), cl_results_num(srv, "gpu_utilization.mean"),
				       2),
			    cli_rp_fmt(b, sizeof(b), cl_results_num(srv, "gpu_utilization.max"), 2),
			    cli_rp_fmt(c, sizeof(c),
				       cl_results_num(srv, "gpu_memory_used_bytes.max") /
					   1073741824.0,
				       2));
			emit(arg, line);
		}
		/* The series the scenario named; the rest are in results.json only. */
		json_array_foreach(json_object_get(srv, "series"), j, v)
		{
			char a[32], b[32];
			if (!json_is_true(json_object_get(v, "named")))
				continue;
			const char *labels = cl_results_str(v, "labels", "");
			addf(line, sizeof(line), &o, "%s%s%s%s%s ", o ? "; " : "",
			     cl_results_str(v, "name", "?"), *labels ? "{" : "", labels,
			     *labels ? "}" : "");
			if (strcmp(cl_results_str(v, "kind", ""), "counter") == 0)
				addf(line, sizeof(line), &o, "increase %s (%s/s)",
				     cli_rp_fmt(a, sizeof(a), cl_results_num(v, "increase"), 0),
				     cli_rp_fmt(b, sizeof(b), cl_results_num(v, "per_s"), 2));
			else
				addf(line, sizeof(line), &o, "mean %s, max %s",
				     cli_rp_fmt(a, sizeof(a), cl_results_num(v, "mean"), 3),
				     cli_rp_fmt(b, sizeof(b), cl_results_num(v, "max"), 3));
		}
		if (o) {
			char full[1200];
			snprintf(full, sizeof(full), "series in stage '%s': %s",
				 cl_results_str(st, "name", "-"), line);
			emit(arg, full);
		}
	}
	const json_t *nf = json_object_get(json_object_get(sm, "series"), "not_found");
	size_t o = 0;
	json_array_foreach(nf, j, v)
	{
		addf(line, sizeof(line), &o, "%s%s",
		     j ? ", " : "series names that matched no series: ",
		     json_is_string(v) ? json_string_value(v) : "?");
	}
	if (o)
		emit(arg, line);
}

static bool images_line(const json_t *stage, char *buf, size_t n)
{
	const json_t *im = json_object_get(stage, "images");
	if (!json_is_object(im))
		return false;
	char with[32], text[32], each[32];
	snprintf(buf, n,
		 "stage '%s': %.0f image%s per request, %s prompt tokens per request with them "
		 "against %s for the text alone (estimated): %s per image",
		 cl_results_str(stage, "name", "-"), cl_results_num(im, "per_request"),
		 cl_results_num(im, "per_request") == 1 ? "" : "s",
		 cli_rp_fmt(with, sizeof(with), cl_results_num(im, "prompt_tokens_mean"), 1),
		 cli_rp_fmt(text, sizeof(text),
			    cl_results_num(im, "text_prompt_tokens_estimated_mean"), 1),
		 cli_rp_fmt(each, sizeof(each), cl_results_num(im, "prompt_tokens_per_image"), 1));
	return true;
}

size_t cli_rp_images_lines(const json_t *stages, void (*emit)(void *arg, const char *line),
			   void *arg)
{
	size_t i, n = 0;
	const json_t *st;
	json_array_foreach(stages, i, st)
	{
		char line[512];
		if (!images_line(st, line, sizeof(line)))
			continue;
		n++;
		if (emit)
			emit(arg, line);
	}
	return n;
}
