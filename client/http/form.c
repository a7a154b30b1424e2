/* A transcription request's multipart/form-data body (see form.h). */
#include "client/http/form.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define CRLF  "\r\n"
#define DASH2 "--"

static int put(struct cl_buf *b, const char *s, size_t n)
{
	return cl_buf_append(b, s, n);
}

static int puts_(struct cl_buf *b, const char *s)
{
	return cl_buf_append(b, s, strlen(s));
}

/* One text field: its part header and value. */
static int field(struct cl_buf *b, const char *name, const char *value, size_t value_len)
{
	return puts_(b, DASH2 CL_FORM_BOUNDARY CRLF "Content-Disposition: form-data; name=\"") ||
	       puts_(b, name) || puts_(b, "\"" CRLF CRLF) || put(b, value, value_len) ||
	       puts_(b, CRLF);
}

int cl_form_head(const char *json, size_t len, char **head, size_t *head_len, struct cl_err *err)
{
	json_error_t jerr;
	struct cl_buf b;
	int rc = 0;
	*head = NULL;
	*head_len = 0;
	json_t *root = json_loadb(json, len, 0, &jerr);
	if (!json_is_object(root)) {
		json_decref(root);
		return cl_err_set(err, CL_EINVAL, "a transcription body is not a JSON object");
	}
	cl_buf_init(&b, 0);
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v)
	{
		char *text =
		    json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		const char *val = json_is_string(v) ? json_string_value(v) : text;
		size_t val_len = json_is_string(v) ? json_string_length(v)
				 : text            ? strlen(text)
						   : 0;
		if (!val) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory building a form");
			break;
		}
		/* A field may not end the part early or break its header. */
		if (strstr(key, CL_FORM_BOUNDARY) || strpbrk(key, "\"\r\n") ||
		    (val_len >= sizeof(CL_FORM_BOUNDARY) - 1 &&
		     memmem(val, val_len, CL_FORM_BOUNDARY, sizeof(CL_FORM_BOUNDARY) - 1))) {
			free(text);
			rc = cl_err_set(err, CL_EINVAL,
					"form field '%s' cannot be sent: its name holds a quote or "
					"a line break, or it holds the form's boundary",
					key);
			break;
		}
		rc = field(&b, key, val, val_len) ? cl_err_set(err, CL_ENOMEM,
							       "out of memory "
							       "building a form")
						  : 0;
		free(text);
		if (rc)
			break;
	}
	json_decref(root);
	if (!rc &&
	    puts_(&b, DASH2 CL_FORM_BOUNDARY CRLF
		  "Content-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"" CRLF
		  "Content-Type: audio/wav" CRLF CRLF))
		rc = cl_err_set(err, CL_ENOMEM, "out of memory building a form");
	if (!rc && cl_buf_append(&b, "", 1)) /* the NUL, kept out of the length */
		rc = cl_err_set(err, CL_ENOMEM, "out of memory building a form");
	if (rc) {
		cl_buf_free(&b);
		return rc;
	}
	*head_len = b.len - 1;
	*head = cl_buf_steal(&b);
	return 0;
}

size_t cl_form_wav_bytes(uint32_t audio_ms)
{
	return 44 + (size_t)audio_ms * (CL_FORM_SAMPLE_RATE / 1000) * 2;
}

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16),
	p[3] = (uint8_t)(v >> 24);
}

static void le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
}

int cl_form_body(struct cl_buf *out, const char *head, size_t head_len, uint32_t audio_ms,
		 uint64_t seed)
{
	if (audio_ms == 0 || audio_ms > CL_FORM_MAX_AUDIO_MS)
		return CL_EINVAL;
	static const char tail[] = CRLF DASH2 CL_FORM_BOUNDARY DASH2 CRLF;
	size_t wav = cl_form_wav_bytes(audio_ms), data = wav - 44;
	uint8_t h[44];
	memcpy(h, "RIFF", 4);
	le32(h + 4, (uint32_t)(wav - 8));
	memcpy(h + 8, "WAVEfmt ", 8);
	le32(h + 16, 16);                      /* the fmt chunk's size */
	le16(h + 20, 1);                       /* PCM */
	le16(h + 22, 1);                       /* mono */
	le32(h + 24, CL_FORM_SAMPLE_RATE);     /* samples a second */
	le32(h + 28, CL_FORM_SAMPLE_RATE * 2); /* bytes a second */
	le16(h + 32, 2);                       /* bytes a frame */
	le16(h + 34, 16);                      /* bits a sample */
	memcpy(h + 36, "data", 4);
	le32(h + 40, (uint32_t)data);
	cl_buf_reset(out);
	int rc = put(out, head, head_len);
	rc = rc ? rc : cl_buf_append(out, h, sizeof(h));
	/* A triangle tone between 200 and 800 Hz by the seed, at a quarter of full scale:
	 * integer steps, cheap enough to make per request, written a block at a time. */
	uint32_t period = CL_FORM_SAMPLE_RATE / (200 + (uint32_t)(seed % 601));
	uint32_t half = period / 2 ? period / 2 : 1;
	uint8_t block[4096];
	size_t samples = data / 2;
	for (size_t i = 0; !rc && i < samples;) {
		size_t n = 0;
		for (; n < sizeof(block) / 2 && i < samples; n++, i++) {
			uint32_t ph = (uint32_t)(i % period);
			int32_t tri = ph < half ? (int32_t)(ph * 16384 / half) - 8192
						: 8192 - (int32_t)((ph - half) * 16384 / half);
			le16(block + 2 * n, (uint16_t)(int16_t)tri);
		}
		rc = cl_buf_append(out, block, 2 * n);
	}
	return rc ? rc : put(out, tail, sizeof(tail) - 1);
}
