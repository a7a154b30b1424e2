/* chatload-sim's prefix cache: a prompt's text cut into blocks whose hashes chain, as vLLM
 * hashes KV blocks, so a request finds the blocks an earlier one with the same beginning left. */
#ifndef CHATLOAD_SIM_PREFIX_H
#define CHATLOAD_SIM_PREFIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_SIM_PREFIX_BLOCK  64u        /* bytes of text per block */
#define CL_SIM_PREFIX_BLOCKS 1024u      /* blocks of one prompt looked up (64 KiB of text) */
#define CL_SIM_PREFIX_TABLE  (1u << 16) /* blocks the cache holds; older ones are overwritten */

/* A prompt's chained block hashes, filled while its messages are read.  Zeroed = empty. */
struct cl_sim_prefix_key {
	uint64_t block[CL_SIM_PREFIX_BLOCKS];
	uint32_t chars[CL_SIM_PREFIX_BLOCKS]; /* Unicode characters of each block */
	uint32_t n;                           /* whole blocks */
	uint64_t cur;                         /* hash of the block being filled */
	uint32_t cur_len, cur_chars;
	uint64_t chain; /* hash of every whole block so far */
};

/* Feeds n bytes of message text (messages in order; a separator between them). */
void cl_sim_prefix_feed(struct cl_sim_prefix_key *k, const char *s, size_t n);

struct cl_sim_prefix_cache {
	uint64_t *table;        /* CL_SIM_PREFIX_TABLE slots, 0: empty */
	uint64_t queries, hits; /* prompt tokens looked up, tokens found (vLLM counts tokens) */
};

/* Allocates the table.  0 or CL_ENOMEM. */
int cl_sim_prefix_init(struct cl_sim_prefix_cache *pc);
void cl_sim_prefix_destroy(struct cl_sim_prefix_cache *pc);

/* The prompt's leading blocks found in the cache, as tokens (characters / chars_per_token,
 * at most prompt_tokens), and every block of the prompt stored for those that follow. */
uint32_t cl_sim_prefix_lookup(struct cl_sim_prefix_cache *pc, const struct cl_sim_prefix_key *k,
			      uint32_t prompt_tokens, uint32_t chars_per_token);

#endif
