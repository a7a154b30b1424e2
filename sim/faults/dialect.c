/* The error dialects of chatload-sim (see dialect.h).  Each shape is the one named in
 * docs/simulator.md's table, with where it was read (a server's source, a capture, or an
 * API's documentation). */
#include "dialect.h"

#include <string.h>

/* vLLM's err_type words (serving_engine.py's create_error_response callers). */
static const char *vllm_type(uint32_t code)
{
	if (code == 404)
		return "NotFoundError";
	return code >= 500 ? "InternalServerError" : "BadRequestError";
}

/* llama.cpp's format_error_response: its error_type enum's words and codes (b4748). */
static const char *llamacpp_type(uint32_t code)
{
	switch (code) {
	case 400:
		return "invalid_request_error";
	case 401:
		return "authentication_error";
	case 403:
		return "permission_error";
	case 404:
		return "not_found_error";
	case 501:
		return "not_supported_error";
	case 503:
		return "unavailable_error";
	default:
		return code >= 500 ? "server_error" : "invalid_request_error";
	}
}

/* TGI's InferError::error_type words: validation (422, 400), overloaded (429), generation. */
static const char *tgi_type(uint32_t code)
{
	if (code == 429 || code == 503)
		return "overloaded";
	return code < 500 ? "validation" : "generation";
}

/* Anthropic's documented error types by status (529 is its "overloaded"). */
const char *cl_sim_dialect_anthropic_type(uint32_t code)
{
	switch (code) {
	case 400:
		return "invalid_request_error";
	case 401:
		return "authentication_error";
	case 403:
		return "permission_error";
	case 404:
		return "not_found_error";
	case 413:
		return "request_too_large";
	case 429:
		return "rate_limit_error";
	case 500:
		return "api_error";
	default:
		return code >= 500 ? "overloaded_error" : "invalid_request_error";
	}
}

static void put_str(struct cl_sim_w *w, const char *s)
{
	cl_sim_w_json(w, s, strlen(s));
}

/* {"object":"error","message":...,"type":...,"param":null,"code":N}: vLLM's ErrorResponse. */
static void vllm_object(struct cl_sim_w *w, const struct cl_sim_config *cfg)
{
	CL_SIM_W_LIT(w, "{\"object\":\"error\",\"message\":");
	put_str(w, cfg->error_message);
	CL_SIM_W_LIT(w, ",\"type\":");
	put_str(w, vllm_type(cfg->error_code));
	CL_SIM_W_LIT(w, ",\"param\":null,\"code\":");
	cl_sim_w_u64(w, cfg->error_code);
	CL_SIM_W_LIT(w, "}");
}

/* OpenAI's error object: {"message","type","param","code"}; its code is a word or null,
 * never the status, so the status shows only in the type. */
static void openai_object(struct cl_sim_w *w, const struct cl_sim_config *cfg)
{
	CL_SIM_W_LIT(w, "{\"error\":{\"message\":");
	put_str(w, cfg->error_message);
	CL_SIM_W_LIT(w, ",\"type\":");
	put_str(w, cfg->error_code >= 500 ? "server_error" : "invalid_request_error");
	CL_SIM_W_LIT(w, ",\"param\":null,\"code\":null}}");
}

/* llama.cpp's format_error_response: {"code":N,"message":...,"type":...}. */
static void llamacpp_object(struct cl_sim_w *w, const struct cl_sim_config *cfg)
{
	CL_SIM_W_LIT(w, "{\"code\":");
	cl_sim_w_u64(w, cfg->error_code);
	CL_SIM_W_LIT(w, ",\"message\":");
	put_str(w, cfg->error_message);
	CL_SIM_W_LIT(w, ",\"type\":");
	put_str(w, llamacpp_type(cfg->error_code));
	CL_SIM_W_LIT(w, "}");
}

void cl_sim_dialect_body(struct cl_sim_w *w, const struct cl_sim_config *cfg)
{
	uint32_t code = cfg->error_code;
	switch (cfg->error_dialect) {
	case CL_SIM_DIALECT_VLLM_LEGACY:
		vllm_object(w, cfg);
		break;
	case CL_SIM_DIALECT_LLAMACPP:
		/* res_error wraps the object in {"error": ...} */
		CL_SIM_W_LIT(w, "{\"error\":");
		llamacpp_object(w, cfg);
		CL_SIM_W_LIT(w, "}");
		break;
	case CL_SIM_DIALECT_TGI:
		CL_SIM_W_LIT(w, "{\"error\":");
		put_str(w, cfg->error_message);
		CL_SIM_W_LIT(w, ",\"error_type\":");
		put_str(w, tgi_type(code));
		CL_SIM_W_LIT(w, "}");
		break;
	case CL_SIM_DIALECT_TGI_OPENAI:
		CL_SIM_W_LIT(w, "{\"error\":{\"message\":");
		put_str(w, cfg->error_message);
		CL_SIM_W_LIT(w, ",\"http_status_code\":");
		cl_sim_w_u64(w, code);
		CL_SIM_W_LIT(w, "}}");
		break;
	case CL_SIM_DIALECT_OPENAI:
	case CL_SIM_DIALECT_JSON_200:
		openai_object(w, cfg);
		break;
	case CL_SIM_DIALECT_ANTHROPIC:
		CL_SIM_W_LIT(w, "{\"type\":\"error\",\"error\":{\"type\":");
		put_str(w, cl_sim_dialect_anthropic_type(code));
		CL_SIM_W_LIT(w, ",\"message\":");
		put_str(w, cfg->error_message);
		CL_SIM_W_LIT(w, "}}");
		break;
	case CL_SIM_DIALECT_VLLM:
	default:
		CL_SIM_W_LIT(w, "{\"error\":");
		vllm_object(w, cfg);
		CL_SIM_W_LIT(w, "}");
		break;
	}
}

void cl_sim_dialect_event(struct cl_sim_w *w, const struct cl_sim_config *cfg)
{
	switch (cfg->error_dialect) {
	case CL_SIM_DIALECT_LLAMACPP:
		/* llama.cpp before PR 16109: server_sent_event(sink, "error", ...) writes a
		 * field named "error", then its OpenAI endpoints end with [DONE]. */
		CL_SIM_W_LIT(w, "error: ");
		llamacpp_object(w, cfg);
		CL_SIM_W_LIT(w, "\n\ndata: [DONE]\n\n");
		return;
	case CL_SIM_DIALECT_OPENAI:
	case CL_SIM_DIALECT_ANTHROPIC:
		/* a named event that ends the stream: no [DONE] follows */
		CL_SIM_W_LIT(w, "event: error\ndata: ");
		cl_sim_dialect_body(w, cfg);
		CL_SIM_W_LIT(w, "\n\n");
		return;
	case CL_SIM_DIALECT_JSON_200: {
		/* no in-stream form: said as vLLM does */
		struct cl_sim_config as_vllm = *cfg;
		as_vllm.error_dialect = CL_SIM_DIALECT_VLLM;
		cl_sim_dialect_event(w, &as_vllm);
		return;
	}
	default:
		/* vLLM (either form), TGI (either form): the object as a data event, then
		 * [DONE] */
		CL_SIM_W_LIT(w, "data: ");
		cl_sim_dialect_body(w, cfg);
		CL_SIM_W_LIT(w, "\n\ndata: [DONE]\n\n");
		return;
	}
}

int cl_sim_dialect_status(const struct cl_sim_config *cfg)
{
	return cfg->error_dialect == CL_SIM_DIALECT_JSON_200 ? 200 : (int)cfg->error_code;
}
