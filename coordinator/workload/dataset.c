/* Dataset files: OpenAI and ShareGPT JSONL records or plain-text prompts, one per line,
 * the format detected from the first record when not given. */
#include "coordinator/workload/internal.h"

#include "chatload/rng.h"

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

/* Code points of UTF-8 text: the characters the token estimate counts. */
static uint32_t estimate(json_t *text)
{
	return json_is_string(text)
		   ? cl_workload_tokens_estimate(json_string_value(text), json_string_length(text))
		   : 0;
}

/* Tokens of an OpenAI content value (a string or an array of text parts). */
static uint32_t content_tokens(json_t *content)
{
	if (json_is_string(content))
		return estimate(content);
	uint64_t n = 0;
	size_t i;
	json_t *part;
	json_array_foreach(content, i, part) n += estimate(json_object_get(part, "text"));
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/*
 * Whether a record passes workload.dataset_filter: in_tokens is its prompt's estimate,
 * out_tokens its own output length (0: none, which the output bounds do not judge).
 */
static bool keep(const struct cl_dataset_filter *f, uint32_t in_tokens, uint32_t out_tokens)
{
	if (in_tokens < f->min_input || (f->max_input && in_tokens > f->max_input))
		return false;
	if (out_tokens &&
	    (out_tokens < f->min_output || (f->max_output && out_tokens > f->max_output)))
		return false;
	return true;
}

/* The explicit length of an OpenAI record: max_completion_tokens, else max_tokens; 0 when it
 * gives neither; -1 (err filled) when one is not an integer in 1..10^7. */
static int64_t explicit_length(json_t *rec, const char *file, int line, struct cl_err *err)
{
	static const char *const keys[] = { "max_completion_tokens", "max_tokens" };
	for (size_t k = 0; k < 2; k++) {
		json_t *v = json_object_get(rec, keys[k]);
		if (!v || json_is_null(v))
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 10000000) {
			cl_err_setpos(err, CL_EPARSE, file, line, 1,
				      "'%s' must be an integer from 1 to 10000000", keys[k]);
			return -1;
		}
		return json_integer_value(v);
	}
	return 0;
}

/* ---- a record's own tools (workload.tools, docs/scenario.md "Tool calls") ------------- */

/*
 * Pushes messages (stolen) as cli_workload_push_body does; with workload.tools, a record that
 * has its own "tools" array (an OpenAI record from an agent's trace) offers those instead of
 * the synthetic ones.  The record's tools are not judged here: a server refuses bad ones.
 */
static int push_with_own_tools(struct render_ctx *c, const struct cl_scn_workload *w, json_t *rec,
			       json_t *messages, size_t chars, uint32_t own, struct cl_err *err)
{
	json_t *tools = json_object_get(rec, "tools");
	if (!w->tools_count || !json_is_array(tools) || json_array_size(tools) == 0)
		return cli_workload_push_body(c, messages, chars, own, err);
	json_t *shared = c->extra;
	json_t *mine = shared ? json_deep_copy(shared) : json_object();
	if (!mine || json_object_set(mine, "tools", tools) != 0) {
		json_decref(mine);
		json_decref(messages);
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
	}
	c->extra = mine;
	int rc = cli_workload_push_body(c, messages, chars, own, err);
	c->extra = shared;
	json_decref(mine);
	return rc;
}

/* An OpenAI record: {"messages": [{"role": ..., "content": ...}, ...]}. */
static int take_openai(struct render_ctx *c, const struct cl_scn_workload *w, json_t *rec,
		       const char *file, int line, bool *kept, struct cl_err *err)
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
	int64_t own = explicit_length(rec, file, line, err);
	if (own < 0)
		return CL_EPARSE;
	/* Without an explicit length, the first reference answer after the last user turn. */
	for (i = last_user + 1; own == 0 && i < json_array_size(msgs); i++) {
		m = json_array_get(msgs, i);
		json_t *role = json_object_get(m, "role");
		if (strcmp(json_string_value(role), "assistant") == 0)
			own = content_tokens(json_object_get(m, "content"));
	}
	uint64_t in_tokens = 0;
	for (i = 0; i <= last_user; i++)
		in_tokens += content_tokens(json_object_get(json_array_get(msgs, i), "content"));
	if (!has_system && c->system_prompt && *c->system_prompt)
		in_tokens +=
		    cl_workload_tokens_estimate(c->system_prompt, strlen(c->system_prompt));
	if (!keep(&w->dataset_filter, in_tokens > UINT32_MAX ? UINT32_MAX : (uint32_t)in_tokens,
		  (uint32_t)own)) {
		c->stats->filtered++;
		return 0;
	}
	*kept = true;
	if (w->dataset_output != CL_DATASET_OUTPUT_RECORD)
		own = 0;
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
		if (cl_body_json_add_message(out, "system", sys) != 0)
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
	return push_with_own_tools(c, w, rec, out, chars, (uint32_t)own, err);
nomem:
	json_decref(out);
	return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
}

/* Turn i of a ShareGPT conversation: its speaker and text, or CL_EPARSE (err filled) unless
 * it is {"from": string, "value": string}. */
static int sharegpt_turn(json_t *turn, size_t i, const char *file, int line, const char **from,
			 json_t **value, struct cl_err *err)
{
	json_t *f = json_object_get(turn, "from");
	*value = json_object_get(turn, "value");
	if (!json_is_object(turn) || !json_is_string(f) || !json_is_string(*value))
		return cl_err_setpos(err, CL_EPARSE, file, line, 0,
				     "conversations[%zu] must be an object with string 'from' and "
				     "'value'",
				     i);
	*from = json_string_value(f);
	return 0;
}

/* A ShareGPT record: {"conversations": [{"from": "human", "value": ...}, ...]}. */
static int take_sharegpt(struct render_ctx *c, const struct cl_scn_workload *w, json_t *rec,
			 const char *file, int line, bool *kept, struct cl_err *err)
{
	json_t *conv = json_object_get(rec, "conversations");
	if (!json_is_array(conv))
		return cl_err_setpos(
		    err, CL_EPARSE, file, line, 0,
		    "record has no 'conversations' array (ShareGPT format: "
		    "{\"conversations\": [{\"from\": \"human\", \"value\": ...}]})");
	const char *system = NULL, *human = NULL;
	size_t human_len = 0, i, human_at = 0;
	json_t *turn;
	json_t *top_system = json_object_get(rec, "system");
	if (json_is_string(top_system) && json_string_length(top_system))
		system = json_string_value(top_system);
	json_array_foreach(conv, i, turn)
	{
		const char *f;
		json_t *value;
		if (sharegpt_turn(turn, i, file, line, &f, &value, err) != 0)
			return CL_EPARSE;
		if (strcmp(f, "system") == 0 && !system) {
			system = json_string_value(value);
		} else if (strcmp(f, "human") == 0 || strcmp(f, "user") == 0) {
			human = json_string_value(value);
			human_len = json_string_length(value);
			human_at = i;
			break;
		}
	}
	if (!human)
		return cl_err_setpos(err, CL_EPARSE, file, line, 0,
				     "conversation has no turn from 'human'");
	if (memchr(human, '\0', human_len))
		return cl_err_setpos(err, CL_EPARSE, file, line, 0,
				     "human turn contains a NUL character");
	/* The answer: the next turn that is neither human nor system (gpt, assistant, ...). */
	uint32_t own = 0;
	for (i = human_at + 1; i < json_array_size(conv); i++) {
		const char *f;
		json_t *value;
		if (sharegpt_turn(json_array_get(conv, i), i, file, line, &f, &value, err) != 0)
			return CL_EPARSE;
		if (strcmp(f, "human") == 0 || strcmp(f, "user") == 0)
			break;
		if (strcmp(f, "system") != 0) {
			own = estimate(value);
			break;
		}
	}
	const char *sys = system ? system : c->system_prompt;
	uint64_t in_tokens = cl_workload_tokens_estimate(human, human_len);
	if (sys && *sys)
		in_tokens += cl_workload_tokens_estimate(sys, strlen(sys));
	if (!keep(&w->dataset_filter, in_tokens > UINT32_MAX ? UINT32_MAX : (uint32_t)in_tokens,
		  own)) {
		c->stats->filtered++;
		return 0;
	}
	*kept = true;
	if (w->dataset_output != CL_DATASET_OUTPUT_RECORD)
		own = 0;
	return cli_workload_push_prompt(c, sys, human, human_len, own, err);
}

/* A file that opens a JSON array: records are read a line at a time (JSONL), never a
 * whole document, so an array (ShareGPT is often shipped as one) is refused, saying how to
 * convert it. */
static int array_error(const char *file, int lineno, struct cl_err *err)
{
	return cl_err_setpos(err, CL_EPARSE, file, lineno, 0,
			     "dataset is a JSON array; write one JSON record per line "
			     "(JSONL, e.g. jq -c '.[]'), or set workload.dataset_format: "
			     "text for plain prompts");
}

/* Picks the format of a file from its first non-blank line. */
static int detect_format(const char *line, size_t len, const char *file, int lineno,
			 enum cl_dataset_format *fmt, struct cl_err *err)
{
	const char *p = skip_space(line);
	if (*p == '[')
		return array_error(file, lineno, err);
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

/* Shuffles the rendered bodies with the workload's seed (Fisher-Yates), then keeps the
 * first dataset_limit of them. */
static void shuffle_and_limit(struct render_ctx *c, const struct cl_scn_workload *w)
{
	uint64_t rng = w->seed ^ 0x73687566666c6500ULL;
	for (size_t i = c->n; i > 1; i--) {
		size_t j = (size_t)(cl_splitmix64(&rng) % i);
		struct cl_request_body t = c->bodies[i - 1];
		c->bodies[i - 1] = c->bodies[j];
		c->bodies[j] = t;
		uint8_t f = c->flags[i - 1];
		c->flags[i - 1] = c->flags[j];
		c->flags[j] = f;
	}
	if (w->dataset_limit && c->n > w->dataset_limit) {
		for (size_t i = w->dataset_limit; i < c->n; i++) {
			c->total_bytes -= c->bodies[i].len;
			free(c->bodies[i].json);
		}
		c->stats->limited = c->n - w->dataset_limit;
		c->n = w->dataset_limit;
	}
}

/* Opens the dataset, refusing a directory and a file over r->max_total (0: the size cap). */
static int open_dataset(struct line_reader *r, const char *file, struct cl_err *err)
{
	uint64_t cap = r->max_total ? r->max_total : CL_WORKLOAD_MAX_FILE_BYTES;
	r->f = fopen(file, "rb");
	if (!r->f)
		return cl_err_set(err, CL_EIO, "cannot open dataset '%s': %s", file,
				  strerror(errno));
	struct stat st;
	if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode))
		return cl_err_set(err, CL_EIO, "cannot read dataset '%s': Is a directory", file);
	if (fstat(fileno(r->f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > cap)
		return cl_err_set(err, CL_ETOOBIG,
				  "dataset '%s' is %lld MiB, more than the %u MiB cap", file,
				  (long long)(st.st_size >> 20), CL_WORKLOAD_MAX_FILE_BYTES >> 20);
	return 0;
}

/* The error of a failed cli_workload_lines_next (got < 0): the file or the line over its cap,
 * or the read itself (errno as the reader left it). */
static int read_error(const struct line_reader *r, int got, const char *file, struct cl_err *err)
{
	if (got == CL_ETOOBIG) {
		if (r->total > CL_WORKLOAD_MAX_FILE_BYTES)
			return cl_err_set(err, CL_ETOOBIG,
					  "dataset '%s' is larger than the %u MiB cap", file,
					  CL_WORKLOAD_MAX_FILE_BYTES >> 20);
		return cl_err_setpos(err, CL_ETOOBIG, file, r->lineno, 0,
				     "line is longer than %u MiB",
				     CL_WORKLOAD_MAX_LINE_BYTES >> 20);
	}
	return cl_err_setpos(err, got, file, r->lineno, 0, "cannot read dataset: %s",
			     got == CL_EIO ? strerror(errno) : cl_strerror(got));
}

/* A line of a text dataset: one prompt, sent with the workload's system prompt. */
static int take_text(struct render_ctx *c, const struct cl_scn_workload *w, const char *line,
		     size_t len, const char *file, int lineno, bool *kept, struct cl_err *err)
{
	if (memchr(line, '\0', len))
		return cl_err_setpos(err, CL_EPARSE, file, lineno, 0, "line contains a NUL byte");
	c->stats->records++;
	const char *sys = c->system_prompt;
	uint32_t in_tokens = cl_workload_tokens_estimate(line, len);
	if (sys && *sys)
		in_tokens += cl_workload_tokens_estimate(sys, strlen(sys));
	if (!keep(&w->dataset_filter, in_tokens, 0)) {
		c->stats->filtered++;
		return 0;
	}
	int rc = cli_workload_push_prompt(c, sys, line, len, 0, err);
	if (rc == CL_EINVAL)
		rc = cl_err_setpos(err, CL_EPARSE, file, lineno, 0, "line is not valid UTF-8");
	*kept = rc == 0;
	return rc;
}

/* A line of a JSONL dataset: one record in format fmt (OpenAI or ShareGPT). */
static int take_record(struct render_ctx *c, const struct cl_scn_workload *w,
		       enum cl_dataset_format fmt, const char *line, size_t len, const char *file,
		       int lineno, bool *kept, struct cl_err *err)
{
	json_error_t jerr;
	json_t *rec = json_loadb(line, len, 0, &jerr);
	if (!rec && *skip_space(line) == '[')
		return array_error(file, lineno, err); /* a pretty-printed array's "[" */
	if (!rec)
		return cl_err_setpos(err, CL_EPARSE, file, lineno, jerr.column, "invalid JSON: %s",
				     jerr.text);
	if (!json_is_object(rec)) {
		json_decref(rec);
		return cl_err_setpos(err, CL_EPARSE, file, lineno, 0,
				     "record is not a JSON object (%s format)", format_name(fmt));
	}
	c->stats->records++;
	int rc = fmt == CL_DATASET_OPENAI ? take_openai(c, w, rec, file, lineno, kept, err)
					  : take_sharegpt(c, w, rec, file, lineno, kept, err);
	json_decref(rec);
	return rc;
}

int cli_workload_read_dataset(struct render_ctx *c, const struct cl_scn_workload *w,
			      struct cl_err *err)
{
	const char *file = w->dataset;
	struct line_reader *r = NULL;
	enum cl_dataset_format fmt = w->dataset_format;
	size_t records = 0;
	int rc = 0;
	if (!file || !*file)
		return cl_err_set(err, CL_EINVAL, "workload.dataset names no file");
	r = calloc(1, sizeof(*r));
	if (!r)
		return cl_err_set(err, CL_ENOMEM, "out of memory reading dataset '%s'", file);
	cl_buf_init(&r->line, CL_WORKLOAD_MAX_LINE_BYTES);
	/* A generate job's records go to its sink one at a time: no body is held, so the
	 * file may be of any size (each line keeps its cap). */
	if (c->sink)
		r->max_total = UINT64_MAX;
	if ((rc = open_dataset(r, file, err)) != 0)
		goto out;
	for (;;) {
		/* With a shuffle every record is a candidate; without, the first N are it. */
		if (w->dataset_limit && records >= w->dataset_limit && !w->dataset_shuffle)
			break;
		int got = cli_workload_lines_next(r);
		if (got == 0)
			break;
		if (got < 0) {
			rc = read_error(r, got, file, err);
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
		bool kept = false;
		c->cur_line = (uint32_t)r->lineno;
		if (fmt == CL_DATASET_TEXT)
			rc = take_text(c, w, line, len, file, r->lineno, &kept, err);
		else
			rc = take_record(c, w, fmt, line, len, file, r->lineno, &kept, err);
		if (rc)
			goto out;
		records += kept;
	}
	if (records == 0)
		rc =
		    c->stats->filtered
			? cl_err_set(err, CL_EINVAL,
				     "dataset '%s': workload.dataset_filter leaves none of its %zu "
				     "records",
				     file, c->stats->records)
			: cl_err_set(err, CL_EINVAL, "dataset '%s' has no prompts", file);
	else if (w->dataset_shuffle)
		shuffle_and_limit(c, w);
out:
	/* A record-level problem is about the whole line: column 1. */
	if (rc && err && err->line > 0 && err->col == 0)
		err->col = 1;
	if (r) {
		if (r->f)
			fclose(r->f);
		cl_buf_free(&r->line);
		free(r);
	}
	return rc;
}
