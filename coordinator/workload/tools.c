/* workload.tools: the synthetic function definitions a workload offers (docs/scenario.md,
 * "Tool calls"), rendered once as the body keys "tools" and "tool_choice". */
#include "coordinator/workload/internal.h"

#include "chatload/rng.h"

#include <stdio.h>

/* Verbs and objects the names and descriptions are made of: the same seed always offers the
 * same tools, and a model reads them as plausible functions. */
static const char *const verbs[] = { "get",    "search", "list",    "create", "update",
				     "delete", "lookup", "convert", "check",  "send" };
static const char *const objects[] = { "weather", "orders", "invoice",  "calendar", "ticket",
				       "user",    "flight", "document", "price",    "inventory" };
#define N_VERBS   (sizeof(verbs) / sizeof(verbs[0]))
#define N_OBJECTS (sizeof(objects) / sizeof(objects[0]))

/* One function definition: name "<verb>_<object>_<k>" (unique by k), a description, and a
 * JSON-schema object with the string "q" every call fills (the simulator's arguments are
 * {"q": ...}) and one or two optional parameters more. */
static json_t *one_tool(uint32_t k, uint64_t *rng)
{
	const char *verb = verbs[cl_splitmix64(rng) % N_VERBS];
	const char *obj = objects[cl_splitmix64(rng) % N_OBJECTS];
	char name[64], desc[160];
	snprintf(name, sizeof(name), "%s_%s_%u", verb, obj, k);
	snprintf(desc, sizeof(desc), "%s the %s matching a query; returns a JSON object", verb,
		 obj);
	json_t *props =
	    json_pack("{s:{s:s,s:s}}", "q", "type", "string", "description", "what to look for");
	if (!props)
		return NULL;
	if (cl_splitmix64(rng) & 1) {
		json_t *limit =
		    json_pack("{s:s,s:i,s:i}", "type", "integer", "minimum", 1, "maximum", 100);
		if (!limit || json_object_set_new(props, "limit", limit) != 0) {
			json_decref(props);
			return NULL;
		}
	}
	if (cl_splitmix64(rng) & 1) {
		json_t *unit =
		    json_pack("{s:s,s:[s,s]}", "type", "string", "enum", "metric", "imperial");
		if (!unit || json_object_set_new(props, "unit", unit) != 0) {
			json_decref(props);
			return NULL;
		}
	}
	return json_pack("{s:s,s:{s:s,s:s,s:{s:s,s:o,s:[s]}}}", "type", "function", "function",
			 "name", name, "description", desc, "parameters", "type", "object",
			 "properties", props, "required", "q");
}

int cli_workload_tools(const struct cl_scn_workload *w, json_t **out, struct cl_err *err)
{
	static const char *const choices[] = { "auto", "none", "required" };
	*out = NULL;
	if (!w->tools_count)
		return 0;
	uint64_t rng = w->seed ^ 0x746f6f6c73ULL; /* the tools' own sequence of the seed */
	json_t *tools = json_array();
	json_t *patch = tools ? json_object() : NULL;
	for (uint32_t k = 0; patch && k < w->tools_count; k++) {
		json_t *t = one_tool(k, &rng);
		if (!t || json_array_append_new(tools, t) != 0)
			goto nomem;
	}
	if (!patch || json_object_set(patch, "tools", tools) != 0 ||
	    json_object_set_new(patch, "tool_choice",
				json_string(choices[(int)w->tools_choice % 3])) != 0)
		goto nomem;
	json_decref(tools);
	*out = patch;
	return 0;
nomem:
	json_decref(tools);
	json_decref(patch);
	return cl_err_set(err, CL_ENOMEM, "out of memory rendering workload.tools");
}

int cl_workload_tools_json(const struct cl_scn_workload *w, char **json_out, struct cl_err *err)
{
	json_t *patch;
	*json_out = NULL;
	int rc = cli_workload_tools(w, &patch, err);
	if (rc || !patch)
		return rc;
	*json_out = json_dumps(patch, CL_BODY_JSON_DUMP_FLAGS);
	json_decref(patch);
	return *json_out ? 0 : cl_err_set(err, CL_ENOMEM, "out of memory rendering workload.tools");
}
