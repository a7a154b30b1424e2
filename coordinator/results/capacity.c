/* The capacity search's decisions, its knee and its plan (see results/capacity.h). */
#include "coordinator/results/capacity.h"

#include "coordinator/results/results.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void cl_capacity_init(struct cl_capacity *c, const struct cl_scn_search *q)
{
	memset(c, 0, sizeof(*c));
	c->over = q->over;
	c->from = q->from > 0 ? q->from : 1;
	c->max = q->max >= c->from ? q->max : c->from;
	c->tolerance = q->tolerance;
	c->relative = q->tolerance_relative;
	c->state = CL_CAP_RUNNING;
}

double cl_capacity_tolerance_abs(const struct cl_capacity *c)
{
	double t = c->relative ? c->tolerance * c->hi : c->tolerance;
	/* Streams come whole: a bracket one stream wide is as narrow as it gets. */
	if (c->over == CL_MODE_CONCURRENCY && t < 1)
		t = 1;
	return t;
}

static double round_sig(double x, int digits)
{
	if (x <= 0 || !isfinite(x))
		return x;
	double scale = pow(10, digits - 1 - (int)floor(log10(x)));
	return round(x * scale) / scale;
}

bool cl_capacity_next(struct cl_capacity *c, double *level)
{
	if (c->state != CL_CAP_RUNNING)
		return false;
	if (c->n >= CL_CAPACITY_MAX_PROBES) {
		c->state = CL_CAP_STOPPED;
		snprintf(c->stop_reason, sizeof(c->stop_reason), "more than %d probes",
			 CL_CAPACITY_MAX_PROBES);
		return false;
	}
	if (c->n == 0) {
		*level = c->from;
		return true;
	}
	if (c->hi == 0) {
		/* Still rising: every probe so far met the SLOs. */
		if (c->lo >= c->max) {
			c->state = CL_CAP_AT_MAX;
			return false;
		}
		double next = c->lo * 2;
		if (c->over == CL_MODE_CONCURRENCY)
			next = floor(next);
		*level = next < c->max ? next : c->max;
		return true;
	}
	/* Bisecting between lo (met, or 0) and hi (did not). */
	if (c->hi - c->lo <= cl_capacity_tolerance_abs(c)) {
		c->state = c->lo > 0 ? CL_CAP_FOUND : CL_CAP_BELOW_FROM;
		return false;
	}
	double mid = (c->lo + c->hi) / 2;
	if (c->over == CL_MODE_CONCURRENCY) {
		mid = floor(mid);
	} else {
		double r = round_sig(mid, 3);
		if (r > c->lo && r < c->hi)
			mid = r;
	}
	if (mid <= c->lo || mid >= c->hi) {
		c->state = c->lo > 0 ? CL_CAP_FOUND : CL_CAP_BELOW_FROM;
		return false;
	}
	*level = mid;
	return true;
}

void cl_capacity_record(struct cl_capacity *c, const struct cl_capacity_probe *p,
			const char *reason)
{
	if (c->state != CL_CAP_RUNNING)
		return;
	if (c->n >= CL_CAPACITY_MAX_PROBES) {
		c->state = CL_CAP_STOPPED;
		snprintf(c->stop_reason, sizeof(c->stop_reason), "more than %d probes",
			 CL_CAPACITY_MAX_PROBES);
		return;
	}
	c->probes[c->n++] = *p;
	if (!p->trusted) {
		c->state = CL_CAP_STOPPED;
		snprintf(c->stop_reason, sizeof(c->stop_reason), "%s",
			 reason ? reason : "a probe could not be trusted");
		return;
	}
	if (p->pass) {
		if (p->level > c->lo)
			c->lo = p->level;
	} else if (c->hi == 0 || p->level < c->hi) {
		c->hi = p->level;
	}
}

long cl_capacity_knee(const double *x, const double *y, size_t n)
{
	if (n < 3)
		return -1;
	double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i]))
			return -1;
		xmin = fmin(xmin, x[i]);
		xmax = fmax(xmax, x[i]);
		ymin = fmin(ymin, y[i]);
		ymax = fmax(ymax, y[i]);
	}
	/* A flat curve (every point within 10% of the top: all past the limit, or all below
	 * it) has no knee to find among its noise. */
	if (xmax <= xmin || ymax <= ymin || ymax - ymin < 0.1 * fabs(ymax))
		return -1;
	/* Furthest above the diagonal of the unit square; ties go to the lower level (where
	 * the flat part begins). */
	long best = -1;
	double best_d = 0;
	for (size_t i = 0; i < n; i++) {
		double d = (y[i] - ymin) / (ymax - ymin) - (x[i] - xmin) / (xmax - xmin);
		if (d > best_d + 1e-12 ||
		    (best >= 0 && fabs(d - best_d) <= 1e-12 && x[i] < x[best])) {
			best_d = d;
			best = (long)i;
		}
	}
	return best;
}

bool cl_capacity_plan(double want, double per_server, double streams_per_server,
		      double cpu_per_stream_pct, double agent_capacity_pct,
		      struct cl_capacity_plan *out)
{
	memset(out, 0, sizeof(*out));
	if (!(want > 0) || !(per_server > 0))
		return false;
	out->servers_exact = want / per_server;
	/* A hair of tolerance so that 500 / 50 is 10 servers, not 11. */
	out->servers = (uint64_t)ceil(out->servers_exact - 1e-9);
	out->streams = streams_per_server > 0 ? streams_per_server * out->servers_exact : NAN;
	out->agent_cpu_pct = isfinite(out->streams) && cpu_per_stream_pct > 0
				 ? out->streams * cpu_per_stream_pct
				 : NAN;
	/* Each agent kept below the share of its CPU at which a stage counts as client-bound. */
	double budget =
	    agent_capacity_pct > 0 ? CL_RESULTS_CLIENT_CPU_FRACTION * agent_capacity_pct : NAN;
	if (isfinite(out->agent_cpu_pct) && budget > 0) {
		double a = ceil(out->agent_cpu_pct / budget - 1e-9);
		out->agents = a < 1 ? 1 : (uint64_t)a;
	}
	return true;
}
