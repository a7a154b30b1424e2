/* What the text of a request counts for: its characters and tokens (the prompt token rules of
 * docs/simulator.md), its image parts, its prefix-cache blocks and the FNV-1a hashes the truth
 * log names it by.  Pure functions over jansson values the body reader (chat.c) holds. */
#ifndef CHATLOAD_SIM_CONTENT_H
#define CHATLOAD_SIM_CONTENT_H

#include "sim/sched/prefix.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ceil(chars / chars_per_token) (0: 4): the prompt token rule (docs/simulator.md). */
uint32_t cl_sim_chat_prompt_tokens(uint64_t chars, uint32_t chars_per_token);

/* The --word-tokens rule over s[0..n): a run of ASCII letters (or of non-ASCII characters)
 * is one token per 6 characters begun, every digit and other non-space character is one,
 * whitespace is none.  A tokenizer whose characters per token depend on the text. */
uint64_t cl_sim_text_tokens(const char *s, size_t n);

/* Unicode characters of the UTF-8 text s[0..n) (continuation bytes are not counted). */
uint64_t cli_sim_utf8_chars(const char *s, size_t n);

/* Adds the characters of a message's content (absent, null, a string, or an array of parts
 * whose "text" strings count) to *chars and its tokens by cl_sim_text_tokens to *words.
 * 0, or CL_EINVAL for any other content (a part that is not an object). */
int cli_sim_content_chars(json_t *content, uint64_t *chars, uint64_t *words);

/*
 * Counts the image parts of a message's content into *images: chat's {"type": "image_url",
 * "image_url": {"url": U} or U} and Responses' {"type": "input_image", "image_url": U} (or
 * a "file_id", counted as it is).  CL_EINVAL, msg (size n) filled, for a part whose URL is
 * missing or malformed (an http(s) URL, or a data URL with valid base64): a server refuses
 * such a request with 400 before it runs.
 */
int cli_sim_count_images(json_t *content, uint32_t *images, char *msg, size_t n);

/* Feeds a message's text (a string, or its parts' "text") into the prefix cache's blocks
 * (prefix.h), a separator 0x1e after it. */
void cli_sim_feed_prefix(struct cl_sim_prefix_key *k, json_t *content);

/* FNV-1a 64 of s[0..n) from the standard offset basis. */
uint64_t cli_sim_fnv1a(const char *s, size_t n);

/* h extended by the message's role (a string, or NULL) and text (a string, or its parts'
 * "text"), each ended by 0x1e: how the truth log's prompt_fnv names a prompt. */
uint64_t cli_sim_fnv_message(uint64_t h, json_t *role, json_t *content);

#endif
