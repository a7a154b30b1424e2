/* The dispatcher of report/: which format goes to which renderer, and the report files a
 * finished run leaves beside results.json.  The renderers never call back into this file. */
#include "coordinator/report/report.h"
#include "coordinator/results/json_int.h"

#include "chatload/err.h"

#include <stdio.h>
#include <strings.h>

int cl_report_parse_format(const char *name, enum cl_report_format *out)
{
	static const struct {
		const char *name;
		enum cl_report_format f;
	} names[] = { { "table", CL_REPORT_TABLE }, { "csv", CL_REPORT_CSV },
		      { "md", CL_REPORT_MD },       { "markdown", CL_REPORT_MD },
		      { "html", CL_REPORT_HTML },   { "vllm", CL_REPORT_VLLM } };
	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(name, names[i].name) == 0) {
			*out = names[i].f;
			return 0;
		}
	}
	return CL_EINVAL;
}

int cl_report_render(const json_t *doc, enum cl_report_format f, FILE *out)
{
	switch (f) {
	case CL_REPORT_TABLE:
		return cl_report_table(doc, out);
	case CL_REPORT_CSV:
		return cl_report_csv(doc, out);
	case CL_REPORT_MD:
		return cl_report_md(doc, out);
	case CL_REPORT_HTML:
		return cl_report_html(doc, out);
	case CL_REPORT_VLLM:
		return cl_report_vllm(doc, NULL, out, NULL);
	}
	return CL_EINVAL;
}

struct render_ctx {
	const json_t *doc;
	enum cl_report_format fmt;
};

static int fill_report(FILE *f, void *ctx)
{
	const struct render_ctx *c = ctx;
	return cl_report_render(c->doc, c->fmt, f);
}

int cl_report_write_files(const json_t *doc, const char *dir, unsigned formats, struct cl_err *err)
{
	static const struct {
		enum cl_report_format fmt;
		const char *name;
	} files[] = { { CL_REPORT_CSV, "results.csv" },
		      { CL_REPORT_MD, "report.md" },
		      { CL_REPORT_HTML, "report.html" } };
	int first = 0;
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		if (!(formats & CL_REPORT_FILE(files[k].fmt)))
			continue;
		struct render_ctx ctx = { doc, files[k].fmt };
		struct cl_err e = { 0 };
		int rc = cli_rj_write_atomic(dir, files[k].name, fill_report, &ctx, &e);
		if (rc != 0 && first == 0) {
			first = rc;
			if (err)
				*err = e;
		}
	}
	return first;
}
