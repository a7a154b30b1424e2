/* Typed, bounded reads of decoded msgpack objects: the one msgpack field reader of common. */
#include "mpk_read.h"

#include <stdio.h>
#include <string.h>

bool cli_mpk_str_is(const msgpack_object *o, const char *name)
{
	size_t n = strlen(name);
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
	       memcmp(o->via.str.ptr, name, n) == 0;
}

bool cli_mpk_str(const msgpack_object *o, const char **ptr, size_t *len)
{
	if (o->type != MSGPACK_OBJECT_STR)
		return false;
	*ptr = o->via.str.ptr;
	*len = o->via.str.size;
	return true;
}

bool cli_mpk_bytes(const msgpack_object *o, const char **ptr, size_t *len)
{
	if (o->type == MSGPACK_OBJECT_BIN) {
		*ptr = o->via.bin.ptr;
		*len = o->via.bin.size;
		return true;
	}
	return cli_mpk_str(o, ptr, len);
}

bool cli_mpk_u64(const msgpack_object *o, uint64_t *out)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return false;
	*out = o->via.u64;
	return true;
}

bool cli_mpk_i64(const msgpack_object *o, int64_t *out)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (o->via.u64 > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)o->via.u64;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = o->via.i64;
		return true;
	}
	return false;
}

bool cli_mpk_f64(const msgpack_object *o, double *out)
{
	switch (o->type) {
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		*out = o->via.f64;
		return true;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		*out = (double)o->via.u64;
		return true;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		*out = (double)o->via.i64;
		return true;
	default:
		return false;
	}
}

bool cli_mpk_bool(const msgpack_object *o, bool *out)
{
	if (o->type != MSGPACK_OBJECT_BOOLEAN)
		return false;
	*out = o->via.boolean;
	return true;
}

int cli_mpk_str_index(const msgpack_object *o, const char *(*name)(int), int n)
{
	if (o->type != MSGPACK_OBJECT_STR)
		return -1;
	for (int i = 0; i < n; i++) {
		const char *s = name(i);
		if (s && cli_mpk_str_is(o, s))
			return i;
	}
	return -1;
}

const char *cli_mpk_type_word(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return "nil";
	case MSGPACK_OBJECT_BOOLEAN:
		return "a boolean";
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return "an integer";
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return "a negative integer";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "a float";
	case MSGPACK_OBJECT_STR:
		return "a string";
	case MSGPACK_OBJECT_BIN:
		return "binary";
	case MSGPACK_OBJECT_ARRAY:
		return "an array";
	case MSGPACK_OBJECT_MAP:
		return "a map";
	case MSGPACK_OBJECT_EXT:
		return "an extension";
	}
	return "unknown";
}

const char *cli_mpk_quote(const msgpack_object *o, char *buf, size_t n)
{
	if (o->type != MSGPACK_OBJECT_STR) {
		snprintf(buf, n, "<non-string>");
		return buf;
	}
	size_t len = o->via.str.size;
	size_t max = n - 4 < 48 ? n - 4 : 48;
	size_t j = 0;
	for (size_t i = 0; i < len && j < max; i++) {
		unsigned char c = (unsigned char)o->via.str.ptr[i];
		buf[j++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (len > max) {
		memcpy(buf + j, "...", 3);
		j += 3;
	}
	buf[j] = '\0';
	return buf;
}
