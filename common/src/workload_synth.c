/* Synthetic prompts: lengths drawn from a clamped normal distribution, words from a fixed
 * vocabulary, deterministic for the workload's seed. */
#include "workload_int.h"

#include "chatload/rng.h"

#include <math.h>
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

int cli_workload_synthesize(struct render_ctx *c, const struct cl_scn_workload *w,
			    struct cl_err *err)
{
	const struct cl_len_dist *d = &w->synthetic_input;
	uint32_t lo = d->min ? d->min : 1;
	uint32_t hi = d->max ? d->max : CL_WORKLOAD_MAX_SYNTH_TOKENS;
	if (w->synthetic_count == 0)
		return cl_err_set(err, CL_EINVAL, "workload.synthetic.count must be positive");
	if (hi > CL_WORKLOAD_MAX_SYNTH_TOKENS)
		return cl_err_set(err, CL_ERANGE,
				  "workload.synthetic.input_tokens max %u is above the cap of %u",
				  hi, CL_WORKLOAD_MAX_SYNTH_TOKENS);
	if (lo > hi)
		return cl_err_set(err, CL_EINVAL,
				  "workload.synthetic.input_tokens min %u is above max %u", lo, hi);
	if (!isfinite(d->mean) || d->mean < 0 || !isfinite(d->stddev) || d->stddev < 0)
		return cl_err_set(err, CL_EINVAL,
				  "workload.synthetic.input_tokens mean and stddev must be "
				  "non-negative numbers");
	uint64_t rng = w->seed;
	struct cl_buf text;
	cl_buf_init(&text, (size_t)CL_WORKLOAD_MAX_SYNTH_TOKENS * 4 + 64);
	int rc = 0;
	for (uint32_t i = 0; i < w->synthetic_count; i++) {
		double x = d->mean + (d->stddev > 0 ? d->stddev * cl_splitmix_normal(&rng) : 0);
		x = round(x);
		uint32_t tokens = x < lo ? lo : x > hi ? hi : (uint32_t)x;
		size_t want = (size_t)tokens * 4;
		cl_buf_reset(&text);
		/* The leading number makes every prompt's first token distinct, so a prefix cache
		 * cannot serve one prompt's prefill from another's. */
		rc = cl_buf_printf(&text, "%u:", i + 1);
		while (!rc && text.len < want) {
			const char *word = vocabulary[cl_splitmix64(&rng) % VOCAB_N];
			rc = cl_buf_printf(&text, " %s", word);
		}
		if (rc) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory building synthetic prompts");
			break;
		}
		if (text.len > want && want > 0) {
			size_t head = strchr(text.data, ':') - text.data + 1;
			text.len = want > head ? want : head;
			/* A prompt that ends in a space reads as cut off to some tokenisers. */
			while (text.len > head && text.data[text.len - 1] == ' ')
				text.len--;
			text.data[text.len] = '\0';
		}
		if ((rc = cli_workload_push_prompt(c, c->system_prompt, text.data, text.len,
						   err)) != 0)
			break;
	}
	cl_buf_free(&text);
	return rc;
}
