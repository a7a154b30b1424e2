/* Trace replay: a JSONL trace (Mooncake's or Azure's LLM inference trace shape) becomes one
 * body per record, a synthetic prompt of its input length asking for its output length, with
 * its start offset divided by the speedup; and replay stages get the trace's span and rate. */
#include "coordinator/workload/internal.h"

#include "chatload/rng.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Mooncake's KV-cache block: each hash id stands for this many tokens of the prompt. */
#define MOONCAKE_BLOCK_TOKENS 512
#define MAX_OFFSET_US         (100LL * 86400 * 1000000) /* a trace longer than 100 days: no */

/* "2023-11-16 18:15:46.6805900" (Azure's TIMESTAMP) as µs since an arbitrary epoch; -1 when
 * the text is not one. */
static int64_t parse_datetime(const char *s)
{
	struct tm tm = { 0 };
	int n = 0;
	if (sscanf(s, "%4d-%2d-%2d%*[ T]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	int64_t us = (int64_t)t * 1000000;
	const char *p = s + n;
	if (*p == '.') {
		int64_t scale = 100000;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			us += (*p - '0') * scale;
	}
	while (*p == ' ' || *p == 'Z')
		p++;
	return *p ? -1 : us;
}

/* The record's timestamp in µs, input and output lengths; CL_EPARSE with err at line. */
static int take_fields(json_t *rec, enum cl_trace_format *fmt, const char *file, int line,
		       int64_t *ts_us, uint32_t *in, uint32_t *out, struct cl_err *err)
{
	if (*fmt == CL_TRACE_AUTO) {
		if (json_object_get(rec, "timestamp") && json_object_get(rec, "input_length"))
			*fmt = CL_TRACE_MOONCAKE;
		else if (json_object_get(rec, "TIMESTAMP") && json_object_get(rec, "ContextTokens"))
			*fmt = CL_TRACE_AZURE;
		else
			return cl_err_setpos(
			    err, CL_EPARSE, file, line, 1,
			    "record is neither a Mooncake one ({\"timestamp\", \"input_length\", "
			    "\"output_length\"}) nor an Azure one ({\"TIMESTAMP\", "
			    "\"ContextTokens\", \"GeneratedTokens\"})");
	}
	bool moon = *fmt == CL_TRACE_MOONCAKE;
	const char *kts = moon ? "timestamp" : "TIMESTAMP";
	const char *kin = moon ? "input_length" : "ContextTokens";
	const char *kout = moon ? "output_length" : "GeneratedTokens";
	json_t *ts = json_object_get(rec, kts);
	if (json_is_number(ts)) {
		/* Mooncake: milliseconds from the trace's start; Azure as a number: seconds. */
		double v = json_number_value(ts) * (moon ? 1e3 : 1e6);
		if (!isfinite(v) || v < 0 || v > 9e18)
			return cl_err_setpos(err, CL_EPARSE, file, line, 1, "'%s' is out of range",
					     kts);
		*ts_us = (int64_t)v;
	} else if (moon || !json_is_string(ts) ||
		   (*ts_us = parse_datetime(json_string_value(ts))) < 0) {
		return cl_err_setpos(
		    err, CL_EPARSE, file, line, 1,
		    moon ? "'timestamp' must be a number of milliseconds"
			 : "'TIMESTAMP' must be a date and time "
			   "(\"2023-11-16 18:15:46.6805900\") or a number of seconds");
	}
	const char *keys[2] = { kin, kout };
	uint32_t *vals[2] = { in, out };
	for (int i = 0; i < 2; i++) {
		json_t *v = json_object_get(rec, keys[i]);
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > (i ? 10000000 : CL_WORKLOAD_MAX_SYNTH_TOKENS))
			return cl_err_setpos(err, CL_EPARSE, file, line, 1,
					     "'%s' must be an integer from 1 to %u", keys[i],
					     i ? 10000000u : CL_WORKLOAD_MAX_SYNTH_TOKENS);
		*vals[i] = (uint32_t)json_integer_value(v);
	}
	return 0;
}

/*
 * The prompt of record i: with Mooncake's hash_ids, one block of up to 512 tokens per id, its
 * words seeded by the id, so records sharing leading ids share that prefix (as the trace's
 * requests shared KV-cache blocks); then, or without ids, words of the record's own.
 */
static int make_prompt(const struct render_ctx *c, struct cl_buf *text, json_t *rec, uint64_t seed,
		       size_t i, uint32_t tokens)
{
	json_t *ids = json_object_get(rec, "hash_ids");
	uint32_t left = cli_workload_scaled(c, tokens);
	uint32_t block = cli_workload_scaled(c, MOONCAKE_BLOCK_TOKENS);
	size_t k;
	json_t *id;
	cl_buf_reset(text);
	if (json_is_array(ids)) {
		json_array_foreach(ids, k, id)
		{
			if (!left || !json_is_integer(id))
				break;
			uint32_t n = left < block ? left : block;
			uint64_t rng =
			    seed ^ (0x626c6f636bULL * (uint64_t)(json_integer_value(id) + 1));
			char head[32];
			snprintf(head, sizeof(head), "%s[%lld]", text->len ? " " : "",
				 (long long)json_integer_value(id));
			size_t before = text->len;
			int rc = cli_workload_words(text, head, n, &rng);
			if (rc)
				return rc;
			uint32_t got =
			    cl_workload_tokens_estimate(text->data + before, text->len - before);
			left = got >= left ? 0 : left - got;
		}
	}
	if (left) {
		uint64_t rng = seed ^ (0x7472616365ULL + i);
		char head[32];
		snprintf(head, sizeof(head), "%s%zu:", text->len ? " " : "", i + 1);
		return cli_workload_words(text, head, left, &rng);
	}
	return 0;
}

int cli_workload_read_trace(struct render_ctx *c, const struct cl_scn_workload *w,
			    struct cl_err *err)
{
	const char *file = w->trace;
	enum cl_trace_format fmt = w->trace_format;
	double speedup = w->trace_speedup > 0 ? w->trace_speedup : 1;
	struct line_reader *r = calloc(1, sizeof(*r));
	struct cl_buf text;
	int64_t t0 = -1, prev = -1;
	int rc = 0;
	cl_buf_init(&text, (size_t)CL_WORKLOAD_MAX_SYNTH_TOKENS * CL_WORKLOAD_CHARS_PER_TOKEN + 64);
	if (!r)
		return cl_err_set(err, CL_ENOMEM, "out of memory reading trace '%s'", file);
	cl_buf_init(&r->line, CL_WORKLOAD_MAX_LINE_BYTES);
	if (!(r->f = fopen(file, "rb"))) {
		rc = cl_err_set(err, CL_EIO, "cannot open trace '%s': %s", file, strerror(errno));
		goto out;
	}
	for (;;) {
		int got = cli_workload_lines_next(r);
		if (got == 0)
			break;
		if (got < 0) {
			rc = cl_err_setpos(err, got, file, r->lineno, 0, "cannot read trace: %s",
					   got == CL_EIO ? strerror(errno) : cl_strerror(got));
			goto out;
		}
		const char *line = r->line.data;
		size_t len = r->line.len, sp = 0;
		while (sp < len && (line[sp] == ' ' || line[sp] == '\t'))
			sp++;
		if (sp == len)
			continue;
		json_error_t jerr;
		json_t *rec = json_loadb(line, len, 0, &jerr);
		if (!rec || !json_is_object(rec)) {
			rc = rec ? cl_err_setpos(err, CL_EPARSE, file, r->lineno, 1,
						 "record is not a JSON object")
				 : cl_err_setpos(err, CL_EPARSE, file, r->lineno, jerr.column,
						 "invalid JSON: %s", jerr.text);
			json_decref(rec);
			goto out;
		}
		int64_t ts = 0;
		uint32_t in = 0, out_tokens = 0;
		rc = take_fields(rec, &fmt, file, r->lineno, &ts, &in, &out_tokens, err);
		if (!rc && prev >= 0 && ts < prev)
			rc =
			    cl_err_setpos(err, CL_EPARSE, file, r->lineno, 1,
					  "timestamp goes back in time (records must be in order)");
		if (!rc && t0 >= 0 && ts - t0 > MAX_OFFSET_US)
			rc = cl_err_setpos(err, CL_EPARSE, file, r->lineno, 1,
					   "the trace is longer than 100 days");
		if (!rc && make_prompt(c, &text, rec, w->seed, c->n, in) != 0)
			rc = cl_err_set(err, CL_ENOMEM, "out of memory building trace prompts");
		json_decref(rec);
		if (!rc) {
			if (t0 < 0)
				t0 = ts;
			prev = ts;
			c->stats->records++;
			rc = cli_workload_push_prompt(c, c->system_prompt, text.data, text.len,
						      out_tokens, err);
		}
		if (rc)
			goto out;
		c->bodies[c->n - 1].at_us = (int64_t)llround((double)(ts - t0) / speedup);
	}
	if (c->n == 0)
		rc = cl_err_set(err, CL_EINVAL, "trace '%s' has no records", file);
	else
		c->stats->trace_span_us = c->bodies[c->n - 1].at_us;
out:
	if (r->f)
		fclose(r->f);
	cl_buf_free(&r->line);
	free(r);
	cl_buf_free(&text);
	return rc;
}

void cl_workload_trace_fill_stages(struct cl_scenario *s, const struct cl_workload_stats *st)
{
	if (s->workload.kind != CL_WORKLOAD_TRACE || !st->bodies)
		return;
	/* The window ends just after the last start; the mean rate is what the trace offers. */
	int64_t span = st->trace_span_us + 1000;
	double rate = (double)st->bodies / ((double)span / 1e6);
	for (size_t i = 0; i < s->n_stages; i++) {
		struct cl_scn_stage *stage = &s->stages[i];
		if (!stage->replay)
			continue;
		if (!stage->duration_us)
			stage->duration_us = span;
		stage->rate_per_s = rate < 1e6 ? rate : 1e6;
	}
}
