/* Why a capacity search's answer is where it is, in the server's own words: the signal of
 * stages[].server that changed between the last level that held and the first that broke. */
#ifndef CHATLOAD_SERVER_EXPLAIN_H
#define CHATLOAD_SERVER_EXPLAIN_H

#include <jansson.h>
#include <stddef.h>

/*
 * below, above: results.json stage objects (the sustainable probe and the breaking one;
 * either may be NULL or lack `server`); above_level: how the breaking level reads ("16
 * streams").  Returns a new object {signal, text, ttft} (capacity.explanation in
 * docs/results.md), or json_null() when the server said nothing (no scrape, no figure);
 * NULL when out of memory.
 */
json_t *cl_srv_explain(const json_t *below, const json_t *above, const char *above_level);

#endif
