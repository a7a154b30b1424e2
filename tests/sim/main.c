/* chatload-sim: placeholder until the simulator lands. */
#include <stdio.h>

int main(void)
{
	fprintf(stderr, "chatload-sim: not built yet\n");
	return 1;
}
