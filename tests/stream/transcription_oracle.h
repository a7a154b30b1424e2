/* The oracle of the transcription decoder (client/stream/transcription.c): its JSON verdict
 * against the chat chunk decoder's, its fields and not-an-answer verdict against jansson's
 * tree, by transcription.h's rules.  Shared by transcription_decode_test and
 * fuzz_transcription. */
#ifndef CHATLOAD_TEST_TRANSCRIPTION_ORACLE_H
#define CHATLOAD_TEST_TRANSCRIPTION_ORACLE_H

#include "chunk_oracle.h"
#include "client/stream/transcription.h"

#include <stdint.h>

/* What cl_transcription_decode should say of root; NULL when it is an answer (w filled). */
static inline const char *transcription_expect(json_t *root, struct cl_transcription *w)
{
	memset(w, 0, sizeof(*w));
	w->usage_seconds = -1;
	if (!json_is_object(root))
		return "top";
	json_t *text = json_object_get(root, "text"), *usage = json_object_get(root, "usage");
	json_t *err = json_object_get(root, "error");
	if (ORACLE_WRONG(text, json_is_string(text)))
		return "text";
	w->has_text = json_is_string(text);
	if (ORACLE_WRONG(usage, json_is_object(usage)))
		return "usage";
	if (json_is_object(usage)) {
		json_t *s = json_object_get(usage, "seconds");
		if (ORACLE_WRONG(s, oracle_count_ok(s)))
			return "seconds";
		w->usage_seconds = oracle_count(s);
	}
	if (ORACLE_WRONG(err, json_is_object(err) || json_is_string(err)))
		return "error";
	if (json_is_object(err) || json_is_string(err)) {
		w->is_error = true;
		json_t *c = json_is_object(err) ? json_object_get(err, "code") : NULL;
		if (json_is_integer(c) && json_integer_value(c) >= INT32_MIN &&
		    json_integer_value(c) <= INT32_MAX)
			w->error_code = (int)json_integer_value(c);
	}
	if (!w->has_text && !w->is_error)
		return "nothing";
	return NULL;
}

/* Checks one decode (rc, t) of data: NULL, or what disagreed (static or in detail). */
static inline const char *transcription_oracle_check(const char *data, size_t len, int rc,
						     const struct cl_transcription *t,
						     char *detail, size_t n)
{
	struct cl_chunk ref;
	int ref_rc = cl_chunk_decode(data, len, &ref);
	if (rc != 0 && rc != CL_EPARSE && rc != CL_EPROTO)
		return "a return code outside 0, CL_EPARSE, CL_EPROTO";
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0)
		return rc == CL_EPARSE ? NULL : "[DONE] misread";
	if ((rc == CL_EPARSE) != (ref_rc == CL_EPARSE)) {
		snprintf(detail, n, "JSON verdict %d, the chat decoder's %d", rc, ref_rc);
		return detail;
	}
	if (rc == CL_EPARSE)
		return NULL;
	json_error_t jerr;
	json_t *root = json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!root)
		return NULL; /* one of the divergences chunk_oracle.h names */
	if (oracle_depth(root) > CL_CHUNK_MAX_DEPTH) {
		json_decref(root);
		return NULL;
	}
	struct cl_transcription w;
	const char *why = transcription_expect(root, &w), *bad = NULL;
	json_decref(root);
	if (!why && rc == 0) {
		if (t->has_text != w.has_text)
			bad = "text";
		else if (t->usage_seconds != w.usage_seconds)
			bad = "usage";
		else if (t->is_error != w.is_error || t->error_code != w.error_code)
			bad = "error";
	}
	if (bad) {
		snprintf(detail, n, "accepted with the wrong %s", bad);
		return detail;
	}
	if ((why != NULL) != (rc == CL_EPROTO)) {
		snprintf(detail, n, "rc %d (%s), jansson's tree says %s", rc,
			 t->malformed ? t->malformed : "-", why ? why : "an answer");
		return detail;
	}
	return NULL;
}

/* One fuzz input: pointers inside the input, the oracle agrees.  Aborts on a finding. */
static inline void transcription_fuzz_one(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct cl_transcription t;
	char detail[256];
	int rc = cl_transcription_decode(s, size, &t);
	if (t.error_msg && (t.error_msg < s || t.error_msg + t.error_msg_len > s + size))
		abort();
	if (t.text_bytes > size)
		abort();
	const char *bad = transcription_oracle_check(s, size, rc, &t, detail, sizeof(detail));
	if (bad) {
		fprintf(stderr, "oracle: %s\n", bad);
		abort();
	}
}

#endif
