/* The run's results document: created at the start of a run, filled stage by stage,
 * checkpointed to disk after every stage and every interval, finished with a verdict. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"
#include "coordinator/results/verdict.h"

#include "chatload/buf.h"
#include "chatload/clock.h"
#include "chatload/exitcode.h"
#include "chatload/log.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RESULTS_JSON "results.json"

void cli_rs_remember_error(struct cl_results *r, const struct cl_err *e)
{
	if (r->last_error[0] == '\0')
		snprintf(r->last_error, sizeof(r->last_error), "%s", e->msg);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A file-name-safe version of the scenario name. */
static void safe_name(const char *name, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = name && *name ? name : "run"; *p && o + 1 < n && o < 64; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
		out[o++] = ok ? c : '_';
	}
	out[o] = '\0';
	if (out[0] == '.' || out[0] == '\0')
		out[0] = '_';
}

/* Points parent/latest at the run's directory (best effort: a real `latest` directory or a
 * read-only parent just leaves it alone). */
static void update_latest(const char *parent, const char *run_dir)
{
	char tmp[4096], link[4096];
	const char *base = strrchr(run_dir, '/');
	base = base ? base + 1 : run_dir;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.latest.tmp.%ld", parent, (long)getpid()) >=
		sizeof(tmp) ||
	    (size_t)snprintf(link, sizeof(link), "%s/latest", parent) >= sizeof(link))
		return;
	unlink(tmp);
	if (symlink(base, tmp) != 0)
		return;
	struct stat st;
	if ((lstat(link, &st) == 0 && !S_ISLNK(st.st_mode)) || rename(tmp, link) != 0) {
		unlink(tmp);
		CL_DEBUG("cannot update '%s'", link);
	}
}

int cl_results_make_dir(const char *out_dir, const char *parent, const char *name, int64_t wall_us,
			char **dir, struct cl_err *err)
{
	*dir = NULL;
	if (out_dir) {
		int rc = cli_rj_mkdirs(out_dir, err);
		if (rc != 0)
			return rc;
		*dir = strdup(out_dir);
		return *dir ? 0 : cl_err_set(err, CL_ENOMEM, "out of memory");
	}
	if (!parent)
		parent = "results";
	int rc = cli_rj_mkdirs(parent, err);
	if (rc != 0)
		return rc;
	char safe[80], stamp[32], path[4096];
	safe_name(name, safe, sizeof(safe));
	cl_wall_stamp(wall_us, stamp, sizeof(stamp));
	for (int n = 1; n < 1000; n++) {
		size_t len = strlen(parent);
		while (len > 1 && parent[len - 1] == '/')
			len--;
		int w = n == 1 ? snprintf(path, sizeof(path), "%.*s/%s-%s", (int)len, parent, safe,
					  stamp)
			       : snprintf(path, sizeof(path), "%.*s/%s-%s-%d", (int)len, parent,
					  safe, stamp, n);
		if (w < 0 || (size_t)w >= sizeof(path))
			return cl_err_set(err, CL_EINVAL, "results directory name too long in '%s'",
					  parent);
		if (mkdir(path, 0755) == 0) {
			*dir = strdup(path);
			if (!*dir)
				return cl_err_set(err, CL_ENOMEM, "out of memory");
			update_latest(parent, path);
			return 0;
		}
		if (errno != EEXIST)
			return cl_err_set(err, CL_EIO, "cannot create directory '%s': %s", path,
					  strerror(errno));
	}
	return cl_err_set(err, CL_EIO, "cannot create a unique directory under '%s'", parent);
}

static int make_dir(struct cl_results *r, const struct cl_scenario *s, const char *out_dir,
		    struct cl_err *err)
{
	return cl_results_make_dir(out_dir, s->output.dir, s->name, r->started_wall_us, &r->dir,
				   err);
}

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

static json_t *scenario_json(const struct cl_scenario *s, const char *path)
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

static int copy_scenario(struct cl_results *r, const struct cl_scenario *s)
{
	r->n_stages = s->n_stages;
	if (s->n_stages) {
		r->stages = calloc(s->n_stages, sizeof(*r->stages));
		if (!r->stages)
			return CL_ENOMEM;
	}
	for (size_t i = 0; i < s->n_stages; i++) {
		struct stage_state *ss = &r->stages[i];
		ss->stride = 1;
		ss->ramp_s = s->stages[i].ramp_us / 1e6;
		ss->duration_s = s->stages[i].duration_us / 1e6;
		ss->repeat_n = s->stages[i].repeat > 1 ? s->stages[i].repeat : 1;
		ss->intervals = json_array();
		if (!ss->intervals ||
		    (s->stages[i].name && !(ss->name = strdup(s->stages[i].name))))
			return CL_ENOMEM;
	}
	if (s->n_slos) {
		r->slos = calloc(s->n_slos, sizeof(*r->slos));
		if (!r->slos)
			return CL_ENOMEM;
	}
	for (size_t i = 0; i < s->n_slos; i++) {
		r->slos[i] = s->slos[i];
		r->slos[i].key = dup_or_null(s->slos[i].key ? s->slos[i].key : "slo");
		r->slos[i].stage = dup_or_null(s->slos[i].stage);
		r->n_slos = i + 1;
		if (!r->slos[i].key || (s->slos[i].stage && !r->slos[i].stage))
			return CL_ENOMEM;
	}
	if (s->estimate.n_samples) {
		r->samples = calloc(s->estimate.n_samples, sizeof(*r->samples));
		if (!r->samples)
			return CL_ENOMEM;
		memcpy(r->samples, s->estimate.samples,
		       s->estimate.n_samples * sizeof(*r->samples));
		r->n_samples = s->estimate.n_samples;
	}
	if (s->estimate.from_stage && !(r->from_stage = strdup(s->estimate.from_stage)))
		return CL_ENOMEM;
	r->cost_per_hour = cl_scenario_cost_per_hour(&s->cost);
	if (s->cost.currency && !(r->cost_currency = strdup(s->cost.currency)))
		return CL_ENOMEM;
	if (cli_rs_classes_copy(r, s) != 0)
		return CL_ENOMEM;
	r->client_bound_warn = s->client_bound == CL_CLIENT_BOUND_WARN;
	r->api = s->workload.api;
	r->abort_intervals = s->slo_abort_intervals;
	r->drift = s->drift;
	r->report_interval_s = s->agents.report_interval_us / 1e6;
	return 0;
}

static int fill_json(FILE *f, void *ctx)
{
	return cli_rj_dump(ctx, f);
}

int cli_rs_write(struct cl_results *r)
{
	struct cl_err e = { 0 };
	int rc = cli_rs_summarise(r);
	if (rc != 0) {
		cl_err_set(&e, rc, "cannot build '%s/%s': %s", r->dir, RESULTS_JSON,
			   cl_strerror(rc));
		cli_rs_remember_error(r, &e);
		return rc;
	}
	rc = cli_rj_write_atomic(r->dir, RESULTS_JSON, fill_json, r->doc, &e);
	if (rc != 0)
		cli_rs_remember_error(r, &e);
	return rc;
}

int cl_results_create(const struct cl_scenario *s, const char *scenario_path, int argc, char **argv,
		      const char *out_dir, struct cl_results **out, struct cl_err *err)
{
	int rc = 0;
	*out = NULL;
	struct cl_results *r = calloc(1, sizeof(*r));
	if (!r)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	r->started_wall_us = cl_wall_us();
	if ((rc = copy_scenario(r, s)) != 0) {
		cl_err_set(err, rc, "out of memory");
		goto out;
	}
	if ((rc = make_dir(r, s, out_dir, err)) != 0)
		goto out;

	json_t *argv_json = json_array();
	for (int i = 0; argv_json && i < argc; i++) {
		if (cli_rj_append(argv_json, cli_rj_str(argv[i]))) {
			json_decref(argv_json);
			argv_json = NULL;
		}
	}
	char started[40];
	cl_wall_iso8601(r->started_wall_us, started, sizeof(started));
	r->doc = json_pack("{s:s,s:s,s:o,s:o,s:s,s:n,s:n,s:b,s:n,s:o,s:{s:n,s:i,s:[],s:[]},"
			   "s:n,s:n,s:[],s:[],s:[],s:[],s:n}",
			   "schema", CL_RESULTS_SCHEMA, "chatload_version", CHATLOAD_VERSION,
			   "scenario", scenario_json(s, scenario_path), "command_line", argv_json,
			   "started_at", started, "finished_at", "duration_s", "complete", 0,
			   "exit_code", "output_dir", cli_rj_str(r->dir), "verdict", "pass",
			   "evaluated", 0, "checks", "breaches", "readiness", "warmup", "agents",
			   "stages", "estimates", "warnings", "workload");
	if (!r->doc) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		goto out;
	}
	char *ipath = cli_rj_path(r->dir, CLI_RS_INTERVALS_JSONL);
	if (!ipath) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		goto out;
	}
	r->intervals_fp = fopen(ipath, "we");
	if (!r->intervals_fp)
		rc = cl_err_set(err, CL_EIO, "cannot create '%s': %s", ipath, strerror(errno));
	free(ipath);
	if (rc != 0)
		goto out;
	if ((rc = cli_rs_write(r)) != 0) {
		cl_err_set(err, rc, "%s", r->last_error);
		goto out;
	}
	*out = r;
	r = NULL;
out:
	cl_results_destroy(r);
	return rc;
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

/* Evaluates every SLO that applies to the finished stage (metrics are at hand only now). */
json_t *cli_rs_checks(const struct cl_scn_slo *slos, size_t n, const char *name,
		      const struct cl_metrics *m, double window_s)
{
	json_t *checks = json_array();
	for (size_t i = 0; checks && i < n; i++) {
		const struct cl_scn_slo *slo = &slos[i];
		if (!cl_verdict_applies(slo, name))
			continue;
		bool has_data;
		double v = cl_verdict_measure(slo, m, window_s, &has_data);
		bool pass = cl_verdict_passes(slo, v, has_data);
		double shown = cl_verdict_to_unit(slo, v);
		json_t *c = json_pack("{s:o,s:o,s:f,s:o,s:s,s:b,s:o}", "slo", cli_rj_str(slo->key),
				      "stage", cli_rj_str(name), "limit",
				      cl_verdict_to_unit(slo, slo->limit), "measured",
				      has_data ? cli_rj_real(cli_rj_sig(shown, 9)) : json_null(),
				      "unit", cl_verdict_unit(slo), "pass", pass, "note",
				      has_data ? json_null() : json_string("no data"));
		if (cli_rj_append(checks, c)) {
			json_decref(checks);
			checks = NULL;
		}
	}
	return checks;
}

/* Finishes stage `stage` from cumulative: its object, checks, drift, ci95, into the document.
 * A repeated stage passes its pooled metrics and ss->repeats (n > 0): ci95 is then the
 * interval across the repeats, and the object lists them. */
static int finish_stage_obj(struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			    const struct cl_metrics *cumulative, double window_s,
			    enum cl_stage_status status, const char *reason)
{
	struct stage_state *ss = &r->stages[stage];
	size_t n_rep = json_array_size(ss->repeats);
	json_t *o =
	    cli_rs_stage_json(stage, st, cumulative, window_s, status, reason, &ss->client, r->api);
	/* workload.images: what they cost in prompt tokens, beside the text's estimate. */
	json_t *images = o ? cli_rs_images_json(json_object_get(r->doc, "workload"), o) : NULL;
	if (images && cli_rj_set(o, "images", images)) {
		json_decref(o);
		o = NULL;
	}
	/* several endpoints (target.urls): each one's share of the stage */
	const json_t *urls =
	    json_object_get(json_object_get(json_object_get(r->doc, "scenario"), "target"), "urls");
	if (o && cumulative->n_eps &&
	    cli_rj_set(o, "endpoints", cli_rs_endpoints_json(cumulative, urls, window_s))) {
		json_decref(o);
		o = NULL;
	}
	if (o && n_rep &&
	    (cli_rj_set(o, "repeat", json_integer((json_int_t)ss->repeat_n)) ||
	     json_object_set(o, "repeats", ss->repeats) != 0)) {
		json_decref(o);
		o = NULL;
	}
	/* A probe's breaches are its search's answer, not the run's: its checks live in its
	 * `probe` object; an ordinary stage's feed the verdict, drift checks included. */
	json_t *checks = ss->probe
			     ? json_array()
			     : cli_rs_checks(r->slos, r->n_slos, st->name, cumulative, window_s);
	/* workload.classes: each class's figures and its own SLOs, whose checks join the
	 * stage's (a probe's stay out of the verdict, as its stage's do) */
	json_t *class_checks = json_array();
	json_t *classes =
	    o && cumulative->n_cls && class_checks
		? cli_rs_classes_json(r, st->name, cumulative, window_s, class_checks, ss->server)
		: NULL;
	if (o && cumulative->n_cls && (!classes || cli_rj_set(o, "classes", classes))) {
		json_decref(o);
		o = NULL;
	}
	if (checks && !ss->probe && class_checks && json_array_extend(checks, class_checks) != 0) {
		json_decref(checks);
		checks = NULL;
	}
	json_decref(class_checks);
	json_t *extra = ss->probe ? cli_rs_probe_json(ss, cumulative, window_s)
				  : cli_rs_drift_json(ss->drift, &r->drift, st->name, checks);
	cli_rs_drift_free(ss->drift);
	ss->drift = NULL;
	json_t *ci = NULL;
	if (o && n_rep) {
		const json_t *reps[CL_RESULTS_MAX_REPEATS];
		for (size_t i = 0; i < n_rep && i < CL_RESULTS_MAX_REPEATS; i++)
			reps[i] = json_array_get(ss->repeats, i);
		ci = cli_rs_ci_repeats_json(
		    o, reps, n_rep < CL_RESULTS_MAX_REPEATS ? n_rep : CL_RESULTS_MAX_REPEATS,
		    ss->reps, cumulative);
	} else if (o) {
		ci = cli_rs_ci_json(ss->ci, o, cumulative);
	}
	cli_rs_ci_free(ss->ci);
	ss->ci = NULL;
	cli_rs_ci_reps_free(ss->reps);
	ss->reps = NULL;
	if (!o)
		json_decref(extra);
	if (o && cli_rj_set(o, "ci95", ci)) { /* takes ci, even on failure */
		json_decref(o);
		json_decref(extra);
		o = NULL;
	}
	if (!o || !checks || cli_rj_set(o, ss->probe ? "probe" : "drift", extra) ||
	    cli_rj_set(o, "intervals_stride", json_integer((json_int_t)ss->stride)) ||
	    cli_rj_set(o, "intervals_total", cli_rj_uint(ss->seen)) ||
	    json_object_set(o, "intervals", ss->intervals) != 0 ||
	    (ss->server && json_object_set(o, "server", ss->server) != 0)) {
		json_decref(o);
		json_decref(checks);
		return CL_ENOMEM;
	}
	/* Joules and money, from the figures just set (docs/results.md, "Joules and money"). */
	json_t *energy = cli_rs_energy_json(o);
	json_t *cost = cli_rs_cost_json(r->cost_per_hour, r->cost_currency, o);
	bool bad = energy && cli_rj_set(o, "energy", energy);
	bad = (cost && cli_rj_set(o, "cost", cost)) || bad; /* cli_rj_set takes v either way */
	if (bad) {
		json_decref(o);
		json_decref(checks);
		return CL_ENOMEM;
	}
	/* Keep the document's stages in scenario order whatever order they finish in. */
	if (cli_rs_insert_stage(json_object_get(r->doc, "stages"), stage, o) != 0) {
		json_decref(checks);
		return CL_ENOMEM;
	}
	ss->finished = true;
	ss->checks = checks;
	if (cli_rs_fit_finished_intervals(r) != 0)
		return CL_ENOMEM;
	return cli_rs_write(r);
}

int cl_results_finish_stage(struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			    const struct cl_metrics *cumulative, double window_s,
			    enum cl_stage_status status, const char *reason)
{
	bool known = cl_stage_status_name(status) != NULL;
	if (stage >= r->n_stages || !known || !st || !isfinite(window_s) || window_s < 0)
		return CL_EINVAL;
	struct stage_state *ss = &r->stages[stage];
	if (ss->finished || r->finished)
		return CL_ESTATE;
	return finish_stage_obj(r, stage, st, cumulative, window_s, status, reason);
}

/* One repeat's own object: the stage's figures and its batch-means ci95, without the
 * histograms (the pooled stage has them) or anything the pooled stage says for all. */
static json_t *repeat_json(struct stage_state *ss, size_t stage, const struct cl_scn_stage *st,
			   const struct cl_metrics *m, double window_s, enum cl_stage_status status,
			   const char *reason, enum cl_api api)
{
	json_t *o = cli_rs_stage_json(stage, st, m, window_s, status, reason, &ss->client, api);
	json_t *ci = o ? cli_rs_ci_json(ss->ci, o, m) : NULL;
	if (!o || cli_rj_set(o, "ci95", ci) ||
	    cli_rj_set(o, "repeat", json_integer((json_int_t)ss->repeats_done + 1))) {
		json_decref(o);
		return NULL;
	}
	/* The client's health accumulates over the repeats (its stalls, CPU maxima): it is the
	 * pooled stage's to say, not one repeat's. */
	static const char *const drop[] = { "histograms", "index",           "name",
					    "mode",       "concurrency",     "rate",
					    "arrival",    "planned",         "unaccounted",
					    "client",     "tokens_per_chunk" };
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		json_object_del(o, drop[i]);
	return o;
}

int cl_results_finish_repeat(struct cl_results *r, size_t stage, const struct cl_scn_stage *st,
			     const struct cl_metrics *cumulative, double window_s,
			     enum cl_stage_status status, const char *reason)
{
	bool known = cl_stage_status_name(status) != NULL;
	if (stage >= r->n_stages || !known || !st || !isfinite(window_s) || window_s < 0)
		return CL_EINVAL;
	struct stage_state *ss = &r->stages[stage];
	if (ss->finished || r->finished)
		return CL_ESTATE;
	if (ss->repeat_n <= 1 || ss->probe)
		return finish_stage_obj(r, stage, st, cumulative, window_s, status, reason);
	if (!ss->repeats && !(ss->repeats = json_array()))
		return CL_ENOMEM;
	if (!ss->pooled) {
		ss->pooled = calloc(1, sizeof(*ss->pooled));
		if (!ss->pooled || cl_metrics_init(ss->pooled) != 0)
			return CL_ENOMEM; /* freed with the stage state */
	}
	if (!ss->reps && !(ss->reps = cli_rs_ci_reps_new()))
		return CL_ENOMEM;
	if (cli_rs_ci_reps_add(ss->reps, window_s, cumulative) != 0)
		return CL_ENOMEM;
	json_t *o = repeat_json(ss, stage, st, cumulative, window_s, status, reason, r->api);
	cli_rs_ci_free(ss->ci);
	ss->ci = NULL;
	if (cli_rj_append(ss->repeats, o) || cl_metrics_merge(ss->pooled, cumulative) != 0)
		return CL_ENOMEM;
	ss->pooled_window_s += window_s;
	/* The pooled stage is as sound as its worst repeat: the first that was not ok says
	 * why. */
	if (status != CL_STAGE_OK && ss->pooled_status == CL_STAGE_OK) {
		char why[1600];
		snprintf(why, sizeof(why), "repeat %u: %s", ss->repeats_done + 1,
			 reason ? reason : cl_stage_status_name(status));
		ss->pooled_status = status;
		free(ss->pooled_reason);
		ss->pooled_reason = strdup(why);
	}
	ss->repeats_done++;
	if (ss->repeats_done < ss->repeat_n)
		return 0;
	return finish_stage_obj(r, stage, st, ss->pooled, ss->pooled_window_s, ss->pooled_status,
				ss->pooled_reason);
}

int cl_results_end_repeats(struct cl_results *r, size_t stage, const struct cl_scn_stage *st)
{
	if (stage >= r->n_stages || !st)
		return CL_EINVAL;
	struct stage_state *ss = &r->stages[stage];
	if (ss->finished || r->finished || ss->repeats_done == 0 || !ss->pooled)
		return 0;
	char why[1700];
	snprintf(why, sizeof(why), "%u of %u repeats ran%s%s", ss->repeats_done, ss->repeat_n,
		 ss->pooled_reason ? "; " : "", ss->pooled_reason ? ss->pooled_reason : "");
	return finish_stage_obj(r, stage, st, ss->pooled, ss->pooled_window_s, ss->pooled_status,
				why);
}

int cl_results_set_generate(struct cl_results *r, size_t stage, json_t *block)
{
	json_t *st = (json_t *)cl_results_stage(r, stage);
	if (!st || !block) {
		json_decref(block);
		return block ? CL_EINVAL : CL_ENOMEM;
	}
	if (json_object_set_new(st, "mode", json_string("generate")) != 0 ||
	    json_object_set_new(st, "generate", block) != 0)
		return CL_ENOMEM;
	return cli_rs_write(r);
}

size_t cl_results_breach_count(const struct cl_results *r)
{
	return r->breaches;
}

int cl_results_finish(struct cl_results *r, bool complete, int exit_code_hint, int *exit_code_out)
{
	*exit_code_out = CL_EXIT_FAILED;
	if (r->finished)
		return CL_ESTATE;
	r->finished = true;
	int64_t now = cl_wall_us();
	char finished[40];
	cl_wall_iso8601(now, finished, sizeof(finished));
	bool stage_failed = false, client_bound = false;
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(r->doc, "stages"), i, s)
	{
		enum cl_stage_status st;
		if (cl_stage_status_parse(cl_results_str(s, "status", NULL), &st) == 0 &&
		    st == CL_STAGE_FAILED)
			stage_failed = true;
		client_bound |= cli_rs_client_bound_gates(s);
	}
	if (cli_rj_set(r->doc, "finished_at", json_string(finished)) ||
	    cli_rj_set(r->doc, "duration_s",
		       json_real(cli_rj_round((now - r->started_wall_us) / 1e6, 3))) ||
	    cli_rj_set(r->doc, "complete", json_boolean(complete)))
		return CL_ENOMEM;
	/* The verdict decides the code, so summarise before choosing it. */
	int rc = cli_rs_summarise(r);
	if (rc != 0)
		return rc;
	int code = cl_verdict_exit_code(exit_code_hint, complete, stage_failed,
					client_bound && !r->client_bound_warn, r->breaches);
	if (cli_rj_set(r->doc, "exit_code", json_integer(code)))
		return CL_ENOMEM;
	int first = cli_rs_write(r);
	if (r->intervals_fp && fsync(fileno(r->intervals_fp)) != 0 && first == 0)
		first = CL_EIO;
	*exit_code_out = first == 0 ? code : CL_EXIT_FAILED;
	return first;
}

const json_t *cl_results_doc(const struct cl_results *r)
{
	return r->doc;
}

const char *cl_results_dir(const struct cl_results *r)
{
	return r->dir;
}

const char *cl_results_last_error(const struct cl_results *r)
{
	return r->last_error;
}

void cl_results_destroy(struct cl_results *r)
{
	if (!r)
		return;
	if (r->intervals_fp)
		fclose(r->intervals_fp);
	for (size_t i = 0; r->stages && i < r->n_stages; i++)
		cli_rs_stage_state_free(&r->stages[i]);
	free(r->stages);
	for (size_t i = 0; r->slos && i < r->n_slos; i++) {
		free(r->slos[i].key);
		free(r->slos[i].stage);
	}
	free(r->slos);
	cli_rs_classes_free(r);
	free(r->samples);
	free(r->from_stage);
	free(r->cost_currency);
	free(r->dir);
	json_decref(r->doc);
	free(r);
}
