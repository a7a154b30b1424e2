/* JSON object merging for request bodies (RFC 7386 style) and object parsing. */
#include "workload_int.h"

int cli_workload_merge_into(json_t *target, json_t *patch, bool keep_nulls)
{
	const char *key;
	json_t *val;
	json_object_foreach(patch, key, val)
	{
		if (json_is_null(val) && !keep_nulls) {
			json_object_del(target, key);
			continue;
		}
		json_t *cur = json_object_get(target, key);
		if (json_is_object(val) && (json_is_object(cur) || !keep_nulls)) {
			if (!json_is_object(cur)) {
				cur = json_object();
				if (!cur || json_object_set_new(target, key, cur) != 0)
					return CL_ENOMEM;
			}
			int rc = cli_workload_merge_into(cur, val, keep_nulls);
			if (rc)
				return rc;
			continue;
		}
		json_t *copy = json_deep_copy(val);
		if (!copy || json_object_set_new(target, key, copy) != 0)
			return CL_ENOMEM;
	}
	return 0;
}

int cli_workload_parse_object(const char *text, const char *what, json_t **out, struct cl_err *err)
{
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
	if (!j)
		return cl_err_set(err, CL_EINVAL, "%s is not valid JSON: %s (at column %d)", what,
				  jerr.text, jerr.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return cl_err_set(err, CL_EINVAL, "%s must be a JSON object", what);
	}
	*out = j;
	return 0;
}

int cl_workload_merge_json(const char *base_json, const char *over_json, char **json_out,
			   struct cl_err *err)
{
	json_t *base = NULL, *over = NULL;
	int rc = 0;
	*json_out = NULL;
	if (!base_json && !over_json)
		return 0;
	if (base_json && (rc = cli_workload_parse_object(base_json, "base body", &base, err)) != 0)
		goto out;
	if (over_json &&
	    (rc = cli_workload_parse_object(over_json, "override body", &over, err)) != 0)
		goto out;
	if (!base && !(base = json_object())) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
		goto out;
	}
	if (over && cli_workload_merge_into(base, over, true) != 0) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
		goto out;
	}
	*json_out = json_dumps(base, CLI_WORKLOAD_DUMP_FLAGS);
	if (!*json_out)
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
out:
	json_decref(base);
	json_decref(over);
	return rc;
}
