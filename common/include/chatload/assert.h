/* CL_ASSERT: an invariant the code relies on, checked where it is relied on, in every build
 * (as nng's NNI_ASSERT).  Not for input: bad input gets an error code and a message, never
 * an assertion.  Keep conditions cheap (a compare, an index against a bound): they stay on in
 * release builds, so nothing costly goes on the per-request or per-chunk path. */
#ifndef CHATLOAD_ASSERT_H
#define CHATLOAD_ASSERT_H

/* Writes "<program>: assertion failed: <cond> (<file>:<line>, <func>)" to stderr in one
 * write, whatever the log level, then abort()s.  Async-signal-safe apart from abort()'s
 * own handlers; never allocates. */
_Noreturn void cl_assert_fail(const char *cond, const char *file, int line, const char *func);

#define CL_ASSERT(cond) ((cond) ? (void)0 : cl_assert_fail(#cond, __FILE__, __LINE__, __func__))

#endif
