/* The document as it stands during a run, for the live report page (chatload run --web):
 * the finished stages, and the running stage's intervals so far. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"

json_t *cl_results_live_doc(const struct cl_results *r)
{
	/* Shallow copies: the page only reads the document, so this one shares every value
	 * with r->doc but has its own stages array, where the running stages go.  A deep copy
	 * at every refresh of the page copied every finished stage's kept intervals too. */
	json_t *doc = json_copy(r->doc);
	json_t *stages = json_copy(json_object_get(r->doc, "stages"));
	if (!doc || !json_is_array(stages)) {
		json_decref(stages);
		json_decref(doc);
		return NULL;
	}
	if (json_object_set_new(doc, "stages", stages) != 0) { /* it releases stages */
		json_decref(doc);
		return NULL;
	}
	for (size_t i = 0; i < r->n_stages; i++) {
		const struct stage_state *ss = &r->stages[i];
		if (ss->finished || ss->seen == 0 || !ss->intervals)
			continue;
		/* Only what is known mid-stage: the totals come when it finishes. */
		json_t *o = json_pack("{s:I,s:o,s:s,s:O,s:I,s:I}", "index", (json_int_t)i, "name",
				      cli_rj_str(ss->name), "status", "running", "intervals",
				      ss->intervals, "intervals_stride", (json_int_t)ss->stride,
				      "intervals_total", (json_int_t)ss->seen);
		if (cli_rs_insert_stage(stages, i, o) != 0) {
			json_decref(doc);
			return NULL;
		}
	}
	return doc;
}
