/* The wire decoder: hostile bytes -> pre-validated -> msgpack-c -> fields checked -> cl_msg. */
#include "chatload/wire.h"

#include "chatload/metrics_wire.h"

#include "metrics_int.h"
#include "wire_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
	struct wire_fld f[] = { FLD("kind"),      FLD("stage"),          FLD("interval"),
				FLD("span_us"),   FLD("metrics"),        FLD("readiness"),
				FLD("t_send_us"), FLD("error"),          FLD("start_skew_us"),
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
		if ((rc = cli_wire_dec_readiness(d, "readiness", F("readiness"), r->readiness)))
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
		return cli_wire_dec_target(d, "target", t, p->target);
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
		    !(rc = cli_wire_get_str(d, "id", g[0].v, true, CL_WIRE_MAX_ID, WSTR_NAME,
					    &it->id, NULL)))
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
	struct wire_fld f[] = { FLD("target"),
				FLD("concurrency"),
				FLD("max_attempts"),
				FLD("request_timeout_us"),
				FLD("backoff_initial_us"),
				FLD("backoff_max_us"),
				FLD("rate_per_s") };
	int rc;
	if ((rc = cli_wire_fields(d, args, f, WIRE_N(f))) ||
	    (rc = cli_wire_dec_target(d, "target", f[0].v, &g->target)) ||
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
		return cli_wire_bad(d, CL_EPROTO,
				    g->concurrency < 1 ? "concurrency" : "max_attempts",
				    "must be at least 1");
	return 0;
}

/* An answer's error class: the name of an error counter (cl_ctr_name). */
static int dec_err_class(struct wire_dec *d, const char *name, const msgpack_object *v,
			 int32_t *out)
{
	char q[64];
	int idx = cli_mpk_str_index(v, cl_ctr_name, CL_CTR__COUNT);
	if (idx < CL_CTR_FIRST_ERROR || idx > CL_CTR_LAST_ERROR)
		return cli_wire_bad(d, CL_EPROTO, name, "is not an error class (%s)",
				    cli_mpk_quote(v, q, sizeof(q)));
	*out = idx;
	return 0;
}

/* An answer's optional parts since the first version: ttfc_us, prompt_tokens, class and
 * retries (a map of error class to count, whose sum is attempts - 1). */
static int dec_answer_more(struct wire_dec *d, const struct wire_fld *g, size_t n,
			   struct cl_gen_answer *a)
{
	const msgpack_object *cls = cli_wire_fv(g, n, "class");
	const msgpack_object *rt = cli_wire_fv(g, n, "retries");
	int rc;
	if ((rc = cli_wire_get_i64(d, "ttfc_us", cli_wire_fv(g, n, "ttfc_us"), false, 0,
				   &a->ttfc_us)) ||
	    (rc = cli_wire_get_u32(d, "prompt_tokens", cli_wire_fv(g, n, "prompt_tokens"), false,
				   &a->prompt_tokens)) ||
	    (cls && (rc = dec_err_class(d, "class", cls, &a->err_class))) ||
	    (rc = cli_wire_need_map(d, "retries", rt, false)))
		return rc;
	uint64_t sum = 0;
	for (uint32_t k = 0; rt && k < rt->via.map.size; k++) {
		int32_t c = CL_CTR_FIRST_ERROR;
		uint32_t v = 0;
		if ((rc = dec_err_class(d, "retries", &rt->via.map.ptr[k].key, &c)) ||
		    (rc = cli_wire_get_u32(d, "retries", &rt->via.map.ptr[k].val, true, &v)))
			return rc;
		a->retries[c - CL_CTR_FIRST_ERROR] += v;
		sum += v;
	}
	if (sum >= a->attempts)
		return cli_wire_bad(d, CL_EPROTO, "retries",
				    "count %llu tries, more than attempts (%u) less the last",
				    (unsigned long long)sum, a->attempts);
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
		struct wire_fld g[] = { FLD("id"),        FLD("attempts"),   FLD("status"),
					FLD("ttft_us"),   FLD("total_us"),   FLD("output_tokens"),
					FLD("retryable"), FLD("request_id"), FLD("body"),
					FLD("error"),     FLD("ttfc_us"),    FLD("prompt_tokens"),
					FLD("class"),     FLD("retries") };
		struct cl_gen_answer *a = &m->answers[i];
		if (!(rc = cli_wire_fields(d, e, g, WIRE_N(g))) &&
		    !(rc = cli_wire_get_str(d, "id", g[0].v, true, CL_WIRE_MAX_ID, WSTR_NAME,
					    &a->id, NULL)) &&
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
					    &a->error, NULL))) {
			if (a->attempts < 1)
				rc = cli_wire_bad(d, CL_EPROTO, "attempts", "must be at least 1");
			else
				rc = dec_answer_more(d, g, WIRE_N(g), a);
		}
		wire_path_pop(&d->path, o2);
		if (rc)
			return rc;
	}
	return 0;
}

/* An optional duration: -1 when absent. */
static int get_opt_dur(struct wire_dec *d, const char *name, const msgpack_object *v, int64_t *out)
{
	*out = -1;
	return cli_wire_get_i64(d, name, v, false, 0, out);
}

static int dec_record(struct wire_dec *d, const msgpack_object *e, struct cl_req_record *r)
{
	struct wire_fld g[] = { FLD("stage"),
				FLD("id"),
				FLD("in_window"),
				FLD("start_us"),
				FLD("ttft_us"),
				FLD("ttfc_us"),
				FLD("e2e_us"),
				FLD("chunks"),
				FLD("last_token_us"),
				FLD("http_status"),
				FLD("prompt_tokens"),
				FLD("output_tokens"),
				FLD("reasoning_tokens"),
				FLD("status"),
				FLD("error") };
	int rc;
	if ((rc = cli_wire_fields(d, e, g, WIRE_N(g))) ||
	    (rc = cli_wire_get_u32(d, "stage", g[0].v, true, &r->stage)) ||
	    (rc = cli_wire_get_fixed_str(d, "id", g[1].v, r->id, sizeof(r->id), WSTR_NAME)) ||
	    (rc = cli_wire_get_bool(d, "in_window", g[2].v, true, &r->in_window)) ||
	    (rc = cli_wire_get_i64(d, "start_us", g[3].v, true, INT64_MIN, &r->start_us)) ||
	    (rc = get_opt_dur(d, "ttft_us", g[4].v, &r->ttft_us)) ||
	    (rc = get_opt_dur(d, "ttfc_us", g[5].v, &r->ttfc_us)) ||
	    (rc = get_opt_dur(d, "e2e_us", g[6].v, &r->e2e_us)) ||
	    (rc = cli_wire_get_u32(d, "chunks", g[7].v, true, &r->chunks)) ||
	    (rc = get_opt_dur(d, "last_token_us", g[8].v, &r->last_token_us)) ||
	    (rc = cli_wire_get_u32(d, "http_status", g[9].v, true, &r->http_status)) ||
	    (rc = cli_wire_get_u64(d, "prompt_tokens", g[10].v, true, UINT64_MAX,
				   &r->prompt_tokens)) ||
	    (rc = cli_wire_get_u64(d, "output_tokens", g[11].v, true, UINT64_MAX,
				   &r->output_tokens)) ||
	    (rc = cli_wire_get_u64(d, "reasoning_tokens", g[12].v, true, UINT64_MAX,
				   &r->reasoning_tokens)) ||
	    (rc = cli_wire_get_fixed_str(d, "status", g[13].v, r->status, sizeof(r->status),
					 WSTR_NAME)))
		return rc;
	if (g[14].v)
		return cli_wire_get_fixed_str(d, "error", g[14].v, r->error, sizeof(r->error),
					      WSTR_TEXT);
	return 0;
}

static int dec_requests(struct wire_dec *d, const msgpack_object *top, struct cl_msg_requests *m)
{
	struct wire_fld f[] = { FLD("t_send_us"), FLD("dropped"), FLD("records") };
	int rc;
	if ((rc = cli_wire_fields(d, top, f, 3)) ||
	    (rc = cli_wire_get_i64(d, "t_send_us", f[0].v, true, INT64_MIN, &m->t_send_us)) ||
	    (rc = cli_wire_get_u64(d, "dropped", f[1].v, true, UINT64_MAX, &m->dropped)) ||
	    (rc = dec_item_array(d, "records", f[2].v, sizeof(*m->records), (void **)&m->records,
				 &m->n_records)))
		return rc;
	for (size_t i = 0; i < m->n_records; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "records[%zu]", i);
		const msgpack_object *e = &f[2].v->via.array.ptr[i];
		if ((rc = cli_wire_need_map(d, nm, e, true)))
			return rc;
		size_t o2 = wire_path_push(&d->path, nm);
		rc = dec_record(d, e, &m->records[i]);
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
		    (rc = cli_wire_dec_stage(d, "stage", g[0].v, &c->warmup.stage)) ||
		    (rc = cli_wire_get_u32(d, "max_tokens", g[1].v, true, &c->warmup.max_tokens)) ||
		    (rc = cli_wire_get_i64(d, "request_timeout_us", g[2].v, false, 0,
					   &c->warmup.request_timeout_us)) ||
		    (rc = cli_wire_get_str(d, "body_json", g[3].v, false, CL_WIRE_MAX_BODY,
					   WSTR_TEXT, &c->warmup.body_json, NULL)))
			return rc;
		return 0;
	}
	case CL_CMD_PREPARE: {
		struct wire_fld g[] = { FLD("target"), FLD("workload"), FLD("requests") };
		if ((rc = cli_wire_fields(d, args, g, WIRE_N(g))) ||
		    (rc = cli_wire_dec_target(d, "target", g[0].v, &c->prepare.target)) ||
		    (rc = cli_wire_dec_workload(d, "workload", g[1].v, &c->prepare.workload)) ||
		    (rc = cli_wire_get_bool(d, "requests", g[2].v, false, &c->prepare.requests)))
			return rc;
		return 0;
	}
	case CL_CMD_START_AT:
		f[0].name = "stage";
		f[1].name = "start_at_coord_us";
		if ((rc = cli_wire_fields(d, args, f, 2)) ||
		    (rc = cli_wire_dec_stage(d, "stage", f[0].v, &c->start_at.stage)) ||
		    (rc = cli_wire_get_i64(d, "start_at_coord_us", f[1].v, true, INT64_MIN,
					   &c->start_at.start_at_coord_us)))
			return rc;
		return 0;
	case CL_CMD_STOP:
		f[0].name = "stage";
		f[1].name = "cut";
		if ((rc = cli_wire_fields(d, args, f, 2)) ||
		    (rc = cli_wire_get_u32(d, "stage", f[0].v, true, &c->stop.stage)) ||
		    (rc = cli_wire_get_bool(d, "cut", f[1].v, false, &c->stop.cut)))
			return rc;
		return 0;
	case CL_CMD_BODIES:
		f[0].name = "offset";
		f[1].name = "bodies";
		if ((rc = cli_wire_fields(d, args, f, 2)) ||
		    (rc = cli_wire_get_u64(d, "offset", f[0].v, true, CL_WIRE_MAX_TOTAL_BODIES,
					   &c->bodies.offset)) ||
		    (rc = cli_wire_dec_bodies(d, f[1].v, &c->bodies.bodies, &c->bodies.n_bodies)))
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
	case CL_MSG_REQUESTS:
		return dec_requests(d, top, &m->requests);
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
