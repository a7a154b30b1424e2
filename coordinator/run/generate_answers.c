/*
 * A generate job's answers (run/generate.c runs the job): each answer an agent sends in
 * ANSWERS written to the output or errors file through generate/, its lease dropped, and
 * counted in the job's metrics, as a stage's engine counts a request, with its retried tries
 * by class.  A write that fails stops the job; an answer that comes twice is written once.
 */
#include "coordinator/run/generate_int.h"

#include "chatload/log.h"
#include "chatload/plan.h"

#include <stdio.h>
#include <string.h>

static struct lease *find_held(struct gen_agent *a, const char *id, size_t *at)
{
	for (size_t k = 0; k < a->n_held; k++) {
		if (strcmp(a->held[k].id, id) == 0) {
			*at = k;
			return &a->held[k];
		}
	}
	return NULL;
}

const char *cli_run_gen_class_name(int ctr)
{
	const char *n = cl_ctr_name(ctr);
	return n && strncmp(n, "err_", 4) == 0 ? n + 4 : "other";
}

/* The class of a failed answer: as the agent said, or (an agent that does not say) by its
 * HTTP status. */
static int answer_class(const struct cl_gen_answer *x)
{
	if (x->err_class >= CL_CTR_FIRST_ERROR && x->err_class <= CL_CTR_LAST_ERROR)
		return x->err_class;
	if (x->status == 429)
		return CL_CTR_ERR_HTTP_429;
	if (x->status >= 400 && x->status <= 499)
		return CL_CTR_ERR_HTTP_4XX;
	if (x->status >= 500 && x->status <= 599)
		return CL_CTR_ERR_HTTP_5XX;
	return CL_CTR_ERR_OTHER;
}

/* A written answer in the job's metrics, as a stage's engine records a completed request:
 * its latencies, tokens, and whether it was good (it reached the user with content; a job
 * has no per-request SLO).  The whole job is the window, so the request counts whole in
 * requests_per_s (window_share_milli). */
static void record_answer(struct run_gen *g, const struct cl_gen_answer *x)
{
	struct cl_metrics *m = &g->m;
	cl_hist_record(&m->lat[CL_LAT_TTFT], x->ttft_us);
	cl_hist_record(&m->lat[CL_LAT_E2E], x->total_us);
	if (x->ttfc_us > 0)
		cl_hist_record(&m->lat[CL_LAT_TTFC], x->ttfc_us);
	else
		m->ctr[CL_CTR_NO_CONTENT]++;
	if (x->output_tokens > 1 && x->total_us > x->ttft_us)
		cl_hist_record(&m->lat[CL_LAT_TPOT],
			       (x->total_us - x->ttft_us) / (x->output_tokens - 1));
	cl_hist_record(&m->cnt[CL_CNT_OUTPUT_TOKENS], x->output_tokens);
	if (x->prompt_tokens > 0)
		cl_hist_record(&m->cnt[CL_CNT_PROMPT_TOKENS], x->prompt_tokens);
	m->ctr[CL_CTR_COMPLETED]++;
	m->ctr[CL_CTR_COMPLETED_IN_WINDOW]++;
	m->ctr[CL_CTR_WINDOW_SHARE_MILLI] += 1000;
	m->ctr[CL_CTR_GOOD] += x->ttfc_us > 0;
	m->ctr[CL_CTR_OUTPUT_TOKENS] += x->output_tokens;
	m->ctr[CL_CTR_PROMPT_TOKENS] += x->prompt_tokens;
	m->ctr[CL_CTR_USAGE_FROM_SERVER] += x->output_tokens > 0;
}

/* An answer's retried tries by class: counted, and each class said once as it first
 * appears (its reason is in the agent's log, said at info level there). */
static void count_retries(struct run *r, const struct cl_gen_answer *x)
{
	struct run_gen *g = r->gen;
	for (size_t k = 0; k < CL_GEN_ERR_CLASSES; k++) {
		if (!x->retries[k])
			continue;
		if (!g->retries[k])
			CL_INFO("generate: tries fail with %s and are tried again ('%s': %u of "
				"its %u tries); the progress line and results.json's "
				"generate.retries count them by class, the agent's log says why",
				cli_run_gen_class_name(CL_CTR_FIRST_ERROR + (int)k), x->id,
				x->retries[k], x->attempts);
		g->retries[k] += x->retries[k];
	}
}

/* One answer: its line written, its lease dropped.  0, or CL_EIO (a write failed: the
 * ANSWERS is left unacknowledged, the job stops). */
static int take_answer(struct run *r, struct gen_agent *a, struct cl_gen_answer *x)
{
	struct run_gen *g = r->gen;
	size_t at;
	struct lease *l = find_held(a, x->id, &at);
	if (!l) {
		g->duplicates++; /* not (or no longer) this agent's: written already */
		return 0;
	}
	struct cl_err err = { 0 };
	int rc;
	char rid[CL_WIRE_MAX_ID + 16];
	snprintf(rid, sizeof(rid), x->attempts > 1 ? "%s/%u" : "%s", x->id, x->attempts);
	if (x->body) {
		rc = cl_gen_out_success(&g->out, x->id, (int)x->status, rid, x->body, &err);
		if (rc == CL_EINVAL) { /* the agent's answer is not JSON: say so, as an error */
			rc = cl_gen_out_failure(&g->out, x->id, (int)x->status, rid, "bad_answer",
						err.msg, 0, &err);
			g->failed++;
			g->m.ctr[CL_CTR_ERR_STREAM_MALFORMED]++;
		} else if (rc == 0) {
			g->written++;
			g->output_tokens += x->output_tokens;
			record_answer(g, x);
		}
	} else {
		/* The code says what failed: the HTTP status of a response that was an error,
		 * else the class (stream_error, timeout, ...); the message keeps the server's
		 * words (an in-stream error's code in it). */
		int cls = answer_class(x);
		bool http = x->status >= 400 && x->status <= 599 &&
			    (cls == CL_CTR_ERR_HTTP_4XX || cls == CL_CTR_ERR_HTTP_429 ||
			     cls == CL_CTR_ERR_HTTP_5XX);
		char code[32];
		if (http)
			snprintf(code, sizeof(code), "http_%u", x->status);
		else
			snprintf(code, sizeof(code), "%s", cli_run_gen_class_name(cls));
		const char *msg = x->error ? x->error : "failed";
		rc = cl_gen_out_failure(&g->out, x->id, (int)x->status, rid, code, msg, 0, &err);
		g->failed++;
		g->m.ctr[cls]++;
		cl_metrics_add_err_sample(&g->m, cls, (int)x->status, msg, strlen(msg));
	}
	if (rc != 0) {
		char msg[800];
		snprintf(g->fatal, sizeof(g->fatal), "%s", cl_err_format(&err, msg, sizeof(msg)));
		g->write_failed = true;
		return CL_EIO;
	}
	g->attempts += x->attempts;
	g->retried_answers += x->attempts > 1;
	g->m.ctr[CL_CTR_STARTED] += x->attempts;
	count_retries(r, x);
	cli_run_gen_lease_free(l);
	a->held[at] = a->held[--a->n_held];
	return 0;
}

int cli_run_gen_on_answers(void *ctx, struct cl_fleet_agent *fa, struct cl_msg_answers *m)
{
	struct run *r = ctx;
	struct run_gen *g = r->gen;
	if (!g || g->write_failed || g->closed)
		return -1;
	struct gen_agent *a = &g->agents[fa->id - 1];
	/* An answer written before a failed write of the same message is found no longer held
	 * when the message comes again, so a retried message writes nothing twice. */
	for (size_t i = 0; i < m->n_answers; i++)
		if (take_answer(r, a, &m->answers[i]) != 0)
			return -1;
	return 0;
}
