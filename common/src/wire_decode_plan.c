/* The wire decoder's plans: what a command carries for the agent to run (the target, the
 * request bodies, the workload, a stage, the readiness gate's result), decoded field by field
 * from the hostile bytes wire_decode.c has pre-validated.  Each names the field that is wrong
 * by its path (d->path). */
#include "chatload/wire.h"

#include "wire_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int cli_wire_dec_target(struct wire_dec *d, const char *name, const msgpack_object *v,
			struct cl_target_plan *t)
{
	int rc;
	if ((rc = cli_wire_need_map(d, name, v, true)))
		return rc;
	size_t old = wire_path_push(&d->path, name);
	uint32_t api = 0;
	struct wire_fld f[] = { FLD("base_url"),
				FLD("model"),
				FLD("api_key_env"),
				FLD("headers"),
				FLD("http2"),
				FLD("tls_verify"),
				FLD("ca_file"),
				FLD("connect_timeout_us"),
				FLD("http2_fallback"),
				FLD("http2_streams"),
				FLD("api"),
				FLD("endpoints"),
				FLD("route") };
	uint32_t route = 0;
	if ((rc = cli_wire_fields(d, v, f, WIRE_N(f))))
		goto out;
#define F(n) cli_wire_fv(f, WIRE_N(f), n)
	if ((rc = cli_wire_get_str(d, "base_url", F("base_url"), true, CL_WIRE_MAX_URL, WSTR_NAME,
				   &t->base_url, NULL)) ||
	    (rc = cli_wire_get_str(d, "model", F("model"), false, CL_WIRE_MAX_NAME, WSTR_NAME,
				   &t->model, NULL)) ||
	    (rc = cli_wire_get_str(d, "api_key_env", F("api_key_env"), false, CL_WIRE_MAX_NAME,
				   WSTR_NAME, &t->api_key_env, NULL)) ||
	    (rc = cli_wire_get_str_array(d, "headers", F("headers"), CL_WIRE_MAX_HEADERS,
					 CL_WIRE_MAX_HEADER, WSTR_HEADER, &t->headers,
					 &t->n_headers)) ||
	    (rc = cli_wire_get_bool(d, "http2", F("http2"), true, &t->http2)) ||
	    (rc = cli_wire_get_bool(d, "tls_verify", F("tls_verify"), true, &t->tls_verify)) ||
	    (rc = cli_wire_get_str(d, "ca_file", F("ca_file"), false, CL_WIRE_MAX_PATH, WSTR_NAME,
				   &t->ca_file, NULL)) ||
	    (rc = cli_wire_get_i64(d, "connect_timeout_us", F("connect_timeout_us"), true, 0,
				   &t->connect_timeout_us)) ||
	    (rc = cli_wire_get_bool(d, "http2_fallback", F("http2_fallback"), false,
				    &t->http2_fallback)) ||
	    (rc = cli_wire_get_u32(d, "http2_streams", F("http2_streams"), false,
				   &t->http2_streams)) ||
	    (rc = cli_wire_get_u32(d, "api", F("api"), false, &api)))
		goto out;
	if (api >= CL_API__COUNT) {
		rc = cli_wire_bad(d, CL_EPROTO, "api", "is not an API this agent knows (%u)", api);
		goto out;
	}
	t->api = (enum cl_api)api;
	/* several endpoints (target.urls) */
	if ((F("endpoints") && (rc = cli_wire_get_str_array(
				    d, "endpoints", F("endpoints"), CL_ENDPOINTS_MAX,
				    CL_WIRE_MAX_URL, WSTR_NAME, &t->endpoints, &t->n_endpoints))) ||
	    (rc = cli_wire_get_u32(d, "route", F("route"), false, &route)))
		goto out;
	if (t->n_endpoints == 1 || route >= CL_ROUTE__COUNT ||
	    (t->n_endpoints && strcmp(t->endpoints[0], t->base_url) != 0)) {
		rc = cli_wire_bad(d, CL_EPROTO, "endpoints",
				  "must hold 2..%d URLs, the first the base_url, and a known route",
				  CL_ENDPOINTS_MAX);
		goto out;
	}
	t->route = (enum cl_route)route;
	if (t->http2_streams > CL_HTTP2_MAX_STREAMS) {
		rc = cli_wire_bad(d, CL_EPROTO, "http2_streams", "is out of range (%u, max %u)",
				  t->http2_streams, CL_HTTP2_MAX_STREAMS);
		goto out;
	}
#undef F
out:
	wire_path_pop(&d->path, old);
	return rc;
}

/* A "bodies" array value b (NULL: missing) into *out / *n_out. */
int cli_wire_dec_bodies(struct wire_dec *d, const msgpack_object *b, struct cl_request_body **out,
			size_t *n_out)
{
	int rc = 0;
	if (!b)
		return cli_wire_missing(d, "bodies");
	if (b->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, "bodies", "an array", b);
	size_t n = b->via.array.size;
	if (n > CL_WIRE_MAX_BODIES)
		return cli_wire_bad(d, CL_ETOOBIG, "bodies", "has too many entries (%zu, max %u)",
				    n, CL_WIRE_MAX_BODIES);
	if (n) {
		/* n was proven against the message size before msgpack-c allocated its n
		 * objects, so this array is no larger than a small multiple of the input. */
		if (!(*out = calloc(n, sizeof(**out))))
			return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding bodies");
		*n_out = n;
	}
	for (size_t i = 0; i < n; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "bodies[%zu]", i);
		const msgpack_object *e = &b->via.array.ptr[i];
		if ((rc = cli_wire_need_map(d, nm, e, true)))
			return rc;
		size_t o2 = wire_path_push(&d->path, nm);
		struct wire_fld bf[] = { FLD("json"),  FLD("prompt_chars"), FLD("max_tokens"),
					 FLD("turn"),  FLD("hist_at"),      FLD("user_len"),
					 FLD("at_us"), FLD("inputs") };
		struct cl_request_body *rb = &(*out)[i];
		if (!(rc = cli_wire_fields(d, e, bf, WIRE_N(bf))) &&
		    !(rc = cli_wire_get_str(d, "json", bf[0].v, true, CL_WIRE_MAX_BODY, WSTR_TEXT,
					    &rb->json, &rb->len)) &&
		    !(rc = cli_wire_get_u32(d, "prompt_chars", bf[1].v, true, &rb->prompt_chars)) &&
		    !(rc = cli_wire_get_u32(d, "max_tokens", bf[2].v, false, &rb->max_tokens)) &&
		    !(rc = cli_wire_get_u32(d, "turn", bf[3].v, false, &rb->turn)) &&
		    !(rc = cli_wire_get_u32(d, "hist_at", bf[4].v, rb->turn != 0, &rb->hist_at)) &&
		    !(rc =
			  cli_wire_get_u32(d, "user_len", bf[5].v, rb->turn != 0, &rb->user_len)) &&
		    !(rc = cli_wire_get_i64(d, "at_us", bf[6].v, false, 0, &rb->at_us)) &&
		    !(rc = cli_wire_get_u32(d, "inputs", bf[7].v, false, &rb->inputs)) &&
		    (size_t)rb->hist_at + rb->user_len > rb->len)
			rc = cli_wire_bad(d, CL_EPROTO, "hist_at",
					  "%u + %u is past the body's %zu bytes", rb->hist_at,
					  rb->user_len, rb->len);
		wire_path_pop(&d->path, o2);
		if (rc)
			return rc;
	}
	return 0;
}

int cli_wire_dec_workload(struct wire_dec *d, const char *name, const msgpack_object *v,
			  struct cl_workload_plan *w)
{
	int rc;
	if ((rc = cli_wire_need_map(d, name, v, true)))
		return rc;
	size_t old = wire_path_push(&d->path, name);
	struct wire_fld f[] = { FLD("bodies"),
				FLD("request_timeout_us"),
				FLD("max_tokens"),
				FLD("total_bodies"),
				FLD("first_body"),
				FLD("think_time_us"),
				FLD("trace_stride"),
				FLD("share"),
				FLD("per_stage"),
				FLD("retag"),
				FLD("tool_result_tokens"),
				FLD("tool_max_rounds") };
	uint64_t total = 0, first = 0, share = 0;
	if ((rc = cli_wire_fields(d, v, f, WIRE_N(f))) ||
	    (rc = cli_wire_dec_bodies(d, f[0].v, &w->bodies, &w->n_bodies)) ||
	    (rc = cli_wire_get_i64(d, "request_timeout_us", f[1].v, true, 0,
				   &w->request_timeout_us)) ||
	    (rc = cli_wire_get_u32(d, "max_tokens", f[2].v, true, &w->max_tokens)) ||
	    (rc = cli_wire_get_u64(d, "total_bodies", f[3].v, false, CL_WIRE_MAX_TOTAL_BODIES,
				   &total)) ||
	    (rc = cli_wire_get_u64(d, "first_body", f[4].v, false, CL_WIRE_MAX_TOTAL_BODIES,
				   &first)) ||
	    (rc = cli_wire_get_i64(d, "think_time_us", f[5].v, false, 0, &w->think_time_us)) ||
	    (rc = cli_wire_get_u32(d, "trace_stride", f[6].v, false, &w->trace_stride)) ||
	    (rc = cli_wire_get_u64(d, "share", f[7].v, false, CL_WIRE_MAX_TOTAL_BODIES, &share)) ||
	    (rc = cli_wire_get_bool(d, "per_stage", f[8].v, false, &w->per_stage)) ||
	    (f[9].v && (rc = cli_wire_get_fixed_str(d, "retag", f[9].v, w->retag, sizeof(w->retag),
						    WSTR_NAME))) ||
	    (rc = cli_wire_get_u32(d, "tool_result_tokens", f[10].v, false,
				   &w->tool_result_tokens)) ||
	    (rc = cli_wire_get_u32(d, "tool_max_rounds", f[11].v, false, &w->tool_max_rounds)))
		goto out;
	if (w->tool_result_tokens > CL_TOOL_MAX_RESULT_TOKENS ||
	    w->tool_max_rounds > CL_TOOL_MAX_ROUNDS || (!f[10].v) != (!f[11].v)) {
		rc = cli_wire_bad(
		    d, CL_EPROTO, "tool_result_tokens",
		    "is %u with tool_max_rounds %u (at most %u and %u, both or neither)",
		    w->tool_result_tokens, w->tool_max_rounds, CL_TOOL_MAX_RESULT_TOKENS,
		    CL_TOOL_MAX_ROUNDS);
		goto out;
	}
	if (f[3].v && total < w->n_bodies) {
		rc =
		    cli_wire_bad(d, CL_EPROTO, "total_bodies", "is %llu, below the %zu bodies sent",
				 (unsigned long long)total, w->n_bodies);
		goto out;
	}
	w->total_bodies = f[3].v ? (size_t)total : w->n_bodies;
	if (first && first >= w->total_bodies) {
		rc = cli_wire_bad(d, CL_EPROTO, "first_body", "is %llu, not below the %zu bodies",
				  (unsigned long long)first, w->total_bodies);
		goto out;
	}
	w->first_body = (size_t)first;
	if (share > w->total_bodies) {
		rc = cli_wire_bad(d, CL_EPROTO, "share", "is %llu, above the %zu bodies",
				  (unsigned long long)share, w->total_bodies);
		goto out;
	}
	w->share = (size_t)share;
out:
	wire_path_pop(&d->path, old);
	return rc;
}

int cli_wire_dec_stage(struct wire_dec *d, const char *name, const msgpack_object *v,
		       struct cl_stage_plan *s)
{
	int rc;
	if ((rc = cli_wire_need_map(d, name, v, true)))
		return rc;
	size_t old = wire_path_push(&d->path, name);
	struct wire_fld f[] = { FLD("index"),       FLD("name"),        FLD("mode"),
				FLD("concurrency"), FLD("rate_per_s"),  FLD("arrival"),
				FLD("gamma_shape"), FLD("duration_us"), FLD("requests"),
				FLD("ramp_us"),     FLD("ramp_from"),   FLD("drain_timeout_us"),
				FLD("seed") };
	int mode = 0, arrival = 0;
	if ((rc = cli_wire_fields(d, v, f, WIRE_N(f))))
		goto out;
#define F(n) cli_wire_fv(f, WIRE_N(f), n)
	if ((rc = cli_wire_get_u32(d, "index", F("index"), true, &s->index)) ||
	    (rc = cli_wire_get_str(d, "name", F("name"), false, CL_WIRE_MAX_NAME, WSTR_NAME,
				   &s->name, NULL)) ||
	    (rc = cli_wire_get_enum(d, "mode", F("mode"), true, cli_wire_mode_lookup, &mode)) ||
	    (rc = cli_wire_get_u32(d, "concurrency", F("concurrency"), true, &s->concurrency)) ||
	    (rc = cli_wire_get_dbl(d, "rate_per_s", F("rate_per_s"), true, &s->rate_per_s)) ||
	    (rc = cli_wire_get_enum(d, "arrival", F("arrival"), true, cli_wire_arrival_lookup,
				    &arrival)) ||
	    (rc = cli_wire_get_dbl(d, "gamma_shape", F("gamma_shape"), true, &s->gamma_shape)) ||
	    (rc = cli_wire_get_i64(d, "duration_us", F("duration_us"), true, 0, &s->duration_us)) ||
	    (rc = cli_wire_get_u64(d, "requests", F("requests"), true, UINT64_MAX, &s->requests)) ||
	    (rc = cli_wire_get_i64(d, "ramp_us", F("ramp_us"), true, 0, &s->ramp_us)) ||
	    (rc = cli_wire_get_u32(d, "ramp_from", F("ramp_from"), true, &s->ramp_from)) ||
	    (rc = cli_wire_get_i64(d, "drain_timeout_us", F("drain_timeout_us"), true, 0,
				   &s->drain_timeout_us)) ||
	    (rc = cli_wire_get_u64(d, "seed", F("seed"), true, UINT64_MAX, &s->seed)))
		goto out;
#undef F
	s->mode = (enum cl_load_mode)mode;
	s->arrival = (enum cl_arrival)arrival;
out:
	wire_path_pop(&d->path, old);
	return rc;
}

int cli_wire_dec_readiness(struct wire_dec *d, const char *name, const msgpack_object *v,
			   struct cl_readiness_result *r)
{
	int rc;
	if ((rc = cli_wire_need_map(d, name, v, true)))
		return rc;
	size_t old = wire_path_push(&d->path, name);
	struct wire_fld f[] = { FLD("status"),          FLD("phase"),
				FLD("phase_passed_us"), FLD("attempts"),
				FLD("probe_ttft_us"),   FLD("probe_total_us"),
				FLD("elapsed_us"),      FLD("model"),
				FLD("last_error"),      FLD("failing_since_us") };
	int status = 0, phase = 0;
	if ((rc = cli_wire_fields(d, v, f, WIRE_N(f))))
		goto out;
#define F(n) cli_wire_fv(f, WIRE_N(f), n)
	const msgpack_object *pp = F("phase_passed_us");
	if (!pp) {
		rc = cli_wire_missing(d, "phase_passed_us");
		goto out;
	}
	if (pp->type != MSGPACK_OBJECT_ARRAY) {
		rc = cli_wire_wrong(d, "phase_passed_us", "an array", pp);
		goto out;
	}
	if (pp->via.array.size != CL_READY__PHASES) {
		rc = cli_wire_bad(d, CL_EPROTO, "phase_passed_us", "must have %d entries, not %u",
				  CL_READY__PHASES, pp->via.array.size);
		goto out;
	}
	for (int i = 0; i < CL_READY__PHASES; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "phase_passed_us[%d]", i);
		if ((rc = cli_wire_get_i64(d, nm, &pp->via.array.ptr[i], true, INT64_MIN,
					   &r->phase_passed_us[i])))
			goto out;
	}
	if ((rc = cli_wire_get_enum(d, "status", F("status"), true, cli_wire_status_lookup,
				    &status)) ||
	    (rc = cli_wire_get_enum(d, "phase", F("phase"), true, cli_wire_phase_lookup, &phase)) ||
	    (rc = cli_wire_get_u32(d, "attempts", F("attempts"), true, &r->attempts)) ||
	    (rc = cli_wire_get_i64(d, "probe_ttft_us", F("probe_ttft_us"), true, INT64_MIN,
				   &r->probe_ttft_us)) ||
	    (rc = cli_wire_get_i64(d, "probe_total_us", F("probe_total_us"), true, INT64_MIN,
				   &r->probe_total_us)) ||
	    (rc = cli_wire_get_i64(d, "elapsed_us", F("elapsed_us"), true, INT64_MIN,
				   &r->elapsed_us)) ||
	    (rc = cli_wire_get_fixed_str(d, "model", F("model"), r->model, sizeof(r->model),
					 WSTR_NAME)) ||
	    (rc = cli_wire_get_fixed_str(d, "last_error", F("last_error"), r->last_error,
					 sizeof(r->last_error), WSTR_TEXT)) ||
	    (rc = cli_wire_get_i64(d, "failing_since_us", F("failing_since_us"), true, INT64_MIN,
				   &r->failing_since_us)))
		goto out;
#undef F
	r->status = status;
	r->phase = phase;
out:
	wire_path_pop(&d->path, old);
	return rc;
}
