/* Rebuilds the verdict, estimates and warnings of a results document from its finished
 * stages (results/results.c calls it before every write): among the warnings, stages too
 * short for their requests and requests that re-sent a body the run had sent already. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int verdict_json(struct cl_results *r, json_t **out)
{
	json_t *checks = json_array(), *breaches = json_array();
	size_t evaluated = 0;
	*out = NULL;
	if (!checks || !breaches)
		goto fail;
	for (size_t i = 0; i < r->n_stages; i++) {
		size_t k;
		json_t *c;
		json_array_foreach(r->stages[i].checks, k, c)
		{
			evaluated++;
			if (json_array_append(checks, c) != 0)
				goto fail;
			if (!json_is_true(json_object_get(c, "pass")) &&
			    json_array_append(breaches, c) != 0)
				goto fail;
		}
	}
	/* At the end, an SLO written for one stage that never finished cannot be proven met. */
	for (size_t i = 0; r->finished && i < r->n_slos; i++) {
		const struct cl_scn_slo *slo = &r->slos[i];
		if (!slo->stage)
			continue;
		bool ran = false;
		for (size_t s = 0; s < r->n_stages; s++)
			ran = ran || (r->stages[s].finished && r->stages[s].name &&
				      strcmp(r->stages[s].name, slo->stage) == 0);
		if (ran)
			continue;
		json_t *c =
		    json_pack("{s:s,s:s,s:f,s:n,s:s,s:b,s:s}", "slo", slo->key, "stage", slo->stage,
			      "limit", cl_verdict_to_unit(slo, slo->limit), "measured", "unit",
			      cl_verdict_unit(slo), "pass", 0, "note", "stage did not run");
		evaluated++;
		if (!c || json_array_append(checks, c) != 0 ||
		    json_array_append(breaches, c) != 0) {
			json_decref(c);
			goto fail;
		}
		json_decref(c);
	}
	r->breaches = json_array_size(breaches);
	/* pass is about SLOs only (complete and exit_code say whether the run worked); with no
	 * SLO to check nothing was breached, and evaluated: 0 says so. */
	*out = json_pack("{s:b,s:I,s:o,s:o}", "pass", r->breaches == 0, "evaluated",
			 (json_int_t)evaluated, "checks", checks, "breaches", breaches);
	return *out ? 0 : CL_ENOMEM;
fail:
	json_decref(checks);
	json_decref(breaches);
	return CL_ENOMEM;
}

static json_t *estimates_json(struct cl_results *r)
{
	const json_t *stages = json_object_get(r->doc, "stages");
	size_t n = json_array_size(stages);
	struct cl_stage_ref *refs = calloc(n ? n : 1, sizeof(*refs));
	json_t *arr = json_array();
	if (!refs || !arr)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(stages, i);
		refs[i].name = json_string_value(json_object_get(s, "name"));
		refs[i].concurrency_mode =
		    strcmp(cl_results_str(s, "mode", ""), "concurrency") == 0;
		refs[i].concurrency =
		    (uint32_t)json_integer_value(json_object_get(s, "concurrency"));
	}
	/* Without a from_stage, a capacity search's sustainable probe is the level to estimate
	 * at (the last stage of a search is its last probe, often one that broke the SLOs). */
	const char *from = r->from_stage
			       ? r->from_stage
			       : cl_results_str(r->doc, "capacity.at_sustainable.stage", NULL);
	long at = cl_verdict_find_stage(from, refs, n);
	const json_t *s = at >= 0 ? json_array_get(stages, (size_t)at) : NULL;
	double rps = s ? cl_results_num(s, "throughput.requests_per_s") : NAN;
	double tpr = s ? cl_results_num(s, "tokens.output_per_request.mean") : NAN;
	if (s && isnan(tpr)) {
		double done = cl_results_num(s, "requests.completed");
		tpr = done > 0 ? cl_results_num(s, "tokens.output") / done : NAN;
	}
	for (size_t i = 0; i < r->n_samples; i++) {
		double hours = NAN, tokens = NAN;
		if (s)
			cl_verdict_estimate(r->samples[i], rps, tpr, &hours, &tokens);
		const char *note = s ? (isnan(hours) ? "no completed requests in that stage" : NULL)
				     : (r->from_stage ? "that stage did not run" : "no stage ran");
		json_t *e = json_pack(
		    "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "samples", cli_rj_uint(r->samples[i]),
		    "from_stage",
		    s ? json_deep_copy(json_object_get(s, "name")) : cli_rj_str(r->from_stage),
		    "stage_index", s ? json_integer(at) : json_null(), "requests_per_s",
		    cli_rj_real(rps), "output_tokens_per_request", cli_rj_real(tpr), "hours",
		    cli_rj_real(cli_rj_sig(hours, 6)), "output_tokens",
		    cli_rj_real(cli_rj_round(tokens, 0)), "note",
		    note ? json_string(note) : json_null());
		/* With the scenario's `cost:`, what those hours of the target cost. */
		if (e && r->cost_per_hour > 0 &&
		    cli_rj_set(e, "cost", cli_rj_real(cli_rj_sig(hours * r->cost_per_hour, 6)))) {
			json_decref(e);
			goto fail;
		}
		if (cli_rj_append(arr, e))
			goto fail;
	}
	free(refs);
	return arr;
fail:
	free(refs);
	json_decref(arr);
	return NULL;
}

/*
 * Whether a stage's client-bound flag fails the run: any reason but the percentile ones.
 * loop_lag and dispatch_lag are p99s of the stage; on a short stage a few hiccups of a busy
 * host make the p99, so they warn and do not decide the exit code.  A stall, an agent gone
 * missing, the coordinator's own stall and CPU saturation are events, and fail the run.
 */
bool cli_rs_client_bound_gates(const json_t *s)
{
	if (!json_is_true(cl_results_get(s, "client.client_bound")))
		return false;
	size_t k;
	const json_t *x;
	json_array_foreach(cl_results_get(s, "client.reasons"), k, x)
	{
		const char *reason = json_string_value(x);
		if (!reason ||
		    (strcmp(reason, "loop_lag") != 0 && strcmp(reason, "dispatch_lag") != 0))
			return true;
	}
	return false;
}

/* A client-bound stage's warning, then one line per listed stall naming the agent, when and
 * how long. */
static int warn_client_bound(json_t *w, const json_t *s, const char *name, bool fails)
{
	char why[128] = "";
	bool saturated = false;
	size_t k;
	const json_t *x;
	json_array_foreach(cl_results_get(s, "client.reasons"), k, x)
	{
		const char *reason = json_string_value(x);
		size_t l = strlen(why);
		snprintf(why + l, sizeof(why) - l, "%s%s", l ? ", " : "", reason ? reason : "?");
		saturated |=
		    reason && (strcmp(reason, "cpu") == 0 || strcmp(reason, "loop_lag") == 0 ||
			       strcmp(reason, "dispatch_lag") == 0);
	}
	int rc = cli_rs_warn(
	    w,
	    "stage '%s' was client-bound (%s): its numbers describe the client, not "
	    "the server%s%s",
	    name, why, saturated ? "; add agents or workers" : "",
	    fails ? "; the run fails (client_bound: warn in the scenario only warns)" : "");
	json_array_foreach(cl_results_get(s, "client.stalls"), k, x)
	{
		bool coord = strcmp(cl_results_str(x, "seen_by", ""), "coordinator") == 0;
		if (strcmp(cl_results_str(x, "reason", ""), "coordinator_stall") == 0) {
			rc |= cli_rs_warn(
			    w,
			    "stage '%s': the coordinator itself could not run for %.2f s "
			    "from %.2f s into the stage (stopped, suspended or starved); the "
			    "agents' silence then was not theirs",
			    name, cl_results_num(x, "length_s"), cl_results_num(x, "at_s"));
			continue;
		}
		rc |= cli_rs_warn(
		    w,
		    "stage '%s': agent %lld (%s) %s for %.2f s from %.2f s into the stage "
		    "(seen by %s)",
		    name, (long long)json_integer_value(json_object_get(x, "agent")),
		    cl_results_str(x, "host", "?"),
		    coord ? "went silent (missing)" : "stalled: it could not run",
		    cl_results_num(x, "length_s"), cl_results_num(x, "at_s"),
		    coord ? "the coordinator" : "the agent");
	}
	double unlisted = cl_results_num(s, "client.stalls_unlisted");
	if (unlisted > 0)
		rc |= cli_rs_warn(w, "stage '%s': %.0f more stalls not listed", name, unlisted);
	return rc;
}

/*
 * Completed requests that asked the server to ignore its end of sequence and still got less
 * than they asked for, with the causes that apply and only those: the server is said not to
 * honour ignore_eos only when answers came back short with finish_reason stop (an end of
 * sequence; or the body's stop sequence, said too); a cap with length; another reason as
 * given; none when the stream said no reason.  Failed requests are errors, never short.
 */
static int warn_short_output(json_t *w, const json_t *s, const char *name, bool stop_sent)
{
	const json_t *short_n = cl_results_get(s, "tokens.short_requests");
	const json_t *ratio = cl_results_get(s, "tokens.received_ratio");
	if (json_integer_value(short_n) <= 0 || !json_is_number(ratio))
		return 0;
	double stop = cl_results_num(s, "tokens.short_finish.stop");
	double len = cl_results_num(s, "tokens.short_finish.length");
	double other = cl_results_num(s, "tokens.short_finish.other");
	double none = cl_results_num(s, "tokens.short_finish.none");
	char seen[160] = "", why[400] = "";
	size_t n = 0, k = 0;
	static const char *const names[] = { "stop", "length", "other", "none given" };
	double v[] = { stop, len, other, none };
	for (int i = 0; i < 4; i++)
		if (isfinite(v[i]) && v[i] > 0 && n < sizeof(seen))
			n += (size_t)snprintf(seen + n, sizeof(seen) - n, "%s%s %.0f",
					      n ? ", " : "", names[i], v[i]);
	if (stop > 0 && stop_sent && k < sizeof(why))
		k += (size_t)snprintf(why + k, sizeof(why) - k,
				      "%sthe request body sets stop (target.body), and a stop "
				      "sequence ends an answer where it appears",
				      k ? "; " : "");
	if (stop > 0 && k < sizeof(why))
		k += (size_t)snprintf(why + k, sizeof(why) - k, "%s%s", k ? "; or " : "",
				      "the server ended answers at their end of sequence: it does "
				      "not honour ignore_eos");
	if (len > 0 && k < sizeof(why))
		k += (size_t)snprintf(why + k, sizeof(why) - k,
				      "%sthe server ended answers for length below max_tokens: it "
				      "caps output (or its context is full)",
				      k ? "; " : "");
	if (other > 0 && k < sizeof(why))
		k += (size_t)snprintf(why + k, sizeof(why) - k,
				      "%sthe server ended answers for a reason of its own (its "
				      "finish_reason, e.g. content_filter)",
				      k ? "; " : "");
	if (none > 0 && k < sizeof(why))
		k += (size_t)snprintf(why + k, sizeof(why) - k,
				      "%sthe stream ended without a finish_reason: it does not "
				      "say why (check the server's log and any proxy between)",
				      k ? "; " : "");
	if (!k) /* a document older than short_finish: no reason was recorded */
		snprintf(why, sizeof(why), "the server does not honour ignore_eos or caps output");
	return cli_rs_warn(w,
			   "stage '%s': %lld requests stopped before the max_tokens they asked "
			   "for with ignore_eos (%.1f%% of the tokens asked were received; "
			   "finish_reason: %s): %s",
			   name, (long long)json_integer_value(short_n),
			   100 * json_number_value(ratio), seen[0] ? seen : "none given", why);
}

/* Whether stage s shows a server that closes the connection after every answer (llama.cpp's
 * llama-server does, while sending Keep-Alive): every request opened a connection. */
static bool churns(const json_t *s)
{
	double opened = cl_results_num(s, "http.connections_opened");
	double done = cl_results_num(s, "requests.completed");
	double resent = cl_results_num(s, "requests.resent");
	if (!isfinite(opened) || !isfinite(done) || done < 8 || opened < done)
		return false;
	/* A keep-alive server opens one connection per stream: with as many streams as
	 * requests, or an open-loop stage without re-sends, many connections prove nothing. */
	double streams = cl_results_num(s, "concurrency");
	return isfinite(streams) && streams > 0 ? done >= 2 * streams : resent > 0;
}

/*
 * Such a server: each request opens a connection, and some are sent twice when they find
 * their reused connection closed.  One warning naming every stage that shows it ("every
 * stage" when all do), with their figures added up.
 */
static int warn_churn(json_t *w, const json_t *stages)
{
	char names[400] = "";
	size_t used = 0, n = 0, i;
	double opened = 0, done = 0, resent = 0;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		if (!churns(s))
			continue;
		n++;
		opened += cl_results_num(s, "http.connections_opened");
		done += cl_results_num(s, "requests.completed");
		double r = cl_results_num(s, "requests.resent");
		resent += isfinite(r) ? r : 0;
		int k = snprintf(names + used, sizeof(names) - used, "%s'%s'", used ? ", " : "",
				 cl_results_str(s, "name", ""));
		if (k > 0 && (size_t)k < sizeof(names) - used)
			used += (size_t)k;
		else if (used + 4 < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "...");
	}
	if (!n)
		return 0;
	char who[440];
	if (n == json_array_size(stages) && n > 1)
		snprintf(who, sizeof(who), "every stage (%s)", names);
	else
		snprintf(who, sizeof(who), "stage%s %s", n > 1 ? "s" : "", names);
	return cli_rs_warn(
	    w,
	    "the server closes the connection after each answer: %s opened %.0f "
	    "connections for %.0f completed requests, and %.0f requests were sent twice "
	    "after finding their connection closed. Each request pays a new TCP (and TLS) "
	    "handshake, which is part of its TTFT on this server",
	    who, opened, done, resent);
}

/* A stage's completed answers that were reasoning only: a thinking model's answer cut
 * inside its reasoning (the only cause left once an answer of nothing is an error). */
static int warn_no_content(json_t *w, const json_t *s, const char *name)
{
	/* requests.no_content counts completed answers that carried reasoning and no answer
	 * token (one that carried nothing at all is an empty_answer error, warned apart) */
	double no_content = cl_results_num(s, "requests.no_content");
	if (!(no_content > 0))
		return 0;
	return cli_rs_warn(
	    w,
	    "stage '%s': %.0f of %.0f completed requests carried reasoning and no "
	    "answer token: max_tokens may end a thinking model's answer inside its "
	    "reasoning; raise workload.max_tokens or turn thinking off. They are not "
	    "counted good and have no TTFC",
	    name, no_content, cl_results_num(s, "requests.completed"));
}

/* A stage's requests the client abandoned (workload.cancel): which figures leave them out,
 * and the server's own count of aborted requests beside chatload's where it gives one. */
static int warn_cancelled(json_t *w, const json_t *s, const char *name)
{
	double cancelled = cl_results_num(s, "requests.cancelled");
	if (!(cancelled > 0))
		return 0;
	double aborted = cl_results_num(s, "server.aborted_requests");
	char srv[96] = "";
	if (isfinite(aborted))
		snprintf(srv, sizeof(srv), "; the server counted %.0f aborted", aborted);
	return cli_rs_warn(
	    w,
	    "stage '%s': %.0f of %.0f requests were cancelled by the client (workload.cancel)%s. "
	    "They are neither completed nor errors: goodput, requests/s, the error rate and "
	    "E2E/TPOT leave them out; TTFT keeps those that had a first token",
	    name, cancelled, cl_results_num(s, "requests.started"), srv);
}

/*
 * Request classes sent with different priorities whose first tokens did not come in that
 * order: the class with the lowest priority value (served first by vLLM's priority
 * scheduling) did not get its first token clearly sooner, at the median, than the one with
 * the highest value (not below PRIORITY_CLEAR of its TTFT p50; a server that schedules by
 * priority while it queues gives far less, 34 against 272 ms on the simulator).  Either the
 * server does not honour `priority` (vLLM without --scheduling-policy priority, llama.cpp,
 * SGLang without its flag) or it never had to queue; the run says what it saw, not why.
 */
#define PRIORITY_CLEAR 0.8
static int warn_priority(json_t *w, const json_t *s, const char *name)
{
	const json_t *first = NULL, *last = NULL, *c;
	size_t i;
	json_array_foreach(json_object_get(s, "classes"), i, c)
	{
		const json_t *p = json_object_get(c, "priority");
		if (!json_is_integer(p) || !isfinite(cl_results_num(c, "latency_ms.ttft.p50")))
			continue;
		json_int_t v = json_integer_value(p);
		if (!first || v < json_integer_value(json_object_get(first, "priority")))
			first = c;
		if (!last || v > json_integer_value(json_object_get(last, "priority")))
			last = c;
	}
	if (!first || json_integer_value(json_object_get(first, "priority")) ==
			  json_integer_value(json_object_get(last, "priority")))
		return 0;
	double t_first = cl_results_num(first, "latency_ms.ttft.p50");
	double t_last = cl_results_num(last, "latency_ms.ttft.p50");
	if (t_first < PRIORITY_CLEAR * t_last)
		return 0;
	return cli_rs_warn(
	    w,
	    "stage '%s': class '%s' (priority %lld) did not get its first token clearly sooner "
	    "than class '%s' (priority %lld): TTFT p50 %.1f against %.1f ms. The server did not "
	    "serve by priority here: it does not honour the priority field (vLLM needs "
	    "--scheduling-policy priority; llama.cpp has none), or it never had to queue",
	    name, cl_results_str(first, "name", "?"),
	    (long long)json_integer_value(json_object_get(first, "priority")),
	    cl_results_str(last, "name", "?"),
	    (long long)json_integer_value(json_object_get(last, "priority")), t_first, t_last);
}

const char *cl_results_estimate_source(const json_t *doc, double *requests_per_s,
				       bool *client_bound)
{
	const json_t *e = json_array_get(json_object_get(doc, "estimates"), 0);
	const json_t *at = json_object_get(e, "stage_index");
	const json_t *s = json_is_integer(at) ? json_array_get(json_object_get(doc, "stages"),
							       (size_t)json_integer_value(at))
					      : NULL;
	*requests_per_s = s ? cl_results_num(e, "requests_per_s") : NAN;
	*client_bound = s && json_is_true(cl_results_get(s, "client.client_bound"));
	return s ? cl_results_str(s, "name", "") : NULL;
}

/* The estimates rest on one stage's throughput: a client-bound one measured the client. */
static int warn_estimate_source(json_t *w, const json_t *doc)
{
	double rps;
	bool client_bound;
	const char *stage = cl_results_estimate_source(doc, &rps, &client_bound);
	if (!stage || !client_bound)
		return 0;
	return cli_rs_warn(w,
			   "the estimates come from stage '%s', which was client-bound: its %.4g "
			   "requests/s describe the client, not the server, so the hours may be "
			   "too many; estimate from a stage that was not (estimate.from_stage), or "
			   "add agents or workers",
			   stage, rps);
}

/* The warning for stage s when it is marked too_short (stage.c judges it): its numbers and the
 * way out.  0 or CL_ENOMEM. */
static int warn_too_short(json_t *w, const json_t *s)
{
	if (!json_is_true(json_object_get(s, "too_short")))
		return 0;
	const char *name = cl_results_str(s, "name", "");
	double done = cl_results_num(s, "requests.completed");
	double started = cl_results_num(s, "requests.started");
	double window = cl_results_num(s, "duration_s");
	double e2e_ms = cl_results_num(s, "latency_ms.e2e.p50");
	char took[96];
	if (isfinite(e2e_ms))
		snprintf(took, sizeof(took), "answers take ~%.3g s", e2e_ms / 1e3);
	else
		snprintf(took, sizeof(took), "no answer ended within the stage and its drain");
	return cli_rs_warn(w,
			   "stage '%s' is too short for its requests: %.0f of %.0f completed in "
			   "%.3g s, %s; its percentiles and rates rest on the stage's edges. "
			   "Lengthen it (to at least %s) or bound it by requests",
			   name, done, started, window, took,
			   isfinite(e2e_ms) ? "two answers' time and 10 completions"
					    : "10 completions");
}

/* The warning about requests that re-sent a body the run had sent already (warmup and stages
 * of doc), if any did: a server's prompt cache answers those from cache, and their TTFT reads
 * better than a new user's would.  It advises dropping order: per_stage only when the run set
 * it, and speaks of latency, not TTFT, for embeddings.  0 or CL_ENOMEM. */
static int warn_repeated(json_t *w, const json_t *doc)
{
	double repeated = cl_results_num(doc, "warmup.repeated");
	if (!isfinite(repeated))
		repeated = 0;
	char where[320] = "";
	size_t used = 0;
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		double n = cl_results_num(s, "requests.repeated");
		if (!isfinite(n) || n <= 0)
			continue;
		repeated += n;
		int k = snprintf(where + used, sizeof(where) - used, "%s'%s' %.0f",
				 used ? ", " : "", cl_results_str(s, "name", ""), n);
		if (k > 0 && (size_t)k < sizeof(where) - used)
			used += (size_t)k;
	}
	if (repeated <= 0)
		return 0;
	/* A transcription run goes through its clips again by design (workload.audio.count),
	 * and the transcription servers chatload knows (vLLM, OpenAI's) keep no audio's answer
	 * between requests: nothing to warn of. */
	const char *api = cl_results_str(doc, "scenario.target.api", "chat");
	if (strcmp(api, "transcription") == 0)
		return 0;
	/* What a repeat costs, for what was sent: a generation's TTFT, an embedding's (or a
	 * rerank's) latency. */
	bool embeddings = strcmp(api, "embeddings") == 0 || strcmp(api, "rerank") == 0 ||
			  strcmp(api, "score") == 0;
	bool per_stage = strcmp(cl_results_str(doc, "workload.order", "run"), "per_stage") == 0;
	return cli_rs_warn(
	    w,
	    "%.0f requests re-sent %s this run had already sent (%s%s%s): %s. Give the "
	    "workload more %ss than the run sends (a larger dataset, a larger synthetic.count "
	    "or none, which makes every request distinct)%s",
	    repeated, embeddings ? "an input" : "a prompt", used ? "stages " : "in the warmup",
	    where, cl_results_num(doc, "warmup.repeated") > 0 && used ? " and the warmup" : "",
	    embeddings ? "a server that caches inputs or their vectors may answer them from its "
			 "cache, so their latency reads better than a new input's"
		       : "a server's prompt cache (vLLM, SGLang, llama.cpp) may answer them "
			 "from cache, so their TTFT reads better than a new prompt's",
	    embeddings ? "input" : "prompt",
	    per_stage ? ", or drop workload.order: per_stage (every stage sends the same "
			"bodies again)"
		      : "");
}

static json_t *warnings_json(struct cl_results *r)
{
	json_t *w = json_array();
	if (!w)
		return NULL;
	const json_t *stages = json_object_get(r->doc, "stages");
	size_t i;
	const json_t *s;
	int rc = 0;
	bool eos_asked = json_integer_value(cl_results_get(r->doc, "workload.ignore_eos")) > 0;
	bool stop_sent = json_integer_value(cl_results_get(r->doc, "workload.stop")) > 0;
	json_array_foreach(stages, i, s)
	{
		const char *name = cl_results_str(s, "name", "");
		const char *status = cl_results_str(s, "status", "ok");
		const char *reason = cl_results_str(s, "reason", NULL);
		enum cl_stage_status st;
		if (cl_stage_status_parse(status, &st) != 0 || st != CL_STAGE_OK)
			rc |= cli_rs_warn(w, "stage '%s' %s%s%s", name, status, reason ? ": " : "",
					  reason ? reason : "");
		if (json_is_true(cl_results_get(s, "client.client_bound")))
			rc |= warn_client_bound(
			    w, s, name, !r->client_bound_warn && cli_rs_client_bound_gates(s));
		rc |= cli_rs_fault_warnings(w, s);
		rc |= warn_too_short(w, s);
		rc |= warn_no_content(w, s, name);
		rc |= warn_cancelled(w, s, name);
		rc |= warn_priority(w, s, name);
		double empty = cl_results_num(s, "requests.errors.empty_answer");
		if (empty > 0)
			rc |= cli_rs_warn(
			    w,
			    "stage '%s': %.0f requests were answered with a stream that carried "
			    "no token, no finish_reason and no usage (empty_answer errors): the "
			    "server answered nothing; its log says why (a prompt longer than its "
			    "context, a request it refused without saying so)",
			    name, empty);
		if (eos_asked)
			rc |= warn_short_output(w, s, name, stop_sent);
		/* HTTP/2 asked for, HTTP/1.1 got (http2: preferred falls back silently). */
		double h1 = cl_results_num(s, "http.completed_h1");
		const char *want = cl_results_str(r->doc, "scenario.target.http2", "false");
		if (strcmp(want, "false") != 0 && h1 > 0)
			rc |= cli_rs_warn(
			    w,
			    "stage '%s': %.0f of %.0f completed requests went over HTTP/1.1 "
			    "although target.http2 is %s",
			    name, h1, cl_results_num(s, "requests.completed"), want);
		const char *src = cl_results_str(s, "tokens.source", "usage");
		/* A transcription answered in one document has no chunks to count: its tokens
		 * are what its usage says, and vLLM's says only the audio's seconds. */
		bool whole_audio = json_is_object(json_object_get(s, "audio")) &&
				   cl_results_num(s, "tokens.chunks") == 0;
		if (!whole_audio && (strcmp(src, "chunks") == 0 || strcmp(src, "mixed") == 0))
			rc |= cli_rs_warn(w,
					  "stage '%s': some token counts come from counting chunks "
					  "(the server sent no usage)",
					  name);
	}
	rc |= warn_churn(w, stages);
	rc |= warn_estimate_source(w, r->doc);
	rc |= warn_repeated(w, r->doc);
	json_array_foreach(json_object_get(r->doc, "agents"), i, s)
	{
		if (json_is_true(json_object_get(s, "lost")))
			rc |=
			    cli_rs_warn(w, "agent %lld (%s%s%s) was lost",
					(long long)json_integer_value(json_object_get(s, "id")),
					cl_results_str(s, "host", "?"),
					json_is_string(json_object_get(s, "address")) ? " at " : "",
					cl_results_str(s, "address", ""));
	}
	/* A stage that reported intervals but was never finished has no summary: say so, and
	 * where its intervals are. */
	for (size_t k = 0; r->finished && k < r->n_stages; k++) {
		if (r->stages[k].seen && !r->stages[k].finished)
			rc |=
			    cli_rs_warn(w,
					"stage '%s' never finished: its %llu intervals are only in "
					"intervals.jsonl",
					r->stages[k].name ? r->stages[k].name : "",
					(unsigned long long)r->stages[k].seen);
	}
	if (r->finished && !json_is_true(json_object_get(r->doc, "complete")))
		rc |= cli_rs_warn(w, "the run did not complete: %zu of %zu stages finished",
				  json_array_size(stages), r->n_stages);
	if (rc) {
		json_decref(w);
		return NULL;
	}
	return w;
}

int cli_rs_summarise(struct cl_results *r)
{
	json_t *verdict = NULL;
	int rc = verdict_json(r, &verdict);
	if (rc != 0)
		return rc;
	if (json_object_set_new(r->doc, "verdict", verdict) != 0)
		return CL_ENOMEM;
	if (cli_rs_agent_episodes(r->doc) != 0)
		return CL_ENOMEM;
	if (cli_rj_set(r->doc, "estimates", estimates_json(r)) ||
	    cli_rj_set(r->doc, "warnings", warnings_json(r)))
		return CL_ENOMEM;
	return 0;
}
