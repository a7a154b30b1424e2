/* The per-run salt's tag and its rendered form (see chatload/salt.h). */
#include "chatload/salt.h"

#include "chatload/rng.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void cl_salt_from_u64(uint64_t x, char tag[CL_SALT_TAG_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < CL_SALT_DIGITS; i++)
		tag[i] = hex[(x >> (4 * i)) & 15];
	tag[CL_SALT_DIGITS] = '\0';
}

void cl_salt_new(char tag[CL_SALT_TAG_SIZE])
{
	uint32_t r;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		/* No entropy: the clock and the process still tell runs apart. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x =
		    ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40);
		r = (uint32_t)cl_splitmix64(&x);
	}
	cl_salt_from_u64(r, tag);
}

bool cl_salt_valid(const char *tag)
{
	if (!tag)
		return false;
	for (size_t i = 0; i < CL_SALT_DIGITS; i++) {
		char c = tag[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return false;
	}
	return tag[CL_SALT_DIGITS] == '\0';
}

size_t cl_salt_prefix(const char *tag, char *out, size_t n)
{
	if (!cl_salt_valid(tag) || n < CL_SALT_PREFIX_LEN + 1) {
		if (n)
			out[0] = '\0';
		return 0;
	}
	out[0] = '[';
	memcpy(out + 1, tag, CL_SALT_DIGITS);
	out[CL_SALT_DIGITS + 1] = ']';
	out[CL_SALT_DIGITS + 2] = ' ';
	out[CL_SALT_PREFIX_LEN] = '\0';
	return CL_SALT_PREFIX_LEN;
}
