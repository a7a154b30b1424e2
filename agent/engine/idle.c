/*
 * Slots a burst left behind give their memory back (docs/engine.md, "Memory after a burst").
 *
 * A slot keeps its easy handle, SSE buffer and header list between requests, so a warm slot
 * costs nothing to reuse. But a stall of the host (or a burst of the load model) starts
 * hundreds of requests at once; afterwards the LIFO free stack reuses only the few slots
 * the steady load needs, and the rest would hold ~10 KiB each for the rest of the run: an
 * agent measured +2.5 MB after a 2 s stop, kept to the end of an hour's soak. A slot free
 * for CL_ENGINE_SLOT_IDLE_US is therefore shed: its easy handle and buffers are freed, its
 * connection stays in the shard's cache (libcurl's own idle limit closes it), and the next
 * request that takes it prepares it again, which costs microseconds and no handshake.
 */
#include "internal.h"

#include "chatload/assert.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#define SHED_EVERY_US  1000000 /* look once a second at most */
#define CONN_MAXAGE_US (120 * 1000000LL)

uint32_t cli_worker_shed_idle(struct cl_worker *w, int64_t now_us)
{
	if (now_us < w->shed_due_us)
		return 0;
	w->shed_due_us = now_us + SHED_EVERY_US;
	/*
	 * The free stack holds, from the bottom up, the slots never used yet (the initial
	 * ones, left untouched so their pages stay unmapped: never read them) and then the
	 * freed ones in the order they were freed. So from the top down: skip the slots freed
	 * too recently, shed the rest until one has no handle; below that one every slot is
	 * older still, so a pass before this one shed it, or it was never used.
	 */
	int64_t cutoff = now_us - CL_ENGINE_SLOT_IDLE_US;
	uint32_t shed = 0;
	for (uint32_t i = w->nfree; i-- > 0;) {
		struct cl_slot *s = &w->slots[w->free_stack[i]];
		if (!s->easy)
			break;
		if (s->freed_us > cutoff)
			continue;
		CL_ASSERT(!s->busy && !s->parked);
		cli_slot_destroy(s);
		shed++;
	}
	/* The freed chunks sit among live ones in the worker's arena: without a trim the
	 * allocator keeps their pages resident. So trim after a shed, and once more when
	 * libcurl has closed the burst's connections (idle past its 118 s CURLOPT_MAXAGE_CONN
	 * default, counted from their last use, which was before the shed). Rare. */
	bool trim = shed > 0 || (w->trim_again_us && now_us >= w->trim_again_us);
	if (shed)
		w->trim_again_us = now_us + CONN_MAXAGE_US;
	else if (trim)
		w->trim_again_us = 0;
#if defined(__GLIBC__)
	if (trim)
		(void)malloc_trim(0);
#endif
	return shed;
}
