/* libFuzzer target: a /metrics page as a server might send it, decoded and mapped to the
 * common vocabulary: never a crash or a leak, every sample kept has a name, and a histogram's
 * bounds stay ascending. */
#include "coordinator/server/prom.h"
#include "coordinator/server/vocab.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cl_prom_page pg = { 0 };
	if (cl_prom_parse((const char *)data, size, &pg, NULL) == 0) {
		for (size_t i = 0; i < pg.n; i++)
			if (!pg.s[i].name[0] || !pg.s[i].family || !pg.s[i].labels)
				abort();
		struct cl_srv_snap sn = { 0 };
		cl_srv_vocab_read(&pg, &sn);
		const struct cl_srv_hist *hs[] = { &sn.ttft, &sn.queue, &sn.e2e };
		for (size_t k = 0; k < 3; k++) {
			for (uint32_t i = 1; i < hs[k]->n; i++)
				if (!(hs[k]->le[i - 1] < hs[k]->le[i]))
					abort();
			(void)cl_srv_hist_quantile(hs[k], 0.99);
		}
	}
	cl_prom_page_free(&pg);
	return 0;
}
