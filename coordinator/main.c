/* chatload: the coordinator's entry point; dispatches to one subcommand. */
#include "commands.h"

#include "chatload/exitcode.h"
#include "chatload/log.h"

#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "run", cmd_run, "run a scenario: readiness, warmup, stages, results" },
	{ "validate", cmd_validate, "check scenarios and print the resolved plan" },
	{ "probe", cmd_probe, "run the readiness gate alone against a URL" },
	{ "report", cmd_report, "re-render a saved results.json as table, csv, md or html" },
	{ "compare", cmd_compare, "compare two results.json files and flag regressions" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: chatload [-v|-q] COMMAND [ARGS...]\n\n"
		     "A distributed load generator for OpenAI-compatible LLM endpoints.\n\n"
		     "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'chatload COMMAND --help' describes one command.\n"
		     "exit codes: 0 ok, 1 run failed, 2 bad input or usage, 3 target not ready,\n"
		     "            99 SLO breached\n");
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
			return commands[c].fn(argc - i, argv + i);
	}
	fprintf(stderr, "chatload: unknown command '%s'\n", argv[i]);
	usage(stderr);
	return CL_EXIT_USAGE;
}
