/* A set of custom_ids as 64-bit hashes (the ids already answered and those seen in the input
 * of a generate job, in 8 bytes an id), and a set of line numbers as bits (the lines still to
 * send). */
#include "coordinator/generate/batch.h"

#include "chatload/rng.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a 64 then a splitmix64 finish, so short ids that differ in one byte spread over the
 * table. */
static uint64_t hash_id(const char *id, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)id[i];
		h *= 0x100000001b3ull;
	}
	h = cl_mix64(h);
	return h ? h : 1;
}

static int grow(struct cl_gen_idset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 1024;
	uint64_t *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return CL_ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		uint64_t h = s->slots[i];
		if (!h)
			continue;
		size_t k = (size_t)h & (cap - 1);
		while (slots[k])
			k = (k + 1) & (cap - 1);
		slots[k] = h;
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int cl_gen_idset_add(struct cl_gen_idset *s, const char *id, size_t len)
{
	if ((s->n + 1) * 2 > s->cap && grow(s) != 0) /* at most half full */
		return CL_ENOMEM;
	uint64_t h = hash_id(id, len);
	size_t k = (size_t)h & (s->cap - 1);
	while (s->slots[k]) {
		if (s->slots[k] == h)
			return 0;
		k = (k + 1) & (s->cap - 1);
	}
	s->slots[k] = h;
	s->n++;
	return 1;
}

bool cl_gen_idset_has(const struct cl_gen_idset *s, const char *id, size_t len)
{
	if (!s || !s->cap)
		return false;
	uint64_t h = hash_id(id, len);
	size_t k = (size_t)h & (s->cap - 1);
	while (s->slots[k]) {
		if (s->slots[k] == h)
			return true;
		k = (k + 1) & (s->cap - 1);
	}
	return false;
}

int cl_gen_lineset_add(struct cl_gen_lineset *s, uint64_t line)
{
	uint64_t w = line / 64;
	if (w >= s->n_words) {
		/* Lines come in order, so doubling makes the growth amortised and the slack at
		 * most half of a set that is one bit a line anyway. */
		uint64_t n = s->n_words ? s->n_words * 2 : 1024;
		while (n <= w)
			n *= 2;
		uint64_t *b = realloc(s->bits, n * sizeof(*b));
		if (!b)
			return CL_ENOMEM;
		memset(b + s->n_words, 0, (n - s->n_words) * sizeof(*b));
		s->bits = b;
		s->n_words = n;
	}
	uint64_t m = 1ull << (line % 64);
	s->n += !(s->bits[w] & m);
	s->bits[w] |= m;
	return 0;
}

bool cl_gen_lineset_has(const struct cl_gen_lineset *s, uint64_t line)
{
	uint64_t w = line / 64;
	return s && w < s->n_words && (s->bits[w] >> (line % 64) & 1);
}

void cl_gen_lineset_free(struct cl_gen_lineset *s)
{
	free(s->bits);
	memset(s, 0, sizeof(*s));
}

void cl_gen_idset_free(struct cl_gen_idset *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = s->n = 0;
}
