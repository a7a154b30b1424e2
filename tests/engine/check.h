/* Comparison assertions for the engine tests that print both operands on failure (cmocka's
 * assert_true prints only the expression).  Include after <cmocka.h>. */
#ifndef CHATLOAD_TEST_ENGINE_CHECK_H
#define CHATLOAD_TEST_ENGINE_CHECK_H

/* check_cmp(a, <, b): integers (as long long). */
#define check_cmp(a, op, b)                                                                        \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (!(a_ op b_))                                                                   \
			fail_msg("%s %s %s: %lld vs %lld", #a, #op, #b, a_, b_);                   \
	} while (0)

/* check_cmpf(a, <, b): doubles. */
#define check_cmpf(a, op, b)                                                                       \
	do {                                                                                       \
		double a_ = (double)(a), b_ = (double)(b);                                         \
		if (!(a_ op b_))                                                                   \
			fail_msg("%s %s %s: %.9g vs %.9g", #a, #op, #b, a_, b_);                   \
	} while (0)

#endif
