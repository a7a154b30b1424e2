/* nng listen/dial helpers with the protocol's options and the plaintext rule. */
#include "chatload/transport.h"

#include "chatload/buf.h"
#include "chatload/log.h"
#include "chatload/wire.h"

#include "tls_diag.h"

#include <arpa/inet.h>
#include <errno.h>
#include <nng/supplemental/tls/tls.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static bool host_is_loopback(const char *host, size_t len)
{
	char h[256];
	if (len >= sizeof(h))
		return false;
	memcpy(h, host, len);
	h[len] = '\0';
	if (strcasecmp(h, "localhost") == 0 || strcmp(h, "::1") == 0 || strcmp(h, "[::1]") == 0)
		return true;
	struct in_addr a;
	if (inet_pton(AF_INET, h, &a) == 1)
		return (ntohl(a.s_addr) >> 24) == 127;
	return false;
}

static bool is_tls(const char *url)
{
	return strncmp(url, "tls+tcp://", 10) == 0 || strncmp(url, "tls+tcp4://", 11) == 0 ||
	       strncmp(url, "tls+tcp6://", 11) == 0;
}

static bool is_known(const char *url)
{
	static const char *const schemes[] = {
		"ipc://",  "inproc://",  "tcp://",      "tcp4://",
		"tcp6://", "tls+tcp://", "tls+tcp4://", "tls+tcp6://"
	};
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(url, schemes[i], strlen(schemes[i])) == 0)
			return true;
	return false;
}

static int check_url(const char *url, bool insecure, struct cl_err *err)
{
	if (!url || !is_known(url))
		return cl_err_set(err, CL_EINVAL,
				  "unsupported address '%s': use tls+tcp://HOST:PORT, "
				  "tcp://127.0.0.1:PORT or ipc:///PATH",
				  url ? url : "");
	if (!insecure && !cl_transport_is_safe(url))
		return cl_err_set(err, CL_EREFUSED,
				  "refusing plaintext '%s' off loopback: use tls+tcp:// or pass "
				  "--insecure",
				  url);
	return 0;
}

bool cl_transport_is_safe(const char *url)
{
	if (!url)
		return false;
	if (strncmp(url, "ipc://", 6) == 0 || strncmp(url, "inproc://", 9) == 0 || is_tls(url))
		return true;
	const char *host = NULL;
	if (strncmp(url, "tcp://", 6) == 0)
		host = url + 6;
	else if (strncmp(url, "tcp4://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "tcp6://", 7) == 0)
		host = url + 7;
	if (!host)
		return false;
	const char *end;
	if (host[0] == '[') {
		end = strchr(host, ']');
		if (!end)
			return false;
		return host_is_loopback(host + 1, (size_t)(end - host - 1));
	}
	end = strrchr(host, ':');
	return host_is_loopback(host, end ? (size_t)(end - host) : strlen(host));
}

static int read_pem(const char *path, struct cl_buf *b, const char *what, struct cl_err *err)
{
	cl_buf_init(b, 1u << 20);
	if (cl_buf_read_file(b, path) != 0)
		return cl_err_set(err, CL_EIO, "cannot read %s '%s': %s", what, path,
				  strerror(errno));
	return 0;
}

static int make_tls(nng_tls_mode mode, const char *url, const struct cl_tls_opts *tls,
		    nng_tls_config **out, struct cl_err *err)
{
	nng_tls_config *cfg = NULL;
	struct cl_buf cert = { 0 }, key = { 0 };
	int rc = nng_tls_config_alloc(&cfg, mode);
	if (rc != 0) {
		rc = cl_err_set(err, CL_ESYS, "cannot set up TLS for '%s': %s", url,
				nng_strerror(rc));
		goto out;
	}
	if (tls && tls->cert_file) {
		if (!tls->key_file) {
			rc = cl_err_set(err, CL_EINVAL, "TLS certificate '%s' given without a key",
					tls->cert_file);
			goto out;
		}
		if ((rc = read_pem(tls->cert_file, &cert, "TLS certificate", err)) != 0 ||
		    (rc = read_pem(tls->key_file, &key, "TLS key", err)) != 0)
			goto out;
		rc = nng_tls_config_own_cert(cfg, cert.data, key.data, NULL);
		if (rc != 0) {
			rc = cl_err_set(err, CL_EINVAL,
					"TLS certificate '%s' / key '%s' rejected: %s",
					tls->cert_file, tls->key_file, nng_strerror(rc));
			goto out;
		}
	} else if (mode == NNG_TLS_MODE_SERVER) {
		const struct cl_tls_words w = cli_tls_words(tls);
		if (w.cert && w.key)
			rc =
			    cl_err_set(err, CL_EINVAL,
				       "listening on '%s' needs a TLS certificate and key (%s, %s)",
				       url, w.cert, w.key);
		else
			rc = cl_err_set(err, CL_EINVAL,
					"listening on '%s' needs a TLS certificate and key", url);
		goto out;
	}
	if (tls && tls->ca_file) {
		rc = nng_tls_config_ca_file(cfg, tls->ca_file);
		if (rc == 0)
			rc = nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_REQUIRED);
		if (rc != 0) {
			rc = cl_err_set(err, CL_EINVAL, "TLS CA file '%s' rejected: %s",
					tls->ca_file, nng_strerror(rc));
			goto out;
		}
	} else if (mode == NNG_TLS_MODE_CLIENT) {
		const struct cl_tls_words w = cli_tls_words(tls);
		if (w.ca)
			rc = cl_err_set(err, CL_EINVAL,
					"dialing '%s' needs a CA file to verify %s (%s)", url,
					w.peer, w.ca);
		else
			rc = cl_err_set(err, CL_EINVAL, "dialing '%s' needs a CA file to verify %s",
					url, w.peer);
		goto out;
	} else {
		nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_NONE);
	}
	if (mode == NNG_TLS_MODE_CLIENT && tls && tls->server_name)
		nng_tls_config_server_name(cfg, tls->server_name);
	*out = cfg;
	cfg = NULL;
	rc = 0;
out:
	if (cfg)
		nng_tls_config_free(cfg);
	cl_buf_free(&cert);
	cl_buf_free(&key);
	return rc;
}

uint64_t cl_transport_refused_handshakes(nng_listener l)
{
	nng_stat *all = NULL;
	uint64_t v = 0;
	if (nng_listener_id(l) < 0 || nng_stats_get(&all) != 0)
		return 0;
	nng_stat *ls = nng_stat_find_listener(all, l);
	nng_stat *auth = ls ? nng_stat_find(ls, "auth") : NULL;
	if (auth)
		v = nng_stat_value(auth);
	nng_stats_free(all);
	return v;
}

int cl_transport_listen(nng_socket sock, const char *url, const struct cl_tls_opts *tls,
			bool insecure, nng_listener *out, struct cl_err *err)
{
	int rc0 = check_url(url, insecure, err);
	if (rc0 != 0)
		return rc0;
	nng_listener l;
	nng_tls_config *cfg = NULL;
	int rc = nng_listener_create(&l, sock, url);
	if (rc != 0)
		return cl_err_set(err, CL_EINVAL, "cannot listen on '%s': %s", url,
				  nng_strerror(rc));
	nng_listener_set_size(l, NNG_OPT_RECVMAXSZ, CL_WIRE_MAX_MSG);
	if (is_tls(url)) {
		if ((rc = make_tls(NNG_TLS_MODE_SERVER, url, tls, &cfg, err)) != 0) {
			nng_listener_close(l);
			return rc;
		}
		nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, cfg);
		nng_tls_config_free(cfg); /* the listener holds its own reference */
	}
	rc = nng_listener_start(l, 0);
	if (rc != 0) {
		nng_listener_close(l);
		return cl_err_set(err, CL_ESYS, "cannot listen on '%s': %s", url, nng_strerror(rc));
	}
	if (out)
		*out = l;
	return 0;
}

int cl_transport_dial(nng_socket sock, const char *url, const struct cl_tls_opts *tls,
		      bool insecure, struct cl_err *err)
{
	int rc0 = check_url(url, insecure, err);
	if (rc0 != 0)
		return rc0;
	nng_dialer d;
	nng_tls_config *cfg = NULL;
	int rc = nng_dialer_create(&d, sock, url);
	if (rc != 0)
		return cl_err_set(err, CL_EINVAL, "cannot dial '%s': %s", url, nng_strerror(rc));
	nng_dialer_set_size(d, NNG_OPT_RECVMAXSZ, CL_WIRE_MAX_MSG);
	nng_dialer_set_ms(d, NNG_OPT_RECONNMINT, 100);
	nng_dialer_set_ms(d, NNG_OPT_RECONNMAXT, 2000);
	if (is_tls(url)) {
		if ((rc = make_tls(NNG_TLS_MODE_CLIENT, url, tls, &cfg, err)) != 0) {
			nng_dialer_close(d);
			return rc;
		}
		nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg);
		nng_tls_config_free(cfg);
	}
	rc = nng_dialer_start(d, NNG_FLAG_NONBLOCK);
	if (rc != 0) {
		nng_dialer_close(d);
		return cl_err_set(err, CL_ESYS, "cannot dial '%s': %s", url, nng_strerror(rc));
	}
	return 0;
}

int cl_transport_pipe_addr(nng_pipe p, char *buf, size_t n)
{
	nng_sockaddr sa;
	if (nng_pipe_id(p) < 0 || nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0)
		return CL_ENOTFOUND;
	char ip[INET6_ADDRSTRLEN] = "?";
	int pid = 0;
	switch (sa.s_family) {
	case NNG_AF_INET:
		inet_ntop(AF_INET, &sa.s_in.sa_addr, ip, sizeof(ip));
		snprintf(buf, n, "%s:%u", ip, ntohs(sa.s_in.sa_port));
		return 0;
	case NNG_AF_INET6:
		inet_ntop(AF_INET6, sa.s_in6.sa_addr, ip, sizeof(ip));
		snprintf(buf, n, "[%s]:%u", ip, ntohs(sa.s_in6.sa_port));
		return 0;
	case NNG_AF_IPC:
		/* An ipc peer has no address of its own; its process id tells it apart. */
		if (nng_pipe_get_int(p, NNG_OPT_IPC_PEER_PID, &pid) == 0 && pid > 0)
			snprintf(buf, n, "ipc peer pid %d", pid);
		else
			snprintf(buf, n, "ipc peer");
		return 0;
	default:
		return CL_ENOTFOUND;
	}
}

char *cl_transport_peer(nng_msg *msg, char *buf, size_t n)
{
	if (cl_transport_pipe_addr(nng_msg_get_pipe(msg), buf, n) != 0)
		snprintf(buf, n, "unknown peer");
	return buf;
}

int cl_transport_check_dial(const char *url, const struct cl_tls_opts *tls, bool insecure,
			    struct cl_err *err)
{
	int rc = check_url(url, insecure, err);
	if (rc != 0 || !is_tls(url))
		return rc;
	nng_tls_config *cfg = NULL;
	rc = make_tls(NNG_TLS_MODE_CLIENT, url, tls, &cfg, err);
	if (cfg)
		nng_tls_config_free(cfg);
	return rc;
}

static void on_probe_aio(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
}

/* nng_aio_wait, checking *cancel every 20 ms and cancelling the aio when it is set. */
static void wait_aio(nng_aio *aio, atomic_int *done, const atomic_int *cancel)
{
	bool cancelled = false;
	while (!atomic_load(done)) {
		if (!cancelled && cancel && atomic_load(cancel)) {
			cancelled = true;
			nng_aio_cancel(aio);
		}
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
	atomic_store(done, 0);
}

int cl_transport_probe_dial(const char *url, const struct cl_tls_opts *tls, bool insecure,
			    int timeout_ms, const atomic_int *cancel, struct cl_err *err)
{
	atomic_int done = 0;
	int rc = check_url(url, insecure, err);
	if (rc != 0)
		return rc;
	nng_stream_dialer *d = NULL;
	nng_tls_config *cfg = NULL;
	nng_aio *aio = NULL;
	if ((rc = nng_stream_dialer_alloc(&d, url)) != 0) {
		rc = cl_err_set(err, CL_EINVAL, "cannot dial '%s': %s", url, nng_strerror(rc));
		goto out;
	}
	if (is_tls(url)) {
		if ((rc = make_tls(NNG_TLS_MODE_CLIENT, url, tls, &cfg, err)) != 0)
			goto out;
		nng_stream_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg);
	}
	if ((rc = nng_aio_alloc(&aio, on_probe_aio, &done)) != 0) {
		rc = cl_err_set(err, CL_ENOMEM, "out of memory");
		goto out;
	}
	nng_aio_set_timeout(aio, timeout_ms);
	nng_stream_dialer_dial(d, aio);
	wait_aio(aio, &done, cancel);
	rc = nng_aio_result(aio);
	bool connected = rc == 0;
	if (rc == 0) {
		/* TLS shakes hands on the first I/O: send the SP greeting of a REQ peer and
		 * read the answer, which is where a certificate problem shows. */
		nng_stream *st = nng_aio_get_output(aio, 0);
		unsigned char hello[8] = { 0, 'S', 'P', 0, 0, 0x30, 0, 0 }, back[8];
		nng_iov iov = { .iov_buf = hello, .iov_len = sizeof(hello) };
		nng_aio_set_iov(aio, 1, &iov);
		nng_aio_set_timeout(aio, timeout_ms);
		nng_stream_send(st, aio);
		wait_aio(aio, &done, cancel);
		rc = nng_aio_result(aio);
		if (rc == 0) {
			iov = (nng_iov){ .iov_buf = back, .iov_len = sizeof(back) };
			nng_aio_set_iov(aio, 1, &iov);
			nng_aio_set_timeout(aio, timeout_ms);
			nng_stream_recv(st, aio);
			wait_aio(aio, &done, cancel);
			rc = nng_aio_result(aio);
		}
		nng_stream_free(st);
	}
	if (rc != 0 && connected && is_tls(url)) {
		/* nng says only "Cryptographic error" or "Peer could not be authenticated": a
		 * handshake of our own says which certificate check failed. */
		char why[600];
		nng_url *u = NULL;
		if (nng_url_parse(&u, url) == 0 &&
		    cli_tls_diagnose(u->u_hostname, u->u_port, tls, timeout_ms, why, sizeof(why)))
			rc = cl_err_set(err, CL_EIO, "cannot connect to '%s': %s", url, why);
		else
			rc = cl_err_set(err, CL_EIO, "cannot connect to '%s': TLS: %s", url,
					nng_strerror(rc));
		nng_url_free(u);
	} else if (rc != 0) {
		rc = cl_err_set(err, CL_EIO, "cannot connect to '%s': %s", url, nng_strerror(rc));
	}
out:
	nng_aio_free(aio);
	nng_stream_dialer_free(d);
	if (cfg)
		nng_tls_config_free(cfg);
	return rc;
}

/* nng_close in a thread of its own, so its caller can stop waiting for it. */
struct closer {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	nng_socket sock;
	bool done;
	bool abandoned; /* the caller left: the thread frees this */
};

static void *close_socket(void *arg)
{
	struct closer *c = arg;
	nng_close(c->sock);
	pthread_mutex_lock(&c->mu);
	c->done = true;
	bool abandoned = c->abandoned;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (abandoned)
		free(c);
	return NULL;
}

bool cl_transport_close(nng_socket sock, const char *what)
{
	struct closer *c = calloc(1, sizeof(*c));
	pthread_t t;
	if (!c) {
		nng_close(sock);
		return true;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	c->sock = sock;
	if (pthread_create(&t, NULL, close_socket, c) != 0) {
		nng_close(sock);
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return true;
	}
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += CL_TRANSPORT_CLOSE_WAIT_US / 1000000;
	pthread_mutex_lock(&c->mu);
	while (!c->done && pthread_cond_timedwait(&c->cv, &c->mu, &dl) == 0)
		;
	bool done = c->done;
	if (!done)
		c->abandoned = true;
	pthread_mutex_unlock(&c->mu);
	if (!done) {
		pthread_detach(t);
		CL_WARN("%s did not finish closing in %lld s (an nng hang seen after "
			"partitions); leaving it",
			what, CL_TRANSPORT_CLOSE_WAIT_US / 1000000);
		return false;
	}
	pthread_join(t, NULL);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return true;
}
