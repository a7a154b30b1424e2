/* What results.json says of the run beside its stages: the scenario as asked (name, file and
 * digest, target, SLOs, estimate, cost), and what the run found before its first stage and
 * sets once: the target and model, the workload as rendered, the readiness gate, the warmup
 * and the agents with their source addresses. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/buf.h"
#include "chatload/log.h"

#include <stdlib.h>
#include <string.h>

/* Removes user:password@ from a URL before it is written anywhere. */
static json_t *url_json(const char *url)
{
	if (!url)
		return json_null();
	const char *scheme = strstr(url, "://");
	const char *at = scheme ? strchr(scheme + 3, '@') : NULL;
	const char *slash = scheme ? strchr(scheme + 3, '/') : NULL;
	if (!at || (slash && at > slash))
		return cli_rj_str(url);
	struct cl_buf b;
	cl_buf_init(&b, 0);
	json_t *v = NULL;
	if (cl_buf_append(&b, url, (size_t)(scheme + 3 - url)) == 0 && cl_buf_puts(&b, at + 1) == 0)
		v = cli_rj_str(b.data);
	cl_buf_free(&b);
	return v;
}

json_t *cli_rs_scenario_json(const struct cl_scenario *s, const char *path)
{
	json_t *sha = json_null();
	if (path) {
		struct cl_buf b;
		cl_buf_init(&b, CL_SCENARIO_MAX_BYTES + 1);
		if (cl_buf_read_file(&b, path) == 0) {
			char hex[65];
			cl_results_sha256_hex(b.data ? b.data : "", b.len, hex);
			sha = json_string(hex);
		}
		cl_buf_free(&b);
	}
	json_t *slos = json_array();
	for (size_t i = 0; slos && i < s->n_slos; i++) {
		const struct cl_scn_slo *slo = &s->slos[i];
		if (cli_rj_append(slos, json_pack("{s:o,s:o,s:f,s:s}", "key", cli_rj_str(slo->key),
						  "stage", cli_rj_str(slo->stage), "limit",
						  cl_verdict_to_unit(slo, slo->limit), "unit",
						  cl_verdict_unit(slo)))) {
			json_decref(slos);
			slos = NULL;
		}
	}
	json_t *samples = json_array();
	for (size_t i = 0; samples && i < s->estimate.n_samples; i++) {
		if (cli_rj_append(samples, cli_rj_uint(s->estimate.samples[i]))) {
			json_decref(samples);
			samples = NULL;
		}
	}
	json_t *target = json_pack("{s:o,s:b,s:o}", "url", url_json(s->target.url), "simulator",
				   s->target.simulator, "model", cli_rj_str(s->target.model));
	/* What was asked for, beside what each stage got (stage.http). */
	const char *h2 = !s->target.http2           ? "false"
			 : s->target.http2_fallback ? "preferred"
						    : "required";
	json_t *urls = s->target.n_urls ? json_array() : NULL;
	for (size_t i = 0; urls && i < s->target.n_urls; i++)
		if (cli_rj_append(urls, url_json(s->target.urls[i]))) {
			json_decref(urls);
			urls = NULL;
		}
	/* several endpoints: target.url stays the first, target.urls lists them all */
	if (!target)
		json_decref(urls);
	else if (s->target.n_urls &&
		 (!urls || cli_rj_set(target, "urls", urls) ||
		  cli_rj_set(target, "route", json_string(cl_route_name(s->target.route))))) {
		json_decref(target);
		target = NULL;
	}
	if (target &&
	    (cli_rj_set(target, "http2", json_string(h2)) ||
	     cli_rj_set(target, "api", json_string(cl_api_name(s->workload.api))) ||
	     cli_rj_set(target, "http2_streams_per_connection",
			json_integer(s->target.http2_streams ? s->target.http2_streams
							     : CL_HTTP2_DEFAULT_STREAMS)))) {
		json_decref(target);
		target = NULL;
	}
	return json_pack("{s:o,s:o,s:o,s:o,s:I,s:o,s:o,s:{s:o,s:o},s:s,s:o}", "name",
			 cli_rj_str(s->name), "description", cli_rj_str(s->description), "file",
			 cli_rj_str(path ? path : s->file), "sha256", sha, "stages_planned",
			 (json_int_t)s->n_stages, "target", target, "slo", slos, "estimate",
			 "samples", samples, "from_stage", cli_rj_str(s->estimate.from_stage),
			 "client_bound", s->client_bound == CL_CLIENT_BOUND_WARN ? "warn" : "fail",
			 "cost", cli_rs_cost_scenario_json(&s->cost));
}

void cl_results_set_readiness(struct cl_results *r, const struct cl_readiness_result *rr)
{
	json_t *v = rr ? cli_rs_readiness_json(rr) : json_null();
	if (!v || json_object_set_new(r->doc, "readiness", v) != 0)
		CL_WARN("cannot record the readiness result: out of memory");
}

void cl_results_set_target(struct cl_results *r, const char *url, const char *model, bool simulator)
{
	json_t *v = json_pack("{s:o,s:o,s:b}", "url", url_json(url), "model", cli_rj_str(model),
			      "simulator", simulator);
	if (!v || json_object_set_new(r->doc, "target", v) != 0)
		CL_WARN("cannot record the target: out of memory");
}

/* workload.calibrate's figures beside the estimate's: the prompts' mean in the target's
 * tokens, and what the target counted of some prompts as sent against that (null when the
 * calibration got no figure). */
static int set_calibration(json_t *v, const struct cl_scn_workload *w,
			   const struct cl_workload_stats *st)
{
	bool have = w->chars_per_token > 0 && st->bodies;
	json_t *mean =
	    have ? json_real(cli_rj_sig(
		       (double)st->prompt_chars_sum / w->chars_per_token / (double)st->bodies, 6))
		 : json_null();
	json_t *check =
	    st->calib_sample_cpt > 0
		? json_pack("{s:o,s:o,s:o,s:o}", "sample_chars_per_token",
			    json_real(cli_rj_round(st->calib_sample_cpt, 3)), "prompts_counted",
			    cli_rj_uint(st->calib_prompts), "counted_mean",
			    st->calib_prompts ? json_real(cli_rj_round(st->calib_counted_mean, 2))
					      : json_null(),
			    "calibrated_mean",
			    st->calib_prompts ? json_real(cli_rj_round(st->calib_built_mean, 2))
					      : json_null())
		: json_null();
	return cli_rj_set(v, "prompt_tokens_calibrated_mean", mean) ||
	       cli_rj_set(v, "calibration", check);
}

void cl_results_set_workload(struct cl_results *r, const struct cl_scn_workload *w,
			     const struct cl_workload_stats *st)
{
	static const char *const kinds[] = { "prompts", "dataset", "synthetic", "trace" };
	static const char *const formats[] = { "auto", "openai", "sharegpt", "text" };
	const char *kind = (unsigned)w->kind < 4 ? kinds[w->kind] : "prompts";
	json_t *prefix = st->prefix_groups
			     ? json_pack("{s:I,s:I}", "groups", (json_int_t)st->prefix_groups,
					 "tokens", (json_int_t)st->prefix_tokens)
			     : json_null();
	json_t *dataset = json_null();
	if (w->kind == CL_WORKLOAD_DATASET)
		dataset = json_pack(
		    "{s:o,s:s,s:b,s:o,s:o,s:o}", "file", cli_rj_str(w->dataset), "format",
		    formats[(unsigned)w->dataset_format < 4 ? w->dataset_format : 0], "shuffled",
		    w->dataset_shuffle, "records", cli_rj_uint(st->records), "filtered",
		    cli_rj_uint(st->filtered), "limited", cli_rj_uint(st->limited));
	double mean = st->bodies ? (double)st->requested_sum / (double)st->bodies : 0;
	json_t *v = json_pack(
	    "{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:f,s:o,s:o,s:o}", "kind", kind, "bodies",
	    cli_rj_uint(st->bodies), "own_output_length", cli_rj_uint(st->own_length), "ignore_eos",
	    cli_rj_uint(st->ignore_eos), "max_tokens", cli_rj_uint(w->max_tokens), "requested_min",
	    cli_rj_uint(st->requested_min), "requested_max", cli_rj_uint(st->requested_max),
	    "requested_mean", cli_rj_sig(mean, 6), "prompt_tokens_estimated_mean",
	    st->bodies ? json_real(cli_rj_sig((double)st->prompt_tokens_sum / st->bodies, 6))
		       : json_null(),
	    "shared_prefix", prefix, "dataset", dataset);
	/* The tag opening every first message (workload.salt), null when none was sent. */
	bool salted = st->salt[0];
	if (v && (cli_rj_set(v, "stop", cli_rj_uint(st->stop)) ||
		  cli_rj_set(v, "order", json_string(w->order_per_stage ? "per_stage" : "run")) ||
		  cli_rj_set(v, "salt", salted ? cli_rj_str(st->salt) : json_null()) ||
		  (w->calibrate && set_calibration(v, w, st)))) {
		json_decref(v);
		v = NULL;
	}
	/* workload.images: what each request carried (null without images). */
	static const char *const image_formats[] = { "png", "jpeg" };
	static const char *const details[] = { NULL, "auto", "low", "high" };
	json_t *images =
	    st->images
		? json_pack("{s:o,s:o,s:o,s:s,s:o,s:o}", "count", cli_rj_uint(st->images), "width",
			    cli_rj_uint(w->images.width), "height", cli_rj_uint(w->images.height),
			    "format", image_formats[w->images.format == CL_IMAGE_JPEG], "detail",
			    (unsigned)w->images.detail < 4 && details[w->images.detail]
				? json_string(details[w->images.detail])
				: json_null(),
			    "body_bytes_mean",
			    json_real(cli_rj_sig(
				st->bodies ? (double)st->body_bytes_sum / st->bodies : 0, 6)))
		: json_null();
	if (v && cli_rj_set(v, "images", images)) {
		json_decref(v);
		v = NULL;
	}
	if (v && w->calibrate &&
	    cli_rj_set(v, "chars_per_token",
		       w->chars_per_token > 0 ? json_real(cli_rj_round(w->chars_per_token, 3))
					      : json_null())) {
		json_decref(v);
		v = NULL;
	}
	if (!v || json_object_set_new(r->doc, "workload", v) != 0)
		CL_WARN("cannot record the workload: out of memory");
}

void cl_results_set_warmup(struct cl_results *r, const struct cl_metrics *warmup)
{
	json_t *v = warmup ? cli_rs_warmup_json(warmup) : json_null();
	if (!v || json_object_set_new(r->doc, "warmup", v) != 0)
		CL_WARN("cannot record the warmup result: out of memory");
}

/* [{address, connections}] of one agent's source addresses, added into the run's sums. */
static json_t *source_rows(const struct cl_source_conns *sc, json_t *sums)
{
	json_t *arr = json_array();
	for (uint32_t i = 0; arr && i < sc->n; i++) {
		const char *addr = sc->e[i].address;
		json_t *sum = json_object_get(sums, addr);
		uint64_t before = sum ? (uint64_t)json_integer_value(sum) : 0;
		if (cli_rj_append(arr, json_pack("{s:s,s:I}", "address", addr, "connections",
						 (json_int_t)sc->e[i].connections)) ||
		    json_object_set_new(
			sums, addr, json_integer((json_int_t)(before + sc->e[i].connections)))) {
			json_decref(arr);
			arr = NULL;
		}
	}
	return arr;
}

int cl_results_set_agents(struct cl_results *r, const struct cl_results_agent *agents, size_t n)
{
	json_t *arr = json_array();
	json_t *sums = json_object(); /* address -> connections over all agents */
	bool any_sources = false;
	for (size_t i = 0; arr && sums && i < n; i++) {
		const struct cl_results_agent *a = &agents[i];
		json_t *o = json_pack(
		    "{s:I,s:o,s:o,s:I,s:I,s:I,s:b}", "id", (json_int_t)a->id, "host",
		    cli_rj_str(a->host), "address", cli_rj_str(a->address), "workers",
		    (json_int_t)a->workers, "clock_offset_us", (json_int_t)a->clock_offset_us,
		    "start_skew_us", (json_int_t)a->start_skew_us, "lost", a->lost);
		if (o && a->sources && a->sources->n) {
			any_sources = true;
			json_t *rows = source_rows(a->sources, sums);
			if (!rows || json_object_set_new(o, "source_addresses", rows) != 0) {
				json_decref(o);
				o = NULL;
			}
		}
		if (cli_rj_append(arr, o)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	if (!arr || !sums || json_object_set_new(r->doc, "agents", arr) != 0) {
		json_decref(sums);
		return CL_ENOMEM;
	}
	/* The pool's whole use, summed over the agents, addresses in the order they first came. */
	json_t *total = any_sources ? json_array() : NULL;
	const char *addr;
	json_t *v;
	json_object_foreach(sums, addr, v)
	{
		if (total && cli_rj_append(total, json_pack("{s:s,s:O}", "address", addr,
							    "connections", v))) {
			json_decref(total);
			total = NULL;
			any_sources = false;
		}
	}
	json_decref(sums);
	if (any_sources && (!total || json_object_set_new(r->doc, "source_addresses", total)))
		return CL_ENOMEM;
	return 0;
}
