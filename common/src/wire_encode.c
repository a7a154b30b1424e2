/* The wire encoder: struct cl_msg -> one msgpack map, checked against the decoder's rules. */
#include "chatload/wire.h"

#include "chatload/metrics_wire.h"

#include "wire_impl.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

struct enc {
	msgpack_packer pk;
	struct cl_err *err;
	const char *what; /* message type name, for messages */
	struct wire_path path;
	int rc; /* first failure; once set every helper is a no-op */
	/* cl_wire_encode_report: REPORT's t_send_us at a fixed width, its offset from start */
	bool stamp;
	msgpack_sbuffer *out;
	size_t start, t_send_at;
};

static int fail(struct enc *e, int code, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records the first failure as "cannot encode TYPE: field 'path.name' ...". */
static int fail(struct enc *e, int code, const char *name, const char *fmt, ...)
{
	if (e->rc)
		return e->rc;
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	e->rc = cl_err_set(e->err, code, "cannot encode %s: field '%s%s%s' %s", e->what, e->path.s,
			   e->path.len ? "." : "", name, why);
	return e->rc;
}

/* msgpack-c's sbuffer write fails only when realloc does. */
static void chk(struct enc *e, int pack_rc)
{
	if (pack_rc && !e->rc)
		e->rc = cl_err_set(e->err, CL_ENOMEM, "cannot encode %s: out of memory", e->what);
}

static void key(struct enc *e, const char *k)
{
	if (e->rc)
		return;
	size_t n = strlen(k);
	chk(e, msgpack_pack_str(&e->pk, n));
	chk(e, msgpack_pack_str_body(&e->pk, k, n));
}

static void map(struct enc *e, size_t n)
{
	if (!e->rc)
		chk(e, msgpack_pack_map(&e->pk, n));
}

static void array(struct enc *e, size_t n)
{
	if (!e->rc)
		chk(e, msgpack_pack_array(&e->pk, n));
}

/* A string value with its cap and content rules (no key). */
static void str_val(struct enc *e, const char *name, const char *s, size_t n, size_t cap,
		    enum wire_str kind)
{
	if (e->rc)
		return;
	if (n > cap) {
		fail(e, CL_ETOOBIG, name, "is too long (%zu bytes, max %zu)", n, cap);
		return;
	}
	const char *bad = wire_str_problem(s, n, kind);
	if (bad) {
		fail(e, CL_EINVAL, name, "%s", bad);
		return;
	}
	chk(e, msgpack_pack_str(&e->pk, n));
	chk(e, msgpack_pack_str_body(&e->pk, n ? s : "", n));
}

/* key + string; NULL is sent as "" (required strings). */
static void str(struct enc *e, const char *name, const char *s, size_t cap, enum wire_str kind)
{
	key(e, name);
	str_val(e, name, s ? s : "", s ? strlen(s) : 0, cap, kind);
}

static void u64(struct enc *e, const char *name, uint64_t v)
{
	key(e, name);
	if (!e->rc)
		chk(e, msgpack_pack_uint64(&e->pk, v));
}

static void i64(struct enc *e, const char *name, int64_t v)
{
	key(e, name);
	if (!e->rc)
		chk(e, msgpack_pack_int64(&e->pk, v));
}

/* Durations, sizes and counts the decoder requires to be >= 0. */
static void nonneg(struct enc *e, const char *name, int64_t v)
{
	if (v < 0)
		fail(e, CL_EINVAL, name, "must not be negative (%lld)", (long long)v);
	i64(e, name, v);
}

static void dbl(struct enc *e, const char *name, double v)
{
	if (!isfinite(v) || v < 0)
		fail(e, CL_EINVAL, name, "must be a finite, non-negative number (%g)", v);
	key(e, name);
	if (!e->rc)
		chk(e, msgpack_pack_double(&e->pk, v));
}

static void boolean(struct enc *e, const char *name, bool v)
{
	key(e, name);
	if (!e->rc)
		chk(e, v ? msgpack_pack_true(&e->pk) : msgpack_pack_false(&e->pk));
}

/* An enum as its wire spelling; spelled is NULL when v is out of range. */
static void enum_val(struct enc *e, const char *name, const char *spelled, int v)
{
	if (!spelled)
		fail(e, CL_EINVAL, name, "has an unknown value (%d)", v);
	str(e, name, spelled, 64, WSTR_NAME);
}

static const char *table(const char *const *names, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? names[v] : NULL;
}

/* key, then an array of n strings (NULL sent as ""), each named "key[i]" in errors */
static void str_array(struct enc *e, const char *name, char *const *a, size_t n, size_t cap,
		      enum wire_str kind)
{
	key(e, name);
	array(e, n);
	for (size_t i = 0; i < n && !e->rc; i++) {
		char nm[48];
		snprintf(nm, sizeof(nm), "%s[%zu]", name, i);
		const char *s = a[i] ? a[i] : "";
		str_val(e, nm, s, strlen(s), cap, kind);
	}
}

static void enc_target(struct enc *e, const char *name, const struct cl_target_plan *t)
{
	size_t old = wire_path_push(&e->path, name);
	key(e, name);
	if (t->n_headers > CL_WIRE_MAX_HEADERS)
		fail(e, CL_ETOOBIG, "headers", "has too many entries (%zu, max %d)", t->n_headers,
		     CL_WIRE_MAX_HEADERS);
	if (t->n_headers && !t->headers)
		fail(e, CL_EINVAL, "headers", "is NULL with %zu entries", t->n_headers);
	map(e, 5 + !!t->model + !!t->api_key_env + !!t->ca_file + !!t->http2_fallback +
		   !!t->http2_streams + !!t->api + 2 * !!t->n_endpoints);
	str(e, "base_url", t->base_url, CL_WIRE_MAX_URL, WSTR_NAME);
	if (t->model)
		str(e, "model", t->model, CL_WIRE_MAX_NAME, WSTR_NAME);
	if (t->api_key_env)
		str(e, "api_key_env", t->api_key_env, CL_WIRE_MAX_NAME, WSTR_NAME);
	str_array(e, "headers", t->headers, t->n_headers, CL_WIRE_MAX_HEADER, WSTR_HEADER);
	boolean(e, "http2", t->http2);
	boolean(e, "tls_verify", t->tls_verify);
	if (t->ca_file)
		str(e, "ca_file", t->ca_file, CL_WIRE_MAX_PATH, WSTR_NAME);
	nonneg(e, "connect_timeout_us", t->connect_timeout_us);
	/* Optional, sent only when set, so an older agent still reads a plan that needs none. */
	if (t->http2_fallback)
		boolean(e, "http2_fallback", true);
	if (t->http2_streams)
		nonneg(e, "http2_streams", t->http2_streams);
	if (t->api)
		nonneg(e, "api", t->api);
	/* --- several endpoints (target.urls): sent only with two or more --- */
	if (t->n_endpoints) {
		if (t->n_endpoints < 2 || t->n_endpoints > CL_ENDPOINTS_MAX || !t->endpoints)
			fail(e, CL_EINVAL, "endpoints", "has %zu entries (2..%d)", t->n_endpoints,
			     CL_ENDPOINTS_MAX);
		else
			str_array(e, "endpoints", t->endpoints, t->n_endpoints, CL_WIRE_MAX_URL,
				  WSTR_NAME);
		nonneg(e, "route", t->route);
	}
	wire_path_pop(&e->path, old);
}

/* The value of a "bodies" array (the key is the caller's). */
static void enc_bodies_value(struct enc *e, const struct cl_request_body *bodies, size_t n)
{
	if (n > CL_WIRE_MAX_BODIES)
		fail(e, CL_ETOOBIG, "bodies", "has too many entries (%zu, max %u)", n,
		     CL_WIRE_MAX_BODIES);
	if (n && !bodies)
		fail(e, CL_EINVAL, "bodies", "is NULL with %zu entries", n);
	array(e, n);
	for (size_t i = 0; i < n && !e->rc; i++) {
		const struct cl_request_body *b = &bodies[i];
		size_t o2 = wire_path_index(&e->path, i);
		/* len is authoritative; 0 with text means "use strlen". */
		const char *json = b->json ? b->json : "";
		size_t len = b->len ? b->len : strlen(json);
		if (!b->json && b->len)
			fail(e, CL_EINVAL, "json", "is NULL with len %zu", b->len);
		if (b->turn && ((size_t)b->hist_at + b->user_len > len))
			fail(e, CL_EINVAL, "hist_at", "%u + %u is past the body's %zu bytes",
			     b->hist_at, b->user_len, len);
		map(e, 2 + !!b->max_tokens + 3 * !!b->turn + !!b->at_us + !!b->inputs);
		key(e, "json");
		str_val(e, "json", json, len, CL_WIRE_MAX_BODY, WSTR_TEXT);
		u64(e, "prompt_chars", b->prompt_chars);
		if (b->max_tokens)
			u64(e, "max_tokens", b->max_tokens);
		if (b->turn) {
			u64(e, "turn", b->turn);
			u64(e, "hist_at", b->hist_at);
			u64(e, "user_len", b->user_len);
		}
		if (b->at_us)
			nonneg(e, "at_us", b->at_us);
		if (b->inputs)
			u64(e, "inputs", b->inputs);
		wire_path_pop(&e->path, o2);
	}
}

static void enc_workload(struct enc *e, const char *name, const struct cl_workload_plan *w)
{
	size_t old = wire_path_push(&e->path, name);
	key(e, name);
	bool parts = w->total_bodies && w->total_bodies != w->n_bodies;
	if (w->total_bodies > CL_WIRE_MAX_TOTAL_BODIES || (parts && w->total_bodies < w->n_bodies))
		fail(e, CL_EINVAL, "total_bodies", "is %zu with %zu bodies (max %u)",
		     w->total_bodies, w->n_bodies, CL_WIRE_MAX_TOTAL_BODIES);
	size_t total = parts ? w->total_bodies : w->n_bodies;
	if (w->first_body && w->first_body >= total)
		fail(e, CL_EINVAL, "first_body", "is %zu, not below the %zu bodies", w->first_body,
		     total);
	if (w->share > total)
		fail(e, CL_EINVAL, "share", "is %zu, above the %zu bodies", w->share, total);
	map(e, 3 + parts + !!w->first_body + !!w->think_time_us + !!w->trace_stride + !!w->share +
		   w->per_stage + !!w->retag[0] + 2 * !!w->tool_result_tokens);
	key(e, "bodies");
	enc_bodies_value(e, w->bodies, w->n_bodies);
	nonneg(e, "request_timeout_us", w->request_timeout_us);
	u64(e, "max_tokens", w->max_tokens);
	if (parts)
		u64(e, "total_bodies", w->total_bodies);
	if (w->first_body)
		u64(e, "first_body", w->first_body);
	if (w->think_time_us)
		nonneg(e, "think_time_us", w->think_time_us);
	if (w->trace_stride)
		u64(e, "trace_stride", w->trace_stride);
	if (w->share)
		u64(e, "share", w->share);
	if (w->per_stage)
		boolean(e, "per_stage", true);
	if (w->retag[0])
		str(e, "retag", w->retag, sizeof(w->retag) - 1, WSTR_NAME);
	if (w->tool_result_tokens) {
		/* the agentic loop: both or neither */
		u64(e, "tool_result_tokens", w->tool_result_tokens);
		u64(e, "tool_max_rounds", w->tool_max_rounds);
	}
	wire_path_pop(&e->path, old);
}

static void enc_stage(struct enc *e, const char *name, const struct cl_stage_plan *s)
{
	size_t old = wire_path_push(&e->path, name);
	key(e, name);
	map(e, 12 + !!s->name);
	u64(e, "index", s->index);
	if (s->name)
		str(e, "name", s->name, CL_WIRE_MAX_NAME, WSTR_NAME);
	enum_val(e, "mode", table(wire_mode_names, WIRE_N(wire_mode_names), (int)s->mode),
		 (int)s->mode);
	u64(e, "concurrency", s->concurrency);
	dbl(e, "rate_per_s", s->rate_per_s);
	enum_val(e, "arrival",
		 table(wire_arrival_names, WIRE_N(wire_arrival_names), (int)s->arrival),
		 (int)s->arrival);
	dbl(e, "gamma_shape", s->gamma_shape);
	nonneg(e, "duration_us", s->duration_us);
	u64(e, "requests", s->requests);
	nonneg(e, "ramp_us", s->ramp_us);
	u64(e, "ramp_from", s->ramp_from);
	nonneg(e, "drain_timeout_us", s->drain_timeout_us);
	u64(e, "seed", s->seed);
	wire_path_pop(&e->path, old);
}

static void enc_readiness(struct enc *e, const char *name, const struct cl_readiness_result *r)
{
	size_t old = wire_path_push(&e->path, name);
	key(e, name);
	map(e, 10);
	enum_val(e, "status",
		 table(wire_ready_status_names, WIRE_N(wire_ready_status_names), r->status),
		 r->status);
	enum_val(e, "phase",
		 table(wire_ready_phase_names, WIRE_N(wire_ready_phase_names), r->phase), r->phase);
	key(e, "phase_passed_us");
	array(e, CL_READY__PHASES);
	for (int i = 0; i < CL_READY__PHASES && !e->rc; i++)
		chk(e, msgpack_pack_int64(&e->pk, r->phase_passed_us[i]));
	u64(e, "attempts", r->attempts);
	i64(e, "probe_ttft_us", r->probe_ttft_us);
	i64(e, "probe_total_us", r->probe_total_us);
	i64(e, "elapsed_us", r->elapsed_us);
	/* Fixed arrays: never read past them even if unterminated. */
	key(e, "model");
	str_val(e, "model", r->model, strnlen(r->model, sizeof(r->model) - 1), sizeof(r->model) - 1,
		WSTR_NAME);
	key(e, "last_error");
	str_val(e, "last_error", r->last_error, strnlen(r->last_error, sizeof(r->last_error) - 1),
		sizeof(r->last_error) - 1, WSTR_TEXT);
	i64(e, "failing_since_us", r->failing_since_us);
	wire_path_pop(&e->path, old);
}

/* REPORT.stalls: [{start_us, length_us}, ...], at most CL_STALLS_MAX. */
static void enc_stalls(struct enc *e, const struct cl_stall_list *l)
{
	if (l->n > CL_STALLS_MAX) {
		fail(e, CL_ETOOBIG, "stalls", "has too many entries (%u, max %d)", l->n,
		     CL_STALLS_MAX);
		return;
	}
	key(e, "stalls");
	size_t old = wire_path_push(&e->path, "stalls");
	array(e, l->n);
	for (uint32_t i = 0; i < l->n && !e->rc; i++) {
		size_t o2 = wire_path_index(&e->path, i);
		if (l->ep[i].length_us <= 0)
			fail(e, CL_EINVAL, "length_us", "must be positive (%lld)",
			     (long long)l->ep[i].length_us);
		map(e, 2);
		i64(e, "start_us", l->ep[i].start_us);
		i64(e, "length_us", l->ep[i].length_us);
		wire_path_pop(&e->path, o2);
	}
	wire_path_pop(&e->path, old);
}

/* REPORT.sources: [{address, connections}, ...], at most CL_SRCADDR_MAX. */
static void enc_sources(struct enc *e, const struct cl_source_conns *sc)
{
	if (sc->n > CL_SRCADDR_MAX) {
		fail(e, CL_ETOOBIG, "sources", "has too many entries (%u, max %d)", sc->n,
		     CL_SRCADDR_MAX);
		return;
	}
	key(e, "sources");
	size_t old = wire_path_push(&e->path, "sources");
	array(e, sc->n);
	for (uint32_t i = 0; i < sc->n && !e->rc; i++) {
		size_t o2 = wire_path_index(&e->path, i);
		const char *a = sc->e[i].address;
		map(e, 2);
		key(e, "address");
		str_val(e, "address", a, strnlen(a, CL_SRCADDR_TEXTMAX - 1),
			CL_SRCADDR_TEXTMAX - 1, WSTR_NAME);
		u64(e, "connections", sc->e[i].connections);
		wire_path_pop(&e->path, o2);
	}
	wire_path_pop(&e->path, old);
}

static void enc_metrics(struct enc *e, const struct cl_metrics *m)
{
	key(e, "metrics");
	if (e->rc)
		return;
	int rc = cl_metrics_pack(m, &e->pk);
	if (rc)
		e->rc = cl_err_set(e->err, rc, "cannot encode %s: field 'metrics': %s", e->what,
				   cl_strerror(rc));
}

static void enc_args(struct enc *e, const struct cl_msg_cmd *c)
{
	size_t old = wire_path_push(&e->path, "args");
	key(e, "args");
	switch (c->cmd) {
	case CL_CMD_PROBE: {
		const struct cl_cmd_probe *p = &c->probe;
		map(e, 7 + !!p->body_json + !!p->prompt + !!p->extra_body_json + !!p->target);
		nonneg(e, "timeout_us", p->timeout_us);
		nonneg(e, "request_timeout_us", p->request_timeout_us);
		u64(e, "consecutive", p->consecutive);
		nonneg(e, "backoff_initial_us", p->backoff_initial_us);
		nonneg(e, "backoff_max_us", p->backoff_max_us);
		u64(e, "seed", p->seed);
		if (p->body_json)
			str(e, "body_json", p->body_json, CL_WIRE_MAX_BODY, WSTR_TEXT);
		if (p->prompt)
			str(e, "prompt", p->prompt, CL_WIRE_MAX_PROMPT, WSTR_TEXT);
		u64(e, "max_tokens", p->max_tokens);
		if (p->extra_body_json)
			str(e, "extra_body_json", p->extra_body_json, CL_WIRE_MAX_BODY, WSTR_TEXT);
		if (p->target)
			enc_target(e, "target", p->target);
		break;
	}
	case CL_CMD_WARMUP: {
		const struct cl_cmd_warmup *w = &c->warmup;
		map(e, 3 + !!w->body_json);
		enc_stage(e, "stage", &w->stage);
		u64(e, "max_tokens", w->max_tokens);
		nonneg(e, "request_timeout_us", w->request_timeout_us);
		if (w->body_json)
			str(e, "body_json", w->body_json, CL_WIRE_MAX_BODY, WSTR_TEXT);
		break;
	}
	case CL_CMD_PREPARE:
		map(e, 2 + c->prepare.requests);
		enc_target(e, "target", &c->prepare.target);
		enc_workload(e, "workload", &c->prepare.workload);
		if (c->prepare.requests)
			boolean(e, "requests", true);
		break;
	case CL_CMD_START_AT:
		map(e, 2);
		enc_stage(e, "stage", &c->start_at.stage);
		i64(e, "start_at_coord_us", c->start_at.start_at_coord_us);
		break;
	case CL_CMD_STOP:
		/* "cut" only when set: a plain STOP stays the one-key map it always was */
		map(e, c->stop.cut ? 2 : 1);
		u64(e, "stage", c->stop.stage);
		if (c->stop.cut)
			boolean(e, "cut", true);
		break;
	case CL_CMD_BODIES:
		map(e, 2);
		u64(e, "offset", c->bodies.offset);
		key(e, "bodies");
		if (c->bodies.packed)
			/* Encoded (and checked) once by cl_wire_pack_bodies, for every agent. */
			chk(e, e->pk.callback(e->pk.data, c->bodies.packed, c->bodies.packed_len));
		else
			enc_bodies_value(e, c->bodies.bodies, c->bodies.n_bodies);
		break;
	case CL_CMD_GENERATE: {
		const struct cl_cmd_generate *g = &c->generate;
		map(e, 7);
		enc_target(e, "target", &g->target);
		if (g->concurrency < 1 || g->max_attempts < 1)
			fail(e, CL_EINVAL, "concurrency", "and max_attempts must be at least 1");
		u64(e, "concurrency", g->concurrency);
		u64(e, "max_attempts", g->max_attempts);
		nonneg(e, "request_timeout_us", g->request_timeout_us);
		nonneg(e, "backoff_initial_us", g->backoff_initial_us);
		nonneg(e, "backoff_max_us", g->backoff_max_us);
		dbl(e, "rate_per_s", g->rate_per_s);
		break;
	}
	case CL_CMD_LEASE: {
		const struct cl_cmd_lease *l = &c->lease;
		map(e, 1);
		key(e, "items");
		if (l->n_items > CL_WIRE_MAX_ITEMS)
			fail(e, CL_ETOOBIG, "items", "has too many entries (%zu, max %u)",
			     l->n_items, CL_WIRE_MAX_ITEMS);
		array(e, l->n_items);
		for (size_t i = 0; i < l->n_items && !e->rc; i++) {
			size_t o2 = wire_path_index(&e->path, i);
			map(e, 2);
			str(e, "id", l->items[i].id, CL_WIRE_MAX_ID, WSTR_NAME);
			str(e, "body", l->items[i].body, CL_WIRE_MAX_BODY, WSTR_TEXT);
			wire_path_pop(&e->path, o2);
		}
		break;
	}
	default:
		map(e, 0);
		break;
	}
	wire_path_pop(&e->path, old);
}

static void enc_answers(struct enc *e, const struct cl_msg_answers *m)
{
	key(e, "answers");
	if (m->n_answers > CL_WIRE_MAX_ITEMS)
		fail(e, CL_ETOOBIG, "answers", "has too many entries (%zu, max %u)", m->n_answers,
		     CL_WIRE_MAX_ITEMS);
	size_t old = wire_path_push(&e->path, "answers");
	array(e, m->n_answers);
	for (size_t i = 0; i < m->n_answers && !e->rc; i++) {
		const struct cl_gen_answer *a = &m->answers[i];
		size_t o2 = wire_path_index(&e->path, i);
		if (a->attempts < 1)
			fail(e, CL_EINVAL, "attempts", "must be at least 1");
		size_t n_retried = 0;
		uint64_t sum = 0;
		for (size_t k = 0; k < CL_GEN_ERR_CLASSES; k++) {
			n_retried += a->retries[k] != 0;
			sum += a->retries[k];
		}
		if (a->attempts >= 1 && sum >= a->attempts)
			fail(e, CL_EINVAL, "retries", "count more tries than attempts less the last");
		bool cls = a->err_class != 0;
		if (cls && (a->err_class < CL_CTR_FIRST_ERROR || a->err_class > CL_CTR_LAST_ERROR))
			fail(e, CL_EINVAL, "class", "is not an error class (%d)", (int)a->err_class);
		map(e, 7 + !!a->request_id + !!a->body + !!a->error + (a->ttfc_us > 0) +
			   (a->prompt_tokens > 0) + cls + (n_retried > 0));
		str(e, "id", a->id, CL_WIRE_MAX_ID, WSTR_NAME);
		u64(e, "attempts", a->attempts);
		u64(e, "status", a->status);
		nonneg(e, "ttft_us", a->ttft_us);
		nonneg(e, "total_us", a->total_us);
		u64(e, "output_tokens", a->output_tokens);
		boolean(e, "retryable", a->retryable);
		if (a->request_id)
			str(e, "request_id", a->request_id, CL_WIRE_MAX_NAME, WSTR_NAME);
		if (a->body)
			str(e, "body", a->body, CL_WIRE_MAX_ANSWER, WSTR_TEXT);
		if (a->error)
			str(e, "error", a->error, CL_WIRE_MAX_ERROR, WSTR_TEXT);
		if (a->ttfc_us > 0)
			nonneg(e, "ttfc_us", a->ttfc_us);
		if (a->prompt_tokens > 0)
			u64(e, "prompt_tokens", a->prompt_tokens);
		if (cls)
			str(e, "class", cl_ctr_name(a->err_class), CL_WIRE_MAX_NAME, WSTR_NAME);
		if (n_retried) {
			/* by the counter's name, as a REPORT's counters: the enum's order is
			 * no part of the protocol */
			key(e, "retries");
			map(e, n_retried);
			for (size_t k = 0; k < CL_GEN_ERR_CLASSES; k++)
				if (a->retries[k])
					u64(e, cl_ctr_name(CL_CTR_FIRST_ERROR + (int)k),
					    a->retries[k]);
		}
		wire_path_pop(&e->path, o2);
	}
	wire_path_pop(&e->path, old);
}

/* A duration that may be unknown (-1): absent then. */
static void opt_dur(struct enc *e, const char *name, int64_t v)
{
	if (v >= 0)
		nonneg(e, name, v);
}

static void enc_records(struct enc *e, const struct cl_msg_requests *m)
{
	key(e, "records");
	if (m->n_records > CL_WIRE_MAX_ITEMS)
		fail(e, CL_ETOOBIG, "records", "has too many entries (%zu, max %u)", m->n_records,
		     CL_WIRE_MAX_ITEMS);
	size_t old = wire_path_push(&e->path, "records");
	array(e, m->n_records);
	for (size_t i = 0; i < m->n_records && !e->rc; i++) {
		const struct cl_req_record *r = &m->records[i];
		size_t o2 = wire_path_index(&e->path, i);
		map(e, 10 + (r->ttft_us >= 0) + (r->ttfc_us >= 0) + (r->e2e_us >= 0) +
			   (r->last_token_us >= 0) + !!r->error[0]);
		u64(e, "stage", r->stage);
		str(e, "id", r->id, CL_WIRE_MAX_REQ_ID, WSTR_NAME);
		boolean(e, "in_window", r->in_window);
		i64(e, "start_us", r->start_us);
		opt_dur(e, "ttft_us", r->ttft_us);
		opt_dur(e, "ttfc_us", r->ttfc_us);
		opt_dur(e, "e2e_us", r->e2e_us);
		u64(e, "chunks", r->chunks);
		opt_dur(e, "last_token_us", r->last_token_us);
		u64(e, "http_status", r->http_status);
		u64(e, "prompt_tokens", r->prompt_tokens);
		u64(e, "output_tokens", r->output_tokens);
		u64(e, "reasoning_tokens", r->reasoning_tokens);
		str(e, "status", r->status, sizeof(r->status) - 1, WSTR_NAME);
		if (r->error[0])
			str(e, "error", r->error, CL_WIRE_MAX_REQ_ERR, WSTR_TEXT);
		wire_path_pop(&e->path, o2);
	}
	wire_path_pop(&e->path, old);
}

static bool cmd_has_args(enum cl_cmd c)
{
	return c == CL_CMD_PROBE || c == CL_CMD_WARMUP || c == CL_CMD_PREPARE ||
	       c == CL_CMD_START_AT || c == CL_CMD_STOP || c == CL_CMD_BODIES ||
	       c == CL_CMD_GENERATE || c == CL_CMD_LEASE;
}

/* Fields of each type after the 5 envelope fields; returns how many. */
static size_t body_fields(const struct cl_msg *m)
{
	switch (m->type) {
	case CL_MSG_HELLO:
		return 7;
	case CL_MSG_POLL:
		return 7 + !!m->poll.error + 2 * (m->poll.clock_rtt_us > 0);
	case CL_MSG_REPORT:
		return 5 + !!m->report.metrics + !!m->report.readiness + !!m->report.error +
		       !!m->report.start_skew_us + !!m->report.stalls.n +
		       !!m->report.stalls.dropped + !!m->report.sources;
	case CL_MSG_WELCOME:
		return 4;
	case CL_MSG_REFUSE:
		return 1;
	case CL_MSG_CMD:
		return 4 + cmd_has_args(m->cmd.cmd);
	case CL_MSG_ANSWERS:
		return 2;
	case CL_MSG_REQUESTS:
		return 3;
	default:
		return 0;
	}
}

static void enc_body(struct enc *e, const struct cl_msg *m)
{
	switch (m->type) {
	case CL_MSG_HELLO: {
		const struct cl_msg_hello *h = &m->hello;
		str(e, "version", h->version, CL_WIRE_MAX_VERSION, WSTR_NAME);
		str(e, "host", h->host, CL_WIRE_MAX_HOST, WSTR_NAME);
		u64(e, "workers", h->workers);
		key(e, "caps");
		if (h->n_caps > CL_WIRE_MAX_CAPS)
			fail(e, CL_ETOOBIG, "caps", "has too many entries (%zu, max %d)", h->n_caps,
			     CL_WIRE_MAX_CAPS);
		if (h->n_caps && !h->caps)
			fail(e, CL_EINVAL, "caps", "is NULL with %zu entries", h->n_caps);
		array(e, h->n_caps);
		for (size_t i = 0; i < h->n_caps && !e->rc; i++) {
			char nm[32];
			snprintf(nm, sizeof(nm), "caps[%zu]", i);
			const char *c = h->caps[i] ? h->caps[i] : "";
			str_val(e, nm, c, strlen(c), CL_WIRE_MAX_CAP, WSTR_NAME);
		}
		str(e, "token", h->token, CL_WIRE_MAX_TOKEN, WSTR_TEXT);
		i64(e, "pid", h->pid);
		i64(e, "t_send_us", h->t_send_us);
		break;
	}
	case CL_MSG_POLL: {
		const struct cl_msg_poll *p = &m->poll;
		enum_val(e, "state", cl_agent_state_name((int)p->state), (int)p->state);
		u64(e, "applied_seq", p->applied_seq);
		dbl(e, "cpu_pct", p->cpu_pct);
		nonneg(e, "rss_bytes", p->rss_bytes);
		nonneg(e, "inflight", p->inflight);
		nonneg(e, "loop_lag_us", p->loop_lag_us);
		i64(e, "t_send_us", p->t_send_us);
		if (p->error)
			str(e, "error", p->error, CL_WIRE_MAX_ERROR, WSTR_TEXT);
		if (p->clock_rtt_us > 0) {
			i64(e, "clock_offset_us", p->clock_offset_us);
			nonneg(e, "clock_rtt_us", p->clock_rtt_us);
		}
		break;
	}
	case CL_MSG_REPORT: {
		const struct cl_msg_report *r = &m->report;
		enum_val(e, "kind", cl_report_kind_name((int)r->kind), (int)r->kind);
		if (r->kind == CL_REPORT_PROBE && !r->readiness)
			fail(e, CL_EINVAL, "readiness", "is required for a probe report");
		if (r->kind != CL_REPORT_PROBE && !r->metrics)
			fail(e, CL_EINVAL, "metrics", "is required for a %s report",
			     cl_report_kind_name((int)r->kind));
		u64(e, "stage", r->stage);
		u64(e, "interval", r->interval);
		nonneg(e, "span_us", r->span_us);
		if (e->stamp) {
			key(e, "t_send_us");
			/* 0xd3 and 8 bytes, whatever the value: cl_wire_restamp rewrites them */
			e->t_send_at = e->out->size + 1 - e->start;
			if (!e->rc)
				chk(e, msgpack_pack_fix_int64(&e->pk, r->t_send_us));
		} else {
			i64(e, "t_send_us", r->t_send_us);
		}
		if (r->error)
			str(e, "error", r->error, CL_WIRE_MAX_ERROR, WSTR_TEXT);
		if (r->start_skew_us)
			nonneg(e, "start_skew_us", r->start_skew_us);
		if (r->stalls.n)
			enc_stalls(e, &r->stalls);
		if (r->stalls.dropped)
			u64(e, "stalls_dropped", r->stalls.dropped);
		if (r->sources)
			enc_sources(e, r->sources);
		if (r->readiness)
			enc_readiness(e, "readiness", r->readiness);
		if (r->metrics)
			enc_metrics(e, r->metrics);
		break;
	}
	case CL_MSG_WELCOME:
		u64(e, "agent_id", m->welcome.agent_id);
		if (m->welcome.report_interval_us <= 0)
			fail(e, CL_EINVAL, "report_interval_us", "must be positive (%lld)",
			     (long long)m->welcome.report_interval_us);
		i64(e, "report_interval_us", m->welcome.report_interval_us);
		i64(e, "t_coord_us", m->welcome.t_coord_us);
		i64(e, "t_coord_recv_us", m->welcome.t_coord_recv_us);
		break;
	case CL_MSG_REFUSE:
		str(e, "reason", m->refuse.reason, CL_WIRE_MAX_REASON, WSTR_TEXT);
		break;
	case CL_MSG_CMD:
		enum_val(e, "cmd", cl_cmd_name((int)m->cmd.cmd), (int)m->cmd.cmd);
		u64(e, "cmd_seq", m->cmd.cmd_seq);
		i64(e, "t_coord_us", m->cmd.t_coord_us);
		i64(e, "t_coord_recv_us", m->cmd.t_coord_recv_us);
		if (cmd_has_args(m->cmd.cmd))
			enc_args(e, &m->cmd);
		break;
	case CL_MSG_ANSWERS:
		i64(e, "t_send_us", m->answers.t_send_us);
		enc_answers(e, &m->answers);
		break;
	case CL_MSG_REQUESTS:
		i64(e, "t_send_us", m->requests.t_send_us);
		u64(e, "dropped", m->requests.dropped);
		enc_records(e, &m->requests);
		break;
	default:
		break;
	}
}

static int encode(const struct cl_msg *m, msgpack_sbuffer *out, size_t *t_send_at,
		  struct cl_err *err)
{
	if (!m || !out)
		return cl_err_set(err, CL_EINVAL, "cannot encode: no message or no buffer");
	const char *tname = cl_msg_type_name((int)m->type);
	if (!tname)
		return cl_err_set(err, CL_EINVAL, "cannot encode message of unknown type %d",
				  (int)m->type);
	size_t start = out->size;
	struct enc e = {
		.err = err, .what = tname, .stamp = t_send_at != NULL, .out = out, .start = start
	};
	msgpack_packer_init(&e.pk, out, msgpack_sbuffer_write);

	map(&e, 5 + body_fields(m));
	u64(&e, "proto", CL_PROTO_VERSION);
	str(&e, "type", tname, 64, WSTR_NAME);
	str(&e, "run", m->run, CL_WIRE_MAX_RUN, WSTR_NAME);
	u64(&e, "agent", m->agent);
	u64(&e, "seq", m->seq);
	enc_body(&e, m);
	if (!e.rc) {
		/* The field counts above and the caps must agree with what was written; the
		 * pre-validator is cheap (one pass, no allocation) and proves it. */
		size_t n = out->size - start;
		struct cl_err cerr = { 0 };
		if (n > CL_WIRE_MAX_MSG)
			e.rc =
			    cl_err_set(err, CL_ETOOBIG,
				       "cannot encode %s: %zu bytes is larger than the %u allowed",
				       tname, n, CL_WIRE_MAX_MSG);
		else if (cl_wire_check(out->data + start, n, NULL, &cerr))
			e.rc = cl_err_set(err, cerr.code, "cannot encode %s: %s", tname, cerr.msg);
	}
	if (e.rc)
		out->size = start;
	else if (t_send_at)
		*t_send_at = e.t_send_at;
	return e.rc;
}

int cl_wire_encode(const struct cl_msg *m, msgpack_sbuffer *out, struct cl_err *err)
{
	return encode(m, out, NULL, err);
}

int cl_wire_encode_report(const struct cl_msg *m, msgpack_sbuffer *out, size_t *t_send_at,
			  struct cl_err *err)
{
	if (!m || m->type != CL_MSG_REPORT || !t_send_at)
		return cl_err_set(err, CL_EINVAL, "cannot encode: not a REPORT");
	return encode(m, out, t_send_at, err);
}

void cl_wire_restamp(void *msg, size_t t_send_at, int64_t t_send_us)
{
	unsigned char *p = (unsigned char *)msg + t_send_at;
	uint64_t v = (uint64_t)t_send_us;
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)(v & 0xff); /* msgpack is big-endian */
}

int cl_wire_pack_bodies(const struct cl_request_body *bodies, size_t n, msgpack_sbuffer *out,
			struct cl_err *err)
{
	size_t was = out->size;
	struct enc e = { .err = err, .what = "BODIES" };
	msgpack_packer_init(&e.pk, out, msgpack_sbuffer_write);
	size_t old = wire_path_push(&e.path, "bodies");
	enc_bodies_value(&e, bodies, n);
	wire_path_pop(&e.path, old);
	if (!e.rc && out->size - was > CL_WIRE_MAX_MSG)
		fail(&e, CL_ETOOBIG, "bodies", "take %zu bytes, more than a message may (%u)",
		     out->size - was, (unsigned)CL_WIRE_MAX_MSG);
	if (e.rc)
		out->size = was;
	return e.rc;
}
