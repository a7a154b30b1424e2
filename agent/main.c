/* chatload-agent: placeholder entry point until the control channel lands. */
#include "chatload/log.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	cl_log_init(argv[0]);
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("chatload-agent %s\n", CHATLOAD_VERSION);
		return 0;
	}
	fprintf(stderr, "chatload-agent: not built yet\n");
	return 1;
}
