/* Live progress line for chatload run. */
#include "coordinator/run/progress.h"

#include "chatload/clock.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cl_progress_init(struct cl_progress *p, FILE *out)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->tty = isatty(fileno(out));
	const char *mode = getenv("CHATLOAD_PROGRESS");
	if (mode && strcmp(mode, "plain") == 0)
		p->tty = false;
	else if (mode && strcmp(mode, "tty") == 0)
		p->tty = true;
	else if (mode && strcmp(mode, "off") == 0)
		p->out = NULL;
	p->every_us = p->tty ? 1000000 : 5000000;
}

static void show(struct cl_progress *p, const char *line);

void cl_progress_update(struct cl_progress *p, const struct cl_progress_snapshot *s, bool force)
{
	if (!p->out)
		return;
	int64_t now = cl_mono_us();
	if (!force && !p->last_us && !p->tty) {
		/* In a log, the first line comes after one period, when there is data. */
		p->last_us = now;
		return;
	}
	if (!force && p->last_us && now - p->last_us < p->every_us)
		return;
	p->last_us = now;
	char span[64];
	if (s->total_s > 0) /* the drain runs past the planned time: show it as the end */
		snprintf(span, sizeof(span), "%.0f/%.0fs", fmin(s->elapsed_s, s->total_s),
			 s->total_s);
	else
		snprintf(span, sizeof(span), "%llu/%llu req", (unsigned long long)s->requests_done,
			 (unsigned long long)s->requests_total);
	char agents[48] = "";
	if (s->agents_missing)
		snprintf(agents, sizeof(agents), " agents %u ok %u MISSING", s->agents_ok,
			 s->agents_missing);
	else
		snprintf(agents, sizeof(agents), " agents %u ok", s->agents_ok);
	/* A percentile with no data (no interval yet, or no request reached its first token)
	 * is "-": 0ms would claim a measurement. */
	char ttft[32] = "-";
	if (isfinite(s->ttft_p50_ms))
		snprintf(ttft, sizeof(ttft), "%.0fms", s->ttft_p50_ms);
	char line[256];
	snprintf(line, sizeof(line),
		 "stage %zu/%zu %s %s | active %lld | last interval: %.1f req/s, %.0f tok/s, "
		 "ttft p50 %s | errors %llu |%s",
		 s->stage_index + 1, s->n_stages, s->stage, span, (long long)s->active,
		 s->requests_per_s, s->output_tokens_per_s, ttft, (unsigned long long)s->errors,
		 agents);
	show(p, line);
}

bool cl_progress_due(struct cl_progress *p, bool force)
{
	if (!p->out)
		return false;
	int64_t now = cl_mono_us();
	if (!force && p->last_us && now - p->last_us < p->every_us)
		return false;
	p->last_us = now;
	return true;
}

void cl_progress_show(struct cl_progress *p, const char *line)
{
	show(p, line);
}

static void show(struct cl_progress *p, const char *line)
{
	if (p->tty) {
		fprintf(p->out, "\r\033[K%s", line);
		p->line_open = true;
	} else {
		fprintf(p->out, "chatload: %s\n", line);
	}
	fflush(p->out);
}

void cl_progress_end(struct cl_progress *p)
{
	p->last_us = 0;
	if (p->out && p->line_open) {
		fputc('\n', p->out);
		fflush(p->out);
	}
	p->line_open = false;
}

void cl_progress_note(struct cl_progress *p, const char *fmt, ...)
{
	FILE *out = p->out ? p->out : stderr;
	if (p->line_open) {
		fputs("\r\033[K", out);
		p->line_open = false;
	}
	fputs("chatload: ", out);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}
