/* One engine worker thread: its event loop, epoll + timerfds + eventfd around libcurl multi
 * handles (multi_socket API), the control thread's commands and the metrics swap; the stage
 * it runs is stage.c's, the requests it starts the load model's (load/load_int.h). */
#include "internal.h"

#include "chatload/clock.h"
#include "chatload/log.h"
#include "chatload/rng.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* epoll data: the kind of fd in the top byte, a socket's shard in bits 32-55, the fd low. */
enum { TAG_SOCK = 0, TAG_CMD = 1, TAG_PACE = 2, TAG_CURL = 3, TAG_CANCEL = 4 };
#define TAG(t, shard, fd) (((uint64_t)(t) << 56) | ((uint64_t)(shard) << 32) | (uint32_t)(fd))

/* Rounds of "start requests, let curl send them" per loop turn before yielding to epoll. */
#define KICK_ROUNDS 8

static int64_t thread_cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Arms a CLOCK_MONOTONIC timerfd for the absolute time at_us (INT64_MAX disarms). */
static void arm_timer(int fd, int64_t at_us)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (at_us != INT64_MAX) {
		if (at_us < 1)
			at_us = 1; /* an all-zero value would disarm */
		its.it_value.tv_sec = at_us / 1000000;
		its.it_value.tv_nsec = (long)(at_us % 1000000) * 1000;
	}
	timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* ---- libcurl multi_socket glue ---- */

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct cl_shard *sh = userp;
	struct cl_worker *w = sh->w;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	struct epoll_event ev = { .events = 0, .data.u64 = TAG(TAG_SOCK, sh->index, fd) };
	if (what & CURL_POLL_IN)
		ev.events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev.events |= EPOLLOUT;
	if (socketp) {
		if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, fd, &ev) == 0 || errno != ENOENT)
			return 0;
	}
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
		epoll_ctl(w->epfd, EPOLL_CTL_MOD, fd, &ev);
	curl_multi_assign(sh->multi, fd, (void *)1);
	return 0;
}

/*
 * curl's wish for a socket_action(TIMEOUT) call.  It is not obeyed here (curl must not be
 * re-entered from its callback): the loop re-arms the timerfd once per turn, and only when
 * the wish is earlier than what is armed, so a chunk costs no timerfd_settime.
 */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct cl_shard *sh = userp;
	if (timeout_ms < 0) {
		sh->due_us = INT64_MAX;
	} else if (timeout_ms == 0) {
		sh->kick = true;
		sh->w->curl_kick = true;
		sh->due_us = INT64_MAX;
	} else {
		sh->due_us = cl_mono_us() + (int64_t)timeout_ms * 1000;
	}
	return 0;
}

static void reap(struct cl_worker *w)
{
	for (uint32_t i = 0; i < w->nshards; i++) {
		struct cl_shard *sh = &w->shards[i];
		if (!sh->dirty)
			continue;
		sh->dirty = false;
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(sh->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			CURLcode res = msg->data.result;
			struct cl_slot *s = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			if (s && s->busy && !cli_request_resend(w, s, res))
				cli_request_finish(w, s, res, false);
		}
	}
}

static void curl_timeout_action(struct cl_shard *sh)
{
	int running;
	curl_multi_socket_action(sh->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	sh->dirty = true;
}

void cli_worker_cut_all(struct cl_worker *w)
{
	w->now_us = cl_mono_us();
	cli_park_release_all(w);
	for (uint32_t i = 0; i < w->nslots; i++) {
		if (w->slots[i].busy)
			cli_request_finish(w, &w->slots[i], CURLE_OK, true);
	}
}

void cli_worker_pace(struct cl_worker *w, int64_t due_us)
{
	if (due_us != w->pace_armed_us) {
		arm_timer(w->pacefd, due_us);
		w->pace_armed_us = due_us;
	}
}

/* ---- control ---- */

void cli_worker_poke(struct cl_worker *w)
{
	uint64_t one = 1;
	ssize_t k = write(w->cmdfd, &one, sizeof(one));
	(void)k; /* EAGAIN: the counter is already non-zero, the worker will wake */
}

/* Returns true when the worker must quit. */
static bool handle_commands(struct cl_worker *w)
{
	unsigned c = atomic_exchange(&w->cmd, 0);
	if (c & CL_CMD_QUIT)
		return true;
	if (c & CL_CMD_START) {
		struct cl_stage_plan p;
		pthread_mutex_lock(&w->mu);
		p = w->next_plan;
		int64_t start_us = w->next_start_us;
		double ph = w->next_phase, r0 = w->next_r0;
		pthread_mutex_unlock(&w->mu);
		cli_stage_begin(w, &p, start_us, ph, r0);
	}
	if (c & (CL_CMD_STOP | CL_CMD_CUT))
		cli_stage_stop(w, (c & CL_CMD_CUT) != 0);
	return false;
}

/* Hands the record filled since the last swap to the collector (a safe point: no callback
 * of this worker is running). */
static void maybe_swap(struct cl_worker *w)
{
	if (!atomic_exchange(&w->collect_wanted, false))
		return;
	pthread_mutex_lock(&w->mu);
	if (w->collect_ack != w->collect_req) {
		struct cl_metrics *t = w->active;
		w->active = w->spare;
		w->spare = t;
		w->swap_cpu_us = thread_cpu_us();
		w->swap_mono_us = cl_mono_us();
		w->collect_ack = w->collect_req;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	/* Once a report interval is often enough to notice slots a burst left idle. */
	cli_worker_shed_idle(w, cl_mono_us());
}

/* Lets curl send what was just started (and whatever else wants a timeout now). */
static void run_kicks(struct cl_worker *w)
{
	if (!w->curl_kick)
		return;
	w->curl_kick = false;
	w->now_us = cl_mono_us();
	for (uint32_t i = 0; i < w->nshards; i++) {
		struct cl_shard *sh = &w->shards[i];
		if (sh->kick) {
			sh->kick = false;
			curl_timeout_action(sh);
		}
	}
	reap(w);
}

static void sync_curl_timer(struct cl_worker *w)
{
	int64_t due = INT64_MAX;
	for (uint32_t i = 0; i < w->nshards; i++) {
		struct cl_shard *sh = &w->shards[i];
		if (sh->kick) {
			/* Still wants "now" after KICK_ROUNDS: come back through epoll at once. */
			sh->kick = false;
			sh->due_us = cl_mono_us();
		}
		if (sh->due_us < due)
			due = sh->due_us;
	}
	w->curl_kick = false;
	if (due < w->curl_armed_us) {
		arm_timer(w->curlfd, due);
		w->curl_armed_us = due;
	}
}

static void on_curl_timer(struct cl_worker *w)
{
	uint64_t x;
	ssize_t k = read(w->curlfd, &x, sizeof(x));
	(void)k;
	w->curl_armed_us = INT64_MAX;
	for (uint32_t i = 0; i < w->nshards; i++) {
		struct cl_shard *sh = &w->shards[i];
		int64_t due = sh->due_us;
		if (w->now_us < due)
			continue; /* not yet (the timer served another shard, or an old wish) */
		curl_timeout_action(sh);
		/* curl only calls on_timer when its earliest deadline changes; if it did not,
		 * the deadline just served is gone. */
		if (sh->due_us == due)
			sh->due_us = INT64_MAX;
	}
}

static void on_pace_timer(struct cl_worker *w)
{
	uint64_t x;
	ssize_t k = read(w->pacefd, &x, sizeof(x));
	int64_t armed = w->pace_armed_us;
	w->pace_armed_us = INT64_MAX;
	if (k != (ssize_t)sizeof(x) || !w->st.active)
		return;
	w->tick = true;
	int64_t now = cl_mono_us();
	if (armed > 0 && armed != INT64_MAX && now >= armed) {
		cl_hist_record(&w->active->lat[CL_LAT_LOOP_LAG], now - armed);
		/* A pacing expiry handled far later than due: the loop could not run (the
		 * process was stopped, paused or starved).  Rare, so a lock is fine here. */
		if (now - armed >= CL_STALL_MIN_US) {
			pthread_mutex_lock(&w->mu);
			cl_stall_list_add(&w->stalls, armed, now - armed);
			pthread_mutex_unlock(&w->mu);
		}
	}
	if (now >= w->st.probe_due_us) {
		w->st.probe_due_us += CL_ENGINE_PROBE_US;
		if (w->st.probe_due_us <= now)
			w->st.probe_due_us = now + CL_ENGINE_PROBE_US;
	}
}

void *cli_worker_main(void *arg)
{
	struct cl_worker *w = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* Pacing precise to a few µs rather than the default 50 µs timer slack. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	char name[16];
	snprintf(name, sizeof(name), "cl-worker-%u", w->index);
	pthread_setname_np(pthread_self(), name);

	pthread_mutex_lock(&w->mu);
	w->swap_cpu_us = thread_cpu_us();
	w->swap_mono_us = cl_mono_us();
	pthread_mutex_unlock(&w->mu);

	struct epoll_event evs[CL_ENGINE_EPOLL_BATCH];
	bool quit = false;
	while (!quit) {
		/* A tick left over from the last turn's KICK_ROUNDS must not wait for an event. */
		int n = epoll_wait(w->epfd, evs, CL_ENGINE_EPOLL_BATCH, w->tick ? 0 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			CL_ERROR("worker %u: epoll_wait: %s", w->index, strerror(errno));
			break;
		}
		w->now_us = cl_mono_us();
		bool cmd = false, cancel = false;
		int running, nsock = 0;
		for (int i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;
			int fd = (int)(uint32_t)d;
			switch ((int)(d >> 56)) {
			case TAG_SOCK: {
				struct cl_shard *sh = &w->shards[(d >> 32) & 0xffffff];
				uint32_t ev = evs[i].events;
				int f = 0;
				if (ev & (EPOLLIN | EPOLLHUP))
					f |= CURL_CSELECT_IN;
				if (ev & EPOLLOUT)
					f |= CURL_CSELECT_OUT;
				if (ev & EPOLLERR)
					f |= CURL_CSELECT_ERR;
				curl_multi_socket_action(sh->multi, fd, f, &running);
				sh->dirty = true;
				nsock++;
				break;
			}
			case TAG_CMD: {
				uint64_t x;
				ssize_t k = read(w->cmdfd, &x, sizeof(x));
				(void)k;
				cmd = true;
				break;
			}
			case TAG_PACE:
				on_pace_timer(w);
				break;
			case TAG_CURL:
				on_curl_timer(w);
				break;
			case TAG_CANCEL:
				cancel = true;
				break;
			}
		}
		reap(w);
		/* Requests the client abandons now (workload.cancel), after what the sockets
		 * brought: an answer that ended in those bytes completed first. */
		if (cancel)
			cli_cancel_expire(w, cl_mono_us());
		/* Streams held open after [DONE] past the grace (rare: normally empty). */
		if (w->ad_head != CL_NO_SLOT)
			cli_request_expire_done(w, cl_mono_us());
		if (cmd && handle_commands(w))
			quit = true;
		/* The stage logic runs only when something it depends on happened; a turn that
		 * just moved stream bytes costs nothing more. */
		for (int r = 0; r < KICK_ROUNDS && !quit && (w->tick || w->curl_kick); r++) {
			if (w->tick) {
				w->tick = false;
				cli_stage_tick(w);
			}
			if (!w->curl_kick)
				break;
			run_kicks(w);
		}
		/* Counters for the benchmark: one relaxed add per turn, not per event. */
		atomic_fetch_add_explicit(&w->loop_turns, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&w->socket_events, (uint64_t)nsock, memory_order_relaxed);
		sync_curl_timer(w);
		maybe_swap(w);
	}
	cli_worker_cut_all(w);
	cli_reqlog_flush(w);
	return NULL;
}

/* ---- setup and teardown (control thread, before start / after join) ---- */

static int add_fd(int epfd, int fd, int tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(tag, 0, fd) };
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int cli_worker_init(struct cl_worker *w, struct cl_engine *e, uint32_t index, uint32_t nslots,
		    struct cl_err *err)
{
	memset(w, 0, sizeof(*w));
	w->e = e;
	w->index = index;
	w->epfd = w->cmdfd = w->pacefd = w->curlfd = w->cancelfd = -1;
	w->curl_armed_us = w->pace_armed_us = w->cancel_armed_us = INT64_MAX;
	w->ad_head = w->ad_tail = CL_NO_SLOT;
	atomic_init(&w->phase, CL_ENGINE_IDLE);
	if (pthread_mutex_init(&w->mu, NULL) != 0)
		return cl_err_set(err, CL_ESYS, "cannot create a worker mutex");
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int prc = pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (prc != 0) {
		pthread_mutex_destroy(&w->mu);
		return cl_err_set(err, CL_ESYS, "cannot create a worker condition variable");
	}
	w->sync_init = true;

	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->cmdfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->pacefd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	w->curlfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	w->cancelfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (w->epfd < 0 || w->cmdfd < 0 || w->pacefd < 0 || w->curlfd < 0 || w->cancelfd < 0 ||
	    add_fd(w->epfd, w->cmdfd, TAG_CMD) || add_fd(w->epfd, w->pacefd, TAG_PACE) ||
	    add_fd(w->epfd, w->curlfd, TAG_CURL) || add_fd(w->epfd, w->cancelfd, TAG_CANCEL))
		return cl_err_set(err, CL_ESYS, "cannot set up worker %u's event loop: %s", index,
				  strerror(errno));

	uint32_t per = cl_httpver_shard_slots(&e->http.ver, CL_ENGINE_SHARD_SLOTS);
	w->nshards = (nslots + per - 1) / per;
	w->shards = calloc(w->nshards, sizeof(*w->shards));
	if (!w->shards)
		return cl_err_set(err, CL_ENOMEM, "out of memory for %u shards", w->nshards);
	for (uint32_t i = 0; i < w->nshards; i++) {
		struct cl_shard *sh = &w->shards[i];
		sh->w = w;
		sh->index = i;
		sh->due_us = INT64_MAX;
		sh->multi = curl_multi_init();
		if (!sh->multi)
			return cl_err_set(err, CL_ENOMEM, "cannot create a curl multi handle");
		CURLM *m = sh->multi;
		int bad = 0;
		bad |= curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_socket);
		bad |= curl_multi_setopt(m, CURLMOPT_SOCKETDATA, sh);
		bad |= curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_timer);
		bad |= curl_multi_setopt(m, CURLMOPT_TIMERDATA, sh);
		/* Never queue a request behind a connection limit: one stream, one connection
		 * (h1), and keep every connection the shard's slots can use. */
		bad |= curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
		bad |= curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
		bad |= curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)per + 16);
		bad |= cl_httpver_apply_multi(m, &e->http.ver, per);
		if (bad)
			return cl_err_set(err, CL_EINVAL, "cannot configure a curl multi handle");
	}

	w->nslots = nslots;
	w->slots = calloc(nslots, sizeof(*w->slots));
	w->free_stack = calloc(nslots, sizeof(*w->free_stack));
	if (e->log_fd >= 0)
		w->log_buf = malloc(CL_ENGINE_LOG_BUF);
	if (!w->slots || !w->free_stack || (e->log_fd >= 0 && !w->log_buf))
		return cl_err_set(err, CL_ENOMEM, "out of memory for %u stream slots", nslots);
	/* Slots are bound to the worker and their shard when first taken (cli_request_start),
	 * so the pages of slots never used are never touched. */
	w->shard_slots = per;
	for (uint32_t i = 0; i < nslots; i++)
		w->free_stack[i] = nslots - 1 - i; /* reversed: slot 0 is taken first */
	w->nfree = nslots;
	if (cl_park_init(&w->parked, nslots) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory for %u stream slots", nslots);
	w->backoff_rng = cl_seed_derive((uint64_t)cl_mono_us(), index);
	if (cl_metrics_init(&w->mrec[0]) != 0 || cl_metrics_init(&w->mrec[1]) != 0 ||
	    cl_metrics_eps_init(&w->mrec[0], e->n_eps) != 0 ||
	    cl_metrics_eps_init(&w->mrec[1], e->n_eps) != 0 ||
	    cl_metrics_cls_init(&w->mrec[0], e->n_cls) != 0 ||
	    cl_metrics_cls_init(&w->mrec[1], e->n_cls) != 0)
		return cl_err_set(err, CL_ENOMEM, "out of memory for the metrics records");
	w->active = &w->mrec[0];
	w->spare = &w->mrec[1];
	return 0;
}

void cli_worker_destroy(struct cl_worker *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; w->slots && i < w->nslots; i++)
		cli_slot_destroy(&w->slots[i]);
	free(w->slots);
	w->slots = NULL;
	free(w->free_stack);
	w->free_stack = NULL;
	cl_park_destroy(&w->parked);
	for (uint32_t i = 0; w->shards && i < w->nshards; i++) {
		if (w->shards[i].multi)
			curl_multi_cleanup(w->shards[i].multi);
	}
	free(w->shards);
	w->shards = NULL;
	int *fds[] = { &w->epfd, &w->cmdfd, &w->pacefd, &w->curlfd, &w->cancelfd };
	for (size_t i = 0; w->e && i < sizeof(fds) / sizeof(fds[0]); i++) {
		/* Only after init, which sets them to -1 first: a zeroed worker owns no fd 0. */
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	cl_metrics_destroy(&w->mrec[0]);
	cl_metrics_destroy(&w->mrec[1]);
	free(w->log_buf);
	w->log_buf = NULL;
	cl_stage_plan_free(&w->next_plan);
	if (w->sync_init) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		w->sync_init = false;
	}
}
