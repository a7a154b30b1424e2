/* Live progress on stderr: one updating line per second on a terminal, a plain log line
 * every few seconds otherwise (CI logs, nohup). */
#ifndef CHATLOAD_PROGRESS_H
#define CHATLOAD_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct cl_progress_snapshot {
	const char *stage;
	size_t stage_index; /* 0-based */
	size_t n_stages;
	double elapsed_s;
	double total_s; /* 0 when bounded by requests */
	uint64_t requests_done;
	uint64_t requests_total; /* 0 when bounded by duration */
	int64_t active;
	double requests_per_s;
	double output_tokens_per_s;
	double ttft_p50_ms; /* NaN: no data (printed "-") */
	uint64_t errors;
	uint32_t agents_ok;
	uint32_t agents_missing;
};

struct cl_progress {
	FILE *out;
	bool tty;
	bool line_open; /* a \r-updated line is on screen */
	int64_t last_us;
	int64_t every_us;
};

/* Decides terminal or log mode from out (isatty) and CHATLOAD_PROGRESS=plain|tty|off. */
void cl_progress_init(struct cl_progress *p, FILE *out);
/* Prints when due (1 s on a terminal, 5 s otherwise); force prints now. */
void cl_progress_update(struct cl_progress *p, const struct cl_progress_snapshot *s, bool force);
/* Whether a line of one's own is due now (the same pace as cl_progress_update; force: yes),
 * then cl_progress_show prints it as the progress line. */
bool cl_progress_due(struct cl_progress *p, bool force);
void cl_progress_show(struct cl_progress *p, const char *line);
/* Prints a message on its own line, moving an open progress line out of the way. */
void cl_progress_note(struct cl_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Ends an open progress line. */
void cl_progress_end(struct cl_progress *p);

#endif
