/* Clocks: monotonic for every measurement, wall clock only for timestamps people read. */
#ifndef CHATLOAD_CLOCK_H
#define CHATLOAD_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds / microseconds.  Never goes backwards; not wall time. */
int64_t cl_mono_ns(void);
int64_t cl_mono_us(void);

/* CLOCK_REALTIME in microseconds since the Unix epoch. */
int64_t cl_wall_us(void);

/* Formats wall_us as ISO-8601 UTC with millisecond precision ("2026-12-02T16:03:50.123Z")
 * into buf (>= 32 bytes).  Returns buf. */
char *cl_wall_iso8601(int64_t wall_us, char *buf, size_t n);

/* Formats wall_us as a compact UTC stamp for file names ("20261202T160350Z"). */
char *cl_wall_stamp(int64_t wall_us, char *buf, size_t n);

/* Sleeps for at least ns nanoseconds, resuming after signals.  Blocks. */
void cl_sleep_ns(int64_t ns);

/* Process CPU time (user + system) in microseconds, for client-health reporting. */
int64_t cl_cpu_us(void);

#endif
