/* Scenario text the commands write: aligned comments and values YAML reads back as written. */
#include "coordinator/cmd/yaml_text_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

char *cli_yaml_line(char *out, size_t n, const char *text, const char *note)
{
	int len = (int)strlen(text);
	int pad = CLI_YAML_NOTE_COLUMN - len > 1 ? CLI_YAML_NOTE_COLUMN - len : 1;
	size_t at = 0;
	if (note && len + pad + 2 + (int)strlen(note) > CLI_YAML_MAX_COLUMNS) {
		int w = snprintf(out, n, "%.*s# %s\n", (int)strspn(text, " "), text, note);
		at = w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
		note = NULL;
	}
	if (note)
		snprintf(out + at, n - at, "%s%*s# %s\n", text, pad, "", note);
	else
		snprintf(out + at, n - at, "%s\n", text);
	return out;
}

/* True when s can be written as a plain YAML scalar that reads back as itself: characters of
 * URLs, paths and model names only, starting with a letter, a digit or '/'. */
static bool plain_scalar(const char *s)
{
	static const char ok[] = "._/:@%+=~?&-";
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9') || s[0] == '/'))
		return false;
	for (const char *p = s; *p; p++) {
		bool alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9');
		if (!alnum && !strchr(ok, *p))
			return false;
	}
	/* "x:" at a line's end would be read as a mapping key */
	return s[strlen(s) - 1] != ':';
}

const char *cli_yaml_key_value(const char *key, const char *value, char *buf, size_t n)
{
	if (plain_scalar(value)) {
		snprintf(buf, n, "%s%s", key, value);
		return buf;
	}
	size_t at = (size_t)snprintf(buf, n, "%s\"", key);
	for (const char *p = value; *p && at + 3 < n; p++) {
		if (*p == '"' || *p == '\\')
			buf[at++] = '\\';
		buf[at++] = *p;
	}
	snprintf(buf + at, n - at, "\"");
	return buf;
}
