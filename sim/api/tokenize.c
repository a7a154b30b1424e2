/* The reader of a POST /tokenize body (see tokenize.h). */
#include "tokenize.h"

#include "content.h"

#include "chatload/err.h"

#include <jansson.h>
#include <stdio.h>

int cl_sim_tokenize_parse(const char *body, size_t len, uint64_t *chars, uint64_t *words, char *msg,
			  size_t n)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, 0, &jerr);
	int rc = CL_EINVAL;
	*chars = *words = 0;
	if (!root) {
		snprintf(msg, n, "invalid JSON body: %s (line %d, column %d)", jerr.text, jerr.line,
			 jerr.column);
		return CL_EPARSE;
	}
	json_t *text = json_object_get(root, "prompt");
	if (!text)
		text = json_object_get(root, "content"); /* llama.cpp's name */
	json_t *messages = json_object_get(root, "messages");
	if (json_is_string(text)) {
		*chars = cli_sim_utf8_chars(json_string_value(text), json_string_length(text));
		*words = cl_sim_text_tokens(json_string_value(text), json_string_length(text));
		rc = 0;
	} else if (!text && json_is_array(messages)) {
		size_t i;
		json_t *m;
		rc = 0;
		json_array_foreach(messages, i, m)
		{
			if (!json_is_object(m) ||
			    cli_sim_content_chars(json_object_get(m, "content"), chars, words) !=
				0) {
				rc = CL_EINVAL;
				break;
			}
		}
	}
	if (rc)
		snprintf(msg, n,
			 "the body must be an object with 'prompt' (or 'content') text or "
			 "'messages'");
	json_decref(root);
	return rc;
}
