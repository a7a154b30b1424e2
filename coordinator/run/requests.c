/* output.requests: the agents' per-request records appended to <results>/requests.jsonl as
 * REQUESTS messages arrive, one JSON line per request (docs/results.md, "requests.jsonl"). */
#include "internal.h"

#include "chatload/clock.h"
#include "chatload/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The longest line one record makes: fixed fields, a stage name of 256 bytes, an id of 128
 * and a message of 256, each escaped at most six-fold, with room to spare. */
#define LINE_MAX_BYTES 6144
/* Lines are gathered in a buffer this size and written when it is nearly full. */
#define BUF_BYTES (256u << 10)

struct run_requests {
	int fd;
	char path[4200];
	char *buf; /* lines not yet written */
	size_t len, cap;
	off_t msg_start;  /* the file's size before the message being written */
	uint64_t records; /* lines written */
	uint64_t by_agent[CL_FLEET_MAX_AGENTS]; /* ... per agent */
	uint64_t dropped[CL_FLEET_MAX_AGENTS];  /* as each agent last told (cumulative) */
	bool write_failed;
};

static void put(struct run_requests *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct run_requests *q, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(q->buf + q->len, q->cap - q->len, fmt, ap);
	va_end(ap);
	/* The buffer holds LINE_MAX_BYTES per record, so this never cuts a line. */
	if (k > 0 && (size_t)k < q->cap - q->len)
		q->len += (size_t)k;
}

/* Whether s[0..n) is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF). */
static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k = c < 0x80             ? 1
			   : (c & 0xe0) == 0xc0 ? 2
			   : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4
						: 0;
		if (!k || i + k > n || (k == 2 && c < 0xc2) || (k == 4 && c > 0xf4))
			return false;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
		if (k == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f)))
			return false;
		if (k == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f)))
			return false;
		i += k;
	}
	return true;
}

/* A JSON string.  Text from a server may be anything: bytes that are not UTF-8 become '?'
 * so every line stays valid JSON. */
static void put_str(struct run_requests *q, const char *s)
{
	size_t n = strlen(s);
	bool ok = utf8_ok((const unsigned char *)s, n);
	put(q, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			put(q, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			put(q, "\\u%04x", c);
		else if (c >= 0x80 && !ok)
			put(q, "?");
		else if (q->len + 1 < q->cap)
			q->buf[q->len++] = (char)c;
	}
	put(q, "\"");
}

static void put_ms(struct run_requests *q, const char *name, int64_t us)
{
	if (us >= 0)
		put(q, ",\"%s\":%.3f", name, us / 1000.0);
	else
		put(q, ",\"%s\":null", name);
}

/* Where the request's time went (docs/results.md, "requests.jsonl"): libcurl's stages of the
 * connection, the connections it opened, and its TTFT in three parts on the agent's clock,
 * which add up to it: the client's connection time (to libcurl about to send the request),
 * the server's wait to the status line, and first byte to first token. */
static void put_timing(struct run_requests *q, const struct cl_req_record *x)
{
	const struct cl_conn_times *c = &x->conn;
	put_ms(q, "ttfb_ms", x->ttfb_us);
	put_ms(q, "dns_ms", c->dns_us);
	put_ms(q, "connect_ms", c->connect_us);
	put_ms(q, "tls_ms", c->tls_us);
	put_ms(q, "send_ms", c->send_us);
	put_ms(q, "wait_ms", c->wait_us);
	put(q, ",\"connections_opened\":%" PRIu32, x->connects);
	bool split = x->sent_us >= 0 && x->ttfb_us >= x->sent_us && x->ttft_us >= x->ttfb_us;
	if (!split) {
		put(q, ",\"ttft_split\":null");
		return;
	}
	put(q,
	    ",\"ttft_split\":{\"connection_ms\":%.3f,\"server_wait_ms\":%.3f,"
	    "\"after_first_byte_ms\":%.3f}",
	    x->sent_us / 1000.0, (x->ttfb_us - x->sent_us) / 1000.0,
	    (x->ttft_us - x->ttfb_us) / 1000.0);
}

static void put_record(struct run *r, struct run_requests *q, const struct cl_fleet_agent *a,
		       const struct cl_req_record *x, int64_t mono_to_unix_us)
{
	put(q, "{\"stage\":");
	put_str(q, x->stage < r->s.n_stages ? r->s.stages[x->stage].name : "?");
	put(q, ",\"stage_index\":%" PRIu32 ",\"id\":", x->stage);
	put_str(q, x->id);
	put(q, ",\"agent\":%" PRIu32 ",\"in_window\":%s", a->id, x->in_window ? "true" : "false");
	/* The agent's clock moved to this one's by the agent's offset, so every agent's start
	 * times are on one time line; then to wall time by this clock. */
	put(q, ",\"start_unix_us\":%" PRId64, x->start_us + a->clock_offset_us + mono_to_unix_us);
	put_ms(q, "ttft_ms", x->ttft_us);
	put_ms(q, "ttfc_ms", x->ttfc_us);
	put_ms(q, "e2e_ms", x->e2e_us);
	/* The stage's e2e (the last token, not the transfer's end): what vLLM's latency is. */
	put_ms(q, "last_token_ms", x->last_token_us);
	put(q, ",\"chunks\":%" PRIu32, x->chunks);
	int64_t itl = x->chunks > 1 && x->ttft_us >= 0 && x->last_token_us >= x->ttft_us
			  ? (x->last_token_us - x->ttft_us) / (x->chunks - 1)
			  : -1;
	put_ms(q, "itl_mean_ms", itl);
	put_timing(q, x);
	put(q,
	    ",\"http_status\":%" PRIu32 ",\"prompt_tokens\":%" PRIu64 ",\"output_tokens\":%" PRIu64
	    ",\"reasoning_tokens\":%" PRIu64 ",\"status\":",
	    x->http_status, x->prompt_tokens, x->output_tokens, x->reasoning_tokens);
	/* "completed", "cut", or "error" with the class results.json counts it under. */
	bool err = strncmp(x->status, "err_", 4) == 0;
	put_str(q, err ? "error" : x->status);
	if (!err) {
		put(q, ",\"error\":null}\n");
	} else {
		put(q, ",\"error\":{\"class\":");
		put_str(q, x->status + 4);
		put(q, ",\"message\":");
		put_str(q, x->error);
		put(q, "}}\n");
	}
}

/* Writes buf, or cuts the file back to where the message began (a line is never left half
 * written, nor a message half kept: the agent sends it again whole). */
static int write_whole(struct run_requests *q)
{
	off_t before = q->msg_start;
	size_t off = 0;
	while (off < q->len) {
		ssize_t k = write(q->fd, q->buf + off, q->len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : ENOSPC;
			if (before >= 0 && ftruncate(q->fd, before) != 0)
				CL_DEBUG("cannot cut %s back: %s", q->path, strerror(errno));
			errno = e;
			return -1;
		}
		off += (size_t)k;
	}
	q->len = 0;
	return 0;
}

static int on_requests(void *ctx, struct cl_fleet_agent *a, const struct cl_msg_requests *m)
{
	struct run *r = ctx;
	struct run_requests *q = r->requests;
	if (!q || a->id < 1 || a->id > CL_FLEET_MAX_AGENTS)
		return -1;
	int64_t mono_to_unix_us = cl_wall_us() - cl_mono_us();
	q->len = 0;
	q->msg_start = lseek(q->fd, 0, SEEK_END);
	int rc = 0;
	for (size_t i = 0; i < m->n_records && rc == 0; i++) {
		if (q->cap - q->len < LINE_MAX_BYTES)
			rc = write_whole(q);
		put_record(r, q, a, &m->records[i], mono_to_unix_us);
	}
	if (rc != 0 || write_whole(q) != 0) {
		/* Said once; the agent sends the message again, and drops what it cannot keep. */
		if (!q->write_failed)
			CL_ERROR("cannot write %s: %s (request records are held back until it "
				 "can be written)",
				 q->path, strerror(errno));
		q->write_failed = true;
		return -1;
	}
	q->write_failed = false;
	q->records += m->n_records;
	q->by_agent[a->id - 1] += m->n_records;
	if (m->dropped > q->dropped[a->id - 1]) {
		CL_WARN("agent %u (%s) dropped %llu request records: this coordinator fell behind "
			"(%llu so far)",
			a->id, a->label, (unsigned long long)(m->dropped - q->dropped[a->id - 1]),
			(unsigned long long)m->dropped);
		q->dropped[a->id - 1] = m->dropped;
	}
	return 0;
}

int cli_run_requests_open(struct run *r, struct cl_err *err)
{
	if (!r->s.output.requests)
		return 0;
	struct run_requests *q = calloc(1, sizeof(*q));
	if (!q)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	q->fd = -1;
	q->cap = BUF_BYTES;
	q->buf = malloc(q->cap);
	snprintf(q->path, sizeof(q->path), "%s/requests.jsonl", cl_results_dir(r->res));
	if (q->buf)
		q->fd = open(q->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (!q->buf || q->fd < 0) {
		int rc = !q->buf ? cl_err_set(err, CL_ENOMEM, "out of memory")
				 : cl_err_set(err, CL_EIO, "cannot create '%s': %s", q->path,
					      strerror(errno));
		free(q->buf);
		free(q);
		return rc;
	}
	r->requests = q;
	r->fleet.on_requests = on_requests;
	return 0;
}

void cli_run_requests_note(struct run *r)
{
	struct run_requests *q = r->requests;
	if (!q || !r->res)
		return;
	json_t *agents = json_array();
	uint64_t dropped = 0;
	for (size_t i = 0; i < r->fleet.n && i < CL_FLEET_MAX_AGENTS; i++) {
		dropped += q->dropped[i];
		json_array_append_new(agents,
				      json_pack("{s:I,s:I,s:I}", "agent", (json_int_t)(i + 1),
						"records", (json_int_t)q->by_agent[i], "dropped",
						(json_int_t)q->dropped[i]));
	}
	json_t *block =
	    json_pack("{s:s,s:I,s:I,s:o}", "file", "requests.jsonl", "records",
		      (json_int_t)q->records, "dropped", (json_int_t)dropped, "agents", agents);
	if (cl_results_set_requests_log(r->res, block) != 0)
		CL_ERROR("cannot note the request records in results.json");
}

void cli_run_requests_close(struct run *r)
{
	struct run_requests *q = r->requests;
	if (!q)
		return;
	if (q->fd >= 0)
		close(q->fd);
	free(q->buf);
	free(q);
	r->requests = NULL;
	r->fleet.on_requests = NULL;
}
