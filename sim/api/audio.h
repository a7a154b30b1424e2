/* The reader of a transcription upload (POST /v1/audio/transcriptions): a multipart/form-data
 * body's fields, and the audio's length from its WAV header. */
#ifndef CHATLOAD_SIM_AUDIO_H
#define CHATLOAD_SIM_AUDIO_H

#include "sim/api/chat.h"

#include <stddef.h>

/*
 * Decodes the form at body[0..len) whose Content-Type header is content_type into req: api
 * CL_API_TRANSCRIPTION, "model", "stream" ("true"/"false"), the "file" part's audio length
 * (req->audio_ms, from its WAV header); "language", "response_format" (json or text; others
 * refused) and "prompt" are read and checked, the rest ignored.  Returns 0, or a negative
 * CL_E* code with a human message in msg (size n) and the OpenAI error code (static text) in
 * *code: a 400 answer.  Never reads past len, never allocates.
 */
int cl_sim_audio_parse(const char *content_type, const char *body, size_t len,
		       struct cl_sim_chat_req *req, char *msg, size_t n, const char **code);

#endif
