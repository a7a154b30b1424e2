/* The engine's control side: create/start/stop/collect/wait/destroy, called from the agent's
 * control thread; each call hands work to the workers without touching their hot path. */
#include "internal.h"

#include "chatload/clock.h"
#include "chatload/fdlimit.h"
#include "chatload/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define COLLECT_HANDOFF_US 1000000 /* longest wait for one worker's swap */

const char *cl_engine_state_name(enum cl_engine_state s)
{
	switch (s) {
	case CL_ENGINE_IDLE:
		return "idle";
	case CL_ENGINE_WAITING:
		return "waiting";
	case CL_ENGINE_RAMPING:
		return "ramping";
	case CL_ENGINE_RUNNING:
		return "running";
	case CL_ENGINE_DRAINING:
		return "draining";
	case CL_ENGINE_DONE:
		return "done";
	}
	return "unknown";
}

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

static int copy_target(struct cl_target_plan *d, const struct cl_target_plan *s)
{
	bool oom = false;
	memset(d, 0, sizeof(*d));
	d->base_url = dup_or_null(s->base_url, &oom);
	d->model = dup_or_null(s->model, &oom);
	d->api_key_env = dup_or_null(s->api_key_env, &oom);
	d->ca_file = dup_or_null(s->ca_file, &oom);
	d->http2 = s->http2;
	d->http2_fallback = s->http2_fallback;
	d->http2_streams = s->http2_streams;
	d->tls_verify = s->tls_verify;
	d->connect_timeout_us = s->connect_timeout_us;
	d->api = s->api;
	if (s->n_headers) {
		d->headers = calloc(s->n_headers, sizeof(*d->headers));
		if (!d->headers)
			return CL_ENOMEM;
		d->n_headers = s->n_headers;
		for (size_t i = 0; i < s->n_headers; i++)
			d->headers[i] = dup_or_null(s->headers[i], &oom);
	}
	if (s->n_endpoints) {
		d->endpoints = calloc(s->n_endpoints, sizeof(*d->endpoints));
		if (!d->endpoints)
			return CL_ENOMEM;
		d->n_endpoints = s->n_endpoints;
		for (size_t i = 0; i < s->n_endpoints; i++)
			d->endpoints[i] = dup_or_null(s->endpoints[i], &oom);
	}
	d->route = s->route;
	return oom ? CL_ENOMEM : 0;
}

_Static_assert(CL_METRICS_EPS_MAX == CL_ENDPOINTS_MAX, "a record holds every endpoint a plan may");

/* Several endpoints (target.urls): each gets its target built as the first's, so each URL is
 * checked (--allow-target too) before anything is sent.  0, or an error naming the URL. */
static int init_endpoints(struct cl_engine *e, const struct cl_allow_list *allow,
			  struct cl_err *err)
{
	uint32_t n = (uint32_t)e->target.n_endpoints;
	if (n < 2)
		return 0;
	e->ep_http = calloc(n, sizeof(*e->ep_http));
	e->ep_outstanding = calloc(n, sizeof(*e->ep_outstanding));
	if (!e->ep_http || !e->ep_outstanding)
		return cl_err_set(err, CL_ENOMEM, "out of memory for %u endpoints", n);
	e->n_eps = n;
	for (uint32_t i = 0; i < n; i++) {
		struct cl_target_plan one = e->target; /* shallow: only the base URL differs */
		one.base_url = e->target.endpoints[i];
		one.endpoints = NULL;
		one.n_endpoints = 0;
		int rc = cl_http_target_init(&e->ep_http[i], &one, allow, err);
		if (rc) {
			cl_err_prefix(err, "endpoint %u (%s)", i + 1, one.base_url);
			return rc;
		}
	}
	return 0;
}

/*
 * The engine's own copy of the plan: every value as the plan says, so a field added to
 * struct cl_workload_plan or cl_request_body needs no line here (a copy field by field had
 * dropped each body's embeddings `inputs`, so the "vectors for inputs" check never ran), the
 * bodies and their text deep-copied.  The engine holds the whole workload in one piece, from
 * the first body of its share when that is one of them.  Partly built on failure
 * (cl_workload_plan_free is safe on it).
 */
static int copy_workload(struct cl_workload_plan *d, const struct cl_workload_plan *s)
{
	*d = *s;
	d->bodies = NULL;
	d->n_bodies = 0;
	d->classes = NULL; /* deep-copied below, as the bodies are */
	d->n_classes = 0;
	d->total_bodies = s->n_bodies;
	d->first_body = s->first_body < s->n_bodies ? s->first_body : 0;
	d->bodies = calloc(s->n_bodies, sizeof(*d->bodies));
	if (!d->bodies)
		return CL_ENOMEM;
	d->n_bodies = s->n_bodies;
	if (s->n_classes) {
		if (!(d->classes = calloc(s->n_classes, sizeof(*d->classes))))
			return CL_ENOMEM;
		d->n_classes = s->n_classes;
		for (size_t k = 0; k < s->n_classes; k++) {
			const struct cl_class_plan *from = &s->classes[k];
			struct cl_class_plan *to = &d->classes[k];
			if (!(to->name = strdup(from->name ? from->name : "")))
				return CL_ENOMEM;
			if (from->n_headers &&
			    !(to->headers = calloc(from->n_headers, sizeof(char *))))
				return CL_ENOMEM;
			for (size_t h = 0; h < from->n_headers; h++, to->n_headers++)
				if (!(to->headers[h] = strdup(from->headers[h])))
					return CL_ENOMEM;
		}
	}
	for (size_t i = 0; i < s->n_bodies; i++) {
		char *json = malloc(s->bodies[i].len + 1);
		if (!json)
			return CL_ENOMEM;
		memcpy(json, s->bodies[i].json, s->bodies[i].len);
		json[s->bodies[i].len] = '\0';
		d->bodies[i] = s->bodies[i];
		d->bodies[i].json = json;
	}
	return 0;
}

/* Each request class's header lines as a list of nodes of its own, ending in NULL, which a
 * slot links after its last node for a request of that class (request.c). */
static int init_class_headers(struct cl_engine *e)
{
	e->n_cls = (uint32_t)e->workload.n_classes;
	for (uint32_t k = 0; k < e->n_cls; k++) {
		const struct cl_class_plan *c = &e->workload.classes[k];
		if (!c->n_headers)
			continue;
		if (!(e->cls_hdrs[k] = calloc(c->n_headers, sizeof(struct curl_slist))))
			return CL_ENOMEM;
		for (size_t h = 0; h < c->n_headers; h++) {
			e->cls_hdrs[k][h].data = c->headers[h];
			e->cls_hdrs[k][h].next =
			    h + 1 < c->n_headers ? &e->cls_hdrs[k][h + 1] : NULL;
		}
	}
	return 0;
}

static bool prefix_ok(const char *p)
{
	size_t n = strlen(p);
	if (n == 0 || n > CL_ENGINE_MAX_PREFIX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == ':' || c == '-'))
			return false;
	}
	return true;
}

/* Descriptors open in this process now (/proc/self/fd); the limit itself when not one more
 * can be opened; -1 when it cannot be read otherwise. */
static long open_fds(rlim_t limit)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return errno == EMFILE ? (long)limit : -1;
	long n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/*
 * Refuses a share whose streams cannot all have a socket: over HTTP/1.1 each stream in
 * flight holds a connection, so concurrency (or a rate's cap) beyond the descriptors left
 * under RLIMIT_NOFILE would fail later, one connect at a time, as errors that look like
 * the server's.  A few descriptors per worker are kept for libcurl's own (its wakeup pair,
 * name resolver) and the program's.  Multiplexed HTTP/2 shares connections, so it is not
 * checked (h2c with a connection per request, see client/httpver, is).
 */
static int check_fds(struct cl_engine *e, const struct cl_stage_plan *s, struct cl_err *err)
{
	uint64_t streams = s->concurrency;
	struct rlimit rl;
	if (e->http.ver.multiplex || streams == 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 ||
	    rl.rlim_cur == RLIM_INFINITY)
		return 0;
	long in_use = open_fds(rl.rlim_cur);
	if (in_use < 0)
		return 0;
	uint64_t reserve = 16 + 8 * (uint64_t)e->nworkers;
	uint64_t left =
	    rl.rlim_cur > (rlim_t)in_use + reserve ? rl.rlim_cur - (rlim_t)in_use - reserve : 0;
	if (streams <= left)
		return 0;
	return cl_err_set(err, CL_ERANGE,
			  "%s %llu needs %llu connections, but this agent can open only %llu "
			  "more files (open-file limit %llu, hard limit %llu, %ld in use): raise "
			  "the limit (ulimit -n, LimitNOFILE= in the systemd unit) or spread the "
			  "load over more agents",
			  s->mode == CL_MODE_RATE ? "the rate's in-flight cap" : "concurrency",
			  (unsigned long long)streams, (unsigned long long)streams,
			  (unsigned long long)left, (unsigned long long)rl.rlim_cur,
			  (unsigned long long)rl.rlim_max, in_use);
}

static int validate_cfg(const struct cl_engine_cfg *cfg, struct cl_err *err)
{
	if (!cfg || !cfg->target || !cfg->workload)
		return cl_err_set(err, CL_EINVAL, "engine needs a target and a workload");
	if (cfg->workload->n_bodies == 0 || !cfg->workload->bodies)
		return cl_err_set(err, CL_EINVAL, "workload has no request bodies");
	size_t n_cls = cfg->workload->n_classes;
	if (n_cls > CL_CLASSES_MAX || (n_cls && !cfg->workload->classes))
		return cl_err_set(err, CL_EINVAL, "workload has %zu request classes (at most %d)",
				  n_cls, CL_CLASSES_MAX);
	for (size_t i = 0; i < cfg->workload->n_bodies; i++) {
		if (!cfg->workload->bodies[i].json)
			return cl_err_set(err, CL_EINVAL, "request body %zu is missing", i);
		if (cfg->workload->bodies[i].cls >= (n_cls ? n_cls : 1))
			return cl_err_set(err, CL_EINVAL,
					  "request body %zu names class %u of %zu classes", i,
					  cfg->workload->bodies[i].cls, n_cls);
	}
	if (cfg->request_id_prefix && !prefix_ok(cfg->request_id_prefix))
		return cl_err_set(err, CL_EINVAL,
				  "bad request id prefix '%s': want 1-%d of [A-Za-z0-9._:-]",
				  cfg->request_id_prefix, CL_ENGINE_MAX_PREFIX);
	return 0;
}

int cl_engine_create(const struct cl_engine_cfg *cfg, struct cl_engine **out, struct cl_err *err)
{
	*out = NULL;
	int rc = validate_cfg(cfg, err);
	if (rc)
		return rc;
	cl_fd_limit_raise(); /* every stream is a socket */

	struct cl_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return cl_err_set(err, CL_ENOMEM, "out of memory");
	e->log_fd = -1;
	atomic_init(&e->log_failed, false);
	rc = CL_ESYS;
	if (pthread_mutex_init(&e->mu, NULL) != 0)
		goto fail_msg;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&e->cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		pthread_mutex_destroy(&e->mu);
		goto fail_msg;
	}
	pthread_condattr_destroy(&ca);
	e->sync_init = true;
	if (pthread_mutex_init(&e->collect_mu, NULL) != 0)
		goto fail_msg;
	e->collect_mu_init = true;

	if ((rc = copy_target(&e->target, cfg->target)) != 0 ||
	    (rc = copy_workload(&e->workload, cfg->workload)) != 0 ||
	    (rc = cli_conv_index(e)) != 0 || (rc = cli_tools_init(e)) != 0 ||
	    (rc = init_class_headers(e)) != 0) {
		cl_err_set(err, rc, "out of memory copying the plan");
		goto fail;
	}
	if (e->target.api == CL_API_TRANSCRIPTION && (rc = cli_audio_forms(e, err)) != 0)
		goto fail;
	snprintf(e->prefix, sizeof(e->prefix), "%s",
		 cfg->request_id_prefix ? cfg->request_id_prefix : "cl");
	e->good_ttft_us = cfg->good_ttft_us;
	e->good_tpot_us = cfg->good_tpot_us;
	e->good_e2e_us = cfg->good_e2e_us;
	if ((rc = cl_http_target_init(&e->http, &e->target, cfg->allow, err)) != 0 ||
	    (rc = init_endpoints(e, cfg->allow, err)) != 0)
		goto fail;
	if (cfg->source && cfg->source->n) {
		e->n_src = cfg->source->n;
		e->src_iface = calloc(e->n_src, sizeof(*e->src_iface));
		e->src_conns = calloc(e->n_src, sizeof(*e->src_conns));
		if (!e->src_iface || !e->src_conns) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory");
			goto fail;
		}
		/* "host!" keeps libcurl from taking the text for an interface name. */
		for (size_t i = 0; i < e->n_src; i++) {
			snprintf(e->src_iface[i], sizeof(e->src_iface[i]), "host!%s",
				 cfg->source->addr[i]);
			atomic_init(&e->src_conns[i], 0);
		}
	}
	static atomic_bool warned_h2c;
	if (e->http.ver.fresh_connection && !atomic_exchange(&warned_h2c, true))
		CL_WARN(
		    "this libcurl (%s) cannot reuse an h2c prior-knowledge connection (fixed in "
		    "7.89.0): every request gets a connection of its own, HTTP/2 but not "
		    "multiplexed (docs/engine.md, \"HTTP/2\")",
		    curl_version_info(CURLVERSION_NOW)->version);

	if (cfg->request_log_path) {
		e->log_fd = open(cfg->request_log_path,
				 O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (e->log_fd < 0) {
			rc = cl_err_set(err, CL_EIO, "cannot open request log '%s': %s",
					cfg->request_log_path, strerror(errno));
			goto fail;
		}
	}

	if (cfg->request_records && (rc = cli_records_init(e, cfg->request_records)) != 0) {
		cl_err_set(err, rc, "cannot make room for %u request records",
			   cfg->request_records);
		goto fail;
	}

	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	e->nworkers = cfg->workers ? cfg->workers : (ncpu > 0 ? (uint32_t)ncpu : 1);
	uint32_t max_streams = cfg->max_streams ? cfg->max_streams : CL_ENGINE_DEFAULT_MAX_STREAMS;
	e->slots_per_worker = (max_streams + e->nworkers - 1) / e->nworkers;
	e->workers = calloc(e->nworkers, sizeof(*e->workers));
	if (!e->workers) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < e->nworkers; i++) {
		if ((rc = cli_worker_init(&e->workers[i], e, i, e->slots_per_worker, err)) != 0)
			goto fail;
	}
	for (uint32_t i = 0; i < e->nworkers; i++) {
		int prc =
		    pthread_create(&e->workers[i].thread, NULL, cli_worker_main, &e->workers[i]);
		if (prc != 0) {
			rc = cl_err_set(err, CL_ESYS, "cannot start worker thread %u: %s", i,
					strerror(prc));
			goto fail;
		}
		e->workers[i].thread_started = true;
	}
	*out = e;
	return 0;
fail_msg:
	cl_err_set(err, rc, "cannot create the engine's locks");
fail:
	cl_engine_destroy(e);
	return rc;
}

/* Share of the rate-mode ramp start for one worker: the agent's ramp_from in proportion to
 * the worker's rate (the split apportions ramp_from as an integer, too coarse for rates). */
static double worker_r0(const struct cl_stage_plan *share, const struct cl_stage_plan *part)
{
	if (!(share->rate_per_s > 0))
		return 0;
	return (double)share->ramp_from * part->rate_per_s / share->rate_per_s;
}

static int check_share(struct cl_engine *e, const struct cl_stage_plan *s,
		       const struct cl_stage_plan *parts, struct cl_err *err)
{
	if (s->duration_us <= 0 && s->requests == 0)
		return cl_err_set(err, CL_EINVAL, "stage needs a duration or a request count");
	if (s->duration_us < 0 || s->ramp_us < 0 || s->drain_timeout_us < 0)
		return cl_err_set(err, CL_EINVAL, "stage times must not be negative");
	if (s->mode == CL_MODE_RATE) {
		if (!(s->rate_per_s > 0) || !(s->rate_per_s < 1e7))
			return cl_err_set(err, CL_EINVAL, "rate %g/s out of range", s->rate_per_s);
		if (s->arrival == CL_ARRIVAL_GAMMA && !(s->gamma_shape > 0))
			return cl_err_set(err, CL_EINVAL, "gamma arrivals need a positive shape");
	} else if (s->mode != CL_MODE_CONCURRENCY) {
		return cl_err_set(err, CL_EINVAL, "unknown load mode %d", (int)s->mode);
	}
	for (uint32_t i = 0; i < e->nworkers; i++) {
		if (s->mode == CL_MODE_CONCURRENCY && parts[i].concurrency > e->slots_per_worker)
			return cl_err_set(err, CL_EINVAL,
					  "concurrency %u over %u workers needs more than their %u "
					  "stream slots each (raise max_streams)",
					  s->concurrency, e->nworkers, e->slots_per_worker);
	}
	return 0;
}

int cl_engine_start(struct cl_engine *e, const struct cl_stage_plan *share, int64_t start_mono_us,
		    struct cl_err *err)
{
	if (!e || !share)
		return cl_err_set(err, CL_EINVAL, "no engine or stage");
	enum cl_engine_state stt = cl_engine_state(e);
	if (stt != CL_ENGINE_IDLE && stt != CL_ENGINE_DONE)
		return cl_err_set(err, CL_ESTATE, "a stage is %s", cl_engine_state_name(stt));
	int rc;
	uint32_t *weights = calloc(e->nworkers, sizeof(*weights));
	struct cl_stage_plan *parts = calloc(e->nworkers, sizeof(*parts));
	if (!weights || !parts) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < e->nworkers; i++)
		weights[i] = 1;
	if ((rc = cl_stage_plan_split(share, weights, e->nworkers, parts)) != 0) {
		cl_err_set(err, rc, "cannot split the stage among %u workers", e->nworkers);
		goto out;
	}
	if ((rc = check_share(e, share, parts, err)) != 0 || (rc = check_fds(e, share, err)) != 0)
		goto out;

	/* Constant arrivals of equal-rate workers interleave: worker k of n starts k/n of a
	 * gap late. */
	uint32_t n_rate = 0, k_rate = 0;
	for (uint32_t i = 0; i < e->nworkers; i++)
		n_rate += parts[i].rate_per_s > 0;
	pthread_mutex_lock(&e->mu);
	e->done_workers = 0;
	e->started = true;
	pthread_mutex_unlock(&e->mu);
	/* One order per run: every stage takes the bodies after the last stage's, so a server's
	 * prompt cache has not seen them; per_stage starts each at the agent's first body (the
	 * same requests in the same order, repeats of the run's earlier ones). */
	uint64_t taken = atomic_load(&e->next_body);
	if (taken > e->taken_before)
		e->taken_before = taken;
	if (e->workload.per_stage)
		atomic_store(&e->next_body, 0);
	for (uint32_t i = 0; i < e->nworkers; i++) {
		struct cl_worker *w = &e->workers[i];
		pthread_mutex_lock(&w->mu);
		cl_stage_plan_free(&w->next_plan);
		w->next_plan = parts[i];
		free(w->next_plan.name); /* the worker keeps no name */
		w->next_plan.name = NULL;
		memset(&parts[i], 0, sizeof(parts[i]));
		w->next_start_us = start_mono_us;
		w->next_r0 = worker_r0(share, &w->next_plan);
		w->next_phase = 0;
		if (share->mode == CL_MODE_RATE && w->next_plan.rate_per_s > 0 && n_rate)
			w->next_phase = (double)k_rate++ / n_rate;
		atomic_store(&w->phase, CL_ENGINE_WAITING);
		atomic_store(&w->unsent_backlog, 0);
		atomic_store(&w->ramp_started, 0);
		atomic_store(&w->ramp_finished, 0);
		pthread_mutex_unlock(&w->mu);
		atomic_fetch_or(&w->cmd, CL_CMD_START);
		cli_worker_poke(w);
	}
	rc = 0;
out:
	for (uint32_t i = 0; parts && i < e->nworkers; i++)
		cl_stage_plan_free(&parts[i]);
	free(parts);
	free(weights);
	return rc;
}

static int64_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	if (!f)
		return 0;
	long pages_total = 0, pages_rss = 0;
	int k = fscanf(f, "%ld %ld", &pages_total, &pages_rss);
	fclose(f);
	if (k != 2)
		return 0;
	return (int64_t)pages_rss * sysconf(_SC_PAGESIZE);
}

/* Collects between trims of a worker's record: ~1 min at 100 ms intervals. */
#define COLLECT_TRIM_EVERY 601

int cl_engine_collect(struct cl_engine *e, struct cl_metrics *acc)
{
	if (!e || !acc)
		return CL_EINVAL;
	int rc = 0;
	double cpu_pct = 0;
	int64_t inflight = 0;
	pthread_mutex_lock(&e->collect_mu);
	/* Ask everyone first, so the workers swap in parallel rather than one after another. */
	for (uint32_t i = 0; i < e->nworkers; i++) {
		struct cl_worker *w = &e->workers[i];
		pthread_mutex_lock(&w->mu);
		if (!w->collect_outstanding) {
			w->collect_req++;
			w->collect_outstanding = true;
		}
		pthread_mutex_unlock(&w->mu);
		atomic_store(&w->collect_wanted, true);
		cli_worker_poke(w);
	}
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += COLLECT_HANDOFF_US / 1000000;
	for (uint32_t i = 0; i < e->nworkers; i++) {
		struct cl_worker *w = &e->workers[i];
		pthread_mutex_lock(&w->mu);
		while (w->collect_ack != w->collect_req) {
			if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT)
				break;
		}
		bool acked = w->collect_ack == w->collect_req;
		int64_t cpu = w->swap_cpu_us, mono = w->swap_mono_us;
		pthread_mutex_unlock(&w->mu);
		if (!acked) {
			rc = CL_ETIMEDOUT;
			continue;
		}
		/* The worker touches spare again only after the next request, so no lock. */
		int mrc = cl_metrics_merge(acc, w->spare);
		if (mrc && !rc)
			rc = mrc;
		/* Now and then the record also gives back its pages (the collector's thread,
		 * not the worker's loop), so the rare latencies of a soak do not keep theirs
		 * resident; odd, so both of the worker's records take their turn. */
		if (++w->collects % COLLECT_TRIM_EVERY == 0)
			cl_metrics_trim(w->spare);
		else
			cl_metrics_reset(w->spare);
		w->collect_outstanding = false;
		if (mono > w->prev_mono_us && w->prev_mono_us > 0)
			cpu_pct += 100.0 * (double)(cpu - w->prev_cpu_us) /
				   (double)(mono - w->prev_mono_us);
		w->prev_cpu_us = cpu;
		w->prev_mono_us = mono;
		inflight += atomic_load(&w->inflight);
	}
	pthread_mutex_unlock(&e->collect_mu);
	struct cl_health *h = &acc->health;
	if (cpu_pct > h->cpu_pct)
		h->cpu_pct = cpu_pct;
	if (e->nworkers * 100.0 > h->cpu_pct_capacity)
		h->cpu_pct_capacity = e->nworkers * 100.0;
	int64_t rss = rss_bytes();
	if (rss > h->rss_bytes)
		h->rss_bytes = rss;
	h->inflight += inflight;
	return rc;
}

void cl_engine_take_stalls(struct cl_engine *e, struct cl_stall_list *into)
{
	for (uint32_t i = 0; e && i < e->nworkers; i++) {
		struct cl_worker *w = &e->workers[i];
		pthread_mutex_lock(&w->mu);
		cl_stall_list_merge(into, &w->stalls);
		memset(&w->stalls, 0, sizeof(w->stalls));
		pthread_mutex_unlock(&w->mu);
	}
}

enum cl_engine_state cl_engine_state(struct cl_engine *e)
{
	if (!e)
		return CL_ENGINE_IDLE;
	pthread_mutex_lock(&e->mu);
	bool started = e->started;
	pthread_mutex_unlock(&e->mu);
	if (!started)
		return CL_ENGINE_IDLE;
	int least = CL_ENGINE_DONE;
	for (uint32_t i = 0; i < e->nworkers; i++) {
		int ph = atomic_load_explicit(&e->workers[i].phase, memory_order_acquire);
		if (ph < least)
			least = ph;
	}
	return (enum cl_engine_state)least;
}

int cl_engine_stop(struct cl_engine *e, bool cut_now)
{
	if (!e)
		return CL_EINVAL;
	for (uint32_t i = 0; i < e->nworkers; i++) {
		atomic_fetch_or(&e->workers[i].cmd, CL_CMD_STOP | (cut_now ? CL_CMD_CUT : 0u));
		cli_worker_poke(&e->workers[i]);
	}
	return 0;
}

int cl_engine_wait(struct cl_engine *e, int64_t timeout_us)
{
	if (!e)
		return CL_EINVAL;
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	if (timeout_us >= 0) {
		int64_t ns = dl.tv_nsec + (timeout_us % 1000000) * 1000;
		dl.tv_sec += (time_t)(timeout_us / 1000000 + ns / 1000000000);
		dl.tv_nsec = (long)(ns % 1000000000);
	}
	int rc = 0;
	pthread_mutex_lock(&e->mu);
	if (!e->started) {
		rc = CL_ESTATE;
	} else {
		while (e->done_workers < e->nworkers) {
			if (timeout_us < 0) {
				pthread_cond_wait(&e->cv, &e->mu);
			} else if (pthread_cond_timedwait(&e->cv, &e->mu, &dl) == ETIMEDOUT) {
				rc = e->done_workers < e->nworkers ? CL_ETIMEDOUT : 0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

int64_t cl_engine_inflight(struct cl_engine *e)
{
	int64_t n = 0;
	for (uint32_t i = 0; e && i < e->nworkers; i++)
		n += atomic_load_explicit(&e->workers[i].inflight, memory_order_relaxed);
	return n;
}

void cl_engine_stats(struct cl_engine *e, struct cl_engine_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!e)
		return;
	st->workers = e->nworkers;
	st->slots_per_worker = e->slots_per_worker;
	for (uint32_t i = 0; i < e->nworkers; i++) {
		st->unsent_backlog += atomic_load(&e->workers[i].unsent_backlog);
		st->ramp_started += atomic_load(&e->workers[i].ramp_started);
		st->ramp_finished += atomic_load(&e->workers[i].ramp_finished);
		st->loop_turns += atomic_load(&e->workers[i].loop_turns);
		st->socket_events += atomic_load(&e->workers[i].socket_events);
		st->reconnects += atomic_load(&e->workers[i].reconnects);
		st->closed_at_done += atomic_load(&e->workers[i].closed_at_done);
	}
}

uint64_t cl_engine_source_connections(const struct cl_engine *e, size_t i)
{
	return e && i < e->n_src ? atomic_load(&e->src_conns[i]) : 0;
}

void cl_engine_destroy(struct cl_engine *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; e->workers && i < e->nworkers; i++) {
		struct cl_worker *w = &e->workers[i];
		if (!w->thread_started)
			continue;
		atomic_fetch_or(&w->cmd, CL_CMD_QUIT);
		cli_worker_poke(w);
	}
	for (uint32_t i = 0; e->workers && i < e->nworkers; i++) {
		struct cl_worker *w = &e->workers[i];
		if (w->thread_started)
			pthread_join(w->thread, NULL);
		w->thread_started = false;
		cli_worker_destroy(w);
	}
	free(e->workers);
	if (e->log_fd >= 0)
		close(e->log_fd);
	cli_records_destroy(e);
	cl_http_target_free(&e->http);
	for (uint32_t k = 0; k < CL_CLASSES_MAX; k++)
		free(e->cls_hdrs[k]);
	for (uint32_t i = 0; e->ep_http && i < e->n_eps; i++)
		cl_http_target_free(&e->ep_http[i]);
	free(e->ep_http);
	free(e->ep_outstanding);
	cl_target_plan_free(&e->target);
	cl_workload_plan_free(&e->workload);
	free(e->conv_starts);
	free(e->src_iface);
	free(e->src_conns);
	free(e->tool_result);
	if (e->collect_mu_init)
		pthread_mutex_destroy(&e->collect_mu);
	if (e->sync_init) {
		pthread_mutex_destroy(&e->mu);
		pthread_cond_destroy(&e->cv);
	}
	free(e);
}
