/* libFuzzer target: chatload-sim's decoding of untrusted request bytes (HTTP head, chunked
 * body, chat completions JSON, a /tokenize body, a transcription's multipart form and its
 * WAV header).  Built with -DCHATLOAD_FUZZ=ON (clang). */
#include "sim/api/audio.h"
#include "sim/api/chat.h"
#include "sim/api/tokenize.h"
#include "sim/serve/http.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	struct cl_sim_http_req req;
	struct cl_buf body = { .max = 1 << 16 };
	struct cl_sim_chat_req chat;
	char msg[256];
	const char *code;
	size_t used;

	if (cl_sim_http_parse(p, size, &req) == 1 && req.head_len <= size)
		cl_sim_http_dechunk(p + req.head_len, size - req.head_len, &body, &used);
	cl_sim_http_dechunk(p, size, &body, &used);
	cl_buf_free(&body);
	cl_sim_chat_parse(p, size, &chat, msg, sizeof(msg), &code);
	/* The same body as each other API's request (completions, responses, embeddings,
	 * rerank, score). */
	for (int api = CL_API_COMPLETIONS; api < CL_API__COUNT; api++)
		if (cl_api_name((enum cl_api)api))
			cl_sim_api_parse((enum cl_api)api, p, size, &chat, msg, sizeof(msg), &code);
	uint64_t chars, words;
	cl_sim_tokenize_parse(p, size, &chars, &words, msg, sizeof(msg));
	/* A transcription's form: under its own head's Content-Type when the bytes have one,
	 * and as a body under the boundary chatload sends. */
	if (cl_sim_http_parse(p, size, &req) == 1 && req.head_len <= size)
		cl_sim_audio_parse(req.content_type, p + req.head_len, size - req.head_len, &chat,
				   msg, sizeof(msg), &code);
	cl_sim_audio_parse("multipart/form-data; boundary=chatload-form-7f3c9a1e5b2d4c68", p, size,
			   &chat, msg, sizeof(msg), &code);
	return 0;
}
