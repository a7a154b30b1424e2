/*
 * A generate job (`generate:` instead of `stages:`): every request of an OpenAI Batch input
 * sent once, its answer appended to the output.  The coordinator reads the input as leases
 * need it and leases ids to agents in bounded batches (an agent never holds more than twice
 * its concurrency of ids it has not finished); the agents answer in ANSWERS messages on a
 * channel of their own; a lost agent's leases go to the others.  A rerun of the same command
 * skips every id already in output or errors (docs/scenario.md, "Generate jobs").
 */
#include "coordinator/run/generate_int.h"

#include "chatload/assert.h"
#include "chatload/clock.h"
#include "chatload/exitcode.h"
#include "chatload/log.h"
#include "chatload/plan.h"

#include <jansson.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEASE_MAX_ITEMS 256        /* ids in one LEASE */
#define LEASE_MAX_BYTES (8u << 20) /* ... and bytes of bodies (one larger body goes alone) */

void cli_run_gen_lease_free(struct lease *l)
{
	free(l->id);
	free(l->body);
	memset(l, 0, sizeof(*l));
}

static int push(struct lease **a, size_t *n, size_t *cap, struct lease l)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct lease *p = realloc(*a, c * sizeof(*p));
		if (!p)
			return CL_ENOMEM;
		*a = p;
		*cap = c;
	}
	(*a)[(*n)++] = l;
	return 0;
}

void cli_run_generate_free(struct run *r)
{
	struct run_gen *g = r->gen;
	if (!g)
		return;
	for (size_t i = 0; i < CL_FLEET_MAX_AGENTS; i++) {
		struct gen_agent *a = &g->agents[i];
		for (size_t k = 0; k < a->n_held; k++)
			cli_run_gen_lease_free(&a->held[k]);
		free(a->held);
		while (a->sent) {
			struct sent_lease *s = a->sent;
			a->sent = s->next;
			free(s->items);
			free(s);
		}
	}
	for (size_t k = 0; k < g->n_pool; k++)
		cli_run_gen_lease_free(&g->pool[k]);
	free(g->pool);
	cl_gen_reader_close(&g->reader);
	cl_gen_spool_close(&g->spool);
	struct cl_err err = { 0 };
	/* The job synced its files when it ended; on an early exit this is the last word. */
	if (cl_gen_out_close(&g->out, &err) != 0)
		CL_WARN("generate: %s", err.msg);
	cl_gen_idset_free(&g->done);
	cl_gen_lineset_free(&g->send);
	if (g->m_ready)
		cl_metrics_destroy(&g->m);
	free(g);
	r->gen = NULL;
}

/* generate.estimate_from: the rate of the benchmark's `estimates` (the stage it planned
 * from), checked before anything is sent.  0, or CL_EINVAL with err saying what is wrong. */
static int read_plan(struct run_gen *g, const char *path, struct cl_err *err)
{
	json_t *doc = NULL;
	int rc = cl_results_load(path, &doc, err);
	if (rc != 0) {
		cl_err_prefix(err, "generate.estimate_from");
		return CL_EINVAL;
	}
	const json_t *e = json_array_get(json_object_get(doc, "estimates"), 0);
	double rps = cl_results_num(e, "requests_per_s");
	if (!e || !isfinite(rps) || rps <= 0) {
		json_decref(doc);
		return cl_err_set(
		    err, CL_EINVAL,
		    "generate.estimate_from: '%s' has no estimate with a rate (run the "
		    "benchmark with estimate: { samples: [...] })",
		    path);
	}
	g->plan.set = true;
	g->plan.requests_per_s = rps;
	g->plan.output_tokens_per_request = cl_results_num(e, "output_tokens_per_request");
	snprintf(g->plan.stage, sizeof(g->plan.stage), "%s", cl_results_str(e, "from_stage", ""));
	double source_rps;
	if (cl_results_estimate_source(doc, &source_rps, &g->plan.client_bound) &&
	    g->plan.client_bound)
		CL_WARN("generate.estimate_from: stage '%s' of '%s' was client-bound: its %.4g "
			"requests/s describe the client, not the server, so the job's plan may be "
			"too long; estimate from a stage that was not",
			g->plan.stage, path, rps);
	json_decref(doc);
	return 0;
}

/* One rendered record into the spool (a cl_workload_body_fn). */
static int spool_record(void *arg, uint32_t line, const char *json, size_t len, struct cl_err *err)
{
	return cl_gen_spool_add(arg, line, json, len, err);
}

/*
 * generate.input_format a dataset: every record rendered, one at a time, into the spool (a
 * Batch file, custom_id the record's line number), which the job then reads as a Batch
 * input.  The workload's figures in results.json are the dataset's.  A bad record fails
 * the job here as file:line:col (CL_EINVAL); a spool that cannot be written is CL_EIO.
 */
static int spool_dataset(struct run *r, struct cl_err *err)
{
	struct run_gen *g = r->gen;
	const struct cl_scn_generate *s = &r->s.generate;
	int rc = cl_gen_spool_open(&g->spool, s->output, s->errors, s->input, err);
	if (rc == 0)
		rc = cl_workload_render_generate(&r->s, g->old_model, spool_record, &g->spool,
						 &r->workload_stats, err);
	if (rc == 0)
		rc = cl_gen_spool_commit(&g->spool, err);
	if (rc != 0 && !g->spool.failed && rc != CL_ENOMEM)
		rc = CL_EINVAL; /* the dataset is bad input */
	return rc;
}

int cli_run_generate_check(struct run *r, struct cl_err *err)
{
	const struct cl_scn_generate *s = &r->s.generate;
	struct run_gen *g = calloc(1, sizeof(*g));
	if (!g)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	r->gen = g;
	int rc = cl_gen_out_open(&g->out, s->output, s->errors, &g->done, err);
	if (rc != 0)
		return rc;
	const char *input = s->input;
	if (s->input_format != CL_GEN_INPUT_BATCH) {
		g->old_model = cl_scenario_render_model(&r->s);
		if ((rc = spool_dataset(r, err)) != 0)
			return rc;
		input = g->spool.path;
	}
	struct cl_gen_idset seen = { 0 };
	rc = cl_gen_scan(input, &g->done, s->skip_invalid, s->skip_invalid ? &g->out : NULL, &seen,
			 &g->send, &g->scan, err);
	cl_gen_idset_free(&seen);
	/* From here on send says what to send: the id sets' memory goes back before the run. */
	cl_gen_idset_free(&g->done);
	if (rc != 0)
		return rc;
	if ((rc = cl_gen_out_sync(&g->out, true, err)) != 0)
		return rc;
	g->total = g->scan.to_send;
	if (s->estimate_from && (rc = read_plan(g, s->estimate_from, err)) != 0)
		return rc;
	if ((rc = cl_metrics_init(&g->m)) != 0)
		return cl_err_set(err, rc, "out of memory");
	g->m_ready = true;
	return cl_gen_reader_open(&g->reader, input, err);
}

/* ---- leases ---- */

/* Frees the LEASE arrays agent a has applied. */
static void reap_sent(struct run *r, size_t i)
{
	struct gen_agent *a = &r->gen->agents[i];
	struct sent_lease **pp = &a->sent;
	while (*pp) {
		struct sent_lease *s = *pp;
		if (s->cmd_seq && s->cmd_seq <= r->fleet.agents[i].applied_seq) {
			*pp = s->next;
			free(s->items);
			free(s);
		} else {
			pp = &s->next;
		}
	}
}

/* The next lease to give: one a lost agent held, else the input's next line.  1, 0 (none
 * left), or a negative code. */
static int next_lease(struct run *r, struct lease *out, struct cl_err *err)
{
	struct run_gen *g = r->gen;
	if (g->n_pool) {
		*out = g->pool[--g->n_pool];
		g->reissued++;
		return 1;
	}
	struct cl_gen_line ln;
	int rc = cl_gen_reader_next(&g->reader, &g->send, &ln, err);
	if (rc != 1)
		return rc;
	*out = (struct lease){ .id = ln.id, .body = ln.body, .body_len = ln.body_len };
	if (g->swap_model) {
		char *body;
		size_t len;
		rc = cl_workload_body_set_model(out->body, out->body_len, g->old_model,
						r->target.model, &body, &len, err);
		if (rc != 0) {
			cli_run_gen_lease_free(out);
			return rc;
		}
		free(out->body);
		out->body = body;
		out->body_len = len;
	}
	return 1;
}

/* Leases agent i ids up to twice its share, in one LEASE.  0 or a negative code. */
/* The most ids an agent holds: twice its streams, or with a rate one second of its tries
 * when that is more.  A paced agent needs few streams (rate x latency) but must not run dry
 * while its answers and the next lease cross the control channel: with 4 streams at 20/s,
 * eight ids were 0.4 s of work, and a loaded machine's round trip starved it. */
static size_t lease_cap(const struct gen_agent *a)
{
	size_t cap = 2 * (size_t)a->share;
	size_t by_rate = (size_t)ceil(a->rate_per_s);
	return by_rate > cap ? by_rate : cap;
}

static int lease_to(struct run *r, size_t i, struct cl_err *err)
{
	struct run_gen *g = r->gen;
	struct gen_agent *a = &g->agents[i];
	size_t cap = lease_cap(a);
	if (a->n_held >= cap || cl_fleet_room(&r->fleet, i) == 0)
		return 0;
	/* Not in dribbles: with a large allowance, wait until a quarter of it is free (unless
	 * the agent holds nothing); a small one is topped up at once, or its streams would
	 * wait for leases. */
	size_t room = cap - a->n_held;
	if (cap >= 32 && a->n_held && room < cap / 4)
		return 0;
	if (room > LEASE_MAX_ITEMS)
		room = LEASE_MAX_ITEMS;
	struct sent_lease *s = calloc(1, sizeof(*s));
	if (!s || !(s->items = calloc(room, sizeof(*s->items)))) {
		free(s);
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	}
	size_t n = 0, bytes = 0;
	int rc = 0;
	while (n < room) {
		struct lease l;
		if ((rc = next_lease(r, &l, err)) != 1)
			break;
		rc = 0;
		if (push(&a->held, &a->n_held, &a->cap_held, l) != 0) {
			cli_run_gen_lease_free(&l);
			rc = cl_err_set(err, CL_ENOMEM, "out of memory");
			break;
		}
		s->items[n++] =
		    (struct cl_gen_item){ .id = l.id, .body = l.body, .body_len = l.body_len };
		bytes += l.body_len;
		if (bytes >= LEASE_MAX_BYTES)
			break;
	}
	if (n == 0) {
		free(s->items);
		free(s);
		return rc;
	}
	struct cl_msg_cmd c = { .cmd = CL_CMD_LEASE };
	c.lease.items = s->items;
	c.lease.n_items = n;
	s->cmd_seq = cl_fleet_send(&r->fleet, i, &c);
	CL_ASSERT(s->cmd_seq != 0);  /* room was checked */
	CL_ASSERT(a->n_held <= cap); /* never more than lease_cap held */
	s->next = a->sent;
	a->sent = s;
	return rc;
}

/* A lost agent: its leases go back to the pool for the others. */
static void reclaim(struct run *r, size_t i)
{
	struct run_gen *g = r->gen;
	struct gen_agent *a = &g->agents[i];
	a->lost_done = true;
	size_t n = a->n_held;
	for (size_t k = 0; k < a->n_held; k++) {
		if (push(&g->pool, &g->n_pool, &g->cap_pool, a->held[k]) != 0) {
			cli_run_gen_lease_free(&a->held[k]); /* out of memory: a rerun sends it */
			continue;
		}
	}
	a->n_held = 0;
	cl_progress_note(&r->prog,
			 "agent %u (%s) was lost: its %zu leased requests go to the other agents",
			 r->fleet.agents[i].id, r->fleet.agents[i].label, n);
}

/* ---- the job ---- */

static void send_generate(struct run *r, size_t i);

/* Each agent's weight for a split (its workers, as a stage's), 0 for a lost one, into
 * g->weights; the count of agents left. */
static size_t weigh_agents(struct run *r)
{
	struct run_gen *g = r->gen;
	size_t left = 0;
	for (size_t i = 0; i < r->fleet.n; i++) {
		bool lost = r->fleet.agents[i].live == CL_LIVE_LOST;
		uint32_t w = r->fleet.agents[i].workers ? r->fleet.agents[i].workers : 1;
		g->weights[i] = lost ? 0 : w;
		left += !lost;
	}
	return left;
}

/* generate.rate over the agents left, by their workers (cl_apportion_real), into each
 * agent's rate_per_s. */
static void split_rate(struct run *r)
{
	struct run_gen *g = r->gen;
	double rates[CL_FLEET_MAX_AGENTS];
	if (cl_apportion_real(r->s.generate.rate_per_s, g->weights, r->fleet.n, rates) != 0)
		return;
	for (size_t i = 0; i < r->fleet.n; i++)
		if (g->weights[i])
			g->agents[i].rate_per_s = rates[i];
}

/* generate.rate over the agents left, by their workers (as a stage's), sent again to those
 * already running (the agent changes only its pace): a lost agent's part of the rate goes to
 * the others, so the job keeps its rate.  Streams stay as they were split. */
static void resplit_rate(struct run *r)
{
	struct run_gen *g = r->gen;
	if (!weigh_agents(r) || r->s.generate.rate_per_s <= 0)
		return;
	split_rate(r);
	for (size_t i = 0; i < r->fleet.n; i++)
		if (g->weights[i] && g->agents[i].started)
			send_generate(r, i);
	cl_progress_note(&r->prog, "generate: %g/s now split over %zu agents",
			 r->s.generate.rate_per_s, cl_fleet_active(&r->fleet));
}

/* generate.concurrency and generate.rate over the agents left, by their workers: the streams
 * exactly (cl_apportion, largest remainder), each agent left at least one. */
static void split_shares(struct run *r)
{
	struct run_gen *g = r->gen;
	uint64_t shares[CL_FLEET_MAX_AGENTS];
	if (!weigh_agents(r) ||
	    cl_apportion(r->s.generate.concurrency, g->weights, r->fleet.n, shares) != 0)
		return;
	split_rate(r);
	for (size_t i = 0; i < r->fleet.n; i++) {
		if (!g->weights[i])
			continue;
		/* more agents than streams: one each */
		g->agents[i].share = shares[i] ? (uint32_t)shares[i] : 1;
	}
}

static void send_generate(struct run *r, size_t i)
{
	const struct cl_scn_generate *s = &r->s.generate;
	struct cl_msg_cmd c = { .cmd = CL_CMD_GENERATE };
	c.generate = (struct cl_cmd_generate){
		.target = r->target,
		.concurrency = r->gen->agents[i].share,
		.max_attempts = s->max_attempts,
		.request_timeout_us = r->s.workload.request_timeout_us,
		.backoff_initial_us = s->backoff_initial_us,
		.backoff_max_us = s->backoff_max_us,
		.rate_per_s = r->gen->agents[i].rate_per_s,
	};
	if (cl_fleet_send(&r->fleet, i, &c) != 0)
		r->gen->agents[i].started = true;
}

static uint64_t held_total(const struct run *r)
{
	uint64_t n = 0;
	for (size_t i = 0; i < r->fleet.n; i++)
		n += r->gen->agents[i].n_held;
	return n;
}

/* " (stream_error 3, timeout 1)": the counts n[k] of the error classes that have any ("":
 * none); returns their sum. */
static uint64_t by_class(const uint64_t *n, char *out, size_t cap)
{
	uint64_t sum = 0;
	size_t len = 0;
	out[0] = '\0';
	for (size_t k = 0; k < CL_GEN_ERR_CLASSES; k++) {
		if (!n[k])
			continue;
		sum += n[k];
		int w = snprintf(out + len, cap - len, "%s%s %llu", len ? ", " : " (",
				 cli_run_gen_class_name(CL_CTR_FIRST_ERROR + (int)k),
				 (unsigned long long)n[k]);
		if (w < 0 || (size_t)w >= cap - len - 1) {
			out[len] = '\0'; /* no room: the classes so far (the sum counts all) */
			continue;
		}
		len += (size_t)w;
	}
	if (len)
		snprintf(out + len, cap - len, ")");
	return sum;
}

static void progress(struct run *r, bool force)
{
	struct run_gen *g = r->gen;
	int64_t now = cl_mono_us();
	int64_t sec = (now - g->start_us) / 1000000;
	while (g->second < sec) { /* one sample per second, the rate over the window */
		g->second++;
		g->done_at[g->second % RATE_WINDOW] = g->written + g->failed;
		g->tok_at[g->second % RATE_WINDOW] = g->output_tokens;
	}
	if (!cl_progress_due(&r->prog, force))
		return;
	int64_t span = g->second < RATE_WINDOW - 1 ? g->second : RATE_WINDOW - 1;
	double rate = 0, tok = 0;
	if (span > 0) {
		uint64_t d0 = g->done_at[(g->second - span) % RATE_WINDOW];
		uint64_t t0 = g->tok_at[(g->second - span) % RATE_WINDOW];
		rate = (double)(g->done_at[g->second % RATE_WINDOW] - d0) / (double)span;
		tok = (double)(g->tok_at[g->second % RATE_WINDOW] - t0) / (double)span;
	}
	uint64_t done = g->written + g->failed;
	char eta[32] = "-";
	if (rate > 0 && g->total >= done) {
		double left = (double)(g->total - done) / rate;
		snprintf(eta, sizeof(eta), "%.0fm%02.0fs", floor(left / 60), fmod(left, 60));
	}
	char errs[160], retries[160];
	(void)by_class(g->m.ctr + CL_CTR_FIRST_ERROR, errs, sizeof(errs));
	uint64_t n_retries = by_class(g->retries, retries, sizeof(retries));
	char line[520];
	snprintf(line, sizeof(line),
		 "generate %llu/%llu done | %.1f req/s, %.0f tok/s (last %llds) | ETA %s | "
		 "leased %llu | errors %llu%s | retries %llu%s | agents %zu",
		 (unsigned long long)done, (unsigned long long)g->total, rate, tok, (long long)span,
		 eta, (unsigned long long)held_total(r), (unsigned long long)g->failed, errs,
		 (unsigned long long)n_retries, retries, cl_fleet_active(&r->fleet));
	cl_progress_show(&r->prog, line);
}

/* The results: the job as one stage (mode generate) with its generate block. */
static void finish_results(struct run *r, enum cl_stage_status status, const char *reason)
{
	struct run_gen *g = r->gen;
	double window_s = (double)(cl_mono_us() - g->start_us) / 1e6;
	cl_results_finish_stage(r->res, 0, &r->s.stages[0], &g->m, window_s, status, reason);
	json_t *block = json_pack(
	    "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s,s:s}", "input_lines",
	    (json_int_t)g->scan.lines, "invalid", (json_int_t)g->scan.invalid, "to_send",
	    (json_int_t)g->total, "done", (json_int_t)g->written, "skipped_present",
	    (json_int_t)g->scan.present, "failed", (json_int_t)g->failed, "attempts",
	    (json_int_t)g->attempts, "retried", (json_int_t)g->retried_answers, "reissued",
	    (json_int_t)g->reissued, "repaired_bytes", (json_int_t)g->out.repaired_bytes, "input",
	    r->s.generate.input, "output", r->s.generate.output, "errors", r->s.generate.errors);
	static const char *const formats[] = { "batch", "openai", "sharegpt", "text" };
	/* The retried tries by class, every class present as requests.errors has them. */
	json_t *retries = json_object();
	for (size_t k = 0; retries && k < CL_GEN_ERR_CLASSES; k++)
		if (json_object_set_new(retries,
					cli_run_gen_class_name(CL_CTR_FIRST_ERROR + (int)k),
					json_integer((json_int_t)g->retries[k])) != 0) {
			json_decref(retries);
			retries = NULL;
		}
	if (block && (!retries || json_object_set_new(block, "retries", retries) != 0))
		CL_WARN("cannot record the generate job's retries in results.json");
	else if (!block)
		json_decref(retries);
	if (block &&
	    (json_object_set_new(block, "input_format",
				 json_string(formats[r->s.generate.input_format])) != 0 ||
	     json_object_set_new(block, "rate_per_s",
				 r->s.generate.rate_per_s > 0 ? json_real(r->s.generate.rate_per_s)
							      : json_null()) != 0))
		CL_WARN("cannot record the generate job's input format and rate in results.json");
	if (block && g->plan.set) {
		/* The estimate is the benchmark's rate over what this run had to send. */
		double planned_s = (double)g->total / g->plan.requests_per_s;
		json_t *est = json_pack(
		    "{s:s,s:s,s:f,s:b,s:f,s:f,s:o}", "from", r->s.generate.estimate_from, "stage",
		    g->plan.stage, "requests_per_s", g->plan.requests_per_s, "client_bound",
		    g->plan.client_bound, "planned_s", planned_s, "actual_s", window_s,
		    "actual_over_planned",
		    planned_s > 0 && status == CL_STAGE_OK ? json_real(window_s / planned_s)
							   : json_null());
		/* With the scenario's cost: what the plan and the job cost the target. */
		double hour = cl_scenario_cost_per_hour(&r->s.cost);
		if (est && isfinite(hour) &&
		    (json_object_set_new(est, "planned_cost", json_real(planned_s / 3600 * hour)) ||
		     json_object_set_new(est, "actual_cost", json_real(window_s / 3600 * hour)))) {
			json_decref(est);
			est = NULL;
		}
		if (est)
			json_object_set_new(block, "estimate", est);
		cl_progress_note(&r->prog,
				 "generate: the benchmark ('%s', stage '%s' at %.1f req/s) planned "
				 "%.0f s for %llu requests; it took %.0f s (%.2fx)",
				 r->s.generate.estimate_from, g->plan.stage, g->plan.requests_per_s,
				 planned_s, (unsigned long long)g->total, window_s,
				 planned_s > 0 ? window_s / planned_s : 0.0);
	}
	if (block && cl_results_set_generate(r->res, 0, block) != 0)
		CL_WARN("cannot record the generate block in results.json");
}

/* One turn over the agents: a lost one's ids taken back (and its share of the rate given
 * to the others), a failed one ends the job, a new one told to start, the others' answers
 * reaped and new leases given.  Non-zero when the job must stop (*status, reason say why). */
static int tend_agents(struct run *r, enum cl_stage_status *status, char *reason, size_t n)
{
	struct run_gen *g = r->gen;
	struct cl_err err = { 0 };
	char msg[900];
	int rc = 0;
	for (size_t i = 0; i < r->fleet.n && rc == 0; i++) {
		struct cl_fleet_agent *fa = &r->fleet.agents[i];
		struct gen_agent *a = &g->agents[i];
		if (fa->live == CL_LIVE_LOST) {
			if (!a->lost_done) {
				reclaim(r, i);
				resplit_rate(r);
				if (r->s.agents.on_loss == CL_ON_LOSS_FAIL) {
					*status = CL_STAGE_FAILED;
					snprintf(reason, n,
						 "agent %u (%s) was lost (agents.on_loss: fail); "
						 "run the same command again to finish",
						 fa->id, fa->label);
					rc = -1;
				}
			}
			continue;
		}
		if (fa->state == CL_AGENT_FAILED) {
			*status = CL_STAGE_FAILED;
			snprintf(reason, n, "agent %u (%s) failed: %s", fa->id, fa->label,
				 fa->error);
			rc = -1;
			break;
		}
		if (!a->started) {
			send_generate(r, i);
			continue;
		}
		reap_sent(r, i);
		rc = lease_to(r, i, &err);
		if (rc > 0)
			rc = 0;
		if (rc < 0 && *status == CL_STAGE_OK) {
			*status = CL_STAGE_FAILED;
			snprintf(reason, n, "%s", cl_err_format(&err, msg, sizeof(msg)));
		}
	}
	return rc;
}

int cli_run_generate(struct run *r)
{
	struct run_gen *g = r->gen;
	struct cl_err err = { 0 };
	char msg[900];
	r->fleet.on_answers = cli_run_gen_on_answers;
	g->start_us = cl_mono_us();
	g->swap_model = g->old_model && r->target.model && strcmp(g->old_model, r->target.model);
	split_shares(r);
	char pace[64] = "";
	if (r->s.generate.rate_per_s > 0)
		snprintf(pace, sizeof(pace), " at most, at %g/s", r->s.generate.rate_per_s);
	cl_progress_note(&r->prog,
			 "generate: %llu requests to send (%llu lines, %llu already answered, %llu "
			 "invalid), %u streams%s over %zu agents",
			 (unsigned long long)g->total, (unsigned long long)g->scan.lines,
			 (unsigned long long)g->scan.present, (unsigned long long)g->scan.invalid,
			 r->s.generate.concurrency, pace, cl_fleet_active(&r->fleet));
	enum cl_stage_status status = CL_STAGE_OK;
	char reason[1500] = "";
	/* --metrics-listen: the job is the running stage, its figures those of the answers */
	if (r->live && cl_live_metrics_stage_start(r->live, 0, "generate", "generate",
						   r->s.generate.concurrency) != 0)
		CL_WARN("live metrics: out of memory for the generate job");
	int64_t live_us = 0;
	for (;;) {
		/* Short turns: a lease follows the answers that freed its room within ~10 ms. */
		cl_fleet_serve(&r->fleet, 10000);
		cli_run_live_tick(r, false);
		if (r->live && cl_mono_us() - live_us >= 500000) {
			live_us = cl_mono_us();
			cl_live_metrics_stage_update(r->live, &g->m);
		}
		if (g->write_failed) {
			status = CL_STAGE_FAILED;
			snprintf(reason, sizeof(reason), "%s", g->fatal);
			cl_progress_note(&r->prog, "generate: stopping: %s", g->fatal);
			break;
		}
		if (atomic_load(r->o->stop)) {
			status = CL_STAGE_INTERRUPTED;
			snprintf(reason, sizeof(reason),
				 "interrupted by a signal: run the same command again to finish");
			cl_progress_note(&r->prog, "generate: interrupted: %s", reason);
			break;
		}
		if (tend_agents(r, &status, reason, sizeof(reason)) != 0)
			break;
		if (cl_fleet_active(&r->fleet) == 0) {
			status = CL_STAGE_FAILED;
			snprintf(reason, sizeof(reason),
				 "no agent is left; run the same command again to finish");
			break;
		}
		if (cl_gen_out_sync(&g->out, false, &err) != 0) {
			status = CL_STAGE_FAILED;
			snprintf(reason, sizeof(reason), "%s",
				 cl_err_format(&err, msg, sizeof(msg)));
			break;
		}
		progress(r, false);
		if (g->reader.eof && g->n_pool == 0 && held_total(r) == 0)
			break;
	}
	g->closed = true;
	if (r->live)
		cl_live_metrics_stage_end(r->live, &g->m, cl_stage_status_name(status));
	progress(r, true);
	cl_progress_end(&r->prog);
	if (cl_gen_out_sync(&g->out, true, &err) != 0 && status == CL_STAGE_OK) {
		status = CL_STAGE_FAILED;
		snprintf(reason, sizeof(reason), "%s", cl_err_format(&err, msg, sizeof(msg)));
	}
	if (status == CL_STAGE_OK && g->duplicates)
		CL_INFO("generate: %llu answers came twice and were written once",
			(unsigned long long)g->duplicates);
	char retries[160];
	uint64_t n_retries = by_class(g->retries, retries, sizeof(retries));
	fprintf(stderr,
		"chatload: generate: %llu written to %s, %llu failed (in %s), %llu already there, "
		"%llu attempts, %llu retried%s\n",
		(unsigned long long)g->written, r->s.generate.output, (unsigned long long)g->failed,
		r->s.generate.errors, (unsigned long long)g->scan.present,
		(unsigned long long)g->attempts, (unsigned long long)n_retries, retries);
	if (g->failed)
		fprintf(stderr,
			"chatload: generate: a rerun skips the ids in %s as answered; to send them "
			"again (the server fixed), remove their lines from it first\n",
			r->s.generate.errors);
	finish_results(r, status, reason[0] ? reason : NULL);
	/* Every record is in output or errors: the spool has served.  After a failure it stays
	 * (the next run writes it again), showing what was sent. */
	if (status == CL_STAGE_OK && g->spool.committed && unlink(g->spool.path) != 0)
		CL_WARN("generate: cannot remove '%s': %s", g->spool.path, strerror(errno));
	if (status == CL_STAGE_OK)
		return 0;
	r->exit_hint = CL_EXIT_FAILED;
	return status == CL_STAGE_INTERRUPTED ? CL_ECLOSED : CL_EIO;
}
