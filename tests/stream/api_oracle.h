/* Oracles for the decoders of the other APIs (completions text chunks, Responses events,
 * Messages events, embeddings answers): their JSON verdict against the chat chunk decoder's
 * (the same scanner, itself proven against jansson by chunk_oracle.h), their fields against
 * jansson's tree. */
#ifndef CHATLOAD_TEST_API_ORACLE_H
#define CHATLOAD_TEST_API_ORACLE_H

#include "chunk_oracle.h"
#include "client/stream/embedding.h"
#include "client/stream/error.h"
#include "client/stream/event.h"
#include "client/stream/messages.h"
#include "client/stream/responses.h"
#include "messages_oracle.h"
#include "client/stream/sse.h"

#include <stdint.h>

enum api_kind { API_TEXT, API_RESPONSES, API_EMBEDDINGS, API_MESSAGES };

/* Decodes data with the decoder of kind into *c (text, responses, messages) or *e
 * (embeddings). */
static inline int api_decode(enum api_kind k, const char *data, size_t len, struct cl_chunk *c,
			     struct cl_embedding *e)
{
	memset(c, 0, sizeof(*c));
	memset(e, 0, sizeof(*e));
	switch (k) {
	case API_TEXT:
		return cl_chunk_decode_text(data, len, c);
	case API_RESPONSES:
		return cl_responses_decode(data, len, c);
	case API_MESSAGES:
		return cl_messages_decode(data, len, c);
	default:
		return cl_embedding_decode(data, len, e);
	}
}

/* Whether v is the string s, every byte of it: a string with a NUL inside ("error\u0000x")
 * is another string, as the decoders and the error reader read it, not s cut short. */
static inline bool api_is(json_t *v, const char *s)
{
	return json_is_string(v) && json_string_length(v) == strlen(s) &&
	       memcmp(json_string_value(v), s, strlen(s)) == 0;
}

/* What the text-completion chunk should say, from jansson's tree; NULL reason when it is one.
 * Only the fields that differ from a chat chunk are judged here (choices[].text). */
static inline const char *api_text_expect(json_t *root, long long *content, char fr[24])
{
	*content = 0;
	fr[0] = '\0';
	if (!json_is_object(root))
		return "top";
	json_t *choices = json_object_get(root, "choices");
	if (ORACLE_WRONG(choices, json_is_array(choices)))
		return "choices";
	size_t i;
	json_t *ch;
	json_array_foreach(choices, i, ch)
	{
		if (json_is_null(ch))
			continue;
		if (!json_is_object(ch))
			return "choice";
		json_t *t = json_object_get(ch, "text"), *f = json_object_get(ch, "finish_reason");
		if (ORACLE_WRONG(t, json_is_string(t)))
			return "text";
		if (ORACLE_WRONG(f, json_is_string(f)))
			return "finish_reason";
		long long l = oracle_strlen(t);
		*content += l > 0 ? l : 0;
		if (!fr[0] && json_is_string(f) && json_string_value(f)[0])
			oracle_truncate(json_string_value(f), json_string_length(f), fr);
	}
	json_t *usage = json_object_get(root, "usage");
	if (ORACLE_WRONG(usage, json_is_object(usage)))
		return "usage";
	if (json_is_object(usage)) {
		json_t *pt = json_object_get(usage, "prompt_tokens");
		json_t *ct = json_object_get(usage, "completion_tokens");
		json_t *det = json_object_get(usage, "completion_tokens_details");
		if (ORACLE_WRONG(pt, oracle_count_ok(pt)) || ORACLE_WRONG(ct, oracle_count_ok(ct)))
			return "count";
		if (ORACLE_WRONG(det, json_is_object(det)))
			return "details";
		json_t *rt = json_object_get(det, "reasoning_tokens");
		if (ORACLE_WRONG(rt, oracle_count_ok(rt)))
			return "reasoning_tokens";
	}
	json_t *err = json_object_get(root, "error");
	if (ORACLE_WRONG(err, json_is_object(err) || json_is_string(err)))
		return "error";
	return NULL;
}

/* A Responses event as jansson sees it, by responses.h's rules. */
struct api_resp_want {
	bool done, is_error, has_usage;
	long long content, reasoning; /* unescaped lengths */
	const char *finish;
	int64_t in, out, rtokens, cached;
	int code;
	bool has_msg;
};

static inline const char *api_resp_usage(json_t *resp, struct api_resp_want *w)
{
	if (ORACLE_WRONG(resp, json_is_object(resp)))
		return "response";
	json_t *u = json_object_get(resp, "usage");
	if (ORACLE_WRONG(u, json_is_object(u)))
		return "usage";
	if (!json_is_object(u))
		return NULL;
	w->has_usage = true;
	json_t *in = json_object_get(u, "input_tokens"), *out = json_object_get(u, "output_tokens");
	json_t *ind = json_object_get(u, "input_tokens_details");
	json_t *outd = json_object_get(u, "output_tokens_details");
	if (ORACLE_WRONG(in, oracle_count_ok(in)) || ORACLE_WRONG(out, oracle_count_ok(out)))
		return "count";
	if (ORACLE_WRONG(ind, json_is_object(ind)) || ORACLE_WRONG(outd, json_is_object(outd)))
		return "details";
	json_t *c = json_object_get(ind, "cached_tokens"),
	       *r = json_object_get(outd, "reasoning_tokens");
	if (ORACLE_WRONG(c, oracle_count_ok(c)) || ORACLE_WRONG(r, oracle_count_ok(r)))
		return "detail count";
	w->in = oracle_count(in);
	w->out = oracle_count(out);
	w->cached = oracle_count(c);
	w->rtokens = oracle_count(r);
	return NULL;
}

static inline const char *api_resp_expect(json_t *root, struct api_resp_want *w)
{
	memset(w, 0, sizeof(*w));
	w->in = w->out = w->rtokens = w->cached = -1;
	w->finish = "";
	if (!json_is_object(root))
		return "top";
	json_t *type = json_object_get(root, "type");
	if (ORACLE_WRONG(type, json_is_string(type)))
		return "type";
	if (!json_is_string(type))
		return "no type";
	json_t *delta = json_object_get(root, "delta"), *resp = json_object_get(root, "response");
	bool text = api_is(type, "response.output_text.delta");
	bool reasoning = api_is(type, "response.reasoning_text.delta") ||
			 api_is(type, "response.reasoning_summary_text.delta");
	if (text || reasoning) {
		if (ORACLE_WRONG(delta, json_is_string(delta)))
			return "delta";
		long long l = oracle_strlen(delta);
		if (l > 0)
			*(text ? &w->content : &w->reasoning) = l;
		return NULL;
	}
	bool completed = api_is(type, "response.completed");
	if (completed || api_is(type, "response.incomplete")) {
		const char *bad = api_resp_usage(resp, w);
		if (bad)
			return bad;
		w->done = true;
		json_t *det = json_object_get(resp, "incomplete_details");
		w->finish = completed                                                     ? "stop"
			    : api_is(json_object_get(det, "reason"), "max_output_tokens") ? "length"
											  : "other";
		return NULL;
	}
	if (api_is(type, "response.failed")) {
		if (ORACLE_WRONG(resp, json_is_object(resp)))
			return "response";
		w->is_error = true;
		json_t *e = json_object_get(resp, "error");
		if (json_is_object(e)) {
			json_t *c = json_object_get(e, "code");
			if (json_is_integer(c) && json_integer_value(c) >= INT32_MIN &&
			    json_integer_value(c) <= INT32_MAX)
				w->code = (int)json_integer_value(c);
			w->has_msg = json_is_string(json_object_get(e, "message"));
		}
		return NULL;
	}
	if (api_is(type, "error")) {
		w->is_error = true;
		json_t *c = json_object_get(root, "code");
		if (json_is_integer(c) && json_integer_value(c) >= INT32_MIN &&
		    json_integer_value(c) <= INT32_MAX)
			w->code = (int)json_integer_value(c);
		w->has_msg = json_is_string(json_object_get(root, "message"));
	}
	return NULL;
}

/* An embeddings answer as jansson sees it, by embedding.h's rules. */
static inline const char *api_emb_expect(json_t *root, struct cl_embedding *w)
{
	memset(w, 0, sizeof(*w));
	w->prompt_tokens = -1;
	if (!json_is_object(root))
		return "top";
	json_t *data = json_object_get(root, "data"), *usage = json_object_get(root, "usage");
	json_t *err = json_object_get(root, "error");
	if (ORACLE_WRONG(data, json_is_array(data)))
		return "data";
	size_t i;
	json_t *it;
	json_array_foreach(data, i, it)
	{
		if (!json_is_object(it))
			return "item";
		json_t *emb = json_object_get(it, "embedding");
		uint32_t dim = 0;
		if (json_is_array(emb)) {
			size_t k;
			json_t *x;
			json_array_foreach(emb, k, x)
			{
				if (!json_is_number(x))
					return "number";
			}
			dim = (uint32_t)json_array_size(emb);
		} else if (ORACLE_WRONG(emb, json_is_string(emb))) {
			return "embedding";
		}
		if (i == 0)
			w->dim = dim;
	}
	w->n_data = json_is_array(data) ? (uint32_t)json_array_size(data) : 0;
	if (ORACLE_WRONG(usage, json_is_object(usage)))
		return "usage";
	if (json_is_object(usage)) {
		w->has_usage = true;
		json_t *pt = json_object_get(usage, "prompt_tokens");
		if (ORACLE_WRONG(pt, oracle_count_ok(pt)))
			return "prompt_tokens";
		w->prompt_tokens = oracle_count(pt);
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
	if (!json_is_array(data) && !w->is_error)
		return "nothing";
	return NULL;
}

/*
 * Checks one decode (rc, c or e) of data by the decoder of kind k: its JSON verdict must be
 * the chat chunk decoder's (CL_EPARSE exactly when that one says so), and when jansson reads
 * the text, the fields and the not-an-answer verdict must be what jansson's tree says.
 * Returns NULL, or what disagreed (static or in detail).
 */
static inline const char *api_oracle_check(enum api_kind k, const char *data, size_t len, int rc,
					   const struct cl_chunk *c, const struct cl_embedding *e,
					   char *detail, size_t n)
{
	struct cl_chunk ref;
	int ref_rc = cl_chunk_decode(data, len, &ref);
	bool done_text = len == 6 && memcmp(data, "[DONE]", 6) == 0;
	if (rc != 0 && rc != CL_EPARSE && rc != CL_EPROTO)
		return "a return code outside 0, CL_EPARSE, CL_EPROTO";
	if (done_text) {
		bool ok = k == API_EMBEDDINGS ? rc == CL_EPARSE : rc == 0 && c->done;
		return ok ? NULL : "[DONE] misread";
	}
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
	bool no_esc = memchr(data, '\\', len) == NULL;
	const char *bad = NULL, *why = NULL;
	if (k == API_TEXT) {
		long long content;
		char fr[24];
		why = api_text_expect(root, &content, fr);
		if (!why && rc == 0) {
			if (c->has_content != (content > 0) ||
			    (long long)c->content_bytes < content ||
			    (no_esc && (long long)c->content_bytes != content))
				bad = "text bytes";
			else if (strcmp(c->finish_reason, fr) != 0)
				bad = "finish_reason";
			else if (c->has_reasoning || c->has_role)
				bad = "reasoning or role in a text chunk";
		}
	} else if (k == API_RESPONSES) {
		struct api_resp_want w;
		why = api_resp_expect(root, &w);
		if (!why && rc == 0) {
			if (c->done != w.done || c->is_error != w.is_error ||
			    c->has_usage != w.has_usage)
				bad = "done, error or usage";
			else if (c->has_content != (w.content > 0) ||
				 (long long)c->content_bytes < w.content ||
				 (no_esc && (long long)c->content_bytes != w.content))
				bad = "content bytes";
			else if (c->has_reasoning != (w.reasoning > 0) ||
				 (no_esc && (long long)c->reasoning_bytes != w.reasoning))
				bad = "reasoning bytes";
			else if (strcmp(c->finish_reason, w.finish) != 0)
				bad = "finish";
			else if (c->prompt_tokens != w.in || c->completion_tokens != w.out ||
				 c->reasoning_tokens != w.rtokens || c->cached_tokens != w.cached)
				bad = "usage counts";
			else if (c->error_code != w.code || (c->error_msg != NULL) != w.has_msg)
				bad = "error code or message";
		}
	} else if (k == API_MESSAGES) {
		struct api_msg_want w;
		why = api_msg_expect(root, &w);
		if (!why && rc == 0)
			bad = api_msg_compare(c, &w, no_esc);
	} else {
		struct cl_embedding w;
		why = api_emb_expect(root, &w);
		if (!why && rc == 0) {
			if (e->n_data != w.n_data || e->dim != w.dim)
				bad = "data count or dim";
			else if (e->has_usage != w.has_usage || e->prompt_tokens != w.prompt_tokens)
				bad = "usage";
			else if (e->is_error != w.is_error || e->error_code != w.error_code)
				bad = "error";
		}
	}
	json_decref(root);
	if (bad) {
		snprintf(detail, n, "accepted with the wrong %s", bad);
		return detail;
	}
	if ((why != NULL) != (rc == CL_EPROTO)) {
		snprintf(detail, n, "rc %d (%s), jansson's tree says %s", rc,
			 k == API_EMBEDDINGS ? (e->malformed ? e->malformed : "-")
					     : (c->malformed ? c->malformed : "-"),
			 why ? why : "an answer");
		return detail;
	}
	return NULL;
}

/* One fuzz input through decoder k: the pointers it returns stay inside the input, the
 * finish reason is a terminated string, and the oracle agrees (the body of fuzz_completion,
 * fuzz_responses and fuzz_embedding).  Aborts on a finding. */
static inline void api_fuzz_one(enum api_kind k, const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct cl_chunk c;
	struct cl_embedding e;
	char detail[256];
	int rc = api_decode(k, s, size, &c, &e);
	if (!memchr(c.finish_reason, '\0', sizeof(c.finish_reason)))
		abort();
	if (c.content_bytes > size || c.reasoning_bytes > size)
		abort();
	if (c.content && (c.content < s || c.content + c.content_len > s + size))
		abort();
	if (e.error_msg && (e.error_msg < s || e.error_msg + e.error_msg_len > s + size))
		abort();
	const char *bad = api_oracle_check(k, s, size, rc, &c, &e, detail, sizeof(detail));
	if (bad) {
		fprintf(stderr, "oracle: %s\n", bad);
		abort();
	}
}

/* ---- cl_stream_error_read and cl_event_decode (stream/error.h, stream/event.h) ---- */

/* A code as error.h reads one: an integer that fits an int, or a string of 1 to 9 digits. */
static inline bool api_code(json_t *v, int *code)
{
	if (json_is_integer(v) && json_integer_value(v) >= INT32_MIN &&
	    json_integer_value(v) <= INT32_MAX) {
		*code = (int)json_integer_value(v);
		return true;
	}
	if (!json_is_string(v))
		return false;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n > 9)
		return false;
	int c = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		c = c * 10 + (s[i] - '0');
	}
	*code = c;
	return true;
}

/* What a failure's text says, from jansson's tree, by error.h's rules. */
struct api_err_want {
	bool is_error;
	int code;
	bool has_msg;
};

static inline void api_err_expect(json_t *root, struct api_err_want *w)
{
	memset(w, 0, sizeof(*w));
	if (!json_is_object(root))
		return;
	json_t *err = json_object_get(root, "error"), *type = json_object_get(root, "type");
	json_t *resp = json_object_get(root, "response");
	json_t *rerr = json_is_object(resp) ? json_object_get(resp, "error") : NULL;
	if (!json_is_object(rerr))
		rerr = NULL;
	json_t *eobj = json_is_object(err) ? err : NULL;
	w->is_error = json_is_object(err) || json_is_string(err) ||
		      api_is(json_object_get(root, "object"), "error") || api_is(type, "error") ||
		      api_is(type, "response.failed");
	w->has_msg = json_is_string(err) ||
		     (eobj && json_is_string(json_object_get(eobj, "message"))) ||
		     (rerr && json_is_string(json_object_get(rerr, "message"))) ||
		     json_is_string(json_object_get(root, "message")) ||
		     json_is_string(json_object_get(root, "detail"));
	if (!(eobj && api_code(json_object_get(eobj, "code"), &w->code)) &&
	    !(rerr && api_code(json_object_get(rerr, "code"), &w->code)) &&
	    !api_code(json_object_get(root, "code"), &w->code))
		w->code = 0;
}

/* The reader's verdict on one text against jansson's: NULL, or what disagreed. */
static inline const char *api_error_read_check(const char *data, size_t len,
					       const struct cl_stream_error *e)
{
	struct cl_chunk ref;
	/* The chunk decoder's JSON verdict (proven against jansson); its [DONE] is no JSON. */
	bool json = cl_chunk_decode(data, len, &ref) != CL_EPARSE &&
		    !(len == 6 && memcmp(data, "[DONE]", 6) == 0);
	if (e->is_json != json)
		return "JSON verdict";
	if (e->message && (e->message < data || e->message + e->message_len > data + len))
		return "message outside the input";
	if (e->type && (e->type < data || e->type + e->type_len > data + len))
		return "type outside the input";
	if (!json) {
		if (e->is_error || e->code || !e->message_raw != !e->message)
			return "a text that is not JSON read as an error object";
		return NULL;
	}
	json_error_t jerr;
	json_t *root = json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!root || oracle_depth(root) > CL_CHUNK_MAX_DEPTH) {
		json_decref(root);
		return NULL; /* a divergence chunk_oracle.h names */
	}
	struct api_err_want w;
	api_err_expect(root, &w);
	json_decref(root);
	if (e->is_error != w.is_error)
		return "error shape";
	if (e->code != w.code)
		return "code";
	if ((e->message != NULL) != w.has_msg || e->message_raw)
		return "message";
	return NULL;
}

/*
 * cl_event_decode's verdict (rc, *c) on data with flags against its rule (event.h), each part
 * from a reference: the API's own decoder and jansson's tree.  NULL, or what disagreed.
 */
static inline const char *api_event_check(enum cl_api api, const char *data, size_t len,
					  unsigned flags, int rc, const struct cl_chunk *c)
{
	struct cl_stream_error e;
	cl_stream_error_read(data, len, &e);
	const char *bad = api_error_read_check(data, len, &e);
	if (bad)
		return bad;
	if (rc == 0 && c->is_error) {
		if (c->error_code != e.code && c->error_code == 0)
			return "error code lost";
		if (c->error_msg &&
		    (c->error_msg < data || c->error_msg + c->error_msg_len > data + len))
			return "error message outside the input";
	}
	if (flags & (CL_SSE_ERROR_FIELD | CL_SSE_ERROR_EVENT)) {
		if (rc != 0 || !c->is_error)
			return "a flagged error event not an error";
		if ((c->error_msg != NULL) != (e.message != NULL))
			return "a flagged error's message";
		return NULL;
	}
	if (flags & CL_SSE_DOCUMENT) {
		if (e.is_error)
			return rc == 0 && c->is_error ? NULL : "an error document not an error";
		if (!e.is_json)
			return rc == CL_EPARSE ? NULL : "a document that is not JSON";
		return rc == CL_EPROTO && c->malformed &&
			       strcmp(c->malformed, CL_EVENT_NOT_A_STREAM) == 0
			   ? NULL
			   : "a document that is no error not refused";
	}
	struct cl_chunk ref;
	int ref_rc = api == CL_API_COMPLETIONS ? cl_chunk_decode_text(data, len, &ref)
		     : api == CL_API_RESPONSES ? cl_responses_decode(data, len, &ref)
		     : api == CL_API_MESSAGES  ? cl_messages_decode(data, len, &ref)
					       : cl_chunk_decode(data, len, &ref);
	bool nothing = ref_rc == 0 && !ref.n_choices && !ref.done && !ref.is_error &&
		       !ref.has_usage && !ref.has_content && !ref.has_reasoning &&
		       !ref.has_tool_call && !ref.finish_reason[0];
	bool want_error =
	    (ref_rc == 0 && ref.is_error) || ((ref_rc == CL_EPROTO || nothing) && e.is_error);
	if (want_error)
		return rc == 0 && c->is_error ? NULL : "an error the rule names missed";
	if (rc != ref_rc)
		return "not the API decoder's verdict";
	if (rc == 0 && (c->is_error || c->done != ref.done || c->has_content != ref.has_content ||
			c->content_bytes != ref.content_bytes))
		return "not the API decoder's facts";
	return NULL;
}

/* One fuzz input as an event of api under every SSE flag (cl_event_decode's rule). */
static inline void api_fuzz_event(enum cl_api api, const uint8_t *data, size_t size)
{
	static const unsigned flag_sets[] = { 0, CL_SSE_ERROR_FIELD, CL_SSE_ERROR_EVENT,
					      CL_SSE_DOCUMENT };
	const char *s = (const char *)data;
	for (size_t f = 0; f < sizeof(flag_sets) / sizeof(flag_sets[0]); f++) {
		struct cl_chunk c;
		int rc = cl_event_decode(api, s, size, flag_sets[f], &c);
		const char *bad = api_event_check(api, s, size, flag_sets[f], rc, &c);
		if (bad) {
			fprintf(stderr, "event oracle (flags %u): %s\n", flag_sets[f], bad);
			abort();
		}
	}
}

#endif
