/* Audio for transcription requests: synthetic WAV from a seed, a WAV's length from its header,
 * base64, and the multipart form rendered from a request's description (chatload/audio.h). */
#include "chatload/audio.h"

#include "chatload/rng.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static void put_le(unsigned char *p, uint32_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le(const unsigned char *p, int bytes)
{
	uint32_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

int cl_audio_wav_synth(uint32_t ms, uint64_t seed, struct cl_buf *out)
{
	if (ms == 0 || ms > CL_AUDIO_MAX_MS)
		return CL_EINVAL;
	uint64_t samples = (uint64_t)ms * (CL_AUDIO_RATE / 1000u);
	uint32_t data_bytes = (uint32_t)(samples * 2);
	unsigned char h[44];
	memcpy(h, "RIFF", 4);
	put_le(h + 4, 36 + data_bytes, 4);
	memcpy(h + 8, "WAVEfmt ", 8);
	put_le(h + 16, 16, 4);                /* fmt chunk size */
	put_le(h + 20, 1, 2);                 /* PCM */
	put_le(h + 22, 1, 2);                 /* mono */
	put_le(h + 24, CL_AUDIO_RATE, 4);     /* sample rate */
	put_le(h + 28, CL_AUDIO_RATE * 2, 4); /* byte rate */
	put_le(h + 32, 2, 2);                 /* block align */
	put_le(h + 34, 16, 2);                /* bits per sample */
	memcpy(h + 36, "data", 4);
	put_le(h + 40, data_bytes, 4);
	int rc = cl_buf_append(out, h, sizeof(h));
	/* A tone of 220..880 Hz with 1/8 of its amplitude in noise: speech-like enough for a
	 * server's front end, and the same bytes for the same seed. */
	uint64_t st = seed ^ 0x617564696f000000ULL;
	double hz = 220.0 + (double)(cl_splitmix64(&st) % 661u);
	double step = 2.0 * M_PI * hz / CL_AUDIO_RATE;
	unsigned char block[4096];
	size_t bl = 0;
	for (uint64_t i = 0; i < samples && !rc; i++) {
		double noise = cl_splitmix_frac(&st) * 2.0 - 1.0;
		double v = 0.4 * sin(step * (double)i) + 0.05 * noise;
		int32_t s = (int32_t)lrint(v * 32767.0);
		put_le(block + bl, (uint32_t)(uint16_t)(int16_t)s, 2);
		bl += 2;
		if (bl == sizeof(block) || i + 1 == samples) {
			rc = cl_buf_append(out, block, bl);
			bl = 0;
		}
	}
	return rc;
}

int cl_audio_wav_ms(const void *p, size_t len, uint64_t *ms, const char **why)
{
	const unsigned char *b = p;
	*ms = 0;
	if (len < 12 || memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0) {
		*why = "not a WAV file (no RIFF/WAVE header)";
		return CL_EPARSE;
	}
	uint32_t byte_rate = 0;
	size_t at = 12;
	while (at + 8 <= len) {
		uint32_t size = get_le(b + at + 4, 4);
		const unsigned char *body = b + at + 8;
		size_t left = len - at - 8;
		if (memcmp(b + at, "fmt ", 4) == 0) {
			if (size < 16 || left < 16) {
				*why = "WAV fmt chunk shorter than 16 bytes";
				return CL_EPARSE;
			}
			byte_rate = get_le(body + 8, 4);
			if (!byte_rate) {
				*why = "WAV fmt chunk gives a byte rate of 0";
				return CL_EPARSE;
			}
		} else if (memcmp(b + at, "data", 4) == 0) {
			if (!byte_rate) {
				*why = "WAV data chunk before its fmt chunk";
				return CL_EPARSE;
			}
			uint64_t n = size > left ? left : size;
			*ms = n * 1000u / byte_rate;
			return 0;
		}
		/* chunks are padded to an even size */
		uint64_t next = (uint64_t)at + 8 + size + (size & 1);
		if (next > len)
			break;
		at = (size_t)next;
	}
	*why = byte_rate ? "WAV file has no data chunk" : "WAV file has no fmt chunk";
	return CL_EPARSE;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int cl_audio_base64_encode(const void *p, size_t n, struct cl_buf *out)
{
	const unsigned char *s = p;
	char q[4096];
	size_t ql = 0;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		q[ql++] = b64[(v >> 18) & 63];
		q[ql++] = b64[(v >> 12) & 63];
		q[ql++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		q[ql++] = i + 2 < n ? b64[v & 63] : '=';
		if (ql + 4 > sizeof(q) || i + 3 >= n) {
			rc = cl_buf_append(out, q, ql);
			ql = 0;
		}
	}
	return rc;
}

/* Decodes base64 text (padded, no whitespace) onto out.  CL_EPARSE on a bad character. */
static int base64_decode(const char *t, size_t n, struct cl_buf *out)
{
	signed char map[256];
	memset(map, -1, sizeof(map));
	for (int i = 0; i < 64; i++)
		map[(unsigned char)b64[i]] = (signed char)i;
	if (n % 4)
		return CL_EPARSE;
	unsigned char q[3072];
	size_t ql = 0;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i += 4) {
		int pad = (t[i + 3] == '=') + (t[i + 2] == '=');
		if (pad && i + 4 != n)
			return CL_EPARSE;
		uint32_t v = 0;
		for (int k = 0; k < 4; k++) {
			int d = k >= 4 - pad ? 0 : map[(unsigned char)t[i + k]];
			if (d < 0)
				return CL_EPARSE;
			v = (v << 6) | (uint32_t)d;
		}
		q[ql++] = (unsigned char)(v >> 16);
		if (pad < 2)
			q[ql++] = (unsigned char)(v >> 8);
		if (pad < 1)
			q[ql++] = (unsigned char)v;
		if (ql + 3 > sizeof(q) || i + 4 >= n) {
			rc = cl_buf_append(out, q, ql);
			ql = 0;
		}
	}
	return rc;
}

/* One text part of the form. */
static int add_field(struct cl_buf *out, const char *name, const char *value)
{
	return cl_buf_printf(out,
			     "--" CL_AUDIO_BOUNDARY "\r\nContent-Disposition: form-data; "
			     "name=\"%s\"\r\n\r\n%s\r\n",
			     name, value);
}

/* Whether a file name can go inside the quoted filename="..." as it is. */
static bool plain_name(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || *s == '\r' || *s == '\n')
			return false;
	return true;
}

int cl_audio_form_render(const char *desc, size_t desc_len, struct cl_buf *out, uint32_t *audio_ms,
			 bool *stream, struct cl_err *err)
{
	json_error_t je;
	json_t *d = json_loadb(desc, desc_len, 0, &je);
	struct cl_buf wav = { .max = CL_AUDIO_MAX_BYTES };
	int rc = 0;
	cl_buf_reset(out);
	if (!json_is_object(d)) {
		rc = cl_err_set(err, CL_EPARSE, "transcription description: %s",
				d ? "not a JSON object" : je.text);
		goto out;
	}
	json_t *model = json_object_get(d, "model"), *ms = json_object_get(d, "audio_ms"),
	       *seed = json_object_get(d, "seed"), *b64text = json_object_get(d, "wav"),
	       *file = json_object_get(d, "file"), *lang = json_object_get(d, "language"),
	       *fmt = json_object_get(d, "response_format"), *st = json_object_get(d, "stream");
	if (!json_is_string(model)) {
		rc = cl_err_set(err, CL_EINVAL,
				"transcription description: 'model' is not a string");
		goto out;
	}
	if ((lang && !json_is_string(lang)) || (fmt && !json_is_string(fmt)) ||
	    (file && !json_is_string(file)) || (st && !json_is_boolean(st))) {
		rc = cl_err_set(err, CL_EINVAL,
				"transcription description: 'language', 'response_format' or "
				"'file' is not a string, or 'stream' not a boolean");
		goto out;
	}
	*stream = st && json_is_true(st);
	const char *name = file ? json_string_value(file) : "audio.wav";
	if (!plain_name(name)) {
		rc = cl_err_set(err, CL_EINVAL,
				"transcription description: file name '%s' holds a quote or a "
				"line break",
				name);
		goto out;
	}
	if (json_is_string(b64text)) {
		rc = base64_decode(json_string_value(b64text), json_string_length(b64text), &wav);
		if (rc) {
			rc = cl_err_set(err, rc == CL_EPARSE ? CL_EPARSE : rc,
					"transcription description: 'wav' of '%s' is %s", name,
					rc == CL_EPARSE ? "not base64" : "too large");
			goto out;
		}
		uint64_t n_ms;
		const char *why = NULL;
		if (cl_audio_wav_ms(wav.data, wav.len, &n_ms, &why) != 0) {
			rc = cl_err_set(err, CL_EPARSE, "audio '%s': %s", name, why);
			goto out;
		}
		*audio_ms = n_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)n_ms;
	} else if (json_is_integer(ms) && json_is_integer(seed)) {
		json_int_t n = json_integer_value(ms);
		if (n <= 0 || n > (json_int_t)CL_AUDIO_MAX_MS) {
			rc = cl_err_set(err, CL_EINVAL,
					"transcription description: 'audio_ms' %lld is outside "
					"1..%u",
					(long long)n, CL_AUDIO_MAX_MS);
			goto out;
		}
		*audio_ms = (uint32_t)n;
		rc = cl_audio_wav_synth(*audio_ms, (uint64_t)json_integer_value(seed), &wav);
		if (rc) {
			rc = cl_err_set(err, rc, "out of memory making %u ms of audio", *audio_ms);
			goto out;
		}
	} else {
		rc = cl_err_set(err, CL_EINVAL,
				"transcription description: neither 'wav' nor 'audio_ms' with "
				"'seed'");
		goto out;
	}
	/* The boundary must not occur in the audio, or the server would end the file there. */
	if (memmem(wav.data, wav.len, CL_AUDIO_BOUNDARY, sizeof(CL_AUDIO_BOUNDARY) - 1)) {
		rc = cl_err_set(err, CL_EINVAL, "audio '%s' holds the form's boundary", name);
		goto out;
	}
	rc = add_field(out, "model", json_string_value(model));
	if (!rc && lang)
		rc = add_field(out, "language", json_string_value(lang));
	if (!rc)
		rc = add_field(out, "response_format", fmt ? json_string_value(fmt) : "json");
	if (!rc)
		rc = add_field(out, "stream", *stream ? "true" : "false");
	if (!rc)
		rc = cl_buf_printf(out,
				   "--" CL_AUDIO_BOUNDARY "\r\nContent-Disposition: form-data; "
				   "name=\"file\"; filename=\"%s\"\r\nContent-Type: "
				   "audio/wav\r\n\r\n",
				   name);
	if (!rc)
		rc = cl_buf_append(out, wav.data, wav.len);
	if (!rc)
		rc = cl_buf_puts(out, "\r\n--" CL_AUDIO_BOUNDARY "--\r\n");
	if (rc)
		rc = cl_err_set(err, rc, "cannot render a transcription form: %s",
				rc == CL_ETOOBIG ? "too large" : "out of memory");
out:
	cl_buf_free(&wav);
	json_decref(d);
	return rc;
}
