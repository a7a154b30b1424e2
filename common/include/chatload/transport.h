/* The control channel's transports: nng listen/dial with the options the protocol needs
 * (message cap, resend time), TLS configuration, and the rule that plaintext tcp:// stays
 * on loopback unless the operator says --insecure. */
#ifndef CHATLOAD_TRANSPORT_H
#define CHATLOAD_TRANSPORT_H

#include "chatload/err.h"

#include <nng/nng.h>
#include <stdatomic.h>
#include <stdbool.h>

/*
 * The words TLS messages use for the two ends and for the settings that give each file, so
 * that common/ names no program: the program that dials or listens passes its own (the agent:
 * "the coordinator", "--tls-ca", ...).  self and peer default to "this client" / "the
 * server" (dialing) when NULL; a NULL setting name leaves its hint out of the message.
 */
struct cl_tls_words {
	const char *self;        /* this end: "this agent" */
	const char *peer;        /* the other end: "the coordinator" */
	const char *ca;          /* the setting giving ca_file: "--tls-ca" */
	const char *cert;        /* ... cert_file: "--tls-cert" */
	const char *key;         /* ... key_file: "--tls-key" */
	const char *server_name; /* ... server_name: "--tls-server-name" */
	const char *peer_cert;   /* the peer's setting for its certificate: "agents.tls.cert" */
	const char *peer_ca;     /* the peer's setting for the CA it trusts: "agents.tls.ca" */
};

struct cl_tls_opts {
	const char *ca_file;     /* verify the peer against this CA (PEM); NULL: no verification
				  * on the server side, required on the client side */
	const char *cert_file;   /* our certificate (PEM); required to listen on tls+tcp:// */
	const char *key_file;    /* its private key (PEM) */
	const char *server_name; /* client: name to verify; NULL: the URL's host */
	const struct cl_tls_words *words; /* how messages name things; NULL: neutral words */
};

/* True for URLs whose traffic cannot leave this machine or is encrypted: ipc://, inproc://,
 * tls+tcp://, and tcp:// to 127.0.0.0/8, ::1 or localhost. */
bool cl_transport_is_safe(const char *url);

/*
 * Opens a listener on sock for url with NNG_OPT_RECVMAXSZ = CL_WIRE_MAX_MSG and, for
 * tls+tcp://, a server TLS config from tls (cert and key required; with ca_file, client
 * certificates are required and verified).  Plaintext tcp:// off loopback is refused
 * (CL_EREFUSED) unless insecure.  Returns 0 or a CL_E* code with err naming the URL.
 * *out (when out is not NULL) gets the listener.
 */
int cl_transport_listen(nng_socket sock, const char *url, const struct cl_tls_opts *tls,
			bool insecure, nng_listener *out, struct cl_err *err);

/*
 * Connections a listener dropped because their TLS handshake or peer authentication failed,
 * so far (nng's "auth" statistic; 0 when nng keeps no statistics).  nng does not say which
 * peer: no pipe exists before the handshake.
 */
uint64_t cl_transport_refused_handshakes(nng_listener l);

/*
 * Starts a dialer on sock for url (non-blocking: nng keeps redialling in the background
 * with its reconnect backoff), with the same message cap and, for tls+tcp://, a client TLS
 * config (ca_file required: the server is always verified; cert/key optional, for
 * client certificates).  Same plaintext rule as listening.
 */
int cl_transport_dial(nng_socket sock, const char *url, const struct cl_tls_opts *tls,
		      bool insecure, struct cl_err *err);

/* Checks what cl_transport_dial would refuse before connecting (unknown scheme, plaintext
 * off loopback, TLS files missing or unreadable), without dialing.  0 or a CL_E* code. */
int cl_transport_check_dial(const char *url, const struct cl_tls_opts *tls, bool insecure,
			    struct cl_err *err);

/* Dials url once, synchronously, on a throwaway socket and hangs up: says why a background
 * dialer gets nowhere (connection refused, TLS handshake / peer authentication failed).
 * Blocks up to about timeout_ms, or until *cancel (may be NULL) becomes nonzero.  0 when it
 * connected, else CL_E* with err set. */
int cl_transport_probe_dial(const char *url, const struct cl_tls_opts *tls, bool insecure,
			    int timeout_ms, const atomic_int *cancel, struct cl_err *err);

/* Describes the remote address of the pipe a message came on ("127.0.0.1:43122",
 * "ipc peer pid 812", or "unknown peer" once the pipe has closed) into buf; returns buf. */
char *cl_transport_peer(nng_msg *msg, char *buf, size_t n);

/* The remote address of pipe p as cl_transport_peer writes it, into buf.  0, or
 * CL_ENOTFOUND (buf untouched) when p has closed or has no address.  Safe from nng's pipe
 * callbacks, where a closing pipe's address is still readable. */
int cl_transport_pipe_addr(nng_pipe p, char *buf, size_t n);

/*
 * nng_close(sock), waiting at most CL_TRANSPORT_CLOSE_WAIT_US.  nng 1.5.2 (Debian 12's) was
 * seen to wait forever inside nng_close after a run that lost an agent to a partition: the
 * coordinator wrote its results and never exited (every nng thread idle, the main thread in
 * nng_close waiting for a pipe to finish closing).  The close runs in a thread of its own;
 * past the wait a warning names `what` and the caller goes on.  Returns whether the close
 * finished: when it did not, the socket's pipe callbacks may still run, so what they use
 * must stay allocated.
 */
#define CL_TRANSPORT_CLOSE_WAIT_US 5000000LL
bool cl_transport_close(nng_socket sock, const char *what);

#endif
