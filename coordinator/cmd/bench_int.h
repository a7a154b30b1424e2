/* What chatload bench's two files share: the flags as read (bench.c) and the scenario text
 * they become (bench_scenario.c). */
#ifndef CHATLOAD_CMD_BENCH_INT_H
#define CHATLOAD_CMD_BENCH_INT_H

#include "chatload/buf.h"

#include <stddef.h>

#define CLI_BENCH_MAX_LINES 256  /* lines of the scenario text; it writes about 40 */
#define CLI_BENCH_MAX_VALUE 2048 /* characters of one flag's value */

#define DEFAULT_CONCURRENCY   "1,8,16,32,64"
#define DEFAULT_DURATION      "30s"
#define DEFAULT_INPUT_TOKENS  "1024"
#define DEFAULT_OUTPUT_TOKENS "128"
#define DEFAULT_WARMUP        "8"
#define DEFAULT_NAME          "bench"

/* Every flag, in the order of bench.c's table of them. */
enum bench_opt {
	O_URL,
	O_MODEL,
	O_CONCURRENCY,
	O_RATE,
	O_BURSTINESS,
	O_DURATION,
	O_REQUESTS,
	O_DATASET,
	O_INPUT_TOKENS,
	O_OUTPUT_TOKENS,
	O_API,
	O_SEED,
	O_IGNORE_EOS,
	O_NO_IGNORE_EOS,
	O_API_KEY_ENV,
	O_WARMUP,
	O_READY_TIMEOUT,
	O_SLO,
	O_AGENTS,
	O_AGENTS_LISTEN,
	O_AGENTS_EXPECT,
	O_AGENTS_TOKEN_FILE,
	O_AGENTS_TLS_CERT,
	O_AGENTS_TLS_KEY,
	O_INSECURE,
	O_CLIENT_BOUND,
	O_NAME,
	O_OUT,
	O_METRICS_LISTEN,
	O_WEB,
	O_HELP,
	O__COUNT
};

/* What the command line said: each flag's value and the name it was given by. */
struct bench_flags {
	const char *val[O__COUNT];
	const char *given[O__COUNT]; /* the spelling typed, for messages; NULL: not given */
};

/* The scenario text as it is built, with the flag behind each line (-1: none) so that a
 * loader's complaint about a line can name the flag. */
struct bench_text {
	struct cl_buf b;
	int tag[CLI_BENCH_MAX_LINES + 1];
	size_t lines;
	int rc;
};

/* The flag as the user typed it (an alias too), else its first name. */
const char *cli_bench_flag_name(const struct bench_flags *f, enum bench_opt id);

/* The scenario the flags describe, into t (whose buffer the caller initialised): 0, or -1
 * after saying on stderr which flag's value is wrong. argv is written into its first comment. */
int cli_bench_build(struct bench_text *t, const struct bench_flags *f, int argc, char **argv);

/* Loads t's text with the scenario loader, as chatload run will load the file: 0, or -1 after
 * printing each problem against the flag behind its line. Writes nothing. */
int cli_bench_check(const struct bench_text *t, const struct bench_flags *f);

#endif
