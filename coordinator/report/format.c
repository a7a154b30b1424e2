/* How a number or a text is written in a report: precision that suits its size, "-" for no
 * value, and text escaped for XML / HTML, Markdown table cells and CSV fields. */
#include "coordinator/report/internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void cli_rp_put_xml(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			/* XML 1.0 forbids most control characters even as references. */
			if (c < 0x20 && c != '\n' && c != '\t')
				fputc('?', f);
			else
				fputc(c, f);
		}
	}
}

void cli_rp_put_md(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '|' || c == '\\' || c == '`' || c == '*' || c == '_' || c == '<' ||
		    c == '>' || c == '[' || c == ']')
			fputc('\\', f);
		if (c == '\n' || c == '\r' || c == '\t')
			c = ' ';
		fputc(c, f);
	}
}

void cli_rp_put_csv(FILE *f, const char *s)
{
	if (!s)
		return;
	bool quote =
	    strpbrk(s, ",\"\r\n") != NULL || s[0] == ' ' || (s[0] && s[strlen(s) - 1] == ' ');
	if (!quote) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

char *cli_rp_fmt(char *buf, size_t n, double x, int decimals)
{
	if (!isfinite(x))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.*f", decimals, x);
	return buf;
}

char *cli_rp_fmt_count(char *buf, size_t n, double x)
{
	if (!isfinite(x))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.0f", x);
	return buf;
}

char *cli_rp_fmt_pct(char *buf, size_t n, double pct)
{
	if (!isfinite(pct))
		return cli_rp_fmt(buf, n, NAN, 0);
	/* Two significant digits below 10% (%g would print 100 as 1e+02); whole percents
	 * above, never rounding a share short of all up to "100%". */
	if (pct < 9.95)
		snprintf(buf, n, "%.2g%%", pct);
	else if (pct < 99.5 || pct >= 100)
		snprintf(buf, n, "%.0f%%", pct);
	else
		snprintf(buf, n, "%.1f%%", pct < 99.95 ? pct : 99.9);
	return buf;
}

char *cli_rp_fmt_ms(char *buf, size_t n, double ms)
{
	if (!isfinite(ms))
		return cli_rp_fmt(buf, n, NAN, 0);
	/* Thresholds sit where rounding would carry into the next digit (9.996 -> "10.0"). */
	return cli_rp_fmt(buf, n, ms, ms < 9.995 ? 2 : ms < 999.95 ? 1 : 0);
}

char *cli_rp_fmt_rate(char *buf, size_t n, double v)
{
	if (!isfinite(v))
		return cli_rp_fmt(buf, n, NAN, 0);
	return cli_rp_fmt(buf, n, v, v < 9.995 ? 2 : v < 999.95 ? 1 : 0);
}

char *cli_rp_fmt_big(char *buf, size_t n, double v)
{
	if (!isfinite(v))
		return cli_rp_fmt(buf, n, NAN, 0);
	/* Below 10,000 the digits are few enough to read whole. */
	static const struct {
		double at, div;
		const char *suffix;
	} steps[] = {
		{ 1e12, 1e12, "T" }, { 1e9, 1e9, "G" }, { 1e6, 1e6, "M" }, { 1e4, 1e3, "k" }
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (fabs(v) >= steps[i].at) {
			snprintf(buf, n, "%.3g%s", v / steps[i].div, steps[i].suffix);
			return buf;
		}
	}
	snprintf(buf, n, "%.0f", v);
	return buf;
}

char *cli_rp_fmt_slo_value(char *buf, size_t n, double v, const char *unit)
{
	if (!isfinite(v))
		return cli_rp_fmt(buf, n, NAN, 0);
	if (unit && strcmp(unit, "ratio") == 0)
		snprintf(buf, n, "%.3g%%", v * 100);
	else if (unit && strcmp(unit, "ms") == 0)
		snprintf(buf, n, "%s ms", cli_rp_fmt_ms((char[32]){ 0 }, 32, v));
	else
		snprintf(buf, n, "%s/s", cli_rp_fmt_rate((char[32]){ 0 }, 32, v));
	return buf;
}
