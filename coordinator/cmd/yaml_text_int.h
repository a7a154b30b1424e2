/* Scenario text the commands write (init's templates, bench's scenario.yaml): a line with its
 * comment aligned, and a value written so that YAML reads it back as itself. */
#ifndef CHATLOAD_CMD_YAML_TEXT_INT_H
#define CHATLOAD_CMD_YAML_TEXT_INT_H

#include <stddef.h>

#define CLI_YAML_NOTE_COLUMN 42  /* where a key's trailing comment starts, when there is room */
#define CLI_YAML_MAX_COLUMNS 100 /* the longest line written */

/*
 * One line into out (NUL-terminated, ending in '\n'): text, then "# note" from
 * CLI_YAML_NOTE_COLUMN (or one space past a longer text). A note that would take the line past
 * CLI_YAML_MAX_COLUMNS goes on a line of its own above the text, indented as the text is, so
 * out then holds two lines. note may be NULL. Truncates to n; returns out.
 */
char *cli_yaml_line(char *out, size_t n, const char *text, const char *note);

/*
 * "key" followed by value into buf: value plain when YAML reads it back as itself (characters
 * of URLs, paths and model names, starting with a letter, digit or '/'), else double-quoted
 * with its '\' and '"' escaped. Truncates to n; returns buf.
 */
const char *cli_yaml_key_value(const char *key, const char *value, char *buf, size_t n);

#endif
