/* chatload report: placeholder until its module lands. */
#include "commands.h"

#include <stdio.h>

int cmd_report(int argc, char **argv)
{
	fprintf(stderr, "chatload report: not built yet\n");
	return 1;
}
