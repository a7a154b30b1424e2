/* Parsing and formatting of durations; parsing of rates, percentages and sizes; checked numeric
 * conversions. */
#include "chatload/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DURATION_US (100LL * 86400LL * 1000000LL)

int cl_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out)
{
	if (!text || !*text || isspace((unsigned char)*text))
		return CL_EINVAL;
	char *end = NULL;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (end == text || *end != '\0')
		return CL_EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return CL_ERANGE;
	*out = v;
	return 0;
}

int cl_parse_u64(const char *text, uint64_t max, uint64_t *out)
{
	if (!text || !isdigit((unsigned char)*text))
		return CL_EINVAL;
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (*end != '\0')
		return CL_EINVAL;
	if (errno == ERANGE || v > max)
		return CL_ERANGE;
	*out = v;
	return 0;
}

int cl_parse_double(const char *text, double *out)
{
	if (!text || !*text || isspace((unsigned char)*text))
		return CL_EINVAL;
	char *end = NULL;
	errno = 0;
	double v = strtod(text, &end);
	if (end == text || *end != '\0')
		return CL_EINVAL;
	if (errno == ERANGE || !isfinite(v))
		return CL_ERANGE;
	*out = v;
	return 0;
}

int cl_parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	if (!text)
		return CL_EINVAL;
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(text, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return CL_EINVAL;
}

/* Reads an unsigned decimal number (digits with an optional fraction) at *p. */
static int read_number(const char **p, double *out)
{
	const char *s = *p;
	const char *start = s;
	double v = 0;
	while (isdigit((unsigned char)*s))
		v = v * 10 + (*s++ - '0');
	if (*s == '.') {
		s++;
		double scale = 0.1;
		if (!isdigit((unsigned char)*s))
			return CL_EINVAL;
		while (isdigit((unsigned char)*s)) {
			v += (*s++ - '0') * scale;
			scale /= 10;
		}
	}
	if (s == start)
		return CL_EINVAL;
	*p = s;
	*out = v;
	return 0;
}

int cl_parse_duration_us(const char *text, int64_t *out_us, struct cl_err *err)
{
	static const struct {
		const char *name;
		double us;
	} units[] = { { "us", 1 },   { "µs", 1 },     { "ms", 1e3 },   { "s", 1e6 },
		      { "m", 60e6 }, { "h", 3600e6 }, { "d", 86400e6 } };
	if (!text || !*text)
		return cl_err_set(err, CL_EINVAL,
				  "empty duration (expected e.g. 500ms, 90s, 2m, 1h30m)");
	if (strcmp(text, "0") == 0) {
		*out_us = 0;
		return 0;
	}
	const char *p = text;
	double total = 0;
	while (*p) {
		double v;
		if (read_number(&p, &v) != 0)
			goto bad;
		size_t best = 0, best_len = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t l = strlen(units[i].name);
			/* longest match first, so "ms" is not read as "m" then "s" */
			if (l > best_len && strncmp(p, units[i].name, l) == 0) {
				best = i;
				best_len = l;
			}
		}
		if (!best_len)
			goto bad;
		total += v * units[best].us;
		p += best_len;
		if (total > (double)MAX_DURATION_US)
			return cl_err_set(err, CL_ERANGE,
					  "duration '%s' is too long (at most 100d)", text);
	}
	*out_us = (int64_t)llround(total);
	return 0;
bad:
	return cl_err_set(err, CL_EINVAL,
			  "invalid duration '%s' (expected a number with a unit: us, ms, s, m, h, "
			  "e.g. 500ms, 90s, 1h30m)",
			  text);
}

int cl_parse_rate(const char *text, double *out_per_s, struct cl_err *err)
{
	const char *slash = text ? strchr(text, '/') : NULL;
	double per = 0;
	if (slash) {
		const char *unit = slash + 1;
		if (strcmp(unit, "s") == 0)
			per = 1;
		else if (strcmp(unit, "m") == 0 || strcmp(unit, "min") == 0)
			per = 60;
		else if (strcmp(unit, "h") == 0)
			per = 3600;
	}
	char num[64];
	size_t len = slash ? (size_t)(slash - text) : 0;
	double v;
	if (!per || len == 0 || len >= sizeof(num))
		goto bad;
	memcpy(num, text, len);
	num[len] = '\0';
	const char *p = num;
	if (read_number(&p, &v) != 0 || *p != '\0' || v <= 0)
		goto bad;
	*out_per_s = v / per;
	return 0;
bad:
	return cl_err_set(
	    err, CL_EINVAL,
	    "invalid rate '%s' (expected a positive number per unit, e.g. 20/s, 1200/m)",
	    text ? text : "");
}

int cl_parse_percent(const char *text, double *out_fraction, struct cl_err *err)
{
	size_t len = text ? strlen(text) : 0;
	char num[64];
	double v;
	if (len < 2 || text[len - 1] != '%' || len - 1 >= sizeof(num))
		goto bad;
	memcpy(num, text, len - 1);
	num[len - 1] = '\0';
	const char *p = num;
	if (read_number(&p, &v) != 0 || *p != '\0')
		goto bad;
	if (v > 100)
		return cl_err_set(err, CL_ERANGE, "percentage '%s' is above 100%%", text);
	*out_fraction = v / 100.0;
	return 0;
bad:
	return cl_err_set(err, CL_EINVAL, "invalid percentage '%s' (expected e.g. 1%%, 0.5%%)",
			  text ? text : "");
}

int cl_parse_size(const char *text, uint64_t *out_bytes, struct cl_err *err)
{
	static const struct {
		const char *name;
		double mul;
	} units[] = { { "", 1 },
		      { "B", 1 },
		      { "KiB", 1024.0 },
		      { "MiB", 1048576.0 },
		      { "GiB", 1073741824.0 },
		      { "kB", 1e3 },
		      { "KB", 1e3 },
		      { "MB", 1e6 },
		      { "GB", 1e9 } };
	const char *p = text;
	double v;
	if (!text || read_number(&p, &v) != 0)
		goto bad;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].name) == 0) {
			double b = v * units[i].mul;
			if (b > 1e18)
				return cl_err_set(err, CL_ERANGE, "size '%s' is too large", text);
			*out_bytes = (uint64_t)llround(b);
			return 0;
		}
	}
bad:
	return cl_err_set(err, CL_EINVAL,
			  "invalid size '%s' (expected bytes or a unit: KiB, MiB, GiB, kB, MB, GB)",
			  text ? text : "");
}

static void format_tenths(int64_t us, char *buf, size_t n)
{
	int64_t s = (us + 500000) / 1000000; /* whole seconds, rounded, above a minute */
	if (us < 59950000)                   /* below what "%.1f" would print as 60.0 */
		snprintf(buf, n, "%.1fs", us / 1e6);
	else if (s < 3600 && s % 60 == 0)
		snprintf(buf, n, "%lldm", (long long)(s / 60));
	else if (s < 3600)
		snprintf(buf, n, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else if (s % 3600 / 60 == 0)
		snprintf(buf, n, "%lldh", (long long)(s / 3600));
	else
		snprintf(buf, n, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
}

static void format_precise(int64_t us, char *buf, size_t n)
{
	if (us < 1000)
		snprintf(buf, n, "%lldus", (long long)us);
	else if (us < 1000000)
		snprintf(buf, n, "%.1fms", us / 1e3);
	else if (us < 60000000)
		snprintf(buf, n, "%.2fs", us / 1e6);
	else if (us < 3600000000LL)
		snprintf(buf, n, "%lldm%02llds", (long long)(us / 60000000),
			 (long long)(us / 1000000 % 60));
	else
		snprintf(buf, n, "%lldh%02lldm", (long long)(us / 3600000000LL),
			 (long long)(us / 60000000 % 60));
}

char *cl_format_duration_us(int64_t us, enum cl_duration_style style, char *buf, size_t n)
{
	if (!n)
		return buf;
	if (us < 0)
		us = 0;
	switch (style) {
	case CL_DURATION_MILLIS:
		if (us < 1000000) {
			snprintf(buf, n, "%lldms", (long long)((us + 500) / 1000));
			break;
		}
		/* fall through */
	case CL_DURATION_TENTHS:
		format_tenths(us, buf, n);
		break;
	case CL_DURATION_PRECISE:
	default:
		format_precise(us, buf, n);
		break;
	}
	return buf;
}
