/* chatload-sim's prefix cache (prefix.h). */
#include "prefix.h"

#include "chatload/err.h"

#include <stdlib.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME  0x100000001b3ULL

void cl_sim_prefix_feed(struct cl_sim_prefix_key *k, const char *s, size_t n)
{
	if (k->cur_len == 0 && k->cur == 0)
		k->cur = FNV_OFFSET;
	for (size_t i = 0; i < n && k->n < CL_SIM_PREFIX_BLOCKS; i++) {
		unsigned char c = (unsigned char)s[i];
		k->cur = (k->cur ^ c) * FNV_PRIME;
		k->cur_len++;
		k->cur_chars += (c & 0xc0) != 0x80;
		if (k->cur_len == CL_SIM_PREFIX_BLOCK) {
			/* A block's identity includes every block before it, as in vLLM. */
			k->chain = (k->chain ^ k->cur) * FNV_PRIME + 0x9e3779b97f4a7c15ULL;
			k->block[k->n] = k->chain | 1; /* never 0, the empty slot */
			k->chars[k->n] = k->cur_chars;
			k->n++;
			k->cur = FNV_OFFSET;
			k->cur_len = k->cur_chars = 0;
		}
	}
}

int cl_sim_prefix_init(struct cl_sim_prefix_cache *pc)
{
	pc->table = calloc(CL_SIM_PREFIX_TABLE, sizeof(uint64_t));
	return pc->table ? 0 : CL_ENOMEM;
}

void cl_sim_prefix_destroy(struct cl_sim_prefix_cache *pc)
{
	free(pc->table);
	pc->table = NULL;
}

static uint64_t *slot(struct cl_sim_prefix_cache *pc, uint64_t h)
{
	return &pc->table[(h >> 17) & (CL_SIM_PREFIX_TABLE - 1)];
}

uint32_t cl_sim_prefix_lookup(struct cl_sim_prefix_cache *pc, const struct cl_sim_prefix_key *k,
			      uint32_t prompt_tokens, uint32_t chars_per_token)
{
	pc->queries += prompt_tokens;
	if (!pc->table)
		return 0;
	uint64_t chars = 0;
	uint32_t i = 0;
	for (; i < k->n && *slot(pc, k->block[i]) == k->block[i]; i++)
		chars += k->chars[i];
	for (uint32_t j = i; j < k->n; j++)
		*slot(pc, k->block[j]) = k->block[j];
	uint64_t tokens = chars / (chars_per_token ? chars_per_token : 4);
	if (tokens > prompt_tokens)
		tokens = prompt_tokens;
	pc->hits += tokens;
	return (uint32_t)tokens;
}
