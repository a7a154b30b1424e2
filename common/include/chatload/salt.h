/* The per-run salt (workload.salt, docs/scenario.md): a tag of 8 hex digits that opens the
 * first message of every request of a run as "[<tag>] ", so no prompt of the run is one a
 * server's prefix cache saw in an earlier run.  Its form is defined here and nowhere else:
 * the coordinator makes the tag once per run and renders it into the bodies
 * (coordinator/workload/), and an agent finds it in a body to put a tag of its own in its
 * place (agent/engine/conv.c, plan.h's retag). */
#ifndef CHATLOAD_SALT_H
#define CHATLOAD_SALT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_SALT_DIGITS     8                      /* hex digits of a tag */
#define CL_SALT_TAG_SIZE   (CL_SALT_DIGITS + 1)   /* a tag and its NUL */
#define CL_SALT_MARK_LEN   (CL_SALT_DIGITS + 2)   /* "[<tag>]", as found in a body */
#define CL_SALT_PREFIX_LEN (CL_SALT_MARK_LEN + 1) /* "[<tag>] ", as rendered */

/* A new tag: CL_SALT_DIGITS lowercase hex digits from getrandom, or from the clock and the
 * process id when there is no entropy (runs are still told apart). */
void cl_salt_new(char tag[CL_SALT_TAG_SIZE]);

/* The tag of the number x: its low 32 bits as CL_SALT_DIGITS lowercase hex digits, the
 * lowest nibble first.  Every tag is written here: cl_salt_new's, and the one an agent puts
 * in place of the run's (agent/engine/conv.c). */
void cl_salt_from_u64(uint64_t x, char tag[CL_SALT_TAG_SIZE]);

/* Whether tag is a tag: exactly CL_SALT_DIGITS hex digits.  NULL and "" are not. */
bool cl_salt_valid(const char *tag);

/* Writes "[<tag>] " and a NUL into out (n >= CL_SALT_PREFIX_LEN + 1) and returns
 * CL_SALT_PREFIX_LEN; its first CL_SALT_MARK_LEN bytes are the mark an agent looks for, the
 * digits at offset 1.  Returns 0 with out "" (when n allows) when tag is not valid or n too
 * small. */
size_t cl_salt_prefix(const char *tag, char *out, size_t n);

#endif
