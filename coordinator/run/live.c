/* The run's side of its live pages: the metrics (--metrics-listen) and the live report
 * (--web) on one HTTP listener, or two when they name different addresses; the phases, fleet
 * and running stage copied into the metrics as it goes, and the report re-rendered from the
 * results as they stand. */
#include "coordinator/report/report.h"
#include "coordinator/run/internal.h"

#include "chatload/assert.h"
#include "chatload/buf.h"
#include "chatload/clock.h"
#include "chatload/log.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *json_real_or_null(double v)
{
	return isfinite(v) ? json_real(round(v * 1e4) / 1e4) : json_null();
}

#define TICK_US     500000  /* a running stage's snapshot at most this often */
#define WEB_TICK_US 1000000 /* the live report re-rendered at most this often */

/*
 * The live report as last rendered by the run's thread, read by nng's.  Only bytes cross
 * between the threads: the run's thread builds the page from the results (jansson objects
 * it alone touches) into `next`, outside the lock, and swaps it with `page` under the lock;
 * nng's thread copies `page` under the lock.  Both buffers keep their memory from one render
 * to the next, so a refresh a second allocates nothing once they have grown to the page.
 */
struct cli_live_web {
	pthread_mutex_t mu;
	struct cl_buf page; /* under mu; empty until the first render */
	struct cl_buf next; /* the run's thread's alone */
	pthread_t owner;    /* the run's thread: the only one that renders */
};

static int serve_metrics(void *ctx, struct cl_buf *body, const char **content_type)
{
	*content_type = CL_LIVE_METRICS_CONTENT_TYPE;
	return cl_live_metrics_render(ctx, body);
}

static int serve_report(void *ctx, struct cl_buf *body, const char **content_type)
{
	struct cli_live_web *w = ctx;
	*content_type = "text/html; charset=utf-8";
	pthread_mutex_lock(&w->mu);
	int rc = w->page.len
		     ? cl_buf_append(body, w->page.data, w->page.len)
		     : cl_buf_puts(body, "<!DOCTYPE html>\n<html><body><p>chatload: the run is "
					 "starting; this page refreshes itself.</p><script>"
					 "setTimeout(function(){location.reload();},1000);"
					 "</script></body></html>\n");
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* What the server's /metrics said so far, into the live document: the run-wide account,
 * the latest scrape (`server_now`, the live page's line) and the running stage's figures and
 * timeline so far, so the page's Server table and charts grow as the stage goes. */
static void web_add_server(struct run *r, json_t *doc)
{
	if (!r->srv || !doc)
		return;
	const struct cl_scn_server_metrics *m = &r->s.target.server_metrics;
	json_object_set_new(doc, "server_metrics",
			    cl_srv_scrape_run_json(
				r->srv, m->mode == CL_SCN_SRV_URL ? "url" : "auto", r->srv_t0_us));
	struct cl_srv_latest l;
	cl_srv_scrape_latest(r->srv, &l);
	json_t *now =
	    json_pack("{s:b,s:o,s:o,s:o,s:o,s:o,s:i}", "up", l.up, "source",
		      l.have ? json_string(cl_srv_engine_name(l.engine)) : json_null(), "running",
		      json_real_or_null(l.running), "waiting", json_real_or_null(l.waiting),
		      "kv_cache_usage", json_real_or_null(l.kv_usage), "prefix_cache_hit_rate",
		      json_real_or_null(l.prefix_hit_rate), "restarts", (int)l.restarts);
	json_object_set_new(doc, "server_now", now);
	struct run_stage *st = r->st;
	if (!st || !st->srv_at_start.t_us)
		return;
	struct cl_srv_mark m_now;
	cl_srv_scrape_mark(r->srv, &m_now, 0); /* never waits: the latest scrape */
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		const char *status = json_string_value(json_object_get(s, "status"));
		if (json_integer_value(json_object_get(s, "index")) != (json_int_t)st->index ||
		    !status || strcmp(status, "running") != 0)
			continue;
		json_object_set_new(
		    s, "server",
		    cl_srv_scrape_stage_json(r->srv, &st->srv_at_start, &m_now, st->start_coord_us,
					     st->start_coord_us + st->scn->ramp_us,
					     cli_run_stage_window_end_us(r, st, m_now.t_us)));
	}
}

/* fopencookie's write: the page goes into a cl_buf that keeps its memory. */
static ssize_t page_write(void *cookie, const char *p, size_t n)
{
	return cl_buf_append(cookie, p, n) == 0 ? (ssize_t)n : -1;
}

/* Renders the results as they stand into the page (on the run's thread). */
static void web_render(struct run *r)
{
	struct cli_live_web *w = r->web;
	/* The live document shares its values with the results' (cl_results_live_doc): only
	 * the thread that changes the results may hold it. */
	CL_ASSERT(pthread_equal(pthread_self(), w->owner));
	json_t *doc = r->res ? cl_results_live_doc(r->res) : NULL;
	web_add_server(r, doc);
	cl_buf_reset(&w->next);
	FILE *f =
	    doc ? fopencookie(&w->next, "w", (cookie_io_functions_t){ .write = page_write }) : NULL;
	int rc = f ? cl_report_html_live(doc, f) : -1;
	if (f && fclose(f) != 0)
		rc = -1;
	/* The renderer reads the document and keeps nothing of it: dropping it now leaves the
	 * results' own values as they were, with no reference past this call. */
	CL_ASSERT(!doc || doc->refcount == 1);
	json_decref(doc);
	if (rc != 0 || w->next.len == 0)
		return; /* the page keeps its last state */
	pthread_mutex_lock(&w->mu);
	struct cl_buf t = w->page;
	w->page = w->next;
	w->next = t;
	pthread_mutex_unlock(&w->mu);
}

int cli_run_live_open(struct run *r, struct cl_err *err)
{
	const struct cl_run_opts *o = r->o;
	char url[160];
	int rc = 0;
	if (o->web_listen) {
		if (!(r->web = calloc(1, sizeof(*r->web))) ||
		    pthread_mutex_init(&r->web->mu, NULL) != 0) {
			free(r->web);
			r->web = NULL;
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		}
		/* A page is what the HTTP listener may hold in memory at once: no cap. */
		cl_buf_init(&r->web->page, 0);
		cl_buf_init(&r->web->next, 0);
		r->web->owner = pthread_self();
	}
	if (o->metrics_listen) {
		if (!(r->live = cl_live_metrics_new(r->s.name)))
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		const char *names[CL_SCN_MAX_CLASSES];
		size_t n_cls = r->s.workload.n_classes;
		for (size_t k = 0; k < n_cls && k < CL_SCN_MAX_CLASSES; k++)
			names[k] = r->s.workload.classes[k].name;
		if (cl_live_metrics_classes(r->live, names, n_cls) != 0)
			return cl_err_set(err, CL_ENOMEM, "out of memory");
		rc = cl_http_live_open(o->metrics_listen, "--metrics-listen",
				       "--metrics-allow-remote", o->metrics_allow_remote, &r->http,
				       err);
		if (rc == 0)
			rc = cl_http_live_add(r->http, "/metrics", serve_metrics, r->live, err);
		/* One port for both when both name the same address. */
		bool shared = o->web_listen && strcmp(o->web_listen, o->metrics_listen) == 0;
		if (rc == 0 && shared)
			rc = cl_http_live_add(r->http, "/", serve_report, r->web, err);
		if (rc == 0)
			rc = cl_http_live_start(r->http, url, sizeof(url), err);
		if (rc != 0)
			return rc;
		cl_progress_note(&r->prog, "metrics at %s/metrics", url);
		if (shared) {
			cl_progress_note(&r->prog, "live report at %s/", url);
			return 0;
		}
	}
	if (!o->web_listen)
		return 0;
	rc = cl_http_live_open(o->web_listen, "--web", "--web-allow-remote", o->web_allow_remote,
			       &r->http_web, err);
	if (rc == 0)
		rc = cl_http_live_add(r->http_web, "/", serve_report, r->web, err);
	if (rc == 0)
		rc = cl_http_live_start(r->http_web, url, sizeof(url), err);
	if (rc != 0)
		return rc;
	cl_progress_note(&r->prog, "live report at %s/", url);
	return 0;
}

void cli_run_live_phase(struct run *r, enum cl_live_phase p, int exit_code)
{
	cli_run_live_tick(r, true);
	if (r->live)
		cl_live_metrics_phase(r->live, p, exit_code);
}

void cli_run_live_tick(struct run *r, bool force)
{
	int64_t now = cl_mono_us();
	if (r->web && (force || now - r->web_tick_us >= WEB_TICK_US)) {
		r->web_tick_us = now;
		web_render(r);
	}
	if (!r->live)
		return;
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
	if (r->srv) {
		struct cl_srv_latest l;
		cl_srv_scrape_latest(r->srv, &l);
		struct cl_live_server ls = {
			.up = l.up,
			.source = l.have ? cl_srv_engine_name(l.engine) : "",
			.url = cl_srv_scrape_url(r->srv),
			.running = l.running,
			.waiting = l.waiting,
			.kv_usage = l.kv_usage,
			.prefix_hit_rate = l.prefix_hit_rate,
			.preemptions = l.preemptions,
			.restarts = l.restarts,
			.scrapes_ok = l.scrapes_ok,
			.scrapes_failed = l.scrapes_failed,
		};
		cl_live_metrics_server(r->live, &ls);
	}
	if (r->st)
		cl_live_metrics_stage_update(r->live, &r->st->cum);
	cl_live_metrics_breaches(r->live, cl_results_breach_count(r->res));
}

void cli_run_live_close(struct run *r)
{
	cl_http_live_close(r->http); /* first: no page renders after this */
	r->http = NULL;
	cl_http_live_close(r->http_web);
	r->http_web = NULL;
	if (r->web) {
		pthread_mutex_destroy(&r->web->mu);
		cl_buf_free(&r->web->page);
		cl_buf_free(&r->web->next);
		free(r->web);
		r->web = NULL;
	}
	cl_live_metrics_free(r->live);
	r->live = NULL;
}
