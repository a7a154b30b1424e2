/* Dataset files: OpenAI and ShareGPT JSONL records or plain-text prompts, one per line,
 * the format detected from the first record when not given. */
#include "workload_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\f' && s[i] != '\v')
			return false;
	return true;
}

static const char *skip_space(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static const char *format_name(enum cl_dataset_format f)
{
	switch (f) {
	case CL_DATASET_OPENAI:
		return "openai";
	case CL_DATASET_SHAREGPT:
		return "sharegpt";
	case CL_DATASET_TEXT:
		return "text";
	default:
		return "auto";
	}
}

/* Byte length of the text in an OpenAI content value (a string or an array of parts). */
static size_t content_chars(json_t *content)
{
	if (json_is_string(content))
		return json_string_length(content);
	size_t n = 0, i;
	json_t *part;
	json_array_foreach(content, i, part)
	{
		json_t *text = json_object_get(part, "text");
		if (json_is_string(text))
			n += json_string_length(text);
	}
	return n;
}

/* An OpenAI record: {"messages": [{"role": ..., "content": ...}, ...]}. */
static int take_openai(struct render_ctx *c, json_t *rec, const char *file, int line,
		       struct cl_err *err)
{
	json_t *msgs = json_object_get(rec, "messages");
	if (!json_is_array(msgs) || json_array_size(msgs) == 0)
		return cl_err_setpos(err, CL_EPARSE, file, line, 0,
				     "record has no 'messages' array (OpenAI format: "
				     "{\"messages\": [{\"role\": \"user\", \"content\": ...}]})");
	size_t i, last_user = SIZE_MAX;
	bool has_system = false;
	json_t *m;
	json_array_foreach(msgs, i, m)
	{
		json_t *role = json_object_get(m, "role");
		if (!json_is_object(m) || !json_is_string(role))
			return cl_err_setpos(err, CL_EPARSE, file, line, 0,
					     "messages[%zu] must be an object with a string 'role'",
					     i);
		json_t *content = json_object_get(m, "content");
		const char *r = json_string_value(role);
		bool needs = strcmp(r, "user") == 0 || strcmp(r, "system") == 0;
		if (needs && !json_is_string(content) && !json_is_array(content))
			return cl_err_setpos(
			    err, CL_EPARSE, file, line, 0,
			    "messages[%zu] ('%s') needs a string or array 'content'", i, r);
		if (strcmp(r, "user") == 0)
			last_user = i;
		else if (strcmp(r, "system") == 0 || strcmp(r, "developer") == 0)
			has_system = true;
	}
	if (last_user == SIZE_MAX)
		return cl_err_setpos(err, CL_EPARSE, file, line, 0,
				     "record has no message with role 'user'");
	json_t *out = json_array();
	size_t chars = 0;
	if (!out)
		goto nomem;
	if (!has_system && c->system_prompt && *c->system_prompt) {
		json_t *sys = json_string(c->system_prompt);
		if (!sys) {
			json_decref(out);
			return cl_err_set(err, CL_EINVAL, "system prompt is not valid UTF-8");
		}
		if (cli_workload_add_message(out, "system", sys) != 0)
			goto nomem;
		chars += strlen(c->system_prompt);
	}
	/* Turns after the last user message are the record's reference answer: sending them
	 * would hand the model a pre-filled reply to continue instead of a question. */
	for (i = 0; i <= last_user; i++) {
		m = json_array_get(msgs, i);
		chars += content_chars(json_object_get(m, "content"));
		if (json_array_append(out, m) != 0)
			goto nomem;
	}
	return cli_workload_push_body(c, out, chars, err);
nomem:
	json_decref(out);
	return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
}

/* A ShareGPT record: {"conversations": [{"from": "human", "value": ...}, ...]}. */
static int take_sharegpt(struct render_ctx *c, json_t *rec, const char *file, int line,
			 struct cl_err *err)
{
	json_t *conv = json_object_get(rec, "conversations");
	if (!json_is_array(conv))
		return cl_err_setpos(
		    err, CL_EPARSE, file, line, 0,
		    "record has no 'conversations' array (ShareGPT format: "
		    "{\"conversations\": [{\"from\": \"human\", \"value\": ...}]})");
	const char *system = NULL, *human = NULL;
	size_t human_len = 0, i;
	json_t *turn;
	json_t *top_system = json_object_get(rec, "system");
	if (json_is_string(top_system) && json_string_length(top_system))
		system = json_string_value(top_system);
	json_array_foreach(conv, i, turn)
	{
		json_t *from = json_object_get(turn, "from");
		json_t *value = json_object_get(turn, "value");
		if (!json_is_object(turn) || !json_is_string(from) || !json_is_string(value))
			return cl_err_setpos(err, CL_EPARSE, file, line, 0,
					     "conversations[%zu] must be an object with string "
					     "'from' and 'value'",
					     i);
		const char *f = json_string_value(from);
		if (strcmp(f, "system") == 0 && !system) {
			system = json_string_value(value);
		} else if (strcmp(f, "human") == 0 || strcmp(f, "user") == 0) {
			human = json_string_value(value);
			human_len = json_string_length(value);
			break;
		}
	}
	if (!human)
		return cl_err_setpos(err, CL_EPARSE, file, line, 0,
				     "conversation has no turn from 'human'");
	if (memchr(human, '\0', human_len))
		return cl_err_setpos(err, CL_EPARSE, file, line, 0,
				     "human turn contains a NUL character");
	return cli_workload_push_prompt(c, system ? system : c->system_prompt, human, human_len,
					err);
}

/* Picks the format of a file from its first non-blank line. */
static int detect_format(const char *line, size_t len, const char *file, int lineno,
			 enum cl_dataset_format *fmt, struct cl_err *err)
{
	const char *p = skip_space(line);
	if (*p == '[')
		return cl_err_setpos(err, CL_EPARSE, file, lineno, 0,
				     "dataset is a JSON array; write one JSON record per line "
				     "(JSONL, e.g. jq -c '.[]'), or set workload.dataset_format: "
				     "text for plain prompts");
	if (*p != '{') {
		*fmt = CL_DATASET_TEXT;
		return 0;
	}
	json_error_t jerr;
	json_t *j = json_loadb(line, len, 0, &jerr);
	if (!j)
		return cl_err_setpos(err, CL_EPARSE, file, lineno, jerr.column,
				     "invalid JSON: %s (set workload.dataset_format: text if this "
				     "file holds plain prompts)",
				     jerr.text);
	if (json_object_get(j, "messages"))
		*fmt = CL_DATASET_OPENAI;
	else if (json_object_get(j, "conversations"))
		*fmt = CL_DATASET_SHAREGPT;
	else {
		json_decref(j);
		return cl_err_setpos(err, CL_EPARSE, file, lineno, 0,
				     "record has neither 'messages' (OpenAI) nor 'conversations' "
				     "(ShareGPT); set workload.dataset_format");
	}
	json_decref(j);
	return 0;
}

int cli_workload_read_dataset(struct render_ctx *c, const struct cl_scn_workload *w,
			      struct cl_err *err)
{
	const char *file = w->dataset;
	struct line_reader *r = NULL;
	enum cl_dataset_format fmt = w->dataset_format;
	int rc = 0;
	if (!file || !*file)
		return cl_err_set(err, CL_EINVAL, "workload.dataset names no file");
	r = calloc(1, sizeof(*r));
	if (!r)
		return cl_err_set(err, CL_ENOMEM, "out of memory reading dataset '%s'", file);
	cl_buf_init(&r->line, CL_WORKLOAD_MAX_LINE_BYTES);
	r->f = fopen(file, "rb");
	if (!r->f) {
		rc = cl_err_set(err, CL_EIO, "cannot open dataset '%s': %s", file, strerror(errno));
		goto out;
	}
	struct stat st;
	if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = cl_err_set(err, CL_EIO, "cannot read dataset '%s': Is a directory", file);
		goto out;
	}
	if (fstat(fileno(r->f), &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > CL_WORKLOAD_MAX_FILE_BYTES) {
		rc = cl_err_set(err, CL_ETOOBIG,
				"dataset '%s' is %lld MiB, more than the %u MiB cap", file,
				(long long)(st.st_size >> 20), CL_WORKLOAD_MAX_FILE_BYTES >> 20);
		goto out;
	}
	size_t records = 0;
	for (;;) {
		if (w->dataset_limit && records >= w->dataset_limit)
			break;
		int got = cli_workload_lines_next(r);
		if (got == 0)
			break;
		if (got == CL_ETOOBIG) {
			if (r->total > CL_WORKLOAD_MAX_FILE_BYTES)
				rc = cl_err_set(err, CL_ETOOBIG,
						"dataset '%s' is larger than the %u MiB cap", file,
						CL_WORKLOAD_MAX_FILE_BYTES >> 20);
			else
				rc = cl_err_setpos(err, CL_ETOOBIG, file, r->lineno, 0,
						   "line is longer than %u MiB",
						   CL_WORKLOAD_MAX_LINE_BYTES >> 20);
			goto out;
		}
		if (got < 0) {
			rc = cl_err_setpos(err, got, file, r->lineno, 0, "cannot read dataset: %s",
					   got == CL_EIO ? strerror(errno) : cl_strerror(got));
			goto out;
		}
		char *line = r->line.data;
		size_t len = r->line.len;
		/* A UTF-8 byte order mark (editors on Windows write one) is not part of the text.
		 */
		if (r->lineno == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
			line += 3, len -= 3;
		if (is_blank(line, len))
			continue;
		if (fmt == CL_DATASET_AUTO &&
		    (rc = detect_format(line, len, file, r->lineno, &fmt, err)) != 0)
			goto out;
		if (fmt == CL_DATASET_TEXT) {
			if (memchr(line, '\0', len)) {
				rc = cl_err_setpos(err, CL_EPARSE, file, r->lineno, 0,
						   "line contains a NUL byte");
				goto out;
			}
			rc = cli_workload_push_prompt(c, c->system_prompt, line, len, err);
			if (rc == CL_EINVAL)
				rc = cl_err_setpos(err, CL_EPARSE, file, r->lineno, 0,
						   "line is not valid UTF-8");
			if (rc)
				goto out;
			records++;
			continue;
		}
		json_error_t jerr;
		json_t *rec = json_loadb(line, len, 0, &jerr);
		if (!rec) {
			rc = cl_err_setpos(err, CL_EPARSE, file, r->lineno, jerr.column,
					   "invalid JSON: %s", jerr.text);
			goto out;
		}
		if (!json_is_object(rec)) {
			json_decref(rec);
			rc = cl_err_setpos(err, CL_EPARSE, file, r->lineno, 0,
					   "record is not a JSON object (%s format)",
					   format_name(fmt));
			goto out;
		}
		if (fmt == CL_DATASET_OPENAI)
			rc = take_openai(c, rec, file, r->lineno, err);
		else
			rc = take_sharegpt(c, rec, file, r->lineno, err);
		json_decref(rec);
		if (rc)
			goto out;
		records++;
	}
	if (records == 0)
		rc = cl_err_set(err, CL_EINVAL, "dataset '%s' has no prompts", file);
out:
	if (r) {
		if (r->f)
			fclose(r->f);
		cl_buf_free(&r->line);
		free(r);
	}
	return rc;
}
