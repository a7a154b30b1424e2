/* Private to common: typed, bounded reads of decoded msgpack objects, the one place a hostile
 * msgpack value becomes a C value (used by hist_wire.c, metrics_wire.c and the wire codec). */
#ifndef CHATLOAD_MPK_READ_H
#define CHATLOAD_MPK_READ_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every reader checks the object's type (and range) before it reads a value, writes *out
 * only on success and returns false otherwise, so a caller can word its own message.  None
 * allocates.  Policy (which fields exist, what range a field allows, whether a float must be
 * finite) stays with the caller: these only say what the bytes are.
 */

/* True when o is a string equal to name (byte for byte, no NUL tricks: lengths must match). */
bool cli_mpk_str_is(const msgpack_object *o, const char *name);
/* A string's bytes (not NUL-terminated); false when o is not a string. */
bool cli_mpk_str(const msgpack_object *o, const char **ptr, size_t *len);
/* A string's or a binary's bytes (a body may be either); false for anything else. */
bool cli_mpk_bytes(const msgpack_object *o, const char **ptr, size_t *len);
/* A non-negative integer. */
bool cli_mpk_u64(const msgpack_object *o, uint64_t *out);
/* Any integer representable as int64 (a positive integer above INT64_MAX is refused). */
bool cli_mpk_i64(const msgpack_object *o, int64_t *out);
/* A float, or an integer converted to double (other encoders pack 2.0 as 2).  The value is
 * not checked: the caller decides whether NaN, infinities or negatives are acceptable. */
bool cli_mpk_f64(const msgpack_object *o, double *out);
/* A boolean. */
bool cli_mpk_bool(const msgpack_object *o, bool *out);

/* Index i in [0, n) whose name(i) equals the string o; -1 when o is not a string or no name
 * matches.  name(i) may return NULL (skipped). */
int cli_mpk_str_index(const msgpack_object *o, const char *(*name)(int), int n);

/* "a string", "an integer", "a map" ...: what o is, for messages. */
const char *cli_mpk_type_word(const msgpack_object *o);
/* Copies the hostile string o into buf (size n, at least 8) for a message: at most 48 bytes,
 * non-printable bytes as '?', "..." when cut; "<non-string>" when o is not a string.
 * Returns buf. */
const char *cli_mpk_quote(const msgpack_object *o, char *buf, size_t n);

#endif
