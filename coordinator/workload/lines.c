/* Reads a file line by line with a cap on each line (its cl_buf's) and on the whole file. */
#include "coordinator/workload/internal.h"

#include <string.h>

int cli_workload_lines_next(struct line_reader *r)
{
	cl_buf_reset(&r->line);
	r->lineno++;
	bool any = false;
	for (;;) {
		if (r->pos == r->n) {
			if (r->eof)
				break;
			r->n = fread(r->chunk, 1, sizeof(r->chunk), r->f);
			r->pos = 0;
			if (r->n == 0) {
				if (ferror(r->f))
					return CL_EIO;
				r->eof = true;
				break;
			}
			r->total += r->n;
			if (r->total > (r->max_total ? r->max_total : CL_WORKLOAD_MAX_FILE_BYTES))
				return CL_ETOOBIG;
		}
		any = true;
		const char *start = r->chunk + r->pos;
		const char *nl = memchr(start, '\n', r->n - r->pos);
		size_t seg = nl ? (size_t)(nl - start) : r->n - r->pos;
		int rc = cl_buf_append(&r->line, start, seg);
		if (rc)
			return rc == CL_ETOOBIG ? CL_ETOOBIG : CL_ENOMEM;
		r->pos += seg + (nl ? 1 : 0);
		if (nl)
			break;
	}
	if (!any)
		return 0;
	if (!r->line.data && cl_buf_append(&r->line, "", 0) != 0)
		return CL_ENOMEM;
	if (r->line.len && r->line.data[r->line.len - 1] == '\r')
		r->line.data[--r->line.len] = '\0';
	return 1;
}
