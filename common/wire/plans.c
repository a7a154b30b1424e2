/* The field tables of the plans a command carries (docs/protocol.md): the target, a stage,
 * the request bodies and the workload, and the readiness gate's result a REPORT carries.
 * Each field is written here once; table.c encodes, decodes and checks it. */
#include "chatload/wire.h"

#include "internal.h"

#include <string.h>

/* Enums are coded through 4-byte slots. */
_Static_assert(sizeof(enum cl_agent_state) == 4 && sizeof(enum cl_report_kind) == 4 &&
		   sizeof(enum cl_load_mode) == 4 && sizeof(enum cl_arrival) == 4 &&
		   sizeof(enum cl_api) == 4 && sizeof(enum cl_route) == 4,
	       "an enum the tables code is not 4 bytes");

/* ---- Enum spellings (the protocol's own, independent of how other modules print them) -- */

static const char *const mode_names[] = { "concurrency", "rate" };
static const char *const arrival_names[] = { "constant", "poisson", "gamma" };
static const char *const status_names[] = { "pending", "passed", "timed_out", "fatal",
					    "cancelled" };
static const char *const phase_names[CL_READY__PHASES] = { "connect", "models", "generation" };

static const char *spell(const char *const *names, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? names[v] : NULL;
}

static int unspell(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

#define SPELLING(name, arr)                                                                        \
	static const char *name##_name(int v)                                                      \
	{                                                                                          \
		return spell(arr, WIRE_N(arr), v);                                                 \
	}                                                                                          \
	static int name##_lookup(const char *s)                                                    \
	{                                                                                          \
		return unspell(arr, WIRE_N(arr), s);                                               \
	}
SPELLING(mode, mode_names)
SPELLING(arrival, arrival_names)
SPELLING(status, status_names)
SPELLING(phase, phase_names)

/* ---- Plans: target, stage, bodies, workload, readiness ---------------------------------- */

#define T struct cl_target_plan
static bool has_endpoints(const void *st)
{
	return ((const T *)st)->n_endpoints != 0;
}

/* Several endpoints are two or more, the first the base_url (the bounds of api and route are
 * their entries', the words the decoder's since the first version). */
#define ENDPOINTS_RULE "must hold 2..%d URLs, the first the base_url, and a known route"
static bool endpoints_bad(const T *t)
{
	if (!t->n_endpoints)
		return false;
	return t->n_endpoints < 2 || !t->endpoints || !t->endpoints[0] || !t->base_url ||
	       strcmp(t->endpoints[0], t->base_url) != 0;
}

static void target_check_enc(struct enc *e, const void *st)
{
	if (endpoints_bad(st))
		cli_wire_enc_fail(e, CL_EINVAL, "endpoints", ENDPOINTS_RULE, CL_ENDPOINTS_MAX);
}

static int target_check_dec(struct wire_dec *d, const struct wire_table *tab,
			    const msgpack_object *const *v, void *st)
{
	if (endpoints_bad(st))
		return cli_wire_bad(d, CL_EPROTO, "endpoints", ENDPOINTS_RULE, CL_ENDPOINTS_MAX);
	return 0;
}

static const struct wire_field target_fields[] = {
	FL(WF_STR, T, base_url, .req = true, .cap = CL_WIRE_MAX_URL, .text = WSTR_NAME),
	FL(WF_STR, T, model, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_NAME, .text = WSTR_NAME),
	FL(WF_STR, T, api_key_env, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_NAME,
	   .text = WSTR_NAME),
	FL(WF_STRS, T, headers, .req = true, .n_off = offsetof(T, n_headers),
	   .max_n = CL_WIRE_MAX_HEADERS, .cap = CL_WIRE_MAX_HEADER, .text = WSTR_HEADER),
	FL(WF_BOOL, T, http2, .req = true),
	FL(WF_BOOL, T, tls_verify, .req = true),
	FL(WF_STR, T, ca_file, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_PATH, .text = WSTR_NAME),
	FL(WF_I64, T, connect_timeout_us, .req = true, .min = 0),
	/* Optional, sent only when set, so an older agent still reads a plan that needs none. */
	FL(WF_BOOL, T, http2_fallback, .send = SEND_NONZERO),
	FL(WF_U32, T, http2_streams, .send = SEND_NONZERO, .max = CL_HTTP2_MAX_STREAMS),
	FL(WF_U32, T, api, .send = SEND_NONZERO, .max = CL_API__COUNT - 1),
	/* several endpoints (target.urls): sent only with two or more */
	FL(WF_STRS, T, endpoints, .send = SEND_IF, .send_if = has_endpoints,
	   .n_off = offsetof(T, n_endpoints), .max_n = CL_ENDPOINTS_MAX, .cap = CL_WIRE_MAX_URL,
	   .text = WSTR_NAME),
	FL(WF_U32, T, route, .send = SEND_IF, .send_if = has_endpoints, .max = CL_ROUTE__COUNT - 1),
};
const struct wire_table cli_wire_target_table =
    WIRE_TABLE(target_fields, target_check_enc, target_check_dec);
#undef T

#define T struct cl_stage_plan
static const struct wire_field stage_fields[] = {
	FL(WF_U32, T, index, .req = true),
	FL(WF_STR, T, name, .send = SEND_NONZERO, .cap = CL_WIRE_MAX_NAME, .text = WSTR_NAME),
	FL(WF_ENUM, T, mode, .req = true, .names = mode_name, .lookup = mode_lookup),
	FL(WF_U32, T, concurrency, .req = true, .max = CL_PLAN_CONCURRENCY_MAX),
	FL(WF_DBL, T, rate_per_s, .req = true),
	FL(WF_ENUM, T, arrival, .req = true, .names = arrival_name, .lookup = arrival_lookup),
	FL(WF_DBL, T, gamma_shape, .req = true),
	FL(WF_I64, T, duration_us, .req = true, .min = 0),
	FL(WF_U64, T, requests, .req = true),
	FL(WF_I64, T, ramp_us, .req = true, .min = 0),
	FL(WF_U32, T, ramp_from, .req = true),
	FL(WF_I64, T, drain_timeout_us, .req = true, .min = 0),
	FL(WF_U64, T, seed, .req = true),
};
const struct wire_table cli_wire_stage_table = WIRE_TABLE(stage_fields, NULL, NULL);
#undef T

#define T struct cl_request_body
static bool is_turn(const void *st)
{
	return ((const T *)st)->turn != 0;
}

/* json: len is authoritative, 0 with text means "use strlen". */
static void enc_json(struct enc *e, const struct wire_field *f, const void *st)
{
	const T *b = st;
	const char *json = b->json ? b->json : "";
	cli_wire_enc_str_val(e, f->name, json, b->len ? b->len : strlen(json), CL_WIRE_MAX_BODY,
			     WSTR_TEXT);
}

static int dec_json(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		    void *st)
{
	T *b = st;
	return cli_wire_get_str(d, f->name, v, true, CL_WIRE_MAX_BODY, WSTR_TEXT, &b->json,
				&b->len);
}

static void body_check_enc(struct enc *e, const void *st)
{
	const T *b = st;
	size_t len = b->len ? b->len : b->json ? strlen(b->json) : 0;
	if (!b->json && b->len)
		cli_wire_enc_fail(e, CL_EINVAL, "json", "is NULL with len %zu", b->len);
	if (b->turn && ((size_t)b->hist_at + b->user_len > len))
		cli_wire_enc_fail(e, CL_EINVAL, "hist_at", "%u + %u is past the body's %zu bytes",
				  b->hist_at, b->user_len, len);
}

static int body_check_dec(struct wire_dec *d, const struct wire_table *tab,
			  const msgpack_object *const *v, void *st)
{
	T *b = st;
	if ((size_t)b->hist_at + b->user_len > b->len)
		return cli_wire_bad(d, CL_EPROTO, "hist_at", "%u + %u is past the body's %zu bytes",
				    b->hist_at, b->user_len, b->len);
	return 0;
}

static const struct wire_field body_fields[] = {
	FL(WF_CUSTOM, T, json, .enc = enc_json, .dec = dec_json),
	FL(WF_U32, T, prompt_chars, .req = true),
	FL(WF_U32, T, max_tokens, .send = SEND_NONZERO),
	FL(WF_U32, T, turn, .send = SEND_NONZERO),
	FL(WF_U32, T, hist_at, .send = SEND_IF, .send_if = is_turn, .req_if = is_turn),
	FL(WF_U32, T, user_len, .send = SEND_IF, .send_if = is_turn, .req_if = is_turn),
	FL(WF_I64, T, at_us, .send = SEND_NONZERO, .min = 0),
	FL(WF_U32, T, inputs, .send = SEND_NONZERO),
	FL(WF_U32, T, cls, .send = SEND_NONZERO, .max = CL_CLASSES_MAX - 1),
};
const struct wire_table cli_wire_body_table =
    WIRE_TABLE(body_fields, body_check_enc, body_check_dec);
#undef T

#define T struct cl_class_plan
static const struct wire_field class_fields[] = {
	FL(WF_STR, T, name, .req = true, .cap = CL_WIRE_MAX_NAME, .text = WSTR_NAME),
	FL(WF_STRS, T, headers, .send = SEND_NONZERO, .n_off = offsetof(T, n_headers),
	   .max_n = CL_WIRE_MAX_HEADERS, .cap = CL_WIRE_MAX_HEADER, .text = WSTR_HEADER),
};
static const struct wire_table class_table = WIRE_TABLE(class_fields, NULL, NULL);
#undef T

#define T struct cl_workload_plan
/* A workload in parts says how many bodies the whole has. */
static bool in_parts(const void *st)
{
	const T *w = st;
	return w->total_bodies && w->total_bodies != w->n_bodies;
}
static bool has_tools(const void *st)
{
	return ((const T *)st)->tool_result_tokens != 0;
}

/* The rules of workload.cancel, the same both ways: the field at fault and why, or NULL. */
static const char *cancel_problem(const T *w, char *why, size_t cap)
{
	/* A share needs one point to cancel at: tokens, or a delay (a range: max above it). */
	if (w->cancel_ppm && !w->cancel_after_tokens == !w->cancel_after_us) {
		snprintf(why, cap,
			 "is %u with cancel_after_tokens %u and cancel_after_us %lld "
			 "(exactly one of the two)",
			 w->cancel_ppm, w->cancel_after_tokens, (long long)w->cancel_after_us);
		return "cancel_ppm";
	}
	if (w->cancel_after_max_us && w->cancel_after_max_us < w->cancel_after_us) {
		snprintf(why, cap, "is %lld, below cancel_after_us %lld",
			 (long long)w->cancel_after_max_us, (long long)w->cancel_after_us);
		return "cancel_after_max_us";
	}
	return NULL;
}

static void workload_check_enc(struct enc *e, const void *st)
{
	const T *w = st;
	bool parts = in_parts(w);
	/* total_bodies' bound is its entry's */
	if (parts && w->total_bodies < w->n_bodies)
		cli_wire_enc_fail(e, CL_EINVAL, "total_bodies", "is %zu, below the %zu bodies sent",
				  w->total_bodies, w->n_bodies);
	size_t total = parts ? w->total_bodies : w->n_bodies;
	if (w->first_body && w->first_body >= total)
		cli_wire_enc_fail(e, CL_EINVAL, "first_body", "is %zu, not below the %zu bodies",
				  w->first_body, total);
	if (w->share > total)
		cli_wire_enc_fail(e, CL_EINVAL, "share", "is %zu, above the %zu bodies", w->share,
				  total);
	char why[192];
	const char *at = cancel_problem(w, why, sizeof(why));
	if (at)
		cli_wire_enc_fail(e, CL_EINVAL, at, "%s", why);
}

static int workload_check_dec(struct wire_dec *d, const struct wire_table *tab,
			      const msgpack_object *const *v, void *st)
{
	T *w = st;
	/* Both or neither: the encoder sends tool_max_rounds exactly when tool_result_tokens
	 * (their bounds are their entries'). */
	bool tools = cli_wire_present(tab, v, "tool_result_tokens") != NULL;
	bool rounds = cli_wire_present(tab, v, "tool_max_rounds") != NULL;
	if (tools != rounds)
		return cli_wire_bad(
		    d, CL_EPROTO, "tool_result_tokens",
		    "is %u with tool_max_rounds %u (at most %u and %u, both or neither)",
		    w->tool_result_tokens, w->tool_max_rounds, CL_TOOL_MAX_RESULT_TOKENS,
		    CL_TOOL_MAX_ROUNDS);
	char why[192];
	const char *at = cancel_problem(w, why, sizeof(why));
	if (at)
		return cli_wire_bad(d, CL_EPROTO, at, "%s", why);
	if (cli_wire_present(tab, v, "total_bodies")) {
		if (w->total_bodies < w->n_bodies)
			return cli_wire_bad(d, CL_EPROTO, "total_bodies",
					    "is %llu, below the %zu bodies sent",
					    (unsigned long long)w->total_bodies, w->n_bodies);
	} else {
		w->total_bodies = w->n_bodies;
	}
	if (w->first_body && w->first_body >= w->total_bodies)
		return cli_wire_bad(d, CL_EPROTO, "first_body", "is %llu, not below the %zu bodies",
				    (unsigned long long)w->first_body, w->total_bodies);
	if (w->share > w->total_bodies)
		return cli_wire_bad(d, CL_EPROTO, "share", "is %llu, above the %zu bodies",
				    (unsigned long long)w->share, w->total_bodies);
	return 0;
}

static const struct wire_field workload_fields[] = {
	FL(WF_ARRAY, T, bodies, .req = true, .n_off = offsetof(T, n_bodies),
	   .max_n = CL_WIRE_MAX_BODIES, .elem = sizeof(struct cl_request_body),
	   .sub = &cli_wire_body_table),
	FL(WF_I64, T, request_timeout_us, .req = true, .min = 0),
	FL(WF_U32, T, max_tokens, .req = true),
	FL(WF_SIZE, T, total_bodies, .send = SEND_IF, .send_if = in_parts,
	   .max = CL_WIRE_MAX_TOTAL_BODIES),
	FL(WF_SIZE, T, first_body, .send = SEND_NONZERO, .max = CL_WIRE_MAX_TOTAL_BODIES),
	FL(WF_I64, T, think_time_us, .send = SEND_NONZERO, .min = 0),
	FL(WF_U32, T, trace_stride, .send = SEND_NONZERO),
	FL(WF_SIZE, T, share, .send = SEND_NONZERO, .max = CL_WIRE_MAX_TOTAL_BODIES),
	FL(WF_BOOL, T, per_stage, .send = SEND_NONZERO),
	FL(WF_FSTR, T, retag, .send = SEND_NONZERO, .text = WSTR_NAME),
	/* the agentic loop: both or neither */
	FL(WF_U32, T, tool_result_tokens, .send = SEND_NONZERO, .max = CL_TOOL_MAX_RESULT_TOKENS),
	FL(WF_U32, T, tool_max_rounds, .send = SEND_IF, .send_if = has_tools,
	   .max = CL_TOOL_MAX_ROUNDS),
	/* abandoned requests (workload.cancel): a share, then tokens or a delay */
	FL(WF_U32, T, cancel_ppm, .send = SEND_NONZERO, .max = CL_CANCEL_PPM_MAX),
	FL(WF_U32, T, cancel_after_tokens, .send = SEND_NONZERO),
	FL(WF_I64, T, cancel_after_us, .send = SEND_NONZERO, .min = 0),
	FL(WF_I64, T, cancel_after_max_us, .send = SEND_NONZERO, .min = 0),
	FL(WF_U64, T, cancel_seed, .send = SEND_NONZERO),
	/* request classes (workload.classes): sent only with some */
	FL(WF_ARRAY, T, classes, .send = SEND_NONZERO, .n_off = offsetof(T, n_classes),
	   .max_n = CL_CLASSES_MAX, .elem = sizeof(struct cl_class_plan), .sub = &class_table),
};
const struct wire_table cli_wire_workload_table =
    WIRE_TABLE(workload_fields, workload_check_enc, workload_check_dec);
#undef T

#define T struct cl_readiness_result
static void enc_phases(struct enc *e, const struct wire_field *f, const void *st)
{
	const T *r = st;
	cli_wire_enc_array(e, CL_READY__PHASES);
	for (int i = 0; i < CL_READY__PHASES && !e->rc; i++)
		cli_wire_enc_chk(e, msgpack_pack_int64(&e->pk, r->phase_passed_us[i]));
}

static int dec_phases(struct wire_dec *d, const struct wire_field *f, const msgpack_object *v,
		      void *st)
{
	T *r = st;
	if (!v)
		return cli_wire_missing(d, f->name);
	if (v->type != MSGPACK_OBJECT_ARRAY)
		return cli_wire_wrong(d, f->name, "an array", v);
	if (v->via.array.size != CL_READY__PHASES)
		return cli_wire_bad(d, CL_EPROTO, f->name, "must have %d entries, not %u",
				    CL_READY__PHASES, v->via.array.size);
	for (int i = 0; i < CL_READY__PHASES; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "%s[%d]", f->name, i);
		int rc = cli_wire_get_i64(d, nm, &v->via.array.ptr[i], true, INT64_MIN,
					  &r->phase_passed_us[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static const struct wire_field readiness_fields[] = {
	FL(WF_ENUM, T, status, .req = true, .names = status_name, .lookup = status_lookup),
	FL(WF_ENUM, T, phase, .req = true, .names = phase_name, .lookup = phase_lookup),
	FL(WF_CUSTOM, T, phase_passed_us, .enc = enc_phases, .dec = dec_phases),
	FL(WF_U32, T, attempts, .req = true),
	FL(WF_I64, T, probe_ttft_us, .req = true, .min = INT64_MIN),
	FL(WF_I64, T, probe_total_us, .req = true, .min = INT64_MIN),
	FL(WF_I64, T, elapsed_us, .req = true, .min = INT64_MIN),
	FL(WF_FSTR, T, model, .req = true, .text = WSTR_NAME),
	FL(WF_FSTR, T, last_error, .req = true, .text = WSTR_TEXT),
	FL(WF_I64, T, failing_since_us, .req = true, .min = INT64_MIN),
};
const struct wire_table cli_wire_readiness_table = WIRE_TABLE(readiness_fields, NULL, NULL);
#undef T
