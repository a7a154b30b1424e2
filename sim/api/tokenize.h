/* The reader of a POST /tokenize body (vLLM's, SGLang's and llama.cpp's endpoint), untrusted
 * JSON via jansson. */
#ifndef CHATLOAD_SIM_TOKENIZE_H
#define CHATLOAD_SIM_TOKENIZE_H

#include <stddef.h>
#include <stdint.h>

/* Decodes a POST /tokenize body: {"prompt": text} (vLLM, SGLang), {"content": text}
 * (llama.cpp) or {"messages": [...]} (vLLM's chat form); *chars gets the Unicode characters
 * of the text (of every message's content), *words its tokens by cl_sim_text_tokens.  0, or
 * CL_EPARSE / CL_EINVAL with msg filled.  Allocates only inside jansson and frees before
 * returning. */
int cl_sim_tokenize_parse(const char *body, size_t len, uint64_t *chars, uint64_t *words, char *msg,
			  size_t n);

#endif
