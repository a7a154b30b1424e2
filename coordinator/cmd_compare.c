/* chatload compare: placeholder until its module lands. */
#include "commands.h"

#include <stdio.h>

int cmd_compare(int argc, char **argv)
{
	fprintf(stderr, "chatload compare: not built yet\n");
	return 1;
}
