/* libFuzzer target: the results.json reader (chatload report / compare): a document that
 * passes cl_results_check must render in every format, compare with itself, and give back
 * every histogram it stores, without a crash or a leak; one that fails must say why. */
#include "report/compare.h"
#include "report/report.h"
#include "results/results.h"

#include "chatload/hist.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink;

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
