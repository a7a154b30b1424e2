/* Request-body rendering: inline prompts, dataset files and synthetic prompts become
 * pre-rendered chat-completions bodies (jansson; off the hot path). */
#include "chatload/workload.h"

#include "chatload/buf.h"
#include "chatload/rng.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * Reals are printed with 15 significant digits: every decimal a person writes in a scenario
 * ("temperature: 0.6") survives, where jansson's default of 17 would send 0.59999999999999998.
 */
#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

/* ---- JSON merging ------------------------------------------------------------------------ */

/*
 * Merges patch (an object, borrowed) into target (an object we own), RFC 7386 style.  With
 * keep_nulls a null is stored rather than applied, so the result can itself be merged later
 * (composing two patches); without it a null deletes the key.
 */
static int merge_into(json_t *target, json_t *patch, bool keep_nulls)
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
			int rc = merge_into(cur, val, keep_nulls);
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

/* Parses text as a JSON object; what names the argument in the error. */
static int parse_object(const char *text, const char *what, json_t **out, struct cl_err *err)
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
	if (base_json && (rc = parse_object(base_json, "base body", &base, err)) != 0)
		goto out;
	if (over_json && (rc = parse_object(over_json, "override body", &over, err)) != 0)
		goto out;
	if (!base && !(base = json_object())) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
		goto out;
	}
	if (over && merge_into(base, over, true) != 0) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
		goto out;
	}
	*json_out = json_dumps(base, DUMP_FLAGS);
	if (!*json_out)
		rc = cl_err_set(err, CL_ENOMEM, "out of memory merging request bodies");
out:
	json_decref(base);
	json_decref(over);
	return rc;
}

/* ---- one body ---------------------------------------------------------------------------- */

struct render_ctx {
	const char *model;
	uint32_t max_tokens;
	json_t *extra; /* the scenario's extra body (object) or NULL; borrowed */
	const char *system_prompt;
	struct cl_request_body *bodies;
	size_t n, cap;
	size_t total_bytes;
};

/* Adds a {"role", "content"} message to the array messages; always consumes content. */
static int add_message(json_t *messages, const char *role, json_t *content)
{
	json_t *m = json_object();
	if (!m || !content || json_object_set_new(m, "role", json_string(role)) != 0) {
		json_decref(m);
		json_decref(content);
		return CL_ENOMEM;
	}
	if (json_object_set_new(m, "content", content) != 0) {
		json_decref(m);
		return CL_ENOMEM;
	}
	return json_array_append_new(messages, m) != 0 ? CL_ENOMEM : 0;
}

/* Renders {"model", messages, ...} + extra into a new, compact, malloc'd string. */
static int dump_body(const char *model, json_t *messages /* stolen */, uint32_t max_tokens,
		     json_t *extra, char **json_out)
{
	int rc = CL_ENOMEM;
	json_t *body = json_object();
	json_t *opts = json_object();
	if (!body || !opts || json_object_set_new(body, "model", json_string(model)) != 0)
		goto out;
	int bad = json_object_set_new(body, "messages", messages); /* consumes messages */
	messages = NULL;
	if (bad)
		goto out;
	/* max_tokens 0 leaves the limit to the server. */
	if ((max_tokens &&
	     json_object_set_new(body, "max_tokens", json_integer(max_tokens)) != 0) ||
	    json_object_set_new(body, "stream", json_true()) != 0 ||
	    json_object_set_new(opts, "include_usage", json_true()) != 0 ||
	    json_object_set(body, "stream_options", opts) != 0)
		goto out;
	if (extra && merge_into(body, extra, false) != 0)
		goto out;
	/* The engine reads an SSE stream; a body that turned streaming off would be unreadable. */
	if (json_object_set_new(body, "stream", json_true()) != 0)
		goto out;
	*json_out = json_dumps(body, DUMP_FLAGS);
	if (*json_out)
		rc = 0;
out:
	json_decref(messages);
	json_decref(opts);
	json_decref(body);
	return rc;
}

/* Appends one rendered body for messages (stolen); prompt_chars counts its text. */
static int push_body(struct render_ctx *c, json_t *messages, size_t prompt_chars,
		     struct cl_err *err)
{
	char *json = NULL;
	if (c->n >= CL_WORKLOAD_MAX_BODIES) {
		json_decref(messages);
		return cl_err_set(err, CL_ETOOBIG, "workload has more than %u prompts",
				  CL_WORKLOAD_MAX_BODIES);
	}
	if (dump_body(c->model, messages, c->max_tokens, c->extra, &json) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
	size_t len = strlen(json);
	if (len > CL_WORKLOAD_MAX_TOTAL_BYTES - c->total_bytes) {
		free(json);
		return cl_err_set(err, CL_ETOOBIG, "rendered request bodies exceed %u MiB in total",
				  CL_WORKLOAD_MAX_TOTAL_BYTES >> 20);
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct cl_request_body *p = realloc(c->bodies, cap * sizeof(*p));
		if (!p) {
			free(json);
			return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
		}
		c->bodies = p;
		c->cap = cap;
	}
	c->bodies[c->n].json = json;
	c->bodies[c->n].len = len;
	c->bodies[c->n].prompt_chars =
	    prompt_chars > UINT32_MAX ? UINT32_MAX : (uint32_t)prompt_chars;
	c->n++;
	c->total_bytes += len;
	return 0;
}

/* Pushes [system?, user] for a plain prompt of len bytes (must be valid UTF-8). */
static int push_prompt(struct render_ctx *c, const char *system, const char *prompt, size_t len,
		       struct cl_err *err)
{
	json_t *messages = json_array();
	json_t *content = json_stringn(prompt, len);
	size_t chars = len;
	if (!content) {
		json_decref(messages);
		return cl_err_set(err, CL_EINVAL, "prompt is not valid UTF-8");
	}
	if (!messages)
		goto nomem;
	if (system && *system) {
		json_t *sys = json_string(system);
		if (!sys) {
			json_decref(content);
			json_decref(messages);
			return cl_err_set(err, CL_EINVAL, "system prompt is not valid UTF-8");
		}
		if (add_message(messages, "system", sys) != 0)
			goto nomem_content;
		chars += strlen(system);
	}
	if (add_message(messages, "user", content) != 0) {
		content = NULL;
		goto nomem;
	}
	return push_body(c, messages, chars, err);
nomem_content:
	json_decref(content);
nomem:
	json_decref(messages);
	return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
}

/* ---- dataset files ----------------------------------------------------------------------- */

/* Reads a file line by line with a cap on each line and on the whole file. */
struct line_reader {
	FILE *f;
	char chunk[65536];
	size_t pos, n;
	struct cl_buf line;
	uint64_t total;
	int lineno;
	bool eof;
};

/* Returns 1 with the next line (without "\n" or "\r\n") in r->line, 0 at EOF, or CL_EIO /
 * CL_ETOOBIG (line or file over its cap; r->lineno is the offending line). */
static int reader_next(struct line_reader *r)
{
	cl_buf_reset(&r->line);
	r->lineno++;
	bool any = false;
	for (;;) {
		if (r->pos == r->n) {
			if (r->eof)
				break;
			r->n = fread(r->chunk, 1, sizeof(r->chunk), r->f);
			r->pos = 0;
			if (r->n == 0) {
				if (ferror(r->f))
					return CL_EIO;
				r->eof = true;
				break;
			}
			r->total += r->n;
			if (r->total > CL_WORKLOAD_MAX_FILE_BYTES)
				return CL_ETOOBIG;
		}
		any = true;
		const char *start = r->chunk + r->pos;
		const char *nl = memchr(start, '\n', r->n - r->pos);
		size_t seg = nl ? (size_t)(nl - start) : r->n - r->pos;
		int rc = cl_buf_append(&r->line, start, seg);
		if (rc)
			return rc == CL_ETOOBIG ? CL_ETOOBIG : CL_ENOMEM;
		r->pos += seg + (nl ? 1 : 0);
		if (nl)
			break;
	}
	if (!any)
		return 0;
	if (!r->line.data && cl_buf_append(&r->line, "", 0) != 0)
		return CL_ENOMEM;
	if (r->line.len && r->line.data[r->line.len - 1] == '\r')
		r->line.data[--r->line.len] = '\0';
	return 1;
}

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
		if (add_message(out, "system", sys) != 0)
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
	return push_body(c, out, chars, err);
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
	return push_prompt(c, system ? system : c->system_prompt, human, human_len, err);
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

static int read_dataset(struct render_ctx *c, const struct cl_scn_workload *w, struct cl_err *err)
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
		int got = reader_next(r);
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
			rc = push_prompt(c, c->system_prompt, line, len, err);
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

/* ---- synthetic prompts ------------------------------------------------------------------- */

/* Common short English words: text that tokenises like prose, about one token a word. */
static const char *const vocabulary[] = {
	"the",     "of",      "and",      "to",         "in",       "is",      "that",
	"for",     "it",      "as",       "was",        "with",     "be",      "by",
	"on",      "not",     "he",       "this",       "are",      "or",      "his",
	"from",    "at",      "which",    "but",        "have",     "an",      "had",
	"they",    "you",     "were",     "their",      "one",      "all",     "we",
	"can",     "her",     "has",      "there",      "been",     "if",      "more",
	"when",    "will",    "would",    "who",        "so",       "no",      "time",
	"people",  "year",    "way",      "day",        "man",      "thing",   "woman",
	"life",    "child",   "world",    "school",     "state",    "family",  "student",
	"group",   "country", "problem",  "hand",       "part",     "place",   "case",
	"week",    "company", "system",   "program",    "question", "work",    "number",
	"night",   "point",   "home",     "water",      "room",     "mother",  "area",
	"money",   "story",   "fact",     "month",      "lot",      "right",   "study",
	"book",    "eye",     "job",      "word",       "business", "issue",   "side",
	"kind",    "head",    "house",    "service",    "friend",   "father",  "power",
	"hour",    "game",    "line",     "end",        "member",   "law",     "car",
	"city",    "name",    "team",     "minute",     "idea",     "kid",     "body",
	"back",    "parent",  "face",     "others",     "level",    "office",  "door",
	"health",  "person",  "art",      "war",        "history",  "party",   "result",
	"change",  "morning", "reason",   "research",   "girl",     "guy",     "moment",
	"air",     "teacher", "force",    "education",  "good",     "new",     "first",
	"last",    "long",    "great",    "little",     "own",      "other",   "old",
	"big",     "high",    "small",    "large",      "next",     "early",   "young",
	"few",     "public",  "bad",      "same",       "able",     "say",     "make",
	"go",      "know",    "take",     "see",        "come",     "think",   "look",
	"want",    "give",    "use",      "find",       "tell",     "ask",     "seem",
	"feel",    "try",     "leave",    "call",       "keep",     "begin",   "help",
	"talk",    "turn",    "start",    "show",       "hear",     "play",    "run",
	"move",    "like",    "live",     "believe",    "bring",    "write",   "provide",
	"sit",     "stand",   "lose",     "pay",        "meet",     "include", "continue",
	"set",     "learn",   "lead",     "understand", "watch",    "follow",  "stop",
	"create",  "speak",   "read",     "allow",      "add",      "spend",   "grow",
	"open",    "walk",    "win",      "offer",      "remember", "love",    "consider",
	"appear",  "buy",     "wait",     "serve",      "die",      "send",    "expect",
	"build",   "stay",    "fall",     "cut",        "reach",    "kill",    "remain",
	"suggest", "raise",   "pass",     "sell",       "require",  "report",  "decide",
	"pull",    "explain", "describe", "answer",
};
#define VOCAB_N (sizeof(vocabulary) / sizeof(vocabulary[0]))

static int synthesize(struct render_ctx *c, const struct cl_scn_workload *w, struct cl_err *err)
{
	const struct cl_len_dist *d = &w->synthetic_input;
	uint32_t lo = d->min ? d->min : 1;
	uint32_t hi = d->max ? d->max : CL_WORKLOAD_MAX_SYNTH_TOKENS;
	if (w->synthetic_count == 0)
		return cl_err_set(err, CL_EINVAL, "workload.synthetic.count must be positive");
	if (hi > CL_WORKLOAD_MAX_SYNTH_TOKENS)
		return cl_err_set(err, CL_ERANGE,
				  "workload.synthetic.input_tokens max %u is above the cap of %u",
				  hi, CL_WORKLOAD_MAX_SYNTH_TOKENS);
	if (lo > hi)
		return cl_err_set(err, CL_EINVAL,
				  "workload.synthetic.input_tokens min %u is above max %u", lo, hi);
	if (!isfinite(d->mean) || d->mean < 0 || !isfinite(d->stddev) || d->stddev < 0)
		return cl_err_set(err, CL_EINVAL,
				  "workload.synthetic.input_tokens mean and stddev must be "
				  "non-negative numbers");
	uint64_t rng = w->seed;
	struct cl_buf text;
	cl_buf_init(&text, (size_t)CL_WORKLOAD_MAX_SYNTH_TOKENS * 4 + 64);
	int rc = 0;
	for (uint32_t i = 0; i < w->synthetic_count; i++) {
		double x = d->mean + (d->stddev > 0 ? d->stddev * cl_splitmix_normal(&rng) : 0);
		x = round(x);
		uint32_t tokens = x < lo ? lo : x > hi ? hi : (uint32_t)x;
		size_t want = (size_t)tokens * 4;
		cl_buf_reset(&text);
		/* The leading number makes every prompt's first token distinct, so a prefix cache
		 * cannot serve one prompt's prefill from another's. */
		rc = cl_buf_printf(&text, "%u:", i + 1);
		while (!rc && text.len < want) {
			const char *word = vocabulary[cl_splitmix64(&rng) % VOCAB_N];
			rc = cl_buf_printf(&text, " %s", word);
		}
		if (rc) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory building synthetic prompts");
			break;
		}
		if (text.len > want && want > 0) {
			size_t head = strchr(text.data, ':') - text.data + 1;
			text.len = want > head ? want : head;
			/* A prompt that ends in a space reads as cut off to some tokenisers. */
			while (text.len > head && text.data[text.len - 1] == ' ')
				text.len--;
			text.data[text.len] = '\0';
		}
		if ((rc = push_prompt(c, c->system_prompt, text.data, text.len, err)) != 0)
			break;
	}
	cl_buf_free(&text);
	return rc;
}

/* ---- entry points ------------------------------------------------------------------------ */

static void free_bodies(struct cl_request_body *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i].json);
	free(b);
}

int cl_workload_render(const struct cl_scenario *s, const char *model, struct cl_workload_plan *out,
		       struct cl_err *err)
{
	struct render_ctx c = { 0 };
	int rc = 0;
	memset(out, 0, sizeof(*out));
	if (!s || !model || !*model)
		return cl_err_set(err, CL_EINVAL, "no model to render request bodies for");
	const struct cl_scn_workload *w = &s->workload;
	c.model = model;
	c.max_tokens = w->max_tokens;
	c.system_prompt = w->system_prompt;
	if (s->target.body_json &&
	    (rc = parse_object(s->target.body_json, "target.body", &c.extra, err)) != 0)
		return rc;
	switch (w->kind) {
	case CL_WORKLOAD_PROMPTS:
		if (w->n_prompts == 0) {
			rc = cl_err_set(err, CL_EINVAL, "workload.prompts is empty");
			break;
		}
		for (size_t i = 0; i < w->n_prompts && !rc; i++) {
			rc = push_prompt(&c, c.system_prompt, w->prompts[i], strlen(w->prompts[i]),
					 err);
			if (rc)
				cl_err_prefix(err, "workload.prompts[%zu]", i);
		}
		break;
	case CL_WORKLOAD_DATASET:
		rc = read_dataset(&c, w, err);
		break;
	case CL_WORKLOAD_SYNTHETIC:
		rc = synthesize(&c, w, err);
		break;
	default:
		rc = cl_err_set(err, CL_EINVAL, "unknown workload kind %d", (int)w->kind);
	}
	json_decref(c.extra);
	if (rc) {
		free_bodies(c.bodies, c.n);
		return rc;
	}
	out->bodies = c.bodies;
	out->n_bodies = c.n;
	out->max_tokens = w->max_tokens;
	out->request_timeout_us = w->request_timeout_us;
	return 0;
}

int cl_workload_render_probe(const char *model, const char *prompt, uint32_t max_tokens,
			     const char *extra_body_json, char **json_out, struct cl_err *err)
{
	json_t *extra = NULL;
	json_t *messages = NULL;
	int rc = 0;
	*json_out = NULL;
	if (!model || !*model || !prompt)
		return cl_err_set(err, CL_EINVAL, "probe body needs a model and a prompt");
	if (extra_body_json && (rc = parse_object(extra_body_json, "probe body", &extra, err)))
		return rc;
	json_t *content = json_string(prompt);
	if (!content) {
		rc = cl_err_set(err, CL_EINVAL, "probe prompt is not valid UTF-8");
		goto out;
	}
	messages = json_array();
	if (!messages || add_message(messages, "user", content) != 0) {
		if (!messages)
			json_decref(content);
		rc = cl_err_set(err, CL_ENOMEM, "out of memory rendering the probe body");
		goto out;
	}
	rc = dump_body(model, messages, max_tokens, extra, json_out);
	messages = NULL;
	if (rc)
		rc = cl_err_set(err, CL_ENOMEM, "out of memory rendering the probe body");
out:
	json_decref(messages);
	json_decref(extra);
	return rc;
}
