/* The request log: one JSON line per finished request, buffered per worker and written with
 * O_APPEND so lines stay whole (docs/engine.md, "Request log"). */
#include "internal.h"

#include "chatload/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Appends printf output to the worker's log buffer; output that does not fit is dropped
 * whole (cli_reqlog_write flushes early enough that a line always fits). */
static void log_printf(struct cl_worker *w, const char *fmt, ...)
{
	size_t room = CL_ENGINE_LOG_BUF - w->log_len;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(w->log_buf + w->log_len, room, fmt, ap);
	va_end(ap);
	if (k > 0 && (size_t)k < room)
		w->log_len += (size_t)k;
}

static void log_json_string(struct cl_worker *w, const char *p, size_t n)
{
	char *o = w->log_buf + w->log_len;
	size_t room = CL_ENGINE_LOG_BUF - w->log_len;
	size_t k = 0;
	if (room < 2)
		return;
	o[k++] = '"';
	for (size_t i = 0; i < n && k + 8 < room; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '"' || c == '\\') {
			o[k++] = '\\';
			o[k++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			k += (size_t)snprintf(o + k, room - k, "\\u%04x", c);
		} else {
			o[k++] = (char)c;
		}
	}
	o[k++] = '"';
	w->log_len += k;
}

static void log_ts(struct cl_worker *w, const char *name, int64_t v)
{
	if (v)
		log_printf(w, ",\"%s\":%" PRId64, name, v);
	else
		log_printf(w, ",\"%s\":null", name);
}

void cli_reqlog_flush(struct cl_worker *w)
{
	struct cl_engine *e = w->e;
	size_t off = 0;
	while (off < w->log_len && e->log_fd >= 0) {
		ssize_t k = write(e->log_fd, w->log_buf + off, w->log_len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (!atomic_exchange(&e->log_failed, true))
				CL_WARN("cannot write the request log: %s", strerror(errno));
			break;
		}
		off += (size_t)k;
	}
	w->log_len = 0;
}

void cli_reqlog_write(struct cl_worker *w, const struct cl_slot *s, const char *status,
		      int64_t end_us, int64_t tokens, int64_t rtokens, bool from_usage,
		      long connects, int http_major, const char *msg, size_t msg_len)
{
	struct cl_engine *e = w->e;
	if (e->log_fd < 0 || !w->log_buf)
		return;
	/* A line is at most ~2.2 KiB (a 256-byte message escapes to at most 1.5 KiB); flush
	 * before it could overflow so lines are always whole. */
	if (CL_ENGINE_LOG_BUF - w->log_len < 4096)
		cli_reqlog_flush(w);
	log_printf(w,
		   "{\"id\":\"%s-%u-%" PRIu64 "\",\"worker\":%u,\"seq\":%" PRIu64 ",\"window\":%s",
		   e->prefix, w->index, s->seq, w->index, s->seq, s->in_window ? "true" : "false");
	log_ts(w, "intended_us", s->intended_us);
	log_ts(w, "handed_us", s->handed_us);
	log_ts(w, "sent_us", s->sent_us);
	log_ts(w, "headers_us", s->headers_us);
	log_ts(w, "first_us", s->first_us);
	log_ts(w, "first_content_us", s->first_content_us);
	log_ts(w, "last_us", s->last_us);
	log_ts(w, "end_us", end_us);
	/* libcurl's timers (docs/engine.md, "Where the time went"), -1 when not reached */
	log_printf(w,
		   ",\"dns_us\":%" PRId64 ",\"connect_us\":%" PRId64 ",\"tls_us\":%" PRId64
		   ",\"send_us\":%" PRId64 ",\"wait_us\":%" PRId64,
		   s->ct.dns_us, s->ct.connect_us, s->ct.tls_us, s->ct.send_us, s->ct.wait_us);
	log_printf(w, ",\"new_connection\":%s,\"reconnects\":%u,\"closed_at_done\":%s",
		   connects > 0 || s->fresh_resent ? "true" : "false", cl_slot_reconnects(s),
		   s->closed_at_done ? "true" : "false");
	if (http_major)
		log_printf(w, ",\"http_version\":%d", http_major);
	else
		log_printf(w, ",\"http_version\":null");
	log_printf(w,
		   ",\"http_status\":%d,\"tokens\":%" PRId64 ",\"reasoning_tokens\":%" PRId64
		   ",\"prompt_tokens\":%" PRId64
		   ",\"usage\":\"%s\",\"chunks\":%u,\"bytes\":%" PRIu64 ",\"status\":\"%s\"",
		   s->http_status, tokens, rtokens, s->usage_pt, from_usage ? "server" : "chunks",
		   s->n_tok_chunks, s->bytes, status);
	if (msg && msg_len) {
		log_printf(w, ",\"error\":");
		log_json_string(w, msg, msg_len < 256 ? msg_len : 256);
	}
	if (w->log_len + 2 < CL_ENGINE_LOG_BUF) {
		w->log_buf[w->log_len++] = '}';
		w->log_buf[w->log_len++] = '\n';
	}
}
