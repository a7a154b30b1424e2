/* Why a TLS handshake with a server fails, in words an operator can act on: one
 * handshake of our own with mbedTLS (the library nng uses), verification made optional so
 * it completes, then the verification flags read one by one. */
#include "tls_diag.h"

#include <arpa/inet.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/oid.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* Appends printf-style text to out (size n) after what it holds. */
static void add(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add(char *out, size_t n, const char *fmt, ...)
{
	size_t len = strlen(out);
	if (len + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + len, n - len, fmt, ap);
	va_end(ap);
}

/* "DNS:localhost, CN=localhost": the names a certificate answers to, as far as mbedTLS 2.28
 * lists them (dNSName entries and the subject's CN). */
static void cert_names(const mbedtls_x509_crt *c, char *out, size_t n)
{
	out[0] = '\0';
	for (const mbedtls_x509_sequence *s = &c->subject_alt_names; s && s->buf.p; s = s->next) {
		if ((s->buf.tag & MBEDTLS_ASN1_TAG_VALUE_MASK) == 2)
			add(out, n, "%sDNS:%.*s", out[0] ? ", " : "", (int)s->buf.len,
			    (const char *)s->buf.p);
	}
	for (const mbedtls_x509_name *nm = &c->subject; nm; nm = nm->next) {
		if (MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &nm->oid) == 0)
			add(out, n, "%sCN=%.*s", out[0] ? ", " : "", (int)nm->val.len,
			    (const char *)nm->val.p);
	}
	if (!out[0])
		snprintf(out, n, "none");
}

static void when(const mbedtls_x509_time *t, char *out, size_t n)
{
	snprintf(out, n, "%04d-%02d-%02d %02d:%02d UTC", t->year, t->mon, t->day, t->hour, t->min);
}

struct cl_tls_words cli_tls_words(const struct cl_tls_opts *tls)
{
	struct cl_tls_words w = { 0 };
	if (tls && tls->words)
		w = *tls->words;
	if (!w.self)
		w.self = "this client";
	if (!w.peer)
		w.peer = "the server";
	return w;
}

/* Words for the verification flags of a handshake that otherwise completed. */
static void explain(uint32_t flags, const mbedtls_x509_crt *peer, const struct cl_tls_opts *tls,
		    const char *server_name, char *out, size_t n)
{
	const struct cl_tls_words w = cli_tls_words(tls);
	const char *sep = out[0] ? "; " : "";
	char buf[300];
	if (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED) {
		char issuer[200] = "?";
		if (peer)
			mbedtls_x509_dn_gets(issuer, sizeof(issuer), &peer->issuer);
		const char *ca = tls && tls->ca_file ? tls->ca_file : "?";
		add(out, n,
		    "%s%s's certificate is not trusted: it was issued by '%s', which is not ", sep,
		    w.peer, issuer);
		if (w.ca)
			add(out, n, "the CA in %s '%s' (check that %s is the CA that signed ", w.ca,
			    ca, w.ca);
		else
			add(out, n, "the CA in '%s' (check that it is the CA that signed ", ca);
		add(out, n, "%s's %s)", w.peer, w.peer_cert ? w.peer_cert : "certificate");
	}
	sep = out[0] ? "; " : "";
	if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) {
		if (peer)
			cert_names(peer, buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "?");
		add(out, n,
		    "%s%s's certificate does not name '%s' (it names %s): dial a name it has", sep,
		    w.peer, server_name ? server_name : "?", buf);
		if (w.server_name)
			add(out, n, ", or pass %s with one", w.server_name);
	}
	sep = out[0] ? "; " : "";
	if ((flags & MBEDTLS_X509_BADCERT_EXPIRED) && peer) {
		when(&peer->valid_to, buf, sizeof(buf));
		add(out, n,
		    "%s%s's certificate expired on %s (renew %s, or check this host's clock)", sep,
		    w.peer, buf, w.peer_cert ? w.peer_cert : "it");
	}
	sep = out[0] ? "; " : "";
	if ((flags & MBEDTLS_X509_BADCERT_FUTURE) && peer) {
		when(&peer->valid_from, buf, sizeof(buf));
		add(out, n, "%s%s's certificate is not valid until %s (check this host's clock)",
		    sep, w.peer, buf);
	}
	uint32_t known = MBEDTLS_X509_BADCERT_NOT_TRUSTED | MBEDTLS_X509_BADCERT_CN_MISMATCH |
			 MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE;
	if (flags & ~known) {
		char info[300];
		mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags & ~known);
		for (char *p = info; *p; p++)
			if (*p == '\n')
				*p = ' ';
		add(out, n, "%scertificate problem: %s", out[0] ? "; " : "", info);
	}
}

/* The peer ended the handshake with an alert: it refused our certificate, or wanted one. */
static void handshake_ended(const struct cl_tls_opts *tls, char *out, size_t n)
{
	const struct cl_tls_words w = cli_tls_words(tls);
	snprintf(out, n, "%s ended the TLS handshake", w.peer);
	if (tls && tls->cert_file) {
		add(out, n, ": it did not accept %s's certificate", w.self);
		if (w.cert)
			add(out, n, " (%s)", w.cert);
		add(out, n, ": check that it was signed by the CA %s trusts", w.peer);
		if (w.peer_ca)
			add(out, n, " (%s)", w.peer_ca);
	} else {
		add(out, n, ": it may want a client certificate");
		if (w.cert && w.key)
			add(out, n, " (pass %s and %s)", w.cert, w.key);
	}
}

int cli_tls_diagnose(const char *host, const char *port, const struct cl_tls_opts *tls,
		     int timeout_ms, char *out, size_t n)
{
	mbedtls_net_context net;
	mbedtls_ssl_context ssl;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca, own;
	mbedtls_pk_context key;
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_net_init(&net);
	mbedtls_ssl_init(&ssl);
	mbedtls_ssl_config_init(&conf);
	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&own);
	mbedtls_pk_init(&key);
	mbedtls_entropy_init(&ent);
	mbedtls_ctr_drbg_init(&drbg);
	out[0] = '\0';
	int found = 0, ret;
	char err[200];
	/* nng verifies the name it was given, else the host it dials when that is a name (an IP
	 * address it does not check against the certificate, nor can mbedTLS 2.28). */
	unsigned char ip[16];
	bool host_is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	const char *server_name = tls && tls->server_name ? tls->server_name
				  : host_is_ip            ? NULL
							  : host;
	if ((ret = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &ent,
					 (const unsigned char *)"chatload", 8)) != 0 ||
	    (ret = mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT,
					       MBEDTLS_SSL_TRANSPORT_STREAM,
					       MBEDTLS_SSL_PRESET_DEFAULT)) != 0)
		goto fail;
	if (tls && tls->ca_file && mbedtls_x509_crt_parse_file(&ca, tls->ca_file) < 0) {
		snprintf(out, n, "cannot read the CA file '%s' as PEM certificates", tls->ca_file);
		found = 1;
		goto out;
	}
	if (tls && tls->cert_file && tls->key_file) {
		if (mbedtls_x509_crt_parse_file(&own, tls->cert_file) != 0 ||
		    mbedtls_pk_parse_keyfile(&key, tls->key_file, NULL) != 0) {
			snprintf(out, n, "cannot read %s's certificate '%s' or key '%s'",
				 cli_tls_words(tls).self, tls->cert_file, tls->key_file);
			found = 1;
			goto out;
		}
		if ((ret = mbedtls_ssl_conf_own_cert(&conf, &own, &key)) != 0)
			goto fail;
	}
	/* Optional: the handshake completes and the flags say everything that was wrong. */
	mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_OPTIONAL);
	mbedtls_ssl_conf_ca_chain(&conf, &ca, NULL);
	mbedtls_ssl_conf_rng(&conf, mbedtls_ctr_drbg_random, &drbg);
	mbedtls_ssl_conf_read_timeout(&conf, (uint32_t)timeout_ms);
	if ((ret = mbedtls_ssl_setup(&ssl, &conf)) != 0 ||
	    (ret = mbedtls_ssl_set_hostname(&ssl, server_name)) != 0)
		goto fail;
	if ((ret = mbedtls_net_connect(&net, host, port, MBEDTLS_NET_PROTO_TCP)) != 0)
		goto fail;
	mbedtls_ssl_set_bio(&ssl, &net, mbedtls_net_send, NULL, mbedtls_net_recv_timeout);
	do
		ret = mbedtls_ssl_handshake(&ssl);
	while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE);
	if (ret == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE) {
		handshake_ended(tls, out, n);
		found = 1;
		goto out;
	}
	if (ret != 0)
		goto fail;
	uint32_t flags = mbedtls_ssl_get_verify_result(&ssl);
	if (flags) {
		explain(flags, mbedtls_ssl_get_peer_cert(&ssl), tls, server_name, out, n);
		found = 1;
	}
	mbedtls_ssl_close_notify(&ssl);
	goto out;
fail:
	mbedtls_strerror(ret, err, sizeof(err));
	snprintf(out, n, "TLS handshake failed: %s", err);
	found = 1;
out:
	mbedtls_net_free(&net);
	mbedtls_ssl_free(&ssl);
	mbedtls_ssl_config_free(&conf);
	mbedtls_x509_crt_free(&ca);
	mbedtls_x509_crt_free(&own);
	mbedtls_pk_free(&key);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&ent);
	return found;
}
