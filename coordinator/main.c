/* chatload: the coordinator's entry point; dispatches to one subcommand. */
#include "cmd/commands.h"

#include "chatload/exitcode.h"
#include "chatload/log.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	bool libcurl; /* calls libcurl in this process: main initialises it (libraries never do) */
};

static const struct command commands[] = {
	{ "init", cl_cmd_init, "write a commented scenario to start from (sweep, soak, ...)",
	  false },
	/* run's HTTP happens in the agents (readiness, load), other processes */
	{ "run", cl_cmd_run, "run a scenario: readiness, warmup, stages, results", false },
	{ "bench", cl_cmd_bench, "measure a server from flags alone (writes the scenario it runs)",
	  false },
	{ "validate", cl_cmd_validate, "check scenarios and print the resolved plan", false },
	{ "probe", cl_cmd_probe, "run the readiness gate alone against a URL", true },
	{ "report", cl_cmd_report, "re-render a saved results.json as table, csv, md or html",
	  false },
	{ "compare", cl_cmd_compare, "compare two results.json files and flag regressions", false },
	{ "history", cl_cmd_history, "judge a nightly job's nights as a trend and find steps",
	  false },
};

/* Runs one command, with libcurl initialised once around it when it wants libcurl (before
 * any thread starts, as curl_global_init requires). */
static int run_command(const struct command *c, int argc, char **argv)
{
	if (c->libcurl) {
		CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
		if (rc != CURLE_OK) {
			fprintf(stderr, "chatload: cannot initialise libcurl: %s\n",
				curl_easy_strerror(rc));
			return CL_EXIT_FAILED;
		}
	}
	int code = c->fn(argc, argv);
	if (c->libcurl)
		curl_global_cleanup();
	return code;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: chatload [-v|-q] COMMAND [ARGS...]\n\n"
		     "A distributed load generator for OpenAI-compatible LLM endpoints.\n\n"
		     "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'chatload COMMAND --help' describes one command.\n"
		     "exit codes: 0 ok, 1 run failed, 2 bad input or usage, 3 target not ready,\n"
		     "            99 SLO breached (compare: a regression; history: a step)\n");
}

int main(int argc, char **argv)
{
	cl_log_init(argv[0]);
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
			cl_log_adjust(-1);
		} else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
			cl_log_adjust(+1);
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("chatload %s\n", CHATLOAD_VERSION);
			return CL_EXIT_OK;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return CL_EXIT_OK;
		} else {
			fprintf(stderr, "chatload: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return CL_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return CL_EXIT_USAGE;
	}
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
		if (strcmp(argv[i], commands[c].name) == 0)
			return run_command(&commands[c], argc - i, argv + i);
	}
	fprintf(stderr, "chatload: unknown command '%s'\n", argv[i]);
	usage(stderr);
	return CL_EXIT_USAGE;
}
