/* Client stall episodes: the bounded, self-merging list (chatload/stall.h). */
#include "chatload/stall.h"

#include "chatload/assert.h"

#include <string.h>

static int64_t end_of(const struct cl_stall *s)
{
	return s->start_us + s->length_us;
}

/* Removes entry i, keeping the order. */
static void remove_at(struct cl_stall_list *l, uint32_t i)
{
	CL_ASSERT(i < l->n);
	memmove(&l->ep[i], &l->ep[i + 1], (l->n - i - 1) * sizeof(l->ep[0]));
	l->n--;
}

void cl_stall_list_add(struct cl_stall_list *l, int64_t start_us, int64_t length_us)
{
	if (length_us <= 0)
		return;
	if (start_us > INT64_MAX - length_us)
		length_us = INT64_MAX - start_us;
	struct cl_stall nw = { start_us, length_us };
	/* Swallow every kept episode that overlaps or touches the new one; the union grows as
	 * it goes, so one pass in start order catches chains. */
	for (uint32_t i = 0; i < l->n;) {
		struct cl_stall *k = &l->ep[i];
		if (k->start_us <= end_of(&nw) && nw.start_us <= end_of(k)) {
			int64_t s = k->start_us < nw.start_us ? k->start_us : nw.start_us;
			int64_t e = end_of(k) > end_of(&nw) ? end_of(k) : end_of(&nw);
			nw.start_us = s;
			nw.length_us = e - s;
			remove_at(l, i);
			i = 0; /* the union may now reach an earlier entry */
			continue;
		}
		i++;
	}
	if (l->n == CL_STALLS_MAX) {
		uint32_t shortest = 0;
		for (uint32_t i = 1; i < l->n; i++)
			if (l->ep[i].length_us < l->ep[shortest].length_us)
				shortest = i;
		if (l->dropped < UINT32_MAX)
			l->dropped++;
		if (l->ep[shortest].length_us >= nw.length_us)
			return;
		remove_at(l, shortest);
	}
	CL_ASSERT(l->n < CL_STALLS_MAX); /* the insert below needs a free slot */
	uint32_t at = 0;
	while (at < l->n && l->ep[at].start_us < nw.start_us)
		at++;
	memmove(&l->ep[at + 1], &l->ep[at], (l->n - at) * sizeof(l->ep[0]));
	l->ep[at] = nw;
	l->n++;
}

void cl_stall_list_merge(struct cl_stall_list *dst, const struct cl_stall_list *src)
{
	uint32_t n = src->n < CL_STALLS_MAX ? src->n : CL_STALLS_MAX;
	for (uint32_t i = 0; i < n; i++)
		cl_stall_list_add(dst, src->ep[i].start_us, src->ep[i].length_us);
	dst->dropped =
	    dst->dropped > UINT32_MAX - src->dropped ? UINT32_MAX : dst->dropped + src->dropped;
}

int64_t cl_stall_list_longest_us(const struct cl_stall_list *l)
{
	int64_t m = 0;
	for (uint32_t i = 0; i < l->n && i < CL_STALLS_MAX; i++)
		if (l->ep[i].length_us > m)
			m = l->ep[i].length_us;
	return m;
}
