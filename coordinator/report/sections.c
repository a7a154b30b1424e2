/* The detail tables every report format shows (latency distribution, where the time to the
 * first byte went, thinking models, tokens per request, errors by class, client health, agent
 * episodes, endpoints, client hosts), built once as cells so the terminal, report.md and
 * report.html say the same thing. */
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"
#include "coordinator/results/json_int.h"

#include "chatload/err.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

bool cli_rp_stage_marked(const json_t *s)
{
	/* A stage still running (the live page) is not a failure: it has no totals yet. */
	const char *status = cl_results_str(s, "status", "ok");
	return (strcmp(status, "ok") != 0 && strcmp(status, "running") != 0) ||
	       json_is_true(cl_results_get(s, "client.client_bound"));
}

const char *cli_rp_stage_mark(const json_t *s)
{
	if (!cli_rp_stage_marked(s))
		return NULL;
	const char *status = cl_results_str(s, "status", "ok");
	return strcmp(status, "ok") != 0 ? status : "client-bound";
}

static void heading(struct cli_rp_table *t, const char *title, const char *note, size_t n, ...)
{
	va_list ap;
	va_start(ap, n);
	t->title = title;
	t->note = note;
	t->n_cols = n;
	for (size_t i = 0; i < n; i++) { /* pairs: heading, numeric */
		t->col[i] = va_arg(ap, const char *);
		t->numeric[i] = va_arg(ap, int) != 0;
	}
	va_end(ap);
}

/* A new empty row, or NULL when out of memory. */
static char (*add_row(struct cli_rp_table *t, bool marked))[RP_CELL_MAX]
{
	if (t->n_rows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		void *c = realloc(t->cell, cap * sizeof(*t->cell));
		if (!c)
			return NULL;
		t->cell = c;
		bool *m = realloc(t->marked, cap * sizeof(*t->marked));
		if (!m)
			return NULL;
		t->marked = m;
		t->cap = cap;
	}
	memset(t->cell[t->n_rows], 0, sizeof(*t->cell));
	t->marked[t->n_rows] = marked;
	return t->cell[t->n_rows++];
}

/* The stage's name, with its status when it is not a normal measurement. */
static void stage_cell(char *buf, const json_t *s)
{
	const char *status = cl_results_str(s, "status", "-");
	bool bound = json_is_true(cl_results_get(s, "client.client_bound"));
	if (!cli_rp_stage_marked(s))
		snprintf(buf, RP_CELL_MAX, "%s", cl_results_str(s, "name", "-"));
	else
		snprintf(buf, RP_CELL_MAX, "%s (%s%s)", cl_results_str(s, "name", "-"),
			 strcmp(status, "ok") == 0 ? "" : status,
			 bound ? (strcmp(status, "ok") == 0 ? "client-bound" : ", client-bound")
			       : "");
}

static int latency(const json_t *stages, struct cli_rp_table *t)
{
	heading(t, "Latency distribution",
		"Per stage, in milliseconds: TTFT time to first token, TTFC time to first "
		"content (answer) token, ITL time between chunks, TPOT time per output token, "
		"E2E the whole request.",
		8, "stage", 0, "metric", 0, "mean", 1, "p50", 1, "p90", 1, "p95", 1, "p99", 1,
		"max", 1);
	static const char *const keys[] = { "ttft", "ttfc", "itl", "tpot", "e2e" };
	static const char *const names[] = { "TTFT", "TTFC", "ITL", "TPOT", "E2E" };
	static const char *const stats[] = { "mean", "p50", "p90", "p95", "p99", "max" };
	bool thinking = cli_rp_thinking(stages);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			if (k == 1 && !thinking)
				continue;
			const json_t *m = cl_results_get(json_object_get(s, "latency_ms"), keys[k]);
			if (!(cl_results_num(m, "count") > 0))
				continue;
			char(*r)[RP_CELL_MAX] = add_row(t, cli_rp_stage_marked(s));
			if (!r)
				return CL_ENOMEM;
			stage_cell(r[0], s);
			snprintf(r[1], RP_CELL_MAX, "%s", names[k]);
			for (size_t j = 0; j < 6; j++)
				cli_rp_fmt_ms(r[2 + j], RP_CELL_MAX, cl_results_num(m, stats[j]));
		}
	}
	return 0;
}

/* Where the time to the first byte went (stages[].timing): means, which add up where
 * percentiles would not. */
static int timing(const json_t *stages, struct cli_rp_table *t)
{
	heading(
	    t, "Where the time went",
	    "Per stage, means in milliseconds from libcurl's timers: DNS, connect, TLS and send "
	    "(a reused connection spends none on the first three), and TTFT split into the "
	    "client's connection time, the server's wait to its first byte, and first byte to "
	    "first token.",
	    11, "stage", 0, "requests", 1, "connections opened", 1, "DNS", 1, "connect", 1, "TLS",
	    1, "send", 1, "TTFT", 1, "connection", 1, "server wait", 1, "first byte to token", 1);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		const json_t *tm = json_object_get(s, "timing");
		if (!(cl_results_num(tm, "requests") > 0))
			continue;
		char(*r)[RP_CELL_MAX] = add_row(t, cli_rp_stage_marked(s));
		if (!r)
			return CL_ENOMEM;
		stage_cell(r[0], s);
		cli_rp_fmt_count(r[1], RP_CELL_MAX, cl_results_num(tm, "requests"));
		cli_rp_fmt_count(r[2], RP_CELL_MAX, cl_results_num(tm, "connections_opened"));
		static const char *const parts[] = { "dns_ms.mean",
						     "connect_ms.mean",
						     "tls_ms.mean",
						     "send_ms.mean",
						     "ttft_split.ttft_ms",
						     "ttft_split.connection_ms",
						     "ttft_split.server_wait_ms",
						     "ttft_split.after_first_byte_ms" };
		for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
			cli_rp_fmt_ms(r[3 + k], RP_CELL_MAX, cl_results_num(tm, parts[k]));
	}
	return 0;
}

/* Joules and money per token (stages[].energy and stages[].cost), for the stages that have
 * either. */
static int energy(const json_t *stages, struct cli_rp_table *t)
{
	heading(t, "Joules and money",
		"Per stage: the GPUs' mean power over the measured window (from dcgm-exporter's "
		"energy counter, else its power gauge), joules per output token and output tokens "
		"per joule, and with the scenario's cost: what a million output and input tokens "
		"cost at the stage's rate.",
		7, "stage", 0, "GPU power W", 1, "J per output token", 1, "output tokens per J", 1,
		"cost per hour", 1, "cost per M output tokens", 1, "cost per M input tokens", 1);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		const json_t *e = json_object_get(s, "energy"), *c = json_object_get(s, "cost");
		if (!json_is_object(e) && !json_is_object(c))
			continue;
		char(*r)[RP_CELL_MAX] = add_row(t, cli_rp_stage_marked(s));
		if (!r)
			return CL_ENOMEM;
		stage_cell(r[0], s);
		cli_rp_fmt(r[1], RP_CELL_MAX, cl_results_num(e, "power_w"), 1);
		cli_rp_fmt(r[2], RP_CELL_MAX, cl_results_num(e, "joules_per_output_token"), 4);
		cli_rp_fmt(r[3], RP_CELL_MAX, cl_results_num(e, "output_tokens_per_joule"), 3);
		cli_rp_fmt(r[4], RP_CELL_MAX, cl_results_num(c, "per_hour"), 2);
		cli_rp_fmt(r[5], RP_CELL_MAX, cl_results_num(c, "per_million_output_tokens"), 4);
		cli_rp_fmt(r[6], RP_CELL_MAX, cl_results_num(c, "per_million_input_tokens"), 4);
	}
	return 0;
}

static int thinking(const json_t *stages, struct cli_rp_table *t)
{
	heading(t, "Thinking model",
		"A thinking model streams reasoning before its answer: TTFT is the first token of "
		"either, TTFC the first answer token a user sees. Content tokens are output less "
		"reasoning; requests without content ended inside their reasoning.",
		9, "stage", 0, "TTFT p50 ms", 1, "TTFC p50 ms", 1, "TTFC p99 ms", 1,
		"reasoning tokens", 1, "content tokens", 1, "reasoning share", 1, "content tok/s",
		1, "no content", 1);
	if (!cli_rp_thinking(stages))
		return 0;
	bool any_no_content = false;
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		char(*r)[RP_CELL_MAX] = add_row(t, cli_rp_stage_marked(s));
		if (!r)
			return CL_ENOMEM;
		double out = cl_results_num(s, "tokens.output");
		double reasoning = cl_results_num(s, "tokens.reasoning");
		stage_cell(r[0], s);
		cli_rp_fmt_ms(r[1], RP_CELL_MAX, cl_results_num(s, "latency_ms.ttft.p50"));
		cli_rp_fmt_ms(r[2], RP_CELL_MAX, cl_results_num(s, "latency_ms.ttfc.p50"));
		cli_rp_fmt_ms(r[3], RP_CELL_MAX, cl_results_num(s, "latency_ms.ttfc.p99"));
		cli_rp_fmt_count(r[4], RP_CELL_MAX, reasoning);
		cli_rp_fmt_count(r[5], RP_CELL_MAX, out - reasoning);
		cli_rp_fmt_pct(r[6], RP_CELL_MAX, out > 0 ? 100 * reasoning / out : NAN);
		cli_rp_fmt_rate(r[7], RP_CELL_MAX,
				(out - reasoning) / cl_results_num(s, "duration_s"));
		cli_rp_fmt_count(r[8], RP_CELL_MAX, cl_results_num(s, "requests.no_content"));
		any_no_content |= cl_results_num(s, "requests.no_content") > 0;
	}
	/* Like the stage table, the column only when some request lacked content. */
	if (!any_no_content)
		t->n_cols--;
	return 0;
}

static int tokens(const json_t *stages, struct cli_rp_table *t)
{
	heading(t, "Tokens per request",
		"Per completed request: the prompt, the max_tokens asked for (requested) and the "
		"output tokens received; received/requested below 100% means the server stopped "
		"early.",
		10, "stage", 0, "prompt mean", 1, "requested mean", 1, "received mean", 1,
		"received p50", 1, "received p90", 1, "received max", 1, "received/requested", 1,
		"short requests", 1, "token source", 0);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		const json_t *tk = json_object_get(s, "tokens");
		if (!(cl_results_num(tk, "output_per_request.count") > 0))
			continue;
		char(*r)[RP_CELL_MAX] = add_row(t, cli_rp_stage_marked(s));
		if (!r)
			return CL_ENOMEM;
		stage_cell(r[0], s);
		cli_rp_fmt(r[1], RP_CELL_MAX, cl_results_num(tk, "prompt_per_request.mean"), 1);
		cli_rp_fmt(r[2], RP_CELL_MAX, cl_results_num(tk, "requested_per_request.mean"), 1);
		cli_rp_fmt(r[3], RP_CELL_MAX, cl_results_num(tk, "output_per_request.mean"), 1);
		cli_rp_fmt_count(r[4], RP_CELL_MAX, cl_results_num(tk, "output_per_request.p50"));
		cli_rp_fmt_count(r[5], RP_CELL_MAX, cl_results_num(tk, "output_per_request.p90"));
		cli_rp_fmt_count(r[6], RP_CELL_MAX, cl_results_num(tk, "output_per_request.max"));
		cli_rp_fmt_pct(r[7], RP_CELL_MAX, 100 * cl_results_num(tk, "received_ratio"));
		cli_rp_fmt_count(r[8], RP_CELL_MAX, cl_results_num(tk, "short_requests"));
		snprintf(r[9], RP_CELL_MAX, "%s", cl_results_str(tk, "source", "-"));
	}
	return 0;
}

static int errors(const json_t *stages, struct cli_rp_table *t)
{
	heading(t, "Errors by class",
		"Per stage and class (docs/results.md lists the classes); the share is of the "
		"stage's errors. Samples of the bodies are under Error samples.",
		4, "stage", 0, "class", 0, "errors", 1, "share", 1);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		double total = cl_results_num(s, "requests.errors_total");
		for (size_t k = 0; k < cli_rj_n_err_keys; k++) {
			double n = cl_results_num(cl_results_get(s, "requests.errors"),
						  cli_rj_err_keys[k]);
			if (!(n > 0))
				continue;
			char(*r)[RP_CELL_MAX] = add_row(t, cli_rp_stage_marked(s));
			if (!r)
				return CL_ENOMEM;
			stage_cell(r[0], s);
			snprintf(r[1], RP_CELL_MAX, "%s", cli_rj_err_keys[k]);
			cli_rp_fmt_count(r[2], RP_CELL_MAX, n);
			cli_rp_fmt_pct(r[3], RP_CELL_MAX, total > 0 ? 100 * n / total : NAN);
		}
	}
	return 0;
}

static void join_reasons(char *buf, const json_t *reasons)
{
	size_t o = 0, i;
	const json_t *r;
	buf[0] = '\0';
	json_array_foreach(reasons, i, r)
	{
		if (o < RP_CELL_MAX)
			o += (size_t)snprintf(buf + o, RP_CELL_MAX - o, "%s%s", i ? ", " : "",
					      json_is_string(r) ? json_string_value(r) : "?");
	}
	if (!buf[0])
		snprintf(buf, RP_CELL_MAX, "-");
}

static int client(const json_t *stages, struct cli_rp_table *t)
{
	heading(t, "Client health",
		"Is the load generator the bottleneck? A stage is client-bound when the busiest "
		"agent used over 85% of its CPU, dispatch or loop lag p99 passed 50 ms, or an "
		"agent or the coordinator stalled; its numbers then describe the client.",
		9, "stage", 0, "client-bound", 0, "why", 0, "agent CPU max %", 1, "of capacity %",
		1, "CPU-bound intervals", 1, "loop lag p99 ms", 1, "dispatch lag p99 ms", 1,
		"stalls", 1);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		const json_t *c = json_object_get(s, "client");
		if (!json_is_object(c))
			continue;
		char(*r)[RP_CELL_MAX] = add_row(t, cli_rp_stage_marked(s));
		if (!r)
			return CL_ENOMEM;
		stage_cell(r[0], s);
		snprintf(r[1], RP_CELL_MAX, "%s",
			 json_is_true(json_object_get(c, "client_bound")) ? "YES" : "no");
		join_reasons(r[2], json_object_get(c, "reasons"));
		cli_rp_fmt(r[3], RP_CELL_MAX, cl_results_num(c, "cpu_max_pct"), 1);
		cli_rp_fmt(r[4], RP_CELL_MAX, cl_results_num(c, "cpu_capacity_pct"), 0);
		cli_rp_fmt_count(r[5], RP_CELL_MAX, cl_results_num(c, "cpu_bound_intervals"));
		cli_rp_fmt_ms(r[6], RP_CELL_MAX, cl_results_num(c, "loop_lag_p99_ms"));
		cli_rp_fmt_ms(r[7], RP_CELL_MAX, cl_results_num(c, "dispatch_lag_p99_ms"));
		cli_rp_fmt_count(r[8], RP_CELL_MAX,
				 (double)json_array_size(json_object_get(c, "stalls")) +
				     fmax(0, cl_results_num(c, "stalls_unlisted")));
	}
	return 0;
}

static int episodes(const json_t *doc, struct cli_rp_table *t)
{
	heading(t, "Agent troubles",
		"Per agent: each time it could not run (stall), went silent (partition) or was "
		"lost, in seconds from its stage's start.",
		6, "agent", 0, "stage", 0, "cause", 0, "at s", 1, "length s", 1, "seen by", 0);
	size_t i;
	const json_t *a;
	json_array_foreach(json_object_get(doc, "agents"), i, a)
	{
		size_t k;
		const json_t *e;
		json_array_foreach(json_object_get(a, "episodes"), k, e)
		{
			char(*r)[RP_CELL_MAX] = add_row(t, true);
			if (!r)
				return CL_ENOMEM;
			char id[32];
			snprintf(r[0], RP_CELL_MAX, "%s (%s)",
				 cli_rp_fmt_count(id, sizeof(id), cl_results_num(a, "id")),
				 cl_results_str(a, "host", "-"));
			snprintf(r[1], RP_CELL_MAX, "%s", cl_results_str(e, "stage", "-"));
			snprintf(r[2], RP_CELL_MAX, "%s", cl_results_str(e, "cause", "-"));
			cli_rp_fmt(r[3], RP_CELL_MAX, cl_results_num(e, "at_s"), 2);
			cli_rp_fmt(r[4], RP_CELL_MAX, cl_results_num(e, "length_s"), 2);
			join_reasons(r[5], json_object_get(e, "seen_by"));
		}
	}
	return 0;
}

/* A millisecond figure of an endpoint, or "-" when it has none. */
static void ms_cell(char *buf, const json_t *ep, const char *path)
{
	const json_t *v = cl_results_get(ep, path);
	cli_rp_fmt(buf, RP_CELL_MAX, json_is_number(v) ? json_number_value(v) : NAN, 1);
}

/* Several endpoints: each one's share of each stage, so a slow or failing replica shows
 * beside the others; its errors are told by class. */
static int endpoints(const json_t *stages, struct cli_rp_table *t)
{
	heading(t, "Per endpoint",
		"Each endpoint of target.urls, per stage: its requests and errors (by class), "
		"output tokens/s, TTFT and ITL from its own histograms merged across agents. "
		"The stage's figures above are all of them together.",
		11, "stage", 0, "endpoint", 0, "started", 1, "completed", 1, "errors", 0,
		"out tok/s", 1, "TTFT p50 ms", 1, "TTFT p99 ms", 1, "ITL p50 ms", 1, "ITL p99 ms",
		1, "share %", 1);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		const json_t *eps = json_object_get(s, "endpoints");
		double all = cl_results_num(s, "requests.started");
		size_t k;
		const json_t *ep;
		json_array_foreach(eps, k, ep)
		{
			double errs = cl_results_num(ep, "errors_total");
			char(*r)[RP_CELL_MAX] = add_row(t, cli_rp_stage_marked(s) || errs > 0);
			if (!r)
				return CL_ENOMEM;
			stage_cell(r[0], s);
			snprintf(r[1], RP_CELL_MAX, "%s", cl_results_str(ep, "url", "-"));
			cli_rp_fmt_count(r[2], RP_CELL_MAX, cl_results_num(ep, "started"));
			cli_rp_fmt_count(r[3], RP_CELL_MAX, cl_results_num(ep, "completed"));
			size_t at =
			    (size_t)snprintf(r[4], RP_CELL_MAX, "%.0f", errs > 0 ? errs : 0);
			const char *sep = " (";
			for (size_t c = 0; c < cli_rj_n_err_keys && at < RP_CELL_MAX; c++) {
				double n = cl_results_num(cl_results_get(ep, "errors"),
							  cli_rj_err_keys[c]);
				if (!(n > 0))
					continue;
				at += (size_t)snprintf(r[4] + at, RP_CELL_MAX - at, "%s%s %.0f",
						       sep, cli_rj_err_keys[c], n);
				sep = ", ";
			}
			if (*sep == ',' && at < RP_CELL_MAX)
				snprintf(r[4] + at, RP_CELL_MAX - at, ")");
			cli_rp_fmt(r[5], RP_CELL_MAX, cl_results_num(ep, "output_tokens_per_s"), 1);
			ms_cell(r[6], ep, "ttft_ms.p50");
			ms_cell(r[7], ep, "ttft_ms.p99");
			ms_cell(r[8], ep, "itl_ms.p50");
			ms_cell(r[9], ep, "itl_ms.p99");
			double started = cl_results_num(ep, "started");
			cli_rp_fmt(r[10], RP_CELL_MAX, all > 0 ? 100 * started / all : NAN, 1);
		}
	}
	return 0;
}

/* Request classes: each class's share of each stage, with its own figures and its own SLO
 * verdict, so an interactive class's TTFT is not hidden by a batch class beside it. */
static int classes(const json_t *stages, struct cli_rp_table *t)
{
	heading(t, "Per class",
		"Each class of workload.classes, per stage: its model and priority, its requests "
		"and errors, output tokens/s, TTFT, ITL and E2E from its own histograms merged "
		"across agents, and the verdict of its own SLOs (a class's breach fails the run).",
		11, "stage", 0, "class", 0, "model", 0, "priority", 1, "completed", 1, "errors", 1,
		"out tok/s", 1, "TTFT p50 ms", 1, "TTFT p99 ms", 1, "E2E p50 ms", 1, "SLO", 0);
	size_t i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		size_t k;
		const json_t *c;
		json_array_foreach(json_object_get(s, "classes"), k, c)
		{
			bool has_checks = json_array_size(json_object_get(c, "checks")) > 0;
			bool pass = json_is_true(json_object_get(c, "pass"));
			double errs = cl_results_num(c, "requests.errors_total");
			char(*r)[RP_CELL_MAX] =
			    add_row(t, cli_rp_stage_marked(s) || errs > 0 || (has_checks && !pass));
			if (!r)
				return CL_ENOMEM;
			stage_cell(r[0], s);
			snprintf(r[1], RP_CELL_MAX, "%s", cl_results_str(c, "name", "-"));
			snprintf(r[2], RP_CELL_MAX, "%s", cl_results_str(c, "model", "(run's)"));
			const json_t *prio = json_object_get(c, "priority");
			if (json_is_integer(prio))
				snprintf(r[3], RP_CELL_MAX, "%lld",
					 (long long)json_integer_value(prio));
			else
				snprintf(r[3], RP_CELL_MAX, "-");
			cli_rp_fmt_count(r[4], RP_CELL_MAX,
					 cl_results_num(c, "requests.completed"));
			cli_rp_fmt_count(r[5], RP_CELL_MAX, errs > 0 ? errs : 0);
			cli_rp_fmt(r[6], RP_CELL_MAX,
				   cl_results_num(c, "throughput.output_tokens_per_s"), 1);
			ms_cell(r[7], c, "latency_ms.ttft.p50");
			ms_cell(r[8], c, "latency_ms.ttft.p99");
			ms_cell(r[9], c, "latency_ms.e2e.p50");
			snprintf(r[10], RP_CELL_MAX, "%s",
				 !has_checks ? "-"
				 : pass      ? "pass"
					     : "BREACH");
		}
	}
	return 0;
}

/* The connections agent a opened from its source addresses over the run, or -1 without. */
static double source_connections(const json_t *a)
{
	const json_t *src = json_object_get(a, "source_addresses");
	if (!json_is_array(src))
		return -1;
	double n = 0;
	size_t k;
	const json_t *e;
	json_array_foreach(src, k, e)
	{
		double c = cl_results_num(e, "connections");
		if (c > 0)
			n += c;
	}
	return n;
}

/*
 * Several agent processes on one host (agents.local: auto, chatload-agent --processes):
 * results.json keeps one agent a process, and this table groups them by host, so a reader
 * sees the client hosts a run used. No rows (no section) when every host ran one agent.
 */
static int hosts(const json_t *doc, struct cli_rp_table *t)
{
	heading(t, "Client hosts",
		"The agents grouped by host (each agent process is one entry of agents[]): how "
		"many ran there, their worker threads, how many were lost, and the connections "
		"they opened from source addresses.",
		6, "host", 0, "agents", 1, "ids", 0, "workers", 1, "lost", 1, "source conns", 1);
	const json_t *agents = json_object_get(doc, "agents");
	size_t n = json_array_size(agents);
	bool several = false;
	for (size_t i = 0; i < n && !several; i++)
		for (size_t j = i + 1; j < n && !several; j++)
			several =
			    strcmp(cl_results_str(json_array_get(agents, i), "host", "-"),
				   cl_results_str(json_array_get(agents, j), "host", "-")) == 0;
	if (!several)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *host = cl_results_str(json_array_get(agents, i), "host", "-");
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(cl_results_str(json_array_get(agents, j), "host", "-"),
				      host) == 0;
		if (seen)
			continue; /* its row was made at its first agent */
		double count = 0, workers = 0, lost = 0, conns = -1;
		char(*r)[RP_CELL_MAX] = add_row(t, false);
		if (!r)
			return CL_ENOMEM;
		size_t at = 0;
		for (size_t j = i; j < n; j++) {
			const json_t *a = json_array_get(agents, j);
			if (strcmp(cl_results_str(a, "host", "-"), host) != 0)
				continue;
			count++;
			workers += cl_results_num(a, "workers");
			lost += json_is_true(json_object_get(a, "lost"));
			double c = source_connections(a);
			if (c >= 0)
				conns = (conns < 0 ? 0 : conns) + c;
			if (at < RP_CELL_MAX)
				at += (size_t)snprintf(r[2] + at, RP_CELL_MAX - at, "%s%.0f",
						       at ? " " : "", cl_results_num(a, "id"));
		}
		snprintf(r[0], RP_CELL_MAX, "%s", host);
		cli_rp_fmt_count(r[1], RP_CELL_MAX, count);
		cli_rp_fmt_count(r[3], RP_CELL_MAX, workers);
		cli_rp_fmt_count(r[4], RP_CELL_MAX, lost);
		if (conns >= 0)
			cli_rp_fmt_count(r[5], RP_CELL_MAX, conns);
		else
			snprintf(r[5], RP_CELL_MAX, "-");
		if (lost > 0)
			t->marked[t->n_rows - 1] = true;
	}
	return 0;
}

int cli_rp_table_build(const json_t *doc, enum cli_rp_table_kind kind, struct cli_rp_table *t)
{
	memset(t, 0, sizeof(*t));
	const json_t *stages = json_object_get(doc, "stages");
	switch (kind) {
	case RP_TBL_LATENCY:
		return latency(stages, t);
	case RP_TBL_TIMING:
		return timing(stages, t);
	case RP_TBL_ENERGY:
		return energy(stages, t);
	case RP_TBL_THINKING:
		return thinking(stages, t);
	case RP_TBL_TOKENS:
		return tokens(stages, t);
	case RP_TBL_ERRORS:
		return errors(stages, t);
	case RP_TBL_CLIENT:
		return client(stages, t);
	case RP_TBL_EPISODES:
		return episodes(doc, t);
	case RP_TBL_ENDPOINTS:
		return endpoints(stages, t);
	case RP_TBL_HOSTS:
		return hosts(doc, t);
	case RP_TBL_CLASSES:
		return classes(stages, t);
	case RP__TBL:
		break;
	}
	return CL_EINVAL;
}

void cli_rp_table_free(struct cli_rp_table *t)
{
	if (!t)
		return;
	free(t->cell);
	free(t->marked);
	t->cell = NULL;
	t->marked = NULL;
	t->n_rows = t->cap = 0;
}
