/* The knee explained (explain.h). */
#include "explain.h"

#include <math.h>
#include <stdio.h>

static double get(const json_t *stage, const char *a, const char *b, const char *c)
{
	const json_t *o = stage ? json_object_get(stage, a) : NULL;
	o = o && b ? json_object_get(o, b) : o;
	o = o && c ? json_object_get(o, c) : o;
	return json_is_number(o) ? json_number_value(o) : NAN;
}

/* The first signal that changed, in the order a planner would look: a queue forming (the
 * waiting gauge, or the queue-time histogram's exact mean when a short probe's few scrapes
 * missed the queue), the server preempting, the KV cache full.  Writes text, returns the
 * signal's name or NULL. */
static const char *signal_of(const json_t *lo, const json_t *hi, const char *level, char *text,
			     size_t n)
{
	double w0 = get(lo, "server", "requests_waiting", "max");
	double w1 = get(hi, "server", "requests_waiting", "max");
	double q0 = get(lo, "server", "queue_time_ms", "mean");
	double q1 = get(hi, "server", "queue_time_ms", "mean");
	double p0 = get(lo, "server", "preemptions", NULL);
	double p1 = get(hi, "server", "preemptions", NULL);
	double kv = get(hi, "server", "kv_cache_usage", "max");
	const char *sig = NULL;
	int o = 0;
	if (isfinite(w1) && w1 >= 1 && (!isfinite(w0) || w1 > w0 + 0.5)) {
		o = snprintf(text, n, "waiting requests rose from %.0f to %.0f at %s",
			     isfinite(w0) ? w0 : 0, w1, level);
		sig = "requests_waiting";
	} else if (isfinite(q1) && q1 >= 1 && (!isfinite(q0) || q1 > 2 * q0 + 1)) {
		o = snprintf(text, n,
			     "requests queued in the server at %s (queue time %.0f to %.0f ms)",
			     level, isfinite(q0) ? q0 : 0, q1);
		sig = "requests_waiting";
	} else if (isfinite(p1) && p1 > 0 && (!isfinite(p0) || p0 == 0)) {
		o = snprintf(text, n, "the server began preempting at %s (%.0f preemptions)", level,
			     p1);
		sig = "preemptions";
	} else if (isfinite(kv) && kv >= 0.9) {
		o = snprintf(text, n, "the KV cache was full at %s", level);
		sig = "kv_cache_usage";
	}
	if (sig && o >= 0 && (size_t)o < n && isfinite(kv) && kv >= 0.5) /* worth saying */
		snprintf(text + o, n - (size_t)o, "; KV cache %.0f %%", kv * 100);
	return sig;
}

json_t *cl_srv_explain(const json_t *below, const json_t *above, const char *above_level)
{
	const json_t *srv_hi = above ? json_object_get(above, "server") : NULL;
	if (!json_is_object(srv_hi) || json_is_null(json_object_get(srv_hi, "source")))
		return json_null();
	char text[256] = "";
	const char *sig = signal_of(below, above, above_level, text, sizeof(text));
	/* How much of the client's TTFT the server accounts for, where the load held: the
	 * rest is the network and the client.  Means, since they are exact on both sides. */
	double c = get(below, "latency_ms", "ttft", "mean");
	double s = get(below, "server", "ttft_ms", "mean");
	json_t *ttft = isfinite(c) && isfinite(s)
			   ? json_pack("{s:f,s:f,s:f}", "client_mean_ms", round(c * 100) / 100,
				       "server_mean_ms", round(s * 100) / 100,
				       "network_and_client_ms", round((c - s) * 100) / 100)
			   : json_null();
	return json_pack("{s:o,s:o,s:o}", "signal", sig ? json_string(sig) : json_null(), "text",
			 text[0] ? json_string(text) : json_null(), "ttft", ttft);
}
