/* A shared library that leaks one block at load time, for leak_check_test: preloaded into a
 * sanitized chatload program it proves that LeakSanitizer runs in the processes the tests
 * start and that its report reaches the test.  Never linked into anything. */
#include <stdlib.h>

void *volatile leak_inject_sink;

__attribute__((constructor)) static void leak_one_block(void)
{
	leak_inject_sink = malloc(4242);
	leak_inject_sink = NULL; /* the only pointer to it is gone: a leak */
}
