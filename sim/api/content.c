/* What a request's text counts for (see content.h): its characters and tokens, its image
 * parts, its prefix-cache blocks and the hashes the truth log names it by. */
#include "content.h"

#include "chatload/err.h"

#include <stdio.h>
#include <string.h>

uint64_t cli_sim_utf8_chars(const char *s, size_t n)
{
	uint64_t chars = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			chars++;
	return chars;
}

uint64_t cl_sim_text_tokens(const char *s, size_t n)
{
	uint64_t tokens = 0, run = 0;
	for (size_t i = 0; i <= n; i++) {
		unsigned char ch = i < n ? (unsigned char)s[i] : ' ';
		bool letter = (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z';
		if (ch >= 0x80) {
			letter = true;
			if ((ch & 0xc0) == 0x80)
				continue; /* a continuation byte is part of its character */
		}
		if (letter) {
			run++;
			continue;
		}
		tokens += (run + 5) / 6;
		run = 0;
		if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
			tokens++;
	}
	return tokens;
}

/* Characters of a message's content (a string, or an array of parts with "text"), and its
 * tokens by the text. */
int cli_sim_content_chars(json_t *content, uint64_t *chars, uint64_t *words)
{
	if (!content || json_is_null(content))
		return 0;
	if (json_is_string(content)) {
		*chars +=
		    cli_sim_utf8_chars(json_string_value(content), json_string_length(content));
		*words +=
		    cl_sim_text_tokens(json_string_value(content), json_string_length(content));
		return 0;
	}
	if (!json_is_array(content))
		return CL_EINVAL;
	size_t i;
	json_t *part;
	json_array_foreach(content, i, part)
	{
		if (!json_is_object(part))
			return CL_EINVAL;
		json_t *text = json_object_get(part, "text");
		if (json_is_string(text)) {
			*chars +=
			    cli_sim_utf8_chars(json_string_value(text), json_string_length(text));
			*words +=
			    cl_sim_text_tokens(json_string_value(text), json_string_length(text));
		}
	}
	return 0;
}

/* ---- image parts (--image-tokens) ---- */

/* Whether url is an http(s) URL or a data URL "data:image/<type>;base64,<base64>", checked
 * without decoding: the base64 alphabet, a length that is a multiple of 4, at most two
 * '=' at the end. */
static bool image_url_ok(const char *url, size_t len)
{
	if ((len > 7 && strncmp(url, "http://", 7) == 0) ||
	    (len > 8 && strncmp(url, "https://", 8) == 0))
		return true;
	static const char head[] = "data:image/";
	if (len < sizeof(head) || strncmp(url, head, sizeof(head) - 1) != 0)
		return false;
	const char *comma = memchr(url, ',', len);
	static const char b64[] = ";base64";
	if (!comma || (size_t)(comma - url) < sizeof(head) - 1 + sizeof(b64) ||
	    strncmp(comma - (sizeof(b64) - 1), b64, sizeof(b64) - 1) != 0)
		return false;
	const char *d = comma + 1;
	size_t n = len - (size_t)(d - url), pad = 0;
	if (n == 0 || n % 4)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)d[i];
		bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			     (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
		if (ch == '=' && i + 2 >= n)
			pad++;
		else if (!alpha || pad)
			return false;
	}
	return true;
}

/*
 * Counts the image parts of a message's content into *images: chat's {"type": "image_url",
 * "image_url": {"url": U} or U} and Responses' {"type": "input_image", "image_url": U} (or
 * a "file_id", counted as it is).  CL_EINVAL, msg filled, for a part whose URL is missing or
 * malformed: a server refuses such a request with 400 before it runs.
 */
int cli_sim_count_images(json_t *content, uint32_t *images, char *msg, size_t n)
{
	size_t i;
	json_t *part;
	if (!json_is_array(content))
		return 0;
	json_array_foreach(content, i, part)
	{
		json_t *type = json_object_get(part, "type");
		if (!json_is_string(type))
			continue;
		const char *t = json_string_value(type);
		bool chat = strcmp(t, "image_url") == 0, resp = strcmp(t, "input_image") == 0;
		if (!chat && !resp)
			continue;
		json_t *u = json_object_get(part, "image_url");
		if (chat && json_is_object(u))
			u = json_object_get(u, "url");
		if (resp && !u && json_is_string(json_object_get(part, "file_id"))) {
			(*images)++;
			continue;
		}
		if (!json_is_string(u) ||
		    !image_url_ok(json_string_value(u), json_string_length(u))) {
			snprintf(msg, n,
				 "content part %zu: image_url must be an http(s) URL or a data URL "
				 "'data:image/<type>;base64,<data>' with valid base64",
				 i);
			return CL_EINVAL;
		}
		(*images)++;
	}
	return 0;
}

/* The message's text into the prefix cache's blocks (prefix.h), a separator after it. */
void cli_sim_feed_prefix(struct cl_sim_prefix_key *k, json_t *content)
{
	if (json_is_string(content)) {
		cl_sim_prefix_feed(k, json_string_value(content), json_string_length(content));
	} else if (json_is_array(content)) {
		size_t i;
		json_t *part;
		json_array_foreach(content, i, part)
		{
			json_t *text = json_object_get(part, "text");
			if (json_is_string(text))
				cl_sim_prefix_feed(k, json_string_value(text),
						   json_string_length(text));
		}
	}
	cl_sim_prefix_feed(k, "\x1e", 1);
}

/* FNV-1a, 64 bits, from h on: how the truth log names texts without carrying them. */
static uint64_t fnv1a_from(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

uint64_t cli_sim_fnv1a(const char *s, size_t n)
{
	return fnv1a_from(0xcbf29ce484222325ULL, s, n);
}

/* The message's role and text into the prompt's hash, each ended by a separator. */
uint64_t cli_sim_fnv_message(uint64_t h, json_t *role, json_t *content)
{
	if (json_is_string(role))
		h = fnv1a_from(h, json_string_value(role), json_string_length(role));
	h = fnv1a_from(h, "\x1e", 1);
	if (json_is_string(content)) {
		h = fnv1a_from(h, json_string_value(content), json_string_length(content));
	} else if (json_is_array(content)) {
		size_t i;
		json_t *part;
		json_array_foreach(content, i, part)
		{
			json_t *text = json_object_get(part, "text");
			if (json_is_string(text))
				h = fnv1a_from(h, json_string_value(text),
					       json_string_length(text));
		}
	}
	return fnv1a_from(h, "\x1e", 1);
}

uint32_t cl_sim_chat_prompt_tokens(uint64_t chars, uint32_t chars_per_token)
{
	uint64_t cpt = chars_per_token ? chars_per_token : 4;
	uint64_t t = (chars + cpt - 1) / cpt;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}
