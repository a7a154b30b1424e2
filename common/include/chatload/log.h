/* The one leveled logger: human-oriented lines on stderr; results never go here. */
#ifndef CHATLOAD_LOG_H
#define CHATLOAD_LOG_H

enum cl_log_level {
	CL_LOG_DEBUG = 0,
	CL_LOG_INFO = 1,
	CL_LOG_WARN = 2,
	CL_LOG_ERROR = 3,
	CL_LOG_QUIET = 4
};

/*
 * Sets the program name shown in each line and the level from the environment
 * (CHATLOAD_LOG=debug|info|warn|error|quiet; default info).  Call once from main.
 */
void cl_log_init(const char *program);

/* Adjusts the level: -v (delta -1, more) / -q (delta +1, less); clamped. */
void cl_log_adjust(int delta);
void cl_log_set_level(enum cl_log_level level);
enum cl_log_level cl_log_level(void);

/* Parses "debug", "info", ... Returns 0 or CL_EINVAL. */
int cl_log_parse_level(const char *name, enum cl_log_level *out);

/* Writes one line "chatload: warn: msg\n" atomically (one write) when level is enabled.
 * Thread-safe; never allocates. */
void cl_log(enum cl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define CL_DEBUG(...) cl_log(CL_LOG_DEBUG, __VA_ARGS__)
#define CL_INFO(...)  cl_log(CL_LOG_INFO, __VA_ARGS__)
#define CL_WARN(...)  cl_log(CL_LOG_WARN, __VA_ARGS__)
#define CL_ERROR(...) cl_log(CL_LOG_ERROR, __VA_ARGS__)

#endif
