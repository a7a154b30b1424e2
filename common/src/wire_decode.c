/* The wire decoder: hostile bytes -> pre-validated -> msgpack-c -> fields checked -> cl_msg. */
#include "chatload/wire.h"

#include "chatload/metrics_wire.h"

#include "metrics_int.h"
#include "wire_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- Plans ----------------------------------------------------------------------------- */

static int dec_target(struct wire_dec *d, const char *name, const msgpack_object *v,
		      struct cl_target_plan *t)
{
	int rc;
	if ((rc = cli_wire_need_map(d, name, v, true)))
		return rc;
	size_t old = wire_path_push(&d->path, name);
	uint32_t api = 0;
	struct wire_fld f[] = { FLD("base_url"),       FLD("model"),
				FLD("api_key_env"),    FLD("headers"),
				FLD("http2"),          FLD("tls_verify"),
				FLD("ca_file"),        FLD("connect_timeout_us"),
				FLD("http2_fallback"), FLD("http2_streams"),
				FLD("api"),            FLD("endpoints"),
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
	if ((F("endpoints") &&
	     (rc = cli_wire_get_str_array(d, "endpoints", F("endpoints"), CL_ENDPOINTS_MAX,
					 CL_WIRE_MAX_URL, WSTR_NAME, &t->endpoints,
					 &t->n_endpoints))) ||
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
static int dec_bodies(struct wire_dec *d, const msgpack_object *b, struct cl_request_body **out,
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
		struct wire_fld bf[] = { FLD("json"), FLD("prompt_chars"), FLD("max_tokens"),
					 FLD("turn"), FLD("hist_at"),      FLD("user_len"),
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

static int dec_workload(struct wire_dec *d, const char *name, const msgpack_object *v,
			struct cl_workload_plan *w)
{
	int rc;
	if ((rc = cli_wire_need_map(d, name, v, true)))
		return rc;
	size_t old = wire_path_push(&d->path, name);
	struct wire_fld f[] = { FLD("bodies"),       FLD("request_timeout_us"),
				FLD("max_tokens"),   FLD("total_bodies"),
				FLD("first_body"),   FLD("think_time_us"),
				FLD("trace_stride"), FLD("share"),
				FLD("per_stage"),    FLD("retag"),
				FLD("tool_result_tokens"), FLD("tool_max_rounds") };
	uint64_t total = 0, first = 0, share = 0;
	if ((rc = cli_wire_fields(d, v, f, WIRE_N(f))) ||
	    (rc = dec_bodies(d, f[0].v, &w->bodies, &w->n_bodies)) ||
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
	    (f[9].v &&
	     (rc = cli_wire_get_fixed_str(d, "retag", f[9].v, w->retag, sizeof(w->retag), WSTR_NAME))) ||
	    (rc = cli_wire_get_u32(d, "tool_result_tokens", f[10].v, false,
				   &w->tool_result_tokens)) ||
	    (rc = cli_wire_get_u32(d, "tool_max_rounds", f[11].v, false, &w->tool_max_rounds)))
		goto out;
	if (w->tool_result_tokens > CL_TOOL_MAX_RESULT_TOKENS ||
	    w->tool_max_rounds > CL_TOOL_MAX_ROUNDS || (!f[10].v) != (!f[11].v)) {
		rc = cli_wire_bad(d, CL_EPROTO, "tool_result_tokens",
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

static int dec_stage(struct wire_dec *d, const char *name, const msgpack_object *v,
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

static int dec_readiness(struct wire_dec *d, const char *name, const msgpack_object *v,
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

/* ---- Messages -------------------------------------------------------------------------- */

static int dec_hello(struct wire_dec *d, const msgpack_object *top, struct cl_msg_hello *h)
{
	struct wire_fld f[] = { FLD("version"), FLD("host"), FLD("workers"),  FLD("caps"),
				FLD("token"),   FLD("pid"),  FLD("t_send_us") };
	int rc;
	if ((rc = cli_wire_fields(d, top, f, WIRE_N(f))))
		return rc;
#define F(n) cli_wire_fv(f, WIRE_N(f), n)
	if ((rc = cli_wire_get_str(d, "version", F("version"), true, CL_WIRE_MAX_VERSION, WSTR_NAME,
				   &h->version, NULL)) ||
	    (rc = cli_wire_get_str(d, "host", F("host"), true, CL_WIRE_MAX_HOST, WSTR_NAME,
				   &h->host, NULL)) ||
	    (rc = cli_wire_get_u32(d, "workers", F("workers"), true, &h->workers)) ||
	    (rc = cli_wire_get_str_array(d, "caps", F("caps"), CL_WIRE_MAX_CAPS, CL_WIRE_MAX_CAP,
					 WSTR_NAME, &h->caps, &h->n_caps)) ||
	    (rc = cli_wire_get_str(d, "token", F("token"), true, CL_WIRE_MAX_TOKEN, WSTR_TEXT,
				   &h->token, NULL)) ||
	    (rc = cli_wire_get_i64(d, "pid", F("pid"), true, INT64_MIN, &h->pid)) ||
	    (rc = cli_wire_get_i64(d, "t_send_us", F("t_send_us"), true, INT64_MIN, &h->t_send_us)))
		return rc;
#undef F
	return 0;
}

static int dec_poll(struct wire_dec *d, const msgpack_object *top, struct cl_msg_poll *p)
{
	struct wire_fld f[] = { FLD("state"),       FLD("applied_seq"), FLD("cpu_pct"),
				FLD("rss_bytes"),   FLD("inflight"),    FLD("loop_lag_us"),
				FLD("t_send_us"),   FLD("error"),       FLD("clock_offset_us"),
				FLD("clock_rtt_us") };
	int rc, state = 0;
	if ((rc = cli_wire_fields(d, top, f, WIRE_N(f))))
		return rc;
#define F(n) cli_wire_fv(f, WIRE_N(f), n)
	if ((rc = cli_wire_get_enum(d, "state", F("state"), true, cl_agent_state_from_name,
				    &state)) ||
	    (rc = cli_wire_get_u64(d, "applied_seq", F("applied_seq"), true, UINT64_MAX,
				   &p->applied_seq)) ||
	    (rc = cli_wire_get_dbl(d, "cpu_pct", F("cpu_pct"), true, &p->cpu_pct)) ||
	    (rc = cli_wire_get_i64(d, "rss_bytes", F("rss_bytes"), true, 0, &p->rss_bytes)) ||
	    (rc = cli_wire_get_i64(d, "inflight", F("inflight"), true, 0, &p->inflight)) ||
	    (rc = cli_wire_get_i64(d, "loop_lag_us", F("loop_lag_us"), true, 0, &p->loop_lag_us)) ||
	    (rc = cli_wire_get_i64(d, "t_send_us", F("t_send_us"), true, INT64_MIN,
				   &p->t_send_us)) ||
	    (rc = cli_wire_get_str(d, "error", F("error"), false, CL_WIRE_MAX_ERROR, WSTR_TEXT,
				   &p->error, NULL)) ||
	    (rc = cli_wire_get_i64(d, "clock_offset_us", F("clock_offset_us"), false, INT64_MIN,
				   &p->clock_offset_us)) ||
	    (rc = cli_wire_get_i64(d, "clock_rtt_us", F("clock_rtt_us"), false, 0,
				   &p->clock_rtt_us)))
		return rc;
#undef F
	p->state = (enum cl_agent_state)state;
	return 0;
}

/* REPORT.stalls: an array of at most CL_STALLS_MAX {start_us, length_us > 0}; absent: none. */
static int dec_stalls(struct wire_dec *d, const msgpack_object *v, struct cl_stall_list *l)
{
	if (!v)
		return 0;
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, "stalls", "an array", v);
	if (v->via.array.size > CL_STALLS_MAX)
		return cli_wire_bad(d, CL_ETOOBIG, "stalls", "has too many entries (%u, max %d)",
				    v->via.array.size, CL_STALLS_MAX);
	int rc = 0;
	for (uint32_t i = 0; i < v->via.array.size && !rc; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "stalls[%u]", i);
		const msgpack_object *e = &v->via.array.ptr[i];
		if ((rc = cli_wire_need_map(d, nm, e, true)))
			break;
		size_t old = wire_path_push(&d->path, nm);
		struct wire_fld sf[] = { FLD("start_us"), FLD("length_us") };
		struct cl_stall s = { 0 };
		if (!(rc = cli_wire_fields(d, e, sf, WIRE_N(sf))) &&
		    !(rc = cli_wire_get_i64(d, "start_us", sf[0].v, true, INT64_MIN, &s.start_us)))
			rc = cli_wire_get_i64(d, "length_us", sf[1].v, true, 1, &s.length_us);
		wire_path_pop(&d->path, old);
		/* Added, not copied: whatever order or overlap a peer sends, the list keeps its
		 * invariant (sorted, disjoint). */
		if (!rc)
			cl_stall_list_add(l, s.start_us, s.length_us);
	}
	return rc;
}

/* REPORT.sources: an array of at most CL_SRCADDR_MAX {address, connections}; absent: none. */
static int dec_sources(struct wire_dec *d, const msgpack_object *v, struct cl_source_conns **out)
{
	if (!v)
		return 0;
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, "sources", "an array", v);
	if (v->via.array.size > CL_SRCADDR_MAX)
		return cli_wire_bad(d, CL_ETOOBIG, "sources", "has too many entries (%u, max %d)",
				    v->via.array.size, CL_SRCADDR_MAX);
	struct cl_source_conns *sc = calloc(1, sizeof(*sc));
	if (!sc)
		return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding sources");
	*out = sc;
	int rc = 0;
	for (uint32_t i = 0; i < v->via.array.size && !rc; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "sources[%u]", i);
		const msgpack_object *e = &v->via.array.ptr[i];
		if ((rc = cli_wire_need_map(d, nm, e, true)))
			break;
		size_t old = wire_path_push(&d->path, nm);
		struct wire_fld sf[] = { FLD("address"), FLD("connections") };
		if (!(rc = cli_wire_fields(d, e, sf, WIRE_N(sf))) &&
		    !(rc = cli_wire_get_fixed_str(d, "address", sf[0].v, sc->e[i].address,
						  sizeof(sc->e[i].address), WSTR_NAME)))
			rc = cli_wire_get_u64(d, "connections", sf[1].v, true, UINT64_MAX,
					      &sc->e[i].connections);
		wire_path_pop(&d->path, old);
		if (!rc)
			sc->n = i + 1;
	}
	return rc;
}

static int dec_report(struct wire_dec *d, const msgpack_object *top, struct cl_msg_report *r)
{
	struct wire_fld f[] = { FLD("kind"),      FLD("stage"),         FLD("interval"),
				FLD("span_us"),   FLD("metrics"),       FLD("readiness"),
				FLD("t_send_us"), FLD("error"),         FLD("start_skew_us"),
				FLD("stalls"),    FLD("stalls_dropped"), FLD("sources") };
	int rc, kind = 0;
	if ((rc = cli_wire_fields(d, top, f, WIRE_N(f))))
		return rc;
#define F(n) cli_wire_fv(f, WIRE_N(f), n)
	if ((rc = cli_wire_get_enum(d, "kind", F("kind"), true, cl_report_kind_from_name, &kind)))
		return rc;
	r->kind = (enum cl_report_kind)kind;
	bool probe = r->kind == CL_REPORT_PROBE;
	if ((rc = cli_wire_get_u32(d, "stage", F("stage"), true, &r->stage)) ||
	    (rc = cli_wire_get_u32(d, "interval", F("interval"), true, &r->interval)) ||
	    (rc = cli_wire_get_i64(d, "span_us", F("span_us"), false, 0, &r->span_us)) ||
	    (rc = cli_wire_get_i64(d, "t_send_us", F("t_send_us"), true, INT64_MIN,
				   &r->t_send_us)) ||
	    (rc = cli_wire_get_str(d, "error", F("error"), false, CL_WIRE_MAX_ERROR, WSTR_TEXT,
				   &r->error, NULL)) ||
	    (rc = cli_wire_get_i64(d, "start_skew_us", F("start_skew_us"), false, 0,
				   &r->start_skew_us)) ||
	    (rc = dec_stalls(d, F("stalls"), &r->stalls)) ||
	    (rc = cli_wire_get_u32(d, "stalls_dropped", F("stalls_dropped"), false,
				   &r->stalls.dropped)) ||
	    (rc = dec_sources(d, F("sources"), &r->sources)) ||
	    (rc = cli_wire_need_map(d, "readiness", F("readiness"), probe)) ||
	    (rc = cli_wire_need_map(d, "metrics", F("metrics"), !probe)))
		return rc;
	if (F("readiness")) {
		if (!(r->readiness = calloc(1, sizeof(*r->readiness))))
			return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding readiness");
		if ((rc = dec_readiness(d, "readiness", F("readiness"), r->readiness)))
			return rc;
	}
	/* Last: the record is a fixed few MiB, allocated only once everything else passed. */
	const msgpack_object *mo = F("metrics");
#undef F
	if (mo) {
		if (!(r->metrics = cli_metrics_take()))
			return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding metrics");
		struct cl_err merr = { 0 };
		rc = cl_metrics_unpack_add(r->metrics, mo, &merr);
		if (rc)
			return cli_wire_bad(d, rc == CL_ENOMEM ? CL_ENOMEM : CL_EPROTO, "metrics",
					    "is invalid: %s",
					    merr.msg[0] ? merr.msg : cl_strerror(rc));
	}
	return 0;
}

static int dec_welcome(struct wire_dec *d, const msgpack_object *top, struct cl_msg_welcome *w)
{
	struct wire_fld f[] = { FLD("agent_id"), FLD("report_interval_us"), FLD("t_coord_us"),
				FLD("t_coord_recv_us") };
	int rc;
	if ((rc = cli_wire_fields(d, top, f, WIRE_N(f))) ||
	    (rc = cli_wire_get_u32(d, "agent_id", f[0].v, true, &w->agent_id)) ||
	    (rc = cli_wire_get_i64(d, "report_interval_us", f[1].v, true, 1,
				   &w->report_interval_us)) ||
	    (rc = cli_wire_get_i64(d, "t_coord_us", f[2].v, true, INT64_MIN, &w->t_coord_us)) ||
	    (rc = cli_wire_get_i64(d, "t_coord_recv_us", f[3].v, false, INT64_MIN,
				   &w->t_coord_recv_us)))
		return rc;
	return 0;
}

static int dec_probe(struct wire_dec *d, const msgpack_object *args, struct cl_cmd_probe *p)
{
	struct wire_fld f[] = { FLD("timeout_us"),     FLD("request_timeout_us"),
				FLD("consecutive"),    FLD("backoff_initial_us"),
				FLD("backoff_max_us"), FLD("seed"),
				FLD("body_json"),      FLD("prompt"),
				FLD("max_tokens"),     FLD("extra_body_json"),
				FLD("target") };
	int rc;
	if ((rc = cli_wire_fields(d, args, f, WIRE_N(f))))
		return rc;
#define F(n) cli_wire_fv(f, WIRE_N(f), n)
	if ((rc = cli_wire_get_i64(d, "timeout_us", F("timeout_us"), true, 0, &p->timeout_us)) ||
	    (rc = cli_wire_get_i64(d, "request_timeout_us", F("request_timeout_us"), true, 0,
				   &p->request_timeout_us)) ||
	    (rc = cli_wire_get_u32(d, "consecutive", F("consecutive"), true, &p->consecutive)) ||
	    (rc = cli_wire_get_i64(d, "backoff_initial_us", F("backoff_initial_us"), true, 0,
				   &p->backoff_initial_us)) ||
	    (rc = cli_wire_get_i64(d, "backoff_max_us", F("backoff_max_us"), true, 0,
				   &p->backoff_max_us)) ||
	    (rc = cli_wire_get_u64(d, "seed", F("seed"), false, UINT64_MAX, &p->seed)) ||
	    (rc = cli_wire_get_str(d, "body_json", F("body_json"), false, CL_WIRE_MAX_BODY,
				   WSTR_TEXT, &p->body_json, NULL)) ||
	    (rc = cli_wire_get_str(d, "prompt", F("prompt"), false, CL_WIRE_MAX_PROMPT, WSTR_TEXT,
				   &p->prompt, NULL)) ||
	    (rc = cli_wire_get_u32(d, "max_tokens", F("max_tokens"), false, &p->max_tokens)) ||
	    (rc = cli_wire_get_str(d, "extra_body_json", F("extra_body_json"), false,
				   CL_WIRE_MAX_BODY, WSTR_TEXT, &p->extra_body_json, NULL)))
		return rc;
	const msgpack_object *t = F("target");
#undef F
	if (t) {
		if (!(p->target = calloc(1, sizeof(*p->target))))
			return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding target");
		return dec_target(d, "target", t, p->target);
	}
	return 0;
}

/* An array v of at most CL_WIRE_MAX_ITEMS maps: allocates *out (n entries of size each)
 * only after the count is checked. */
static int dec_item_array(struct wire_dec *d, const char *name, const msgpack_object *v,
			  size_t size, void **out, size_t *n_out)
{
	if (!v)
		return cli_wire_missing(d, name);
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, name, "an array", v);
	size_t n = v->via.array.size;
	if (n > CL_WIRE_MAX_ITEMS)
		return cli_wire_bad(d, CL_ETOOBIG, name, "has too many entries (%zu, max %u)", n,
				    CL_WIRE_MAX_ITEMS);
	if (n && !(*out = calloc(n, size)))
		return cl_err_set(d->err, CL_ENOMEM, "out of memory decoding %s", name);
	*n_out = n;
	return 0;
}

static int dec_lease(struct wire_dec *d, const msgpack_object *args, struct cl_cmd_lease *l)
{
	struct wire_fld f[] = { FLD("items") };
	int rc;
	if ((rc = cli_wire_fields(d, args, f, 1)) ||
	    (rc = dec_item_array(d, "items", f[0].v, sizeof(*l->items), (void **)&l->items,
				 &l->n_items)))
		return rc;
	for (size_t i = 0; i < l->n_items; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "items[%zu]", i);
		const msgpack_object *e = &f[0].v->via.array.ptr[i];
		if ((rc = cli_wire_need_map(d, nm, e, true)))
			return rc;
		size_t o2 = wire_path_push(&d->path, nm);
		struct wire_fld g[] = { FLD("id"), FLD("body") };
		struct cl_gen_item *it = &l->items[i];
		if (!(rc = cli_wire_fields(d, e, g, 2)) &&
		    !(rc = cli_wire_get_str(d, "id", g[0].v, true, CL_WIRE_MAX_ID, WSTR_NAME, &it->id,
					    NULL)))
			rc = cli_wire_get_str(d, "body", g[1].v, true, CL_WIRE_MAX_BODY, WSTR_TEXT,
					      &it->body, &it->body_len);
		wire_path_pop(&d->path, o2);
		if (rc)
			return rc;
	}
	return 0;
}

static int dec_generate(struct wire_dec *d, const msgpack_object *args, struct cl_cmd_generate *g)
{
	struct wire_fld f[] = { FLD("target"),	   FLD("concurrency"),
				FLD("max_attempts"),	   FLD("request_timeout_us"),
				FLD("backoff_initial_us"), FLD("backoff_max_us"),
				FLD("rate_per_s") };
	int rc;
	if ((rc = cli_wire_fields(d, args, f, WIRE_N(f))) ||
	    (rc = dec_target(d, "target", f[0].v, &g->target)) ||
	    (rc = cli_wire_get_u32(d, "concurrency", f[1].v, true, &g->concurrency)) ||
	    (rc = cli_wire_get_u32(d, "max_attempts", f[2].v, true, &g->max_attempts)) ||
	    (rc = cli_wire_get_i64(d, "request_timeout_us", f[3].v, true, 0,
				   &g->request_timeout_us)) ||
	    (rc = cli_wire_get_i64(d, "backoff_initial_us", f[4].v, true, 0,
				   &g->backoff_initial_us)) ||
	    (rc = cli_wire_get_i64(d, "backoff_max_us", f[5].v, true, 0, &g->backoff_max_us)) ||
	    (rc = cli_wire_get_dbl(d, "rate_per_s", f[6].v, false, &g->rate_per_s)))
		return rc;
	if (!(g->rate_per_s >= 0) || !isfinite(g->rate_per_s))
		return cli_wire_bad(d, CL_EPROTO, "rate_per_s", "must be a finite number >= 0");
	if (g->concurrency < 1 || g->max_attempts < 1)
		return cli_wire_bad(d, CL_EPROTO, g->concurrency < 1 ? "concurrency" : "max_attempts",
				    "must be at least 1");
	return 0;
}

static int dec_answers(struct wire_dec *d, const msgpack_object *top, struct cl_msg_answers *m)
{
	struct wire_fld f[] = { FLD("t_send_us"), FLD("answers") };
	int rc;
	if ((rc = cli_wire_fields(d, top, f, 2)) ||
	    (rc = cli_wire_get_i64(d, "t_send_us", f[0].v, true, INT64_MIN, &m->t_send_us)) ||
	    (rc = dec_item_array(d, "answers", f[1].v, sizeof(*m->answers), (void **)&m->answers,
				 &m->n_answers)))
		return rc;
	for (size_t i = 0; i < m->n_answers; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "answers[%zu]", i);
		const msgpack_object *e = &f[1].v->via.array.ptr[i];
		if ((rc = cli_wire_need_map(d, nm, e, true)))
			return rc;
		size_t o2 = wire_path_push(&d->path, nm);
		struct wire_fld g[] = { FLD("id"),	  FLD("attempts"),   FLD("status"),
					FLD("ttft_us"),	  FLD("total_us"),   FLD("output_tokens"),
					FLD("retryable"), FLD("request_id"), FLD("body"),
					FLD("error") };
		struct cl_gen_answer *a = &m->answers[i];
		if (!(rc = cli_wire_fields(d, e, g, WIRE_N(g))) &&
		    !(rc = cli_wire_get_str(d, "id", g[0].v, true, CL_WIRE_MAX_ID, WSTR_NAME, &a->id,
					    NULL)) &&
		    !(rc = cli_wire_get_u32(d, "attempts", g[1].v, true, &a->attempts)) &&
		    !(rc = cli_wire_get_u32(d, "status", g[2].v, true, &a->status)) &&
		    !(rc = cli_wire_get_i64(d, "ttft_us", g[3].v, true, 0, &a->ttft_us)) &&
		    !(rc = cli_wire_get_i64(d, "total_us", g[4].v, true, 0, &a->total_us)) &&
		    !(rc = cli_wire_get_u32(d, "output_tokens", g[5].v, true, &a->output_tokens)) &&
		    !(rc = cli_wire_get_bool(d, "retryable", g[6].v, true, &a->retryable)) &&
		    !(rc = cli_wire_get_str(d, "request_id", g[7].v, false, CL_WIRE_MAX_NAME,
					    WSTR_NAME, &a->request_id, NULL)) &&
		    !(rc = cli_wire_get_str(d, "body", g[8].v, false, CL_WIRE_MAX_ANSWER, WSTR_TEXT,
					    &a->body, NULL)) &&
		    !(rc = cli_wire_get_str(d, "error", g[9].v, false, CL_WIRE_MAX_ERROR, WSTR_TEXT,
					    &a->error, NULL)) &&
		    a->attempts < 1)
			rc = cli_wire_bad(d, CL_EPROTO, "attempts", "must be at least 1");
		wire_path_pop(&d->path, o2);
		if (rc)
			return rc;
	}
	return 0;
}

static int dec_args(struct wire_dec *d, const msgpack_object *args, struct cl_msg_cmd *c)
{
	int rc;
	struct wire_fld f[2] = { FLD(NULL), FLD(NULL) };
	switch (c->cmd) {
	case CL_CMD_PROBE:
		return dec_probe(d, args, &c->probe);
	case CL_CMD_WARMUP: {
		struct wire_fld g[] = { FLD("stage"), FLD("max_tokens"), FLD("request_timeout_us"),
					FLD("body_json") };
		if ((rc = cli_wire_fields(d, args, g, WIRE_N(g))) ||
		    (rc = dec_stage(d, "stage", g[0].v, &c->warmup.stage)) ||
		    (rc = cli_wire_get_u32(d, "max_tokens", g[1].v, true, &c->warmup.max_tokens)) ||
		    (rc = cli_wire_get_i64(d, "request_timeout_us", g[2].v, false, 0,
					   &c->warmup.request_timeout_us)) ||
		    (rc = cli_wire_get_str(d, "body_json", g[3].v, false, CL_WIRE_MAX_BODY,
					   WSTR_TEXT, &c->warmup.body_json, NULL)))
			return rc;
		return 0;
	}
	case CL_CMD_PREPARE:
		f[0].name = "target";
		f[1].name = "workload";
		if ((rc = cli_wire_fields(d, args, f, 2)) ||
		    (rc = dec_target(d, "target", f[0].v, &c->prepare.target)) ||
		    (rc = dec_workload(d, "workload", f[1].v, &c->prepare.workload)))
			return rc;
		return 0;
	case CL_CMD_START_AT:
		f[0].name = "stage";
		f[1].name = "start_at_coord_us";
		if ((rc = cli_wire_fields(d, args, f, 2)) ||
		    (rc = dec_stage(d, "stage", f[0].v, &c->start_at.stage)) ||
		    (rc = cli_wire_get_i64(d, "start_at_coord_us", f[1].v, true, INT64_MIN,
					   &c->start_at.start_at_coord_us)))
			return rc;
		return 0;
	case CL_CMD_STOP:
		f[0].name = "stage";
		if ((rc = cli_wire_fields(d, args, f, 1)) ||
		    (rc = cli_wire_get_u32(d, "stage", f[0].v, true, &c->stop.stage)))
			return rc;
		return 0;
	case CL_CMD_BODIES:
		f[0].name = "offset";
		f[1].name = "bodies";
		if ((rc = cli_wire_fields(d, args, f, 2)) ||
		    (rc = cli_wire_get_u64(d, "offset", f[0].v, true, CL_WIRE_MAX_TOTAL_BODIES,
					   &c->bodies.offset)) ||
		    (rc = dec_bodies(d, f[1].v, &c->bodies.bodies, &c->bodies.n_bodies)))
			return rc;
		return 0;
	case CL_CMD_GENERATE:
		return dec_generate(d, args, &c->generate);
	case CL_CMD_LEASE:
		return dec_lease(d, args, &c->lease);
	default:
		return 0;
	}
}

static int dec_cmd(struct wire_dec *d, const msgpack_object *top, struct cl_msg_cmd *c)
{
	struct wire_fld f[] = { FLD("cmd"), FLD("cmd_seq"), FLD("t_coord_us"),
				FLD("t_coord_recv_us"), FLD("args") };
	int rc, cmd = 0;
	if ((rc = cli_wire_fields(d, top, f, WIRE_N(f))))
		return rc;
	if (!f[0].v)
		return cli_wire_missing(d, "cmd");
	if ((rc = cli_wire_check_str(d, "cmd", f[0].v, 63, WSTR_NAME)))
		return rc;
	char name[64];
	memcpy(name, f[0].v->via.str.ptr, f[0].v->via.str.size);
	name[f[0].v->via.str.size] = '\0';
	if ((cmd = cl_cmd_from_name(name)) < 0)
		return cli_wire_bad(d, CL_EPROTO, "cmd", "has unknown command '%s'", name);
	/* Set before the arguments are decoded, so cl_msg_free knows what to free. */
	c->cmd = (enum cl_cmd)cmd;
	if ((rc = cli_wire_get_u64(d, "cmd_seq", f[1].v, true, UINT64_MAX, &c->cmd_seq)) ||
	    (rc = cli_wire_get_i64(d, "t_coord_us", f[2].v, true, INT64_MIN, &c->t_coord_us)) ||
	    (rc = cli_wire_get_i64(d, "t_coord_recv_us", f[3].v, false, INT64_MIN,
				   &c->t_coord_recv_us)))
		return rc;
	bool has_args = c->cmd == CL_CMD_PROBE || c->cmd == CL_CMD_WARMUP ||
			c->cmd == CL_CMD_PREPARE || c->cmd == CL_CMD_START_AT ||
			c->cmd == CL_CMD_STOP || c->cmd == CL_CMD_BODIES ||
			c->cmd == CL_CMD_GENERATE || c->cmd == CL_CMD_LEASE;
	if (!has_args)
		return 0; /* an `args` a later version adds to these is ignored */
	if ((rc = cli_wire_need_map(d, "args", f[4].v, true)))
		return rc;
	size_t old = wire_path_push(&d->path, "args");
	rc = dec_args(d, f[4].v, c);
	wire_path_pop(&d->path, old);
	return rc;
}

static int decode(struct wire_dec *d, const msgpack_object *top, struct cl_msg *m)
{
	int rc;
	if (top->type != MSGPACK_OBJECT_MAP)
		return cl_err_set(d->err, CL_EPROTO, "message is %s, not a map",
				  cli_mpk_type_word(top));
	struct wire_fld f[] = { FLD("proto"), FLD("type"), FLD("run"), FLD("agent"), FLD("seq") };
	if ((rc = cli_wire_fields(d, top, f, WIRE_N(f))))
		return rc;

	/* The version first: a later version may change anything else. */
	uint64_t proto = 0;
	if ((rc = cli_wire_get_u64(d, "proto", f[0].v, true, UINT32_MAX, &proto)))
		return rc;
	m->proto = (uint32_t)proto;
	if (proto != CL_PROTO_VERSION)
		return cl_err_set(
		    d->err, CL_EVERSION,
		    "protocol version %llu is not supported (this side speaks version %d)",
		    (unsigned long long)proto, CL_PROTO_VERSION);

	if (!f[1].v)
		return cli_wire_missing(d, "type");
	if ((rc = cli_wire_check_str(d, "type", f[1].v, 63, WSTR_NAME)))
		return rc;
	char tname[64];
	memcpy(tname, f[1].v->via.str.ptr, f[1].v->via.str.size);
	tname[f[1].v->via.str.size] = '\0';
	int type = cl_msg_type_from_name(tname);
	if (type <= CL_MSG_NONE)
		return cl_err_set(d->err, CL_EPROTO, "unknown message type '%s'", tname);
	m->type = (enum cl_msg_type)type;
	d->what = cl_msg_type_name(type);

	if ((rc = cli_wire_get_str(d, "run", f[2].v, true, CL_WIRE_MAX_RUN, WSTR_NAME, &m->run,
				   NULL)) ||
	    (rc = cli_wire_get_u32(d, "agent", f[3].v, true, &m->agent)) ||
	    (rc = cli_wire_get_u64(d, "seq", f[4].v, true, UINT64_MAX, &m->seq)))
		return rc;

	switch (m->type) {
	case CL_MSG_HELLO:
		return dec_hello(d, top, &m->hello);
	case CL_MSG_POLL:
		return dec_poll(d, top, &m->poll);
	case CL_MSG_REPORT:
		return dec_report(d, top, &m->report);
	case CL_MSG_WELCOME:
		return dec_welcome(d, top, &m->welcome);
	case CL_MSG_REFUSE: {
		struct wire_fld g[] = { FLD("reason") };
		if ((rc = cli_wire_fields(d, top, g, 1)))
			return rc;
		return cli_wire_get_str(d, "reason", g[0].v, true, CL_WIRE_MAX_REASON, WSTR_TEXT,
					&m->refuse.reason, NULL);
	}
	case CL_MSG_CMD:
		return dec_cmd(d, top, &m->cmd);
	case CL_MSG_ANSWERS:
		return dec_answers(d, top, &m->answers);
	default:
		return 0; /* ACK: the envelope is all */
	}
}

int cl_wire_decode(const void *buf, size_t len, struct cl_msg *out, struct cl_err *err)
{
	if (!out)
		return cl_err_set(err, CL_EINVAL, "cannot decode: no message");
	memset(out, 0, sizeof(*out));
	out->owned = true;
	msgpack_unpacked up;
	msgpack_unpacked_init(&up); /* allocates nothing until msgpack_unpack_next */
	int rc = cl_wire_check(buf, len, NULL, err);
	if (rc)
		goto out;

	size_t off = 0;
	msgpack_unpack_return ur = msgpack_unpack_next(&up, buf, len, &off);
	if (ur != MSGPACK_UNPACK_SUCCESS || off != len) {
		/* Only reachable if msgpack-c is stricter than the pre-validator (or out of
		 * memory); either way the message is refused. */
		rc = ur == MSGPACK_UNPACK_NOMEM_ERROR
			 ? cl_err_set(err, CL_ENOMEM, "out of memory unpacking message")
			 : cl_err_set(err, CL_EPARSE, "malformed msgpack (unpack returned %d)",
				      (int)ur);
		goto out;
	}
	struct wire_dec d = { .err = err };
	rc = decode(&d, &up.data, out);
out:
	msgpack_unpacked_destroy(&up);
	if (rc) {
		/* Keep the plain envelope values for the caller's log line. */
		uint32_t proto = out->proto;
		enum cl_msg_type type = out->type;
		uint32_t agent = out->agent;
		uint64_t seq = out->seq;
		cl_msg_free(out);
		out->proto = proto;
		out->type = type;
		out->agent = agent;
		out->seq = seq;
	}
	return rc;
}
