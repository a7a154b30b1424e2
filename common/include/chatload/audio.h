/* Audio for workload.api: transcription: the WAV chatload makes from a seed, the length of any
 * WAV read from its header, and the multipart form a request uploads, rendered from the small
 * JSON description a request body travels as (docs/scenario.md, "Audio"). */
#ifndef CHATLOAD_AUDIO_H
#define CHATLOAD_AUDIO_H

#include "chatload/buf.h"
#include "chatload/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_AUDIO_RATE      16000u          /* synthetic audio: 16 kHz ... */
#define CL_AUDIO_MAX_MS    (3600u * 1000u) /* longest clip chatload makes or sends: 1 h */
#define CL_AUDIO_MAX_BYTES (256u << 20)    /* largest WAV read from a folder */
#define CL_AUDIO_FORM_MAX  (CL_AUDIO_MAX_BYTES + 4096u)     /* a rendered form, at most */
#define CL_AUDIO_BOUNDARY  "chatload-form-7f3c9a1e5b2d4c68" /* the form's boundary */
#define CL_AUDIO_FORM_TYPE "multipart/form-data; boundary=" CL_AUDIO_BOUNDARY

/*
 * Appends a PCM WAV (16 kHz, mono, 16-bit little endian) of ms milliseconds to out: a tone
 * whose pitch the seed picks, with a little noise from the seed, so one seed always gives the
 * same bytes.  ms in 1..CL_AUDIO_MAX_MS.  0, CL_EINVAL, or CL_ENOMEM / CL_ETOOBIG from out.
 */
CL_MUST_CHECK int cl_audio_wav_synth(uint32_t ms, uint64_t seed, struct cl_buf *out);

/*
 * The length of the WAV at p[0..len) in milliseconds, from its RIFF header: the data chunk's
 * bytes over the fmt chunk's byte rate (a data chunk longer than the file, as a stream writer
 * leaves it, counts the bytes present).  0 with *ms set; CL_EPARSE with *why (static text)
 * saying what is wrong.  Reads nothing past len, allocates nothing.
 */
int cl_audio_wav_ms(const void *p, size_t len, uint64_t *ms, const char **why);

/* Appends base64 (RFC 4648, padded) of p[0..n) to out.  0, or out's error. */
CL_MUST_CHECK int cl_audio_base64_encode(const void *p, size_t n, struct cl_buf *out);

/*
 * Renders the multipart/form-data body (boundary CL_AUDIO_BOUNDARY) that a transcription
 * description asks for into out (reset first).  The description is a JSON object:
 * {"model": string, "audio_ms": n, "seed": n} for synthetic audio, or {"model", "wav":
 * base64, "file": name} for a file's bytes; optional "language" (string), "response_format"
 * (string, default "json") and "stream" (bool, default false).  The form's parts: model,
 * language, response_format, stream, then file (audio/wav).  *audio_ms gets the audio's
 * length (from the WAV header for a file), *stream the stream flag.  CL_EPARSE / CL_EINVAL
 * with err naming the field, CL_ENOMEM.
 */
int cl_audio_form_render(const char *desc, size_t desc_len, struct cl_buf *out, uint32_t *audio_ms,
			 bool *stream, struct cl_err *err);

#endif
