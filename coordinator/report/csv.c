/* results.csv: one row per stage (then one per request class of it) with stable column names
 * (docs/results.md lists them); numbers as in results.json, empty cells for "no data". */
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"

#include "chatload/err.h"

#include <math.h>
#include <string.h>

enum kind { K_STR, K_NUM, K_BOOL, K_SLO };

struct column {
	const char *name;
	const char *path;
	enum kind kind;
};

#define LAT(m)                                                                                     \
	{ m "_mean_ms", "latency_ms." m ".mean", K_NUM },                                          \
	    { m "_p50_ms", "latency_ms." m ".p50", K_NUM },                                        \
	    { m "_p90_ms", "latency_ms." m ".p90", K_NUM },                                        \
	    { m "_p99_ms", "latency_ms." m ".p99", K_NUM },                                        \
	{                                                                                          \
		m "_max_ms", "latency_ms." m ".max", K_NUM                                         \
	}

static const struct column columns[] = {
	{ "stage_index", "index", K_NUM },
	{ "stage", "name", K_STR },
	{ "status", "status", K_STR },
	{ "mode", "mode", K_STR },
	{ "concurrency", "concurrency", K_NUM },
	{ "rate_per_s", "rate", K_NUM },
	{ "duration_s", "duration_s", K_NUM },
	{ "started", "requests.started", K_NUM },
	{ "completed", "requests.completed", K_NUM },
	{ "cut", "requests.cut", K_NUM },
	{ "cancelled", "requests.cancelled", K_NUM },
	{ "errors", "requests.errors_total", K_NUM },
	{ "error_rate", "requests.error_rate", K_NUM },
	{ "err_connect", "requests.errors.connect", K_NUM },
	{ "err_tls", "requests.errors.tls", K_NUM },
	{ "err_http_4xx", "requests.errors.http_4xx", K_NUM },
	{ "err_http_429", "requests.errors.http_429", K_NUM },
	{ "err_http_5xx", "requests.errors.http_5xx", K_NUM },
	{ "err_timeout", "requests.errors.timeout", K_NUM },
	{ "err_stream_malformed", "requests.errors.stream_malformed", K_NUM },
	{ "err_stream_incomplete", "requests.errors.stream_incomplete", K_NUM },
	{ "err_stream_error", "requests.errors.stream_error", K_NUM },
	{ "err_empty_answer", "requests.errors.empty_answer", K_NUM },
	{ "err_other", "requests.errors.other", K_NUM },
	{ "requests_per_s", "throughput.requests_per_s", K_NUM },
	{ "output_tokens_per_s", "throughput.output_tokens_per_s", K_NUM },
	{ "total_tokens_per_s", "throughput.total_tokens_per_s", K_NUM },
	{ "goodput_requests_per_s", "throughput.goodput_requests_per_s", K_NUM },
	{ "prompt_tokens", "tokens.prompt", K_NUM },
	{ "output_tokens", "tokens.output", K_NUM },
	{ "reasoning_tokens", "tokens.reasoning", K_NUM },
	{ "token_source", "tokens.source", K_STR },
	{ "output_tokens_per_request_mean", "tokens.output_per_request.mean", K_NUM },
	{ "tokens_per_chunk_mean", "tokens_per_chunk.mean", K_NUM },
	LAT("ttft"),
	LAT("ttfc"),
	LAT("ttfb"),
	LAT("itl"),
	LAT("tpot"),
	LAT("e2e"),
	LAT("e2e_sched"),
	LAT("queue"),
	{ "client_bound", "client.client_bound", K_BOOL },
	{ "cpu_max_pct", "client.cpu_max_pct", K_NUM },
	{ "dispatch_lag_p99_ms", "client.dispatch_lag_p99_ms", K_NUM },
	{ "loop_lag_p99_ms", "client.loop_lag_p99_ms", K_NUM },
	{ "slo_pass", NULL, K_SLO },
	{ "no_content", "requests.no_content", K_NUM },
	{ "tool_calls", "requests.tool_calls", K_NUM },
	/* embeddings (workload.api); empty for the other APIs */
	{ "embedding_inputs", "embeddings.inputs", K_NUM },
	{ "embedding_inputs_per_s", "embeddings.inputs_per_s", K_NUM },
	{ "embedding_input_tokens_per_s", "embeddings.input_tokens_per_s", K_NUM },
	/* rerank and score (workload.api); empty for the other APIs */
	{ "rerank_queries", "rerank.queries", K_NUM },
	{ "rerank_documents", "rerank.documents", K_NUM },
	{ "rerank_tokens", "rerank.tokens", K_NUM },
	{ "rerank_documents_per_s", "rerank.documents_per_s", K_NUM },
	{ "rerank_tokens_per_s", "rerank.tokens_per_s", K_NUM },
	/* transcription (workload.api); empty for the other APIs */
	{ "audio_seconds", "audio.seconds", K_NUM },
	{ "audio_seconds_per_s", "audio.seconds_per_s", K_NUM },
	{ "rtf_p50", "audio.rtf.p50", K_NUM },
	{ "rtf_p99", "audio.rtf.p99", K_NUM },
	/* workload.classes: empty on a stage's row; a class's row has its name */
	{ "class", NULL, K_STR },
};

size_t cl_report_csv_n_columns(void)
{
	return sizeof(columns) / sizeof(columns[0]);
}

const char *cl_report_csv_column(size_t i)
{
	return i < cl_report_csv_n_columns() ? columns[i].name : NULL;
}

/* true / false for the SLO checks of this stage, empty when none applied. */
static void put_slo(const json_t *doc, const json_t *stage, FILE *out)
{
	const char *name = cl_results_str(stage, "name", NULL);
	int seen = 0, failed = 0;
	size_t i;
	const json_t *c;
	json_array_foreach(cl_results_get(doc, "verdict.checks"), i, c)
	{
		const char *s = cl_results_str(c, "stage", NULL);
		if (!name || !s || strcmp(s, name) != 0)
			continue;
		seen++;
		failed += !json_is_true(json_object_get(c, "pass"));
	}
	if (seen)
		fputs(failed ? "false" : "true", out);
}

static void put_num(const json_t *v, FILE *out)
{
	if (json_is_integer(v))
		fprintf(out, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v) && isfinite(json_real_value(v)))
		fprintf(out, "%.15g", json_real_value(v));
}

/* Whether a column's figure is one a class has of its own (stages[].classes[]). */
static bool class_figure(const char *path)
{
	static const char *const own[] = { "requests.", "throughput.", "tokens.", "latency_ms." };
	for (size_t i = 0; path && i < sizeof(own) / sizeof(own[0]); i++)
		if (strncmp(path, own[i], strlen(own[i])) == 0)
			return true;
	return false;
}

/* One row: stage s's, or with cls one of its classes' (the class's own figures, the stage's
 * settings, the class's own SLO verdict). */
static void put_row(const json_t *doc, const json_t *s, const json_t *cls, FILE *out)
{
	size_t n = cl_report_csv_n_columns();
	{
		for (size_t c = 0; c < n; c++) {
			const json_t *from = cls && class_figure(columns[c].path) ? cls : s;
			const json_t *v =
			    columns[c].path ? cl_results_get(from, columns[c].path) : NULL;
			if (!columns[c].path && columns[c].kind == K_STR)
				v = cls ? json_object_get(cls, "name") : NULL;
			if (cls && columns[c].kind == K_SLO) {
				if (json_array_size(json_object_get(cls, "checks")))
					fputs(json_is_true(json_object_get(cls, "pass")) ? "true"
											 : "false",
					      out);
				fputs(c + 1 < n ? "," : "\r\n", out);
				continue;
			}
			switch (columns[c].kind) {
			case K_STR:
				if (json_is_string(v))
					cli_rp_put_csv(out, json_string_value(v));
				break;
			case K_NUM:
				put_num(v, out);
				break;
			case K_BOOL:
				if (json_is_boolean(v))
					fputs(json_is_true(v) ? "true" : "false", out);
				break;
			case K_SLO:
				put_slo(doc, s, out);
				break;
			}
			fputs(c + 1 < n ? "," : "\r\n", out);
		}
	}
}

int cl_report_csv(const json_t *doc, FILE *out)
{
	size_t n = cl_report_csv_n_columns();
	for (size_t c = 0; c < n; c++)
		fprintf(out, "%s%s", columns[c].name, c + 1 < n ? "," : "\r\n");
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		put_row(doc, s, NULL, out);
		size_t k;
		const json_t *cls;
		json_array_foreach(json_object_get(s, "classes"), k, cls) put_row(doc, s, cls, out);
	}
	return ferror(out) ? CL_EIO : 0;
}
