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

#define TIME(w, key, v) put_time((w), key, sizeof(key) - 1, (v))

void cl_sim_truth_record(struct cl_sim_truth *t, const struct cl_sim_truth_rec *r)
{
	char line[TRUTH_LINE_MAX];
	struct cl_sim_w w;
	if (!t->enabled)
		return;
	cl_sim_w_init(&w, line, sizeof(line));
	CL_SIM_W_LIT(&w, "{\"id\":");
	put_str_or_null(&w, r->id);
	CL_SIM_W_LIT(&w, ",\"seq\":");
	cl_sim_w_u64(&w, r->seq);
	CL_SIM_W_LIT(&w, ",\"x_request_id\":");
	put_str_or_null(&w, r->request_id);
	CL_SIM_W_LIT(&w, ",\"conversation\":");
	put_str_or_null(&w, r->conversation);
	CL_SIM_W_LIT(&w, ",\"class\":");
	put_str_or_null(&w, r->cls);
	CL_SIM_W_LIT(&w, ",\"model\":");
	put_str_or_null(&w, r->model);
	CL_SIM_W_LIT(&w, ",\"priority\":");
	if (r->has_priority)
		cl_sim_w_i64(&w, r->priority);
	else
		CL_SIM_W_LIT(&w, "null");
	CL_SIM_W_LIT(&w, ",\"api\":");
	put_str_or_null(&w, r->api);
	CL_SIM_W_LIT(&w, ",\"inputs\":");
	cl_sim_w_u64(&w, r->inputs);
	CL_SIM_W_LIT(&w, ",\"documents\":");
	cl_sim_w_u64(&w, r->documents);
	CL_SIM_W_LIT(&w, ",\"audio_ms\":");
	cl_sim_w_u64(&w, r->audio_ms);
	CL_SIM_W_LIT(&w, ",\"stream\":");
	if (r->stream)
		CL_SIM_W_LIT(&w, "true");
	else
		CL_SIM_W_LIT(&w, "false");
	CL_SIM_W_LIT(&w, ",\"status\":");
	if (r->outcome)
		cl_sim_w_json(&w, r->outcome, strlen(r->outcome));
	else
		cl_sim_w_i64(&w, r->http_status);
	CL_SIM_W_LIT(&w, ",\"http_status\":");
	cl_sim_w_i64(&w, r->http_status);
	/* The client went away before the answer ended (the status says so too; a field
	 * of its own so a reader counts them without knowing every status). */
	if (r->outcome && strcmp(r->outcome, "client_gone") == 0)
		CL_SIM_W_LIT(&w, ",\"client_gone\":true");
	else
		CL_SIM_W_LIT(&w, ",\"client_gone\":false");
	CL_SIM_W_LIT(&w, ",\"fault\":");
	put_str_or_null(&w, r->fault);
	if (r->failed)
		CL_SIM_W_LIT(&w, ",\"failed\":true");
	else
		CL_SIM_W_LIT(&w, ",\"failed\":false");
	TIME(&w, ",\"arrival_us\":", r->arrival_us);
	CL_SIM_W_LIT(&w, ",\"queued_us\":");
	cl_sim_w_i64(&w, r->queued_us);
	TIME(&w, ",\"scheduled_first_us\":", r->sched_first_us);
	TIME(&w, ",\"actual_first_us\":", r->act_first_us);
	TIME(&w, ",\"scheduled_last_us\":", r->sched_last_us);
	TIME(&w, ",\"actual_last_us\":", r->act_last_us);
	CL_SIM_W_LIT(&w, ",\"max_late_us\":");
	cl_sim_w_i64(&w, r->max_late_us);
	CL_SIM_W_LIT(&w, ",\"prompt_tokens\":");
	cl_sim_w_u64(&w, r->prompt_tokens);
	CL_SIM_W_LIT(&w, ",\"planned_tokens\":");
	cl_sim_w_u64(&w, r->planned_tokens);
	CL_SIM_W_LIT(&w, ",\"output_tokens\":");
	cl_sim_w_u64(&w, r->output_tokens);
	CL_SIM_W_LIT(&w, ",\"reasoning_tokens\":");
	cl_sim_w_u64(&w, r->reasoning_tokens);
	CL_SIM_W_LIT(&w, ",\"chunks\":");
	cl_sim_w_u64(&w, r->chunks);
	CL_SIM_W_LIT(&w, ",\"max_tokens\":");
	if (r->max_tokens)
		cl_sim_w_u64(&w, r->max_tokens);
	else
		CL_SIM_W_LIT(&w, "null");
	if (r->ignore_eos)
		CL_SIM_W_LIT(&w, ",\"ignore_eos\":true");
	else
		CL_SIM_W_LIT(&w, ",\"ignore_eos\":false");
	char hex[24];
	CL_SIM_W_LIT(&w, ",\"images\":");
	cl_sim_w_u64(&w, r->images);
	CL_SIM_W_LIT(&w, ",\"history_turns\":");
	cl_sim_w_u64(&w, r->history_turns);
	CL_SIM_W_LIT(&w, ",\"history_fnv\":");
	if (r->history_turns) {
		snprintf(hex, sizeof(hex), "\"%016llx\"", (unsigned long long)r->history_fnv);
		cl_sim_w_put(&w, hex, strlen(hex));
	} else {
		CL_SIM_W_LIT(&w, "null");
	}
	CL_SIM_W_LIT(&w, ",\"answer_fnv\":");
	snprintf(hex, sizeof(hex), "\"%016llx\"", (unsigned long long)r->answer_fnv);
	cl_sim_w_put(&w, hex, strlen(hex));
	/* Rejected requests were never parsed: no prompt to name. */
	CL_SIM_W_LIT(&w, ",\"prompt_fnv\":");
	if (r->prompt_fnv) {
		snprintf(hex, sizeof(hex), "\"%016llx\"", (unsigned long long)r->prompt_fnv);
		cl_sim_w_put(&w, hex, strlen(hex));
	} else {
		CL_SIM_W_LIT(&w, "null");
	}
	CL_SIM_W_LIT(&w, ",\"cached_tokens\":");
	cl_sim_w_u64(&w, r->cached_tokens);
	CL_SIM_W_LIT(&w, ",\"peer\":");
	put_str_or_null(&w, r->peer && r->peer[0] ? r->peer : NULL);
	CL_SIM_W_LIT(&w, ",\"process\":");
	cl_sim_w_u64(&w, r->process);
	/* tool calls: whether the answer was one, its tokens (the arguments sent), and the
	 * tool results the request carried since its last user message */
	if (r->tool_call)
		CL_SIM_W_LIT(&w, ",\"tool_call\":true,\"tool_call_tokens\":");
	else
		CL_SIM_W_LIT(&w, ",\"tool_call\":false,\"tool_call_tokens\":");
	cl_sim_w_u64(&w, r->tool_call_tokens);
	CL_SIM_W_LIT(&w, ",\"tool_results\":");
	cl_sim_w_u64(&w, r->tool_results);
	CL_SIM_W_LIT(&w, "}\n");
	if (w.overflow)
		return; /* cannot happen: every field is bounded well below the line size */
	size_t n = cl_sim_w_len(&w, line);
	if (cl_buf_append(&t->buf, line, n) != 0) {
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
