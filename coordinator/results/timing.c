/* A stage's "timing" object: where its requests' time to the first byte went, from libcurl's
 * own timers (docs/results.md, "Where the time went"). */
#include "internal.h"

#include "chatload/metrics.h"

/* {count, mean, p50, p90, p99, max} in ms of h; the statistics null when it is empty. */
static json_t *part(const struct cl_hist *h)
{
	uint64_t n = cl_hist_count(h);
	if (n == 0)
		return json_pack("{s:i,s:n,s:n,s:n,s:n,s:n}", "count", 0, "mean", "p50", "p90",
				 "p99", "max");
	return json_pack("{s:o,s:f,s:f,s:f,s:f,s:f}", "count", cli_rj_uint(n), "mean",
			 cli_rj_round(cl_hist_mean(h) / 1000.0, 3), "p50",
			 cl_hist_percentile(h, 50) / 1000.0, "p90",
			 cl_hist_percentile(h, 90) / 1000.0, "p99",
			 cl_hist_percentile(h, 99) / 1000.0, "max", cl_hist_max(h) / 1000.0);
}

json_t *cli_rs_timing_json(const struct cl_metrics *m)
{
	/* Requests that got as far as sending, each recorded in all four stages (a reused
	 * connection with zeros), and the connections the stage's requests opened (its ramp's
	 * too: that is where most are opened). */
	const struct cl_hist *sent = &m->lat[CL_LAT_SEND];
	uint64_t n = cl_hist_count(sent);
	uint64_t opened = m->ctr[CL_CTR_CONNECTIONS_OPENED];
	/* The TTFT split: the three parts' means add up to the mean TTFT of the requests that
	 * have all three (percentiles do not add, so the means are the split). */
	const struct cl_hist *conn = &m->lat[CL_LAT_TTFT_CONNECTION],
			     *wait = &m->lat[CL_LAT_TTFT_SERVER_WAIT],
			     *after = &m->lat[CL_LAT_TTFT_AFTER_FIRST_BYTE];
	json_t *split;
	if (cl_hist_count(conn)) {
		double c = cl_hist_mean(conn) / 1000.0, w = cl_hist_mean(wait) / 1000.0,
		       a = cl_hist_mean(after) / 1000.0;
		split = json_pack("{s:o,s:f,s:f,s:f,s:f,s:o,s:o,s:o}", "requests",
				  cli_rj_uint(cl_hist_count(conn)), "connection_ms",
				  cli_rj_round(c, 3), "server_wait_ms", cli_rj_round(w, 3),
				  "after_first_byte_ms", cli_rj_round(a, 3), "ttft_ms",
				  cli_rj_round(c + w + a, 3), "connection", part(conn),
				  "server_wait", part(wait), "after_first_byte", part(after));
	} else {
		split = json_null();
	}
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "requests", cli_rj_uint(n),
			 "connections_opened", cli_rj_uint(opened), "dns_ms",
			 part(&m->lat[CL_LAT_DNS]), "connect_ms", part(&m->lat[CL_LAT_CONNECT]),
			 "tls_ms", part(&m->lat[CL_LAT_TLS]), "send_ms", part(sent), "ttft_split",
			 split);
}
