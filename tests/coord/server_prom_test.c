/* The /metrics decoder and the vocabulary over saved pages (tests/data/metrics/README.md). */
#include "chatload/buf.h"
#include "coordinator/server/prom.h"
#include "coordinator/server/vocab.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void load(const char *file, struct cl_prom_page *pg)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/metrics/%s", getenv("CHATLOAD_TEST_DATA"), file);
	struct cl_buf b;
	cl_buf_init(&b, 1 << 24);
	assert_int_equal(cl_buf_read_file(&b, path), 0);
	memset(pg, 0, sizeof(*pg));
	assert_int_equal(cl_prom_parse(b.data, b.len, pg, NULL), 0);
	cl_buf_free(&b);
}

static const struct cl_prom_sample *find(const struct cl_prom_page *pg, const char *name,
					 size_t nth)
{
	for (size_t i = 0; i < pg->n; i++)
		if (strcmp(pg->s[i].name, name) == 0 && nth-- == 0)
			return &pg->s[i];
	return NULL;
}

static void test_edge_cases(void **state)
{
	(void)state;
	struct cl_prom_page pg;
	load("edge-cases.txt", &pg);
	/* bad name, bad value, unterminated label, no value, hex value */
	assert_int_equal(pg.bad_lines, 5);
	assert_string_equal(pg.first_bad, "line 10: bad value");
	const struct cl_prom_sample *s = find(&pg, "esc_gauge", 0);
	assert_non_null(s);
	assert_string_equal(s->labels,
			    "path=\"C:\\\\dir\\\\\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\"");
	assert_true(s->has_ts);
	assert_true(s->ts_ms == 1700000000000LL);
	assert_int_equal(s->type, CL_PROM_GAUGE);
	assert_true(s->value == 1.5);
	s = find(&pg, "esc_gauge", 1);
	assert_string_equal(s->labels, "trailing=\"comma\"");
	assert_true(isinf(s->value) && s->value < 0);
	assert_true(isnan(find(&pg, "nan_value", 0)->value));
	assert_true(isinf(find(&pg, "pos_inf", 0)->value));
	assert_true(find(&pg, "exp_value", 0)->value == 1.5e-3);
	assert_int_equal(find(&pg, "indented_untyped", 0)->type, CL_PROM_UNTYPED);
	s = find(&pg, "h_bucket", 1);
	assert_true(isinf(s->le));
	assert_string_equal(s->family, "h");
	assert_int_equal(s->type, CL_PROM_HISTOGRAM);
	assert_int_equal(find(&pg, "h_count", 0)->type, CL_PROM_HISTOGRAM);
	assert_null(find(&pg, "hex_value", 0));
	cl_prom_page_free(&pg);
}

static void test_vllm(void **state)
{
	(void)state;
	struct cl_prom_page pg;
	load("vllm-0.11.txt", &pg);
	assert_int_equal(pg.bad_lines, 0);
	struct cl_srv_snap sn = { .t_us = 7 };
	cl_srv_vocab_read(&pg, &sn);
	assert_int_equal(sn.engine, CL_SRV_VLLM);
	assert_true(sn.t_us == 7);
	assert_true(sn.running == 8 && sn.waiting == 3 && sn.kv_usage == 0.4375);
	assert_true(sn.prefix_queries == 120000 && sn.prefix_hits == 90000);
	assert_true(sn.preemptions == 2);
	assert_true(sn.spec_accepted == 2100 && sn.spec_draft == 3000);
	assert_true(isnan(sn.prefix_hit_rate));
	assert_int_equal(sn.ttft.n, 23);
	/* 60 of 100 by 0.1 s, 95 by 0.25: p50 in (0.08, 0.1], p99 in (0.25, 0.5] */
	double p50 = cl_srv_hist_quantile(&sn.ttft, 0.5),
	       p99 = cl_srv_hist_quantile(&sn.ttft, 0.99);
	assert_true(fabs(p50 - (0.08 + 0.02 * 50.0 / 60.0)) < 1e-9);
	assert_true(fabs(p99 - (0.25 + 0.25 * 4.0 / 5.0)) < 1e-9);
	assert_int_equal(sn.queue.n, 21);
	assert_true(fabs(cl_srv_hist_quantile(&sn.queue, 0.5) - 0.15) < 1e-9);
	assert_int_equal(sn.e2e.n, 0);
	cl_prom_page_free(&pg);
}

static void test_sglang_tgi(void **state)
{
	(void)state;
	struct cl_prom_page pg;
	load("sglang-0.5.txt", &pg);
	struct cl_srv_snap sn = { 0 };
	cl_srv_vocab_read(&pg, &sn);
	assert_int_equal(sn.engine, CL_SRV_SGLANG);
	assert_true(sn.running == 16 && sn.waiting == 5 && sn.kv_usage == 0.28);
	assert_true(fabs(sn.prefix_hit_rate - 0.007507552643049313) < 1e-15);
	assert_true(isnan(sn.prefix_queries) && isnan(sn.preemptions));
	assert_int_equal(sn.ttft.n, 19);
	assert_true(sn.e2e.n == 19 && sn.e2e.sum == 431.5);
	cl_prom_page_free(&pg);

	load("tgi-3.txt", &pg);
	cl_srv_vocab_read(&pg, &sn);
	assert_int_equal(sn.engine, CL_SRV_TGI);
	assert_true(sn.running == 32 && sn.waiting == 7);
	assert_true(isnan(sn.kv_usage));
	assert_int_equal(sn.ttft.n, 0);
	assert_int_equal(sn.queue.n, 14);
	cl_prom_page_free(&pg);
}

/* The page llama.cpp's llama-server (b4748 snapshot, --metrics) served here after a run. */
static void test_llamacpp_as_served(void **state)
{
	(void)state;
	struct cl_prom_page pg;
	load("llamacpp-b4748.txt", &pg);
	assert_int_equal(pg.bad_lines, 0);
	assert_int_equal(pg.n, 12);
	struct cl_srv_snap sn = { 0 };
	cl_srv_vocab_read(&pg, &sn);
	assert_int_equal(sn.engine, CL_SRV_LLAMACPP);
	assert_true(sn.running == 0 && sn.waiting == 0);
	assert_true(sn.kv_usage == 0.244141);
	assert_true(isnan(sn.prefix_queries) && isnan(sn.preemptions));
	assert_int_equal(sn.ttft.n, 0);
	/* n_busy_slots_per_decode is typed counter though it is an average: kept as given */
	assert_int_equal(find(&pg, "llamacpp:n_busy_slots_per_decode", 0)->type, CL_PROM_COUNTER);
	cl_prom_page_free(&pg);
}

/* dcgm-exporter's page (rebuilt): utilisation averaged over GPUs (percent to 0..1), memory
 * summed (MiB to bytes), the fraction over used + free, energy (mJ to J) and power summed;
 * its other series are not the
 * vocabulary's, so they are kept raw; an engine's page has no GPU figures. */
static void test_dcgm(void **state)
{
	(void)state;
	struct cl_prom_page pg, vl;
	load("dcgm-exporter-3.3.txt", &pg);
	assert_int_equal(pg.bad_lines, 0);
	assert_int_equal(pg.n, 26);
	struct cl_srv_snap sn = { 0 };
	cl_srv_vocab_read(&pg, &sn);
	assert_int_equal(sn.engine, CL_SRV_UNKNOWN);
	assert_true(isnan(sn.gpu_util) && isnan(sn.gpu_mem_used));
	load("vllm-0.11.txt", &vl);
	const struct cl_prom_page *both[] = { &vl, NULL, &pg };
	cl_srv_vocab_gpu(both, 3, &sn);
	assert_true(fabs(sn.gpu_util - 0.65) < 1e-12);
	assert_true(sn.gpu_mem_used == (61440.0 + 30720.0) * 1048576.0);
	assert_true(fabs(sn.gpu_mem_fraction - 92160.0 / 163840.0) < 1e-12);
	/* what the GPUs draw (issue 44): the energy counter summed, mJ to J; the power summed */
	assert_true(fabs(sn.gpu_energy_j - (1234567890.0 + 987654321.0) / 1000) < 1e-6);
	assert_true(fabs(sn.gpu_power_w - (412.5 + 288.25)) < 1e-9);
	assert_int_equal(sn.gpu_count, 2);
	assert_true(cl_srv_vocab_known("DCGM_FI_DEV_GPU_UTIL"));
	assert_true(cl_srv_vocab_known("DCGM_FI_DEV_FB_FREE"));
	assert_false(cl_srv_vocab_known("DCGM_FI_DEV_POWER_USAGE"));
	assert_true(cl_srv_vocab_known("vllm:time_to_first_token_seconds_bucket"));
	assert_true(cl_srv_vocab_known("vllm:num_requests_waiting"));
	assert_false(cl_srv_vocab_known("vllm:generation_tokens_total"));
	assert_false(cl_srv_vocab_known("process_start_time_seconds"));
	const struct cl_prom_sample *s = find(&pg, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1);
	assert_non_null(s);
	assert_int_equal(s->type, CL_PROM_COUNTER);
	assert_non_null(strstr(s->labels, "modelName=\"NVIDIA H100 80GB HBM3\""));
	/* Without GPU_UTIL, the profiling ratio stands in; the engine's page alone: none. */
	const struct cl_prom_page *eng[] = { &vl };
	cl_srv_vocab_gpu(eng, 1, &sn);
	assert_true(isnan(sn.gpu_util) && isnan(sn.gpu_mem_used) && isnan(sn.gpu_mem_fraction));
	assert_true(isnan(sn.gpu_energy_j) && isnan(sn.gpu_power_w) && sn.gpu_count == 0);
	for (size_t i = 0; i < pg.n; i++)
		if (strcmp(pg.s[i].name, "DCGM_FI_DEV_GPU_UTIL") == 0)
			pg.s[i].name[0] = 'X';
	const struct cl_prom_page *prof[] = { &pg };
	cl_srv_vocab_gpu(prof, 1, &sn);
	assert_true(fabs(sn.gpu_util - (0.85 + 0.41) / 2) < 1e-9);
	cl_prom_page_free(&vl);
	cl_prom_page_free(&pg);
}

/* Histograms of several label sets add up by bound; a page with no TYPE lines still maps. */
static void test_sum_and_untyped(void **state)
{
	(void)state;
	const char *page = "vllm:num_requests_running{engine=\"0\"} 3\n"
			   "vllm:num_requests_running{engine=\"1\"} 4\n"
			   "vllm:kv_cache_usage_perc{engine=\"0\"} 0.2\n"
			   "vllm:kv_cache_usage_perc{engine=\"1\"} 0.4\n"
			   "vllm:gpu_cache_usage_perc{engine=\"1\"} 0.9\n"
			   "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\"} 1\n"
			   "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} 2\n"
			   "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\"} 3\n"
			   "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\"} 4\n";
	struct cl_prom_page pg = { 0 };
	assert_int_equal(cl_prom_parse(page, strlen(page), &pg, NULL), 0);
	struct cl_srv_snap sn = { 0 };
	cl_srv_vocab_read(&pg, &sn);
	assert_true(sn.running == 7);
	assert_true(fabs(sn.kv_usage - 0.3) < 1e-12); /* the older name does not count twice */
	assert_int_equal(sn.ttft.n, 2);
	assert_true(sn.ttft.count[0] == 4 && sn.ttft.count[1] == 6);
	assert_true(isnan(sn.waiting));
	/* past the last finite bound, the quantile is that bound */
	assert_true(cl_srv_hist_quantile(&sn.ttft, 0.99) == 0.1);
	cl_prom_page_free(&pg);
}

/* Histograms labelled model_name are also kept per name (request classes' server view), the
 * label found wherever it stands and with escapes; the totals are still their sum. */
static void test_models(void **state)
{
	(void)state;
	const char *page =
	    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"base\",le=\"0.1\"} 1\n"
	    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"base\",le=\"+Inf\"} 2\n"
	    "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"base\"} 0.5\n"
	    "vllm:time_to_first_token_seconds_bucket{model_name=\"lo\\\"ra\",engine=\"1\",le=\"0.1\"} 3\n"
	    "vllm:time_to_first_token_seconds_bucket{model_name=\"lo\\\"ra\",engine=\"1\",le=\"+Inf\"} 7\n"
	    "vllm:request_queue_time_seconds_bucket{x=\"a,model_name=\\\"no\",model_name=\"base\",le=\"+Inf\"} 2\n"
	    "vllm:time_to_first_token_seconds_bucket{engine=\"2\",le=\"+Inf\"} 1\n";
	struct cl_prom_page pg = { 0 };
	assert_int_equal(cl_prom_parse(page, strlen(page), &pg, NULL), 0);
	struct cl_srv_snap sn = { 0 };
	cl_srv_vocab_read(&pg, &sn);
	assert_int_equal(sn.n_models, 2);
	assert_string_equal(sn.models[0].name, "base");
	assert_string_equal(sn.models[1].name, "lo\\\"ra");
	assert_true(sn.models[0].ttft.count[1] == 2 && sn.models[0].ttft.sum == 0.5);
	assert_true(sn.models[1].ttft.count[0] == 3 && sn.models[1].ttft.count[1] == 7);
	assert_int_equal(sn.models[0].queue.n, 1); /* a model_name inside a value is not one */
	assert_true(sn.ttft.count[1] == 10);       /* the total: every series, labelled or not */
	cl_prom_page_free(&pg);
}

static void test_caps(void **state)
{
	(void)state;
	struct cl_prom_page pg = { 0 };
	struct cl_err err = { 0 };
	assert_int_equal(cl_prom_parse("x 1\n", CL_PROM_MAX_PAGE + 1, &pg, &err), CL_ETOOBIG);
	assert_int_equal(pg.n, 0);
	size_t n = CL_PROM_MAX_SERIES + 10;
	char *big = malloc(n * 16);
	assert_non_null(big);
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(big + len, "s{i=\"%zu\"} 1\n", i);
	assert_int_equal(cl_prom_parse(big, len, &pg, NULL), 0);
	assert_int_equal(pg.n, CL_PROM_MAX_SERIES);
	assert_int_equal(pg.dropped, 10);
	cl_prom_page_free(&pg);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edge_cases), cmocka_unit_test(test_vllm),
		cmocka_unit_test(test_sglang_tgi), cmocka_unit_test(test_sum_and_untyped),
		cmocka_unit_test(test_caps),       cmocka_unit_test(test_llamacpp_as_served),
		cmocka_unit_test(test_dcgm),       cmocka_unit_test(test_models),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
