/* A server restart told by its page's counters going down, whatever their names: engines
 * whose vocabulary has no counter (llama.cpp) and no process_start_time_seconds restart too.
 * A restart sets every counter back, so it takes most of them: one alone going down is not
 * one (llama.cpp types n_busy_slots_per_decode, an average, as a counter).  Each scrape's
 * counters are kept by a 64-bit hash of name and labels. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The samples that only go up while the process lives: counters, a histogram's or summary's
 * _count, an untyped *_total. */
static bool monotonic(const struct cl_prom_sample *s)
{
	size_t n = strlen(s->name);
	if (s->type == CL_PROM_COUNTER)
		return true;
	if (s->type == CL_PROM_HISTOGRAM || s->type == CL_PROM_SUMMARY)
		return n > 6 && strcmp(s->name + n - 6, "_count") == 0;
	return s->type == CL_PROM_UNTYPED && n > 6 && strcmp(s->name + n - 6, "_total") == 0;
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull; /* a separator, so "ab"+"c" != "a"+"bc" */
}

static uint64_t key_of(const struct cl_prom_sample *s)
{
	uint64_t k = fnv(fnv(14695981039346656037ull, s->name), s->labels);
	return k ? k : 1; /* 0 marks an empty slot */
}

static double *find(const struct cli_srv_counters *c, uint64_t k)
{
	if (!c->cap)
		return NULL;
	for (size_t i = k & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		if (c->key[i] == 0)
			return NULL;
		if (c->key[i] == k)
			return &c->val[i];
	}
}

bool cli_srv_counters_update(struct cli_srv_counters *c, const struct cl_prom_page *pg)
{
	size_t n = 0;
	for (size_t i = 0; i < pg->n; i++)
		n += monotonic(&pg->s[i]) && !isnan(pg->s[i].value);
	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	struct cli_srv_counters next = { .cap = cap };
	next.key = calloc(cap, sizeof(*next.key));
	next.val = calloc(cap, sizeof(*next.val));
	if (!next.key || !next.val) { /* out of memory: this scrape tells nothing */
		free(next.key);
		free(next.val);
		return false;
	}
	size_t down = 0, counted = 0; /* of the series that had counted something before */
	for (size_t i = 0; i < pg->n; i++) {
		const struct cl_prom_sample *s = &pg->s[i];
		if (!monotonic(s) || isnan(s->value))
			continue;
		uint64_t k = key_of(s);
		const double *was = find(c, k);
		if (was && *was > 0) {
			counted++;
			down += s->value < *was;
		}
		size_t j = k & (cap - 1);
		while (next.key[j] != 0 && next.key[j] != k)
			j = (j + 1) & (cap - 1);
		next.key[j] = k; /* a repeated series: the last line counts */
		next.val[j] = s->value;
	}
	cli_srv_counters_free(c);
	*c = next;
	return down > 0 && 2 * down > counted;
}

void cli_srv_counters_free(struct cli_srv_counters *c)
{
	free(c->key);
	free(c->val);
	memset(c, 0, sizeof(*c));
}
