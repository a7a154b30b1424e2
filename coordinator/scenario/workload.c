/* The scenario loader's workload section: prompts, dataset (with its filter, shuffle and
 * limit), synthetic lengths, output lengths and shared prefixes. */
#include "coordinator/scenario/scenario.h"

#include "chatload/sim_options.h"
#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEC  1000000LL
#define DAY  (86400LL * SEC)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Where a key that is unknown in one section belongs, for "(it belongs under 'workload')". */
/* ---- workload ---- */

static void conv_prompts(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_workload *w = obj;
	char got[96];
	if (!v || v->kind != YN_SEQ) {
		cli_scn_error(c, v, "%s must be a list of prompt strings, got %s", cli_scn_path(c),
			      cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (v->n == 0) {
		cli_scn_error(c, v, "%s is empty: give at least one prompt", cli_scn_path(c));
		return;
	}
	w->prompts = calloc(v->n, sizeof(char *));
	if (!w->prompts) {
		c->oom = true;
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		char *p = NULL;
		if (cli_scn_get_str(c, v->kids[i], true, &p) == 0)
			w->prompts[w->n_prompts++] = p;
		cli_scn_path_pop(c, mark);
	}
}

static void conv_dataset_format(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "auto", "openai", "sharegpt", "text" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_workload *)obj)->dataset_format = (enum cl_dataset_format)x;
}

static void conv_order(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "run", "per_stage" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_workload *)obj)->order_per_stage = x == 1;
}

static void conv_salt(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "run", "none" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_workload *)obj)->salt_none = x == 1;
}

/* A length in tokens: "512" (fixed), or { mean, stddev, min, max }; which bounds were given
 * go to *min_given and *max_given (their defaults depend on the mean). */
static void conv_len_dist(struct scn_ctx *c, const struct ynode *v, struct cl_len_dist *d,
			  bool *min_given, bool *max_given)
{
	static const struct scn_field f[] = {
		SCN_DRANGE("mean", struct cl_len_dist, mean, 1, 1e6),
		SCN_DRANGE("stddev", struct cl_len_dist, stddev, 0, 1e6),
		SCN_RANGE("min", SCN_F_U32, struct cl_len_dist, min, 1, 1000000),
		SCN_RANGE("max", SCN_F_U32, struct cl_len_dist, max, 1, 1000000),
	};
	/* "input_tokens: 512" is a fixed length */
	if (v && v->kind == YN_SCALAR && !cli_ynode_is_null(v)) {
		uint32_t n;
		if (cli_scn_get_u32(c, v, 1, 1000000, &n) == 0)
			d->mean = n;
		return;
	}
	const struct ynode *seen[N(f)] = { 0 };
	cli_scn_fields(c, v, f, N(f), d, seen, NULL);
	if (!seen[0])
		cli_scn_error(c, v, "%s needs a mean (e.g. { mean: 512, stddev: 128 })",
			      cli_scn_path(c));
	*min_given = seen[2] != NULL;
	*max_given = seen[3] != NULL;
	if (seen[2] && seen[3] && d->min > d->max)
		cli_scn_error(c, seen[3], "%s.max must not be below %s.min", cli_scn_path(c),
			      cli_scn_path(c));
	else if (seen[0] && seen[3] && d->mean > d->max)
		cli_scn_error(c, seen[3], "%s.max must not be below the mean", cli_scn_path(c));
	else if (seen[0] && seen[2] && d->mean < d->min)
		cli_scn_error(c, seen[2], "%s.min must not be above the mean", cli_scn_path(c));
}

static void conv_input_tokens(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	conv_len_dist(c, v, obj, &l->given.synthetic_min, &l->given.synthetic_max);
}

static void conv_output_tokens(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	conv_len_dist(c, v, obj, &l->given.output_min, &l->given.output_max);
}

static void conv_synthetic(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		SCN_CUSTOM_AT("input_tokens", struct cl_scn_workload, synthetic_input,
			      conv_input_tokens),
		SCN_RANGE("count", SCN_F_U32, struct cl_scn_workload, synthetic_count, 1, 100000),
		SCN_CUSTOM_AT("output_tokens", struct cl_scn_workload, synthetic_output,
			      conv_output_tokens),
	};
	struct cl_scn_workload *w = obj;
	const struct ynode *seen[N(f)] = { 0 };
	char got[96];
	w->kind = CL_WORKLOAD_SYNTHETIC;
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(
		    c, v, "%s must be a mapping such as { input_tokens: { mean: 512 } }, got %s",
		    cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, f, N(f), w, seen, NULL);
	w->synthetic_count_given = seen[1] != NULL;
	if (!seen[0])
		cli_scn_error(c, v, "%s needs input_tokens (e.g. { mean: 512 })", cli_scn_path(c));
}

static void conv_dataset_output(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "record", "max_tokens" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_workload *)obj)->dataset_output = (enum cl_dataset_output)x;
}

static void conv_ignore_eos(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	bool on;
	if (cli_scn_get_bool(c, v, &on) == 0)
		((struct cl_scn_workload *)obj)->ignore_eos = on ? 1 : 0;
}

static void conv_dataset_filter(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		SCN_RANGE("min_input_tokens", SCN_F_U32, struct cl_dataset_filter, min_input, 0,
			  10000000),
		SCN_RANGE("max_input_tokens", SCN_F_U32, struct cl_dataset_filter, max_input, 0,
			  10000000),
		SCN_RANGE("min_output_tokens", SCN_F_U32, struct cl_dataset_filter, min_output, 0,
			  10000000),
		SCN_RANGE("max_output_tokens", SCN_F_U32, struct cl_dataset_filter, max_output, 0,
			  10000000),
	};
	struct cl_dataset_filter *d = &((struct cl_scn_workload *)obj)->dataset_filter;
	const struct ynode *seen[N(f)] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { max_input_tokens: 1024 }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, f, N(f), d, seen, NULL);
	if (d->max_input && d->min_input > d->max_input)
		cli_scn_error(c, seen[1], "%s.max_input_tokens must not be below min_input_tokens",
			      cli_scn_path(c));
	if (d->max_output && d->min_output > d->max_output)
		cli_scn_error(c, seen[3],
			      "%s.max_output_tokens must not be below min_output_tokens",
			      cli_scn_path(c));
}

static void conv_shared_prefix(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		SCN_RANGE("groups", SCN_F_U32, struct cl_scn_workload, shared_prefix_groups, 1,
			  100000),
		SCN_RANGE("tokens", SCN_F_U32, struct cl_scn_workload, shared_prefix_tokens, 1,
			  1000000),
	};
	const struct ynode *seen[N(f)] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { groups: 8, tokens: 1024 }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, f, N(f), obj, seen, NULL);
	if (!seen[0] || !seen[1])
		cli_scn_error(c, v, "%s needs groups and tokens (e.g. { groups: 8, tokens: 1024 })",
			      cli_scn_path(c));
}

static void conv_turns(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	struct cl_len_dist *d = obj;
	conv_len_dist(c, v, d, &l->given.turns_min, &l->given.turns_max);
	if (d->mean > CL_SCN_MAX_TURNS || (l->given.turns_max && d->max > CL_SCN_MAX_TURNS))
		cli_scn_error(c, v, "%s must be at most %u turns", cli_scn_path(c),
			      CL_SCN_MAX_TURNS);
}

static void conv_multi_turn(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		SCN_CUSTOM_AT("turns", struct cl_scn_workload, turns, conv_turns),
		SCN_RANGE("think_time", SCN_F_DUR, struct cl_scn_workload, think_time_us, 0, DAY),
	};
	struct cl_scn_workload *w = obj;
	const struct ynode *seen[N(f)] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { turns: 4, think_time: 2s }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	w->multi_turn = true;
	cli_scn_fields(c, v, f, N(f), w, seen, NULL);
}

static void conv_trace_format(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "auto", "mooncake", "azure" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_workload *)obj)->trace_format = (enum cl_trace_format)x;
}

static void conv_trace(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		SCN_FIELD("file", SCN_F_NESTR, struct cl_scn_workload, trace),
		SCN_CUSTOM("format", conv_trace_format),
		SCN_DRANGE("speedup", struct cl_scn_workload, trace_speedup, 1e-3, 1e6),
	};
	struct cl_scn_workload *w = obj;
	const struct ynode *seen[N(f)] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { file: trace.jsonl, speedup: 2 }, "
			      "got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	w->kind = CL_WORKLOAD_TRACE;
	cli_scn_fields(c, v, f, N(f), w, seen, NULL);
	if (!seen[0])
		cli_scn_error(c, v, "%s needs file (a JSONL trace)", cli_scn_path(c));
}

static void conv_api(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	/* Every API with a name (a number some branch has not brought yet has none). */
	const char *names[CL_API__COUNT];
	enum cl_api apis[CL_API__COUNT];
	size_t n = 0;
	for (int a = 0; a < CL_API__COUNT; a++)
		if (cl_api_name((enum cl_api)a)) {
			apis[n] = (enum cl_api)a;
			names[n++] = cl_api_name((enum cl_api)a);
		}
	int x;
	if (cli_scn_get_enum(c, v, names, n, &x) == 0)
		((struct cl_scn_workload *)obj)->api = apis[x];
}

/* ---- workload.images ---- */

static void conv_image_format(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "png", "jpeg" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_images *)obj)->format = (enum cl_image_format)x;
}

static void conv_image_detail(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "auto", "low", "high" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_images *)obj)->detail = (enum cl_image_detail)(x + 1);
}

/* { count, width, height, format, detail }: images made from the seed for every request. */
static void conv_images(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	enum { IF_COUNT, IF_WIDTH, IF_HEIGHT, IF_FORMAT, IF_DETAIL, IF__COUNT };
	static const struct scn_field f[] = {
		[IF_COUNT] = SCN_RANGE("count", SCN_F_U32, struct cl_scn_images, count, 1,
				       CL_SCN_MAX_IMAGES),
		[IF_WIDTH] = SCN_RANGE("width", SCN_F_U32, struct cl_scn_images, width, 8,
				       CL_SCN_MAX_IMAGE_SIDE),
		[IF_HEIGHT] = SCN_RANGE("height", SCN_F_U32, struct cl_scn_images, height, 8,
					CL_SCN_MAX_IMAGE_SIDE),
		[IF_FORMAT] = SCN_CUSTOM("format", conv_image_format),
		[IF_DETAIL] = SCN_CUSTOM("detail", conv_image_detail),
	};
	_Static_assert(N(f) == IF__COUNT, "one field per index");
	struct cl_scn_images *im = obj;
	const struct ynode *seen[N(f)] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { count: 1, width: 512, height: 512 }, "
			      "got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, f, N(f), im, seen, NULL);
	if (!seen[IF_COUNT])
		im->count = 1;
}

/* ---- workload.tools (docs/scenario.md, "Tool calls") ----------------------------------- */

static void conv_tool_choice(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "auto", "none", "required" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_workload *)obj)->tools_choice = (enum cl_tool_choice)x;
}

/* The index of each key of workload.tools. */
enum tools_field { TF_COUNT, TF_CHOICE, TF_RESULT_TOKENS, TF_MAX_ROUNDS, TF__COUNT };

static void conv_tools(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		[TF_COUNT] =
		    SCN_RANGE("count", SCN_F_U32, struct cl_scn_workload, tools_count, 1, 128),
		[TF_CHOICE] = SCN_CUSTOM("choice", conv_tool_choice),
		[TF_RESULT_TOKENS] = SCN_RANGE("result_tokens", SCN_F_U32, struct cl_scn_workload,
					       tools_result_tokens, 1, 100000),
		[TF_MAX_ROUNDS] = SCN_RANGE("max_rounds", SCN_F_U32, struct cl_scn_workload,
					    tools_max_rounds, 0, 64),
	};
	_Static_assert(N(f) == TF__COUNT, "one field per index");
	struct cl_scn_workload *w = obj;
	const struct ynode *seen[TF__COUNT] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { count: 4, choice: auto, "
			      "result_tokens: 64, max_rounds: 2 }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, v, f, N(f), w, seen, NULL);
	struct scn_loader *l = L(c);
	l->tools_loop = seen[TF_MAX_ROUNDS] ? seen[TF_MAX_ROUNDS] : seen[TF_RESULT_TOKENS];
	l->tools_loop_key = f[seen[TF_MAX_ROUNDS] ? TF_MAX_ROUNDS : TF_RESULT_TOKENS].name;
	if (!seen[TF_COUNT])
		cli_scn_error(c, v, "%s needs count (the functions offered, e.g. { count: 4 })",
			      cli_scn_path(c));
}

/* workload.tools against the rest of the workload: tools are chat's, and the agentic loop's
 * keys need conversations.  Refused here rather than by the server in the middle of a run. */
static void check_tools(struct scn_ctx *c, const struct cl_scn_workload *w,
			const struct ynode *tools, const struct ynode *multi_turn)
{
	if (!tools)
		return;
	if (w->api != CL_API_CHAT) {
		cli_scn_error(c, tools,
			      "workload.tools needs workload.api: chat (function definitions and "
			      "streamed tool calls are the chat API's; %s has none here)",
			      cl_api_name(w->api));
		return;
	}
	struct scn_loader *l = L(c);
	if (l->tools_loop && !multi_turn)
		cli_scn_error(c, l->tools_loop,
			      "workload.tools.%s needs workload.multi_turn (the agentic loop's "
			      "rounds are turns of a conversation)",
			      l->tools_loop_key);
}

/* The index of each key in workload_fields: the checks below name keys by it. */
enum workload_field {
	WF_PROMPTS,
	WF_DATASET,
	WF_DATASET_FORMAT,
	WF_DATASET_LIMIT,
	WF_SYNTHETIC,
	WF_SYSTEM_PROMPT,
	WF_SEED,
	WF_MAX_TOKENS,
	WF_REQUEST_TIMEOUT,
	WF_DRAIN_TIMEOUT,
	WF_IGNORE_EOS,
	WF_DATASET_OUTPUT_TOKENS,
	WF_DATASET_SHUFFLE,
	WF_DATASET_FILTER,
	WF_SHARED_PREFIX,
	WF_MULTI_TURN,
	WF_TRACE,
	WF_CALIBRATE,
	WF_ORDER,
	WF_SALT,
	WF_API,
	WF_EMBEDDING_BATCH,
	WF_IMAGES,
	WF_TOOLS,
	WF_DOCUMENTS,
	WF_AUDIO,
	WF_CANCEL,
	WF_CLASSES,
	WF__COUNT
};

static const struct scn_field workload_fields[] = {
	[WF_PROMPTS] = SCN_CUSTOM("prompts", conv_prompts),
	[WF_DATASET] = SCN_FIELD("dataset", SCN_F_NESTR, struct cl_scn_workload, dataset),
	[WF_DATASET_FORMAT] = SCN_CUSTOM("dataset_format", conv_dataset_format),
	[WF_DATASET_LIMIT] = SCN_RANGE("dataset_limit", SCN_F_U32, struct cl_scn_workload,
				       dataset_limit, 0, 100000000),
	[WF_SYNTHETIC] = SCN_CUSTOM("synthetic", conv_synthetic),
	[WF_SYSTEM_PROMPT] =
	    SCN_FIELD("system_prompt", SCN_F_STR, struct cl_scn_workload, system_prompt),
	[WF_SEED] = SCN_RANGE("seed", SCN_F_U64, struct cl_scn_workload, seed, 0, INT64_MAX),
	[WF_MAX_TOKENS] =
	    SCN_RANGE("max_tokens", SCN_F_U32, struct cl_scn_workload, max_tokens, 1, 10000000),
	[WF_REQUEST_TIMEOUT] = SCN_RANGE("request_timeout", SCN_F_DUR, struct cl_scn_workload,
					 request_timeout_us, 1, DAY),
	[WF_DRAIN_TIMEOUT] =
	    SCN_RANGE("drain_timeout", SCN_F_DUR, struct cl_scn_workload, drain_timeout_us, 0, DAY),
	[WF_IGNORE_EOS] = SCN_CUSTOM("ignore_eos", conv_ignore_eos),
	[WF_DATASET_OUTPUT_TOKENS] = SCN_CUSTOM("dataset_output_tokens", conv_dataset_output),
	[WF_DATASET_SHUFFLE] =
	    SCN_FIELD("dataset_shuffle", SCN_F_BOOL, struct cl_scn_workload, dataset_shuffle),
	[WF_DATASET_FILTER] = SCN_CUSTOM("dataset_filter", conv_dataset_filter),
	[WF_SHARED_PREFIX] = SCN_CUSTOM("shared_prefix", conv_shared_prefix),
	[WF_MULTI_TURN] = SCN_CUSTOM("multi_turn", conv_multi_turn),
	[WF_TRACE] = SCN_CUSTOM("trace", conv_trace),
	[WF_CALIBRATE] = SCN_FIELD("calibrate", SCN_F_BOOL, struct cl_scn_workload, calibrate),
	[WF_ORDER] = SCN_CUSTOM("order", conv_order),
	[WF_SALT] = SCN_CUSTOM("salt", conv_salt),
	[WF_API] = SCN_CUSTOM("api", conv_api),
	[WF_EMBEDDING_BATCH] = SCN_RANGE("embedding_batch", SCN_F_U32, struct cl_scn_workload,
					 embedding_batch, 1, 2048),
	[WF_IMAGES] = SCN_CUSTOM_AT("images", struct cl_scn_workload, images, conv_images),
	[WF_TOOLS] = SCN_CUSTOM("tools", conv_tools),
	[WF_DOCUMENTS] = SCN_RANGE("documents", SCN_F_U32, struct cl_scn_workload, documents, 1,
				   CL_SCN_MAX_DOCUMENTS),
	[WF_AUDIO] = SCN_CUSTOM_AT("audio", struct cl_scn_workload, audio, cli_scn_conv_audio),
	[WF_CANCEL] = SCN_CUSTOM("cancel", cli_scn_conv_cancel),
	[WF_CLASSES] = SCN_CUSTOM("classes", cli_scn_conv_classes),
};
_Static_assert(N(workload_fields) == WF__COUNT, "one field per index");
_Static_assert(WF__COUNT <= N(((struct scn_loader *)0)->workload), "room for every key");

/* What the API chosen cannot do, by the index in workload_fields of the key that asks for
 * it: refused here, at validate time, rather than by the server in the middle of a run. */
static void check_api(struct scn_ctx *c, const struct cl_scn_workload *w,
		      const struct ynode *const *seen)
{
	const struct ynode *api = seen[WF_API];
	if (seen[WF_EMBEDDING_BATCH] && w->api != CL_API_EMBEDDINGS) {
		cli_scn_error(
		    c, seen[WF_EMBEDDING_BATCH],
		    "workload.embedding_batch only applies with workload.api: embeddings");
		return;
	}
	if (seen[WF_EMBEDDING_BATCH] && seen[WF_TRACE] && w->embedding_batch > 1) {
		cli_scn_error(c, seen[WF_EMBEDDING_BATCH],
			      "workload.embedding_batch cannot be used with workload.trace (each "
			      "trace record is one request at its own time)");
		return;
	}
	/* Image parts are chat's and Responses' message content; a completions prompt is
	 * one string, an embeddings input text, and a rerank's query and documents text.
	 * Anthropic's image blocks have their own shape (a base64 source), not built. */
	if (seen[WF_IMAGES] && (w->api == CL_API_COMPLETIONS || w->api == CL_API_MESSAGES ||
				(!cl_api_streams(w->api) && w->api != CL_API_TRANSCRIPTION))) {
		/* A transcription's refusal says why in its own words, below. */
		cli_scn_error(c, seen[WF_IMAGES],
			      "workload.images cannot be used with workload.api: %s (images are "
			      "content parts of chat or responses messages; %s)",
			      cl_api_name(w->api),
			      w->api == CL_API_COMPLETIONS ? "a completions prompt is one string"
			      : w->api == CL_API_MESSAGES ? "Anthropic's image blocks are not built"
			      : w->api == CL_API_EMBEDDINGS ? "an embeddings input is text"
							    : "a query and its documents are text");
		return;
	}
	if (seen[WF_DOCUMENTS] && !cl_api_scores(w->api)) {
		cli_scn_error(c, seen[WF_DOCUMENTS],
			      "workload.documents only applies with workload.api: rerank or score");
		return;
	}
	if (seen[WF_AUDIO] && w->api != CL_API_TRANSCRIPTION) {
		cli_scn_error(c, seen[WF_AUDIO],
			      "workload.audio only applies with workload.api: transcription");
		return;
	}
	if (w->api == CL_API_TRANSCRIPTION) {
		/* The audio is the whole request: no prompt, no output length, no conversation. */
		static const size_t no[] = { WF_PROMPTS,       WF_DATASET,       WF_SYNTHETIC,
					     WF_TRACE,         WF_SYSTEM_PROMPT, WF_MULTI_TURN,
					     WF_SHARED_PREFIX, WF_IMAGES,        WF_TOOLS,
					     WF_MAX_TOKENS,    WF_IGNORE_EOS,    WF_CALIBRATE,
					     WF_CLASSES };
		for (size_t i = 0; i < N(no); i++) {
			if (seen[no[i]]) {
				cli_scn_error(c, seen[no[i]],
					      "workload.%s cannot be used with workload.api: "
					      "transcription (a request uploads workload.audio and "
					      "nothing else)",
					      workload_fields[no[i]].name);
				return;
			}
		}
		if (!seen[WF_AUDIO])
			cli_scn_error(c, api,
				      "workload.api: transcription needs workload.audio (e.g. { "
				      "seconds: 5, count: 16 } or { dir: clips/ })");
		return;
	}
	if (cl_api_scores(w->api) && seen[WF_TRACE]) {
		cli_scn_error(c, seen[WF_TRACE],
			      "workload.trace cannot be used with workload.api: %s (each trace "
			      "record is one request at its own time; a %s request is a query and "
			      "workload.documents documents made of several prompts)",
			      cl_api_name(w->api), cl_api_name(w->api));
		return;
	}
	if (!cl_api_streams(w->api)) {
		/* An embedding, or a document's score, is no output: nothing to bound, nothing
		 * to generate. */
		bool emb = w->api == CL_API_EMBEDDINGS;
		const char *none = emb ? "embeddings generate nothing, so there is no output "
					 "length to set"
				       : "a score per document is generated, no tokens, so there "
					 "is no output length to set";
		static const struct {
			size_t idx;
			const char *why_emb, *why_score; /* NULL: the output's reason (none) */
		} no[] = {
			{ WF_MAX_TOKENS, NULL, NULL },
			{ WF_IGNORE_EOS,
			  "embeddings generate nothing, so there is no end of sequence",
			  "a score is no generation, so there is no end of sequence" },
			{ WF_DATASET_OUTPUT_TOKENS, NULL, NULL },
			{ WF_MULTI_TURN, "an embedding is not a conversation",
			  "a query and its documents are not a conversation" },
			{ WF_SYSTEM_PROMPT,
			  "each input of an embeddings request is embedded on its own, so a system "
			  "prompt would be one more input",
			  "the query and each document are texts of their own, so a system prompt "
			  "would be one more text" },
		};
		for (size_t i = 0; i < N(no); i++) {
			if (seen[no[i].idx]) {
				const char *why = emb ? no[i].why_emb : no[i].why_score;
				cli_scn_error(c, seen[no[i].idx],
					      "workload.%s cannot be used with workload.api: "
					      "%s (%s)",
					      workload_fields[no[i].idx].name, cl_api_name(w->api),
					      why ? why : none);
				return;
			}
		}
		if (w->synthetic_output.mean > 0)
			cli_scn_error(c, api,
				      "workload.synthetic.output_tokens cannot be used with "
				      "workload.api: %s (%s)",
				      cl_api_name(w->api), none);
		return;
	}
	/* multi_turn needs nothing more: chat, responses (the history as input items) and
	 * completions (the history inside the prompt string) all hold conversations. */
}

/* Resolves *path against the scenario's directory and checks it can be read (internal.h). */
void cli_scn_resolve_file(struct scn_ctx *c, char **path, const char *what, const struct ynode *at)
{
	if ((*path)[0] != '/' && c->dir[0]) {
		char *p = NULL;
		if (asprintf(&p, "%s/%s", c->dir, *path) < 0) {
			c->oom = true;
			return;
		}
		free(*path);
		*path = p;
	}
	struct stat st;
	if (stat(*path, &st) != 0 || access(*path, R_OK) != 0)
		cli_scn_error(c, at, "%s: cannot open '%s': %s", what, *path, strerror(errno));
	else if (S_ISDIR(st.st_mode))
		cli_scn_error(c, at, "%s: '%s' is a directory", what, *path);
}

void cli_scn_conv_workload(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	struct cl_scn_workload *w = &l->s->workload;
	const struct ynode **seen = l->workload;
	cli_scn_fields(c, v, workload_fields, N(workload_fields), w, seen, cli_scn_hint_for);
	check_api(c, w, seen);
	check_tools(c, w, seen[WF_TOOLS], seen[WF_MULTI_TURN]);
	/* An answer sent whole (embeddings, rerank, score) has no tokens to count; a
	 * transcription is cancelled by time. */
	if (seen[WF_CANCEL] && w->cancel_after_tokens && !cl_api_streams(w->api))
		cli_scn_error(
		    c, seen[WF_CANCEL],
		    "workload.cancel.after_tokens cannot be used with workload.api: %s "
		    "(%s; use after: a delay)",
		    cl_api_name(w->api),
		    w->api == CL_API_EMBEDDINGS ? "an embeddings answer streams no tokens"
		    : w->api == CL_API_RERANK   ? "a rerank answer streams no tokens"
		    : w->api == CL_API_SCORE
			? "a score answer streams no tokens"
			: "a transcription is cancelled by time, not by its text's tokens");
	int sources =
	    !!seen[WF_PROMPTS] + !!seen[WF_DATASET] + !!seen[WF_SYNTHETIC] + !!seen[WF_TRACE];
	l->given.workload_source = sources > 0 || seen[WF_AUDIO];
	if (sources > 1) {
		cli_scn_error(
		    c,
		    seen[WF_TRACE]       ? seen[WF_TRACE]
		    : seen[WF_SYNTHETIC] ? seen[WF_SYNTHETIC]
					 : seen[WF_DATASET],
		    "workload: prompts, dataset, synthetic and trace are exclusive; choose "
		    "one");
		return;
	}
	if (seen[WF_DATASET]) {
		w->kind = CL_WORKLOAD_DATASET;
		if (w->dataset)
			cli_scn_resolve_file(c, &w->dataset, "workload.dataset",
					     l->workload[WF_DATASET]);
	}
	if (seen[WF_TRACE] && w->trace)
		cli_scn_resolve_file(c, &w->trace, "workload.trace.file", l->workload[WF_TRACE]);
	/* The dataset's own keys. */
	static const size_t dataset_only[] = { WF_DATASET_FORMAT, WF_DATASET_LIMIT,
					       WF_DATASET_OUTPUT_TOKENS, WF_DATASET_SHUFFLE,
					       WF_DATASET_FILTER };
	for (size_t i = 0; !seen[WF_DATASET] && i < N(dataset_only); i++) {
		const struct ynode *k = seen[dataset_only[i]];
		if (k) {
			cli_scn_error(c, k, "workload.%s only applies with workload.dataset",
				      workload_fields[dataset_only[i]].name);
			break;
		}
	}
	/* a trace's bodies are its arrivals: a class cannot bring prompts of its own */
	for (size_t k = 0; seen[WF_CLASSES] && seen[WF_TRACE] && k < w->n_classes; k++)
		if (w->classes[k].n_prompts || w->classes[k].input_tokens) {
			cli_scn_error(c, seen[WF_CLASSES],
				      "workload.classes[%zu] brings prompts of its own, which a "
				      "trace replay cannot send (its requests are the trace's)",
				      k);
			break;
		}
	/* classes tag single requests; a conversation's turns would have to share one */
	if (seen[WF_CLASSES] && seen[WF_MULTI_TURN])
		cli_scn_error(c, seen[WF_CLASSES],
			      "workload.classes cannot be combined with workload.multi_turn yet "
			      "(a conversation's turns would need one class)");
	/* multi_turn: conversations are made of synthetic prompts. */
	const struct ynode *mt = seen[WF_MULTI_TURN];
	if (mt && !seen[WF_SYNTHETIC])
		cli_scn_error(c, mt,
			      "workload.multi_turn needs workload.synthetic (conversations "
			      "are made of synthetic prompts)");
	else if (mt && w->turns.mean == 0)
		cli_scn_error(c, mt, "workload.multi_turn needs turns (e.g. { turns: 4 })");
}

void cli_scn_check_replay(struct scn_ctx *c)
{
	struct scn_loader *l = L(c);
	const struct cl_scenario *s = l->s;
	bool trace = s->workload.kind == CL_WORKLOAD_TRACE;
	size_t n = s->n_stages < SCN_MAX_STAGES ? s->n_stages : SCN_MAX_STAGES;
	for (size_t i = 0; i < n; i++) {
		if (s->stages[i].replay && !trace) {
			cli_scn_error(c, l->stage_nodes[i],
				      "stage '%s' replays a trace, but the workload has none (add "
				      "workload.trace: { file: ... })",
				      s->stages[i].name);
			return;
		}
		if (!s->stages[i].replay && !s->stages[i].search && trace) {
			cli_scn_error(c, l->stage_nodes[i],
				      "stage '%s' is not a replay stage: with workload.trace every "
				      "stage is { replay: true } (the trace decides when requests "
				      "start)",
				      s->stages[i].name);
			return;
		}
		if (s->stages[i].search && trace) {
			cli_scn_error(c, l->stage_nodes[i],
				      "a capacity search cannot replay a trace");
			return;
		}
	}
}
