/* libFuzzer target: the results.json reader (chatload report / compare): a document that
 * passes cl_results_check must render in every format, compare with itself, and give back
 * every histogram it stores, without a crash or a leak; one that fails must say why.  Every
 * stored histogram configuration also goes to cl_hist_init as it stands. */
#include "coordinator/report/compare.h"
#include "coordinator/report/report.h"
#include "coordinator/results/results.h"

#include "chatload/err.h"
#include "chatload/hist.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink;

/* cl_hist_init on a stored configuration as it stands, whatever the reader decided: it
 * builds one that is possible (1 <= lowest, highest >= 2 lowest, 1-5 digits) or refuses,
 * and never overflows on the way (a lowest above INT64_MAX / 2: seeds/fuzz_results/). */
static void init_as_stored(const json_t *h)
{
	const json_t *lo = json_object_get(h, "lowest"), *hi = json_object_get(h, "highest"),
		     *sf = json_object_get(h, "sigfigs");
	if (!json_is_integer(lo) || !json_is_integer(hi) || !json_is_integer(sf) ||
	    json_integer_value(sf) < INT32_MIN || json_integer_value(sf) > INT32_MAX)
		return;
	struct cl_hist_cfg cfg = { .lowest = json_integer_value(lo),
				   .highest = json_integer_value(hi),
				   .sigfigs = (int32_t)json_integer_value(sf) };
	struct cl_hist hist;
	int rc = cl_hist_init(&hist, &cfg);
	bool possible = cfg.lowest >= 1 && cfg.highest / 2 >= cfg.lowest && cfg.sigfigs >= 1 &&
			cfg.sigfigs <= 5;
	if ((rc == 0 && !possible) || (rc != 0 && rc != CL_EINVAL && rc != CL_ENOMEM))
		abort();
	cl_hist_destroy(&hist);
}

/* Every histogram a stage stores ("histograms": {"lat": {...}, "cnt": {...}}). */
static void hists(const json_t *doc)
{
	size_t i;
	json_t *st;
	json_array_foreach(json_object_get(doc, "stages"), i, st)
	{
		static const char *const kinds[] = { "lat", "cnt" };
		for (int k = 0; k < 2; k++) {
			const char *name;
			json_t *h;
			json_t *group =
			    json_object_get(json_object_get(st, "histograms"), kinds[k]);
			json_object_foreach(group, name, h)
			{
				struct cl_hist hist = { 0 };
				struct cl_err err = { 0 };
				if (cl_results_hist_from_json(h, &hist, &err) != 0 && !err.msg[0])
					abort();
				cl_hist_destroy(&hist);
				init_as_stored(h);
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!sink && !(sink = fopen("/dev/null", "w")))
		abort();
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return 0;
	struct cl_err err = { 0 };
	if (cl_results_check(doc, &err) != 0) {
		if (!err.msg[0])
			abort();
		json_decref(doc);
		return 0;
	}
	for (int f = CL_REPORT_TABLE; f <= CL_REPORT_HTML; f++)
		cl_report_render(doc, (enum cl_report_format)f, sink);
	struct cl_compare_opts o = { CL_COMPARE_DEFAULT_MAX_REGRESSION,
				     CL_COMPARE_DEFAULT_MAX_ERROR_INCREASE };
	size_t regressions = 0;
	json_t *cmp = cl_compare_build(doc, doc, "a", "b", &o, &regressions);
	if (cmp) {
		cl_compare_render(cmp, CL_COMPARE_TABLE, sink);
		cl_compare_render(cmp, CL_COMPARE_MD, sink);
		json_decref(cmp);
	}
	hists(doc);
	json_decref(doc);
	return 0;
}
