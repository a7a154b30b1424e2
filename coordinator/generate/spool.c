/* A generate job's spool: a dataset's records, rendered, written as OpenAI Batch lines beside
 * the output, so a dataset job runs through the same streaming passes as a Batch input. */
#include "coordinator/generate/batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The Batch line around a body: custom_id the record's line, then the body as rendered. */
#define SPOOL_HEAD "{\"custom_id\":\"%u\",\"method\":\"POST\",\"url\":\"" CL_GEN_URL "\",\"body\":"

/* Whether a and b name one existing file (a link or another spelling of a path). */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int cl_gen_spool_open(struct cl_gen_spool *sp, const char *output, const char *errors,
		      const char *source, struct cl_err *err)
{
	memset(sp, 0, sizeof(*sp));
	sp->source = source;
	/* The errors file's rule: output without ".jsonl", then a suffix of our own. */
	size_t n = strlen(output);
	int stem = (int)(n > 6 && strcmp(output + n - 6, ".jsonl") == 0 ? n - 6 : n);
	if (asprintf(&sp->path, "%.*s.input.jsonl", stem, output) < 0) {
		sp->path = NULL;
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	}
	if (asprintf(&sp->tmp, "%s.tmp", sp->path) < 0) {
		sp->tmp = NULL;
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	}
	/* Written over at every run: it must never be a file the user keeps. */
	if (strcmp(sp->path, source) == 0 || same_file(sp->path, source) ||
	    strcmp(sp->path, errors) == 0 || same_file(sp->path, errors))
		return cl_err_set(err, CL_EINVAL,
				  "generate: the dataset's requests are written to '%s', which is "
				  "generate.%s: rename the output or that file",
				  sp->path,
				  strcmp(sp->path, errors) == 0 || same_file(sp->path, errors)
				      ? "errors"
				      : "input");
	if (!(sp->f = fopen(sp->tmp, "w")))
		return cl_err_set(err, CL_EIO, "cannot write '%s': %s", sp->tmp, strerror(errno));
	return 0;
}

int cl_gen_spool_add(struct cl_gen_spool *sp, uint32_t line, const char *body, size_t len,
		     struct cl_err *err)
{
	char head[sizeof(SPOOL_HEAD) + 16];
	int hl = snprintf(head, sizeof(head), SPOOL_HEAD, line);
	/* The sending pass refuses a longer line: say so here, naming the record. */
	if ((size_t)hl + len + 1 > CL_GEN_MAX_LINE)
		return cl_err_setpos(err, CL_EINVAL, sp->source, (int)line, 1,
				     "the record's request body is %zu bytes, more than a generate "
				     "job sends (%u MiB)",
				     len, CL_GEN_MAX_LINE >> 20);
	if (fwrite(head, 1, (size_t)hl, sp->f) != (size_t)hl ||
	    fwrite(body, 1, len, sp->f) != len || fputs("}\n", sp->f) == EOF) {
		sp->failed = true;
		return cl_err_set(err, CL_EIO, "cannot write '%s': %s", sp->tmp, strerror(errno));
	}
	sp->lines++;
	return 0;
}

int cl_gen_spool_commit(struct cl_gen_spool *sp, struct cl_err *err)
{
	/* No fsync: every run writes the spool again before reading it, and only this process
	 * reads it, so after a crash nothing trusts what the disk kept of it. */
	int rc = fclose(sp->f);
	sp->f = NULL;
	if (rc != 0) {
		sp->failed = true;
		return cl_err_set(err, CL_EIO, "cannot write '%s': %s", sp->tmp, strerror(errno));
	}
	if (rename(sp->tmp, sp->path) != 0) {
		sp->failed = true;
		return cl_err_set(err, CL_EIO, "cannot rename '%s' to '%s': %s", sp->tmp, sp->path,
				  strerror(errno));
	}
	sp->committed = true;
	return 0;
}

void cl_gen_spool_close(struct cl_gen_spool *sp)
{
	if (sp->f)
		fclose(sp->f);
	if (sp->tmp && !sp->committed)
		unlink(sp->tmp); /* a half-written (or unrenamed) spool goes */
	free(sp->path);
	free(sp->tmp);
	memset(sp, 0, sizeof(*sp));
}
