/* chatload validate: placeholder until the scenario loader lands. */
#include "commands.h"

#include <stdio.h>

int cmd_validate(int argc, char **argv)
{
	fprintf(stderr, "chatload validate: scenario loader not built yet\n");
	return 1;
}
