/* The warning about requests that re-sent a body the run had sent already: a server's prompt
 * cache answers those from cache, and their TTFT reads better than a new user's would.  It
 * advises dropping order: per_stage only when the run set it, and speaks of latency, not
 * TTFT, for embeddings. */
#include "coordinator/results/internal.h"

#include <math.h>
#include <string.h>

int cli_rs_repeat_warning(json_t *w, const json_t *doc)
{
	double repeated = cl_results_num(doc, "warmup.repeated");
	if (!isfinite(repeated))
		repeated = 0;
	char where[320] = "";
	size_t used = 0;
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(doc, "stages"), i, s)
	{
		double n = cl_results_num(s, "requests.repeated");
		if (!isfinite(n) || n <= 0)
			continue;
		repeated += n;
		int k = snprintf(where + used, sizeof(where) - used, "%s'%s' %.0f",
				 used ? ", " : "", cl_results_str(s, "name", ""), n);
		if (k > 0 && (size_t)k < sizeof(where) - used)
			used += (size_t)k;
	}
	if (repeated <= 0)
		return 0;
	/* What a repeat costs, for what was sent: a generation's TTFT, an embedding's latency. */
	bool embeddings =
	    strcmp(cl_results_str(doc, "scenario.target.api", "chat"), "embeddings") == 0;
	bool per_stage = strcmp(cl_results_str(doc, "workload.order", "run"), "per_stage") == 0;
	return cli_rs_warn(
	    w,
	    "%.0f requests re-sent %s this run had already sent (%s%s%s): %s. Give the "
	    "workload more %ss than the run sends (a larger dataset, a larger synthetic.count "
	    "or none, which makes every request distinct)%s",
	    repeated, embeddings ? "an input" : "a prompt", used ? "stages " : "in the warmup",
	    where, cl_results_num(doc, "warmup.repeated") > 0 && used ? " and the warmup" : "",
	    embeddings ? "a server that caches inputs or their vectors may answer them from its "
			 "cache, so their latency reads better than a new input's"
		       : "a server's prompt cache (vLLM, SGLang, llama.cpp) may answer them "
			 "from cache, so their TTFT reads better than a new prompt's",
	    embeddings ? "input" : "prompt",
	    per_stage ? ", or drop workload.order: per_stage (every stage sends the same "
			"bodies again)"
		      : "");
}
