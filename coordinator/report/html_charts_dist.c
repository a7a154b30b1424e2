/* report.html's distributions: cumulative distributions of each stage's latencies and
 * tokens per request from the stored histograms, one line per stage (what was asked for
 * dashed beside what came back). */
#include "coordinator/results/results.h"
#include "coordinator/report/internal.h"
#include "coordinator/results/json_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIST CLI_RP_PALETTE_N /* stages drawn in one distribution chart, a colour each */

/* One chart of cumulative distributions, one line per stage, from the stored histograms
 * `group.key` (values divided by `div`); requested_key adds each stage's requested
 * distribution dashed.  Nothing when no stage has the histogram. */
static void cdf_chart(const json_t *stages, const char *group, const char *key, double div,
		      const char *title, const char *xl, const char *requested_key, FILE *out)
{
	struct cli_rp_series se[2 * MAX_DIST];
	char names[2 * MAX_DIST][RP_CELL_MAX];
	double *buf[2 * MAX_DIST] = { 0 };
	size_t ns = 0, i;
	const json_t *s;
	json_array_foreach(stages, i, s)
	{
		for (int req = 0; req < (requested_key ? 2 : 1) && ns < 2 * MAX_DIST; req++) {
			const json_t *h =
			    cl_results_get(cl_results_get(json_object_get(s, "histograms"), group),
					   req ? requested_key : key);
			const json_t *b = json_object_get(h, "buckets");
			double total = cl_results_num(h, "total");
			size_t nb = json_array_size(b);
			if (nb == 0 || !(total > 0) || i >= MAX_DIST)
				continue;
			double *xy = calloc(2 * (nb + 1), sizeof(*xy));
			if (!xy)
				continue;
			buf[ns] = xy;
			double *x = xy, *y = xy + nb + 1, seen = 0;
			size_t k = 0;
			/* Start at the smallest value so the curve rises from 0%. */
			x[k] = cl_results_num(h, "min") / div;
			y[k++] = 0;
			for (size_t j = 0; j < nb; j++) {
				const json_t *bk = json_array_get(b, j);
				seen += json_number_value(json_array_get(bk, 1));
				x[k] = fmin(json_number_value(json_array_get(bk, 0)),
					    cl_results_num(h, "max")) /
				       div;
				y[k++] = 100 * seen / total;
				/* The tail past p99.9 would squash the rest against the axis. */
				if (seen >= 0.999 * total)
					break;
			}
			const char *mk = cli_rp_stage_mark(s);
			snprintf(names[ns], sizeof(names[0]), "%s%s%s%s%s", req ? "requested " : "",
				 cl_results_str(s, "name", "-"), mk ? " (" : "", mk ? mk : "",
				 mk ? ")" : "");
			se[ns] = cli_rp_series_of(names[ns], cli_rp_palette[i % MAX_DIST], x, y, k,
						  req || mk != NULL, NULL, NULL);
			ns++;
		}
	}
	if (ns > 0) {
		struct cli_rp_chart c = cli_rp_chart_of(title, xl, "requests at or below (%)", "",
							se, ns, 540, 300, false);
		c.y_percent = true;
		cli_rp_svg_chart(out, &c);
	}
	for (size_t k = 0; k < ns; k++)
		free(buf[k]);
}

void cli_rp_html_distributions(const json_t *doc, FILE *out)
{
	const json_t *stages = json_object_get(doc, "stages");
	if (json_array_size(stages) == 0)
		return;
	fputs("<section><h2>Distributions</h2>\n<p class=\"meta\">Cumulative: a point (x, y) "
	      "says y% of the stage's requests (of its chunks for ITL) took x or less; drawn "
	      "from the stored histograms up to p99.9. A steep line is a consistent server; "
	      "a long flat tail is the slow requests p99 summarises. Dashed: a marked stage "
	      "(or, for tokens, what was requested).</p><div class=\"charts\">\n",
	      out);
	static const struct {
		const char *key, *title, *xl;
	} lat[] = {
		{ "ttft", "Time to first token", "TTFT (ms)" },
		{ "ttfc", "Time to first content token", "TTFC (ms)" },
		{ "itl", "Inter-token latency", "ITL (ms)" },
		{ "tpot", "Time per output token", "TPOT (ms)" },
		{ "e2e", "End-to-end latency", "E2E (ms)" },
	};
	bool thinking = cli_rp_thinking(stages);
	bool emb = cli_rp_embeddings(stages); /* latency (e2e) and prompts only */
	for (size_t k = 0; k < sizeof(lat) / sizeof(lat[0]); k++)
		if ((k != 1 || thinking) && (!emb || k == 4))
			cdf_chart(stages, "lat", lat[k].key, 1000, lat[k].title, lat[k].xl, NULL,
				  out);
	if (!emb)
		cdf_chart(stages, "cnt", "output_tokens", 1, "Output tokens per request: received",
			  "tokens", "requested_tokens", out);
	cdf_chart(stages, "cnt", "prompt_tokens", 1, "Prompt tokens per request", "tokens", NULL,
		  out);
	fputs("</div></section>\n", out);
}
