/* The table of chatload-sim settings (see sim_options.h). */
#include "chatload/sim_options.h"

#include <string.h>

#define D CL_SIMOPT_DURATION
#define I CL_SIMOPT_INT
#define F CL_SIMOPT_FLOAT
#define S CL_SIMOPT_STRING
#define B CL_SIMOPT_BOOL

const struct cl_sim_option cl_sim_options[] = {
	/* process-level */
	{ "listen", S, "HOST:PORT", "127.0.0.1:0",
	  "address to listen on (port 0 picks one); loopback only unless --allow-remote", false },
	{ "allow-remote", B, NULL, NULL, "permit a non-loopback --listen address", false },
	{ "port-file", S, "FILE", NULL,
	  "write the bound port to FILE once listening (atomically: temp file + rename)", false },
	{ "truth-log", S, "FILE", NULL,
	  "write one JSON line per chat request with the true timings (flushed every 100ms)",
	  false },
	{ "stats-file", S, "FILE", NULL,
	  "write chunk lateness statistics (scheduled vs actual) as JSON at exit", false },
	{ "max-body", S, "SIZE", "1MiB", "largest request body accepted (413 beyond)", false },
	{ "max-connections", I, "N", "20000", "connections served at once (more are closed)",
	  false },
	{ "grace", D, "DUR", "5s",
	  "on SIGTERM/SIGINT, time decoding streams get to finish before they are cut", false },
	/* Under target.simulator too: a scale test names it in the scenario. */
	{ "processes", I, "N", "1",
	  "serve from N processes on one port (SO_REUSEPORT), each with its own state, "
	  "descriptors and truth log FILE.<i>; the first process supervises the others (1..64)",
	  true },
	/* model and protocol */
	{ "model", S, "NAME", "chatload-sim",
	  "model name served, or a comma-separated list (others get 404)", true },
	{ "api-key", S, "KEY", NULL, "require 'Authorization: Bearer KEY' on /v1 (401 otherwise)",
	  true },
	{ "reasoning-field", S, "NAME", "reasoning_content",
	  "delta field of reasoning tokens: reasoning_content (vLLM, SGLang) or reasoning", true },
	/* timing */
	{ "ttft", D, "DUR", "100ms", "time from getting a batch slot to the first token", true },
	{ "itl", D, "DUR", "10ms", "interval between tokens", true },
	{ "output-tokens", S, "SPEC", "request",
	  "output length: 'request' (max_completion_tokens, else max_tokens, else 128), N, "
	  "uniform:MIN-MAX or normal:MEAN,SD (all capped by the request's max)",
	  true },
	{ "reasoning-tokens", I, "N", "0",
	  "reasoning tokens emitted first, counted in the output (a thinking model)", true },
	{ "tokens-per-chunk", I, "N", "1", "tokens per SSE chunk (>1: speculative decoding)",
	  true },
	{ "jitter", F, "FRAC", "0", "relative jitter on ttft and itl (0.1 = +-10%)", true },
	{ "seed", I, "N", "1", "seed for jitter, lengths and faults", true },
	{ "prefill-per-token", D, "DUR", "0", "extra time to first token per prompt token", true },
	{ "embedding-dim", I, "N", "8",
	  "numbers in each vector of a /v1/embeddings answer (1..65536)", true },
	{ "embedding-per-token", D, "DUR", "20us",
	  "/v1/embeddings: time per input token, the whole answer's time (no decode)", true },
	{ "rerank-per-token", D, "DUR", "20us",
	  "/v1/rerank, /v1/score: time per token of each query-document pair, the whole "
	  "answer's time",
	  true },
	{ "audio-per-second", D, "DUR", "50ms",
	  "/v1/audio/transcriptions: time to first text per second of audio uploaded", true },
	{ "transcription-stream", S, "SHAPE", "vllm",
	  "a streamed transcription's events: vllm (transcription.chunk, [DONE]) or openai "
	  "(transcript.text.delta / .done)",
	  true },
	/* capacity */
	{ "max-batch", I, "N", "0", "requests decoding at once, the rest queue (0: unlimited)",
	  true },
	{ "scheduling-policy", S, "NAME", "fcfs",
	  "the queue's order when the batch is full: fcfs (first come, first served), or "
	  "priority (a lower \"priority\" field first, as vLLM's --scheduling-policy priority)",
	  true },
	{ "kv-cache-tokens", I, "N", "65536",
	  "KV-cache capacity in tokens: /metrics usage is the running streams' prompt and output "
	  "tokens over N; a stream started past it counts a preemption (0: unlimited)",
	  true },
	{ "no-prefix-cache", B, NULL, NULL,
	  "no prefix cache: a prompt's beginning seen before is prefilled again", true },
	{ "cache-timings", B, NULL, NULL,
	  "say what the prefix cache found as llama.cpp b4748 does: no "
	  "usage.prompt_tokens_details; the final usage chunk carries timings.prompt_n (the "
	  "prompt tokens evaluated)",
	  true },
	{ "ttft-buckets", S, "LIST", NULL,
	  "upper bounds of /metrics' TTFT histogram in seconds, ascending, comma-separated (at "
	  "most 40; default vLLM's)",
	  true },
	{ "metrics-names", S, "NAMES", "vllm", "names of GET /metrics: vllm, sglang or llamacpp",
	  true },
	{ "itl-per-active", D, "DUR", "0", "added to itl for each active stream beyond the first",
	  true },
	/* readiness phases */
	{ "loading-for", D, "DUR", "0",
	  "every endpoint answers 503 'Loading model' until DUR after start", true },
	{ "chat-ready-after", D, "DUR", "0",
	  "chat completions answer 503 until DUR after start (models and health answer)", true },
	/* faults */
	{ "fault-500", F, "P", "0", "probability of HTTP 500", true },
	{ "fault-429", F, "P", "0", "probability of HTTP 429 with Retry-After", true },
	{ "retry-after", I, "SECONDS", "1", "Retry-After value sent with 429", true },
	{ "retry-after-date", B, NULL, NULL,
	  "send the 429's Retry-After as an HTTP date (now plus --retry-after, whole seconds "
	  "rounded up) instead of seconds",
	  true },
	{ "fault-drop", F, "P", "0", "probability of dropping the connection mid-stream", true },
	{ "fault-malformed", F, "P", "0", "probability of a malformed JSON chunk mid-stream",
	  true },
	{ "fault-error-chunk", F, "P", "0", "probability of an error object inside the stream",
	  true },
	{ "fault-no-usage", F, "P", "0", "probability of omitting the usage chunk", true },
	{ "fault-no-done", F, "P", "0", "probability of ending without [DONE]", true },
	{ "fault-wrong-type", F, "P", "0",
	  "probability of valid JSON chunks with wrong-typed fields mid-stream (see "
	  "--wrong-type-shape)",
	  true },
	{ "fault-stall", F, "P", "0", "probability of a stall (see --stall-for, --stall-at)",
	  true },
	{ "stall-for", D, "DUR", "1s", "length of an injected stall", true },
	{ "stall-at", I, "N", "1", "tokens sent before an injected stall", true },
	{ "fault-at", I, "N", NULL,
	  "tokens sent before a drop, malformed or error chunk (default: half the output)", true },
	{ "fault-schedule", S, "LIST", NULL,
	  "faults by request number, e.g. 'drop@2,500@5' (names: 500 429 drop malformed "
	  "error-chunk no-usage no-done stall wrong-type empty hang); overrides the probabilities",
	  true },
	{ "wrong-type-shape", S, "SHAPE", "all",
	  "what a wrong-type fault sends: content (a number), choices (a string), usage (a "
	  "string token count), array (the chunk is an array), all (the four in turn) or rotate "
	  "(request N sends shape (N-1) mod 4 of content, choices, usage, array)",
	  true },
	{ "fault-empty", F, "P", "0",
	  "probability of a 200 stream that carries nothing: 'data: [DONE]' alone", true },
	{ "fault-hang", F, "P", "0",
	  "probability of a request read and never answered (no headers, no byte), the "
	  "connection held open until the client leaves or the simulator exits",
	  true },
	{ "error-dialect", S, "NAME", "vllm",
	  "how an error-chunk fault says the request failed: vllm, vllm-legacy, llama.cpp-field, "
	  "tgi, tgi-openai, openai-event, anthropic or json-200 (a 200 JSON error body instead "
	  "of a stream)",
	  true },
	{ "error-code", I, "N", "500", "the error-chunk fault's status code (400..599)", true },
	{ "error-message", S, "TEXT",
	  "simulated error inside the stream (chatload-sim fault error-chunk)",
	  "the error-chunk fault's message", true },
	/* connection behaviour of real servers */
	{ "close-after-answer", B, NULL, NULL,
	  "advertise 'Keep-Alive: timeout=5, max=100' (llama.cpp), then close each connection "
	  "after its answer, once the next request has arrived on it, without answering it",
	  true },
	{ "hold-after-done", B, NULL, NULL,
	  "send streamed answers with a body delimited by the connection's close (neither "
	  "Content-Length nor chunked) and keep the connection open after [DONE]",
	  true },
	{ "no-ignore-eos", B, NULL, NULL,
	  "disregard a request's ignore_eos, as a server without it does (answers end where "
	  "--output-tokens says)",
	  true },
	/* drift: a server that slows down as it runs (soak tests) */
	{ "itl-growth", D, "DUR", "0",
	  "added to itl for each second since the simulator started (latency that drifts)", true },
	/* tokenizer */
	{ "chars-per-token", I, "N", "4",
	  "prompt tokens are ceil(characters / N), in usage and on POST /tokenize (a tokenizer "
	  "that counts differently from chatload's estimate of 4)",
	  true },
	{ "word-tokens", B, NULL, NULL,
	  "count prompt tokens by the text, not its length: a run of letters is one token per "
	  "6 letters begun, every digit and other non-space character one, spaces none (prose "
	  "near 5.4 characters a token, numbers and punctuation dearer); in usage and on POST "
	  "/tokenize alike",
	  true },
	{ "template-tokens", I, "N", "0",
	  "tokens a chat template adds to every request's prompt, counted in usage.prompt_tokens "
	  "but not by POST /tokenize of the text (llama.cpp's template adds about 28)",
	  true },
	{ "image-tokens", I, "N", "85",
	  "prompt tokens each image content part counts (image_url, input_image), in usage and "
	  "the truth log, and prefill time like any prompt token (OpenAI counts 85 for a "
	  "low-detail image)",
	  true },
	{ "no-tokenize", B, NULL, NULL,
	  "answer POST /tokenize with 404, as a server without it does (OpenAI's own API)", true },
	/* tool calls (docs/simulator.md, "Tool calls") */
	{ "tool-call-rate", F, "P", "0",
	  "probability that a chat request offering tools is answered with a streamed tool call "
	  "(after N tool results since the last user message: P^(N+1))",
	  true },
	{ "no-tools", B, NULL, NULL,
	  "refuse a chat request that offers tools with 400, as a server without tool support "
	  "does (llama.cpp without --jinja)",
	  true },
};

const size_t cl_sim_options_count = sizeof(cl_sim_options) / sizeof(cl_sim_options[0]);
_Static_assert(sizeof(cl_sim_options) / sizeof(cl_sim_options[0]) <= CL_SIM_OPTIONS_MAX,
	       "CL_SIM_OPTIONS_MAX bounds the table");

const struct cl_sim_option *cl_sim_option_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < cl_sim_options_count; i++) {
		const char *a = cl_sim_options[i].name;
		const char *b = name;
		while (*a && *b && (*a == *b || (*a == '-' && *b == '_'))) {
			a++;
			b++;
		}
		if (!*a && !*b)
			return &cl_sim_options[i];
	}
	return NULL;
}
