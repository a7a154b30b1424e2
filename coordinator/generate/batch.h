/* A generate job's files: the OpenAI Batch input read in two streaming passes (checked, then
 * read as the leases need it), the set of custom_ids already answered, and the output and
 * errors files appended whole lines at a time (docs/scenario.md, "Generate jobs"). */
#ifndef CHATLOAD_GENERATE_BATCH_H
#define CHATLOAD_GENERATE_BATCH_H

#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The one endpoint a Batch line may name today. */
#define CL_GEN_URL "/v1/chat/completions"
/* The longest input line read (a body with a long conversation); longer is an error. */
#define CL_GEN_MAX_LINE (16u << 20)
/* The longest custom_id (it travels as X-Request-Id, with "/<attempt>"). */
#define CL_GEN_MAX_ID 500

/*
 * A set of custom_ids, kept as 64-bit hashes (8 bytes an id, open addressing): 900,000 ids
 * take ~16 MiB, not the ids themselves.  Two different ids share a hash with probability
 * about n^2 / 2^65 (2e-8 at a million ids); such a pair would be taken for one id.
 */
struct cl_gen_idset {
	uint64_t *slots; /* 0: empty (a hash of 0 is stored as 1) */
	size_t cap, n;
};
/*
 * A set of line numbers (of the input, or records of a dataset), one bit each: which lines a
 * job still has to send.  The checking pass fills it once, so the sending pass needs no set
 * of ids that grows as it goes: 900,000 lines take 110 KiB, and memory stays flat over the
 * run.  Zeroed is empty.
 */
struct cl_gen_lineset {
	uint64_t *bits;
	uint64_t n_words;
	uint64_t n; /* lines in the set */
};
/* Adds line: 0 or CL_ENOMEM. */
int cl_gen_lineset_add(struct cl_gen_lineset *s, uint64_t line);
bool cl_gen_lineset_has(const struct cl_gen_lineset *s, uint64_t line);
void cl_gen_lineset_free(struct cl_gen_lineset *s);

/* Adds id (len bytes): 1 when added, 0 when already there, CL_ENOMEM. */
int cl_gen_idset_add(struct cl_gen_idset *s, const char *id, size_t len);
bool cl_gen_idset_has(const struct cl_gen_idset *s, const char *id, size_t len);
void cl_gen_idset_free(struct cl_gen_idset *s);

/* What the checking pass found. */
struct cl_gen_scan {
	uint64_t lines;   /* non-blank input lines */
	uint64_t valid;   /* lines that will be sent or are already answered */
	uint64_t invalid; /* reported (skip_invalid: written to errors, or already there) */
	uint64_t present; /* valid lines whose custom_id is already in output or errors */
	uint64_t to_send; /* valid - present */
};

/* A line read by the sending pass. */
struct cl_gen_line {
	uint64_t line_no;
	char *id;   /* custom_id (owned) */
	char *body; /* the body to send: as given, with stream and stream_options.include_usage
		     * (owned, compact JSON text) */
	size_t body_len;
};

struct cl_gen_out;

/*
 * The checking pass: reads path line by line (never whole), and checks each line is a JSON
 * object with a string custom_id (1..CL_GEN_MAX_ID bytes, no control characters), method
 * "POST", url CL_GEN_URL and an object body; a custom_id seen on an earlier line is a
 * duplicate.  Blank lines are skipped.  A bad line fails with "file:line:col: message" in
 * err (CL_EINVAL) unless skip_invalid: then it is written to out's errors file (once: a rerun
 * finds it there) and counted; with skip_invalid and no out (chatload validate, which writes
 * nothing) bad lines are only counted, and the first one's message is left in err while 0
 * is returned.  present is the set of ids already answered (read from output and errors;
 * NULL: none); every valid id is added to seen.  send (NULL: not wanted) gets the line number
 * of every line to send: valid, not present, and the first with its id.  0, CL_EINVAL,
 * CL_EIO, CL_ENOMEM.
 */
int cl_gen_scan(const char *path, const struct cl_gen_idset *present, bool skip_invalid,
		struct cl_gen_out *out, struct cl_gen_idset *seen, struct cl_gen_lineset *send,
		struct cl_gen_scan *scan, struct cl_err *err);

/*
 * One input line (len bytes, NUL-terminated at line[len]) checked as the checking pass does
 * and, when good, turned into what is sent: its custom_id and the body as written with the
 * stream fields added (docs/scenario.md).  0 with *out filled (free with cl_gen_line_free),
 * CL_EINVAL with err naming path:line_no:col, or CL_ENOMEM.  Fuzzed (fuzz_batch).
 */
int cl_gen_line_parse(const char *path, uint64_t line_no, const char *line, size_t len,
		      struct cl_gen_line *out, struct cl_err *err);

/* The sending pass: the input opened again, read as the leases need it. */
struct cl_gen_reader {
	FILE *f;
	const char *path;
	char *buf;
	size_t cap;
	uint64_t line_no;
	bool eof;
};
CL_MUST_CHECK int cl_gen_reader_open(struct cl_gen_reader *r, const char *path, struct cl_err *err);
/*
 * The next line to send: the next line in send (the checking pass's choice: valid, not
 * answered, the first with its id), read and parsed; lines not in it are skipped unparsed.
 * send NULL: every valid line.  1 with *out filled (free with cl_gen_line_free), 0 at the
 * end, or CL_EIO / CL_ENOMEM.
 */
int cl_gen_reader_next(struct cl_gen_reader *r, const struct cl_gen_lineset *send,
		       struct cl_gen_line *out, struct cl_err *err);
void cl_gen_reader_close(struct cl_gen_reader *r);
void cl_gen_line_free(struct cl_gen_line *l);

/*
 * A generate job's spool (input_format a dataset): its records, rendered, as the Batch lines
 * the two passes above read, custom_id each record's line number.  Named for the output:
 * "<output without .jsonl>.input.jsonl".  Written to "<that>.tmp" and renamed when whole, so
 * the name never holds half a spool; every run writes it again (the same records give the
 * same lines).  The job's runner removes it once the job has completed.
 */
struct cl_gen_spool {
	FILE *f;
	char *path, *tmp;
	const char *source; /* the dataset, for messages */
	uint64_t lines;
	bool failed;    /* a write failed (CL_EIO): a full disk, not bad input */
	bool committed; /* renamed to path */
};
/* Opens "<path>.tmp" for writing.  CL_EINVAL when path would be the dataset (source) or the
 * errors file, CL_EIO, CL_ENOMEM; cl_gen_spool_close is safe after any failure. */
CL_MUST_CHECK int cl_gen_spool_open(struct cl_gen_spool *sp, const char *output, const char *errors,
				    const char *source, struct cl_err *err);
/* Appends record `line`'s body (len bytes of JSON object text, written as given).  0,
 * CL_EINVAL (the line would be longer than CL_GEN_MAX_LINE: err names source:line), CL_EIO. */
CL_MUST_CHECK int cl_gen_spool_add(struct cl_gen_spool *sp, uint32_t line, const char *body,
				   size_t len, struct cl_err *err);
/* Closes the file and renames it to path.  0 or CL_EIO. */
int cl_gen_spool_commit(struct cl_gen_spool *sp, struct cl_err *err);
/* Closes; a spool not committed is removed.  Safe on a zeroed or failed sp. */
void cl_gen_spool_close(struct cl_gen_spool *sp);

/*
 * The output and errors files.  Opening repairs a half-written last line of each (a crash
 * in the middle of a write: the bytes after the last newline are cut off, and said), then
 * reads every custom_id in them into done.  Lines are appended whole (one write each, the
 * file opened O_APPEND) and fsync'd at least every sync_every_us and on close.
 */
struct cl_gen_out {
	int fd_out, fd_err;
	const char *path_out, *path_err;
	int64_t sync_every_us, last_sync_us;
	bool dirty;
	uint64_t repaired_bytes;       /* cut off half-written lines, both files */
	uint64_t out_lines, err_lines; /* lines found when opened */
	uint64_t seq;                  /* for the line ids */
	char id_stem[24];
};
/* 0, or CL_EIO / CL_EINVAL (a line that is not a Batch output line, with file:line) /
 * CL_ENOMEM; cl_gen_out_close is safe after any failure. */
CL_MUST_CHECK int cl_gen_out_open(struct cl_gen_out *o, const char *path_out, const char *path_err,
				  struct cl_gen_idset *done, struct cl_err *err);
/* Appends a success line: body is the chat.completion (JSON object text, checked).  0,
 * CL_EINVAL (body not a JSON object), CL_EIO (with errno's words: a full disk). */
CL_MUST_CHECK int cl_gen_out_success(struct cl_gen_out *o, const char *custom_id, int status,
				     const char *request_id, const char *body, struct cl_err *err);
/* Appends an error line to the errors file: code and message say why; status 0 when no
 * response came; line_no > 0 names an input line (a bad one). */
CL_MUST_CHECK int cl_gen_out_failure(struct cl_gen_out *o, const char *custom_id, int status,
				     const char *request_id, const char *code, const char *message,
				     uint64_t line_no, struct cl_err *err);
/* fsyncs both files when anything was written since the last sync and at least
 * sync_every_us passed (force: now).  0 or CL_EIO. */
CL_MUST_CHECK int cl_gen_out_sync(struct cl_gen_out *o, bool force, struct cl_err *err);
/* Syncs and closes; safe on a zeroed or failed o (fds < 0 or 0 as never opened). */
CL_MUST_CHECK int cl_gen_out_close(struct cl_gen_out *o, struct cl_err *err);

#endif
