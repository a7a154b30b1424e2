/* The coordinator's subcommands; each parses its own flags and returns a process exit code
 * (enum cl_exit). */
#ifndef CHATLOAD_COMMANDS_H
#define CHATLOAD_COMMANDS_H

int cl_cmd_init(int argc, char **argv);
int cl_cmd_run(int argc, char **argv);
int cl_cmd_bench(int argc, char **argv);
int cl_cmd_validate(int argc, char **argv);
int cl_cmd_probe(int argc, char **argv);
int cl_cmd_report(int argc, char **argv);
int cl_cmd_compare(int argc, char **argv);
int cl_cmd_history(int argc, char **argv);

#endif
