/* Synthetic prompts and shared prefixes: lengths drawn from a clamped normal distribution,
 * words from a fixed vocabulary, deterministic for the workload's seed. */
#include "coordinator/workload/internal.h"

#include "chatload/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Common short English words: text that tokenises like prose, about one token a word. */
static const char *const vocabulary[] = {
	"the",     "of",      "and",      "to",         "in",       "is",      "that",
	"for",     "it",      "as",       "was",        "with",     "be",      "by",
	"on",      "not",     "he",       "this",       "are",      "or",      "his",
	"from",    "at",      "which",    "but",        "have",     "an",      "had",
	"they",    "you",     "were",     "their",      "one",      "all",     "we",
	"can",     "her",     "has",      "there",      "been",     "if",      "more",
	"when",    "will",    "would",    "who",        "so",       "no",      "time",
	"people",  "year",    "way",      "day",        "man",      "thing",   "woman",
	"life",    "child",   "world",    "school",     "state",    "family",  "student",
	"group",   "country", "problem",  "hand",       "part",     "place",   "case",
	"week",    "company", "system",   "program",    "question", "work",    "number",
	"night",   "point",   "home",     "water",      "room",     "mother",  "area",
	"money",   "story",   "fact",     "month",      "lot",      "right",   "study",
	"book",    "eye",     "job",      "word",       "business", "issue",   "side",
	"kind",    "head",    "house",    "service",    "friend",   "father",  "power",
	"hour",    "game",    "line",     "end",        "member",   "law",     "car",
	"city",    "name",    "team",     "minute",     "idea",     "kid",     "body",
	"back",    "parent",  "face",     "others",     "level",    "office",  "door",
	"health",  "person",  "art",      "war",        "history",  "party",   "result",
	"change",  "morning", "reason",   "research",   "girl",     "guy",     "moment",
	"air",     "teacher", "force",    "education",  "good",     "new",     "first",
	"last",    "long",    "great",    "little",     "own",      "other",   "old",
	"big",     "high",    "small",    "large",      "next",     "early",   "young",
	"few",     "public",  "bad",      "same",       "able",     "say",     "make",
	"go",      "know",    "take",     "see",        "come",     "think",   "look",
	"want",    "give",    "use",      "find",       "tell",     "ask",     "seem",
	"feel",    "try",     "leave",    "call",       "keep",     "begin",   "help",
	"talk",    "turn",    "start",    "show",       "hear",     "play",    "run",
	"move",    "like",    "live",     "believe",    "bring",    "write",   "provide",
	"sit",     "stand",   "lose",     "pay",        "meet",     "include", "continue",
	"set",     "learn",   "lead",     "understand", "watch",    "follow",  "stop",
	"create",  "speak",   "read",     "allow",      "add",      "spend",   "grow",
	"open",    "walk",    "win",      "offer",      "remember", "love",    "consider",
	"appear",  "buy",     "wait",     "serve",      "die",      "send",    "expect",
	"build",   "stay",    "fall",     "cut",        "reach",    "kill",    "remain",
	"suggest", "raise",   "pass",     "sell",       "require",  "report",  "decide",
	"pull",    "explain", "describe", "answer",
};
#define VOCAB_N (sizeof(vocabulary) / sizeof(vocabulary[0]))

int cli_workload_words(struct cl_buf *out, const char *head, uint32_t tokens, uint64_t *rng)
{
	size_t base = out->len;
	size_t want = (size_t)tokens * CL_WORKLOAD_CHARS_PER_TOKEN;
	int rc = cl_buf_puts(out, head);
	size_t head_end = out->len;
	while (!rc && out->len - base < want) {
		const char *word = vocabulary[cl_splitmix64(rng) % VOCAB_N];
		rc = cl_buf_printf(out, " %s", word);
	}
	if (rc)
		return rc;
	/* Cut to the length wanted (the text is ASCII, so bytes are characters), never into
	 * the head; a prompt that ends in a space reads as cut off to some tokenisers. */
	if (out->len - base > want) {
		size_t keep = base + want > head_end ? base + want : head_end;
		out->len = keep;
		while (out->len > head_end && out->data[out->len - 1] == ' ')
			out->len--;
		out->data[out->len] = '\0';
	}
	return 0;
}

/* A length drawn from d (normal, rounded, clamped to [min, max]). */
static uint32_t draw(const struct cl_len_dist *d, uint32_t lo, uint32_t hi, uint64_t *rng)
{
	double x = d->mean + (d->stddev > 0 ? d->stddev * cl_splitmix_normal(rng) : 0);
	x = round(x);
	return x < lo ? lo : x > hi ? hi : (uint32_t)x;
}

/* Checks a length distribution of the scenario (the loader checked most of it). */
static int check_dist(const struct cl_len_dist *d, const char *what, uint32_t cap, uint32_t *lo,
		      uint32_t *hi, struct cl_err *err)
{
	*lo = d->min ? d->min : 1;
	*hi = d->max ? d->max : cap;
	if (*hi > cap)
		return cl_err_set(err, CL_ERANGE, "%s max %u is above the cap of %u", what, *hi,
				  cap);
	if (*lo > *hi)
		return cl_err_set(err, CL_EINVAL, "%s min %u is above max %u", what, *lo, *hi);
	if (!isfinite(d->mean) || d->mean < 0 || !isfinite(d->stddev) || d->stddev < 0)
		return cl_err_set(err, CL_EINVAL, "%s mean and stddev must be non-negative numbers",
				  what);
	return 0;
}

int cli_workload_make_prefixes(struct render_ctx *c, const struct cl_scn_workload *w,
			       struct cl_err *err)
{
	uint32_t groups = w->shared_prefix_groups;
	if (!groups)
		return 0;
	if (w->shared_prefix_tokens == 0 || w->shared_prefix_tokens > CL_WORKLOAD_MAX_SYNTH_TOKENS)
		return cl_err_set(err, CL_ERANGE,
				  "workload.shared_prefix.tokens must be 1..%u, got %u",
				  CL_WORKLOAD_MAX_SYNTH_TOKENS, w->shared_prefix_tokens);
	if (!(c->prefixes = calloc(groups, sizeof(char *))))
		return cl_err_set(err, CL_ENOMEM, "out of memory building shared prefixes");
	c->n_prefixes = groups;
	struct cl_buf text;
	cl_buf_init(&text, (size_t)CL_WORKLOAD_MAX_SYNTH_TOKENS * CL_WORKLOAD_CHARS_PER_TOKEN + 64);
	int rc = 0;
	for (uint32_t g = 0; g < groups && !rc; g++) {
		/* Each group's words have their own sequence, and its head differs from the first
		 * character on, so two groups share no cacheable prefix. */
		uint64_t rng = w->seed ^ (0x7072656669780000ULL + g);
		char head[32];
		snprintf(head, sizeof(head), "[group %u]", g + 1);
		cl_buf_reset(&text);
		rc = cli_workload_words(&text, head,
					cli_workload_scaled(c, w->shared_prefix_tokens), &rng);
		if (!rc && !(c->prefixes[g] = strdup(text.data)))
			rc = CL_ENOMEM;
	}
	cl_buf_free(&text);
	return rc ? cl_err_set(err, CL_ENOMEM, "out of memory building shared prefixes") : 0;
}

int cli_workload_synthesize(struct render_ctx *c, const struct cl_scn_workload *w,
			    struct cl_err *err)
{
	const struct cl_len_dist *in = &w->synthetic_input, *out = &w->synthetic_output;
	bool has_out = out->mean > 0;
	uint32_t lo, hi, olo = 0, ohi = 0;
	if (w->synthetic_count == 0)
		return cl_err_set(err, CL_EINVAL, "workload.synthetic.count must be positive");
	int rc = check_dist(in, "workload.synthetic.input_tokens", CL_WORKLOAD_MAX_SYNTH_TOKENS,
			    &lo, &hi, err);
	if (!rc && has_out)
		rc = check_dist(out, "workload.synthetic.output_tokens", 10000000, &olo, &ohi, err);
	if (rc)
		return rc;
	uint32_t tlo = 1, thi = 1;
	if (w->multi_turn && (rc = check_dist(&w->turns, "workload.multi_turn.turns",
					      CL_SCN_MAX_TURNS, &tlo, &thi, err)) != 0)
		return rc;
	uint64_t rng = w->seed;
	/* Output lengths have a sequence of their own, so adding them changes no prompt; so do
	 * the turns of conversations. */
	uint64_t orng = w->seed ^ 0x6f75747075740000ULL;
	uint64_t trng = w->seed ^ 0x7475726e73000000ULL;
	struct cl_buf text;
	cl_buf_init(&text, (size_t)CL_WORKLOAD_MAX_SYNTH_TOKENS * CL_WORKLOAD_CHARS_PER_TOKEN + 64);
	for (uint32_t i = 0; i < w->synthetic_count && !rc; i++) {
		/* With multi_turn, prompt i is a conversation of `turns` prompts. */
		uint32_t turns = w->multi_turn ? draw(&w->turns, tlo, thi, &trng) : 1;
		for (uint32_t t = 1; t <= turns; t++) {
			uint32_t tokens = draw(in, lo, hi, &rng);
			uint32_t out_tokens = has_out ? draw(out, olo, ohi, &orng) : 0;
			char head[32];
			/* The leading number makes every prompt's first token distinct, so a prefix
			 * cache cannot serve one prompt's prefill from another's. */
			if (w->multi_turn)
				snprintf(head, sizeof(head), "%u.%u:", i + 1, t);
			else
				snprintf(head, sizeof(head), "%u:", i + 1);
			cl_buf_reset(&text);
			if (cli_workload_words(&text, head, cli_workload_scaled(c, tokens), &rng) !=
			    0) {
				rc = cl_err_set(err, CL_ENOMEM,
						"out of memory building synthetic prompts");
				break;
			}
			c->stats->records++;
			rc = w->multi_turn
				 ? cli_workload_push_turn(c, c->system_prompt, text.data, text.len,
							  out_tokens, t, err)
				 : cli_workload_push_prompt(c, c->system_prompt, text.data,
							    text.len, out_tokens, err);
			if (rc)
				break;
		}
	}
	cl_buf_free(&text);
	return rc;
}

int cl_workload_sample_text(uint32_t tokens, char **out)
{
	struct cl_buf text;
	uint64_t rng = 0x63616c6962ULL;
	cl_buf_init(&text, 0);
	*out = NULL;
	if (cli_workload_words(&text, "", tokens, &rng) != 0 || !(*out = cl_buf_steal(&text))) {
		cl_buf_free(&text);
		return CL_ENOMEM;
	}
	return 0;
}
