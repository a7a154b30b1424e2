/* The truth log of chatload-sim (see truth.h): buffered JSON lines, flushed by the server's
 * 100 ms timer and at exit. */
#include "truth.h"

#include "sim/wbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TRUTH_BUF_MAX  (4u << 20) /* buffered bytes before a synchronous flush */
#define TRUTH_LINE_MAX 2048

int cl_sim_truth_open(struct cl_sim_truth *t, const char *path, struct cl_err *err)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	cl_buf_init(&t->buf, TRUTH_BUF_MAX);
	if (!path)
		return 0;
	t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (t->fd < 0)
		return cl_err_set(err, CL_EIO, "cannot open truth log '%s': %s", path,
				  strerror(errno));
	t->enabled = true;
	return 0;
}

int cl_sim_truth_flush(struct cl_sim_truth *t)
{
	if (!t->enabled || t->buf.len == 0)
		return 0;
	size_t off = 0;
	while (off < t->buf.len) {
		ssize_t n = write(t->fd, t->buf.data + off, t->buf.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			cl_buf_reset(&t->buf);
			return CL_EIO;
		}
		off += (size_t)n;
	}
	cl_buf_reset(&t->buf);
	return 0;
}

/* One field of the line: its key (a literal with its comma and colon), then its value. */
static void put_time(struct cl_sim_w *w, const char *key, size_t key_len, int64_t us)
{
	cl_sim_w_put(w, key, key_len);
	if (us)
		cl_sim_w_i64(w, us);
	else
		CL_SIM_W_LIT(w, "null");
}

static void put_str_or_null(struct cl_sim_w *w, const char *s)
{
	if (s)
		cl_sim_w_json(w, s, strlen(s));
	else
		CL_SIM_W_LIT(w, "null");
}

static void put_str(struct cl_sim_w *w, const char *key, size_t key_len, const char *s)
{
	cl_sim_w_put(w, key, key_len);
	put_str_or_null(w, s);
}

static void put_u64(struct cl_sim_w *w, const char *key, size_t key_len, uint64_t v)
{
	cl_sim_w_put(w, key, key_len);
	cl_sim_w_u64(w, v);
}

static void put_i64(struct cl_sim_w *w, const char *key, size_t key_len, int64_t v)
{
	cl_sim_w_put(w, key, key_len);
	cl_sim_w_i64(w, v);
}

static void put_bool(struct cl_sim_w *w, const char *key, size_t key_len, bool v)
{
	cl_sim_w_put(w, key, key_len);
	if (v)
		CL_SIM_W_LIT(w, "true");
	else
		CL_SIM_W_LIT(w, "false");
}

/* A 64-bit hash as 16 hex digits in quotes, or null when it names nothing. */
static void put_hash(struct cl_sim_w *w, const char *key, size_t key_len, uint64_t h, bool present)
{
	char hex[24];
	cl_sim_w_put(w, key, key_len);
	if (!present) {
		CL_SIM_W_LIT(w, "null");
		return;
	}
	snprintf(hex, sizeof(hex), "\"%016llx\"", (unsigned long long)h);
	cl_sim_w_put(w, hex, strlen(hex));
}

#define TIME(w, key, v)    put_time((w), key, sizeof(key) - 1, (v))
#define STR(w, key, v)     put_str((w), key, sizeof(key) - 1, (v))
#define U64(w, key, v)     put_u64((w), key, sizeof(key) - 1, (v))
#define I64(w, key, v)     put_i64((w), key, sizeof(key) - 1, (v))
#define BOOL(w, key, v)    put_bool((w), key, sizeof(key) - 1, (v))
#define HASH(w, key, v, p) put_hash((w), key, sizeof(key) - 1, (v), (p))

/* Which request: its ids, headers, model, priority, API and what it sent. */
static void put_request(struct cl_sim_w *w, const struct cl_sim_truth_rec *r)
{
	STR(w, "{\"id\":", r->id);
	U64(w, ",\"seq\":", r->seq);
	STR(w, ",\"x_request_id\":", r->request_id);
	STR(w, ",\"conversation\":", r->conversation);
	STR(w, ",\"class\":", r->cls);
	STR(w, ",\"model\":", r->model);
	CL_SIM_W_LIT(w, ",\"priority\":");
	if (r->has_priority)
		cl_sim_w_i64(w, r->priority);
	else
		CL_SIM_W_LIT(w, "null");
	STR(w, ",\"api\":", r->api);
	U64(w, ",\"inputs\":", r->inputs);
	U64(w, ",\"documents\":", r->documents);
	U64(w, ",\"audio_ms\":", r->audio_ms);
	BOOL(w, ",\"stream\":", r->stream);
}

/* How it ended: its status, the fault it was given, whether it failed. */
static void put_outcome(struct cl_sim_w *w, const struct cl_sim_truth_rec *r)
{
	CL_SIM_W_LIT(w, ",\"status\":");
	if (r->outcome)
		cl_sim_w_json(w, r->outcome, strlen(r->outcome));
	else
		cl_sim_w_i64(w, r->http_status);
	I64(w, ",\"http_status\":", r->http_status);
	/* The client went away before the answer ended (the status says so too; a field
	 * of its own so a reader counts them without knowing every status). */
	BOOL(w, ",\"client_gone\":", r->outcome && strcmp(r->outcome, "client_gone") == 0);
	STR(w, ",\"fault\":", r->fault);
	BOOL(w, ",\"failed\":", r->failed);
}

/* When: its arrival, its wait for a slot, its first and last chunks as scheduled and as
 * sent, the worst lateness. */
static void put_timing(struct cl_sim_w *w, const struct cl_sim_truth_rec *r)
{
	TIME(w, ",\"arrival_us\":", r->arrival_us);
	I64(w, ",\"queued_us\":", r->queued_us);
	TIME(w, ",\"scheduled_first_us\":", r->sched_first_us);
	TIME(w, ",\"actual_first_us\":", r->act_first_us);
	TIME(w, ",\"scheduled_last_us\":", r->sched_last_us);
	TIME(w, ",\"actual_last_us\":", r->act_last_us);
	I64(w, ",\"max_late_us\":", r->max_late_us);
}

/* How much: the prompt's tokens, the output's as planned and as sent, what was asked. */
static void put_tokens(struct cl_sim_w *w, const struct cl_sim_truth_rec *r)
{
	U64(w, ",\"prompt_tokens\":", r->prompt_tokens);
	U64(w, ",\"planned_tokens\":", r->planned_tokens);
	U64(w, ",\"output_tokens\":", r->output_tokens);
	U64(w, ",\"reasoning_tokens\":", r->reasoning_tokens);
	U64(w, ",\"chunks\":", r->chunks);
	CL_SIM_W_LIT(w, ",\"max_tokens\":");
	if (r->max_tokens)
		cl_sim_w_u64(w, r->max_tokens);
	else
		CL_SIM_W_LIT(w, "null");
	BOOL(w, ",\"ignore_eos\":", r->ignore_eos);
	U64(w, ",\"images\":", r->images);
}

/* The texts by their hashes: the history's last turn, the answer, the prompt. */
static void put_hashes(struct cl_sim_w *w, const struct cl_sim_truth_rec *r)
{
	U64(w, ",\"history_turns\":", r->history_turns);
	HASH(w, ",\"history_fnv\":", r->history_fnv, r->history_turns != 0);
	HASH(w, ",\"answer_fnv\":", r->answer_fnv, true);
	/* Rejected requests were never parsed: no prompt to name. */
	HASH(w, ",\"prompt_fnv\":", r->prompt_fnv, r->prompt_fnv != 0);
}

/* Where it was served: the prefix cache's share, the client, the process; then its tool
 * call (whether the answer was one, its tokens: the arguments sent) and the tool results the
 * request carried since its last user message. */
static void put_serving(struct cl_sim_w *w, const struct cl_sim_truth_rec *r)
{
	U64(w, ",\"cached_tokens\":", r->cached_tokens);
	STR(w, ",\"peer\":", r->peer && r->peer[0] ? r->peer : NULL);
	U64(w, ",\"process\":", r->process);
	BOOL(w, ",\"tool_call\":", r->tool_call);
	U64(w, ",\"tool_call_tokens\":", r->tool_call_tokens);
	U64(w, ",\"tool_results\":", r->tool_results);
}

void cl_sim_truth_record(struct cl_sim_truth *t, const struct cl_sim_truth_rec *r)
{
	char line[TRUTH_LINE_MAX];
	struct cl_sim_w w;
	if (!t->enabled)
		return;
	cl_sim_w_init(&w, line, sizeof(line));
	put_request(&w, r);
	put_outcome(&w, r);
	put_timing(&w, r);
	put_tokens(&w, r);
	put_hashes(&w, r);
	put_serving(&w, r);
	CL_SIM_W_LIT(&w, "}\n");
	if (w.overflow)
		return; /* cannot happen: every field is bounded well below the line size */
	size_t n = cl_sim_w_len(&w, line);
	if (cl_buf_append(&t->buf, line, n) != 0) {
		/* The buffer is at its cap: written out now, then the line again. */
		cl_sim_truth_flush(t);
		if (cl_buf_append(&t->buf, line, n) != 0)
			return;
	}
	t->lines++;
}

void cl_sim_truth_close(struct cl_sim_truth *t)
{
	if (t->enabled) {
		cl_sim_truth_flush(t);
		close(t->fd);
	}
	t->enabled = false;
	t->fd = -1;
	cl_buf_free(&t->buf);
}
