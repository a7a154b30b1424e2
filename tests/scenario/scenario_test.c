/* Tests of the scenario loader: every field and default, sweep expansion, body JSON typing,
 * anchors and merges, --set overrides, hard caps, and every bad file's message and position. */
#include "chatload/metrics.h"
#include "coordinator/scenario/scenario.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEC 1000000LL

/* cmocka 1.1.5 has no floating-point assertion; this one prints both operands. */
#define assert_double_equal(a, b)                                                                  \
	do {                                                                                       \
		double a_ = (a), b_ = (b);                                                         \
		if (!(fabs(a_ - b_) <= 1e-9 * (fabs(b_) + 1)))                                     \
			fail_msg("%s = %.17g, expected %s = %.17g", #a, a_, #b, b_);               \
	} while (0)

static void print_diags(const struct cl_diags *d)
{
	char buf[1024];
	for (size_t i = 0; i < d->n; i++)
		print_message("  diag: %s\n", cl_err_format(&d->items[i], buf, sizeof(buf)));
}

/* Loads text; asserts success (printing the diagnostics if not). */
static void load_ok(const char *text, const char *const *ov, struct cl_scenario *s)
{
	struct cl_diags d = { 0 };
	int rc = cl_scenario_load_string(text, strlen(text), "mem.yaml", ov, s, &d);
	if (rc != 0 || d.n != 0) {
		size_t n = d.n;
		print_diags(&d);
		cl_diags_free(&d);
		fail_msg("load failed: rc %d (%s), %zu diagnostics", rc, cl_strerror(rc), n);
	}
	cl_diags_free(&d);
}

/* Loads text expecting failure; asserts some diagnostic contains want (and, when line > 0, is
 * at line:col).  Returns the number of diagnostics. */
static size_t load_bad(const char *text, size_t len, const char *const *ov, int line, int col,
		       const char *want)
{
	struct cl_scenario s;
	struct cl_diags d = { 0 };
	int rc = cl_scenario_load_string(text, len, "mem.yaml", ov, &s, &d);
	bool found = false;
	for (size_t i = 0; i < d.n && !found; i++) {
		const struct cl_err *e = &d.items[i];
		found = strstr(e->msg, want) && (line <= 0 || (e->line == line && e->col == col));
	}
	if (rc == 0 || !found) {
		print_diags(&d);
		cl_diags_free(&d);
		cl_scenario_free(&s);
		fail_msg("expected an error '%s' at %d:%d, rc %d", want, line, col, rc);
	}
	/* on failure the scenario is freed and zeroed */
	assert_null(s.stages);
	assert_null(s.name);
	assert_int_equal(s.n_stages, 0);
	size_t n = d.n;
	cl_diags_free(&d);
	return n;
}

static const char minimal[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
			      "stages: [ { concurrency: 4, duration: 1m } ]\n";

static void defaults(void **state)
{
	struct cl_scenario s;
	load_ok(minimal, NULL, &s);
	assert_string_equal(s.name, "mem");
	assert_null(s.description);
	assert_string_equal(s.file, "mem.yaml");
	/* target */
	assert_string_equal(s.target.url, "http://127.0.0.1:8000/v1");
	assert_false(s.target.simulator);
	assert_null(s.target.model);
	assert_null(s.target.api_key_env);
	assert_null(s.target.body_json);
	assert_int_equal(s.target.n_headers, 0);
	assert_false(s.target.http2);
	assert_true(s.target.tls_verify);
	assert_null(s.target.ca_file);
	assert_int_equal(s.target.connect_timeout_us, 10 * SEC);
	/* agents */
	assert_int_equal(s.agents.local, 2);
	assert_null(s.agents.listen);
	assert_int_equal(s.agents.expect, 0);
	assert_int_equal(s.agents.join_timeout_us, 60 * SEC);
	assert_int_equal(s.agents.on_loss, CL_ON_LOSS_FAIL);
	assert_int_equal(s.agents.workers, 0);
	assert_int_equal(s.agents.report_interval_us, 1 * SEC);
	/* readiness */
	assert_true(s.readiness.enabled);
	assert_int_equal(s.readiness.timeout_us, 15 * 60 * SEC);
	assert_non_null(s.readiness.prompt);
	assert_non_null(strstr(s.readiness.prompt, "OK"));
	assert_int_equal(s.readiness.max_tokens, 16);
	assert_int_equal(s.readiness.request_timeout_us, 5 * 60 * SEC);
	assert_int_equal(s.readiness.consecutive, 2);
	assert_null(s.readiness.body_json);
	assert_int_equal(s.readiness.backoff_initial_us, 1 * SEC);
	assert_int_equal(s.readiness.backoff_max_us, 30 * SEC);
	/* warmup: limits follow the workload's */
	assert_int_equal(s.warmup.requests, 0);
	assert_int_equal(s.warmup.duration_us, 0);
	assert_int_equal(s.warmup.concurrency, 1);
	assert_int_equal(s.warmup.max_tokens, 256);
	assert_int_equal(s.warmup.request_timeout_us, 10 * 60 * SEC);
	assert_true(s.warmup.fail_on_error);
	/* workload: the built-in prompts */
	assert_int_equal(s.workload.kind, CL_WORKLOAD_PROMPTS);
	assert_int_equal(s.workload.n_prompts, 3);
	assert_string_equal(s.workload.prompts[0], "Write a Python quicksort.");
	assert_null(s.workload.system_prompt);
	assert_null(s.workload.dataset);
	assert_int_equal(s.workload.seed, 1);
	assert_int_equal(s.workload.max_tokens, 256);
	assert_int_equal(s.workload.request_timeout_us, 10 * 60 * SEC);
	assert_int_equal(s.workload.drain_timeout_us, 30 * SEC);
	assert_int_equal(s.workload.synthetic_count, 64);
	/* stages */
	assert_int_equal(s.n_stages, 1);
	assert_string_equal(s.stages[0].name, "c4");
	assert_int_equal(s.stages[0].mode, CL_MODE_CONCURRENCY);
	assert_int_equal(s.stages[0].concurrency, 4);
	assert_int_equal(s.stages[0].duration_us, 60 * SEC);
	assert_int_equal(s.stages[0].requests, 0);
	assert_int_equal(s.stages[0].ramp_us, 0);
	assert_int_equal(s.stages[0].line, 2);
	/* the rest */
	assert_int_equal(s.n_slos, 0);
	assert_false(s.slo_abort_on_breach);
	assert_int_equal(s.estimate.n_samples, 0);
	assert_null(s.estimate.from_stage);
	assert_int_equal(s.client_bound, CL_CLIENT_BOUND_FAIL);
	assert_null(s.output.dir);
	assert_int_equal(s.output.formats, CL_FMT_JSON | CL_FMT_CSV | CL_FMT_MD | CL_FMT_HTML);
	cl_scenario_free(&s);
	/* free twice and on zeroed memory is safe */
	cl_scenario_free(&s);
	struct cl_scenario z = { 0 };
	cl_scenario_free(&z);
	cl_scenario_free(NULL);
}

static const char full[] = "name: full\n"
			   "description: every key\n"
			   "target:\n"
			   "  url: https://llm.example:8443/v1/\n"
			   "  model: kimi-k2\n"
			   "  api_key_env: OPENAI_API_KEY\n"
			   "  body: { temperature: 0.6 }\n"
			   "  headers: { X-Team: perf, X-Trace: 'on' }\n"
			   "  http2: preferred\n"
			   "  http2_streams_per_connection: 250\n"
			   "  tls_verify: false\n"
			   "  ca_file: /etc/ca.pem\n"
			   "  connect_timeout: 3s\n"
			   "agents:\n"
			   "  local: 1\n"
			   "  listen: tls+tcp://0.0.0.0:7700\n"
			   "  expect: 4\n"
			   "  join_timeout: 2m\n"
			   "  on_loss: continue\n"
			   "  workers: 8\n"
			   "  token_env: CHATLOAD_TOKEN\n"
			   "  tls: { cert: c.pem, key: k.pem, ca: ca.pem }\n"
			   "  report_interval: 500ms\n"
			   "readiness:\n"
			   "  enabled: true\n"
			   "  timeout: 20m\n"
			   "  prompt: Say OK\n"
			   "  max_tokens: 8\n"
			   "  request_timeout: 1m\n"
			   "  consecutive: 3\n"
			   "  body: { chat_template_kwargs: { enable_thinking: false } }\n"
			   "  backoff: { initial: 2s, max: 1m }\n"
			   "warmup:\n"
			   "  requests: 5\n"
			   "  concurrency: 2\n"
			   "  max_tokens: 32\n"
			   "  request_timeout: 30s\n"
			   "  body: { top_k: 5 }\n"
			   "  fail_on_error: false\n"
			   "workload:\n"
			   "  prompts: [ 'one', \"two\", three ]\n"
			   "  system_prompt: You are terse.\n"
			   "  seed: 42\n"
			   "  max_tokens: 1024\n"
			   "  request_timeout: 20m\n"
			   "  drain_timeout: 45s\n"
			   "stages:\n"
			   "  - { concurrency: 1, requests: 3 }\n"
			   "  - { concurrency: [8, 16, 32], duration: 2m, ramp: 10s }\n"
			   "  - name: open\n"
			   "    rate: 1200/m\n"
			   "    arrival: gamma\n"
			   "    burstiness: 0.5\n"
			   "    max_concurrency: 64\n"
			   "    duration: 90s\n"
			   "  - { rate: [2/s, 0.5/s], arrival: constant, requests: 100 }\n"
			   "slo:\n"
			   "  - ttft_p99: 2s\n"
			   "    itl_p50: 20ms\n"
			   "    e2e_p999: 1m\n"
			   "    tpot_mean: 50ms\n"
			   "    e2e_sched_max: 5m\n"
			   "    error_rate: 1%\n"
			   "    min_output_tokens_per_s: 500\n"
			   "    min_requests_per_s: 2.5\n"
			   "    abort_on_breach: true\n"
			   "  - { stage: 32, ttfc_p90: 5s }\n"
			   "estimate: { samples: [100000, 900000], from_stage: 16 }\n"
			   "output: { dir: out/, formats: [csv, md] }\n";

static void every_field(void **state)
{
	struct cl_scenario s;
	load_ok(full, NULL, &s);
	assert_string_equal(s.name, "full");
	assert_string_equal(s.description, "every key");
	const struct cl_scn_target *t = &s.target;
	assert_string_equal(t->url, "https://llm.example:8443/v1"); /* trailing '/' dropped */
	assert_string_equal(t->model, "kimi-k2");
	assert_string_equal(t->api_key_env, "OPENAI_API_KEY");
	assert_string_equal(t->body_json, "{\"temperature\":0.6}");
	assert_int_equal(t->n_headers, 2);
	assert_string_equal(t->headers[0], "X-Team: perf");
	assert_string_equal(t->headers[1], "X-Trace: on");
	assert_true(t->http2);
	assert_true(t->http2_fallback); /* preferred: HTTP/1.1 allowed */
	assert_int_equal(t->http2_streams, 250);
	assert_false(t->tls_verify);
	assert_string_equal(t->ca_file, "/etc/ca.pem");
	assert_int_equal(t->connect_timeout_us, 3 * SEC);

	const struct cl_scn_agents *a = &s.agents;
	assert_int_equal(a->local, 1);
	assert_string_equal(a->listen, "tls+tcp://0.0.0.0:7700");
	assert_int_equal(a->expect, 4);
	assert_int_equal(a->join_timeout_us, 120 * SEC);
	assert_int_equal(a->on_loss, CL_ON_LOSS_CONTINUE);
	assert_int_equal(a->workers, 8);
	assert_string_equal(a->token_env, "CHATLOAD_TOKEN");
	assert_null(a->token_file);
	assert_string_equal(a->tls_cert, "c.pem");
	assert_string_equal(a->tls_key, "k.pem");
	assert_string_equal(a->tls_ca, "ca.pem");
	assert_int_equal(a->report_interval_us, 500000);

	const struct cl_scn_readiness *r = &s.readiness;
	assert_true(r->enabled);
	assert_int_equal(r->timeout_us, 20 * 60 * SEC);
	assert_string_equal(r->prompt, "Say OK");
	assert_int_equal(r->max_tokens, 8);
	assert_int_equal(r->request_timeout_us, 60 * SEC);
	assert_int_equal(r->consecutive, 3);
	assert_string_equal(r->body_json, "{\"chat_template_kwargs\":{\"enable_thinking\":false}}");
	assert_int_equal(r->backoff_initial_us, 2 * SEC);
	assert_int_equal(r->backoff_max_us, 60 * SEC);

	const struct cl_scn_warmup *w = &s.warmup;
	assert_int_equal(w->requests, 5);
	assert_int_equal(w->concurrency, 2);
	assert_int_equal(w->max_tokens, 32);
	assert_int_equal(w->request_timeout_us, 30 * SEC);
	assert_string_equal(w->body_json, "{\"top_k\":5}");
	assert_false(w->fail_on_error);

	const struct cl_scn_workload *wl = &s.workload;
	assert_int_equal(wl->kind, CL_WORKLOAD_PROMPTS);
	assert_int_equal(wl->n_prompts, 3);
	assert_string_equal(wl->prompts[0], "one");
	assert_string_equal(wl->prompts[1], "two");
	assert_string_equal(wl->prompts[2], "three");
	assert_string_equal(wl->system_prompt, "You are terse.");
	assert_int_equal(wl->seed, 42);
	assert_int_equal(wl->max_tokens, 1024);
	assert_int_equal(wl->request_timeout_us, 20 * 60 * SEC);
	assert_int_equal(wl->drain_timeout_us, 45 * SEC);

	/* 1 + 3 (sweep) + 1 + 2 (rate sweep) */
	assert_int_equal(s.n_stages, 7);
	static const char *const names[] = { "c1", "c8", "c16", "c32", "open", "r2", "r0.5" };
	for (size_t i = 0; i < 7; i++)
		assert_string_equal(s.stages[i].name, names[i]);
	assert_int_equal(s.stages[0].requests, 3);
	for (size_t i = 1; i <= 3; i++) {
		assert_int_equal(s.stages[i].mode, CL_MODE_CONCURRENCY);
		assert_int_equal(s.stages[i].duration_us, 120 * SEC);
		assert_int_equal(s.stages[i].ramp_us, 10 * SEC);
		assert_int_equal(s.stages[i].line, 49);
	}
	assert_int_equal(s.stages[3].concurrency, 32);
	const struct cl_scn_stage *o = &s.stages[4];
	assert_int_equal(o->mode, CL_MODE_RATE);
	assert_double_equal(o->rate_per_s, 20.0);
	assert_int_equal(o->arrival, CL_ARRIVAL_GAMMA);
	assert_double_equal(o->gamma_shape, 0.5);
	assert_int_equal(o->concurrency, 64); /* the cap */
	assert_int_equal(o->duration_us, 90 * SEC);
	assert_int_equal(o->line, 50);
	assert_int_equal(s.stages[5].arrival, CL_ARRIVAL_CONSTANT);
	assert_double_equal(s.stages[6].rate_per_s, 0.5);
	assert_int_equal(s.stages[6].requests, 100);
	assert_int_equal(s.stages[6].concurrency, 0);

	assert_int_equal(s.n_slos, 9);
	const struct cl_scn_slo *q = s.slos;
	assert_string_equal(q[0].key, "ttft_p99");
	assert_int_equal(q[0].kind, CL_SLO_LATENCY);
	assert_int_equal(q[0].lat, CL_LAT_TTFT);
	assert_double_equal(q[0].percentile, 99);
	assert_double_equal(q[0].limit, 2e6);
	assert_null(q[0].stage);
	assert_int_equal(q[0].line, 58);
	assert_int_equal(q[1].lat, CL_LAT_ITL);
	assert_double_equal(q[1].percentile, 50);
	assert_double_equal(q[1].limit, 20000);
	assert_int_equal(q[2].lat, CL_LAT_E2E);
	assert_double_equal(q[2].percentile, 99.9);
	assert_int_equal(q[3].lat, CL_LAT_TPOT);
	assert_double_equal(q[3].percentile, -1);
	assert_int_equal(q[4].lat, CL_LAT_E2E_SCHED);
	assert_double_equal(q[4].percentile, 100);
	assert_int_equal(q[5].kind, CL_SLO_ERROR_RATE);
	assert_double_equal(q[5].limit, 0.01);
	assert_int_equal(q[6].kind, CL_SLO_MIN_OUTPUT_TPS);
	assert_double_equal(q[6].limit, 500);
	assert_int_equal(q[7].kind, CL_SLO_MIN_REQUEST_RATE);
	assert_double_equal(q[7].limit, 2.5);
	/* stage given as a concurrency resolves to that stage's name */
	assert_int_equal(q[8].lat, CL_LAT_TTFC);
	assert_string_equal(q[8].stage, "c32");
	assert_true(s.slo_abort_on_breach);

	assert_int_equal(s.estimate.n_samples, 2);
	assert_int_equal(s.estimate.samples[0], 100000);
	assert_int_equal(s.estimate.samples[1], 900000);
	assert_string_equal(s.estimate.from_stage, "c16");
	assert_string_equal(s.output.dir, "out/");
	assert_int_equal(s.output.formats, CL_FMT_JSON | CL_FMT_CSV | CL_FMT_MD);
	cl_scenario_free(&s);
}

/* target.http2: true means required; required and preferred are words too; preferred is
 * the one the simulator (HTTP/1.1 only) accepts. */
static void http2_modes(void **state)
{
	static const struct {
		const char *value;
		bool h2, fallback;
	} cases[] = {
		{ "false", false, false },   { "true", true, false },     { "yes", true, false },
		{ "required", true, false }, { "preferred", true, true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256];
		snprintf(text, sizeof(text),
			 "target: { url: 'http://127.0.0.1:8000/v1', http2: %s }\n"
			 "stages: [ { concurrency: 1, requests: 1 } ]\n",
			 cases[i].value);
		struct cl_scenario s;
		load_ok(text, NULL, &s);
		assert_int_equal(s.target.http2, cases[i].h2);
		assert_int_equal(s.target.http2_fallback, cases[i].fallback);
		assert_int_equal(s.target.http2_streams, 0); /* default, decided by httpver */
		cl_scenario_free(&s);
	}
	struct cl_scenario s;
	load_ok("target: { simulator: {}, http2: preferred }\n"
		"stages: [ { concurrency: 1, requests: 1 } ]\n",
		NULL, &s);
	assert_true(s.target.http2_fallback);
	cl_scenario_free(&s);
}

static void simulator_target(void **state)
{
	struct cl_scenario s;
	load_ok("target:\n"
		"  model: m1\n"
		"  simulator:\n"
		"    ttft: 100ms\n"
		"    itl: 10ms\n"
		"    output_tokens: 64\n"
		"    max-batch: 32\n"
		"    fault_500: 0.25\n"
		"    jitter: 0.1\n"
		"stages: [ { concurrency: 1, requests: 1 } ]\n",
		NULL, &s);
	assert_true(s.target.simulator);
	assert_null(s.target.url);
	/* keys in flag form, values as written; the scenario's model is served */
	static const char *const kv[][2] = { { "ttft", "100ms" },       { "itl", "10ms" },
					     { "output-tokens", "64" }, { "max-batch", "32" },
					     { "fault-500", "0.25" },   { "jitter", "0.1" },
					     { "model", "m1" } };
	assert_int_equal(s.target.n_sim, 7);
	for (size_t i = 0; i < 7; i++) {
		assert_string_equal(s.target.sim[i].key, kv[i][0]);
		assert_string_equal(s.target.sim[i].value, kv[i][1]);
	}
	cl_scenario_free(&s);

	/* "simulator:" with nothing after it is the simulator with its defaults */
	load_ok("target: { simulator: }\nstages: [ { concurrency: 1, requests: 1 } ]\n", NULL, &s);
	assert_true(s.target.simulator);
	assert_int_equal(s.target.n_sim, 0);
	cl_scenario_free(&s);

	/* a model list served by the simulator may include the target's */
	load_ok("target: { model: b, simulator: { model: 'a,b' } }\n"
		"stages: [ { concurrency: 1, requests: 1 } ]\n",
		NULL, &s);
	assert_int_equal(s.target.n_sim, 1);
	cl_scenario_free(&s);
	const char *bad = "target: { model: c, simulator: { model: 'a,b' } }\n"
			  "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 11, "target.model 'c' is not served");
	bad = "target: { simulator: { output_tokens: lots } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 39, "must be N, request, uniform:MIN-MAX");
	load_ok("target: { simulator: { output_tokens: 'uniform:10-20', seed: 3 } }\n"
		"stages: [ { concurrency: 1, requests: 1 } ]\n",
		NULL, &s);
	cl_scenario_free(&s);
}

static void body_json_types(void **state)
{
	struct cl_scenario s;
	load_ok("target:\n"
		"  url: http://h/v1\n"
		"  body:\n"
		"    i: 42\n"
		"    neg: -7\n"
		"    hex: 0x1f\n"
		"    f: 0.25\n"
		"    e: 1e3\n"
		"    t: true\n"
		"    n: null\n"
		"    tilde: ~\n"
		"    s: hello\n"
		"    qi: '42'\n"
		"    qb: \"true\"\n"
		"    qn: 'null'\n"
		"    str_tag: !!str 12\n"
		"    list: [1, two, 3.5, false, [x]]\n"
		"    map: { a: { b: [ { c: 1 } ] } }\n"
		"    empty_map: {}\n"
		"    block: |\n"
		"      line\n"
		"stages: [ { concurrency: 1, requests: 1 } ]\n",
		NULL, &s);
	assert_string_equal(
	    s.target.body_json,
	    "{\"i\":42,\"neg\":-7,\"hex\":31,\"f\":0.25,\"e\":1000.0,\"t\":true,"
	    "\"n\":null,\"tilde\":null,\"s\":\"hello\",\"qi\":\"42\",\"qb\":\"true\","
	    "\"qn\":\"null\",\"str_tag\":\"12\",\"list\":[1,\"two\",3.5,false,[\"x\"]],"
	    "\"map\":{\"a\":{\"b\":[{\"c\":1}]}},\"empty_map\":{},\"block\":\"line\\n\"}");
	cl_scenario_free(&s);

	const char *bad = "target: { url: 'http://h/v1', body: [1, 2] }\n"
			  "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 37, "target.body must be a mapping of request fields");
	bad = "target: { url: 'http://h/v1', body: { x: .inf } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 42,
		 "target.body.x is '.inf', which JSON cannot represent");
	bad = "target: { url: 'http://h/v1', body: { stream: false } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 39, "target.body.stream is set by chatload");
	bad = "target: { url: 'http://h/v1', body: { big: 99999999999999999999 } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 44, "too large for JSON");
}

static void anchors_need_known_keys(void **state)
{
	/* top-level keys starting with x- are ignored, so they can hold anchors */
	struct cl_scenario s;
	load_ok("x-base: &base { duration: 30s, ramp: 5s }\n"
		"target: { url: 'http://h/v1' }\n"
		"stages:\n"
		"  - { <<: *base, concurrency: 2 }\n"
		"  - { <<: [{ ramp: 1s }, *base], rate: 3/s }\n",
		NULL, &s);
	assert_int_equal(s.n_stages, 2);
	assert_int_equal(s.stages[0].duration_us, 30 * SEC);
	assert_int_equal(s.stages[0].ramp_us, 5 * SEC);
	/* in a list of merges the earlier mapping wins */
	assert_int_equal(s.stages[1].ramp_us, 1 * SEC);
	assert_int_equal(s.stages[1].duration_us, 30 * SEC);
	assert_int_equal(s.stages[1].mode, CL_MODE_RATE);
	cl_scenario_free(&s);
	/* merged keys are checked like written ones: duration and requests together */
	const char *both = "x-b: &b { duration: 30s }\n"
			   "target: { url: 'http://h/v1' }\n"
			   "stages: [ { <<: *b, concurrency: 2, requests: 3 } ]\n";
	load_bad(both, strlen(both), NULL, 3, 37, "set duration or requests, not both");
	const char *bad = "base: &base { duration: 30s }\n"
			  "target: { url: 'http://h/v1' }\n"
			  "stages: [ { <<: *base, concurrency: 2 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 1, "unknown key 'base' at the top level");

	load_ok("target: { url: 'http://h/v1' }\n"
		"stages:\n"
		"  - &base { concurrency: 2, duration: 30s, ramp: 5s }\n"
		"  - { <<: *base, concurrency: 4, duration: 1m }\n"
		"  - { <<: [*base, { name: last }], concurrency: 8 }\n"
		"slo: &s { ttft_p99: 1s }\n",
		NULL, &s);
	assert_int_equal(s.n_stages, 3);
	assert_int_equal(s.stages[0].concurrency, 2);
	assert_int_equal(s.stages[0].duration_us, 30 * SEC);
	/* explicit keys win over merged ones */
	assert_int_equal(s.stages[1].concurrency, 4);
	assert_int_equal(s.stages[1].duration_us, 60 * SEC);
	assert_int_equal(s.stages[1].ramp_us, 5 * SEC);
	assert_string_equal(s.stages[2].name, "last");
	assert_int_equal(s.stages[2].concurrency, 8);
	assert_int_equal(s.stages[2].duration_us, 30 * SEC);
	cl_scenario_free(&s);
}

static void overrides(void **state)
{
	struct cl_scenario s;
	const char *const ov1[] = { "stages.0.duration=30s", "target.model=x", "agents.local=3",
				    "workload.prompts=[a, b]", NULL };
	load_ok(minimal, ov1, &s);
	assert_int_equal(s.stages[0].duration_us, 30 * SEC);
	assert_string_equal(s.target.model, "x");
	assert_int_equal(s.agents.local, 3);
	assert_int_equal(s.workload.n_prompts, 2);
	assert_string_equal(s.workload.prompts[1], "b");
	cl_scenario_free(&s);

	/* a value is YAML: a flow list turns a stage into a sweep */
	const char *const ov2[] = { "stages.0.concurrency=[1,2]", NULL };
	load_ok(minimal, ov2, &s);
	assert_int_equal(s.n_stages, 2);
	assert_string_equal(s.stages[1].name, "c2");
	cl_scenario_free(&s);

	/* a whole new section, and a switch from url to the simulator */
	const char *const ov3[] = { "target.url=", "target.simulator.ttft=5ms", "slo.ttft_p99=1s",
				    NULL };
	const char *doc =
	    "target: { url: 'http://h/v1' }\nstages: [ { concurrency: 1, requests: 1 } ]\n";
	struct cl_diags d = { 0 };
	/* target.url set to nothing is still given (and empty): the exclusivity check fires */
	int rc = cl_scenario_load_string(doc, strlen(doc), "o.yaml", ov3, &s, &d);
	assert_int_equal(rc, CL_EINVAL);
	cl_diags_free(&d);
	const char *const ov4[] = { "target={ simulator: { ttft: 5ms } }", "slo.ttft_p99=1s",
				    NULL };
	load_ok(doc, ov4, &s);
	assert_true(s.target.simulator);
	assert_string_equal(s.target.sim[0].value, "5ms");
	assert_int_equal(s.n_slos, 1);
	cl_scenario_free(&s);

	/* overriding through an alias changes only the path named, not the anchor's other uses */
	const char *shared = "target: { url: 'http://h/v1' }\n"
			     "stages:\n"
			     "  - &b { concurrency: 2, duration: 30s }\n"
			     "  - { <<: *b, name: second }\n"
			     "  - *b\n";
	const char *const ov5[] = { "stages.2.duration=5s", "stages.2.name=third",
				    "stages.1.concurrency=7", NULL };
	load_ok(shared, ov5, &s);
	assert_int_equal(s.stages[0].duration_us, 30 * SEC);
	assert_int_equal(s.stages[1].duration_us, 30 * SEC);
	assert_int_equal(s.stages[1].concurrency, 7);
	assert_int_equal(s.stages[2].duration_us, 5 * SEC);
	assert_string_equal(s.stages[2].name, "third");
	assert_int_equal(s.stages[0].concurrency, 2);
	cl_scenario_free(&s);

	/* errors name the override */
	const char *const e1[] = { "stages.9.duration=1s", NULL };
	load_bad(minimal, strlen(minimal), e1, 0, 0, "--set stages.9.duration=1s: no stage 9");
	const char *const e2[] = { "stages.0.concurrency=-4", NULL };
	load_bad(minimal, strlen(minimal), e2, 0, 0,
		 "--set stages.0.concurrency=-4: stages[0].concurrency must be a positive integer, "
		 "got '-4'");
	const char *const e3[] = { "target.modle=x", NULL };
	load_bad(minimal, strlen(minimal), e3, 0, 0,
		 "--set target.modle=x: unknown key 'modle' in target (did you mean 'model'?)");
	const char *const e4[] = { "justakey", NULL };
	load_bad(minimal, strlen(minimal), e4, 0, 0, "expected KEY.PATH=VALUE");
	const char *const e5[] = { "target.url.x=1", NULL };
	load_bad(minimal, strlen(minimal), e5, 0, 0, "'target.url' is a single value");
	const char *const e6[] = { "stages.first.duration=1s", NULL };
	load_bad(minimal, strlen(minimal), e6, 0, 0, "'stages' is a list");
	const char *const e7[] = { "a..b=1", NULL };
	load_bad(minimal, strlen(minimal), e7, 0, 0, "empty segment");
	const char *const e8[] = { "target.body=[1,", NULL };
	load_bad(minimal, strlen(minimal), e8, 0, 0, "--set target.body=[1,: invalid YAML: ");
}

static void derived_and_cross_checks(void **state)
{
	struct cl_scenario s;
	/* listen without local: no local agents */
	load_ok("target: { url: 'http://h/v1' }\n"
		"agents: { listen: 'tcp://127.0.0.1:7700', expect: 2 }\n"
		"workload: { max_tokens: 99, request_timeout: 1m }\n"
		"stages: [ { concurrency: 1, requests: 1 } ]\n",
		NULL, &s);
	assert_int_equal(s.agents.local, 0);
	assert_int_equal(s.agents.expect, 2);
	assert_int_equal(s.warmup.max_tokens, 99);
	assert_int_equal(s.warmup.request_timeout_us, 60 * SEC);
	cl_scenario_free(&s);

	load_ok("target: { url: 'http://h/v1', model: m }\n"
		"readiness: false\n"
		"workload: { synthetic: { input_tokens: { mean: 100, stddev: 10 }, count: 5 } }\n"
		"stages: [ { rate: 5/s, duration: 1m } ]\n",
		NULL, &s);
	assert_false(s.readiness.enabled);
	assert_int_equal(s.workload.kind, CL_WORKLOAD_SYNTHETIC);
	assert_double_equal(s.workload.synthetic_input.mean, 100);
	assert_int_equal(s.workload.synthetic_input.min, 1);
	assert_int_equal(s.workload.synthetic_input.max, 140);
	assert_int_equal(s.workload.synthetic_count, 5);
	assert_int_equal(s.workload.n_prompts, 0);
	/* rate stages default to Poisson arrivals */
	assert_int_equal(s.stages[0].arrival, CL_ARRIVAL_POISSON);
	assert_double_equal(s.stages[0].gamma_shape, 1.0);
	assert_string_equal(s.stages[0].name, "r5");
	cl_scenario_free(&s);

	/* a named sweep names each stage after the value */
	load_ok("target: { url: 'http://h/v1' }\n"
		"stages: [ { name: sweep, concurrency: [2, 4], duration: 1m } ]\n",
		NULL, &s);
	assert_string_equal(s.stages[0].name, "sweep-c2");
	assert_string_equal(s.stages[1].name, "sweep-c4");
	cl_scenario_free(&s);

	const char *bad = "target: { url: 'http://h/v1' }\n"
			  "agents: { listen: 'tcp://127.0.0.1:7700' }\n"
			  "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 11, "agents.expect is 0");
	/* Without the gate nothing finds a server's model: the scenario must name it (a
	 * simulator serves its own). */
	bad = "target: { url: 'http://h/v1' }\n"
	      "readiness: { enabled: false }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 1,
		 "target.model is required when readiness is disabled");
	load_ok("target: { simulator: { ttft: 1ms } }\n"
		"readiness: false\n"
		"stages: [ { concurrency: 1, requests: 1 } ]\n",
		NULL, &s);
	assert_null(s.target.model);
	cl_scenario_free(&s);
	/* One table of agents: local and remote together at most CL_SCN_MAX_AGENTS. */
	bad = "target: { url: 'http://h/v1' }\n"
	      "agents: { local: 2, listen: 'tcp://127.0.0.1:7700', expect: 1023 }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 53,
		 "agents.local (2) and agents.expect (1023) make 1025 agents; a run takes at "
		 "most 1024");
	bad = "target: { url: 'http://h/v1' }\n"
	      "agents: { listen: 'tcp://127.0.0.1:7700', expect: 1025 }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 51, "agents.expect must be at most 1024");
	bad = "target: { url: 'http://h/v1' }\n"
	      "agents: { listen: 'tls+tcp://0.0.0.0:7700', expect: 1 }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 11, "agents.listen uses TLS");
	bad = "target: { url: 'http://h/v1' }\n"
	      "warmup: { requests: 2, duration: 10s }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 24, "set requests or duration, not both");
	bad = "target: { url: 'http://h/v1' }\n"
	      "workload: { prompts: [a], dataset: x.txt }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 27,
		 "prompts, dataset, synthetic and trace are exclusive");
	bad = "target: { url: 'http://h/v1' }\n"
	      "stages: [ { concurrency: 1, duration: 5s, ramp: 10s } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 43,
		 "ramp (10.00s) is longer than the stage's duration");
	bad = "target: { url: 'http://h/v1' }\n"
	      "readiness: { backoff: { initial: 1m, max: 1s } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 2, 38, "readiness.backoff.initial must not be longer");
	bad = "target: { url: 'http://h/v1', api_key_env: 'MY KEY' }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 44, "must name an environment variable");
	bad = "target: { url: 'http://h/v1', headers: { 'Bad Name': x } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 42, "is not a valid HTTP header name");
	bad = "target: { url: 'http://h/v1', headers: { X-A: '1', x-a: '2' } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 52, "duplicate header 'x-a' in target.headers");
	/* merged mappings are checked like written ones, whatever their keys are */
	bad = "target: { url: 'http://h/v1', headers: { <<: { [a]: b } } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 48, "header names in target.headers must be strings");
	bad = "target: { url: 'http://h/v1', body: { <<: { stream: true } } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 45, "target.body.stream is set by chatload");
	bad = "target: { url: 'http://h/v1' }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n"
	      "slo: [ { ttft_p99: 1s }, { stage: c1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 3, 28, "slo[1].stage is given without an SLO for it");
	bad = "target: { url: 'http://h/v1', body: { <<: 3 } }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n";
	load_bad(bad, strlen(bad), NULL, 1, 43, "'<<' in target.body takes a mapping");
}

static void dataset_paths(void **state)
{
	char dir[] = "/tmp/chatload-scenario-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char scn[256], data[256];
	snprintf(scn, sizeof(scn), "%s/s.yaml", dir);
	snprintf(data, sizeof(data), "%s/prompts.txt", dir);
	FILE *f = fopen(data, "w");
	assert_non_null(f);
	fputs("hello\n", f);
	fclose(f);
	f = fopen(scn, "w");
	assert_non_null(f);
	fputs("target: { url: 'http://h/v1' }\n"
	      "workload: { dataset: prompts.txt, dataset_format: text, dataset_limit: 10 }\n"
	      "stages: [ { concurrency: 1, requests: 1 } ]\n",
	      f);
	fclose(f);
	struct cl_scenario s;
	struct cl_diags d = { 0 };
	int rc = cl_scenario_load_file(scn, NULL, &s, &d);
	print_diags(&d);
	assert_int_equal(rc, 0);
	assert_int_equal(s.workload.kind, CL_WORKLOAD_DATASET);
	assert_string_equal(s.workload.dataset, data); /* resolved against the file's directory */
	assert_int_equal(s.workload.dataset_format, CL_DATASET_TEXT);
	assert_int_equal(s.workload.dataset_limit, 10);
	assert_string_equal(s.name, "s");
	cl_scenario_free(&s);
	cl_diags_free(&d);

	/* a missing dataset is reported at its key with the resolved path */
	unlink(data);
	rc = cl_scenario_load_file(scn, NULL, &s, &d);
	assert_int_equal(rc, CL_EINVAL);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.items[0].line, 2);
	assert_non_null(strstr(d.items[0].msg, "No such file or directory"));
	assert_non_null(strstr(d.items[0].msg, data));
	cl_diags_free(&d);
	unlink(scn);

	/* a missing scenario names the file and errno's words, without a position */
	rc = cl_scenario_load_file(scn, NULL, &s, &d);
	assert_int_equal(rc, CL_EIO);
	assert_int_equal(d.n, 1);
	char buf[512];
	char want[512];
	snprintf(want, sizeof(want), "cannot open scenario '%s': No such file or directory", scn);
	assert_string_equal(cl_err_format(&d.items[0], buf, sizeof(buf)), want);
	cl_diags_free(&d);
	rmdir(dir);
}

static char *repeat(const char *head, const char *unit, size_t n, const char *tail, size_t *len)
{
	size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
	char *p = malloc(hl + ul * n + tl + 1);
	assert_non_null(p);
	memcpy(p, head, hl);
	for (size_t i = 0; i < n; i++)
		memcpy(p + hl + i * ul, unit, ul);
	memcpy(p + hl + ul * n, tail, tl + 1);
	*len = hl + ul * n + tl;
	return p;
}

static void caps(void **state)
{
	size_t len;
	/* > 4 MiB is refused before parsing */
	char *big = repeat("target: { url: 'http://h/v1' }\ndescription: '", "x",
			   CL_SCENARIO_MAX_BYTES, "'\n", &len);
	struct cl_scenario s;
	struct cl_diags d = { 0 };
	assert_int_equal(cl_scenario_load_string(big, len, "big.yaml", NULL, &s, &d), CL_ETOOBIG);
	assert_int_equal(d.n, 1);
	assert_non_null(strstr(d.items[0].msg, "larger than 4 MiB"));
	cl_diags_free(&d);
	free(big);

	/* nesting: 32 levels is allowed (here inside a body), 33 is refused where it starts */
	char *ok = repeat("target: { url: 'http://h/v1', body: ", "{a: ", 30, "1", &len);
	char *doc = malloc(len + 200);
	strcpy(doc, ok);
	for (int i = 0; i < 30; i++)
		strcat(doc, "}");
	strcat(doc, " }\nstages: [ { concurrency: 1, requests: 1 } ]\n");
	load_ok(doc, NULL, &s);
	assert_non_null(strstr(s.target.body_json, "{\"a\":{\"a\":1}}"));
	cl_scenario_free(&s);
	free(ok);
	free(doc);
	char *deep = repeat("target: ", "[", 40, "", &len);
	load_bad(deep, len, NULL, 1, 40, "nested deeper than 32 levels");
	free(deep);

	/* too many nodes, without aliases */
	char *wide = repeat("target: [", "1,", 250000, "1]\n", &len);
	assert_int_equal(cl_scenario_load_string(wide, len, "wide.yaml", NULL, &s, &d), CL_ETOOBIG);
	assert_non_null(strstr(d.items[0].msg, "the document has more than 200000 YAML nodes"));
	cl_diags_free(&d);
	free(wide);

	/* a flood of errors is capped and the rest counted */
	char *flood = repeat("target: { url: 'http://h/v1' }\nstages:\n",
			     "  - { concurrency: 0 }\n", 150, "", &len);
	assert_int_equal(cl_scenario_load_string(flood, len, "flood.yaml", NULL, &s, &d),
			 CL_EINVAL);
	assert_int_equal(d.n, 100);
	assert_int_equal(d.dropped, 200); /* two errors per stage */
	cl_diags_free(&d);
	free(flood);

	/* binary input with a NUL */
	static const char junk[] = "target: \0\x01\x02";
	load_bad(junk, sizeof(junk) - 1, NULL, 1, 9, "not a YAML text file");
}

/* ---- the bad-scenario corpus ---- */

struct expect {
	int line, col;
	char text[400];
};

/* Reads "# expect: [L:C: ]text" lines from the start of buf. */
static size_t parse_expects(const char *buf, struct expect *e, size_t max)
{
	size_t n = 0;
	const char *p = buf;
	while (n < max && strncmp(p, "# expect: ", 10) == 0) {
		p += 10;
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		int line = 0, col = 0, used = 0;
		e[n].line = e[n].col = 0;
		if (sscanf(p, "%d:%d: %n", &line, &col, &used) == 2 && used > 0) {
			e[n].line = line;
			e[n].col = col;
			p += used;
			l -= (size_t)used;
		}
		snprintf(e[n].text, sizeof(e[n].text), "%.*s", (int)l, p);
		n++;
		p += l;
		if (*p == '\n')
			p++;
	}
	return n;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 16);
	assert_non_null(buf);
	*len = fread(buf, 1, (1 << 16) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static void bad_corpus(void **state)
{
	const char *data = getenv("CHATLOAD_TEST_DATA");
	assert_non_null(data);
	char dirpath[512];
	snprintf(dirpath, sizeof(dirpath), "%s/bad-scenarios", data);
	DIR *dir = opendir(dirpath);
	if (!dir)
		fail_msg("cannot open '%s': %s", dirpath, strerror(errno));
	size_t files = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		size_t nl = strlen(de->d_name);
		if (nl < 6 || strcmp(de->d_name + nl - 5, ".yaml") != 0)
			continue;
		char path[1024], side[1024];
		snprintf(path, sizeof(path), "%s/%s", dirpath, de->d_name);
		snprintf(side, sizeof(side), "%s/%.*s.expect", dirpath, (int)(nl - 5), de->d_name);
		size_t len = 0, slen = 0;
		char *text = slurp(path, &len);
		assert_non_null(text);
		char *sidecar = slurp(side, &slen);
		struct expect ex[8];
		size_t n_ex = parse_expects(sidecar ? sidecar : text, ex, 8);
		if (n_ex == 0)
			fail_msg("%s: no '# expect:' line (nor a .expect file)", path);

		struct cl_scenario s;
		struct cl_diags d = { 0 };
		int rc = cl_scenario_load_file(path, NULL, &s, &d);
		if (rc == 0)
			fail_msg("%s: loaded without error", de->d_name);
		for (size_t k = 0; k < n_ex; k++) {
			bool found = false;
			for (size_t i = 0; i < d.n && !found; i++) {
				const struct cl_err *e = &d.items[i];
				found = strstr(e->msg, ex[k].text) &&
					(ex[k].line == 0 ||
					 (e->line == ex[k].line && e->col == ex[k].col));
				/* every positioned error is in this file */
				assert_string_equal(e->file[0] ? e->file : path, path);
			}
			if (!found) {
				print_diags(&d);
				fail_msg("%s: no error '%s' at %d:%d", de->d_name, ex[k].text,
					 ex[k].line, ex[k].col);
			}
		}
		assert_null(s.stages);
		cl_diags_free(&d);
		free(text);
		free(sidecar);
		files++;
	}
	closedir(dir);
	print_message("checked %zu bad scenarios\n", files);
	assert_true(files >= 24);
}

/* Every example scenario loads (they are documentation and must not rot). */
static void example_scenarios(void **state)
{
	const char *src = getenv("CHATLOAD_SOURCE_DIR");
	assert_non_null(src);
	static const char *const names[] = { "quickstart", "sweep",       "soak",
					     "rate",       "thinking",    "output-lengths",
					     "sharegpt",   "prefix-cache" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/scenarios/%s.yaml", src, names[i]);
		struct cl_scenario s;
		struct cl_diags d = { 0 };
		int rc = cl_scenario_load_file(path, NULL, &s, &d);
		print_diags(&d);
		assert_int_equal(rc, 0);
		if (strcmp(names[i], "quickstart") == 0) {
			assert_true(s.target.simulator);
			assert_int_equal(s.agents.local, 2);
			assert_int_equal(s.warmup.requests, 2);
			assert_int_equal(s.n_stages, 4);
			assert_int_equal(s.stages[0].requests, 4);
			assert_int_equal(s.stages[3].concurrency, 16);
			assert_int_equal(s.stages[3].duration_us, 5 * SEC);
		}
		if (strcmp(names[i], "sharegpt") == 0) {
			assert_int_equal(s.workload.kind, CL_WORKLOAD_DATASET);
			assert_true(s.workload.dataset_shuffle);
			assert_int_equal(s.workload.dataset_filter.max_input, 1024);
			assert_int_equal(s.workload.dataset_output, CL_DATASET_OUTPUT_RECORD);
			assert_int_equal(s.workload.ignore_eos, -1);
		}
		if (strcmp(names[i], "output-lengths") == 0) {
			assert_true(s.workload.synthetic_output.mean == 256);
			assert_int_equal(s.workload.synthetic_output.max, 512);
		}
		if (strcmp(names[i], "prefix-cache") == 0) {
			assert_int_equal(s.workload.shared_prefix_groups, 8);
			assert_int_equal(s.workload.shared_prefix_tokens, 2000);
			/* a fixed output length: min 1, max the mean itself */
			assert_int_equal(s.workload.synthetic_output.max, 128);
		}
		if (strcmp(names[i], "sweep") == 0) {
			assert_int_equal(s.n_stages, 6);
			assert_string_equal(s.estimate.from_stage, "c32");
			assert_int_equal(s.estimate.n_samples, 4);
		}
		cl_scenario_free(&s);
		cl_diags_free(&d);
	}
}

/* client_bound: fail (default) or warn, at the top level; anything else is named, with its
 * place, and --set reaches it. */
static void client_bound_policy(void **state)
{
	struct cl_scenario s;
	static const char warn[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				   "stages: [ { concurrency: 4, duration: 1m } ]\n"
				   "client_bound: warn\n";
	load_ok(warn, NULL, &s);
	assert_int_equal(s.client_bound, CL_CLIENT_BOUND_WARN);
	cl_scenario_free(&s);
	const char *const ov[] = { "client_bound=fail", NULL };
	load_ok(warn, ov, &s);
	assert_int_equal(s.client_bound, CL_CLIENT_BOUND_FAIL);
	cl_scenario_free(&s);
	static const char bad[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				  "stages: [ { concurrency: 4, duration: 1m } ]\n"
				  "client_bound: ignore\n";
	load_bad(bad, strlen(bad), NULL, 3, 15, "client_bound must be one of fail, warn");
	static const char misplaced[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
					"stages: [ { concurrency: 4, duration: 1m, "
					"client_bound: warn } ]\n";
	load_bad(misplaced, strlen(misplaced), NULL, 2, 43, "unknown key 'client_bound'");
}

/* cost: (issue 44): what the target costs an hour; per_hour is required, and the unset
 * scenario has none. */
static void cost_key(void **state)
{
	struct cl_scenario s;
	load_ok(minimal, NULL, &s);
	assert_true(s.cost.per_hour == 0 && s.cost.gpus == 0 && !s.cost.currency);
	cl_scenario_free(&s);
	static const char text[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				   "stages: [ { concurrency: 4, duration: 1m } ]\n"
				   "cost: { per_hour: 2.50, gpus: 8, currency: USD }\n";
	load_ok(text, NULL, &s);
	assert_double_equal(s.cost.per_hour, 2.5);
	assert_int_equal(s.cost.gpus, 8);
	assert_int_equal(s.cost.servers, 0);
	assert_string_equal(s.cost.currency, "USD");
	cl_scenario_free(&s);
	const char *const ov[] = { "cost.servers=3", NULL };
	load_ok(text, ov, &s);
	assert_int_equal(s.cost.servers, 3);
	cl_scenario_free(&s);
	static const char none[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				   "stages: [ { concurrency: 4, duration: 1m } ]\n"
				   "cost: { gpus: 8 }\n";
	load_bad(none, strlen(none), NULL, 3, 7, "cost needs per_hour");
	static const char neg[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				  "stages: [ { concurrency: 4, duration: 1m } ]\n"
				  "cost: { per_hour: -1 }\n";
	load_bad(neg, strlen(neg), NULL, 3, 19, "per_hour");
}

/* A search stage, plan, abort window and drift limits as the run reads them; the top-level
 * SLOs judge a search without its own; probes are inserted and the entry removed. */
static void search_and_soak_keys(void **state)
{
	struct cl_scenario s;
	static const char text[] =
	    "target: { url: http://127.0.0.1:8000/v1 }\n"
	    "stages:\n"
	    "  - { concurrency: 1, requests: 2 }\n"
	    "  - name: cap\n"
	    "    search: { over: rate, from: 2/s, max: 200/s, tolerance: 10%, probe_duration: "
	    "20s,\n"
	    "              ramp: 2s, arrival: constant, max_concurrency: 64 }\n"
	    "slo:\n"
	    "  - { ttft_p99: 2s, error_rate: 1%, abort_on_breach: { intervals: 3 } }\n"
	    "  - { stage: c1, e2e_p50: 9s, max_drift: { ttft_p99: 20%, window: 5m } }\n"
	    "plan: { output_tokens_per_s: 50000 }\n";
	load_ok(text, NULL, &s);
	assert_int_equal(s.n_stages, 2);
	const struct cl_scn_stage *e = &s.stages[1];
	assert_string_equal(e->name, "cap");
	assert_non_null(e->search);
	const struct cl_scn_search *q = e->search;
	assert_int_equal(q->over, CL_MODE_RATE);
	assert_true(q->from == 2 && q->max == 200);
	assert_true(q->tolerance_relative && fabs(q->tolerance - 0.10) < 1e-12);
	assert_int_equal(q->probe_duration_us, 20000000);
	assert_int_equal(q->ramp_us, 2000000);
	assert_int_equal(q->arrival, CL_ARRIVAL_CONSTANT);
	assert_int_equal(q->max_concurrency, 64);
	/* the SLOs for every stage (not c1's) judge the probes */
	assert_int_equal(q->n_slos, 2);
	assert_string_equal(q->slos[0].key, "ttft_p99");
	assert_string_equal(q->slos[1].key, "error_rate");
	assert_int_equal(s.slo_abort_intervals, 3);
	assert_false(s.slo_abort_on_breach); /* the window, not "after a breached stage" */
	assert_true(s.drift.set);
	assert_true(fabs(s.drift.ttft_p99 - 0.2) < 1e-12 && isnan(s.drift.itl_p99));
	assert_int_equal(s.drift.window_us, 300000000LL);
	assert_true(s.plan.output_tokens_per_s == 50000 && s.plan.requests_per_s == 0);
	/* what the run does with it */
	struct cl_scn_stage probe = *e;
	probe.search = NULL;
	probe.name = strdup("cap-r2");
	assert_int_equal(cl_scenario_insert_stage(&s, 1, &probe), 0);
	assert_int_equal(s.n_stages, 3);
	assert_string_equal(s.stages[1].name, "cap-r2");
	assert_non_null(s.stages[2].search);
	cl_scenario_remove_stage(&s, 2);
	assert_int_equal(s.n_stages, 2);
	assert_null(s.stages[1].search);
	cl_scenario_free(&s);

	/* concurrency searches: defaults, and their own SLOs */
	static const char conc[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				   "stages: [ { search: { over: concurrency, max: 32,\n"
				   "                      slo: { itl_p99: 50ms } } } ]\n"
				   "slo: { ttft_p99: 2s, max_drift: 15% }\n";
	load_ok(conc, NULL, &s);
	q = s.stages[0].search;
	assert_string_equal(s.stages[0].name, "search");
	assert_true(q->from == 1 && q->max == 32 && q->tolerance == 1 && !q->tolerance_relative);
	assert_int_equal(q->probe_duration_us, 30000000);
	assert_int_equal(q->n_slos, 1);
	assert_string_equal(q->slos[0].key, "itl_p99");
	assert_int_equal(s.n_slos, 1); /* search.slo is not a run SLO */
	assert_true(fabs(s.drift.itl_p99 - 0.15) < 1e-12 && fabs(s.drift.ttft_p99 - 0.15) < 1e-12);
	assert_true(isnan(s.drift.error_rate));
	cl_scenario_free(&s);

	static const char two[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				  "stages:\n"
				  "  - { name: a, search: { over: concurrency, max: 8 } }\n"
				  "  - { name: b, search: { over: concurrency, max: 8 } }\n"
				  "slo: { ttft_p99: 2s }\n";
	load_bad(two, strlen(two), NULL, 4, 7, "a scenario has one search stage");
	static const char clash[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				    "stages:\n"
				    "  - { name: cap-c8, concurrency: 8, duration: 1m }\n"
				    "  - { name: cap, search: { over: concurrency, max: 8 } }\n"
				    "slo: { ttft_p99: 2s }\n";
	load_bad(clash, strlen(clash), NULL, 3, 7, "could collide with the probes of search 'cap'");
}

/* repeat: a count on ordinary stages (each value of a sweep repeats), refused on a search and
 * on a replay stage, at the key, with the reason. */
static void repeat_key(void **state)
{
	(void)state;
	struct cl_scenario s;
	static const char ok[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				 "stages:\n"
				 "  - { concurrency: [2, 4], duration: 10s, repeat: 5 }\n"
				 "  - { concurrency: 1, requests: 3 }\n";
	load_ok(ok, NULL, &s);
	assert_int_equal(s.n_stages, 3);
	assert_int_equal(s.stages[0].repeat, 5);
	assert_int_equal(s.stages[1].repeat, 5);
	assert_int_equal(s.stages[2].repeat, 1);
	cl_scenario_free(&s);
	static const char *const ov[] = { "stages.1.repeat=7", NULL };
	load_ok(ok, ov, &s);
	assert_int_equal(s.stages[2].repeat, 7);
	cl_scenario_free(&s);
	static const char zero[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				   "stages: [ { concurrency: 1, duration: 1s, repeat: 0 } ]\n";
	load_bad(zero, strlen(zero), NULL, 2, 51, "stages[0].repeat");
	static const char many[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				   "stages: [ { concurrency: 1, duration: 1s, repeat: 101 } ]\n";
	load_bad(many, strlen(many), NULL, 2, 51, "stages[0].repeat");
	static const char search[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				     "stages:\n"
				     "  - { search: { over: concurrency, max: 8 }, repeat: 3 }\n"
				     "slo: { ttft_p99: 2s }\n";
	load_bad(search, strlen(search), NULL, 3, 46,
		 "stages[0].repeat: a search stage cannot repeat");
	static const char replay[] = "target: { url: http://127.0.0.1:8000/v1 }\n"
				     "workload: { trace: t.jsonl }\n"
				     "stages: [ { replay: true, repeat: 2 } ]\n";
	load_bad(replay, strlen(replay), NULL, 3, 27,
		 "stages[0].repeat does not apply to a replay stage");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(every_field),
		cmocka_unit_test(simulator_target),
		cmocka_unit_test(http2_modes),
		cmocka_unit_test(body_json_types),
		cmocka_unit_test(anchors_need_known_keys),
		cmocka_unit_test(overrides),
		cmocka_unit_test(derived_and_cross_checks),
		cmocka_unit_test(dataset_paths),
		cmocka_unit_test(caps),
		cmocka_unit_test(bad_corpus),
		cmocka_unit_test(example_scenarios),
		cmocka_unit_test(client_bound_policy),
		cmocka_unit_test(search_and_soak_keys),
		cmocka_unit_test(cost_key),
		cmocka_unit_test(repeat_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
