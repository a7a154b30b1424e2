/* Process exit codes, fixed for the whole project and documented in the README. */
#ifndef CHATLOAD_EXITCODE_H
#define CHATLOAD_EXITCODE_H

enum cl_exit {
	CL_EXIT_OK = 0,         /* success: run completed, every SLO met */
	CL_EXIT_FAILED = 1,     /* run failed (agent lost, warmup failed, interrupted, I/O) */
	CL_EXIT_USAGE = 2,      /* bad input or usage: scenario errors, unknown flags */
	CL_EXIT_NOT_READY = 3,  /* the target never passed the readiness gate */
	CL_EXIT_SLO_BREACH = 99 /* run completed but an SLO (or compare limit) was breached */
};

#endif
