/* The run's side of its live metrics (--metrics-listen): the HTTP listener opened for the
 * whole run, and the phases, fleet and running stage copied into the metrics as it goes. */
#include "run_internal.h"

#include "chatload/clock.h"
#include "chatload/log.h"

#include <stdio.h>

#define TICK_US 500000 /* a running stage's snapshot at most this often */

static int serve_metrics(void *ctx, struct cl_buf *body, const char **content_type)
{
	*content_type = CL_LIVE_METRICS_CONTENT_TYPE;
	return cl_live_metrics_render(ctx, body);
}

int cli_run_live_open(struct run *r, struct cl_err *err)
{
	if (!r->o->metrics_listen)
		return 0;
	if (!(r->live = cl_live_metrics_new(r->s.name)))
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	int rc = cl_http_live_open(r->o->metrics_listen, r->o->metrics_allow_remote, &r->http, err);
	if (rc == 0)
		rc = cl_http_live_add(r->http, "/metrics", serve_metrics, r->live, err);
	char url[160];
	if (rc == 0)
		rc = cl_http_live_start(r->http, url, sizeof(url), err);
	if (rc != 0)
		return rc;
	cl_progress_note(&r->prog, "metrics at %s/metrics", url);
	return 0;
}

void cli_run_live_phase(struct run *r, enum cl_live_phase p, int exit_code)
{
	if (!r->live)
		return;
	cli_run_live_tick(r, true);
	cl_live_metrics_phase(r->live, p, exit_code);
}

void cli_run_live_tick(struct run *r, bool force)
{
	if (!r->live)
		return;
	int64_t now = cl_mono_us();
	if (!force && now - r->live_tick_us < TICK_US)
		return;
	r->live_tick_us = now;
	struct cl_live_fleet f = { .joined_total = (uint32_t)r->fleet.n };
	for (size_t i = 0; i < r->fleet.n; i++) {
		const struct cl_fleet_agent *a = &r->fleet.agents[i];
		if (a->live == CL_LIVE_LOST) {
			f.lost++;
			continue;
		}
		if (a->gone)
			continue;
		if (a->live == CL_LIVE_OK)
			f.ok++;
		else
			f.missing++;
		f.streams += a->inflight;
		f.cpu_pct_sum += a->cpu_pct;
		f.rss_bytes_sum += a->rss_bytes;
	}
	cl_live_metrics_fleet(r->live, &f);
	if (r->st)
		cl_live_metrics_stage_update(r->live, &r->st->cum);
	cl_live_metrics_breaches(r->live, cl_results_breach_count(r->res));
}

void cli_run_live_close(struct run *r)
{
	cl_http_live_close(r->http); /* first: no page renders after this */
	r->http = NULL;
	cl_live_metrics_free(r->live);
	r->live = NULL;
}
