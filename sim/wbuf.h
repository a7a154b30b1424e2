/* A bounded writer into a fixed buffer: chatload-sim's text rendering never allocates and
 * never writes past the end (an overflow is remembered and the output is discarded). */
#ifndef CHATLOAD_SIM_WBUF_H
#define CHATLOAD_SIM_WBUF_H

#include "chatload/assert.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct cl_sim_w {
	char *p;
	char *end;
	bool overflow;
};

static inline void cl_sim_w_init(struct cl_sim_w *w, char *buf, size_t cap)
{
	w->p = buf;
	w->end = buf + cap;
	w->overflow = false;
}

static inline void cl_sim_w_put(struct cl_sim_w *w, const char *s, size_t n)
{
	if ((size_t)(w->end - w->p) < n) {
		w->overflow = true;
		return;
	}
	memcpy(w->p, s, n);
	w->p += n;
}

/* String literals only: the length is known at compile time. */
#define CL_SIM_W_LIT(w, lit) cl_sim_w_put((w), (lit), sizeof(lit) - 1)

static inline void cl_sim_w_str(struct cl_sim_w *w, const char *s)
{
	cl_sim_w_put(w, s, strlen(s));
}

static inline void cl_sim_w_u64(struct cl_sim_w *w, uint64_t v)
{
	char tmp[24];
	char *q = tmp + sizeof(tmp);
	do {
		*--q = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	cl_sim_w_put(w, q, (size_t)(tmp + sizeof(tmp) - q));
}

static inline void cl_sim_w_i64(struct cl_sim_w *w, int64_t v)
{
	if (v < 0) {
		CL_SIM_W_LIT(w, "-");
		cl_sim_w_u64(w, (uint64_t)0 - (uint64_t)v);
	} else {
		cl_sim_w_u64(w, (uint64_t)v);
	}
}

/* Writes s as a quoted JSON string.  Control characters and every byte >= 0x80 become
 * \u00XX, so the output is ASCII and valid JSON whatever bytes a client sent. */
static inline void cl_sim_w_json(struct cl_sim_w *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	CL_SIM_W_LIT(w, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			cl_sim_w_put(w, e, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			cl_sim_w_put(w, e, 6);
		} else {
			cl_sim_w_put(w, (const char *)&s[i], 1);
		}
	}
	CL_SIM_W_LIT(w, "\"");
}

/* The bytes written since start (the buffer w was set up on).  Checked once per rendering,
 * not in cl_sim_w_put, which runs for every byte of an escaped string. */
static inline size_t cl_sim_w_len(const struct cl_sim_w *w, const char *start)
{
	CL_ASSERT(start <= w->p && w->p <= w->end);
	return (size_t)(w->p - start);
}

#endif
