/* libFuzzer target: one line of a generate job's OpenAI Batch input (coordinator/generate/).
 * A line accepted must give a custom_id and a body that is one JSON object carrying every
 * key of the line's body, with "stream": true and stream_options.include_usage true; a line
 * refused must say where (a line and a column). */
#include "coordinator/generate/batch.h"

#include <jansson.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	struct cl_gen_line l;
	struct cl_err err = { 0 };
	int rc = cl_gen_line_parse("in.jsonl", 7, line, size, &l, &err);
	if (rc == CL_EINVAL && (err.line != 7 || err.col < 1))
		abort();
	if (rc == 0) {
		json_t *sent = json_loads(l.body, 0, NULL);
		json_t *root = json_loadb(line, size, 0, NULL);
		json_t *orig = json_object_get(root, "body");
		json_t *so = json_object_get(sent, "stream_options");
		if (!json_is_object(sent) || !json_is_true(json_object_get(sent, "stream")) ||
		    !json_is_true(json_object_get(so, "include_usage")) || !l.id || !l.id[0])
			abort();
		const char *k;
		json_t *v;
		json_object_foreach(orig, k, v)
		{
			if (strcmp(k, "stream") != 0 && strcmp(k, "stream_options") != 0 &&
			    !json_equal(v, json_object_get(sent, k)))
				abort();
		}
		json_decref(root);
		json_decref(sent);
		cl_gen_line_free(&l);
	}
	free(line);
	return 0;
}
