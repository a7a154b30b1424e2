/* A transcription request's body (workload.api: transcription): multipart/form-data with the
 * body's fields and a WAV file made on the fly, in the one shape the engine and the readiness
 * gate send (docs/scenario.md, "Transcription"). */
#ifndef CHATLOAD_FORM_H
#define CHATLOAD_FORM_H

#include "chatload/buf.h"
#include "chatload/err.h"

#include <stddef.h>
#include <stdint.h>

/* The form's boundary: fixed, so one Content-Type header serves every request.  The fields
 * are chatload's own text and the audio's samples never come near 0x2d2d ("--") runs of this
 * length, which cl_form_head checks of the text. */
#define CL_FORM_BOUNDARY     "chatload-form-7d1f9e3b2c5a40e8"
#define CL_FORM_CONTENT_TYPE "Content-Type: multipart/form-data; boundary=" CL_FORM_BOUNDARY
#define CL_FORM_SAMPLE_RATE  16000u /* Hz: 16-bit mono PCM, as Whisper models take it */
#define CL_FORM_MAX_AUDIO_MS (600u * 1000u)

/*
 * The form's head from a body's JSON object text (json[0..len), flat: each key a field, a
 * string's value as it is, any other value as its JSON text), then the file part's header
 * (name "file", filename "audio.wav", audio/wav): everything before the WAV's bytes.
 * *head is malloc'd, NUL-terminated text (*head_len bytes), owned by the caller.  0, or
 * CL_EINVAL (not a JSON object, a key or value that holds the boundary or a line break in a
 * key) or CL_ENOMEM, with err filled.  Allocates: call it once per body, not per request.
 */
CL_MUST_CHECK int cl_form_head(const char *json, size_t len, char **head, size_t *head_len,
			       struct cl_err *err);

/*
 * Puts into out (reset first) the whole body: head, a WAV of audio_ms milliseconds (RIFF
 * header, 16-bit mono PCM at CL_FORM_SAMPLE_RATE: a tone whose pitch follows seed, so two
 * bodies' audio differ), and the form's end.  Allocates only when out must grow, so a buffer
 * reused for every request stops allocating at the largest.  0, CL_EINVAL (audio_ms 0 or
 * above CL_FORM_MAX_AUDIO_MS) or CL_ENOMEM / CL_ETOOBIG (out's cap).
 */
CL_MUST_CHECK int cl_form_body(struct cl_buf *out, const char *head, size_t head_len,
			       uint32_t audio_ms, uint64_t seed);

/* The WAV bytes cl_form_body writes for audio_ms (header included). */
size_t cl_form_wav_bytes(uint32_t audio_ms);

#endif
