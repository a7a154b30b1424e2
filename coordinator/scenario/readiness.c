/* The scenario loader's readiness and warmup sections: the gate's probe (timeout, prompt,
 * consecutive successes, backoff, its body) and the requests sent before the first stage. */
#include "coordinator/scenario/scenario.h"

#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <string.h>

#define SEC  1000000LL
#define DAY  (86400LL * SEC)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void conv_backoff(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		SCN_RANGE("initial", SCN_F_DUR, struct cl_scn_readiness, backoff_initial_us, 1,
			  DAY),
		SCN_RANGE("max", SCN_F_DUR, struct cl_scn_readiness, backoff_max_us, 1, DAY),
	};
	const struct ynode *seen[N(f)] = { 0 };
	struct cl_scn_readiness *r = obj;
	cli_scn_fields(c, v, f, N(f), obj, seen, NULL);
	if (r->backoff_initial_us > r->backoff_max_us)
		cli_scn_error(c,
			      seen[1]   ? seen[1]
			      : seen[0] ? seen[0]
					: v,
			      "%s.initial must not be longer than %s.max", cli_scn_path(c),
			      cli_scn_path(c));
}

static void conv_readiness_body(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	cli_scn_get_body(c, v, &((struct cl_scn_readiness *)obj)->body_json);
}

static const struct scn_field readiness_fields[] = {
	SCN_FIELD("enabled", SCN_F_BOOL, struct cl_scn_readiness, enabled),
	SCN_RANGE("timeout", SCN_F_DUR, struct cl_scn_readiness, timeout_us, 1, 7 * DAY),
	SCN_FIELD("prompt", SCN_F_NESTR, struct cl_scn_readiness, prompt),
	SCN_RANGE("max_tokens", SCN_F_U32, struct cl_scn_readiness, max_tokens, 1, 1000000),
	SCN_RANGE("request_timeout", SCN_F_DUR, struct cl_scn_readiness, request_timeout_us, 1,
		  DAY),
	SCN_RANGE("consecutive", SCN_F_U32, struct cl_scn_readiness, consecutive, 1, 1000),
	SCN_CUSTOM("body", conv_readiness_body),
	SCN_CUSTOM("backoff", conv_backoff),
};

void cli_scn_conv_readiness(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_readiness *r = &L(c)->s->readiness;
	const struct ynode *seen[N(readiness_fields)] = { 0 };
	bool b;
	/* "readiness: false" switches the gate off */
	if (v && v->kind == YN_SCALAR && !cli_ynode_is_null(v) && cl_parse_bool(v->str, &b) == 0) {
		r->enabled = b;
		return;
	}
	cli_scn_fields(c, v, readiness_fields, N(readiness_fields), r, seen, cli_scn_hint_for);
}

static void conv_warmup_body(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	cli_scn_get_body(c, v, &((struct cl_scn_warmup *)obj)->body_json);
}

static const struct scn_field warmup_fields[] = {
	SCN_RANGE("requests", SCN_F_U32, struct cl_scn_warmup, requests, 0, 1000000),
	SCN_RANGE("duration", SCN_F_DUR, struct cl_scn_warmup, duration_us, 0, DAY),
	SCN_RANGE("concurrency", SCN_F_U32, struct cl_scn_warmup, concurrency, 1,
		  CL_PLAN_CONCURRENCY_MAX),
	SCN_RANGE("max_tokens", SCN_F_U32, struct cl_scn_warmup, max_tokens, 1, 10000000),
	SCN_RANGE("request_timeout", SCN_F_DUR, struct cl_scn_warmup, request_timeout_us, 1, DAY),
	SCN_CUSTOM("body", conv_warmup_body),
	SCN_FIELD("fail_on_error", SCN_F_BOOL, struct cl_scn_warmup, fail_on_error),
};

void cli_scn_conv_warmup(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	const struct ynode **seen = l->warmup;
	cli_scn_fields(c, v, warmup_fields, N(warmup_fields), &l->s->warmup, seen,
		       cli_scn_hint_for);
	l->given.warmup_max_tokens = seen[3] != NULL;
	l->given.warmup_request_timeout = seen[4] != NULL;
	if (seen[0] && seen[1])
		cli_scn_error(c, seen[1], "%s: set requests or duration, not both",
			      cli_scn_path(c));
}
