/* The no-answer backoff rule and a binary min-heap of parked slots (see backoff.h). */
#include "backoff.h"

#include "chatload/assert.h"
#include "chatload/err.h"

#include <stdlib.h>

int64_t cl_backoff_delay_us(uint32_t streak, double u)
{
	return cl_backoff_scaled_us(CL_BACKOFF_BASE_US, CL_BACKOFF_CAP_US, streak, u);
}

int cl_park_init(struct cl_park_heap *h, uint32_t cap)
{
	h->n = 0;
	h->cap = cap;
	h->slot = calloc(cap ? cap : 1, sizeof(*h->slot));
	h->at_us = calloc(cap ? cap : 1, sizeof(*h->at_us));
	return h->slot && h->at_us ? 0 : CL_ENOMEM;
}

void cl_park_destroy(struct cl_park_heap *h)
{
	if (!h)
		return;
	free(h->slot);
	free(h->at_us);
	h->slot = NULL;
	h->at_us = NULL;
	h->n = h->cap = 0;
}

static void swap(struct cl_park_heap *h, uint32_t a, uint32_t b)
{
	uint32_t s = h->slot[a];
	int64_t t = h->at_us[a];
	h->slot[a] = h->slot[b];
	h->at_us[a] = h->at_us[b];
	h->slot[b] = s;
	h->at_us[b] = t;
}

void cl_park_push(struct cl_park_heap *h, uint32_t slot, int64_t at_us)
{
	/* The heap has a place for every slot and a slot is parked at most once: a full heap
	 * would silently lose a user of the closed loop. */
	CL_ASSERT(h->n < h->cap);
	uint32_t i = h->n++;
	h->slot[i] = slot;
	h->at_us[i] = at_us;
	while (i > 0 && h->at_us[(i - 1) / 2] > h->at_us[i]) {
		swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

int64_t cl_park_peek(const struct cl_park_heap *h)
{
	return h->n ? h->at_us[0] : INT64_MAX;
}

uint32_t cl_park_pop(struct cl_park_heap *h)
{
	CL_ASSERT(h->n > 0);
	uint32_t top = h->slot[0];
	h->n--;
	if (h->n) {
		h->slot[0] = h->slot[h->n];
		h->at_us[0] = h->at_us[h->n];
		uint32_t i = 0;
		for (;;) {
			uint32_t l = 2 * i + 1, r = l + 1, m = i;
			if (l < h->n && h->at_us[l] < h->at_us[m])
				m = l;
			if (r < h->n && h->at_us[r] < h->at_us[m])
				m = r;
			if (m == i)
				break;
			swap(h, i, m);
			i = m;
		}
	}
	return top;
}
