/* chatload probe: placeholder until its module lands. */
#include "commands.h"

#include <stdio.h>

int cmd_probe(int argc, char **argv)
{
	fprintf(stderr, "chatload probe: not built yet\n");
	return 1;
}
