/* Why a TLS handshake with a server fails, said so an operator can act on it, in the
 * caller's words (struct cl_tls_words) (internal to chatload_common: used by transport.c). */
#ifndef CHATLOAD_TLS_DIAG_H
#define CHATLOAD_TLS_DIAG_H

#include "chatload/transport.h"

#include <stddef.h>

/*
 * Connects to host:port, shakes hands as nng would with tls (CA, server name or else host,
 * client certificate), and writes into out (size n) what is wrong: the certificate is not
 * signed by the CA in ca_file (naming its issuer), does not name the server name (naming
 * the names it has), has expired or is not yet valid (with the date), or the server ended
 * the handshake (wanting or refusing a client certificate).  Messages name the ends and
 * settings with tls->words.  Returns 1 when it found
 * something (out filled), 0 when this handshake works.  Blocks up to about timeout_ms once
 * connected.
 */
int cli_tls_diagnose(const char *host, const char *port, const struct cl_tls_opts *tls,
		     int timeout_ms, char *out, size_t n);

/* tls->words with self and peer filled in ("this client", "the server" when not given);
 * the setting names stay NULL when not given. */
struct cl_tls_words cli_tls_words(const struct cl_tls_opts *tls);

#endif
