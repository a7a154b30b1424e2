/* Chunk lateness statistics of chatload-sim (see stats.h). */
#include "stats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void cl_sim_stats_late(struct cl_sim_stats *s, int64_t scheduled_us, int64_t actual_us)
{
	int64_t late = actual_us - scheduled_us;
	if (late < 0)
		late = 0;
	s->late_n++;
	s->late_sum_us += (double)late;
	if (late > s->late_max_us)
		s->late_max_us = late;
	if (late > s->late_max_tick_us)
		s->late_max_tick_us = late;
	if (late < CL_SIM_LATE_FINE)
		s->late[late]++;
	else if (late / 1000 < CL_SIM_LATE_FINE / 1000 + CL_SIM_LATE_COARSE)
		s->late[CL_SIM_LATE_FINE + late / 1000 - CL_SIM_LATE_FINE / 1000]++;
	else
		s->late_over++;
}

void cl_sim_stats_reset_chunks(struct cl_sim_stats *s)
{
	s->chunks = 0;
	s->spin_us = 0;
	s->late_n = 0;
	s->late_over = 0;
	s->late_max_us = 0;
	s->late_sum_us = 0;
	memset(s->late, 0, sizeof(s->late));
}

int64_t cl_sim_stats_percentile(const struct cl_sim_stats *s, double p)
{
	if (s->late_n == 0)
		return 0;
	uint64_t rank = (uint64_t)((p / 100.0) * (double)s->late_n + 0.5);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (int64_t i = 0; i < CL_SIM_LATE_FINE + CL_SIM_LATE_COARSE; i++) {
		seen += s->late[i];
		if (seen >= rank) {
			int64_t v = i < CL_SIM_LATE_FINE
					? i
					: (i - CL_SIM_LATE_FINE) * 1000 + CL_SIM_LATE_FINE;
			return v < s->late_max_us ? v : s->late_max_us;
		}
	}
	return s->late_max_us;
}

int cl_sim_stats_write(const struct cl_sim_stats *s, const char *path, struct cl_err *err)
{
	char tmp[4096 + 16];
	snprintf(tmp, sizeof(tmp), "%.4096s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return cl_err_set(err, CL_EIO, "cannot write stats file '%s': %s", tmp,
				  strerror(errno));
	fprintf(
	    f,
	    "{\"requests\":%llu,\"rejected\":%llu,\"completed\":%llu,\"client_gone\":%llu,"
	    "\"cut\":%llu,\"chunks\":%llu,\"spin_us\":%lld,\"late_us\":{\"n\":%llu,\"mean\":%.1f,"
	    "\"p50\":%lld,"
	    "\"p90\":%lld,\"p99\":%lld,\"p999\":%lld,\"max\":%lld,\"over_100s\":%llu}}\n",
	    (unsigned long long)s->requests, (unsigned long long)s->rejected,
	    (unsigned long long)s->completed, (unsigned long long)s->client_gone,
	    (unsigned long long)s->cut, (unsigned long long)s->chunks, (long long)s->spin_us,
	    (unsigned long long)s->late_n, s->late_n ? s->late_sum_us / (double)s->late_n : 0.0,
	    (long long)cl_sim_stats_percentile(s, 50), (long long)cl_sim_stats_percentile(s, 90),
	    (long long)cl_sim_stats_percentile(s, 99), (long long)cl_sim_stats_percentile(s, 99.9),
	    (long long)s->late_max_us, (unsigned long long)s->late_over);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return cl_err_set(err, CL_EIO, "cannot write stats file '%s': %s", path,
				  strerror(errno));
	}
	return 0;
}
