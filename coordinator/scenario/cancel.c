/* The scenario loader's workload.cancel: the share of requests the client abandons, and where
 * (after a number of tokens, after a delay, or after a delay drawn from a range). */
#include "coordinator/scenario/scenario.h"

#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC  1000000LL
#define DAY  (86400LL * SEC)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void conv_share(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_workload *w = obj;
	double x;
	if (cli_scn_get_percent(c, v, &x) != 0)
		return;
	if (x <= 0) {
		cli_scn_error(c, v, "%s must be above 0%% (leave workload.cancel out for none)",
			      cli_scn_path(c));
		return;
	}
	w->cancel_share = x;
}

/* One duration of after: positive, at most a day. */
static int get_delay(struct scn_ctx *c, const struct ynode *v, const char *text, int64_t *out)
{
	char got[96];
	struct cl_err err = { 0 };
	int64_t us;
	if (cl_parse_duration_us(text, &us, &err) != 0 || us < 1 || us > DAY) {
		cli_scn_error(c, v,
			      "%s must be a delay such as 2s, or uniform:MIN-MAX such as "
			      "uniform:0.5s-5s (each above 0, at most 24h), got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return -1;
	}
	*out = us;
	return 0;
}

/* after: 2s, or uniform:0.5s-5s (each request's delay drawn from the range). */
static void conv_after(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_workload *w = obj;
	if (!cli_scn_scalar(c, v, "a delay (e.g. 2s or uniform:0.5s-5s)"))
		return;
	if (strncmp(v->str, "uniform:", 8) != 0) {
		if (get_delay(c, v, v->str, &w->cancel_after_us) == 0)
			w->cancel_after_max_us = 0;
		return;
	}
	const char *lo = v->str + 8;
	const char *dash = strchr(lo, '-');
	char a[64], b[64];
	size_t la = dash ? (size_t)(dash - lo) : 0;
	if (!dash || la == 0 || la >= sizeof(a) || strlen(dash + 1) >= sizeof(b) || !dash[1]) {
		char got[96];
		cli_scn_error(c, v, "%s must be uniform:MIN-MAX such as uniform:0.5s-5s, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	memcpy(a, lo, la);
	a[la] = '\0';
	snprintf(b, sizeof(b), "%s", dash + 1);
	int64_t min_us, max_us;
	if (get_delay(c, v, a, &min_us) != 0 || get_delay(c, v, b, &max_us) != 0)
		return;
	if (max_us < min_us) {
		cli_scn_error(c, v, "%s: the range's end (%s) must not be below its start (%s)",
			      cli_scn_path(c), b, a);
		return;
	}
	w->cancel_after_us = min_us;
	w->cancel_after_max_us = max_us;
}

void cli_scn_conv_cancel(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		SCN_CUSTOM("share", conv_share),
		SCN_CUSTOM("after", conv_after),
		SCN_RANGE("after_tokens", SCN_F_U32, struct cl_scn_workload, cancel_after_tokens, 1,
			  10000000),
	};
	struct cl_scn_workload *w = obj;
	const struct ynode *seen[N(f)] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { share: 10%%, after: 2s } or "
			      "{ share: 10%%, after_tokens: 20 }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, f, N(f), w, seen, NULL);
	if (!seen[0])
		cli_scn_error(c, v, "%s needs share (e.g. { share: 10%%, after: 2s })",
			      cli_scn_path(c));
	else if (!seen[1] == !seen[2])
		cli_scn_error(c, seen[1] ? seen[2] : v,
			      "%s needs one point to cancel at: after (a delay, e.g. 2s or "
			      "uniform:0.5s-5s) or after_tokens (e.g. 20), %s",
			      cli_scn_path(c), seen[1] ? "not both" : "none was given");
}
