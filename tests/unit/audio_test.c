/* Tests of chatload/audio.h: the synthetic WAV (its header, length and determinism), a WAV's
 * length from headers of other shapes and broken ones, base64, and the multipart form
 * rendered from a description (its parts in order, the file's bytes whole, the errors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chatload/audio.h"

static void test_synth(void **state)
{
	(void)state;
	struct cl_buf a = { .max = 1 << 24 }, b = { .max = 1 << 24 }, c = { .max = 1 << 24 };
	assert_int_equal(cl_audio_wav_synth(1500, 7, &a), 0);
	assert_int_equal(a.len, 44 + 1500 * 16 * 2); /* 16 kHz, 16-bit mono */
	assert_memory_equal(a.data, "RIFF", 4);
	assert_memory_equal(a.data + 8, "WAVEfmt ", 8);
	uint64_t ms = 0;
	const char *why = NULL;
	assert_int_equal(cl_audio_wav_ms(a.data, a.len, &ms, &why), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(cl_audio_wav_synth(1500, 7, &b), 0);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len); /* one seed, one clip */
	assert_int_equal(cl_audio_wav_synth(1500, 8, &c), 0);
	assert_true(memcmp(a.data + 44, c.data + 44, a.len - 44) != 0);
	/* not silence: some samples are loud */
	int loud = 0;
	for (size_t i = 44; i + 1 < a.len; i += 2) {
		int16_t s = (int16_t)((uint8_t)a.data[i] | ((uint8_t)a.data[i + 1] << 8));
		loud += s > 8000 || s < -8000;
	}
	assert_true(loud > 1000);
	assert_int_equal(cl_audio_wav_synth(0, 1, &c), CL_EINVAL);
	assert_int_equal(cl_audio_wav_synth(CL_AUDIO_MAX_MS + 1, 1, &c), CL_EINVAL);
	cl_buf_free(&a);
	cl_buf_free(&b);
	cl_buf_free(&c);
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A WAV with a LIST chunk (odd size, padded) before fmt, stereo 44.1 kHz, data of n bytes
 * (declared: decl). */
static size_t odd_wav(unsigned char *w, uint32_t n, uint32_t decl)
{
	memset(w, 0, 200 + n);
	memcpy(w, "RIFFxxxxWAVE", 12);
	memcpy(w + 12, "LIST", 4);
	put32(w + 16, 3); /* odd: one byte of padding follows */
	memcpy(w + 24, "fmt ", 4);
	put32(w + 28, 16);
	w[32] = 1, w[34] = 2;
	put32(w + 36, 44100);
	put32(w + 40, 44100 * 4);
	w[44] = 4, w[46] = 16;
	memcpy(w + 48, "data", 4);
	put32(w + 52, decl);
	return 56 + n;
}

static void test_wav_ms(void **state)
{
	(void)state;
	static unsigned char w[200 + 176400];
	uint64_t ms;
	const char *why;
	size_t len = odd_wav(w, 176400, 176400); /* 1 s of stereo 44.1 kHz */
	assert_int_equal(cl_audio_wav_ms(w, len, &ms, &why), 0);
	assert_int_equal(ms, 1000);
	/* a stream writer's header: a data chunk longer than the file counts what is there */
	len = odd_wav(w, 88200, 0xFFFFFFFFu);
	assert_int_equal(cl_audio_wav_ms(w, len, &ms, &why), 0);
	assert_int_equal(ms, 500);
	/* every cut of the header is refused, never read past */
	for (size_t cut = 0; cut < 56; cut++) {
		unsigned char *p = malloc(cut ? cut : 1);
		memcpy(p, w, cut);
		why = NULL;
		assert_int_equal(cl_audio_wav_ms(p, cut, &ms, &why), CL_EPARSE);
		assert_non_null(why);
		free(p);
	}
	assert_int_equal(cl_audio_wav_ms("RIFF0000WAVX", 12, &ms, &why), CL_EPARSE);
	assert_string_equal(why, "not a WAV file (no RIFF/WAVE header)");
	odd_wav(w, 0, 0);
	put32(w + 40, 0); /* byte rate 0 */
	assert_int_equal(cl_audio_wav_ms(w, 56, &ms, &why), CL_EPARSE);
	assert_string_equal(why, "WAV fmt chunk gives a byte rate of 0");
}

static void test_base64_roundtrip(void **state)
{
	(void)state;
	/* a WAV in base64 in a description renders the same bytes in the form */
	for (uint32_t ms = 1; ms <= 3; ms++) {
		struct cl_buf wav = { .max = 1 << 20 }, b64 = { .max = 1 << 21 },
			      desc = { .max = 1 << 21 }, form = { .max = 1 << 22 };
		assert_int_equal(cl_audio_wav_synth(ms, ms, &wav), 0);
		/* 3 lengths modulo 3: every padding */
		wav.len -= ms - 1;
		assert_int_equal(cl_audio_base64_encode(wav.data, wav.len, &b64), 0);
		assert_int_equal(b64.len, (wav.len + 2) / 3 * 4);
		assert_int_equal(cl_buf_printf(&desc, "{\"model\":\"m\",\"wav\":\"%s\",\"file\":"
						      "\"x.wav\"}",
					       b64.data),
				 0);
		uint32_t audio_ms = 0;
		bool stream = true;
		struct cl_err err = { 0 };
		int rc = cl_audio_form_render(desc.data, desc.len, &form, &audio_ms, &stream, &err);
		assert_int_equal(rc, 0);
		assert_false(stream);
		const char *at = memmem(form.data, form.len, wav.data, wav.len);
		assert_non_null(at);
		assert_memory_equal(at + wav.len, "\r\n--" CL_AUDIO_BOUNDARY "--\r\n",
				    sizeof(CL_AUDIO_BOUNDARY) + 7);
		cl_buf_free(&wav);
		cl_buf_free(&b64);
		cl_buf_free(&desc);
		cl_buf_free(&form);
	}
}

static void test_form(void **state)
{
	(void)state;
	struct cl_buf form = { .max = CL_AUDIO_FORM_MAX };
	uint32_t ms = 0;
	bool stream = false;
	struct cl_err err = { 0 };
	const char *d = "{\"model\":\"whisper\",\"audio_ms\":250,\"seed\":3,\"language\":\"de\","
			"\"stream\":true}";
	assert_int_equal(cl_audio_form_render(d, strlen(d), &form, &ms, &stream, &err), 0);
	assert_int_equal(ms, 250);
	assert_true(stream);
	static const char head[] =
	    "--" CL_AUDIO_BOUNDARY "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n"
	    "whisper\r\n--" CL_AUDIO_BOUNDARY "\r\nContent-Disposition: form-data; "
	    "name=\"language\"\r\n\r\nde\r\n--" CL_AUDIO_BOUNDARY "\r\nContent-Disposition: "
	    "form-data; name=\"response_format\"\r\n\r\njson\r\n--" CL_AUDIO_BOUNDARY
	    "\r\nContent-Disposition: form-data; name=\"stream\"\r\n\r\ntrue\r\n--" CL_AUDIO_BOUNDARY
	    "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n"
	    "Content-Type: audio/wav\r\n\r\nRIFF";
	assert_true(form.len > sizeof(head));
	assert_memory_equal(form.data, head, sizeof(head) - 1);
	assert_int_equal(form.len, sizeof(head) - 1 - 4 + 44 + 250 * 32 +
				       strlen("\r\n--" CL_AUDIO_BOUNDARY "--\r\n"));

	static const struct {
		const char *desc, *says;
	} bad[] = {
		{ "[1]", "not a JSON object" },
		{ "{\"model\":\"m\"", "transcription description" },
		{ "{\"audio_ms\":5,\"seed\":1}", "'model' is not a string" },
		{ "{\"model\":\"m\",\"audio_ms\":0,\"seed\":1}", "'audio_ms' 0 is outside" },
		{ "{\"model\":\"m\",\"audio_ms\":5}", "neither 'wav' nor 'audio_ms'" },
		{ "{\"model\":\"m\",\"audio_ms\":5,\"seed\":1,\"stream\":\"yes\"}", "not a boolean" },
		{ "{\"model\":\"m\",\"wav\":\"@@@@\"}", "is not base64" },
		{ "{\"model\":\"m\",\"wav\":\"UklGRg==\"}", "not a WAV file" },
		{ "{\"model\":\"m\",\"audio_ms\":5,\"seed\":1,\"file\":\"a\\\"b\"}", "a quote" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cl_err e = { 0 };
		int rc = cl_audio_form_render(bad[i].desc, strlen(bad[i].desc), &form, &ms, &stream,
					      &e);
		assert_true(rc < 0);
		if (!strstr(e.msg, bad[i].says))
			fail_msg("'%s': message '%s' does not say '%s'", bad[i].desc, e.msg,
				 bad[i].says);
	}
	cl_buf_free(&form);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synth),
		cmocka_unit_test(test_wav_ms),
		cmocka_unit_test(test_base64_roundtrip),
		cmocka_unit_test(test_form),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
