/* What history.c shares with history_html.c: the parts of the text both renderings say. */
#ifndef CHATLOAD_HISTORY_INT_H
#define CHATLOAD_HISTORY_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* A figure's value as the table writes it: the error rate in %, others as milliseconds and
 * rates are ("-" when not finite). */
void cli_history_fmt(char *buf, size_t n, const char *metric, double v);
/* One line per event (step, outlier, missing stage), skipped night and warning, each
 * starting with item_prefix; the text is plain (the page escapes it by writing to a
 * buffer first). */
void cli_history_events(const json_t *hist, FILE *out, const char *item_prefix);
/* "result: ..." and a newline. */
void cli_history_verdict(const json_t *hist, FILE *out);
/* How many nights were used, the first's and the last's names ("-" without any). */
void cli_history_span(const json_t *hist, size_t *n_used, const char **first, const char **last);

#endif
